"""Coverage of every component's 95% interval when the scenario x judge interaction is fitted, and what is lost when
it is not (issue: "judges who disagree about which scenarios are hard").

    PYTHONPATH=. .venv/bin/python benchmarks/coverage_scenario_judge.py [--anova-reps 5000] [--reml-reps 400]

Each replicate draws a balanced (n, m, K) table from X_ijl = alpha_i + beta_ij + gamma_l + (alpha gamma)_il +
eps_ijl (the fixed panel gamma = linspace(-0.5, 0.5, K), so the truth of judge_panel is mean(gamma^2)) and
records whether each interval covers its truth. ANOVA runs the backend's formula path on the replicate's mean
squares (``tests/estimators/test_scenario_judge.py::coverage``, the same function the tests use); REML runs
``cj.estimate``. "not fitted" runs the paper's model (``scenario_judge=False``) and scores its intervals against
the same truths (its residual estimates s2_eps + s2_sj, so it misses the within-cell residual).

Monte Carlo SE of a 95% coverage at R replicates: sqrt(0.95 x 0.05 / R) (0.31 points at 5000, 1.1 at 400).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "estimators"))

from test_scenario_judge import coverage  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--anova-reps", type=int, default=5000)
    ap.add_argument("--reml-reps", type=int, default=400)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--m", type=int, default=3)
    ap.add_argument("--k", type=int, default=4)
    args = ap.parse_args()
    design = dict(n=args.n, m=args.m, k=args.k)
    for method, reps, fitted in (("anova", args.anova_reps, True), ("anova", args.anova_reps, False),
                                 ("reml", args.reml_reps, True)):
        t = time.perf_counter()
        cov = coverage(method, reps, seed=7, fitted=fitted, **design)
        el = time.perf_counter() - t
        label = f"{method} ({'fitted' if fitted else 'not fitted'}), {reps} replicates, n={args.n} m={args.m} K={args.k}"
        print(f"{label}: " + ", ".join(f"{c} {v:.3f}" for c, v in cov.items()) + f"  [{el:.1f} s]")


if __name__ == "__main__":
    main()
