# Reference joint fits with lme4 for tests/comparisons/test_compare_reml.py (run once; JSON is checked in):
#   Rscript tests/data/lme4_joint/fit_lme4_joint.R
# Model: score ~ model * judge + (1|scenario) + (1|scenario:model) + (1|scenario:model:generation), contr.sum.
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
args <- commandArgs(trailingOnly = FALSE)
here <- dirname(normalizePath(sub("--file=", "", args[grep("--file=", args)])))
options(contrasts = c("contr.sum", "contr.poly"))
out <- list()
# real_mentalalign has one generation per (model, scenario): the generation term is not identifiable there
# (it is the scenario:model term), so it is left out, as cjstats does.
for (name in c("unbalanced", "boundary", "real_mentalalign")) {
  d <- read.csv(file.path(here, paste0(name, ".csv")))
  d$model <- factor(d$model); d$judge <- factor(d$judge)
  d$scenario <- factor(d$scenario); d$generation <- factor(d$generation)
  ctrl <- lmerControl(optimizer = "bobyqa", optCtrl = list(maxfun = 1e5), check.conv.singular = "ignore")
  re <- if (name == "real_mentalalign") "(1|scenario) + (1|scenario:model)" else
    "(1|scenario) + (1|scenario:model) + (1|scenario:model:generation)"
  f <- lmer(as.formula(paste("score ~ model * judge +", re)), data = d, REML = TRUE, control = ctrl)
  vc <- as.data.frame(VarCorr(f))
  grid <- expand.grid(judge = levels(d$judge), model = levels(d$model))[, c("model", "judge")]
  X <- model.matrix(~ model * judge, grid)
  cell <- as.vector(X %*% fixef(f))
  cov <- as.matrix(X %*% as.matrix(vcov(f)) %*% t(X))
  ml_full <- lmer(as.formula(paste("score ~ model * judge +", re)), data = d, REML = FALSE, control = ctrl)
  ml_add <- lmer(as.formula(paste("score ~ model + judge +", re)), data = d, REML = FALSE, control = ctrl)
  out[[name]] <- list(
    n_rows = nrow(d),
    variances = list(scenario = vc$vcov[vc$grp == "scenario"], model_scenario = vc$vcov[vc$grp == "scenario:model"],
                     generation = if (any(vc$grp == "scenario:model:generation"))
                       vc$vcov[vc$grp == "scenario:model:generation"] else NA, residual = vc$vcov[vc$grp == "Residual"]),
    cell_models = as.character(grid$model), cell_judges = as.character(grid$judge),
    cell_means = cell, cell_cov = cov, reml_criterion = unname(REMLcrit(f)),
    loglik_ml_full = as.numeric(logLik(ml_full)), loglik_ml_additive = as.numeric(logLik(ml_add)),
    singular = isSingular(f), lme4_version = as.character(packageVersion("lme4")))
}
write(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), file.path(here, "lme4_joint_reference.json"))
