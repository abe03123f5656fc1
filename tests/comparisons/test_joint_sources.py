"""The comparison layer fits from statistics: a table, per-model or joint ScoreStats, a JointStats, or a file read
by an out-of-core engine give the same joint fit; what needs rows says so in one sentence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.studies.simulate_joint import simulate_joint
from cjstats.stats import build_stats

COLS = ("estimate", "std_error", "lower", "upper", "raw_estimate")


def _table(seed: int, missing: float = 0.0, n: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return simulate_joint(n=n, m=2, mu=[5.0, 5.3, 4.8], gamma=[0.3, -0.2, 0.0, -0.1], s2_scenario=0.5,
                          s2_model_scenario=0.3, s2_generation=0.2, s2_residual=1.0, missing=missing, rng=rng)


def _rel(a: pd.DataFrame, b: pd.DataFrame, col: str) -> float:
    x, y = a[col].to_numpy(float), b[col].to_numpy(float)
    assert np.array_equal(np.isnan(x), np.isnan(y)), col
    ok = ~np.isnan(x)
    return float(np.max(np.abs(x[ok] - y[ok]) / np.maximum(np.abs(x[ok]), 1e-300), initial=0.0))


@pytest.fixture(scope="module")
def balanced():
    return _table(1)


@pytest.fixture(scope="module")
def unbalanced():
    return _table(2, missing=0.15)


@pytest.mark.parametrize("form", ["per-model", "joint", "unit"])
def test_anova_from_statistics_is_the_fit_from_the_table(balanced, form):
    scores = cj.read_scores(balanced)
    source = {"per-model": build_stats(scores), "joint": build_stats(scores, unit=("criterion",)),
              "unit": build_stats(scores, unit=("criterion",)).units[0]}[form]
    a = cj.compare_models(scores, "anova")
    b = cj.compare_models(source, "anova")
    for col in COLS:
        assert _rel(a.fit.components, b.fit.components, col) == 0.0, col
    pd.testing.assert_frame_equal(a.differences, b.differences)
    pd.testing.assert_frame_equal(a.ranks, b.ranks)


def test_reml_from_statistics_is_the_fit_from_the_table(unbalanced):
    scores = cj.read_scores(unbalanced)
    a = cj.fit_joint(scores, "reml")
    b = cj.fit_joint(build_stats(scores, unit=("criterion",)), "reml")
    for col in COLS:
        assert _rel(a.components, b.components, col) == 0.0, col
    np.testing.assert_array_equal(a.cell_means, b.cell_means)


def test_self_preference_from_statistics(unbalanced):
    scores = cj.read_scores(unbalanced)
    fam = {"j1": "m1"}
    a = cj.self_preference(scores, fam, method="reml")
    b = cj.self_preference(build_stats(scores), fam, method="reml")
    pd.testing.assert_frame_equal(a.contrasts, b.contrasts)


@pytest.mark.parametrize("engine", ["duckdb", "dask"])
def test_out_of_core_engines_give_the_in_memory_joint_fit(tmp_path, balanced, unbalanced, engine):
    pytest.importorskip(engine)
    for name, frame, method in (("balanced", balanced, "anova"), ("unbalanced", unbalanced, "reml")):
        path = tmp_path / f"{name}.parquet"
        frame.to_parquet(path)
        a = cj.compare_models(frame, method)
        b = cj.compare_models(str(path), method, engine=engine)
        assert b.fit.models == a.fit.models and b.fit.judges == a.fit.judges
        # ANOVA: closed forms of sums that the engine adds in another order; REML: the same criterion to
        # rounding, and exact derivatives with Newton steps stop at the same optimum (measured 5e-15); the
        # population-view rows (the judges-random REML search) too, now that its Newton steps use the exact
        # Hessian (_judges_random_hessian; with difference Hessians they moved by up to 2e-12)
        tol = 1e-12
        for col in ("estimate", "std_error", "lower", "upper"):
            assert _rel(a.fit.components, b.fit.components, col) <= tol, col
        np.testing.assert_allclose(b.fit.cell_means, a.fit.cell_means, rtol=tol)
        np.testing.assert_allclose(b.differences["difference"], a.differences["difference"], rtol=tol)


def test_what_needs_rows_says_so(balanced):
    frame = balanced[~((balanced["model"] == "m0") & (balanced["scenario"] == 3) & (balanced["judge"] == "j1"))]
    stats = build_stats(cj.read_scores(frame), unit=("criterion",))
    with pytest.raises(cj.CjstatsError, match="method='bayes' fits the score rows"):
        cj.fit_joint(stats, "bayes")
    with pytest.raises(cj.CjstatsError, match="incomplete='drop' needs the score rows: 1 scenarios"):
        cj.fit_joint(stats, "anova", incomplete="drop")
    # with the table, the same call drops the scenario
    with pytest.warns(cj.CjstatsWarning, match="1 of 30 scenarios"):
        fit = cj.fit_joint(frame, "anova", incomplete="drop")
    assert fit.diagnostics["dropped_scenarios"] == 1 and fit.diagnostics["n"] == 29


def test_statistics_of_several_criteria_are_refused_with_the_fix():
    frame = pd.concat([_table(3).assign(criterion="a"), _table(4).assign(criterion="b")], ignore_index=True)
    stats = build_stats(cj.read_scores(frame), unit=("criterion",))
    with pytest.raises(cj.CjstatsError, match=r"hold 2 criteria \('a', 'b'\).*stats.get\(criterion=...\)"):
        cj.compare_models(stats)
    one = cj.compare_models(stats.get(criterion="b"), "anova")
    direct = cj.compare_models(cj.read_scores(_table(4)), "anova")
    pd.testing.assert_frame_equal(one.differences, direct.differences)


def test_engine_options_without_an_engine_are_refused(balanced):
    with pytest.raises(cj.CjstatsError, match="engine_options \\(memory_limit\\) belong to engine='duckdb'"):
        cj.compare_models(balanced, engine_options={"memory_limit": "1GB"})
