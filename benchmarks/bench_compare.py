"""Benchmark compare_models on MentalAlign-70k (composite, all 10 models x 4 judges x 1,000 scenarios).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_compare.py

Targets (issue 10): anova < 1 s, reml < 10 s. The table is loaded once; the timed call is
``cj.compare_models(scores, method=...)`` (joint fit + 45 paired differences + ranks + p_best), plus
``cj.self_preference`` on the same fit. The machine is shared, so every figure is the median of 3 repeats.
"""

from __future__ import annotations

import statistics
import time

import cjstats as cj


def main() -> None:
    scores = cj.datasets.load("mentalalign", composite=True)
    print(f"MentalAlign composite: {len(scores):,} rows, {len(scores.models)} models, {len(scores.judges)} judges")
    fam = {"gpt-4o": ["gpt-4o", "gpt-4o-mini"], "gemini-2.5-flash-preview-04-17": "gemini-2.0-flash",
           "claude-3-7-sonnet-20250219": "claude-3.5-haiku"}
    for method, opts in (("anova", {"incomplete": "drop"}), ("reml", {})):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            res = cj.compare_models(scores, method, **opts)
            cj.self_preference(scores, fam, fit=res.fit)
            times.append(time.perf_counter() - t0)
        print(f"{method:6s} median {statistics.median(times):.3f} s  (runs: {', '.join(f'{t:.3f}' for t in times)})")


if __name__ == "__main__":
    main()
