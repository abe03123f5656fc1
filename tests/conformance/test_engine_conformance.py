"""One contract, checked on every statistics engine in the registry (``cjstats.stats.engines.ENGINES``).

Every engine must build, through :func:`cjstats.stats.build_stats`, the statistics the numpy engine builds from
the same table: designs and labels exactly, every array and every view (``for_anova``, ``for_reml``,
``for_gaussian``, the joint units) to 1e-12 relative (the engines add the same numbers in another order), on
seeded tables that are balanced, have missing judge calls, or have unequal generations per scenario, with
several models and criteria. An engine that declares ``scenario_judge`` builds the scenario x judge statistics
(``CellStats.sj``) exactly where the numpy engine does, with the same patterns, counts and sums (to 1e-12); every
registered engine declares it. An engine that declares the cumulative likelihood (``EngineCapabilities.likelihoods``)
builds, with ``likelihood="cumulative"``, the numpy engine's per-pattern counts of the ordinal model
(``CellStats.patterns``: categories, patterns, counts and first scenarios) exactly, on rated (1-5) tables with one
generation per scenario that are balanced, have missing calls, or are ragged (judge panels differing between units,
and a unit with several generations, which gets none), from a DataFrame and from Parquet files. The suite is
parametrised over the registry, so an engine registered with
``register_engine`` is checked from its first commit; each check reads the engine's declared
:class:`~cjstats.stats.engines.EngineCapabilities`, not its name. An engine whose packages are missing is skipped
with the extra that installs them. Known failures go in KNOWN_FAILURES {(engine, check_name): reason} (strict
xfails).

``TestPlantedBrokenEngines`` registers broken engines for one test and calls the checks on them directly: each
must fail with an AssertionError.
"""

from __future__ import annotations

import dataclasses
import inspect
from importlib import import_module
from importlib.util import find_spec
from typing import Any

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.stats import ScoreStats, build_stats
from cjstats.stats.engines import ENGINES, Engine, EngineCapabilities, ModuleEngine
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores

RTOL = 1e-12
KNOWN_FAILURES: dict[tuple[str, str], str] = {}


def _sim(n: int, m: int, k: int, seed: int, model: str, missing: float = 0.0) -> pd.DataFrame:
    c = TABLE3_MTBENCH["Qwen"]
    return simulate_scores(n=n, m=m, k=k, s2_scenario=c["scenario"], s2_generation=c["generation"],
                           s2_residual=c["residual"], judge_offsets=panel_offsets(k, c["judge_panel"]), mu=c["mu"],
                           model=model, missing=missing, seed=seed)


def _ragged(seed: int, model: str) -> pd.DataFrame:
    """2 or 3 generations per scenario: generation 2 of every third scenario left out."""
    df = _sim(15, 3, 4, seed, model)
    return df[~((df["scenario"] % 3 == 0) & (df["generation"] == 2))]


#: Seeded tables, each with several models x criteria (the joint units need the models of a criterion to share
#: their judges).
TABLES = {
    "balanced": lambda: pd.concat([_sim(12, 3, 4, 1, "A").assign(criterion="helpful"),
                                   _sim(12, 3, 4, 2, "B").assign(criterion="helpful"),
                                   _sim(10, 2, 3, 3, "A").assign(criterion="safe"),
                                   _sim(10, 2, 3, 4, "B").assign(criterion="safe")], ignore_index=True),
    "missing": lambda: pd.concat([_sim(12, 3, 4, 5, "A", missing=0.15).assign(criterion="helpful"),
                                  _sim(12, 3, 4, 6, "B", missing=0.25).assign(criterion="helpful"),
                                  _sim(10, 2, 3, 7, "A", missing=0.2).assign(criterion="safe"),
                                  _sim(10, 2, 3, 8, "B").assign(criterion="safe")], ignore_index=True),
    "ragged": lambda: pd.concat([_ragged(9, "A").assign(criterion="helpful"),
                                 _ragged(10, "B").assign(criterion="helpful"),
                                 _ragged(11, "A").assign(criterion="safe"),
                                 _sim(15, 2, 4, 12, "B", missing=0.1).assign(criterion="safe")], ignore_index=True),
}
_CACHE: dict[tuple, Any] = {}


def _rated(df: pd.DataFrame) -> pd.DataFrame:
    """The table with its scores cut into a 1-5 rating scale (quintiles of its scores)."""
    return df.assign(score=(pd.qcut(df["score"], 5, labels=False) + 1).astype(float))


