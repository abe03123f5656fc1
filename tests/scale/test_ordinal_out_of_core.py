"""The maximum-likelihood ordinal fit out of core (issue 34): from the per-pattern counts the DuckDB and Dask
engines build, equal to the in-memory fit.

With one generation per scenario the counts of the distinct (judge -> category) patterns are sufficient for the
likelihood, and the fit builds the same compressed problem from them as from the rows (same patterns, order, rows,
weights and start), so the out-of-core fit is the in-memory one: every component, interval, offset and the
parameter covariance agree to 1e-10 relative (in practice bit for bit). With several generations per scenario the
nested generation model needs the rows: refused out of core in one sentence naming the engine and what to do.
"""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.studies.simulate import simulate_ordinal_scores

pytest.importorskip("duckdb")

RTOL = 1e-10
COLS = ("estimate", "std_error", "lower", "upper")


def _table(m: int = 1) -> pd.DataFrame:
    """Two models and two criteria of 1-5 scores, 4 judges (3 in one unit), about 12% of the calls lost."""
    parts = []
    for i, (model, crit, k) in enumerate((("a", "clarity", 4), ("b", "clarity", 4), ("a", "safety", 3))):
        d = simulate_ordinal_scores(120, m, k, s2a=0.8, s2b=0.3, gamma=np.linspace(-0.4, 0.4, k),
                                    cuts=np.array([-1.2, -0.3, 0.5, 1.3]), seed=40 + i, model=model, link="probit")
        parts.append(d.assign(criterion=crit))
    df = pd.concat(parts, ignore_index=True)
    keep = np.random.default_rng(5).random(len(df)) > 0.12
    df = df[keep].reset_index(drop=True)
    return df if m > 1 else df.drop(columns="generation")


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    a, b = np.nan_to_num(a), np.nan_to_num(b)
    return bool(np.all(np.abs(a - b) <= RTOL * np.maximum(np.abs(a), 1e-300) + 1e-300))


def assert_same_fit(a: cj.VarianceComponents, b: cj.VarianceComponents) -> None:
    keys = ["model", "criterion", "component"]
    assert a.components[keys].equals(b.components[keys])
    for col in COLS:
        assert _close(a.components[col], b.components[col]), f"components.{col}"
    assert a.components["identifiable"].equals(b.components["identifiable"])
    assert a.judge_offsets[["model", "criterion", "judge"]].equals(b.judge_offsets[["model", "criterion", "judge"]])
    for col in COLS:
        assert _close(a.judge_offsets[col], b.judge_offsets[col]), f"judge_offsets.{col}"
    for g in a.diagnostics:
        assert _close(a.diagnostics[g]["x"], b.diagnostics[g]["x"]), f"{g}: optimiser vector"
        assert a.diagnostics[g]["n_scenarios"] == b.diagnostics[g]["n_scenarios"]
        assert _close(a.covariance[g].frame().to_numpy(), b.covariance[g].frame().to_numpy()), f"{g}: covariance"


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return _table()


@pytest.fixture(scope="module")
def in_memory(frame) -> cj.VarianceComponents:
    return cj.estimate(frame, "ordinal")


def _parquet(frame: pd.DataFrame, folder, parts: int = 3) -> str:
    if find_spec("pyarrow") is None:
        pytest.skip("writing Parquet needs pyarrow: pip install 'cjstats[parquet]'")
    order = np.random.default_rng(2).permutation(len(frame))   # a scenario's calls in several files
    for i, idx in enumerate(np.array_split(order, parts)):
        frame.iloc[np.sort(idx)].to_parquet(folder / f"part-{i}.parquet", index=False)
    return str(folder / "*.parquet")


def test_duckdb_parquet_glob_equals_the_in_memory_fit(frame, in_memory, tmp_path):
    fit = cj.estimate(_parquet(frame, tmp_path), "ordinal", engine="duckdb")
    assert_same_fit(in_memory, fit)


def test_duckdb_csv_file_equals_the_in_memory_fit(frame, in_memory, tmp_path):
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    fit = cj.estimate(str(path), "ordinal", engine="duckdb")
    assert_same_fit(in_memory, fit)


@pytest.mark.parametrize("options", [{"link": "logit", "interval": "profile"}, {"thresholds": "judge"}],
                         ids=["logit-profile", "judge-thresholds"])
def test_duckdb_statistics_with_other_options_equal_the_in_memory_fit(frame, options):
    frame = frame[(frame["model"] == "a") & (frame["criterion"] == "clarity")]   # one unit: profiles are slower
    st = cj.stats.build_stats(frame, engine="duckdb", likelihood="cumulative")
    assert_same_fit(cj.estimate(frame, "ordinal", **options), cj.estimate(st, "ordinal", **options))


def test_a_separated_judge_out_of_core_equals_the_in_memory_fit(frame):
    """A judge that gives every item the top score is left out (its offset +inf) from the counts as from rows."""
    sep = frame[frame["model"] == "a"].copy()
    sep.loc[sep["judge"] == "j0", "score"] = 5
    with pytest.warns(cj.CjstatsWarning):
        a = cj.estimate(sep, "ordinal")
    with pytest.warns(cj.CjstatsWarning):
        b = cj.estimate(sep, "ordinal", engine="duckdb")
    assert_same_fit(a, b)


def test_dask_local_cluster_equals_the_in_memory_fit(frame, in_memory, tmp_path):
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("dask.dataframe")
    glob = _parquet(frame, tmp_path)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        fit = cj.estimate(glob, "ordinal", engine="dask")
    assert_same_fit(in_memory, fit)


def test_several_generations_out_of_core_are_refused_in_one_sentence():
    df = _table(m=2)
    for opts in ({}, {"generation": False}):
        with pytest.raises(cj.CjstatsError, match=r"several generations per scenario \(up to 2\).*needs the score "
                                                  r"rows, which engine='duckdb' does not load.*engine='numpy'"):
            cj.estimate(df, "ordinal", engine="duckdb", **opts)
    # in memory the rows are given where a unit has several generations (and the fit is the rows' fit)
    fit = cj.estimate(df, "ordinal")
    assert fit.components.loc[fit.components["component"] == "generation", "identifiable"].all()


def test_can_fit_answers_from_the_declarations():
    default = cj.Model(likelihood="cumulative", link="probit", terms=("scenario", "generation"))
    assert cj.can_fit("ordinal", default, engine="duckdb") == (True, "")
    assert cj.can_fit("ordinal", default, engine="dask") == (True, "")
    required = cj.Model(likelihood="cumulative", link="probit", terms=("scenario", "generation"), auto=())
    ok, why = cj.can_fit("ordinal", required, engine="duckdb")
    assert not ok and "from the score rows, which engine='duckdb' does not load" in why and "'numpy'" in why
    assert cj.can_fit("ordinal", required, engine="numpy") == (True, "")
    assert cj.can_fit("ordinal", cj.Model(likelihood="cumulative", link="logit", terms=("scenario",)),
                      engine="duckdb") == (True, "")


def test_statistics_without_the_counts_say_how_to_build_them(frame):
    st = cj.stats.build_stats(frame, engine="duckdb")
    with pytest.raises(cj.CjstatsError, match=r"per-pattern counts.*likelihood='cumulative'"):
        cj.estimate(st, "ordinal")
