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

    def test_within_cell_rss_scale_is_recentre_to_zero_bit_for_bit(self, name):
        """within_cell_rss re-centres only SSW (not the scenario x judge, pattern and covariate parts): its scale
        is bit for bit the SSW of recentre(0), and it stays the raw scores' SSW however the unit is centred (a
        re-centred unit must not keep the scale of the unit it came from)."""
        _, u = _unit(DESIGNS[name])
        rss, within = u.within_cell_rss()
        assert within == float(u.recentre(np.zeros(u.k)).ssw_s.sum())
        moved = u.recentre(u.shift + np.linspace(-3.0, 4.0, u.k))
        rss2, within2 = moved.within_cell_rss()
        assert within2 == float(moved.recentre(np.zeros(u.k)).ssw_s.sum())
        assert _close(within2, within, within) and _close(rss2, rss, within)
        zero = u.recentre(np.zeros(u.k))
        assert zero.within_cell_rss()[1] == float(zero.ssw_s.sum())

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


# ---------------------------------------------------------------- the numpy engine against a plain reference
# ``_plain_unit_stats`` reduces one unit's rows the obvious way (loops over cells and scenarios, dictionaries,
# one ``np.unique`` over the rows' bytes for the design patterns), so that a faster engine that changes a value
# fails here. Counts, labels and design must be equal; sums agree to 1e-12 of the data's scale.
def _byte_ids(a: np.ndarray, *, first: bool = False):
    """Ids of the distinct rows of an integer matrix in the byte order of the rows (the patterns' order)."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    _, idx, inv = np.unique(a.view(np.dtype((np.void, 8 * a.shape[1]))).reshape(-1), return_index=True,
                            return_inverse=True)
    return (inv.reshape(-1), idx) if first else inv.reshape(-1)


def _plain_unit_stats(g) -> dict:
    y, cell, judge, cs = (np.asarray(g.y), np.asarray(g.cell), np.asarray(g.judge), np.asarray(g.cell_scenario))
    k, n_cells, n = g.design.n_judges, len(cs), int(cs.max()) + 1
    judge_n = np.array([float(np.sum(judge == j)) for j in range(k)])
    shift = np.array([y[judge == j].sum() for j in range(k)]) / judge_n
    y0 = y - shift[judge]
    d = np.zeros((n_cells, k), dtype=np.int64)
    ysum = np.zeros(n_cells)
    for c, j, v in zip(cell, judge, y0):
        d[c, j] += 1
        ysum[c] += v
    h = d.sum(axis=1)
    sizes = sorted(set(h.tolist()))
    s_of = {s: i for i, s in enumerate(sizes)}
    n_s = len(sizes)
    out = {"shift": shift, "judge_n": judge_n, "sizes": np.array(sizes, dtype=float),
           "size_cells": np.zeros(n_s), "dd": np.zeros((n_s, k, k)), "dy": np.zeros((n_s, k)),
           "yyc": np.zeros(n_s), "judge_n_s": np.zeros((n_s, k)), "judge_sum_s": np.zeros((n_s, k)),
           "yy_s": np.zeros(n_s), "ssw_s": np.zeros(n_s), "s_isk": np.zeros((n, n_s, k)),
           "cnt_is": np.zeros((n, n_s)), "ys": np.zeros((n, n_s)), "judge_sum": np.zeros(k),
           "yy": float(np.sum(y0 * y0)), "y_min": float(y.min()), "y_max": float(y.max())}
    for c in range(n_cells):
        s = s_of[int(h[c])]
        out["size_cells"][s] += 1
        out["dd"][s] += np.outer(d[c], d[c])
        out["dy"][s] += d[c] * ysum[c]
        out["yyc"][s] += ysum[c] ** 2
        out["s_isk"][cs[c], s] += d[c]
        out["cnt_is"][cs[c], s] += 1
        out["ys"][cs[c], s] += ysum[c]
    for c, j, v in zip(cell, judge, y0):
        s = s_of[int(h[c])]
        out["judge_n_s"][s, j] += 1
        out["judge_sum_s"][s, j] += v
        out["judge_sum"][j] += v
        out["yy_s"][s] += v * v
        out["ssw_s"][s] += (v - ysum[c] / h[c]) ** 2
    gaps = [c for c in range(n_cells) if (d[c] == 0).any()]
    out["first_missing"] = None if not gaps else (
        g.scenario_labels[cs[gaps[0]]], g.cell_generation_labels[gaps[0]],
        tuple(g.judge_labels[j] for j in np.flatnonzero(d[gaps[0]] == 0)))
    out["first_cell"] = (g.scenario_labels[cs[0]], g.cell_generation_labels[0])
    out["sj"] = None
    if out["s_isk"].sum(axis=1).max() >= 2:   # some judge scored two generations of a scenario
        cid = _byte_ids(d)
        cells = [sorted(np.flatnonzero(cs == i), key=lambda c: -cid[c]) for i in range(n)]  # stable sort
        m = max(len(x) for x in cells)
        key = np.full((n, m), -1)
        for i, x in enumerate(cells):
            key[i, :len(x)] = cid[x]
        pat, first = _byte_ids(key, first=True)
        q = 1 + m + k
        inc = np.zeros((len(first), m, k))
        zsum, zscat, count = np.zeros((len(first), q)), np.zeros((len(first), q, q)), np.zeros(len(first))
        for i, x in enumerate(cells):
            z = np.zeros(q)
            z[0] = ysum[x].sum()
            z[1:1 + len(x)] = ysum[x]
            for c, j, v in zip(cell, judge, y0):
                if cs[c] == i:
                    z[1 + m + j] += v
            p = pat[i]
            count[p] += 1
            zsum[p] += z
            zscat[p] += np.outer(z, z)
            if first[p] == i:
                inc[p, :len(x)] = d[x]
        out["sj"] = {"incidence": inc, "count": count, "zsum": zsum, "zscat": zscat}
    return out


COUNTS = ("sizes", "size_cells", "dd", "judge_n", "judge_n_s", "s_isk", "cnt_is")
LINEAR = ("shift", "dy", "judge_sum_s", "ys", "judge_sum", "y_min", "y_max")
QUADRATIC = ("yyc", "yy_s", "ssw_s", "yy")


def _assert_engine_equals_plain(u, g) -> None:
    ref = _plain_unit_stats(g)
    y0 = np.asarray(g.y) - ref["shift"][np.asarray(g.judge)]
    # scales that bound the terms of every sum: L for sums of scores, Q = sum_i A_i^2 (A_i the sum of |y0| over
    # scenario i) for sums of products of partial sums (Y_c^2, y0^2, z_i z_i')
    lin = float(np.sum(np.abs(y0)) + np.max(np.abs(g.y)))
    quad = float(np.sum(np.bincount(np.asarray(g.cell_scenario)[np.asarray(g.cell)], weights=np.abs(y0)) ** 2))
    for f in COUNTS:
        a, b = np.asarray(getattr(u, f)), np.asarray(ref[f])
        assert a.shape == b.shape and a.dtype == np.float64 and np.array_equal(a, b), f
    for fields, scale in ((LINEAR, lin), (QUADRATIC, quad)):
        for f in fields:
            a, b = np.asarray(getattr(u, f), dtype=float), np.asarray(ref[f], dtype=float)
            assert a.shape == b.shape and np.all(np.abs(a - b) <= 1e-12 * scale), (f, np.max(np.abs(a - b)))
    assert u.first_missing == ref["first_missing"] and u.first_cell == ref["first_cell"]
    assert (u.n_obs, u.n_cells) == (len(g.y), len(g.cell_scenario)) and u.design == g.design
    assert (u.sj is None) == (ref["sj"] is None)
    if u.sj is not None:
        assert np.array_equal(u.sj.incidence, ref["sj"]["incidence"])
        assert np.array_equal(u.sj.count, ref["sj"]["count"])
        np.testing.assert_array_equal(u.sj.shift, u.shift)
        for f, scale in (("zsum", lin), ("zscat", quad)):
            a, b = getattr(u.sj, f), ref["sj"][f]
            assert a.shape == b.shape and np.all(np.abs(a - b) <= 1e-12 * scale), f


def _wide_frame(seed: int, *, n: int, m_range: tuple[int, int], k: int, p_missing: float,
                models=("A",), criteria=None) -> pd.DataFrame:
    """Several models (and criteria), ragged generations, missing calls at random (every cell keeps a call)."""
    rng = np.random.default_rng(seed)
    rows = []
    for crit in (criteria or [None]):
        for mdl in models:
            for i in range(n):
                a = rng.normal(0, 1.5)
                for j in range(int(rng.integers(m_range[0], m_range[1] + 1))):
                    b = rng.normal(0, 0.7)
                    keep = rng.random(k) >= p_missing
                    keep[rng.integers(k)] = True
                    for lab in np.flatnonzero(keep):
                        rows.append((mdl, crit, f"s{i:03d}", f"g{j}", f"j{lab}", 5 + a + b + lab + rng.normal()))
    out = pd.DataFrame(rows, columns=["model", "criterion", "scenario", "generation", "judge", "score"])
    return out.drop(columns="criterion") if criteria is None else out


WIDE = {
    "balanced-m4-k5": dict(n=30, m_range=(4, 4), k=5, p_missing=0.0),
    "balanced-m1-k3": dict(n=25, m_range=(1, 1), k=3, p_missing=0.0),                  # no scenario_judge stats
    "balanced-m3-k1": dict(n=12, m_range=(3, 3), k=1, p_missing=0.0),                  # one judge
    "complete-ragged": dict(n=40, m_range=(1, 5), k=4, p_missing=0.0),                 # complete, several patterns
    "missing-calls": dict(n=60, m_range=(3, 3), k=5, p_missing=0.15),
    "missing-ragged": dict(n=80, m_range=(1, 6), k=6, p_missing=0.2),
    "big-and-small-patterns": dict(n=200, m_range=(2, 2), k=3, p_missing=0.05),        # patterns of >= 16 and < 16
    "many-judges": dict(n=20, m_range=(2, 4), k=11, p_missing=0.3),                    # ids past one byte
    "long-scenarios": dict(n=15, m_range=(20, 40), k=4, p_missing=0.3),                # pattern keys past int64
    "models-criteria": dict(n=10, m_range=(1, 4), k=4, p_missing=0.2, models=("A", "B", "C"),
                            criteria=["x", "y"]),
}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", sorted(WIDE))
def test_numpy_engine_equals_a_plain_reduction(name, seed):
    scores = cj.read_scores(_wide_frame(seed, **WIDE[name]))
    st = build_stats(scores)
    groups = list(scores.groups())
    assert len(st.units) == len(groups)
    for u, g in zip(st.units, groups):
        _assert_engine_equals_plain(u, g)
    if name.startswith("balanced-m4"):
        assert all(u.sj is not None and u.sj.count.shape == (1,) for u in st.units)
    if name == "big-and-small-patterns":
        counts = st.units[0].sj.count
        assert counts.max() >= 16 and counts.min() < 16


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_numpy_engine_equals_a_plain_reduction_on_the_small_designs(name):
    g, u = _unit(DESIGNS[name])
    _assert_engine_equals_plain(u, g)


def test_row_ids_follow_the_rows_byte_order():
    """The fast ids (integer codes, counting or sorting) number the rows as the byte-order unique does."""
    from cjstats.stats.scenario_judge import _row_ids

    rng = np.random.default_rng(0)
    for shape, lo, hi in (((500, 5), 0, 2), ((300, 8), -1, 40), ((200, 12), -1, 300), ((50, 30), -1, 5000),
                          ((1, 3), 0, 1), ((40, 1), -3, 3)):
        a = rng.integers(lo, hi, size=shape)
        ids, first = _row_ids(a, first=True)
        ref_ids, ref_first = _byte_ids(a, first=True)
        np.testing.assert_array_equal(ids, ref_ids)
        np.testing.assert_array_equal(first, ref_first)