def _m1(n: int, k: int, seed: int, model: str, missing: float = 0.0) -> pd.DataFrame:
    """One generation per scenario, scores 1-5."""
    return _rated(_sim(n, 1, k, seed, model, missing=missing))


#: Rated tables for the per-pattern counts of the ordinal model (one generation per scenario unless said).
ORDINAL_TABLES = {
    "balanced": lambda: pd.concat([_m1(40, 4, 21, "A").assign(criterion="helpful"),
                                   _m1(40, 4, 22, "B").assign(criterion="helpful"),
                                   _m1(30, 3, 23, "A").assign(criterion="safe")], ignore_index=True),
    "missing": lambda: pd.concat([_m1(40, 4, 24, "A", missing=0.2).assign(criterion="helpful"),
                                  _m1(40, 4, 25, "B", missing=0.3).assign(criterion="helpful"),
                                  _m1(30, 3, 26, "A", missing=0.15).assign(criterion="safe")], ignore_index=True),
    # judge panels that differ between units (judge j3 only in one), scenario labels that are text, and a unit
    # with two or three generations per scenario (no per-pattern counts)
    "ragged": lambda: pd.concat([
        _m1(40, 4, 27, "A", missing=0.2).assign(criterion="helpful"),
        _m1(35, 3, 28, "B", missing=0.1).assign(criterion="helpful",
                                                 scenario=lambda d: "s" + d["scenario"].astype(str)),
        _rated(_ragged(29, "A")).assign(criterion="safe")], ignore_index=True),
}


def ordinal_table(name: str) -> pd.DataFrame:
    if ("ordinal", name) not in _CACHE:
        _CACHE[("ordinal", name)] = ORDINAL_TABLES[name]().reset_index(drop=True)
    return _CACHE[("ordinal", name)].copy()


def ordinal_reference(name: str) -> ScoreStats:
    """The numpy engine's statistics of ordinal table ``name`` with the per-pattern counts (its module, not the
    registry)."""
    key = ("ordinal_ref", name)
    if key not in _CACHE:
        _CACHE[key] = import_module("cjstats.stats.engines.numpy_engine").build(
            cj.read_scores(ordinal_table(name)), unit=("model", "criterion"), likelihood="cumulative")
    return _CACHE[key]


def table(name: str) -> pd.DataFrame:
    if ("table", name) not in _CACHE:
        _CACHE[("table", name)] = TABLES[name]().reset_index(drop=True)
    return _CACHE[("table", name)].copy()


def reference(name: str, unit: tuple[str, ...] = ("model", "criterion")) -> ScoreStats:
    """The numpy engine's statistics of table ``name`` (computed by the unit-level function, not the registry,
    so that a broken registry entry cannot move the reference)."""
    key = ("ref", name, unit)
    if key not in _CACHE:
        _CACHE[key] = import_module("cjstats.stats.engines.numpy_engine").build(cj.read_scores(table(name)),
                                                                                unit=("model", "criterion"))
        if unit == ("criterion",):
            from cjstats.stats import stack_models

            per = _CACHE[key]
            crits = list(dict.fromkeys(u.criterion for u in per.units))
            joint = tuple(stack_models([u for u in per.units if u.criterion == c]) for c in crits)
            _CACHE[key] = dataclasses.replace(per, units=joint, unit=unit)
    return _CACHE[key]


def source_for(engine: str, name: str) -> Any:
    """What the engine reads: a Scores table when it takes one, else the DataFrame (every engine reads one)."""
    caps = ENGINES[engine].capabilities
    return cj.read_scores(table(name)) if caps.takes_scores else table(name)


# ------------------------------------------------------------------------------------------ comparison
def _rel_close(a: Any, b: Any, rtol: float = RTOL) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    a, b = np.nan_to_num(a), np.nan_to_num(b)
    scale = max(float(np.max(np.abs(a), initial=0.0)), 1e-300)
    return float(np.max(np.abs(a - b), initial=0.0)) <= rtol * scale


