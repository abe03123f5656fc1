"""The REML evaluator's scenario patterns: the same criterion, derivatives and fit as scenario by scenario.

Scenarios with the same cell counts and judge counts per size class share every weight of the Woodbury core,
so the core can sum per pattern (N_p, the judge counts, the sums and cross-products of the score sums). These
tests compare the two paths on designs with one pattern (balanced), a few (light missingness, unequal
generations), and on a design with too many patterns to use them.
"""

from __future__ import annotations

import numpy as np
import pytest

import cjstats as cj
from cjstats.estimators.reml import core
from cjstats.studies.simulate import simulate_scores
from cjstats.stats import build_stats


def _frame(missing: float, seed: int, m: int = 3, n: int = 300):
    f = simulate_scores(n=n, m=m, k=4, s2_scenario=0.5, s2_generation=0.2, s2_residual=1.0,
                        judge_offsets=[0.1, 0.0, -0.2, 0.1], mu=5.0, missing=missing, seed=seed)
    if m > 2:   # unequal generations: drop the last generation of every fifth scenario
        f = f[~((f["scenario"].astype(int) % 5 == 0) & (f["generation"].astype(int) == m - 1))]
    return f.reset_index(drop=True)


DESIGNS = {"balanced": (0.0, 1, 2), "unequal-m": (0.0, 2, 3), "light-missing": (0.01, 3, 3)}


def _evaluators(frame):
    d, ys = build_stats(frame).units[0].for_reml()
    return core.Evaluator(d, ys), core.Evaluator(d, ys, patterns=False)


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.mark.parametrize("name", list(DESIGNS))
@pytest.mark.parametrize("which", ["fixed", "random"])
def test_the_pattern_core_equals_the_scenario_core(name, which):
    pat, row = _evaluators(_frame(*DESIGNS[name]))
    assert pat._pat is not None and len(pat._pat.n) < 30
    for theta in ((0.5, 0.3), (0.0, 1.2), (3.0, 0.0), (1e-6, 50.0)):
        for kw in ({}, {"grad": True}):
            got, want = pat.core(*theta, which=which, **kw), row.core(*theta, which=which, **kw)
            assert _rel(got[0], want[0]) < 1e-13 and got[1] == pytest.approx(want[1], rel=1e-13)
            if kw:
                assert _rel(got[2], want[2]) < 1e-12 and _rel(got[3], want[3]) < 1e-12
        got, want = pat.core(*theta, which=which, hess=True), row.core(*theta, which=which, hess=True)
        for i in (0, 1):
            assert _rel(got[2][i], want[2][i]) < 1e-12 and _rel(got[3][i], want[3][i]) < 1e-12


def test_a_balanced_table_is_one_pattern_whatever_its_size():
    pat, _ = _evaluators(_frame(0.0, 4, m=2, n=2000))
    assert len(pat._pat.n) == 1 and pat._pat.n[0] == 2000


def test_many_patterns_fall_back_to_scenario_by_scenario():
    pat, _ = _evaluators(_frame(0.3, 5))
    assert pat._pat is None


@pytest.mark.parametrize("name", list(DESIGNS))
def test_the_fit_is_the_same_with_and_without_patterns(name, monkeypatch):
    frame = _frame(*DESIGNS[name])
    # the paper model's evaluator is the one with scenario patterns (the scenario x judge one has its own)
    a = cj.estimate(frame, "reml", scenario_judge=False).components
    original = core.Evaluator.__init__

    def no_patterns(self, d, ys, *, patterns=True):
        original(self, d, ys, patterns=False)

    monkeypatch.setattr(core.Evaluator, "__init__", no_patterns)
    b = cj.estimate(frame, "reml", scenario_judge=False).components
    for col in ("estimate", "std_error", "lower", "upper"):
        x, y = a[col].to_numpy(float), b[col].to_numpy(float)
        ok = ~np.isnan(y)
        assert np.array_equal(np.isnan(x), np.isnan(y))
        # measured: estimates and SEs within 3e-14, profile bounds within 2e-12 (the profile search stops
        # within its own tolerance of the same root)
        tol = 1e-12 if col in ("estimate", "std_error") else 1e-10
        assert np.max(np.abs(x[ok] - y[ok]) / np.abs(y[ok])) < tol, col
