"""The statistics layer: CellStats views equal each backend's own reduction of the rows, and chunks merge.

The references are the row-based reductions the backends used before the statistics layer existed (and
keep as references): ``anova.mean_squares`` on the dense table, ``_reml_structured.build_design``/``y_stats``
and ``_bayes_models.gaussian_stats``. Designs are drawn at random (seeded): balanced, unequal generations per
scenario, and missing judge calls. Tolerances are rounding-level (1e-10 relative to the data's scale): the
views are exact algebra on the same sums, so only the summation order differs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.estimators.reml import core as rs
from cjstats.estimators.bayes.gaussian import gaussian_stats
from cjstats.estimators.anova import mean_squares
from cjstats.stats import build_stats, merge_stats
from cjstats.stats.engines.numpy_engine import unit_stats

SEEDS = range(12)
RTOL = 1e-10


def _frame(seed: int, *, balanced: bool, p_missing: float = 0.0, model: str = "A") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, 9)), int(rng.integers(2, 6))
    m_fixed = int(rng.integers(1, 4))
    shift = rng.normal(0, 3, size=k)
    rows = []
    for i in range(n):
        a = rng.normal(0, 1.5)
        m = m_fixed if balanced else int(rng.integers(1, 4))
        for j in range(m):
            b = rng.normal(0, 0.7)
            for lab in range(k):
                if not balanced and rng.random() < p_missing and not (i == 0 and j == 0):
                    continue
                rows.append((model, f"s{i:02d}", f"g{j}", f"j{lab}", 5 + a + b + shift[lab] + rng.normal()))
    return pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])


def _designs():
    for seed in SEEDS:
        yield f"balanced-{seed}", _frame(seed, balanced=True)
        yield f"unequal-m-{seed}", _frame(seed, balanced=False)
        yield f"missing-{seed}", _frame(seed, balanced=False, p_missing=0.25)


DESIGNS = dict(_designs())


def _close(a, b, scale: float) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= RTOL * max(scale, 1.0)))


def _unit(frame: pd.DataFrame):
    scores = cj.read_scores(frame)
    g = next(scores.groups())
    return g, build_stats(scores).units[0]


@pytest.mark.parametrize("name", sorted(DESIGNS))
class TestViewsEqualTheBackendsOwnReductions:
    def test_reml_view_is_the_row_reduction_bit_for_bit(self, name):
        g, u = _unit(DESIGNS[name])
        d, ys = u.for_reml()
        d0 = rs.build_design(g.cell, g.judge, g.cell_scenario, g.design.n_judges)
        y0 = rs.y_stats(d0, g.y)
        for f in ("n_obs", "n_scen", "n_cells", "k", "has_generation", "n_linked", "df_residual"):
            assert getattr(d, f) == getattr(d0, f), f
        for f in ("sizes", "size_cells", "dd", "judge_n", "s_isk", "cnt_is"):
            np.testing.assert_array_equal(getattr(d, f), getattr(d0, f), err_msg=f)
        for f in ("shift", "dy", "yyc", "ys", "judge_sum", "yy"):
            np.testing.assert_array_equal(getattr(ys, f), getattr(y0, f), err_msg=f)

    def test_within_cell_rss_equals_the_row_computation(self, name):
        g, u = _unit(DESIGNS[name])
        rss, _ = u.within_cell_rss()
        ref, _ = rs.within_cell_rss(rs.build_design(g.cell, g.judge, g.cell_scenario, g.design.n_judges), g.y)
        assert _close(rss, ref, float(np.var(g.y)) * len(g.y))

    def test_gaussian_view_equals_gaussian_stats(self, name):
        g, u = _unit(DESIGNS[name])
        st, ref = u.for_gaussian(), gaussian_stats(g)
        scale = float(np.sum((g.y - g.y.mean()) ** 2))
        for f in ref.__dataclass_fields__:
            a, b = getattr(st, f), getattr(ref, f)
            if isinstance(b, (bool, int, np.integer)):
                assert a == b, f
            else:
                assert _close(a, b, scale), f

    def test_anova_view_equals_mean_squares_on_balanced_data(self, name):
        g, u = _unit(DESIGNS[name])
        dense = g.dense()
        if dense is None:
            with pytest.raises(cj.CjstatsError, match="method='reml'"):
                u.for_anova()
            return
        ms, dropped = u.for_anova()
        ref = mean_squares(dense)
        scale = float(np.sum((g.y - g.y.mean()) ** 2))
        assert (ms.n, ms.m, ms.k) == (ref.n, ref.m, ref.k) and dropped["dropped_cells"] == 0
        for f in ("grand_mean", "judge_means", "ss_scenario", "ss_generation", "ss_judge", "ss_residual"):
            assert _close(getattr(ms, f), getattr(ref, f), scale), f

    def test_anova_drop_view_equals_mean_squares_of_the_complete_cells(self, name):
        g, u = _unit(DESIGNS[name])
        dense, info = _complete_cells(g)
        if dense is None:   # the complete cells do not form a balanced table: the view refuses too
            with pytest.raises(cj.CjstatsError, match="method='reml'"):
                u.for_anova("drop")
            return
        ms, dropped = u.for_anova("drop")
        ref = mean_squares(dense)
        assert {k: dropped[k] for k in info} == info
        assert (dropped["n_rows"], dropped["n_cells"], dropped["n_scenarios"]) == (
            g.design.n_rows, g.design.n_cells, g.design.n_scenarios)
        scale = float(np.sum((g.y - g.y.mean()) ** 2))
        for f in ("grand_mean", "judge_means", "ss_scenario", "ss_generation", "ss_judge", "ss_residual"):
            assert _close(getattr(ms, f), getattr(ref, f), scale), f


def _complete_cells(g) -> tuple[np.ndarray | None, dict[str, int]]:
    """Reference drop from the rows: the dense (n, m, K) table of the cells every judge scored (None when those
    cells give scenarios different numbers of generations), and what was dropped."""
    d = g.design
    k = d.n_judges
    table = np.full((len(g.cell_scenario), k), np.nan)
    table[g.cell, g.judge] = g.y
    full = ~np.isnan(table).any(axis=1)
    m_per = np.bincount(g.cell_scenario[full], minlength=d.n_scenarios)
    kept = m_per[m_per > 0]
    info = {"dropped_rows": int(d.n_rows - full.sum() * k), "dropped_cells": int((~full).sum()),
            "dropped_scenarios": int((m_per == 0).sum())}
    if kept.size == 0 or not (kept == kept[0]).all():
        return None, info
    return table[full].reshape(len(kept), int(kept[0]), k), info


def _assert_stats_equal(a, b, scale: float) -> None:
    assert a.judge_labels == b.judge_labels
    assert list(a.scenario_labels) == list(b.scenario_labels)
    assert a.design == b.design
    assert a.first_missing == b.first_missing and a.first_cell == b.first_cell
    for f in ("shift", "sizes", "size_cells", "dd", "judge_n_s", "s_isk", "cnt_is", "judge_n"):
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-12, atol=1e-12, err_msg=f)
    for f in ("dy", "yyc", "judge_sum_s", "yy_s", "ssw_s", "ys", "judge_sum", "yy", "y_min", "y_max"):
        assert _close(getattr(a, f), getattr(b, f), scale), f


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_statistics_of_chunks_split_by_scenario_merge_into_the_whole(name):
    frame = DESIGNS[name]
    g, whole = _unit(frame)
    scen = sorted(frame["scenario"].unique())
    rng = np.random.default_rng(len(name))
    cuts = sorted(rng.choice(np.arange(1, len(scen)), size=min(2, len(scen) - 1), replace=False))
    parts = []
    for chunk in np.split(np.array(scen), cuts):
        sub = frame[frame["scenario"].isin(chunk)]
        parts.append(build_stats(cj.read_scores(sub)).units[0])
    merged = merge_stats(*parts[::-1])           # order of the chunks does not matter
    _assert_stats_equal(merged, whole, float(np.sum((g.y - g.y.mean()) ** 2)))


def test_a_chunk_without_some_judge_merges_and_the_gap_is_named():
    frame = _frame(3, balanced=True)
    first = frame[frame["scenario"] == "s00"]
    rest = frame[(frame["scenario"] != "s00") & ~((frame["judge"] == "j1") & (frame["scenario"] == "s01"))]
    rest = rest[rest["judge"] != "j0"]
    merged = merge_stats(unit_stats(next(cj.read_scores(first).groups())),
                         unit_stats(next(cj.read_scores(rest).groups())))
    whole = build_stats(pd.concat([first, rest])).units[0]
    _assert_stats_equal(merged, whole, float(np.sum((frame["score"] - frame["score"].mean()) ** 2)))
    assert "j0" in whole.first_missing[2]          # the judge absent from a whole chunk is named


def test_recentring_changes_no_view():
    g, u = _unit(DESIGNS["missing-4"])
    other = u.recentre(u.shift + np.arange(u.k) * 3.0 - 1.0)
    a, b = u.for_gaussian(), other.for_gaussian()
    scale = float(np.sum((g.y - g.y.mean()) ** 2))
    for f in ("ybar", "ssw0", "b_w", "m_h", "v"):
        assert _close(getattr(a, f), getattr(b, f), scale), f
    assert _close(u.within_cell_rss()[0], other.within_cell_rss()[0], scale)


def test_chunks_sharing_a_scenario_are_refused():
    frame = DESIGNS["balanced-1"]
    u = _unit(frame)[1]
    with pytest.raises(cj.CjstatsError, match="split the table by scenario"):
        merge_stats(u, u)


def test_unknown_unit_and_engine_are_one_sentence():
    scores = cj.read_scores(DESIGNS["balanced-1"])
    with pytest.raises(cj.CjstatsError, match="'unit' argument of build_stats"):
        build_stats(scores, unit=("scenario",))
    with pytest.raises(cj.CjstatsError, match="'engine' argument of build_stats must be one of 'dask', 'duckdb', 'numpy'"):
        build_stats(scores, engine="spark")


@pytest.mark.parametrize("name", ["balanced-2", "unequal-m-5", "missing-7"])
def test_bayesian_log_density_from_the_view_equals_the_row_reduction(name):
    """The collapsed densities built on the Gaussian view agree with the row-built ones to rounding
    (the hand densities' own tests bound them against PyMC's log density)."""
    from cjstats.estimators.bayes.gaussian import GaussianDensity, GaussianPriors, MarginalDensity

    g, u = _unit(DESIGNS[name])
    a, b = u.for_gaussian(), gaussian_stats(g)
    pr = GaussianPriors(mu=2.5 * b.sd, sigma_scenario=b.sd, sigma_generation=b.sd, sigma_residual=b.sd,
                        sigma_judge=b.sd)
    rng = np.random.default_rng(0)
    for density in (MarginalDensity, GaussianDensity):
        da, db = density(a, pr, compiled=False), density(b, pr, compiled=False)
        for _ in range(10):
            th = db.initial_point(rng) + rng.normal(0, 0.3, db.ndim)
            (la, ga), (lb, gb) = da.logp(th), db.logp(th)
            assert la == pytest.approx(lb, rel=1e-11)
            np.testing.assert_allclose(ga, gb, rtol=1e-9, atol=1e-11 * np.max(np.abs(gb)))
