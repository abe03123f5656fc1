# Why glmer(binomial("probit")) differs from clmm and method="ordinal" on the verdict tables (issue 35): did glmer
# stop early, or does it maximise another function? Run from the repository root:
#   Rscript tests/data/joint_ordinal/glmer_probit.R  -> tests/data/joint_ordinal/glmer_probit.json
# Per table: glmer's optimum (default optimizer, and bobyqa with maxfun = 1e5) with its convergence code and
# messages; allFit (every optimizer); glmer restarted at clmm's optimum; glmer's own deviance (devFunOnly, nAGQ = 1)
# at its optimum and at clmm's (clmm's thresholds mapped to glmer's intercept: glmer eta = -theta_0 + x'b); and the
# fixed-effect linear predictor of every (model, judge) cell at glmer's optimum, which
# tests/comparisons/test_glmer_probit.py evaluates our Laplace, glmer's (Fisher-weight) Laplace and nested AGQ at.
suppressPackageStartupMessages({library(lme4); library(ordinal); library(jsonlite)})
here <- "tests/data/joint_ordinal"
out <- list()
for (f in sort(list.files(here, pattern = "^verdict.*\\.csv$"))) {
  d <- read.csv(file.path(here, f))
  d$model <- factor(d$model); d$judge <- factor(d$judge); d$scenario <- factor(d$scenario)
  form <- score ~ model * judge + (1 | scenario) + (1 | scenario:model)
  g0 <- glmer(form, data = d, family = binomial("probit"))
  ctrl <- glmerControl(optimizer = "bobyqa", optCtrl = list(maxfun = 1e5))
  g <- glmer(form, data = d, family = binomial("probit"), control = ctrl)
  th <- getME(g, "theta")
  d$y <- factor(d$score, ordered = TRUE)
  cm <- clmm(y ~ model * judge + (1 | scenario) + (1 | scenario:model), data = d, link = "probit")
  sd_cm <- sapply(cm$ST, function(m) as.numeric(m))
  th_cm <- sapply(names(th), function(n) if (startsWith(n, "scenario:model")) sd_cm[["scenario:model"]] else sd_cm[["scenario"]])
  b_cm <- c(-as.numeric(cm$Theta), as.numeric(cm$beta))
  dev <- glmer(form, data = d, family = binomial("probit"), devFunOnly = TRUE)
  g3 <- glmer(form, data = d, family = binomial("probit"), start = list(theta = unname(th_cm), fixef = b_cm),
              control = ctrl)
  af <- suppressMessages(suppressWarnings(allFit(g0, verbose = FALSE)))
  ll <- summary(af)$llik
  nd <- expand.grid(judge = levels(d$judge), model = levels(d$model))
  nd$eta <- predict(g, newdata = nd, re.form = NA)
  out[[sub("\\.csv$", "", f)]] <- list(
    default = list(loglik = as.numeric(logLik(g0)), theta = as.list(getME(g0, "theta")),
                   conv = g0@optinfo$conv$opt, messages = paste(unlist(g0@optinfo$conv$lme4$messages), collapse = "; ")),
    bobyqa = list(loglik = as.numeric(logLik(g)), theta = as.list(th), conv = g@optinfo$conv$opt,
                  feval = g@optinfo$feval),
    from_clmm = list(loglik = as.numeric(logLik(g3)), theta = as.list(getME(g3, "theta"))),
    allfit_loglik = as.list(ll),
    clmm = list(loglik = as.numeric(logLik(cm)), theta = as.list(th_cm)),
    glmer_deviance_at_glmer = dev(c(th, fixef(g))), glmer_deviance_at_clmm = dev(c(th_cm, b_cm)),
    cells = list(model = as.character(nd$model), judge = as.character(nd$judge), eta = nd$eta),
    R = R.version.string, lme4 = as.character(packageVersion("lme4")))
}
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), file.path(here, "glmer_probit.json"))
