# lme4 reference fits of the joint REML model for tests/comparisons/test_joint_reml_lme4_suite.py
# (run once; the JSON files in fits/ are checked in):
#   Rscript tests/data/lme4_joint_suite/fit_lme4.R [table ...]      # default: every tables/*.csv
#
# pooled:    score ~ model * judge + (1|scenario) + (1|scenario:model) [+ (1|scenario:model:generation)]
# per_model: score ~ model * judge + (1|scenario) + (0 + d_m0|scenario) + ... + (0 + d_mP|scenario) [+ generation]
# The generation term only when some (model, scenario) has two generations (else it is the scenario:model term).
# contr.sum coding. Every REML fit is run with bobyqa and nloptwrap, each at lme4's default tolerances and at
# tight ones, plus a tight bobyqa restart from the best of those; the fit with the smallest REML criterion is the
# reference, and every run's criterion is kept ("runs") to show lme4's own precision.
# reml_crit is lme4's REMLcrit (contr.sum fixed effects); reml_crit_cell is the same criterion with the fixed
# effects coded as the P x K cell means (score ~ 0 + model:judge, evaluated at the same theta with devFunOnly),
# which differs by the constant 2 log|det T| and is the criterion cjstats reports (reml.py module docstring).
suppressPackageStartupMessages({library(lme4); library(emmeans); library(jsonlite)})
args <- commandArgs(trailingOnly = FALSE)
here <- dirname(normalizePath(sub("--file=", "", args[grep("--file=", args)])))
only <- commandArgs(trailingOnly = TRUE)
options(contrasts = c("contr.sum", "contr.poly"))
emm_options(lmer.df = "asymptotic")
dir.create(file.path(here, "fits"), showWarnings = FALSE)

controls <- list(
  bobyqa = lmerControl(optimizer = "bobyqa", check.conv.singular = "ignore"),
  nloptwrap = lmerControl(optimizer = "nloptwrap", check.conv.singular = "ignore"),
  bobyqa_tight = lmerControl(optimizer = "bobyqa", check.conv.singular = "ignore",
                             optCtrl = list(rhoend = 1e-12, maxfun = 1e6)),
  nloptwrap_tight = lmerControl(optimizer = "nloptwrap", check.conv.singular = "ignore",
                                optCtrl = list(xtol_abs = 1e-14, ftol_abs = 1e-15, xtol_rel = 1e-14,
                                               ftol_rel = 1e-15, maxeval = 1e6)))

# 10 significant digits, recursively; criteria and log-likelihoods (names matching CRIT) keep 13, so that they
# resolve 1e-8 at values of a few thousand
CRIT <- "crit|deviance|loglik|^runs_|lr_statistic"
sig <- function(x, digits = 10) {
  if (is.list(x)) {
    keep <- if (is.null(names(x))) rep(FALSE, length(x)) else grepl(CRIT, names(x))
    return(setNames(lapply(seq_along(x), function(i) sig(x[[i]], if (keep[i]) 13 else digits)), names(x)))
  }
  if (is.numeric(x)) return(signif(x, digits))
  x
}

conv_messages <- function(f) {
  m <- f@optinfo$conv$lme4$messages
  c(if (is.null(m)) character(0) else m, f@optinfo$warnings |> unlist() |> as.character())
}

fit_all <- function(form, d, reml) {
  runs <- list(); fits <- list()
  for (nm in names(controls)) {
    f <- suppressWarnings(suppressMessages(lmer(form, data = d, REML = reml, control = controls[[nm]])))
    fits[[nm]] <- f
  }
  crit <- function(f) if (reml) REMLcrit(f) else deviance(f)
  best <- fits[[which.min(sapply(fits, crit))]]
  fits$restart <- suppressWarnings(suppressMessages(
    lmer(form, data = d, REML = reml, control = controls$bobyqa_tight, start = getME(best, "theta"))))
  vals <- sapply(fits, crit)
  b <- which.min(vals)
  list(best = fits[[b]], best_name = names(fits)[b],
       runs = lapply(names(fits), function(nm) {
         vc <- as.data.frame(VarCorr(fits[[nm]]))
         run <- list(optimizer = nm, criterion = unname(vals[nm]),
                     variances = as.list(setNames(vc$vcov, ifelse(is.na(vc$var1) | vc$var1 == "(Intercept)",
                                                                  vc$grp, vc$var1))))
         msg <- conv_messages(fits[[nm]])
         if (length(msg)) run$messages <- msg
         run
       }))
}

# emmeans' pairwise differences (model_a - model_b); I() keeps them arrays in the JSON when P = 2;
# df = -1 stands for Inf (lmer.df = "asymptotic": z statistics, no df)
differences <- function(f, d) {
  em <- suppressMessages(emmeans(f, pairwise ~ model, data = d, lmer.df = "asymptotic"))
  s <- suppressMessages(as.data.frame(summary(em$contrasts)))
  ab <- do.call(rbind, strsplit(as.character(s$contrast), " - ", fixed = TRUE))
  list(model_a = I(ab[, 1]), model_b = I(ab[, 2]), estimate = I(s$estimate), std_error = I(s$SE),
       df = I(ifelse(is.finite(s$df), s$df, -1)))
}

cell_crit <- function(re, d, theta) {
  dev <- lmer(as.formula(paste("score ~ 0 + model:judge +", re)), data = d, REML = TRUE, devFunOnly = TRUE)
  dev(theta)
}

