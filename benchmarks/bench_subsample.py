"""Benchmark: the App. F subsampling experiment, 5,000 repetitions x 10 budgets x 3 strategies (not a test).

Run:  .venv/bin/python benchmarks/bench_subsample.py [--repeats 7] [--reps 5000]

Uses the real HANNA pool bundled with cjstats (model GPT, criterion Coherence: n = 96 stories, its 4 judge
prompt variants as the m_max = 4 generation pool, K_tot = 5 judges) and the paper's budget grid
B = 5, 10, ..., 50. Prints the median and range of the wall time over the repeats (the machine is shared, so
single timings are noisy), the time per strategy, and the largest |z| of empirical variance against the exact
prediction of cjstats.decisions.formulas.pool_variance.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import cjstats as cj
from cjstats.decisions.subsample import pool_array, subsample_strategies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--reps", type=int, default=5000)
    args = ap.parse_args()
    y = pool_array(cj.datasets.load("hanna", eval_prompt="as_generation"), model="GPT", criterion="Coherence")
    budgets = list(range(5, 55, 5))
    subsample_strategies(y, budgets=[5], reps=100, seed=0)          # warm-up (imports, caches)
    total, per = [], {s: [] for s in ("all", "random", "cyclic")}
    zmax = 0.0
    for r in range(args.repeats):
        t0 = time.perf_counter()
        table = subsample_strategies(y, budgets=budgets, reps=args.reps, seed=r)
        total.append(time.perf_counter() - t0)
        zmax = max(zmax, float(table["z"].abs().max()))
        for s in per:
            t0 = time.perf_counter()
            subsample_strategies(y, budgets=budgets, reps=args.reps, strategies=[s], seed=100 + r)
            per[s].append(time.perf_counter() - t0)
    print(f"pool {y.shape} (n, m_max, K_tot); {args.reps} repetitions x {len(budgets)} budgets x 3 strategies")
    print(f"total: median {statistics.median(total):.3f} s  (min {min(total):.3f}, max {max(total):.3f}; "
          f"{args.repeats} repeats)")
    for s, ts in per.items():
        print(f"  {s:>6}: median {statistics.median(ts):.3f} s")
    draws = args.reps * y.shape[0] * sum(budgets) * (1 + 1 + 1 / y.shape[2])
    print(f"elementary draws per run: {draws / 1e6:.0f} M; largest |z| over all runs: {zmax:.2f}")


if __name__ == "__main__":
    np.seterr(all="raise")
    main()