def assert_same_unit(a: Any, b: Any, engine: str, *, scenario_judge: bool) -> None:
    """Two CellStats hold the same statistics: labels and design exactly, arrays (after re-centring ``b`` to
    ``a``'s judge means, exact algebra) and every view to RTOL relative."""
    where = f"{engine}: unit ({a.model}, {a.criterion})"
    assert (a.model, a.criterion, a.judge_labels) == (b.model, b.criterion, b.judge_labels), where
    assert a.design == b.design, f"{where}: design"
    assert a.scenario_labels.tolist() == b.scenario_labels.tolist(), f"{where}: scenario labels"
    assert a.first_cell == b.first_cell and a.first_missing == b.first_missing, f"{where}: first cells"
    assert (a.n_obs, a.n_cells, a.y_min, a.y_max) == (b.n_obs, b.n_cells, b.y_min, b.y_max), f"{where}: counts"
    assert _rel_close(a.shift, b.shift), f"{where}: shift"
    b2 = b.recentre(a.shift)
    for f in ("sizes", "size_cells", "dd", "judge_n_s", "s_isk", "cnt_is", "judge_n"):
        assert np.array_equal(getattr(a, f), getattr(b2, f)), f"{where}: {f}"
    for f in ("yyc", "yy_s", "ssw_s", "yy"):
        assert _rel_close(getattr(a, f), getattr(b2, f)), f"{where}: {f}"
    scale_y = float(np.sqrt(a.yy / a.n_obs))
    for f, per in (("dy", a.sizes.max()), ("judge_sum_s", 1.0), ("ys", a.sizes.max()), ("judge_sum", 1.0)):
        # centred sums can be near zero: compared on the scale of their terms (n_obs x score size)
        diff = float(np.max(np.abs(getattr(a, f) - getattr(b2, f)), initial=0.0))
        assert diff <= RTOL * a.n_obs * per * scale_y, f"{where}: {f} differs by {diff:.3g}"
    da, db = a.for_reml()[0], b.for_reml()[0]
    assert (da.df_residual, da.n_linked) == (db.df_residual, db.n_linked), f"{where}: for_reml"
    ga, gb = a.for_gaussian(), b.for_gaussian()
    for f in ("m_h", "v", "g_w", "blk_t"):
        assert _rel_close(getattr(ga, f), getattr(gb, f)), f"{where}: for_gaussian().{f}"
    assert _rel_close([ga.ybar, ga.sd, ga.ssw0], [gb.ybar, gb.sd, gb.ssw0]), f"{where}: for_gaussian()"
    assert _rel_close(a.within_cell_rss(), b.within_cell_rss()), f"{where}: within_cell_rss"
    if a.design.balanced:
        ma, mb = a.for_anova()[0], b.for_anova()[0]
        for f in ("grand_mean", "judge_means", "ss_scenario", "ss_generation", "ss_judge", "ss_residual"):
            assert _rel_close(getattr(ma, f), getattr(mb, f)), f"{where}: for_anova().{f}"
    if scenario_judge:
        assert (a.sj is None) == (b.sj is None), f"{where}: declares scenario_judge but sj={b.sj is not None}"
    assert (a.patterns is None) == (b.patterns is None), \
        f"{where}: per-pattern counts {'missing' if b.patterns is None else 'built where the reference has none'}"
    if a.patterns is not None:   # counts of the ordinal model: exactly (integers, and the scores themselves)
        pa, pb = a.patterns, b.patterns
        assert np.array_equal(pa.values, pb.values), f"{where}: pattern categories"
        assert np.array_equal(pa.codes, pb.codes), f"{where}: patterns"
        assert np.array_equal(pa.count, pb.count), f"{where}: pattern counts"
        assert np.array_equal(pa.first, pb.first), f"{where}: first scenario of each pattern"
    if a.sj is not None and b.sj is not None:   # statistics an engine gives must be right, declared or not
        sa, sb = a.sj, b.sj.recentre(a.sj.shift)
        oa, ob = _pattern_order(sa), _pattern_order(sb)   # patterns are a set: engines may list them in any order
        assert np.array_equal(sa.incidence[oa], sb.incidence[ob]), f"{where}: sj patterns"
        assert np.array_equal(sa.count[oa], sb.count[ob]), f"{where}: sj pattern counts"
        assert _rel_close(sa.zsum[oa], sb.zsum[ob]) and _rel_close(sa.zscat[oa], sb.zscat[ob]), f"{where}: sj sums"


