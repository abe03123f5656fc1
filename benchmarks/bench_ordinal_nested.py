"""Time the ML ordinal backend's nested generation fit (``method="ordinal"`` with m > 1; a script, not a test).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_ordinal_nested.py [--repeats 3] [--gradient analytic|fd] [--profile]

Tables (``cjstats.studies.simulate.simulate_ordinal_scores``, probit, s2a = 0.6, s2b = 0.3, judge offsets
-0.3..0.3):
  paper     80 scenarios x 10 generations x 5 judges, scores 1-10 (cuts at the probit quantiles of 10 equal
            shares of the marginal latent N(0, 1.9)): 4,000 rows, 15 parameters;
  n1000_m2  1,000 scenarios x 2 generations x 4 judges, scores 1-5: 8,000 rows;
  n80_m10   80 scenarios x 10 generations x 3 judges, scores 1-5: 2,400 rows.
cjstats: wall time of ``cj.estimate(table, method="ordinal")`` (fit, Hessian, Wald intervals, the result), median
of ``--repeats`` (``--profile``: with ``interval="profile"``); ``--gradient fd`` makes the nested fits use the
central-difference gradient (``fit_nested(..., gradient="fd")``), the default before the analytic one.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy.stats import norm

import cjstats as cj
from cjstats.studies.simulate import simulate_ordinal_scores


def tables() -> dict:
    out = {}
    for name, (n, m, k, j, seed) in {"paper": (80, 10, 5, 10, 11), "n1000_m2": (1000, 2, 4, 5, 12),
                                      "n80_m10": (80, 10, 3, 5, 13)}.items():
        cuts = norm.ppf(np.arange(1, j) / j) * np.sqrt(1.9)
        d = simulate_ordinal_scores(n, m, k, s2a=0.6, s2b=0.3, gamma=np.linspace(-0.3, 0.3, k), cuts=cuts,
                                    seed=seed, link="probit")
        out[name] = cj.read_scores(d)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tables", default="paper,n1000_m2,n80_m10")
    ap.add_argument("--gradient", default="analytic", choices=["analytic", "fd"])
    ap.add_argument("--profile", action="store_true", help='interval="profile" (profile-likelihood intervals)')
    args = ap.parse_args()
    if args.gradient == "fd":                    # the fits' default, for this process only
        from cjstats.estimators.ordinal_ml import nested

        nested.fit_nested.__kwdefaults__["gradient"] = "fd"
        nested.profile_nested.__kwdefaults__["gradient"] = "fd"
    ts = tables()
    for name in args.tables.split(","):
        d = ts[name]
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fit = cj.estimate(d, method="ordinal", **({"interval": "profile"} if args.profile else {}))
            times.append(time.perf_counter() - t0)
        c = fit.to_frame().set_index("component")
        diag = list(fit.diagnostics.values())[0]
        print(f"{name}: median {statistics.median(times):.2f} s "
              f"(runs {', '.join(f'{t:.2f}' for t in times)}); s2_scenario {c.loc['scenario', 'estimate']:.6f}, "
              f"s2_generation {c.loc['generation', 'estimate']:.6f}, loglik {diag.get('loglik', float('nan'))}")


if __name__ == "__main__":
    main()
