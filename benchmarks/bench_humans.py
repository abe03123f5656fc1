"""Benchmark: judges against humans on the full MentalAlign table (issue 11).

Goal: agreement + PPI++ means (and all paired differences) for all 10 models and 7 criteria in under 5 s.
Run:  .venv/bin/python benchmarks/bench_humans.py [--repeat 3]

Reports, separately: loading the table with its human ratings, importing ppi_py (numba, scikit-learn and
statsmodels come with it; paid once per process), judge_agreement, and ppi_means with every human label and
with labels on 100 scenarios.
"""

from __future__ import annotations

import argparse
import statistics
import time


def _time(fn, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out), min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import cjstats as cj

    t0 = time.perf_counter()
    scores = cj.datasets.load("mentalalign", humans=True)
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    import ppi_py  # noqa: F401
    imp = time.perf_counter() - t0
    agr = _time(lambda: cj.judge_agreement(scores), args.repeat)
    ppi_all = _time(lambda: cj.ppi_means(scores), args.repeat)
    ppi_100 = _time(lambda: cj.ppi_means(scores, n_labels=100, seed=0), args.repeat)
    both = _time(lambda: (cj.judge_agreement(scores), cj.ppi_means(scores)), args.repeat)
    print(f"{scores!r}; {len(scores.reference_frame()):,} human ratings")
    print(f"{'step':<52}{'median s':>10}{'best s':>10}")
    for name, (med, best) in (("load('mentalalign', humans=True)", (load, load)),
                              ("import ppi_py (once per process)", (imp, imp)),
                              ("judge_agreement (5 x 7 rows)", agr),
                              ("ppi_means, all labels (70 means, 315 diffs)", ppi_all),
                              ("ppi_means, n_labels=100", ppi_100),
                              ("agreement + ppi_means (the issue's goal: < 5 s)", both)):
        print(f"{name:<52}{med:>10.2f}{best:>10.2f}")


if __name__ == "__main__":
    main()
