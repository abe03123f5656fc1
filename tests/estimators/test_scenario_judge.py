"""The scenario x judge interaction (estimand ``scenario_judge``) in the ANOVA and REML backends.

- the per-pattern Woodbury core equals the paper-model core at theta_sj = 0 and its derivatives equal central
  differences;
- a hand-computed balanced design (mean squares by explicit loops) gives the ANOVA estimates;
- REML = ANOVA on balanced tables whose estimates are interior (many seeds), offsets and their SEs too;
- identifiability: m = 1 gives a not-identifiable row with the reason, True there is refused, False leaves it out;
- coverage of every component when the term is fitted (known truth; CI subset here, the long run is slow and in
  benchmarks/coverage_scenario_judge.py).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.estimators.base import SJ_NOTE
from cjstats.estimators.reml.core import Evaluator
from cjstats.estimators.reml.scenario_judge import SJEvaluator
from cjstats.exceptions import CjstatsError
from cjstats.stats import build_stats, merge_stats


def simulate(n=20, m=3, k=4, s2a=1.0, s2b=0.3, s2sj=0.5, s2e=1.0, seed=0, miss=0.0, gens=None):
    """Rows from the model with the interaction; ``gens`` draws the number of generations per scenario."""
    rng = np.random.default_rng(seed)
    gamma = np.linspace(-0.5, 0.5, k)
    a = rng.normal(0, math.sqrt(s2a), n)
    sj = rng.normal(0, math.sqrt(s2sj), (n, k))
    rows = []
    for i in range(n):
        mi = m if gens is None else int(rng.integers(gens[0], gens[1] + 1))
        for j in range(mi):
            b = rng.normal(0, math.sqrt(s2b))
            for ll in range(k):
                if miss and rng.random() < miss:
                    continue
                rows.append(("A", f"s{i:03d}", f"g{j}", f"j{ll}", a[i] + b + gamma[ll] + sj[i, ll]
                             + rng.normal(0, math.sqrt(s2e))))
    return pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])


def _unit(df):
    return next(iter(build_stats(cj.read_scores(df))))


def _est(fit):
    return fit.components.set_index("component")


# ------------------------------------------------------------------------------------------- the core
@pytest.mark.parametrize("seed,miss,gens", [(1, 0.0, None), (2, 0.2, (1, 3)), (3, 0.35, (2, 4))])
def test_core_equals_paper_core_at_zero_interaction(seed, miss, gens):
    u = _unit(simulate(n=12, m=3, k=4, seed=seed, miss=miss, gens=gens))
    d, ys = u.for_reml()
    ev, sev = Evaluator(d, ys), SJEvaluator(d, ys, u.sj)
    for which in ("fixed", "random"):
        a0, l0, (da0, d2a0), (dl0, d2l0) = ev._core(np.array([0.7, 0.3]), hess=True, which=which)
        a1, l1, (da1, d2a1), (dl1, d2l1) = sev._core(np.array([0.7, 0.3, 0.0]), hess=True, which=which)
        scale = np.abs(a0).max()
        assert np.abs(a0 - a1).max() <= 1e-12 * scale
        assert l1 == pytest.approx(l0, rel=1e-13, abs=1e-12)
        assert np.abs(da0 - da1[:2]).max() <= 1e-12 * scale
        assert np.abs(d2a0 - d2a1[:2, :2]).max() <= 1e-11 * scale
        np.testing.assert_allclose(dl1[:2], dl0, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(d2l1[:2, :2], d2l0, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("theta", [(0.7, 0.3, 0.4), (0.0, 0.2, 1.5), (2.0, 0.0, 0.0)])
def test_core_derivatives_equal_central_differences(theta):
    u = _unit(simulate(n=10, m=3, k=4, seed=4, miss=0.2, gens=(1, 3)))
    d, ys = u.for_reml()
    sev = SJEvaluator(d, ys, u.sj)
    th = np.array(theta)
    _, _, (da, d2a), (dl, d2l) = sev._core(th, hess=True)
    h = 1e-5
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        ap, lp, (dap, _), (dlp, _) = sev._core(th + e, hess=True)
        am, lm, (dam, _), (dlm, _) = sev._core(th - e, hess=True)
        assert np.abs((ap - am) / (2 * h) - da[k]).max() <= 1e-6 * max(np.abs(da[k]).max(), 1.0)
        assert (lp - lm) / (2 * h) == pytest.approx(dl[k], rel=1e-6, abs=1e-7)
        assert np.abs((dap - dam) / (2 * h) - d2a[k]).max() <= 1e-6 * max(np.abs(d2a[k]).max(), 1.0)
        np.testing.assert_allclose((dlp - dlm) / (2 * h), d2l[k], rtol=1e-6, atol=1e-7)


def test_recentred_and_merged_statistics_give_the_same_fit():
    df = simulate(n=16, m=2, k=3, seed=5, miss=0.15)
    u = _unit(df)
    half = sorted(df["scenario"].unique())[:8]
    parts = [_unit(df[df["scenario"].isin(half)]), _unit(df[~df["scenario"].isin(half)])]
    merged = merge_stats(*parts)
    d, ys = u.for_reml()
    d2, ys2 = merged.for_reml()
    th = np.array([0.8, 0.2, 0.5])
    a1, l1, _, _ = SJEvaluator(d, ys, u.sj)._core(th)
    a2, l2, _, _ = SJEvaluator(d2, ys2, merged.sj)._core(th)
    # the two are centred differently (judge means of the whole vs pooled chunks): compare the REML criterion
    c1 = SJEvaluator(d, ys, u.sj).profiled("fixed", th)[0]
    c2 = SJEvaluator(d2, ys2, merged.sj).profiled("fixed", th)[0]
    assert c2 == pytest.approx(c1, rel=1e-11)
    assert l2 == pytest.approx(l1, rel=1e-12)


# ------------------------------------------------------------------------------------- hand computed
def test_anova_equals_hand_computed_mean_squares():
    rng = np.random.default_rng(11)
    n, m, k = 3, 2, 3
    y = np.round(rng.normal(3, 1, (n, m, k)) * 4) / 4
    rows = [("A", f"s{i}", f"g{j}", f"J{ll}", y[i, j, ll]) for i in range(n) for j in range(m) for ll in range(k)]
    df = pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])
    g = y.mean()
    si = y.mean(axis=(1, 2))
    cij = y.mean(axis=2)
    jl = y.mean(axis=(0, 1))
    sil = y.mean(axis=1)
    ss_s = sum(m * k * (si[i] - g) ** 2 for i in range(n))
    ss_g = sum(k * (cij[i, j] - si[i]) ** 2 for i in range(n) for j in range(m))
    ss_j = sum(n * m * (jl[ll] - g) ** 2 for ll in range(k))
    ss_sj = sum(m * (sil[i, ll] - si[i] - jl[ll] + g) ** 2 for i in range(n) for ll in range(k))
    ss_w = sum((y[i, j, ll] - cij[i, j] - sil[i, ll] + si[i]) ** 2
               for i in range(n) for j in range(m) for ll in range(k))
    ms_s, ms_g, ms_j = ss_s / (n - 1), ss_g / (n * (m - 1)), ss_j / (k - 1)
    ms_sj, ms_w = ss_sj / ((n - 1) * (k - 1)), ss_w / (n * (m - 1) * (k - 1))
    fit = cj.estimate(df, method="anova", scenario_judge=True)
    raw = dict(zip(fit.components["component"], fit.components["raw_estimate"]))
    assert raw["residual"] == pytest.approx(ms_w, abs=1e-12)
    assert raw["scenario_judge"] == pytest.approx((ms_sj - ms_w) / m, abs=1e-12)
    assert raw["generation"] == pytest.approx((ms_g - ms_w) / k, abs=1e-12)
    assert raw["scenario"] == pytest.approx((ms_s + ms_w - ms_g - ms_sj) / (m * k), abs=1e-12)
    assert raw["judge_panel"] == pytest.approx((k - 1) * (ms_j - ms_sj) / (k * n * m), abs=1e-12)
    assert raw["judge_population"] == pytest.approx((ms_j - ms_sj) / (n * m), abs=1e-12)
    diag = fit.diagnostics["A"]
    assert diag["ms_scenario_judge"] == pytest.approx(ms_sj, abs=1e-12)
    t = diag["scenario_judge_test"]
    assert t["statistic"] == pytest.approx(ms_sj / ms_w, rel=1e-12)
    assert (t["df1"], t["df2"]) == ((n - 1) * (k - 1), n * (m - 1) * (k - 1))
    off = fit.judge_offsets.set_index("judge")
    np.testing.assert_allclose(off["estimate"].to_numpy(), jl - g, atol=1e-12)
    np.testing.assert_allclose(off["std_error"].to_numpy(), math.sqrt(ms_sj * (k - 1) / (k * n * m)), rtol=1e-12)


# ----------------------------------------------------------------------------------- REML = ANOVA
@pytest.mark.parametrize("seed", range(8))
def test_reml_equals_anova_on_balanced_interior_fits(seed):
    df = simulate(n=15 + seed, m=2 + seed % 3, k=3 + seed % 3, seed=100 + seed, s2sj=0.6)
    fa = cj.estimate(df, method="anova")
    fr = cj.estimate(df, method="reml")
    a, r = _est(fa), _est(fr)
    if (a["raw_estimate"].drop(["mu"]) <= 0).any():
        pytest.skip("an ANOVA estimate is truncated at 0 on this seed; REML = ANOVA holds only inside")
    for c in ("mu", "scenario", "generation", "scenario_judge", "residual", "judge_panel", "judge_population"):
        assert r.at[c, "estimate"] == pytest.approx(a.at[c, "estimate"], rel=1e-6, abs=1e-9), c
    oa, orr = fa.judge_offsets, fr.judge_offsets
    np.testing.assert_allclose(orr["estimate"], oa["estimate"], atol=1e-8)
    np.testing.assert_allclose(orr["std_error"], oa["std_error"], rtol=1e-6)
    pa = fa.diagnostics["A"]["scenario_judge_test"]["p_value"]
    pr = fr.diagnostics["A"]["scenario_judge_test"]["p_value"]
    assert pr > 0 and pa > 0
    assert fr.diagnostics["A"]["converged"]


# --------------------------------------------------------------------------------- identifiability
@pytest.mark.parametrize("method", ["anova", "reml"])
def test_not_identifiable_with_one_generation(method):
    df = simulate(n=12, m=1, k=4, seed=7)
    fit = cj.estimate(df, method=method)
    row = _est(fit).loc["scenario_judge"]
    assert not row["identifiable"] and math.isnan(row["estimate"])
    assert row["note"] == SJ_NOTE
    with pytest.raises(CjstatsError, match="not identifiable"):
        cj.estimate(df, method=method, scenario_judge=True)


@pytest.mark.parametrize("method", ["anova", "reml"])
def test_off_gives_the_paper_model(method):
    df = simulate(n=12, m=2, k=3, seed=8)
    on = _est(cj.estimate(df, method=method))
    off = _est(cj.estimate(df, method=method, scenario_judge=False))
    assert off.at["scenario_judge", "note"].startswith("not fitted (scenario_judge=False)")
    assert on.at["scenario_judge", "identifiable"]
    # the paper model's residual holds the interaction: larger than the within-cell residual
    assert off.at["residual", "estimate"] > on.at["residual", "estimate"]
    with pytest.raises(CjstatsError, match="'scenario_judge' argument"):
        cj.estimate(df, method=method, scenario_judge="yes")


def test_anova_on_unbalanced_table_says_to_use_reml():
    df = simulate(n=12, m=3, k=3, seed=9)
    # the third generation of every scenario lacks judge j2: dropping it leaves a balanced m = 2 table
    df = df[~((df["generation"] == "g2") & (df["judge"] == "j2"))]
    with pytest.raises(CjstatsError):
        cj.estimate(df, method="anova", scenario_judge=True)
    with pytest.warns(cj.CjstatsWarning, match="use method='reml'"):
        fit = cj.estimate(df, method="anova", incomplete="drop", max_drop=1.0)
    assert "use method='reml'" in _est(fit).at["scenario_judge", "note"]


class _EngineWithoutSJ:
    """A registered engine that builds every statistic but the scenario x judge sums (every real engine builds
    them: tests/conformance/test_engine_conformance.py)."""

    name, requires, extra = "nosj", (), ""

    def __init__(self):
        from cjstats.stats.engines import EngineCapabilities

        self.capabilities = EngineCapabilities(in_memory=True, takes_scores=True)

    def build(self, source, *, unit, terms=None):
        from cjstats.stats.engines.numpy_engine import build

        return build(source, unit=unit, terms=("scenario", "generation"))


def test_engines_without_the_statistics_say_so(monkeypatch):
    from cjstats.stats.engines import ENGINES

    monkeypatch.setitem(ENGINES, "nosj", _EngineWithoutSJ())
    df = simulate(n=10, m=2, k=3, seed=10)
    with pytest.warns(cj.CjstatsWarning, match="engine='numpy'"):
        fit = cj.estimate(df, method="reml", engine="nosj")
    assert not _est(fit).at["scenario_judge", "identifiable"]
    with pytest.raises(CjstatsError, match="engine='numpy'"):
        cj.estimate(df, method="reml", engine="nosj", scenario_judge=True)


# ---------------------------------------------------------------------------------------- coverage
TRUTH = {"scenario": 0.6, "generation": 0.3, "scenario_judge": 0.4, "residual": 1.0}


def _draw(rng, n, m, k, gamma):
    a = rng.normal(0, math.sqrt(TRUTH["scenario"]), (n, 1, 1))
    b = rng.normal(0, math.sqrt(TRUTH["generation"]), (n, m, 1))
    sj = rng.normal(0, math.sqrt(TRUTH["scenario_judge"]), (n, 1, k))
    return a + b + gamma + sj + rng.normal(0, math.sqrt(TRUTH["residual"]), (n, m, k))


def coverage(method: str, reps: int, *, n=20, m=3, k=4, seed=0, fitted: bool = True) -> dict[str, float]:
    """Share of ``reps`` replicate fits whose 95% interval covers the true value, per component.

    ANOVA runs the backend's own formula path on each replicate's mean squares (``mean_squares`` and
    ``scenario_judge_ss`` of the dense array, then the rows the backend builds: the public path adds only the
    reduction, tested above); REML runs ``cj.estimate``. ``fitted=False`` fits the paper's model instead (its
    scenario_judge row has no interval and counts as a miss).
    """
    from cjstats.estimators.anova import _group_rows, mean_squares, scenario_judge_ss

    hits = {c: 0 for c in (*TRUTH, "judge_panel")}
    gamma = np.linspace(-0.5, 0.5, k)
    panel = float(gamma @ gamma) / k
    rng = np.random.default_rng(seed)
    labels = np.array([f"j{x}" for x in range(k)])
    for _ in range(reps):
        y = _draw(rng, n, m, k, gamma)
        if method == "anova":
            rows, _ = _group_rows(mean_squares(y), 0.95, "mls", scenario_judge_ss(y) if fitted else None)
            t = {r.component: (r.lower, r.upper) for r in rows}
            t.setdefault("scenario_judge", (math.nan, math.nan))
        else:
            i, j, ll = np.meshgrid(np.arange(n), np.arange(m), np.arange(k), indexing="ij")
            df = pd.DataFrame({"model": "A", "scenario": i.ravel().astype(str), "generation": j.ravel().astype(str),
                               "judge": labels[ll.ravel()], "score": y.ravel()})
            comp = _est(cj.estimate(df, method="reml", scenario_judge=fitted))
            t = {c: (comp.at[c, "lower"], comp.at[c, "upper"]) for c in hits}
        for c in hits:
            truth = panel if c == "judge_panel" else TRUTH[c]
            hits[c] += int(t[c][0] <= truth <= t[c][1])
    return {c: h / reps for c, h in hits.items()}


def test_dense_ss_equals_the_statistics_path():
    df = simulate(n=9, m=3, k=4, seed=12)
    u = _unit(df)
    from cjstats.estimators.anova import scenario_judge_mean_square, scenario_judge_ss

    y = df.sort_values(["scenario", "generation", "judge"])["score"].to_numpy().reshape(9, 3, 4)
    assert scenario_judge_mean_square(u.sj, 9, 3, 4) == pytest.approx(scenario_judge_ss(y), rel=1e-11)


def test_anova_coverage_ci_subset():
    """1000 replicates: a 95% interval's coverage has Monte Carlo SE 0.0069, so [0.925, 0.975] is 3.6 SE."""
    cov = coverage("anova", 1000, seed=1)
    for c, v in cov.items():
        assert 0.925 <= v <= 0.975, (c, v)


