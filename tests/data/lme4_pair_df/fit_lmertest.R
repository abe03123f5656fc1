# lmerTest / pbkrtest reference for tests/comparisons/test_pair_df.py (run once; the JSON files in fits/ are
# checked in):   Rscript tests/data/lme4_pair_df/fit_lmertest.R [table ...]   (default: every tables/*.csv)
#
# For each table, with contr.sum and the generation term only when some (model, scenario) has two generations:
# pooled:    score ~ model * judge + (1|scenario) + (1|scenario:model) [+ (1|scenario:model:generation)]
# per_model: score ~ model * judge + (1|scenario) + (0 + d1|scenario) + ... + (0 + dP|scenario) [+ gen]
#   (the lme4 suite's per-model form; dp the 0/1 dummy of the p-th model level, numbered so that any model name
#   works), each REML, fitted with lmerTest::lmer; the reference is the smaller
#   REMLcrit of a tight bobyqa and a tight nloptwrap run. Recorded: variances, REMLcrit, isSingular, and
#   emmeans' pairwise differences of the model means averaged over judges (pairwise ~ model) and the model
#   means themselves, each with lmer.df = "satterthwaite" (lmerTest's df) and "kenward-roger" (pbkrtest).
# judges random (the population judge x model variance), per form:
#   score ~ 0 + model + (1|judge) + (1|judge:model) + <the form's scenario terms>, REML: variances, REMLcrit.
suppressPackageStartupMessages({library(lmerTest); library(emmeans); library(pbkrtest); library(jsonlite)})
args <- commandArgs(trailingOnly = FALSE)
here <- dirname(normalizePath(sub("--file=", "", args[grep("--file=", args)])))
only <- commandArgs(trailingOnly = TRUE)
options(contrasts = c("contr.sum", "contr.poly"))
emm_options(pbkrtest.limit = 1e5, lmerTest.limit = 1e5)
dir.create(file.path(here, "fits"), showWarnings = FALSE)

controls <- list(
  bobyqa_tight = lmerControl(optimizer = "bobyqa", check.conv.singular = "ignore",
                             optCtrl = list(rhoend = 1e-12, maxfun = 1e6)),
  nloptwrap_tight = lmerControl(optimizer = "nloptwrap", check.conv.singular = "ignore",
                                optCtrl = list(xtol_abs = 1e-14, ftol_abs = 1e-15, xtol_rel = 1e-14,
                                               ftol_rel = 1e-15, maxeval = 1e6)))

best_fit <- function(form, d) {
  fits <- lapply(controls, function(ct) suppressWarnings(suppressMessages(
    lmerTest::lmer(form, data = d, REML = TRUE, control = ct))))
  crit <- sapply(fits, REMLcrit)
  list(fit = fits[[which.min(crit)]], optimizer = names(fits)[which.min(crit)], runs = as.list(crit))
}

emm_table <- function(f, d, method) {
  em <- suppressMessages(emmeans(f, pairwise ~ model, data = d, lmer.df = method))
  s <- suppressMessages(as.data.frame(summary(em$contrasts)))
  m <- suppressMessages(as.data.frame(summary(em$emmeans)))
  ab <- do.call(rbind, strsplit(as.character(s$contrast), " - ", fixed = TRUE))
  list(pairs = list(model_a = I(ab[, 1]), model_b = I(ab[, 2]), estimate = I(s$estimate), std_error = I(s$SE),
                    df = I(s$df)),
       means = list(model = I(as.character(m$model)), estimate = I(m$emmean), std_error = I(m$SE), df = I(m$df)))
}

variances <- function(f, models) {
  vc <- as.data.frame(VarCorr(f))
  pick <- function(rows) if (any(rows)) vc$vcov[rows] else NA
  dummies <- paste0("d", seq_along(models))
  ms <- if (any(vc$var1 %in% dummies))
    setNames(lapply(dummies, function(dm) pick(vc$var1 %in% dm)), models) else
    pick(vc$grp == "scenario:model")
  list(scenario = pick(grepl("^scenario(\\.[0-9]+)?$", vc$grp) & vc$var1 %in% "(Intercept)"),
       model_scenario = ms, generation = pick(grepl("generation", vc$grp)),
       judge = pick(vc$grp == "judge"), judge_model = pick(vc$grp %in% c("judge:model", "judge.model")),
       residual = pick(vc$grp == "Residual"))
}

for (file in sort(list.files(file.path(here, "tables"), pattern = "\\.csv$"))) {
  name <- sub("\\.csv$", "", file)
  if (length(only) && !(name %in% only)) next
  t0 <- Sys.time()
  d <- read.csv(file.path(here, "tables", file))
  d$model <- factor(d$model); d$judge <- factor(d$judge)
  d$scenario <- factor(d$scenario); d$generation <- factor(d$generation)
  models <- levels(d$model)
  for (i in seq_along(models)) d[[paste0("d", i)]] <- as.numeric(d$model == models[i])
  gens_per_group <- rowSums(table(interaction(d$model, d$scenario, drop = TRUE), d$generation) > 0)
  gen <- if (any(gens_per_group >= 2)) " + (1|scenario:model:generation)" else ""
  forms <- list(pooled = paste0("(1|scenario) + (1|scenario:model)", gen),
                per_model = paste0("(1|scenario) + ", paste0("(0 + d", seq_along(models), "|scenario)", collapse = " + "), gen))
  out <- list(name = name, n_rows = nrow(d), models = models, judges = levels(d$judge),
              n_scenarios = nlevels(d$scenario), has_generation = nzchar(gen))
  for (form in names(forms)) {
    r <- best_fit(as.formula(paste("score ~ model * judge +", forms[[form]])), d)
    sat <- emm_table(r$fit, d, "satterthwaite")
    kr <- emm_table(r$fit, d, "kenward-roger")
    rj <- best_fit(as.formula(paste("score ~ 0 + model + (1|judge) + (1|judge:model) +", forms[[form]])), d)
    out[[form]] <- list(formula = forms[[form]], variances = variances(r$fit, models), reml_crit = REMLcrit(r$fit),
                        singular = isSingular(r$fit), optimizer = r$optimizer, runs = r$runs,
                        satterthwaite = sat, kenward_roger = kr,
                        judges_random = list(variances = variances(rj$fit, models), reml_crit = REMLcrit(rj$fit),
                                             singular = isSingular(rj$fit), optimizer = rj$optimizer, runs = rj$runs))
  }
  out$versions <- list(lme4 = as.character(packageVersion("lme4")), lmerTest = as.character(packageVersion("lmerTest")),
                       pbkrtest = as.character(packageVersion("pbkrtest")),
                       emmeans = as.character(packageVersion("emmeans")), r = R.version.string)
  write(toJSON(out, digits = I(10), auto_unbox = TRUE, na = "null", pretty = TRUE),
        file.path(here, "fits", paste0(name, ".json")))
  cat(sprintf("%-36s %6.1fs\n", name, as.numeric(Sys.time() - t0, units = "secs")))
}
