"""Benchmark the REML backend against lme4 (a script, not a test).

    .venv/bin/python benchmarks/bench_reml.py                 # cjstats only, with the issue's lme4 anchors
    .venv/bin/python benchmarks/bench_reml.py --lme4          # also time lmer here (needs Rscript + lme4)
    .venv/bin/python benchmarks/bench_reml.py --statsmodels   # also the statsmodels reference path (small sizes)

Data: the paper's design shape (m = 10 generations, K = 5 judges, Table 3 Qwen components) at 4,000 /
25,000 / 200,000 / 1,000,000 rows. "unbalanced" drops 10% of judge calls at random, the last generation of
every fifth scenario and judge_4 from every tenth scenario. The table is loaded once (``read_scores``), as
in the ANOVA benchmark; the timed call is ``cj.estimate(scores, method="reml", interval=...)`` with
``interval="none"`` (the fit: what ``lmer`` does) and ``"profile"`` (the default: fit plus profile-likelihood
intervals for every variance and both judge models). lme4 is timed inside R around
``lmer(score ~ judge + (1|scenario) + (1|scenario:generation))`` only (contr.sum, default control).
The machine is shared, so every figure is the median of several repeats.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import cjstats as cj
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores

SIZES = (4_000, 25_000, 200_000, 1_000_000)
M, K = 10, 5
#: lme4 and plain statsmodels (formula interface) as measured for the issue, balanced data.
ANCHORS = {4_000: (0.11, 0.95), 25_000: (0.61, 3.7), 200_000: (4.8, 22.7), 1_000_000: (32.0, 111.0)}

R_SCRIPT = r"""
suppressPackageStartupMessages(library(lme4))
options(contrasts = c("contr.sum", "contr.poly"))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1]); reps <- as.integer(args[2])
d$judge <- factor(d$judge); d$scenario <- factor(d$scenario); d$generation <- factor(d$generation)
t <- numeric(reps)
for (i in seq_len(reps)) t[i] <- system.time(f <- lmer(score ~ judge + (1|scenario) + (1|scenario:generation),
                                                      data = d, REML = TRUE))[["elapsed"]]
cat(median(t), format(REMLcrit(f), digits = 15), "\n")
"""


def make_table(rows: int, balanced: bool, seed: int = 0) -> pd.DataFrame:
    c = TABLE3_MTBENCH["Qwen"]
    n = rows // (M * K)
    df = simulate_scores(n=n, m=M, k=K, s2_scenario=c["scenario"], s2_generation=c["generation"],
                         s2_residual=c["residual"], judge_offsets=panel_offsets(K, c["judge_panel"]), mu=c["mu"],
                         model="Qwen", seed=seed)
    if not balanced:
        rng = np.random.default_rng(seed + 1)
        keep = rng.random(len(df)) >= 0.10
        keep &= ~((df["scenario"] % 5 == 0) & (df["generation"] == M - 1))
        keep &= ~((df["scenario"] % 10 == 3) & (df["judge"] == f"judge_{K - 1}"))
        df = df[keep].reset_index(drop=True)
    return df


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def time_lme4(df: pd.DataFrame, repeats: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        csv, script = Path(tmp) / "d.csv", Path(tmp) / "fit.R"
        df.to_csv(csv, index=False)
        script.write_text(R_SCRIPT)
        out = subprocess.run(["Rscript", str(script), str(csv), str(repeats)], capture_output=True, text=True,
                             check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lme4", action="store_true", help="time lmer here too (Rscript with lme4)")
    ap.add_argument("--statsmodels", action="store_true", help="time path='statsmodels' at the two small sizes")
    ap.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    args = ap.parse_args()
    if args.lme4 and shutil.which("Rscript") is None:
        sys.exit("Rscript not found: install r-base-core and r-cran-lme4, or drop --lme4.")
    header = ("| rows | design | reml fit (interval='none') s | reml default (profile intervals) s | "
              "lme4 here s | lme4 anchor s | statsmodels path s | statsmodels formula anchor s | criterion check |")
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for rows in args.sizes:
        for balanced in (True, False):
            df = make_table(rows, balanced)
            scores = cj.read_scores(df)
            reps = 7 if rows <= 25_000 else 5 if rows <= 200_000 else 3
            cj.estimate(scores, method="reml", interval="none")        # warm-up (imports)
            t_fit, fit = median_time(lambda s=scores: cj.estimate(s, method="reml", interval="none"), reps)
            t_prof, _ = median_time(lambda s=scores: cj.estimate(s, method="reml"), reps)
            crit = fit.diagnostics["Qwen"]["reml_criterion"]
            lme4 = anchor = sm = sm_anchor = "-"
            check = "-"
            if args.lme4:
                t_l, crit_l = time_lme4(df, 3 if rows <= 200_000 else 1)
                lme4 = f"{t_l:.3g}"
                check = f"{crit - crit_l:+.2e}"
            if balanced:
                anchor, sm_anchor = f"{ANCHORS[rows][0]:g}", f"{ANCHORS[rows][1]:g}"
            if args.statsmodels and rows <= 25_000:
                t_sm, _ = median_time(lambda s=scores: cj.estimate(s, method="reml", path="statsmodels",
                                                                   interval="none"), 3)
                sm = f"{t_sm:.3g}"
            print(f"| {len(df):,} | {'balanced' if balanced else 'unbalanced'} | {t_fit:.3g} | {t_prof:.3g} | "
                  f"{lme4} | {anchor} | {sm} | {sm_anchor} | {check} |", flush=True)
    print("\ncriterion check: cjstats REML criterion minus lme4's REMLcrit on the same table (when --lme4).")


if __name__ == "__main__":
    main()
