# lme4 reference fits of the per-model model with a scenario x judge interaction (issue 21), for
# tests/estimators/test_reml_scenario_judge_lme4.py (run once; the JSON files in fits/ are checked in):
#   Rscript tests/data/lme4_sj_suite/fit_lme4.R [table ...]      # default: every tables/*.csv
#
# Per table and model, contr.sum coding (the intercept is mu, the coefficients gamma_1..gamma_{K-1}):
#   fixed:              score ~ judge + (1|scenario) + (1|scenario:generation) + (1|scenario:judge)
#   random:             score ~ 1 + (1|judge) + (1|scenario) + (1|scenario:generation) + (1|scenario:judge)
#   no_scenario_judge:  score ~ judge + (1|scenario) + (1|scenario:generation)
# all REML. lr_statistic = REMLcrit(no_scenario_judge) - REMLcrit(fixed), the REML likelihood-ratio statistic of
# scenario_judge = 0 (same fixed effects in both, so REML criteria compare).
# Every fit is run with bobyqa and nloptwrap, each at lme4's default tolerances and at tight ones, plus a tight
# bobyqa restart from the best of those; the fit with the smallest REML criterion is the reference (best_run),
# and every run's criterion and variances are kept (runs) to show lme4's own precision.
# Balanced models (every scenario m generations, every call present) also get the ANOVA mean squares, computed
# by hand and checked against anova(lm(score ~ scenario + scenario:generation + judge + scenario:judge)).
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

# 10 significant digits, recursively; criteria (names matching CRIT) keep 13, so that they resolve 1e-8 at
# values of a few thousand
CRIT <- "crit|lr_statistic"
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

GROUPS <- c("scenario" = "scenario", "scenario:generation" = "generation", "scenario:judge" = "scenario_judge",
            "judge" = "judge", "Residual" = "residual")
variances <- function(f) {
  vc <- as.data.frame(VarCorr(f))
  stopifnot(all(vc$grp %in% names(GROUPS)))
  as.list(setNames(vc$vcov, GROUPS[vc$grp]))
}

fit_all <- function(form, d) {
  fits <- list()
  for (nm in names(controls))
    fits[[nm]] <- suppressWarnings(suppressMessages(lmer(form, data = d, REML = TRUE, control = controls[[nm]])))
  best <- fits[[which.min(sapply(fits, REMLcrit))]]
  fits$restart <- suppressWarnings(suppressMessages(
    lmer(form, data = d, REML = TRUE, control = controls$bobyqa_tight, start = getME(best, "theta"))))
  vals <- sapply(fits, REMLcrit)
  b <- which.min(vals)
  f <- fits[[b]]
  list(fit = f, out = list(
    formula = paste(deparse(form, width.cutoff = 500L), collapse = ""),
    variances = variances(f), reml_crit = REMLcrit(f), singular = isSingular(f),
    theta = unname(getME(f, "theta")), theta_names = names(getME(f, "theta")),
    fixef = unname(fixef(f)), fixef_names = names(fixef(f)), vcov = unname(as.matrix(vcov(f))),
    best_run = names(fits)[b],
    runs = lapply(names(fits), function(nm) {
      run <- list(optimizer = nm, criterion = unname(vals[nm]), variances = variances(fits[[nm]]))
      msg <- conv_messages(fits[[nm]])
      if (length(msg)) run$messages <- msg
      run
    })))
}

# emmeans of the judges (asymptotic: z, no df) and the offsets gamma_l = judge mean - mean of judge means,
# with their SEs from emmeans' covariance (P V P', P = I - 11'/K)
judge_means <- function(f, d) {
  em <- suppressMessages(emmeans(f, ~ judge, data = d))
  s <- as.data.frame(summary(em))
  v <- vcov(em)
  k <- nrow(s)
  p <- diag(k) - matrix(1 / k, k, k)
  list(judge = I(as.character(s$judge)), emmean = I(s$emmean), std_error = I(s$SE),
       offset = I(as.numeric(p %*% s$emmean)), offset_std_error = I(sqrt(diag(p %*% v %*% t(p)))))
}

