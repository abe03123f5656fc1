# Reference fits for tests/estimators/test_ordinal_ml_edge_r.py (tables of make_edge.py): clmm (shared thresholds)
# and clmm2(nominal = ~judge) (per-judge thresholds), probit and logit, nAGQ 10, with their convergence codes.
# Run: Rscript tests/data/ordinal_ml/edge/fit_edge.R  (writes r_edge.json)
suppressMessages({library(ordinal); library(jsonlite)})
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)))
out <- list()
for (f in list.files(here, pattern = "\\.csv$")) {
  name <- sub("\\.csv$", "", f)
  d <- read.csv(file.path(here, f))
  d$judge <- factor(d$judge); d$scenario <- factor(d$scenario)
  res <- list()
  for (link in c("probit", "logit")) {
    m <- tryCatch(suppressWarnings(clmm(ordered(score) ~ judge + (1 | scenario), data = d, link = link, nAGQ = 10,
                                        control = clmm.control(gradTol = 1e-8, maxIter = 2000))),
                  error = function(e) NULL)
    if (!is.null(m)) res[[paste0("clmm_", link)]] <- list(loglik = as.numeric(logLik(m)), beta = unname(m$beta),
                                                          convergence = m$optRes$convergence)
    m2 <- tryCatch(suppressWarnings(clmm2(ordered(score) ~ 1, nominal = ~ judge, random = scenario, data = d,
                                          link = if (link == "logit") "logistic" else link, nAGQ = 10, Hess = FALSE,
                                          control = clmm2.control(maxIter = 2000))),
                   error = function(e) NULL)
    # each judge's thresholds (clmm2's Theta rows: the first judge's, then each judge's difference); clmm2 does
    # not keep them ordered, so its log-likelihood is that of a proper model only when every row increases
    if (!is.null(m2)) {
      th <- m2$Theta; th[-1, ] <- sweep(th[-1, , drop = FALSE], 2, th[1, ], "+")
      res[[paste0("nominal_", link)]] <- list(loglik = as.numeric(logLik(m2)), convergence = m2$optRes$convergence,
                                              thresholds = unname(th))
    }
  }
  out[[name]] <- res
}
write(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), file.path(here, "r_edge.json"))
