# Reference fits for tests/estimators/test_ordinal_ml_r.py: ordinal::clmm / clmm2 and lme4::glmer on the CSVs
# written by make_inputs.py. Run: Rscript tests/data/ordinal_ml/fit_clmm.R  (writes r_reference.json)
suppressMessages({library(ordinal); library(lme4); library(jsonlite)})
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)))
out <- list()
for (f in list.files(here, pattern = "\\.csv$")) {
  name <- sub("\\.csv$", "", f)
  d <- read.csv(file.path(here, f))
  d$judge <- factor(d$judge); d$scenario <- factor(d$scenario)
  res <- list()
  for (link in c("probit", "logit")) for (q in c(1, 10)) {
    key <- paste(link, q, sep = "_")
    if (length(unique(d$score)) > 2) {
      m <- clmm(ordered(score) ~ judge + (1 | scenario), data = d, link = link, nAGQ = q,
                control = clmm.control(gradTol = 1e-8))
      res[[paste0("clmm_", key)]] <- list(s2 = as.numeric(VarCorr(m)$scenario), theta = unname(m$alpha),
                                         beta = unname(m$beta), loglik = as.numeric(logLik(m)))
      m2 <- clmm2(ordered(score) ~ 1, nominal = ~ judge, random = scenario, data = d, link = if (link == "logit") "logistic" else link,
                  nAGQ = q, Hess = FALSE)
      res[[paste0("nominal_", key)]] <- list(s2 = unname(m2$stDev)^2, loglik = as.numeric(logLik(m2)),
                                            alpha = unname(m2$Theta))
    } else {
      m <- glmer(score ~ judge + (1 | scenario), data = d, family = binomial(link = link), nAGQ = q,
                 control = glmerControl(optimizer = "bobyqa", optCtrl = list(maxfun = 1e5)))
      res[[paste0("glmer_", key)]] <- list(s2 = as.numeric(VarCorr(m)$scenario), beta = unname(fixef(m)),
                                          loglik = as.numeric(logLik(m)))
    }
  }
  out[[name]] <- res
}
write(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), file.path(here, "r_reference.json"))
