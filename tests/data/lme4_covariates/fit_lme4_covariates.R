# 'two_covariates' adds + judge * fluency (centred likewise); its slopes are reported per covariate.
# lme4 references for tests/estimators/test_covariates.py (run once; the JSON is checked in):
#   Rscript tests/data/lme4_covariates/fit_lme4_covariates.R
# Model: score ~ model * judge + judge * length + (1|scenario) + (1|scenario:model)
#        [+ (1|scenario:model:generation) for tables with two generations], REML, length centred at its mean.
suppressPackageStartupMessages({library(lme4); library(jsonlite); library(emmeans)})
args <- commandArgs(trailingOnly = FALSE)
here <- dirname(normalizePath(sub("--file=", "", args[grep("--file=", args)])))
options(contrasts = c("contr.sum", "contr.poly"))
out <- list()
for (name in c("balanced", "unbalanced", "missing", "generations", "two_covariates", "unbalanced_b",
               "missing_block", "two_covariates_b", "length_1e6")) {
  d <- read.csv(file.path(here, paste0(name, ".csv")))
  d$model <- factor(d$model); d$judge <- factor(d$judge)
  d$scenario <- factor(d$scenario); d$generation <- factor(d$generation)
  d$lc <- d$length - mean(d$length)
  two <- "fluency" %in% names(d)
  if (two) d$fc <- d$fluency - mean(d$fluency)
  re <- if (length(unique(d$generation)) > 1) "(1|scenario) + (1|scenario:model) + (1|scenario:model:generation)" else
    "(1|scenario) + (1|scenario:model)"
  ctrl <- lmerControl(optimizer = "bobyqa", optCtrl = list(maxfun = 1e5), check.conv.singular = "ignore")
  fixed <- if (two) "score ~ model * judge + judge * lc + judge * fc +" else "score ~ model * judge + judge * lc +"
  f <- lmer(as.formula(paste(fixed, re)), data = d, REML = TRUE, control = ctrl)
  vc <- as.data.frame(VarCorr(f))
  # judge slopes: coefficients of judge:lc in the cell parametrisation
  fx <- fixef(f); V <- as.matrix(vcov(f))
  K <- nlevels(d$judge); P <- nlevels(d$model)
  grid <- expand.grid(judge = levels(d$judge), model = levels(d$model), lc = 0, fc = 0)[, c("model", "judge", "lc", "fc")]
  form <- as.formula(sub("score ", "", sub(" \\+$", "", fixed)))
  X0 <- model.matrix(form, grid)[, names(fx)]
  slope_rows <- function(v) {      # one row per judge: d mean / d v
    g1 <- grid; g1[[v]] <- 1
    (model.matrix(form, g1)[, names(fx)] - X0)[match(levels(d$judge), grid$judge), ]
  }
  S <- slope_rows("lc")
  S2 <- if (two) slope_rows("fc") else NULL
  emm <- emmeans(f, ~ model, at = if (two) list(lc = 0, fc = 0) else list(lc = 0), lmer.df = "asymptotic")
  pw <- as.data.frame(pairs(emm, adjust = "none"))
  em <- as.data.frame(emm)
  out[[name]] <- list(
    n_rows = nrow(d), length_mean = mean(d$length),
    variances = list(scenario = vc$vcov[vc$grp == "scenario"], model_scenario = vc$vcov[vc$grp == "scenario:model"],
                     generation = if (any(vc$grp == "scenario:model:generation"))
                       vc$vcov[vc$grp == "scenario:model:generation"] else NA,
                     residual = vc$vcov[vc$grp == "Residual"]),
    fixef = as.list(fx), vcov = V,
    cell_models = as.character(grid$model), cell_judges = as.character(grid$judge),
    cell_means = as.vector(X0 %*% fx), cell_cov = X0 %*% V %*% t(X0),
    judges = levels(d$judge), slopes = as.vector(S %*% fx), slope_cov = S %*% V %*% t(S),
    slopes_fluency = if (two) as.vector(S2 %*% fx) else NA, fluency_mean = if (two) mean(d$fluency) else NA,
    emmeans = list(model = as.character(em$model), mean = em$emmean, se = em$SE),
    pairs = list(contrast = as.character(pw$contrast), estimate = pw$estimate, se = pw$SE),
    reml_criterion = unname(REMLcrit(f)),
    # log|X'X| of lme4's X: the REML criterion of another basis X T of the same columns differs by 2 log|det T|
    logdet_xtx = as.numeric(determinant(crossprod(getME(f, "X")), logarithm = TRUE)$modulus),
    lme4_version = as.character(packageVersion("lme4")), emmeans_version = as.character(packageVersion("emmeans")))
}
write(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), file.path(here, "lme4_covariates_reference.json"))