def test_reml_coverage_ci_subset():
    """40 REML replicates: SE 0.034, so >= 0.82 (3.8 SE below 0.95) catches an interval that is badly off."""
    cov = coverage("reml", 40, n=16, m=2, k=4, seed=2)
    for c, v in cov.items():
        assert v >= 0.82, (c, v)


@pytest.mark.slow
@pytest.mark.parametrize("method,reps", [("anova", 5000), ("reml", 400)])
def test_coverage_long(method, reps):
    """SE 0.0031 (5000) / 0.011 (400): the issue's 93-97% band for every component."""
    cov = coverage(method, reps, seed=3)
    lo, hi = (0.93, 0.97) if reps >= 5000 else (0.91, 0.99)
    for c, v in cov.items():
        assert lo <= v <= hi, (c, v)


def test_the_statistics_do_not_depend_on_the_order_of_a_scenarios_generations():
    """Scenarios whose cells have the same judge calls in another order are one pattern: the cells take their
    canonical order (by judge calls), so relabelling a scenario's generations changes no statistic and no fit.
    (Before the fix, a unit that was one such pattern kept the first scenario's cell order for all of them and
    put the other scenarios' cell sums against the wrong judge calls.)"""
    rng = np.random.default_rng(4)
    calls = [(0, 2), (0, 1)]   # generation 0 scored by judges 0 and 2, generation 1 by judges 0 and 1
    alpha, sj = rng.normal(0, 1, 40), rng.normal(0, 0.8, (40, 3))   # interior variances: the fit is not all zeros
    rows = []
    for s in range(40):
        first = s % 2            # every other scenario has its generations the other way round
        for g in range(2):
            for j in calls[(g + first) % 2]:
                rows.append(("A", f"s{s}", f"g{g}", f"j{j}", float(alpha[s] + sj[s, j] + rng.normal(0, 0.5) + 0.3 * j)))
    df = pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])
    swapped = df.assign(generation=np.where(df["scenario"].str[1:].astype(int) % 2 == 1,
                                            df["generation"].map({"g0": "g1", "g1": "g0"}), df["generation"]))
    a, b = build_stats(df).units[0].sj, build_stats(swapped).units[0].sj
    assert a.count.tolist() == b.count.tolist() == [40.0]
    np.testing.assert_array_equal(a.incidence, b.incidence)
    np.testing.assert_allclose(a.zsum, b.zsum, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(a.zscat, b.zscat, rtol=1e-13, atol=1e-13)
    fa = cj.estimate(df, "reml").components.set_index("component")["estimate"]
    fb = cj.estimate(swapped, "reml").components.set_index("component")["estimate"]
    assert fa["scenario_judge"] > 0.1                  # (before the fix: every variance 0, not converged)
    np.testing.assert_allclose(fa.to_numpy(float), fb.to_numpy(float), rtol=1e-9)
