"""Benchmark: estimate(..., method="anova") on an already-loaded table of 1,000,000 rows.

Goal (issue 2): under 100 ms on this machine, the numeric core near the memory-bandwidth floor.
Run:  .venv/bin/python benchmarks/bench_anova.py [--rows 1000000] [--repeat 15]

It reports the median and best wall time of: the whole public call (validation of options, mean squares,
intervals, result assembly), the numeric core alone (``mean_squares`` on the (n, m, K) view), and the
memory-bandwidth floor (one ``np.sum`` over the same 8-byte scores, i.e. reading the data once).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import cjstats as cj
from cjstats.estimators.anova import mean_squares
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores


def _time(fn, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out), min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    k, m = 5, 10
    n = args.rows // (k * m)
    c = TABLE3_MTBENCH["Qwen"]
    t0 = time.perf_counter()
    df = simulate_scores(n=n, m=m, k=k, s2_scenario=c["scenario"], s2_generation=c["generation"],
                         s2_residual=c["residual"], judge_offsets=panel_offsets(k, c["judge_panel"]), seed=0)
    scores = cj.read_scores(df)
    load = time.perf_counter() - t0
    y = next(scores.groups()).dense()
    cj.estimate(scores, "anova")  # warm-up (scipy imports)
    full = _time(lambda: cj.estimate(scores, "anova"), args.repeat)
    core = _time(lambda: mean_squares(y), args.repeat)
    floor = _time(lambda: np.sum(y), args.repeat)
    print(f"rows={len(scores):,} (n={n}, m={m}, K={k}); simulate + read_scores: {load:.2f} s (not timed below)")
    print(f"{'step':<38}{'median ms':>10}{'best ms':>10}")
    for name, (med, best) in (("estimate(method='anova'), public call", full),
                              ("numeric core: mean_squares(y)", core),
                              ("bandwidth floor: one np.sum(y)", floor)):
        print(f"{name:<38}{1e3 * med:>10.1f}{1e3 * best:>10.1f}")
    print(f"core / floor = {core[0] / floor[0]:.1f} reads of the data")


if __name__ == "__main__":
    main()
