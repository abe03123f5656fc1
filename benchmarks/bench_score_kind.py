"""Benchmark (issue 34): estimate(..., method="anova") on a loaded table of 1,000,000 rows vs a plain numpy pass.

Goal: the public call within 2x of a numpy pass that computes the paper's sums of squares (App. C) and the
scenario x judge means. Before the fix 3/4 of the call was a score-shape scan (``cjstats.io.score_kind``, three
``np.unique`` sorts of 1M values) run on every call; a ``Scores`` table now computes its shape once
(``Scores.score_shape``) and every fit reads it.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/bench_score_kind.py [--rows 1000000] [--repeat 3]
(point PYTHONPATH at a checkout of main to measure "before").

The table is simulated and read once (not timed). The first ``estimate`` call is reported apart (it pays the one
scan on the new code, the imports on both); then ``--repeat`` calls of each, median wall time.

The numpy pass on the dense (n, m, K) array X: grand mean G, scenario means S_i, cell means C_ij, judge means J_l,
scenario x judge means X_i.l = mean_j X_ijl, and
SS_S = mK sum_i (S_i - G)^2, SS_G = K sum_ij (C_ij - S_i)^2, SS_J = nm sum_l (J_l - G)^2,
SS_W = sum_ijl (X_ijl - C_ij - J_l + G)^2 (summed directly, no shortcut).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import cjstats as cj
from cjstats.estimators.anova import mean_squares
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores


def numpy_pass(y: np.ndarray) -> dict[str, object]:
    """The paper's sums of squares and the scenario x judge means of a balanced (n, m, K) array, plain numpy."""
    n, m, k = y.shape
    cell = y.mean(axis=2)                      # C_ij
    scen = cell.mean(axis=1)                   # S_i
    judge = y.mean(axis=(0, 1))                # J_l
    g = scen.mean()                            # G
    sj = y.mean(axis=1)                        # X_i.l, scenario x judge
    resid = y - cell[:, :, None] - (judge - g)
    return {"ss_scenario": m * k * np.sum((scen - g) ** 2), "ss_generation": k * np.sum((cell - scen[:, None]) ** 2),
            "ss_judge": n * m * np.sum((judge - g) ** 2), "ss_residual": np.sum(resid * resid),
            "scenario_judge_means": sj}


def _median(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    k, m = 5, 10
    n = args.rows // (k * m)
    c = TABLE3_MTBENCH["Qwen"]
    df = simulate_scores(n=n, m=m, k=k, s2_scenario=c["scenario"], s2_generation=c["generation"],
                         s2_residual=c["residual"], judge_offsets=panel_offsets(k, c["judge_panel"]), seed=0)
    t0 = time.perf_counter()
    scores = cj.read_scores(df)
    load = time.perf_counter() - t0
    y = next(scores.groups()).dense()

    ref, ours = mean_squares(y), numpy_pass(y)   # the numpy pass computes the same sums of squares
    for name in ("ss_scenario", "ss_generation", "ss_judge", "ss_residual"):
        assert np.isclose(getattr(ref, name), ours[name], rtol=1e-9), name

    t0 = time.perf_counter()
    cj.estimate(scores, method="anova")
    first = time.perf_counter() - t0
    est = _median(lambda: cj.estimate(scores, method="anova"), args.repeat)
    base = _median(lambda: numpy_pass(y), args.repeat)
    print(f"cjstats {cj.__file__}")
    print(f"rows={len(scores):,} (n={n}, m={m}, K={k}); read_scores: {load:.2f} s (once, not below)")
    print(f"first estimate(method='anova') call:         {1e3 * first:8.1f} ms")
    print(f"estimate(method='anova'), median of {args.repeat}:      {1e3 * est:8.1f} ms")
    print(f"numpy pass (SS + scenario x judge), median:  {1e3 * base:8.1f} ms")
    print(f"ratio estimate / numpy pass:                 {est / base:8.2f}x  (goal <= 2x)")


if __name__ == "__main__":
    main()