def _pattern_order(sj: Any) -> np.ndarray:
    """The patterns of scenario x judge statistics sorted by their judge calls."""
    keys = [sj.incidence[i].tobytes() for i in range(sj.incidence.shape[0])]
    return np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def assert_same_statistics(ref: ScoreStats, got: ScoreStats, engine: str, *, scenario_judge: bool) -> None:
    assert isinstance(got, ScoreStats), f"{engine}: build must return ScoreStats, got {type(got).__name__}"
    pd.testing.assert_frame_equal(ref.design, got.design, obj=f"{engine}: design")
    assert (ref.has_criterion, ref.unit, len(ref)) == (got.has_criterion, got.unit, len(got)), f"{engine}: units"
    for a, b in zip(ref, got):
        if ref.joint:
            assert (a.models, a.criterion) == (b.models, b.criterion), f"{engine}: joint unit"
            assert a.scenario_labels.tolist() == b.scenario_labels.tolist(), f"{engine}: joint scenario axis"
            for ua, ub in zip(a.units, b.units):
                assert_same_unit(ua, ub, engine, scenario_judge=scenario_judge)
        else:
            assert_same_unit(a, b, engine, scenario_judge=scenario_judge)


# ------------------------------------------------------------------------------------------ checks
def check_is_a_registered_engine(engine: str) -> None:
    e = ENGINES[engine]
    assert isinstance(e, Engine) and e.name == engine, f"{engine}: not an Engine registered under its name"
    assert isinstance(e.capabilities, EngineCapabilities), f"{engine}: capabilities are not EngineCapabilities"
    assert e.capabilities.in_memory or e.capabilities.reads_files, f"{engine}: reads neither a table nor files"
    assert not (e.capabilities.takes_scores and not e.capabilities.in_memory), \
        f"{engine}: takes a Scores table but does not declare in_memory"


def check_declared_options_are_the_build_options(engine: str) -> None:
    e = ENGINES[engine]
    build = import_module(e.module).build if isinstance(e, ModuleEngine) else e.build
    params = inspect.signature(build).parameters.values()
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params), f"{engine}: build takes **options"
    kw = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert ("covariates" in kw) == e.capabilities.covariates, \
        f"{engine}: declares covariates={e.capabilities.covariates} but build takes covariates={'covariates' in kw}"
    assert ("terms" in kw) == ("scenario_judge" in e.capabilities.terms), \
        f"{engine}: builds the optional scenario x judge statistics but its build takes no terms= (or the reverse)"
    assert ("likelihood" in kw) == (set(e.capabilities.likelihoods) != {"gaussian"}), \
        f"{engine}: declares likelihoods {e.capabilities.likelihoods} but build takes likelihood={'likelihood' in kw}"
    taken = kw - {"unit", "covariates", "terms", "likelihood"}
    assert taken == set(e.capabilities.options), \
        f"{engine}: declares options {sorted(e.capabilities.options)} but build takes {sorted(taken)}"


def check_builds_every_terms_statistics(engine: str) -> None:
    """Every engine builds the statistics of every term of the one-model unit, so the same call fits the same
    model on every engine (no engine leaves the scenario x judge interaction in the residual)."""
    terms = ENGINES[engine].capabilities.terms
    missing = [t for t in ("scenario", "generation", "scenario_judge") if t not in terms]
    assert not missing, f"{engine}: does not build the statistics of {missing}"


def check_a_model_without_a_term_gets_no_statistics_for_it(engine: str) -> None:
    """build_stats(terms=) leaves out the optional statistics of an absent term (the scenario x judge sums) and
    changes nothing else."""
    e = ENGINES[engine]
    if "scenario_judge" not in e.capabilities.terms:
        return
    full = build_stats(source_for(engine, "balanced"), engine=engine)
    part = build_stats(source_for(engine, "balanced"), engine=engine, terms=("scenario", "generation"))
    assert all(u.sj is not None for u in full.units), f"{engine}: the reference table identifies scenario_judge"
    assert all(u.sj is None for u in part.units), f"{engine}: built scenario x judge sums the model does not need"
    import dataclasses as _dc

    for a, b in zip(full.units, part.units):
        assert_same_unit(_dc.replace(a, sj=None), b, engine, scenario_judge=False)


def _check_same_as_numpy(engine: str, name: str) -> None:
    got = build_stats(source_for(engine, name), engine=engine)
    assert got.engine == engine, f"{engine}: the statistics say engine={got.engine!r}"
    assert_same_statistics(reference(name), got, engine, scenario_judge=ENGINES[engine].capabilities.scenario_judge)


def check_balanced_statistics_equal_numpy(engine: str) -> None:
    _check_same_as_numpy(engine, "balanced")


def check_missing_call_statistics_equal_numpy(engine: str) -> None:
    _check_same_as_numpy(engine, "missing")


