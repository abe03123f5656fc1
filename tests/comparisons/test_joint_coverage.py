"""Coverage of the joint REML intervals over replicates with judges drawn afresh (``benchmarks/coverage_joint.py``).

CI runs one design with 80 replicates (3 Monte Carlo SE = 7.3 points: it fails on the 85-87% that the collapsed
fits gave paired differences, or on intervals that never miss); the ``slow`` test runs every design with 400
replicates (3 SE = 3.3 points), the figures in ``docs/comparisons.md``.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "coverage_joint.py"


def _module():
    spec = importlib.util.spec_from_file_location("coverage_joint", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _check(res: dict, replicates: int) -> None:
    tol = 3 * math.sqrt(0.95 * 0.05 / replicates)      # per replicate, so pooled pairs are not over-counted
    assert res.pop("converged")[0] == 1.0
    bad = {k: c for k, (c, _) in res.items() if abs(c - 0.95) > tol}
    assert not bad, f"coverage outside 0.95 +- {tol:.3f}: {bad}"


def test_small_table_intervals_cover():
    """The collapse design (3 models x 20 scenarios x 4 judges, m = 1): every variance, the population-view
    judge_model and judge_population, and the paired differences."""
    _check(_module().coverage("small_m1", 80, seed=11), 80)


@pytest.mark.slow
@pytest.mark.parametrize("design", ["small_m1", "balanced_m2", "missing_m2", "balanced_nogen", "per_model"])
def test_every_design_covers(design):
    _check(_module().coverage(design, 400, jobs=2), 400)
