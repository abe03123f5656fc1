# Reference REML fits with lme4 for tests/estimators/test_reml.py (the tests read lme4_reference.json; they do
# not need R). Run from the repository root after make_inputs.py:
#
#   Rscript tests/data/lme4/fit_lme4.R
#
# Fixed judges:  lmer(score ~ judge + (1|scenario) + (1|scenario:generation)), judge coded contr.sum
#                (the intercept is mu, the panel mean, and the coefficients are gamma_1..gamma_{K-1});
#                with one generation per scenario the (1|scenario:generation) term is dropped.
# Random judges: lmer(score ~ 1 + (1|judge) + (1|scenario) + (1|scenario:generation)).
# Each model is fitted with two optimizers at tight tolerances (nloptwrap's BOBYQA and minqa's bobyqa) and the
# fit with the lower REML criterion is the reference, so it is precise to well below the 1e-5 test tolerance.
# (On the boundary case lme4's default nloptwrap stops at generation variance 0.0034 with REMLcrit 580.4369,
# while the optimum is 0 with 580.3591; both criteria are stored.) The default-control estimates are stored
# too. lme4's confint(method = "profile") profiles the ML deviance even for a REML fit (profile() calls
# refitML()); those ML-profile intervals are stored to check cjstats' profile search on the same criterion.
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
options(contrasts = c("contr.sum", "contr.poly"))
here <- "tests/data/lme4"
cases <- c("balanced", "unbalanced", "boundary", "one_generation", "real_hanna", "real_mentalalign")
tight <- lmerControl(optimizer = "nloptwrap",
                     optCtrl = list(algorithm = "NLOPT_LN_BOBYQA", xtol_abs = 1e-14, ftol_abs = 1e-15,
                                    xtol_rel = 1e-14, ftol_rel = 1e-15, maxeval = 100000),
                     check.conv.singular = "ignore")

tight_bobyqa <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12, maxfun = 100000),
                            check.conv.singular = "ignore")
fit_best <- function(f, d) {
  a <- lmer(f, data = d, REML = TRUE, control = tight)
  b <- lmer(f, data = d, REML = TRUE, control = tight_bobyqa)
  best <- if (REMLcrit(b) < REMLcrit(a)) b else a
  attr(best, "crits") <- c(nloptwrap = REMLcrit(a), bobyqa = REMLcrit(b))
  best
}

vc_of <- function(fit) {
  v <- as.data.frame(VarCorr(fit))
  out <- list()
  for (i in seq_len(nrow(v))) {
    nm <- switch(v$grp[i], "scenario" = "scenario", "scenario:generation" = "generation", "judge" = "judge",
                 "Residual" = "residual", v$grp[i])
    out[[nm]] <- v$vcov[i]
  }
  out
}

prof_ci <- function(fit, level = 0.95) {
  # profile-likelihood intervals on the sd scale (lme4's profile + confint), squared to variances
  ci <- suppressWarnings(suppressMessages(confint(fit, parm = "theta_", method = "profile", level = level,
                                                  oldNames = FALSE)))
  out <- list()
  for (r in rownames(ci)) {
    nm <- if (grepl("scenario:generation", r)) "generation" else if (grepl("\\|scenario$", r)) "scenario"
          else if (grepl("\\|judge$", r)) "judge" else if (r == "sigma") "residual" else r
    out[[nm]] <- as.numeric(ci[r, ])^2
  }
  out
}

res <- list(lme4_version = as.character(packageVersion("lme4")), R_version = R.version.string,
            control = "nloptwrap BOBYQA, xtol_abs = 1e-14, ftol_abs = 1e-15, xtol_rel = 1e-14, ftol_rel = 1e-15",
            cases = list())
for (case in cases) {
  d <- read.csv(file.path(here, paste0(case, ".csv")), colClasses = c(model = "character", judge = "character"))
  d$judge <- factor(d$judge)
  d$scenario <- factor(d$scenario)
  d$generation <- factor(d$generation)
  m_max <- max(tapply(d$generation, d$scenario, function(g) length(unique(g))))
  has_gen <- m_max >= 2
  f_fixed <- if (has_gen) score ~ judge + (1 | scenario) + (1 | scenario:generation) else score ~ judge + (1 | scenario)
  f_random <- if (has_gen) score ~ 1 + (1 | judge) + (1 | scenario) + (1 | scenario:generation) else
    score ~ 1 + (1 | judge) + (1 | scenario)
  fx <- fit_best(f_fixed, d)
  fx_default <- lmer(f_fixed, data = d, REML = TRUE)
  rd <- fit_best(f_random, d)
  fe <- fixef(fx)
  res$cases[[case]] <- list(
    n_rows = nrow(d), has_generation = has_gen, judges = levels(d$judge),
    fixed = list(REMLcrit = REMLcrit(fx), REMLcrit_by_optimizer = as.list(attr(fx, "crits")),
                 variances = vc_of(fx), fixef = unname(fe), fixef_names = names(fe),
                 vcov = unname(as.matrix(vcov(fx))), isSingular = isSingular(fx), theta = unname(getME(fx, "theta")),
                 ml_profile_ci = prof_ci(fx), default_control_variances = vc_of(fx_default)),
    random = list(REMLcrit = REMLcrit(rd), REMLcrit_by_optimizer = as.list(attr(rd, "crits")),
                  variances = vc_of(rd), intercept = unname(fixef(rd)[1]),
                  isSingular = isSingular(rd), ml_profile_ci = prof_ci(rd))
  )
  cat(case, "done\n")
}
writeLines(toJSON(res, auto_unbox = TRUE, digits = NA, pretty = TRUE), file.path(here, "lme4_reference.json"))
