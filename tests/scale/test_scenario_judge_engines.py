"""The scenario x judge term out of core: the DuckDB and Dask engines build its statistics, so the same call fits
the same model, with the same numbers, on every engine.

``cj.estimate(glob, "reml", engine=...)`` on tables with m >= 2 generations (so the term is identifiable and fitted
by default) gives the in-memory fit's components, every column to 1e-10 relative, and no warning about the term.
The statistics themselves are compared to the numpy engine's to 1e-12 by the engine conformance suite
(tests/conformance/test_engine_conformance.py) and by ``_scale_helpers.assert_stats_equal``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.stats import build_stats

from _scale_helpers import assert_stats_equal, rel_close, sim

pytest.importorskip("pyarrow")
E2E_RTOL = 1e-10


def _tables() -> dict[str, pd.DataFrame]:
    ragged = sim(24, 3, 4, 22, "B", missing=0.1)
    ragged = ragged[~((ragged["scenario"] % 3 == 0) & (ragged["generation"] == 2))]
    return {"balanced": pd.concat([sim(30, 2, 4, 21, "A"), sim(25, 2, 5, 23, "C")], ignore_index=True),
            "missing_ragged": pd.concat([sim(30, 2, 4, 24, "A", missing=0.15), ragged], ignore_index=True)}


def _write_parts(frame: pd.DataFrame, folder, n_parts: int = 3) -> str:
    """Shuffled rows in ``n_parts`` Parquet files (cells and scenarios span files); returns the glob."""
    shuffled = frame.sample(frac=1.0, random_state=3).reset_index(drop=True)
    for i, idx in enumerate(np.array_split(np.arange(len(shuffled)), n_parts)):
        shuffled.iloc[idx].to_parquet(folder / f"part-{i}.parquet", index=False)
    return str(folder / "*.parquet")


def _fit_without_term_warnings(source, **kw):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fit = cj.estimate(source, "reml", **kw)
    said = [str(w.message) for w in seen if "scenario_judge" in str(w.message) or "scenario x judge" in str(w.message)]
    assert not said, said
    return fit


def _assert_same_fit(a, b) -> None:
    ca, cb = a.components, b.components
    assert ca[["model", "component"]].equals(cb[["model", "component"]])
    assert "scenario_judge" in set(ca["component"])
    est = ca.set_index(["model", "component"])["estimate"]
    assert np.isfinite(est.xs("scenario_judge", level="component")).all()   # fitted, not left in the residual
    for col in ("estimate", "std_error", "lower", "upper"):
        for x, y in zip(ca[col].to_numpy(float), cb[col].to_numpy(float)):
            assert rel_close([x], [y], E2E_RTOL), (col, x, y)
    assert a.formula == b.formula


@pytest.mark.parametrize("name", sorted(_tables()))
@pytest.mark.parametrize("engine", ["duckdb", "dask"])
def test_estimate_from_a_parquet_glob_fits_the_in_memory_model(engine, name, tmp_path):
    pytest.importorskip(engine)
    frame = _tables()[name]
    glob = _write_parts(frame, tmp_path)
    _assert_same_fit(cj.estimate(frame, "reml"), _fit_without_term_warnings(glob, engine=engine))


@pytest.mark.parametrize("engine", ["duckdb", "dask"])
def test_a_model_without_the_term_builds_no_statistics_for_it(engine):
    pytest.importorskip(engine)
    frame = _tables()["balanced"]
    st = build_stats(frame, engine=engine, terms=("scenario", "generation"))
    assert all(u.sj is None for u in st)
    a = cj.estimate(frame, "reml", scenario_judge=False).components
    b = cj.estimate(frame, "reml", engine=engine, scenario_judge=False).components
    for col in ("estimate", "std_error"):
        assert rel_close(a[col].to_numpy(float), b[col].to_numpy(float), E2E_RTOL), col


def test_dask_partitions_that_lack_a_judge_or_identify_nothing_still_merge_to_the_numpy_statistics():
    """Partitions hold whole scenarios (the shuffle), but one may hold only single-generation scenarios (it
    identifies no scenario x judge variance) or lack a judge: each still builds its statistics, which merge with the
    others' judges placed among the unit's."""
    dd = pytest.importorskip("dask.dataframe")
    frame = sim(40, 2, 4, 7, "A", missing=0.1)
    frame = frame[~((frame["scenario"] < 30) & (frame["generation"] == 1))]   # scenarios 0-29: one generation
    frame = frame[~((frame["scenario"] < 30) & (frame["judge"] == "judge_3"))].reset_index(drop=True)
    got = build_stats(dd.from_pandas(frame, npartitions=8), engine="dask")
    assert_stats_equal(build_stats(frame), got)
    assert got.units[0].sj is not None


@pytest.mark.parametrize("engine", ["duckdb", "dask"])
def test_string_generations_keep_the_numpy_engines_cell_order(engine):
    """Tied cells (the same judge calls) take their place in a scenario by generation label, as in memory: with
    g0..g11 as text, g10 sorts before g2."""
    pytest.importorskip(engine)
    frame = sim(20, 12, 4, 3, "A", missing=0.3).assign(generation=lambda d: "g" + d["generation"].astype(str),
                                                      scenario=lambda d: "s" + d["scenario"].astype(str))
    assert_stats_equal(build_stats(frame), build_stats(frame, engine=engine))