def check_ragged_statistics_equal_numpy(engine: str) -> None:
    _check_same_as_numpy(engine, "ragged")


def check_joint_units_equal_numpy(engine: str) -> None:
    got = build_stats(source_for(engine, "missing"), unit=("criterion",), engine=engine)
    assert_same_statistics(reference("missing", ("criterion",)), got, engine,
                           scenario_judge=ENGINES[engine].capabilities.scenario_judge)


def check_reads_files_out_of_core(engine: str, tmp_path: Any) -> None:
    """An engine that declares reads_files builds the same statistics from Parquet files split across rows."""
    caps = ENGINES[engine].capabilities
    if not caps.reads_files:
        with pytest.raises(cj.CjstatsError):
            build_stats(str(tmp_path / "*.parquet"), engine=engine)
        return
    if find_spec("pyarrow") is None:
        pytest.skip("writing Parquet needs pyarrow: pip install 'cjstats[parquet]'")
    frame = table("ragged")
    for i, part in enumerate(np.array_split(np.arange(len(frame)), 2)):
        frame.iloc[part].to_parquet(tmp_path / f"part-{i}.parquet", index=False)
    got = build_stats(str(tmp_path / "*.parquet"), engine=engine)
    assert_same_statistics(reference("ragged"), got, engine, scenario_judge=caps.scenario_judge)


def check_unit_model_refuses_a_criterion_table(engine: str) -> None:
    with pytest.raises(cj.CjstatsError, match=r"\('model',\) but the table has a 'criterion' column"):
        build_stats(source_for(engine, "balanced"), unit=("model",), engine=engine)


def check_refuses_undeclared_options(engine: str) -> None:
    with pytest.raises(cj.CjstatsError, match="not_an_option"):
        build_stats(source_for(engine, "balanced"), engine=engine, not_an_option=1)


def _with_covariates(name: str) -> pd.DataFrame:
    """Table ``name`` with two item covariates, one value per (model, scenario, generation) (the same for every
    judge and criterion), seeded."""
    f = table(name)
    keys = f[["model", "scenario", "generation"]].drop_duplicates().reset_index(drop=True)
    rng = np.random.default_rng(17)
    keys["length"] = 450 + 40 * (keys["model"] == "B") + rng.normal(0, 90, len(keys))
    keys["turns"] = rng.integers(1, 6, len(keys)).astype(float)
    return f.merge(keys, on=["model", "scenario", "generation"], how="left")


COVARIATES = ["length", "turns"]


def _numpy_covariates(name: str, unit: tuple[str, ...]) -> ScoreStats:
    key = ("cov", name, unit)
    if key not in _CACHE:   # the numpy engine's module itself, not the registry (as reference())
        per = import_module("cjstats.stats.engines.numpy_engine").build(_with_covariates(name),
                                                                        unit=("model", "criterion"),
                                                                        covariates=tuple(COVARIATES))
        if unit == ("criterion",):
            from cjstats.stats import stack_models

            crits = list(dict.fromkeys(u.criterion for u in per.units))
            per = dataclasses.replace(per, units=tuple(stack_models([u for u in per.units if u.criterion == c])
                                                       for c in crits), unit=unit)
        _CACHE[key] = per
    return _CACHE[key]


