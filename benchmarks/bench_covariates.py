"""Speed of the joint REML fit with item covariates beside lme4 on the same table (issue 32).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_covariates.py [--repeat 3] [--no-r] [--covariates 1 2]

Table: a simulated 6-model x 1,024-scenario x 2-judge table (12,288 rows, one generation) from
:func:`cjstats.studies.simulate_length_bias` (models of different mean length, one judge rewarding length), with
an answer length and, for two covariates, a second item column ``fluency`` (no effect). For each number of
covariates: median wall time of ``cj.fit_joint(df, "reml", covariates=...)`` and of
``cj.compare_models(df, "reml", covariates=...)`` (which fits again), the ``converged`` flag of the fit, and the
pooled fit without covariates for scale. With R (``Rscript`` with lme4), the same formula
``lmer(score ~ model * judge + judge * lc [+ judge * fc] + (1|scenario) + (1|scenario:model), REML = TRUE)``
(covariates centred at their means) is timed inside R with ``system.time`` around the ``lmer`` call only (the data
read excluded); the R part is skipped when ``Rscript`` is absent or ``--no-r`` is given.

Measured (2 cores, lme4 1.1.31), median of 5: on the joint REML engine with exact derivatives, one covariate
fit_joint 0.136 s, compare_models 0.240 s, lmer 0.421 s (0.32x lmer); two covariates 0.114 s, 0.200 s, lmer 0.382 s
(0.30x); converged True (KKT). Before (the separate central-difference pipeline, one run each, machine shared with
other work): one covariate fit_joint 50.8 s, compare_models 102.6 s, lmer 2.18 s in the same run (23x); two
covariates 352.7 s, 311.1 s, lmer 0.87 s (406x); converged False in both.
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

import numpy as np
import pandas as pd

import cjstats as cj
from cjstats.studies.simulate_covariates import simulate_length_bias

R_SCRIPT = r"""
suppressMessages(library(lme4))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
d$model <- factor(d$model); d$judge <- factor(d$judge); d$scenario <- factor(d$scenario)
d$lc <- d$length - mean(d$length)
two <- "fluency" %in% names(d)
if (two) d$fc <- d$fluency - mean(d$fluency)
options(contrasts = c("contr.sum", "contr.poly"))
form <- if (two) score ~ model * judge + judge * lc + judge * fc + (1 | scenario) + (1 | scenario:model) else
  score ~ model * judge + judge * lc + (1 | scenario) + (1 | scenario:model)
reps <- as.integer(args[2]); t <- numeric(reps)
for (r in seq_len(reps)) t[r] <- system.time(f <- lmer(form, data = d, REML = TRUE))[["elapsed"]]
cat(median(t), "\n")
"""


def table(n_cov: int, seed: int = 0) -> pd.DataFrame:
    """6 models x 1,024 scenarios x 2 judges, with ``length`` (and ``fluency`` when ``n_cov == 2``)."""
    d = simulate_length_bias(n=1024, mu=(5.0, 5.1, 4.9, 5.2, 5.0, 4.8),
                             lengths=(550.0, 400.0, 450.0, 500.0, 380.0, 420.0), slopes=(0.0, 0.004), seed=seed)
    if n_cov == 2:
        cell = d.groupby(["model", "scenario"], sort=False).ngroup().to_numpy()
        d["fluency"] = np.round(np.random.default_rng(seed + 1).normal(0, 1, cell.max() + 1)[cell], 4)
    return d


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _lme4_time(df: pd.DataFrame, repeat: int) -> float | None:
    if shutil.which("Rscript") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        csv, script = Path(tmp) / "t.csv", Path(tmp) / "bench.R"
        df.to_csv(csv, index=False)
        script.write_text(R_SCRIPT)
        out = subprocess.run(["Rscript", str(script), str(csv), str(repeat)], capture_output=True, text=True)
        if out.returncode != 0:
            return None
        return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-r", action="store_true")
    ap.add_argument("--covariates", type=int, nargs="+", default=[1, 2], choices=[1, 2])
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    for n_cov in a.covariates:
        df = table(n_cov)
        covs = ["length", "fluency"][:n_cov]
        fit = cj.fit_joint(df, "reml", covariates=covs)            # warm: imports, caches
        t_fit = _median_time(lambda: cj.fit_joint(df, "reml", covariates=covs), a.repeat)
        t_cmp = _median_time(lambda: cj.compare_models(df, "reml", covariates=covs), a.repeat)
        t_pool = _median_time(lambda: cj.fit_joint(df, "reml"), a.repeat)
        line = (f"{len(df):,} rows, covariates {covs}: fit_joint {t_fit:.3f} s (converged "
                f"{fit.diagnostics['converged']}), compare_models {t_cmp:.3f} s, pooled fit without covariates "
                f"{t_pool:.3f} s")
        if not a.no_r:
            t_r = _lme4_time(df, a.repeat)
            line += ("; lme4 lmer " + (f"{t_r:.3f} s (fit_joint / lmer = {t_fit / t_r:.2f}x)" if t_r is not None
                                       else "not available"))
        print(line, flush=True)


if __name__ == "__main__":
    main()
