"""The Bayesian default model (with the scenario x judge term) against the paper's model: warm wall time and the
number of log-density evaluations NUTS spends (a script, not a test).

    .venv/bin/python benchmarks/bench_bayes_default.py              # 4,000 rows, 3 repeats
    .venv/bin/python benchmarks/bench_bayes_default.py --repeat 5 --target-accept 0.8

Data: ``cj.simulate_scores(cj.Truth.table3(), n=80, m=10, k=5, seed=3)``, model Qwen (4,000 rows, the paper's
design shape; the truth has no scenario x judge variance, the common case and the hardest geometry for its scale).
Timed: ``cj.estimate(scores, method="bayes", seed=1)`` (4 chains x 1,000 draws after 1,000 tuning steps, the
numba kernels already compiled) with the default ``scenario_judge="auto"`` (fitted here: m = 10) and with
``scenario_judge=False``. Issue 34's goal: the default <= 1.5x the paper's model and <= 3 s warm. Each figure is
the median of ``--repeat`` runs in one process (the machine is shared).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import cjstats as cj
import cjstats.estimators.bayes.gaussian as gaussian
import cjstats.estimators.bayes.scenario_judge as scenario_judge

COUNTS: dict[str, int] = {}


def _count(cls: type, name: str) -> None:
    inner = cls.logp

    def logp(self, theta):  # noqa: ANN001, ANN202
        COUNTS[name] = COUNTS.get(name, 0) + 1
        return inner(self, theta)

    cls.logp = logp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--target-accept", type=float, default=None,
                    help="passed to both fits (default: the backend's, 0.9 with the term and 0.8 without)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    _count(scenario_judge.SJMarginalDensity, "default")
    _count(gaussian.MarginalDensity, "paper")
    scores = cj.simulate_scores(cj.Truth.table3(), n=80, m=10, k=5, seed=3).subset(models=["Qwen"])
    extra = {} if args.target_accept is None else {"target_accept": args.target_accept}
    runs = {"default": {}, "paper": {"scenario_judge": False}}
    for kw in runs.values():                                   # warm-up: compile or load the kernels
        cj.estimate(scores, method="bayes", seed=1, draws=50, tune=50, chains=1, **kw, **extra)
    times: dict[str, list[float]] = {k: [] for k in runs}
    evals: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, kw in runs.items():
            COUNTS.clear()
            t0 = time.perf_counter()
            cj.estimate(scores, method="bayes", seed=1, **kw, **extra)
            times[name].append(time.perf_counter() - t0)
            evals[name] = COUNTS.get(name, 0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"rows={len(scores.to_frame()):,}; median of {args.repeat} warm fits (4 chains x 1,000 draws + 1,000 tune)")
    for name in runs:
        print(f"  {name:8s} {med[name]:6.2f} s   {evals[name]:7,d} log-density evaluations   "
              f"{1e6 * med[name] / max(evals[name], 1):6.1f} us per evaluation (all-in)")
    print(f"ratio default / paper: {med['default'] / med['paper']:.2f}x time, "
          f"{evals['default'] / max(evals['paper'], 1):.2f}x evaluations  (goal <= 1.5x, default <= 3 s)")


if __name__ == "__main__":
    main()
