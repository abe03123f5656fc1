"""The Bayesian default model (with the scenario x judge term) against the paper's model: warm wall time, NUTS's
work and its yield (a script, not a test).

    .venv/bin/python benchmarks/bench_bayes_default.py              # 4,000 rows, 3 repeats
    .venv/bin/python benchmarks/bench_bayes_default.py --repeat 5 --target-accept 0.9
    .venv/bin/python benchmarks/bench_bayes_default.py --python-callback   # both models without C callbacks

Data: ``cj.simulate_scores(cj.Truth.table3(), n=80, m=10, k=5, seed=3)``, model Qwen (4,000 rows, the paper's
design shape; the truth has no scenario x judge variance, the common case and the hardest geometry for its scale).
Timed: ``cj.estimate(scores, method="bayes", seed=1)`` (4 chains x 1,000 draws after 1,000 tuning steps, the
numba kernels already compiled) with the default ``scenario_judge="auto"`` (fitted here: m = 10) and with
``scenario_judge=False``. Issue 34's goal: the default <= 1.5x the paper's model and <= 3 s warm. Each time is
the median of ``--repeat`` runs in one process (the machine is shared). Also reported, from the last run: the
gradient evaluations (leapfrog steps) of the 4,000 kept draws (``sample_stats.n_steps``; the tuning steps are not
stored), those of the whole run where the density is a Python callback (counted at the callback), divergences,
and the smallest bulk ESS over the model's variables with ESS per second.

Both models' marginal densities go to nutpie as compiled C callbacks (their chains run in parallel);
``--python-callback`` makes them use the Python callback (the chains then take turns under the GIL), to separate
that gain from the sampler's.
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
                    help="passed to both fits (default: the backend's, 0.8)")
    ap.add_argument("--python-callback", action="store_true",
                    help="both models through nutpie's Python callback instead of the C callbacks")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.python_callback:
        from cjstats.estimators.bayes import native

        native.native_sj_model = lambda density, init: None
        native.native_marginal_model = lambda density, init: None
    _count(scenario_judge.SJMarginalDensity, "default")
    _count(gaussian.MarginalDensity, "paper")
    scores = cj.simulate_scores(cj.Truth.table3(), n=80, m=10, k=5, seed=3).subset(models=["Qwen"])
    extra = {} if args.target_accept is None else {"target_accept": args.target_accept}
    runs = {"default": {}, "paper": {"scenario_judge": False}}
    for kw in runs.values():                                   # warm-up: compile or load the kernels
        cj.estimate(scores, method="bayes", seed=1, draws=50, tune=50, chains=1, **kw, **extra)
    times: dict[str, list[float]] = {k: [] for k in runs}
    last: dict[str, dict] = {}
    for _ in range(args.repeat):
        for name, kw in runs.items():
            COUNTS.clear()
            t0 = time.perf_counter()
            fit = cj.estimate(scores, method="bayes", seed=1, **kw, **extra)
            times[name].append(time.perf_counter() - t0)
            d = fit.diagnostics["Qwen"]
            steps = int(fit.posterior["Qwen"].sample_stats["n_steps"].sum())
            last[name] = {"steps": steps, "callback": COUNTS.get(name, 0), "div": d["divergences"],
                          "ess": d["ess_bulk_min"], "rhat": d["r_hat_max"]}
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"rows={len(scores.to_frame()):,}; median of {args.repeat} warm fits (4 chains x 1,000 draws + 1,000 tune)"
          f"{'; through the Python callback' if args.python_callback else ''}")
    for name in runs:
        r = last[name]
        python = r["callback"] > r["steps"] // 2          # a C callback run calls the Python logp once, to compile
        cb = f"{r['callback']:,d} at the Python callback" if python else "C callbacks"
        print(f"  {name:8s} {med[name]:6.2f} s   {r['steps']:6,d} gradient evaluations in the kept draws ({cb});"
              f"   divergences {r['div']}, min ESS {r['ess']:,.0f} ({r['ess'] / med[name]:,.0f}/s), "
              f"max r_hat {r['rhat']:.3f}")
    print(f"ratio default / paper: {med['default'] / med['paper']:.2f}x time, "
          f"{last['default']['steps'] / max(last['paper']['steps'], 1):.2f}x kept-draw evaluations  "
          f"(goal <= 1.5x, default <= 3 s)")


if __name__ == "__main__":
    main()
