"""Speed of the joint REML fit (with profile-likelihood intervals) beside lme4 + emmeans on the same tables.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_joint_reml.py [--repeat 5] [--no-r]

Tables: MentalAlign's composite (10 models x 1,000 scenarios x 4 judges, 39,990 rows) and small simulated
tables (3 models x 20 scenarios x 4 judges, the design of the issue's collapse). For each: median wall time of
``cj.fit_joint(method="reml")`` (REML fit, profile intervals for the variances, the ML refits of the judge x model
test and, on tables small enough, the pooled-vs-per-model test), of ``cj.compare_models`` given that fit, and of
the per-model form (and its ratio to the pooled fit_joint). With R (``Rscript`` with lme4 and emmeans), the same
table is fitted by
``lmer(score ~ model * judge + (1|scenario) + (1|scenario:model))`` and ``emmeans(fit, pairwise ~ model)`` in one
R session, timed inside R (the data read excluded; lmer alone and lmer + emmeans), and the ratio of
``cj.compare_models(table, method="reml")`` to each is printed; lme4's ``confint(method="profile")`` is not
included (it takes minutes on MentalAlign). ``--small-only`` skips MentalAlign. The machine's load moves every
figure; the ratios are measured within one run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import cjstats as cj
from cjstats.studies.simulate_joint import simulate_joint

R_SCRIPT = r"""
suppressMessages({library(lme4); library(emmeans)})
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], colClasses = c("character", "character", "character", "character", "numeric"))
d$model <- factor(d$model); d$judge <- factor(d$judge)
options(contrasts = c("contr.sum", "contr.poly"))
reps <- as.integer(args[2]); t <- numeric(reps); t_fit <- numeric(reps)
for (r in seq_len(reps)) {
  t0 <- proc.time()[["elapsed"]]
  f <- lmer(score ~ model * judge + (1 | scenario) + (1 | scenario:model), data = d, REML = TRUE)
  t_fit[r] <- proc.time()[["elapsed"]] - t0
  e <- emmeans(f, pairwise ~ model, lmer.df = "asymptotic")
  s <- summary(e$contrasts)
  t[r] <- proc.time()[["elapsed"]] - t0
}
cat(median(t_fit), median(t), "\n")
"""


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _lme4_time(df, repeat: int) -> tuple[float, float] | None:
    """Median seconds of lme4's lmer alone and of lmer + emmeans (None without R)."""
    if shutil.which("Rscript") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        csv, script = Path(tmp) / "t.csv", Path(tmp) / "bench.R"
        df[["model", "scenario", "generation", "judge", "score"]].to_csv(csv, index=False)
        script.write_text(R_SCRIPT)
        out = subprocess.run(["Rscript", str(script), str(csv), str(repeat)], capture_output=True, text=True)
        if out.returncode != 0:
            return None
        t_fit, t_all = (float(v) for v in out.stdout.split()[-2:])
        return t_fit, t_all


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-r", action="store_true")
    ap.add_argument("--small-only", action="store_true", help="skip MentalAlign (its per-model fit takes seconds)")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    ma = None if a.small_only else cj.datasets.load("mentalalign", composite=True).to_frame()
    small = simulate_joint(n=20, m=1, mu=[0, .1, .2], gamma=[.1, -.1, .05, -.05], s2_scenario=.0126,
                           s2_model_scenario=.0438, s2_generation=0.0, s2_residual=.2613, rng=3)
    tables = [("small 3 x 20 x 4", small)] + ([] if a.small_only else [("MentalAlign composite", ma)])
    for name, df in tables:
        cj.fit_joint(df, method="reml")                          # warm: imports, caches
        fit = cj.fit_joint(df, method="reml")
        t_fit = _median_time(lambda: cj.fit_joint(df, method="reml"), a.repeat)
        t_cmp = _median_time(lambda: cj.compare_models(df, method="reml", fit=fit), a.repeat)
        t_pm = _median_time(lambda: cj.fit_joint(df, method="reml", model_scenario="per_model"),
                            max(1, a.repeat // 2))
        t_all = _median_time(lambda: cj.compare_models(df, method="reml"), a.repeat)
        line = (f"{name}: fit_joint (REML + profile intervals + tests) {t_fit:.3f} s, compare_models given the fit "
                f"{t_cmp:.3f} s, compare_models from the table {t_all:.3f} s, per-model form {t_pm:.3f} s "
                f"({t_pm / t_fit:.1f} x the pooled fit_joint)")
        if not a.no_r:
            t_r = _lme4_time(df, a.repeat)
            if t_r is None:
                line += "; lme4 not available"
            else:
                line += (f"; lme4 lmer {t_r[0]:.3f} s, lmer + emmeans {t_r[1]:.3f} s: compare_models from the table "
                         f"is {t_all / t_r[0]:.2f} x lmer, {t_all / t_r[1]:.2f} x lmer + emmeans")
        print(line, flush=True)


if __name__ == "__main__":
    main()
