"""One copy of the input rules (cjstats.io.rules), applied the same way by every route.

The same odd tables (synonym column names, True/False scores, non-numeric scores, a missing column, a wide
table, a bad ``columns=`` mapping) go through the pandas route (``read_scores``) and the DuckDB route
(``build_stats(..., engine="duckdb")``), from a DataFrame and from CSV and Parquet files: they must give the
same mapping and the same sentence, so a route that drifts from the rules fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.exceptions import CjstatsError
from cjstats.io import rules
from cjstats.stats import build_stats

pytest.importorskip("duckdb")

ROOT = Path(cj.__file__).resolve().parent


def _table(n_scen: int = 4, judges: tuple[str, ...] = ("j1", "j2", "j3"), seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [(m, f"s{s}", g, j) for m in ("a", "b") for s in range(n_scen) for g in range(2) for j in judges]
    df = pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge"])
    df["score"] = rng.integers(1, 10, len(df)).astype(float)
    return df


def _message(fn) -> str:
    with pytest.raises(CjstatsError) as info:
        fn()
    return str(info.value)


def _as(kind: str, df: pd.DataFrame, tmp_path: Path):
    """The table as a DataFrame or written to a file of ``kind`` (text files hold every value as text)."""
    if kind == "frame":
        return df
    path = tmp_path / f"scores.{kind}"
    if kind == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    return str(path)


def _both(source, **kw) -> tuple[str, str]:
    """The sentence of the pandas route and of the DuckDB route for one source."""
    pandas_msg = _message(lambda: cj.read_scores(source, **kw))
    duck_msg = _message(lambda: build_stats(source, engine="duckdb", **kw))
    return pandas_msg, duck_msg


KINDS = ["frame", "csv", "parquet"]


# ------------------------------------------------------------------------------------- the one table
def test_the_rules_live_in_one_module():
    """The synonym table, the file kinds and the NA strings are written once, in cjstats/io/rules.py."""
    needles = ['"rater", "annotator", "evaluator"', '".csv.gz": "csv"', '"#N/A N/A"', r'-?(?:0|[1-9][0-9]*)']
    for needle in needles:
        homes = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if needle in p.read_text())
        assert homes == ["io/rules.py"], (needle, homes)
    from cjstats.stats.engines import _source

    for name in ("SYNONYMS", "KINDS", "NA_STRINGS", "suggest_mapping", "msg_missing_column"):
        assert not hasattr(_source, name), f"stats/engines/_source.py keeps its own {name}"


def test_suggest_mapping_reads_the_synonyms_case_insensitively():
    found = ["Rater", "ITEM", "sample_id", "rating", "system", "other"]
    assert rules.suggest_mapping(["judge", "scenario", "generation", "score", "model"], found) == {
        "Rater": "judge", "ITEM": "scenario", "sample_id": "generation", "rating": "score", "system": "model"}
    assert rules.suggest_mapping(["judge"], ["who"]) == {}
    # the first synonym in the table wins
    assert rules.suggest_mapping(["scenario"], ["task", "item"]) == {"item": "scenario"}


def test_wide_pattern_and_file_kind():
    assert rules.wide_pattern({"model": False, "score_a": True, "score_b": True}) == "score_*"
    assert rules.wide_pattern({"model": False, "score_a": True, "score_b": False}) is None
    assert rules.wide_pattern({"x-a": True, "x-b": True, "score_a": True, "score_b": True}) == "score_*"
    assert rules.file_kind("a/b.CSV.gz") == "csv" and rules.file_kind("x.ndjson") == "jsonl"
    with pytest.raises(CjstatsError, match=r"^Unknown file type of `x.xlsx`: read_scores reads .*\(or pass"):
        rules.file_kind("x.xlsx")


# ------------------------------------------------------------------------------- the two routes agree
@pytest.mark.parametrize("kind", KINDS)
def test_synonym_columns_same_sentence_and_same_mapping(kind, tmp_path):
    df = _table().rename(columns={"judge": "rater", "scenario": "item", "score": "rating", "model": "system"})
    source = _as(kind, df, tmp_path)
    pandas_msg, duck_msg = _both(source)
    assert pandas_msg == duck_msg
    mapping = rules.suggest_mapping(["model", "scenario", "judge", "score"], list(df.columns))
    assert mapping == {"system": "model", "item": "scenario", "rater": "judge", "rating": "score"}
    assert pandas_msg == (f"scores has no column 'model' (found: system, item, generation, rater, rating). "
                          f"Map yours with read_scores(path, columns={mapping!r}).")
    # the suggested mapping reads the table the same way through both routes
    mem = build_stats(cj.read_scores(source, columns=mapping))
    out = build_stats(source, engine="duckdb", columns=mapping)
    pd.testing.assert_frame_equal(mem.design, out.design)
    ref = build_stats(_table())
    pd.testing.assert_frame_equal(mem.design, ref.design)
    for a, b in zip(mem, out):
        np.testing.assert_allclose(a.dd, b.dd, rtol=1e-12, atol=0)
        np.testing.assert_allclose(a.yyc, b.yyc, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_missing_column_without_a_synonym(kind, tmp_path):
    source = _as(kind, _table().rename(columns={"judge": "who"}), tmp_path)
    pandas_msg, duck_msg = _both(source)
    assert pandas_msg == duck_msg == ("scores has no column 'judge' (found: model, scenario, generation, who, "
                                      "score). Map yours with read_scores(path, columns={'<your column>': 'judge'}).")


@pytest.mark.parametrize("kind", KINDS)
def test_bool_scores(kind, tmp_path):
    df = _table()
    df["score"] = df["score"] > 5
    source = _as(kind, df, tmp_path)
    # in memory True/False are verdicts, read as 1/0 with one warning (issue 22); DuckDB reads numbers only
    with pytest.warns(UserWarning, match="holds verdicts, read as"):
        scores = cj.read_scores(source)
    assert sorted(scores.to_frame()["score"].unique()) == [0.0, 1.0]
    duck_msg = _message(lambda: build_stats(source, engine="duckdb"))
    assert duck_msg.startswith("Column 'score' holds True/False values")
    assert "the out-of-core engines read numbers only" in duck_msg


@pytest.mark.parametrize("kind", KINDS)
def test_non_numeric_scores(kind, tmp_path):
    df = _table()
    df["score"] = df["score"].astype(object)
    df.loc[5, "score"] = "n/a?"
    df.loc[9, "score"] = "bad"
    if kind == "parquet":
        df["score"] = df["score"].astype(str)
    pandas_msg, duck_msg = _both(_as(kind, df, tmp_path))
    assert pandas_msg == duck_msg
    where = "line 7" if kind == "csv" else "row 5"
    assert pandas_msg == (f"Column 'score' has 2 non-numeric values (first: 'n/a?' in {where}). "
                          f"Drop or recode them before read_scores().")


@pytest.mark.parametrize("kind", KINDS)
def test_wide_table_is_told_to_use_judge_columns(kind, tmp_path):
    long = _table()
    wide = long.pivot_table(index=["model", "scenario", "generation"], columns="judge", values="score").reset_index()
    wide.columns = [c if c in ("model", "scenario", "generation") else f"score_{c}" for c in wide.columns]
    source = _as(kind, wide, tmp_path)
    pandas_msg, duck_msg = _both(source)
    assert pandas_msg == duck_msg == ("scores has no column 'judge' or 'score' but one score column per judge "
                                      "(found: model, scenario, generation, score_j1, score_j2, score_j3); read the "
                                      "wide table with read_scores(path, judge_columns='score_*').")
    # and the advice works
    assert len(cj.read_scores(source, judge_columns="score_*")) == len(long)


@pytest.mark.parametrize("kind", ["frame", "csv"])
@pytest.mark.parametrize("columns, expected", [
    ({"who": "judge"}, "columns maps 'who', but scores has no column 'who' (found: model, scenario, generation, "
                       "judge, score)."),
    ({"model": "judge"}, "columns maps 'model' to 'judge', but scores already has a column 'judge'; drop one of the "
                         "two columns, or map 'judge' to another name as well."),
    ({"model": "x", "judge": "x"}, "columns maps both 'model' and 'judge' to 'x'; map one column to each name."),
    (["judge"], "The 'columns' argument of read_scores must be a mapping such as {'rater': 'judge'}."),
])
def test_bad_mapping_same_sentence(kind, columns, expected, tmp_path):
    pandas_msg, duck_msg = _both(_as(kind, _table(), tmp_path), columns=columns)
    assert pandas_msg == duck_msg == expected


@pytest.mark.parametrize("kind", KINDS)
def test_missing_ids_and_nan_scores(kind, tmp_path):
    df = _table()
    df["judge"] = df["judge"].astype(object)
    df.loc[3, "judge"] = None
    pandas_msg, duck_msg = _both(_as(kind, df, tmp_path))
    assert pandas_msg == duck_msg
    assert re.fullmatch(r"Column 'judge' has 1 missing values \(first in (row 3|line 5)\)\. Fill or drop them "
                        r"before read_scores\(\)\.", pandas_msg)
    df = _table()
    df.loc[4, "score"] = np.nan
    pandas_msg, duck_msg = _both(_as(kind, df, tmp_path))
    assert pandas_msg == duck_msg
    assert pandas_msg.startswith("Column 'score' has 1 missing (NaN) values")
