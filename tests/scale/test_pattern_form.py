"""The pattern form of ``CellStats`` (issue 34): per design pattern the scenario count, cnt, S, sum Y_is and
sum Y_is Y_ir instead of per-scenario arrays (``cjstats.stats.views.ScenarioPatternForm``).

The DuckDB engine builds it with ``scenarios="patterns"`` (and with ``"auto"`` from ``PATTERN_FORM_SCENARIOS``
scenarios in a unit) in one streaming query; any CellStats converts to it (``to_pattern_form``). Checked here on the
conformance suite's balanced, missing-call and ragged tables (several models and criteria, the scenario x judge
statistics included): every statistic equals the numpy engine's (1e-12 relative, the same comparison as the
conformance suite), and the ANOVA, REML with profile intervals (the scenario x judge term included where the table
identifies it) from the pattern form give the per-scenario fits, every numeric column, to 1e-12 relative
(measured: at most 4e-13). What needs per-scenario values refuses the pattern form in one sentence.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.exceptions import CjstatsError
from cjstats.stats import build_stats, merge_stats
from cjstats.stats.joint import stack_models

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
import test_engine_conformance as conf  # noqa: E402

pytest.importorskip("duckdb")

RTOL = 1e-12
NAMES = ("balanced", "missing", "ragged")


def _patterns(name: str) -> cj.stats.ScoreStats:
    return build_stats(conf.table(name), engine="duckdb", scenarios="patterns")


def _key(pf, i: int) -> bytes:
    return np.r_[pf.cnt[i], pf.s[i].ravel()].tobytes()


def assert_same_as_per_scenario(a, b) -> None:
    """``b`` (pattern form) holds the statistics of ``a`` (per scenario): design, first cells and counts exactly,
    arrays and pattern moments (after re-centring ``b`` to ``a``'s judge means) and the scenario x judge patterns
    to RTOL."""
    where = f"unit ({a.model}, {a.criterion})"
    assert b.pat is not None and b.s_isk is None and b.scenario_labels is None, where
    assert a.design == b.design, f"{where}: design"
    assert (a.first_cell, a.first_missing) == (b.first_cell, b.first_missing), f"{where}: first cells"
    assert (a.n_obs, a.n_cells, a.n_scenarios, a.y_min, a.y_max) == (b.n_obs, b.n_cells, b.n_scenarios, b.y_min,
                                                                        b.y_max), where
    b2 = b.recentre(a.shift)
    for f in ("sizes", "size_cells", "dd", "judge_n_s", "judge_n"):
        assert np.array_equal(getattr(a, f), getattr(b2, f)), f"{where}: {f}"
    for f in ("yyc", "yy_s", "ssw_s", "yy"):
        assert conf._rel_close(getattr(a, f), getattr(b2, f)), f"{where}: {f}"
    scale_y = float(np.sqrt(a.yy / a.n_obs))
    for f in ("dy", "judge_sum_s", "judge_sum"):
        diff = float(np.max(np.abs(getattr(a, f) - getattr(b2, f)), initial=0.0))
        assert diff <= RTOL * a.n_obs * a.sizes.max() * scale_y, f"{where}: {f} differs by {diff:.3g}"
    pa, pb = a.pattern_form, b2.pat
    oa = sorted(range(len(pa.n)), key=lambda i: _key(pa, i))
    ob = sorted(range(len(pb.n)), key=lambda i: _key(pb, i))
    assert [_key(pa, i) for i in oa] == [_key(pb, i) for i in ob], f"{where}: patterns"
    assert np.array_equal(pa.n[oa], pb.n[ob]) and pa.n_scenarios == pb.n_scenarios, f"{where}: pattern counts"
    diff = float(np.max(np.abs(pa.y1[oa] - pb.y1[ob])))
    assert diff <= RTOL * a.n_obs * a.sizes.max() * scale_y, f"{where}: sum Y_is differs by {diff:.3g}"
    assert conf._rel_close(pa.y2[oa], pb.y2[ob]), f"{where}: sum Y_is Y_ir"
    assert (a.sj is None) == (b.sj is None), f"{where}: scenario x judge statistics"
    if a.sj is not None:
        sa, sb = a.sj, b.sj.recentre(a.sj.shift)
        oa, ob = conf._pattern_order(sa), conf._pattern_order(sb)
        assert np.array_equal(sa.incidence[oa], sb.incidence[ob]), f"{where}: sj patterns"
        assert np.array_equal(sa.count[oa], sb.count[ob]), f"{where}: sj counts"
        assert conf._rel_close(sa.zsum[oa], sb.zsum[ob]) and conf._rel_close(sa.zscat[oa], sb.zscat[ob]), where
    assert conf._rel_close(a.within_cell_rss(), b.within_cell_rss()), f"{where}: within_cell_rss"


def assert_same_fit(fa, fb) -> None:
    """Every column of the two fits' components: strings exactly, numbers to RTOL relative (NaN == NaN)."""
    ca, cb = fa.components, fb.components
    assert list(ca.columns) == list(cb.columns) and len(ca) == len(cb)
    num = ca.select_dtypes("number").columns
    pd.testing.assert_frame_equal(ca.drop(columns=num), cb.drop(columns=num))
    a, b = ca[num].to_numpy(dtype=float), cb[num].to_numpy(dtype=float)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    a, b = np.nan_to_num(a), np.nan_to_num(b)
    rel = np.abs(a - b) / np.maximum(np.abs(a), 1e-300)
    assert np.all((rel <= RTOL) | (np.abs(a - b) <= 1e-14)), f"largest relative difference {rel.max():.3g}"


@pytest.mark.parametrize("name", NAMES)
def test_duckdb_pattern_form_equals_the_numpy_statistics(name):
    ref, got = conf.reference(name), _patterns(name)
    pd.testing.assert_frame_equal(ref.design, got.design)
    for a, b in zip(ref, got):
        assert_same_as_per_scenario(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_to_pattern_form_equals_the_duckdb_pattern_form(name):
    """The in-memory conversion and the engine's query give the same statistics (one form, two routes)."""
    for a, b in zip(conf.reference(name), _patterns(name)):
        assert_same_as_per_scenario(a, b)
        c = a.to_pattern_form()
        assert c.pat.n_scenarios == b.pat.n_scenarios and len(c.pat.n) == len(b.pat.n)


@pytest.mark.parametrize("name", NAMES)
def test_reml_with_profiles_from_the_pattern_form_equals_the_per_scenario_fit(name):
    ref = conf.reference(name)
    want = cj.estimate(ref, "reml", interval="profile")
    assert_same_fit(want, cj.estimate(_patterns(name), "reml", interval="profile"))
    if name == "missing":   # the numpy engine's statistics converted in memory fit the same way
        conv = dataclasses.replace(ref, units=tuple(u.to_pattern_form() for u in ref.units))
        assert_same_fit(want, cj.estimate(conv, "reml", interval="profile"))


def test_anova_from_the_pattern_form_equals_the_per_scenario_fit():
    ref, got = conf.reference("balanced"), _patterns("balanced")
    assert_same_fit(cj.estimate(ref, "anova"), cj.estimate(got, "anova"))


def test_anova_drop_from_the_pattern_form():
    """incomplete='drop' keeps the complete cells: the same mean squares and dropped counts, or the same sentence."""
    ref, got = conf.reference("missing"), _patterns("missing")
    for a, b in zip(ref, got):
        try:
            ma, da = a.for_anova("drop")
        except CjstatsError as exc:
            with pytest.raises(CjstatsError) as info:
                b.for_anova("drop")
            assert str(info.value) == str(exc)
            continue
        mb, db = b.for_anova("drop")
        assert da == db
        for f in ("ss_scenario", "ss_generation", "ss_judge", "ss_residual"):
            assert conf._rel_close(getattr(ma, f), getattr(mb, f)), f


def test_merge_stats_of_pattern_form_chunks():
    """Chunks split by scenario, one in the pattern form: the merge is the pattern form of the whole."""
    df = conf.table("missing")
    df = df[(df["model"] == "A") & (df["criterion"] == "helpful")]
    whole = build_stats(df).units[0]
    merged = merge_stats(build_stats(df[df["scenario"] % 2 == 0]).units[0].to_pattern_form(),
                         build_stats(df[df["scenario"] % 2 == 1]).units[0])
    assert_same_as_per_scenario(whole, merged)


def test_auto_takes_the_pattern_form_from_the_threshold(monkeypatch):
    from cjstats.stats.engines import duckdb_engine

    df = conf.table("balanced")
    assert build_stats(df, engine="duckdb").units[0].pat is None          # 12 scenarios: per scenario
    monkeypatch.setattr(duckdb_engine, "PATTERN_FORM_SCENARIOS", 5)
    got = build_stats(df, engine="duckdb")
    assert all(u.pat is not None for u in got.units)
    # the joint units pair the models' scenarios: they keep the per-scenario arrays
    joint = build_stats(df, engine="duckdb", unit=("criterion",))
    assert all(u.pat is None for j in joint.units for u in j.units)


@pytest.mark.parametrize(("threshold", "form"), [(10, "patterns"), (11, "patterns"), (13, "each")])
def test_auto_counts_scenarios_only_between_the_bounds(monkeypatch, threshold, form):
    """'missing': a unit of 120 rows, 4 judges, 3 generations has between 10 and 120 scenarios (12). Threshold 10:
    the lower bound decides; 11 and 13 fall between the bounds, so the scenarios are counted (12)."""
    from cjstats.stats.engines import duckdb_engine

    monkeypatch.setattr(duckdb_engine, "PATTERN_FORM_SCENARIOS", threshold)
    got = build_stats(conf.table("missing"), engine="duckdb")
    assert all((u.pat is not None) == (form == "patterns") for u in got.units)


def test_from_parquet_files(tmp_path):
    """Files split by row blocks (cells and scenarios across files), string ids: the same statistics."""
    df = conf.table("ragged").assign(scenario=lambda d: "s" + d["scenario"].astype(str))
    for i, part in enumerate(np.array_split(np.arange(len(df)), 3)):
        df.iloc[part].to_parquet(tmp_path / f"p{i}.parquet", index=False)
    ref = build_stats(df)
    got = build_stats(str(tmp_path / "*.parquet"), engine="duckdb", scenarios="patterns")
    for a, b in zip(ref, got):
        assert_same_as_per_scenario(a, b)


def test_duplicates_raise_read_scores_sentence():
    """(Integer scores: packed, so two calls of one judge OR into one field; found all the same.)"""
    df = pd.DataFrame({"model": "a", "scenario": ["s1", "s1", "s1", "s2", "s2", "s2"], "generation": 0,
                       "judge": ["j1", "j1", "j2", "j1", "j2", "j2"], "score": [1.0, 2, 3, 4, 5, 6]})
    with pytest.raises(CjstatsError) as ref:
        build_stats(cj.read_scores(df))
    with pytest.raises(CjstatsError) as got:
        build_stats(df, engine="duckdb", scenarios="patterns")
    assert str(got.value) == str(ref.value)


def test_many_generation_labels():
    """One column per generation label: beyond the limit 'patterns' is refused and 'auto' keeps per-scenario."""
    from cjstats.stats.engines import duckdb_engine

    n = duckdb_engine._MAX_PLACES + 1
    df = pd.DataFrame({"model": "a", "scenario": np.repeat(np.arange(n), 2), "generation": np.repeat(np.arange(n), 2),
                       "judge": ["j1", "j2"] * n, "score": np.arange(2.0 * n)})
    with pytest.raises(CjstatsError, match="one column per generation label"):
        build_stats(df, engine="duckdb", scenarios="patterns")
    with pytest.raises(CjstatsError, match="is not one of"):
        build_stats(df, engine="duckdb", scenarios="some")


def test_what_needs_scenarios_refuses_the_pattern_form():
    got = _patterns("balanced")
    u = got.units[0]
    with pytest.raises(CjstatsError, match=r"needs per-scenario statistics, but model 'A', criterion 'helpful' "
                                           r"holds its 12 scenarios \(e\.g\. 0, 1, 2\) grouped by design pattern"):
        u.for_gaussian()
    with pytest.raises(CjstatsError, match="The joint statistics of several models"):
        stack_models([v for v in got.units if v.criterion == "helpful"])
    with pytest.raises(CjstatsError, match="The number of generations of each scenario"):
        u.generations_per_scenario  # noqa: B018
    assert u.generations_range == (3, 3) and u.has_generation


def test_estimate_out_of_core_asks_per_scenario_statistics_for_backends_without_the_pattern_form(monkeypatch):
    """cj.estimate(path, engine="duckdb") builds the pattern form only for a backend declaring
    ``Capabilities.pattern_form`` (ANOVA, REML); the Bayesian backend gets per-scenario statistics."""
    import cjstats.stats as stats_mod
    from cjstats.estimators.capabilities import CAPABILITIES
    from cjstats.stats.engines import duckdb_engine

    assert CAPABILITIES["anova"].pattern_form and CAPABILITIES["reml"].pattern_form
    assert not CAPABILITIES["bayes"].pattern_form
    monkeypatch.setattr(duckdb_engine, "PATTERN_FORM_SCENARIOS", 5)
    df = conf.table("balanced")
    seen = []
    real = stats_mod.build_stats

    def spy(*args, **kwargs):
        seen.append(kwargs.get("scenarios", "auto"))
        return real(*args, **kwargs)

    monkeypatch.setattr(stats_mod, "build_stats", spy)
    fit = cj.estimate(df, "reml", engine="duckdb")
    assert seen == ["auto"] and np.isfinite(fit.components["estimate"]).all()

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        seen.append(kwargs.get("scenarios", "auto"))
        raise Stop

    monkeypatch.setattr(stats_mod, "build_stats", stop)
    with pytest.raises(Stop):
        cj.estimate(df, "bayes", engine="duckdb")
    assert seen[-1] == "each"


# ------------------------------------------------------------------------------------------ integer scores packed
def _integer(name: str, scale: float = 3.0, offset: float = 0.0) -> pd.DataFrame:
    """Table ``name`` with integer scores (round(scale * score) + offset): the route that packs them."""
    df = conf.table(name)
    return df.assign(score=np.round(scale * df["score"].to_numpy()) + offset)


def _both_routes(df: pd.DataFrame, monkeypatch) -> tuple[cj.stats.ScoreStats, cj.stats.ScoreStats]:
    """The pattern form from packed integer scores and from the per-(place, judge) sums (packing switched off)."""
    from cjstats.stats.engines import duckdb_engine

    seen = []
    real = duckdb_engine._integer_grid
    monkeypatch.setattr(duckdb_engine, "_integer_grid", lambda p1: seen.append(real(p1)) or seen[-1])
    packed = build_stats(df, engine="duckdb", scenarios="patterns")
    assert seen and seen[-1] is not None, "the integer scores were not packed"
    monkeypatch.setattr(duckdb_engine, "_integer_grid", lambda p1: None)
    return packed, build_stats(df, engine="duckdb", scenarios="patterns")


@pytest.mark.parametrize("name", NAMES)
def test_packed_integer_scores_give_the_same_statistics(name, monkeypatch):
    """Integer scores packed into b-bit fields: the numpy engine's statistics (1e-12), and the same numbers as the
    unpacked query (each x_cl is the same double y - shift; the sums' order is DuckDB's either way)."""
    df = _integer(name, offset=-20.0)   # negative scores too
    packed, plain = _both_routes(df, monkeypatch)
    ref = build_stats(cj.read_scores(df))
    pd.testing.assert_frame_equal(ref.design, packed.design)
    for a, b, c in zip(ref, packed, plain):
        assert_same_as_per_scenario(a, b)
        assert_same_as_per_scenario(a, c)
        assert np.array_equal(b.pat.n, c.pat.n) and np.array_equal(b.pat.s, c.pat.s)
        assert conf._rel_close(b.pat.y2, c.pat.y2) and conf._rel_close(b.yy_s, c.yy_s)


def test_packed_scores_over_several_words(monkeypatch):
    """12 judges x 3 generations with scores 0..1000 (10-bit fields, 6 a word: 6 words), calls missing at random."""
    rng = np.random.default_rng(34)
    df = pd.DataFrame([(m, s, g, f"j{j:02d}") for m in ("a", "b") for s in range(40) for g in range(3)
                       for j in range(12)], columns=["model", "scenario", "generation", "judge"])
    df["score"] = rng.integers(0, 1001, len(df)).astype(float)
    df = df[rng.random(len(df)) > 0.2]
    packed, plain = _both_routes(df, monkeypatch)
    for a, b, c in zip(build_stats(cj.read_scores(df)), packed, plain):
        assert_same_as_per_scenario(a, b)
        assert_same_as_per_scenario(a, c)
    want = cj.estimate(build_stats(cj.read_scores(df)), "reml")
    assert_same_fit(want, cj.estimate(packed, "reml"))


def test_packed_scores_with_two_mask_words(monkeypatch):
    """22 judges x 3 generations (66 judge-place bits: two mask words; scores 1..10 in 4-bit fields, 15 a word),
    one model scored by 20 of the judges only."""
    rng = np.random.default_rng(7)
    df = pd.DataFrame([(m, s, g, f"j{j:02d}") for m in ("a", "b") for s in range(30) for g in range(3)
                       for j in range(22 if m == "a" else 20)], columns=["model", "scenario", "generation", "judge"])
    df["score"] = rng.integers(1, 11, len(df)).astype(float)
    df = df[rng.random(len(df)) > 0.1]
    packed, plain = _both_routes(df, monkeypatch)
    for a, b, c in zip(build_stats(cj.read_scores(df)), packed, plain):
        assert_same_as_per_scenario(a, b)
        assert_same_as_per_scenario(a, c)


def test_wide_integer_range_is_not_packed():
    """Scores spanning more than 2^31 values keep the per-(place, judge) sums (and the same statistics)."""
    from cjstats.stats.engines import duckdb_engine

    df = _integer("balanced").assign(score=lambda d: d["score"] * 2.0 ** 30)
    p1 = pd.DataFrame({"frac": [0.0], "lo": [df["score"].min()], "hi": [df["score"].max()]})
    assert duckdb_engine._integer_grid(p1) is None
    for a, b in zip(build_stats(cj.read_scores(df)), build_stats(df, engine="duckdb", scenarios="patterns")):
        assert_same_as_per_scenario(a, b)