def check_covariate_statistics_equal_numpy(engine: str) -> None:
    """An engine that declares covariates builds the numpy engine's covariate statistics (each unit's, re-centred to
    the numpy engine's centring, and the joint view the slopes are fitted from) to 1e-12 relative; one that does
    not is refused in one sentence naming the engines that do."""
    caps = ENGINES[engine].capabilities
    src = _with_covariates("ragged")
    if not caps.covariates:
        with pytest.raises(cj.CjstatsError, match=f"engine='{engine}' does not build covariate statistics.*"
                                                  f"use engine='numpy'"):
            build_stats(src, engine=engine, covariates=COVARIATES)
        return
    got = build_stats(src, engine=engine, covariates=COVARIATES)
    for a, b in zip(_numpy_covariates("ragged", ("model", "criterion")), got):
        where = f"{engine}: unit ({a.model}, {a.criterion})"
        assert b.cov is not None and b.cov.names == a.cov.names, f"{where}: covariate statistics missing"
        b2 = b.recentre(a.shift)
        cb = b2.cov.recentre_x(a.cov.xshift, b2)
        for f in ("x_min", "x_max"):
            assert np.array_equal(getattr(a.cov, f), getattr(cb, f)), f"{where}: {f}"
        # centred sums can be near zero: compared on the scale of their terms (n_obs x covariate x score sizes)
        sx = float(np.max(np.maximum(np.abs(a.cov.x_max - a.cov.xshift), np.abs(a.cov.x_min - a.cov.xshift))))
        sy, h = float(np.sqrt(a.yy / a.n_obs)), float(a.sizes.max())
        for f, per in (("xd", sx), ("xxd", sx * sx), ("xy", sx * sy), ("dxd", sx * h * h), ("dxxd", sx * sx * h * h),
                       ("dxy", sx * h * h * sy), ("sxd", sx * h)):
            diff = float(np.max(np.abs(getattr(a.cov, f) - getattr(cb, f)), initial=0.0))
            assert diff <= RTOL * a.n_obs * per, f"{where}: cov.{f} differs by {diff:.3g}"
    joint = build_stats(src, unit=("criterion",), engine=engine, covariates=COVARIATES)
    for a, b in zip(_numpy_covariates("ragged", ("criterion",)), joint):
        sa, sb = a.for_joint_slopes(), b.for_joint_slopes()
        for f in ("means", "gram", "cell_aug", "group_aug"):
            assert _rel_close(getattr(sa, f), getattr(sb, f)), f"{engine}: for_joint_slopes().{f}"


def _check_ordinal_patterns(engine: str, name: str) -> None:
    caps = ENGINES[engine].capabilities
    src = cj.read_scores(ordinal_table(name)) if caps.takes_scores else ordinal_table(name)
    if "cumulative" not in caps.likelihoods:
        with pytest.raises(cj.CjstatsError, match=f"engine='{engine}' does not build the statistics of the "
                                                  f"cumulative likelihood"):
            build_stats(src, engine=engine, likelihood="cumulative")
        return
    ref = ordinal_reference(name)
    assert any(u.patterns is not None for u in ref.units), "the reference table has units with m = 1"
    got = build_stats(src, engine=engine, likelihood="cumulative")
    assert_same_statistics(ref, got, engine, scenario_judge=caps.scenario_judge)
    plain = build_stats(src, engine=engine)
    assert all(u.patterns is None for u in plain.units), f"{engine}: built per-pattern counts nobody asked for"


def check_balanced_ordinal_patterns_equal_numpy(engine: str) -> None:
    _check_ordinal_patterns(engine, "balanced")


def check_missing_call_ordinal_patterns_equal_numpy(engine: str) -> None:
    _check_ordinal_patterns(engine, "missing")


def check_ragged_ordinal_patterns_equal_numpy(engine: str) -> None:
    ref = ordinal_reference("ragged")
    assert [u.patterns is None for u in ref.units] == [False, True, False], "the ragged table's units (A/safe: m > 1)"
    _check_ordinal_patterns(engine, "ragged")


def check_ordinal_patterns_from_files_equal_numpy(engine: str, tmp_path: Any) -> None:
    """From Parquet files split across rows (scenarios in both files), the per-pattern counts are the same."""
    caps = ENGINES[engine].capabilities
    if not caps.reads_files or "cumulative" not in caps.likelihoods:
        return
    if find_spec("pyarrow") is None:
        pytest.skip("writing Parquet needs pyarrow: pip install 'cjstats[parquet]'")
    frame = ordinal_table("missing")
    for i, part in enumerate(np.array_split(np.random.default_rng(3).permutation(len(frame)), 3)):
        frame.iloc[np.sort(part)].to_parquet(tmp_path / f"part-{i}.parquet", index=False)
    got = build_stats(str(tmp_path / "*.parquet"), engine=engine, likelihood="cumulative")
    assert_same_statistics(ordinal_reference("missing"), got, engine, scenario_judge=caps.scenario_judge)


