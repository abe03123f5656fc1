# Refit, in R, the formula each cjstats fit states (fit.formula) on the same rows; write the variance components.
# Usage: Rscript refit.R manifest.json out.json  (manifest: [{name, kind, formula, csv}], tests/formula_r_cases.py)
suppressPackageStartupMessages({library(lme4); library(ordinal); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
cases <- fromJSON(args[1], simplifyVector = FALSE)
out <- list()
for (cs in cases) {
  d <- read.csv(cs$csv, stringsAsFactors = FALSE)
  for (v in c("model", "scenario", "generation", "judge")) if (v %in% names(d)) d[[v]] <- factor(d[[v]])
  contrasts(d$judge) <- contr.sum(nlevels(d$judge))
  if (nlevels(d$model) > 1) contrasts(d$model) <- contr.sum(nlevels(d$model))
  res <- list()
  if (cs$kind %in% c("clmm", "clmm_joint")) {
    cl <- parse(text = cs$formula)[[1]]
    cl$data <- quote(d)
    n_re <- length(gregexpr("\\(1\\|", cs$formula)[[1]])
    if (n_re == 1) cl$nAGQ <- 10L          # cjstats: AGQ 10 with one random effect, Laplace with the nested one
    fit <- eval(cl)
    vc <- VarCorr(fit)
    for (g in names(vc)) {
      key <- if (g == "scenario") "scenario" else if (g %in% c("scenario:generation", "generation:scenario")) "generation"
             else if (g %in% c("scenario:model", "model:scenario")) "model_scenario" else g
      res[[key]] <- as.numeric(vc[[g]][1, 1])
    }
    crit <- as.numeric(logLik(fit))
  } else {
    fit <- lmer(as.formula(cs$formula), data = d, REML = TRUE,
                control = lmerControl(check.conv.singular = "ignore", optimizer = "bobyqa",
                                      optCtrl = list(maxfun = 1e5)))
    vc <- as.data.frame(VarCorr(fit))
    for (i in seq_len(nrow(vc))) {
      g <- gsub("\\.", ":", sub("\\.[0-9]+$", "", vc$grp[i])); v1 <- vc$var1[i]
      key <- if (g == "Residual") "residual"
             else if (!is.na(v1) && grepl("dummy", v1)) paste0("model_scenario[", sub('.*"(.*)".*', "\\1", v1), "]")
             else if (g == "scenario") "scenario"
             else if (g %in% c("scenario:generation", "scenario:model:generation")) "generation"
             else if (g == "scenario:judge") "scenario_judge"
             else if (g == "scenario:model") "model_scenario"
             else g
      res[[key]] <- vc$vcov[i]
    }
    crit <- as.numeric(REMLcrit(fit))
  }
  out[[cs$name]] <- list(formula = cs$formula, variances = res, criterion = crit,
                         r_version = R.version.string, lme4 = as.character(packageVersion("lme4")),
                         ordinal = as.character(packageVersion("ordinal")))
}
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE), args[2])
