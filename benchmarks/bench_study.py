"""Benchmark: cj.simulation_study, the issue-9 speed goals and how the cost grows.

Goals (issue 9, one 2-core machine):
  anova: 1,000 replicates at n=80, m=1, K=5 in under 5 s;
  reml:  the same in under 60 s;
  bayes: 200 replicates of a 1,000-row design (n=100, m=2, K=5) in under 5 minutes with jobs=2.

Run:  .venv/bin/python benchmarks/bench_study.py [--only anova,reml,bayes,scaling] [--bayes-reps 200]

Each line gives the wall time of the whole public call (simulation, Scores, fit, bookkeeping, summary) and the
load average when it started: the machine is shared, so the load says how much of it the study had.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import cjstats as cj


def _run(label: str, truth: cj.Truth, design: cj.Design, methods, reps: int, jobs) -> float:
    load = os.getloadavg()[0]
    t = time.perf_counter()
    res = cj.simulation_study(truth, design, methods, reps, seed=1, jobs=jobs)
    wall = time.perf_counter() - t
    fails = float(res.summary["failure_rate"].max())
    print(f"{label:<58}{wall:>9.2f} s   load {load:4.1f}   failures {fails:.0%}", flush=True)
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="anova,reml,bayes,scaling")
    ap.add_argument("--bayes-reps", type=int, default=200)
    args = ap.parse_args()
    only = set(args.only.split(","))
    warnings.simplefilter("ignore")
    truth = cj.Truth.table3(["Qwen"])
    paper = cj.Design(n=80, m=1, k=5)
    cj.simulation_study(truth, paper, ["anova", "reml"], 2, seed=0)  # warm-up: imports
    print(f"{'study':<58}{'wall':>11}")
    if "anova" in only:
        _run("anova, 1,000 reps, n=80 m=1 K=5, jobs=1 (goal < 5 s)", truth, paper, ["anova"], 1000, 1)
    if "reml" in only:
        _run("reml, 1,000 reps, n=80 m=1 K=5, jobs=1 (goal < 60 s)", truth, paper, ["reml"], 1000, 1)
        _run("reml, 1,000 reps, n=80 m=1 K=5, jobs=2", truth, paper, ["reml"], 1000, 2)
    if "bayes" in only:
        big = cj.Design(n=100, m=2, k=5)
        r = args.bayes_reps
        _run(f"bayes (defaults), {r} reps, 1,000 rows, jobs=2 (goal < 300 s)", truth, big,
             [("bayes", {"cores": 1})], r, 2)
    if "scaling" in only:
        for n in (20, 80, 320):
            _run(f"anova, 250 reps, n={n} m=1 K=5, jobs=1", truth, cj.Design(n=n, m=1, k=5), ["anova"], 250, 1)
        for reps in (250, 1000):
            _run(f"anova, {reps} reps, n=80 m=1 K=5, jobs=2", truth, paper, ["anova"], reps, 2)
        for n in (20, 80, 320):
            _run(f"reml, 100 reps, n={n} m=1 K=5, jobs=1", truth, cj.Design(n=n, m=1, k=5), ["reml"], 100, 1)


if __name__ == "__main__":
    main()