CHECKS = [
    check_balanced_ordinal_patterns_equal_numpy, check_missing_call_ordinal_patterns_equal_numpy,
    check_ragged_ordinal_patterns_equal_numpy, check_ordinal_patterns_from_files_equal_numpy,
    check_is_a_registered_engine, check_declared_options_are_the_build_options,
    check_balanced_statistics_equal_numpy, check_missing_call_statistics_equal_numpy,
    check_ragged_statistics_equal_numpy, check_joint_units_equal_numpy, check_reads_files_out_of_core,
    check_unit_model_refuses_a_criterion_table, check_refuses_undeclared_options,
    check_covariate_statistics_equal_numpy, check_a_model_without_a_term_gets_no_statistics_for_it,
    check_builds_every_terms_statistics,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_engine_contract(engine, check, request, tmp_path):
    missing = [p for p in ENGINES[engine].requires if find_spec(p) is None]
    if missing:
        pytest.skip(f"engine='{engine}' needs {', '.join(missing)}: pip install 'cjstats[{ENGINES[engine].extra}]'")
    reason = KNOWN_FAILURES.get((engine, check.__name__))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    if "tmp_path" in inspect.signature(check).parameters:
        check(engine, tmp_path)
    else:
        check(engine)


# ------------------------------------------------------------------------------------------ planted breakage
@dataclasses.dataclass(frozen=True)
class _Planted:
    """An engine that builds with the numpy engine and then breaks one rule of the contract."""

    tamper: Any
    name: str = "planted"
    capabilities: EngineCapabilities = ENGINES["numpy"].capabilities
    requires: tuple[str, ...] = ()
    extra: str = ""

    def build(self, source, *, unit=("model", "criterion"), terms=None, covariates=None, likelihood="gaussian"):
        st = import_module("cjstats.stats.engines.numpy_engine").build(source, unit=unit, terms=terms,
                                                                          covariates=covariates, likelihood=likelihood)
        return self.tamper(dataclasses.replace(st, engine=self.name))


def _map_units(st: ScoreStats, fn: Any) -> ScoreStats:
    return dataclasses.replace(st, units=tuple(fn(u) for u in st.units))


def _perturb_dy(st: ScoreStats) -> ScoreStats:
    """An error far above rounding but small: 1e-6 added to the judge x score sums (which are near 0 once
    centred, so a relative error would not move them)."""
    return _map_units(st, lambda u: dataclasses.replace(u, dy=u.dy + 1e-6))


def _perturb_ssw(st: ScoreStats) -> ScoreStats:
    """1e-9 relative on the within-cell sums of squares: a thousand times the tolerance."""
    return _map_units(st, lambda u: dataclasses.replace(u, ssw_s=u.ssw_s * (1 + 1e-9)))


def _drop_a_scenario_count(st: ScoreStats) -> ScoreStats:
    def fn(u):
        cnt = u.cnt_is.copy()
        cnt[0, 0] += 1
        return dataclasses.replace(u, cnt_is=cnt)
    return _map_units(st, fn)


def _forget_scenario_judge(st: ScoreStats) -> ScoreStats:
    return _map_units(st, lambda u: dataclasses.replace(u, sj=None))


def _perturb_scenario_judge(st: ScoreStats) -> ScoreStats:
    """1e-9 relative on the per-pattern scatter of the scenario x judge vectors z_i: a thousand times the
    tolerance (the patterns and counts are left right)."""
    return _map_units(st, lambda u: u if u.sj is None else dataclasses.replace(
        u, sj=dataclasses.replace(u.sj, zscat=u.sj.zscat * (1 + 1e-9))))


def _split_a_scenario_judge_pattern(st: ScoreStats) -> ScoreStats:
    """The scenarios of the first pattern counted one short (its sums unchanged)."""
    def fn(u):
        if u.sj is None:
            return u
        count = u.sj.count.copy()
        count[0] -= 1
        return dataclasses.replace(u, sj=dataclasses.replace(u.sj, count=count))
    return _map_units(st, fn)


def _miscount_a_pattern(st: ScoreStats) -> ScoreStats:
    """One scenario moved from the first pattern to the second (the patterns themselves left right)."""
    def fn(u):
        if u.patterns is None or u.patterns.count.size < 2:
            return u
        count = u.patterns.count.copy()
        count[0] -= 1
        count[1] += 1
        return dataclasses.replace(u, patterns=dataclasses.replace(u.patterns, count=count))
    return _map_units(st, fn)


def _misplace_a_first_scenario(st: ScoreStats) -> ScoreStats:
    """The first scenario of the last pattern one place later."""
    def fn(u):
        if u.patterns is None:
            return u
        first = u.patterns.first.copy()
        first[-1] += 1
        return dataclasses.replace(u, patterns=dataclasses.replace(u.patterns, first=first))
    return _map_units(st, fn)


def _forget_patterns(st: ScoreStats) -> ScoreStats:
    return _map_units(st, lambda u: dataclasses.replace(u, patterns=None))


def _wrong_engine_label(st: ScoreStats) -> ScoreStats:
    return dataclasses.replace(st, engine="numpy")


def _perturb_covariates(st: ScoreStats) -> ScoreStats:
    """1e-9 relative on the covariate x score products of every cell size: a thousand times the tolerance."""
    return _map_units(st, lambda u: u if u.cov is None else dataclasses.replace(
        u, cov=dataclasses.replace(u.cov, dxy=u.cov.dxy * (1 + 1e-9) + 1e-9)))


def _same(st: ScoreStats) -> ScoreStats:
    return st


class TestPlantedBrokenEngines:
    """Each planted engine breaks one rule; the check for that rule must fail on it (AssertionError)."""

    @pytest.mark.parametrize(("tamper", "caps", "check"), [
        (_perturb_dy, None, check_balanced_statistics_equal_numpy),
        (_perturb_dy, None, check_ragged_statistics_equal_numpy),
        (_perturb_ssw, None, check_missing_call_statistics_equal_numpy),
        (_perturb_ssw, None, check_joint_units_equal_numpy),
        (_drop_a_scenario_count, None, check_missing_call_statistics_equal_numpy),
        (_forget_scenario_judge, None, check_balanced_statistics_equal_numpy),
        (_forget_scenario_judge, None, check_ragged_statistics_equal_numpy),
        (_perturb_scenario_judge, None, check_balanced_statistics_equal_numpy),
        (_perturb_scenario_judge, None, check_missing_call_statistics_equal_numpy),
        (_perturb_scenario_judge, None, check_ragged_statistics_equal_numpy),
        (_perturb_scenario_judge, None, check_joint_units_equal_numpy),
        (_split_a_scenario_judge_pattern, None, check_missing_call_statistics_equal_numpy),
        (_wrong_engine_label, None, check_balanced_statistics_equal_numpy),
        (_same, {"options": ("threads",)}, check_declared_options_are_the_build_options),
        (_same, {"in_memory": False}, check_is_a_registered_engine),
        (_perturb_covariates, None, check_covariate_statistics_equal_numpy),
        (_same, {"covariates": False}, check_declared_options_are_the_build_options),
        (_same, {"scenario_judge": False}, check_declared_options_are_the_build_options),
        (_forget_scenario_judge, {"scenario_judge": False}, check_builds_every_terms_statistics),
        (_miscount_a_pattern, None, check_balanced_ordinal_patterns_equal_numpy),
        (_miscount_a_pattern, None, check_missing_call_ordinal_patterns_equal_numpy),
        (_misplace_a_first_scenario, None, check_ragged_ordinal_patterns_equal_numpy),
        (_forget_patterns, None, check_missing_call_ordinal_patterns_equal_numpy),
        (_same, {"likelihoods": ("gaussian",)}, check_declared_options_are_the_build_options),
    ], ids=lambda v: getattr(v, "__name__", None) if callable(v) else None)
    def test_a_broken_engine_fails_the_check(self, monkeypatch, tamper, caps, check):
        planted = _Planted(tamper, capabilities=dataclasses.replace(ENGINES["numpy"].capabilities, **(caps or {})))
        monkeypatch.setitem(ENGINES, "planted", planted)
        with pytest.raises(AssertionError):
            check("planted")

    def test_the_planted_engine_passes_when_it_breaks_nothing(self, monkeypatch):
        monkeypatch.setitem(ENGINES, "planted", _Planted(_same))
        for check in (check_is_a_registered_engine, check_declared_options_are_the_build_options,
                      check_balanced_statistics_equal_numpy, check_missing_call_statistics_equal_numpy,
                      check_ragged_statistics_equal_numpy, check_joint_units_equal_numpy,
                      check_covariate_statistics_equal_numpy, check_balanced_ordinal_patterns_equal_numpy,
                      check_missing_call_ordinal_patterns_equal_numpy, check_ragged_ordinal_patterns_equal_numpy):
            check("planted")

    def test_build_stats_dispatches_through_the_registry(self, monkeypatch):
        seen = []

        def spy(st: ScoreStats) -> ScoreStats:
            seen.append(st.unit)
            return st

        monkeypatch.setitem(ENGINES, "planted", _Planted(spy))
        build_stats(table("balanced"), engine="planted")
        build_stats(table("balanced"), unit=("criterion",), engine="planted")
        assert seen == [("model", "criterion"), ("model", "criterion")]   # joint units are stacked from these
        fit = cj.estimate(table("balanced"), "anova", engine="planted")   # an in-memory engine keeps the rows
        assert fit.components.equals(cj.estimate(table("balanced"), "anova").components)
