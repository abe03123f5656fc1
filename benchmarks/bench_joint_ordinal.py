"""Time the joint ordinal fit (``cj.fit_joint(..., method="ordinal")``, Laplace and nested AGQ 5) against
``glmer(score ~ model*judge + (1|scenario) + (1|scenario:model), binomial(probit))`` and ``clmm`` with the same
formula on a 40-scenario x 4-model x 4-judge verdict table (640 rows). R is timed inside Rscript (the fit alone,
not R's start-up) when Rscript is on the PATH.

Run: python benchmarks/bench_joint_ordinal.py [repeats]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "data" / "joint_ordinal"))
from make_tables import simulate  # noqa: E402

import cjstats as cj  # noqa: E402


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(repeats: int = 5) -> None:
    d = simulate(n=40, P=4, K=4, J=2, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cj.fit_joint(d, method="ordinal")           # warm imports
        lap = best_of(lambda: cj.fit_joint(d, method="ordinal"), repeats)
        cmp_ = best_of(lambda: cj.compare_models(d, method="ordinal"), repeats)
        agq = best_of(lambda: cj.fit_joint(d, method="ordinal", nagq=5), 1)
    print(f"table: 40 scenarios x 4 models x 4 judges, {len(d)} verdicts")
    print(f"cjstats fit_joint(method='ordinal') Laplace:   {lap:.3f} s (best of {repeats})")
    print(f"cjstats compare_models(method='ordinal'):      {cmp_:.3f} s (fit + differences, ranks, pass rates)")
    print(f"cjstats fit_joint(..., nagq=5) nested AGQ:     {agq:.3f} s")
    if shutil.which("Rscript") is None:
        print("Rscript not found: R not timed")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        d.to_csv(path, index=False)
        script = f"""
suppressPackageStartupMessages({{library(lme4); library(ordinal); library(emmeans)}})
d <- read.csv("{path}"); d$model <- factor(d$model); d$judge <- factor(d$judge); d$scenario <- factor(d$scenario)
best <- function(f, n) min(sapply(seq_len(n), function(i) system.time(f())[["elapsed"]]))
f <- score ~ model * judge + (1 | scenario) + (1 | scenario:model)
g <- function() glmer(f, data = d, family = binomial("probit"))
ge <- function() emmeans::emmeans(glmer(f, data = d, family = binomial("probit")), pairwise ~ model)
d$y <- factor(d$score, ordered = TRUE)
cm <- function() clmm(y ~ model * judge + (1 | scenario) + (1 | scenario:model), data = d, link = "probit")
cat(sprintf("glmer: %.3f\\nglmer+emmeans: %.3f\\nclmm: %.3f\\n", best(g, {repeats}), best(ge, {repeats}), best(cm, 1)))
"""
        out = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, timeout=900)
        for line in out.stdout.strip().splitlines():
            name, sec = line.split(":")
            print(f"R {name + ':':<44} {float(sec):.3f} s")
        if out.returncode != 0:
            print(out.stderr[-500:])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