for (file in sort(list.files(file.path(here, "tables"), pattern = "\\.csv$"))) {
  name <- sub("\\.csv$", "", file)
  if (length(only) && !(name %in% only)) next
  d <- read.csv(file.path(here, "tables", file))
  d$model <- factor(d$model); d$judge <- factor(d$judge)
  d$scenario <- factor(d$scenario); d$generation <- factor(d$generation)
  models <- levels(d$model)
  for (mm in models) d[[paste0("d_", mm)]] <- as.numeric(d$model == mm)
  gens_per_group <- rowSums(table(interaction(d$model, d$scenario, drop = TRUE), d$generation) > 0)
  has_gen <- any(gens_per_group >= 2)
  gen <- if (has_gen) " + (1|scenario:model:generation)" else ""
  grid <- expand.grid(judge = levels(d$judge), model = models)[, c("model", "judge")]
  logdet_t <- as.numeric(determinant(model.matrix(~ model * judge, grid), logarithm = TRUE)$modulus)
  t0 <- Sys.time()

  # (a) pooled model x scenario variance
  re <- paste0("(1|scenario) + (1|scenario:model)", gen)
  r <- fit_all(as.formula(paste("score ~ model * judge +", re)), d, TRUE)
  f <- r$best
  vc <- as.data.frame(VarCorr(f))
  pooled <- list(
    variances = list(scenario = vc$vcov[vc$grp == "scenario"], model_scenario = vc$vcov[vc$grp == "scenario:model"],
                     generation = if (has_gen) vc$vcov[vc$grp == "scenario:model:generation"] else NA,
                     residual = vc$vcov[vc$grp == "Residual"]),
    theta = unname(getME(f, "theta")), theta_names = names(getME(f, "theta")),
    reml_crit = REMLcrit(f), reml_crit_cell = cell_crit(re, d, getME(f, "theta")),
    singular = isSingular(f), best_run = r$best_name, runs = r$runs,
    differences = differences(f, d))
  ml_full <- fit_all(as.formula(paste("score ~ model * judge +", re)), d, FALSE)
  ml_add <- fit_all(as.formula(paste("score ~ model + judge +", re)), d, FALSE)
  pooled$ml <- list(deviance_full = deviance(ml_full$best), deviance_additive = deviance(ml_add$best),
                    loglik_full = as.numeric(logLik(ml_full$best)), loglik_additive = as.numeric(logLik(ml_add$best)),
                    lr_statistic = deviance(ml_add$best) - deviance(ml_full$best),
                    df = (length(models) - 1) * (nlevels(d$judge) - 1),
                    runs_full = sapply(ml_full$runs, `[[`, "criterion"),
                    runs_additive = sapply(ml_add$runs, `[[`, "criterion"))

  # (b) per-model model x scenario variance: one independent (0 + d_p | scenario) term per model
  re_pm <- paste0("(1|scenario) + ", paste0("(0 + d_", models, "|scenario)", collapse = " + "), gen)
  r <- fit_all(as.formula(paste("score ~ model * judge +", re_pm)), d, TRUE)
  f <- r$best
  vc <- as.data.frame(VarCorr(f))
  ms <- setNames(lapply(models, function(mm) vc$vcov[vc$var1 %in% paste0("d_", mm)]), models)
  # the same model written with || on the model factor: lme4 expands || term by term, and "0 + model" is one
  # term, so this is the unstructured (0 + model | scenario), NOT the per-model form; recorded to show it
  dbl <- suppressWarnings(suppressMessages(lmer(
    as.formula(paste0("score ~ model * judge + (1|scenario) + (0 + model || scenario)", gen)), data = d,
    REML = TRUE, control = controls$bobyqa)))
  per_model <- list(
    # lme4 renames repeated groups (scenario, scenario.1, ...; scenario.model.generation): match on var1
    variances = list(scenario = vc$vcov[grepl("^scenario(\\.[0-9]+)?$", vc$grp) & vc$var1 %in% "(Intercept)"],
                     model_scenario = ms,
                     generation = if (has_gen) vc$vcov[grepl("generation", vc$grp)] else NA,
                     residual = vc$vcov[vc$grp == "Residual"]),
    theta = unname(getME(f, "theta")), theta_names = names(getME(f, "theta")),
    reml_crit = REMLcrit(f), reml_crit_cell = cell_crit(re_pm, d, getME(f, "theta")),
    singular = isSingular(f), best_run = r$best_name, runs = r$runs,
    differences = differences(f, d),
    double_bar = list(formula = "(1|scenario) + (0 + model || scenario)", n_theta = length(getME(dbl, "theta")),
                      reml_crit = REMLcrit(dbl)))

  out <- list(name = name, n_rows = nrow(d), models = models, judges = levels(d$judge),
              n_scenarios = nlevels(d$scenario), has_generation = has_gen, logdet_t = logdet_t,
              pooled = pooled, per_model = per_model,
              lme4_version = as.character(packageVersion("lme4")),
              emmeans_version = as.character(packageVersion("emmeans")), r_version = R.version.string)
  write(toJSON(sig(out), digits = NA, auto_unbox = TRUE, na = "null"), file.path(here, "fits", paste0(name, ".json")))
  cat(sprintf("%-40s %6.1fs pooled %s per_model %s\n", name, as.numeric(Sys.time() - t0, units = "secs"),
              pooled$best_run, per_model$best_run))
}
