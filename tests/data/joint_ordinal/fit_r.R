# R fixtures of the joint ordinal model (method="ordinal"): glmer (verdicts) + emmeans, and clmm (all tables).
# Run from the repository root: Rscript tests/data/joint_ordinal/fit_r.R  -> tests/data/joint_ordinal/r_joint.json
suppressPackageStartupMessages({library(lme4); library(ordinal); library(emmeans); library(jsonlite)})
here <- "tests/data/joint_ordinal"
files <- sort(list.files(here, pattern = "\\.csv$"))
out <- list()
pairs_of <- function(emm) {
  pr <- as.data.frame(summary(pairs(emm, adjust = "none"), infer = c(TRUE, TRUE)))
  list(contrast = as.character(pr$contrast), estimate = pr$estimate, se = pr$SE)
}
for (f in files) {
  name <- sub("\\.csv$", "", f)
  d <- read.csv(file.path(here, f))
  d$model <- factor(d$model); d$judge <- factor(d$judge); d$scenario <- factor(d$scenario)
  res <- list()
  for (link in c("probit", "logit")) {
    if (length(unique(d$score)) == 2) {
      t0 <- proc.time()[["elapsed"]]
      g <- glmer(score ~ model * judge + (1 | scenario) + (1 | scenario:model), data = d,
                 family = binomial(link = link))
      el <- proc.time()[["elapsed"]] - t0
      vc <- as.data.frame(VarCorr(g))
      emm <- emmeans(g, ~ model)
      res[[paste0("glmer_", link)]] <- list(
        loglik = as.numeric(logLik(g)), s2_scenario = vc$vcov[vc$grp == "scenario"],
        s2_model_scenario = vc$vcov[vc$grp == "scenario:model"], pairs = pairs_of(emm),
        means = as.data.frame(emm)$emmean, means_se = as.data.frame(emm)$SE, seconds = el)
    }
    d$y <- factor(d$score, ordered = TRUE)
    t0 <- proc.time()[["elapsed"]]
    cm <- clmm(y ~ model * judge + (1 | scenario) + (1 | scenario:model), data = d, link = link)
    el <- proc.time()[["elapsed"]] - t0
    vc <- VarCorr(cm)
    emm <- emmeans(cm, ~ model)
    res[[paste0("clmm_", link)]] <- list(
      loglik = as.numeric(logLik(cm)), s2_scenario = as.numeric(vc$scenario),
      s2_model_scenario = as.numeric(vc$`scenario:model`), pairs = pairs_of(emm), seconds = el)
  }
  out[[name]] <- res
}
writeLines(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), file.path(here, "r_joint.json"))