# balanced ANOVA of one model: scenario, generation within scenario, judge, scenario:judge and the within-cell
# residual (generation x judge within scenario), by hand and checked against lm's sequential table
anova_ms <- function(d) {
  n <- nlevels(d$scenario); k <- nlevels(d$judge); m <- nlevels(d$generation)
  y <- d$score
  gm <- mean(y)
  yi <- ave(y, d$scenario); yij <- ave(y, d$scenario, d$generation); yl <- ave(y, d$judge)
  yil <- ave(y, d$scenario, d$judge)
  ss <- c(scenario = sum((yi - gm)^2), generation = sum((yij - yi)^2), judge = sum((yl - gm)^2),
          scenario_judge = sum((yil - yi - yl + gm)^2), residual = sum((y - yij - yil + yi)^2))
  df <- c(scenario = n - 1, generation = n * (m - 1), judge = k - 1, scenario_judge = (n - 1) * (k - 1),
          residual = n * (m - 1) * (k - 1))
  ms <- ss / df
  a <- anova(lm(score ~ scenario + scenario:generation + judge + scenario:judge, data = d))
  rn <- c(scenario = "scenario", generation = "scenario:generation", judge = "judge",
          scenario_judge = "scenario:judge", residual = "Residuals")
  stopifnot(isTRUE(all.equal(unname(a[rn, "Mean Sq"]), unname(ms[names(rn)]), tolerance = 1e-10)),
            all(a[rn, "Df"] == df[names(rn)]))
  est <- c(scenario = (ms[["scenario"]] - ms[["generation"]] - ms[["scenario_judge"]] + ms[["residual"]]) / (m * k),
           generation = (ms[["generation"]] - ms[["residual"]]) / k,
           scenario_judge = (ms[["scenario_judge"]] - ms[["residual"]]) / m,
           residual = ms[["residual"]])
  list(n = n, m = m, k = k, ms = as.list(ms), df = as.list(df), estimates = as.list(est))
}

t_all <- Sys.time()
for (file in sort(list.files(file.path(here, "tables"), pattern = "\\.csv$"))) {
  name <- sub("\\.csv$", "", file)
  if (length(only) && !(name %in% only)) next
  t0 <- Sys.time()
  all <- read.csv(file.path(here, "tables", file), colClasses = c(model = "character", judge = "character"))
  per_model <- list()
  for (mm in sort(unique(all$model))) {
    d <- all[all$model == mm, ]
    d$judge <- factor(d$judge); d$scenario <- factor(d$scenario); d$generation <- factor(d$generation)
    calls <- table(interaction(d$scenario, d$judge, drop = TRUE))
    gens <- tapply(d$generation, d$scenario, function(g) length(unique(g)))
    stopifnot(max(calls) >= 2, max(gens) >= 2)
    cells <- table(d$scenario, d$generation, d$judge)
    balanced <- length(unique(gens)) == 1 && all(cells == 1)
    fx <- fit_all(score ~ judge + (1|scenario) + (1|scenario:generation) + (1|scenario:judge), d)
    rd <- fit_all(score ~ 1 + (1|judge) + (1|scenario) + (1|scenario:generation) + (1|scenario:judge), d)
    f0 <- fit_all(score ~ judge + (1|scenario) + (1|scenario:generation), d)
    per_model[[mm]] <- list(
      n_rows = nrow(d), n_scenarios = nlevels(d$scenario), judges = levels(d$judge),
      generations_min = min(gens), generations_max = max(gens), max_calls_per_scenario_judge = max(calls),
      balanced = balanced,
      fixed = c(fx$out, list(judge_means = judge_means(fx$fit, d))),
      random = rd$out, no_scenario_judge = f0$out,
      lr_statistic = REMLcrit(f0$fit) - REMLcrit(fx$fit),
      anova = if (balanced) anova_ms(d) else NULL)
    cat(sprintf("  %s fixed %s%s random %s no_sj %s lr %.4g\n", mm, fx$out$best_run,
                if (fx$out$singular) " (singular)" else "", rd$out$best_run, f0$out$best_run,
                per_model[[mm]]$lr_statistic))
  }
  out <- list(name = name, n_rows = nrow(all), models = I(names(per_model)), fits = per_model,
              lme4_version = as.character(packageVersion("lme4")),
              emmeans_version = as.character(packageVersion("emmeans")), r_version = R.version.string)
  write(toJSON(sig(out), digits = NA, auto_unbox = TRUE, null = "null", na = "null"),
        file.path(here, "fits", paste0(name, ".json")))
  cat(sprintf("%-44s %6.1fs\n", name, as.numeric(Sys.time() - t0, units = "secs")))
}
cat(sprintf("total %.1fs\n", as.numeric(Sys.time() - t_all, units = "secs")))
