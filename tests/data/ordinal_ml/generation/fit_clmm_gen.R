# Reference fits for tests/estimators/test_ordinal_ml_generation.py: ordinal::clmm with a scenario and a nested
# scenario:generation random effect (Laplace: clmm's only method with two random terms) on the CSVs written by
# make_inputs.py. Run: Rscript tests/data/ordinal_ml/generation/fit_clmm_gen.R  (writes r_reference_gen.json)
suppressMessages({library(ordinal); library(jsonlite)})
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)))
out <- list()
for (f in list.files(here, pattern = "\\.csv$")) {
  name <- sub("\\.csv$", "", f)
  d <- read.csv(file.path(here, f))
  d$judge <- factor(d$judge); d$scenario <- factor(d$scenario); d$generation <- factor(d$generation)
  res <- list()
  for (link in c("probit", "logit")) {
    m <- clmm(ordered(score) ~ judge + (1 | scenario) + (1 | scenario:generation), data = d, link = link,
              control = clmm.control(gradTol = 1e-8))
    vc <- VarCorr(m)
    res[[link]] <- list(s2 = as.numeric(vc$scenario), s2_generation = as.numeric(vc[["scenario:generation"]]),
                        theta = unname(m$alpha), beta = unname(m$beta), loglik = as.numeric(logLik(m)),
                        max_grad = max(abs(m$gradient)))
  }
  out[[name]] <- res
}
write(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE), file.path(here, "r_reference_gen.json"))
