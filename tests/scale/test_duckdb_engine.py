"""The DuckDB engine: the same statistics and fits as the numpy engine, read_scores' messages, bounded memory.

The statistics compared include the scenario x judge sums (``CellStats.sj``, ``_scale_helpers.assert_stats_equal``);
the fits here are of the paper's model (``scenario_judge=False``), and the fits with the term, from a glob, are in
tests/scale/test_scenario_judge_engines.py. Equality is to 1e-12 relative (rounding: DuckDB adds the same numbers in another order), every column of the
fits included: REML's standard errors come from the analytic Hessian of the REML criterion (measured: 8e-14
per value), and its profile intervals from root searches that take the same steps (measured: 1.6e-13).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.exceptions import CjstatsError
from cjstats.stats import build_stats

from _scale_helpers import RTOL, TABLES, assert_stats_equal, rel_close, sim

pytest.importorskip("duckdb")


def _parquet_parts(frame: pd.DataFrame, folder, n_parts: int = 2) -> list:
    """The table as ``n_parts`` Parquet files split by row blocks (so cells and scenarios span files)."""
    paths = []
    for i, part in enumerate(np.array_split(np.arange(len(frame)), n_parts)):
        p = folder / f"part-{i}.parquet"
        frame.iloc[part].to_parquet(p, index=False)
        paths.append(p)
    return paths


# ------------------------------------------------------------------------------------------ equality
def test_statistics_equal_the_numpy_engine_from_a_dataframe(table):
    name, frame = table
    assert_stats_equal(build_stats(frame), build_stats(frame, engine="duckdb"))


def test_statistics_equal_the_numpy_engine_from_a_glob_of_parquet_files(table, tmp_path):
    name, frame = table
    _parquet_parts(frame.sample(frac=1.0, random_state=0), tmp_path, n_parts=3)  # shuffled rows, three files
    assert_stats_equal(build_stats(frame), build_stats(str(tmp_path / "*.parquet"), engine="duckdb"))


def test_unit_model_only_equals_the_numpy_engine_and_refuses_criteria(tmp_path):
    frame = TABLES["unbalanced"]()
    assert_stats_equal(build_stats(frame, unit=("model",)), build_stats(frame, unit=("model",), engine="duckdb"))
    with pytest.raises(CjstatsError, match="is \\('model',\\) but the table has a 'criterion'"):
        build_stats(TABLES["criteria"](), unit=("model",), engine="duckdb")


def test_more_judges_than_one_mask_word_holds(tmp_path):
    """70 judges need two 62-bit mask words; missing calls make many masks (80 cells keep the judge design
    well conditioned: with 12 cells, within_cell_rss's pseudo-inverse turns rounding into 1e-5 differences)."""
    frame = sim(40, 2, 70, 11, "A", missing=0.1)
    assert_stats_equal(build_stats(frame), build_stats(frame, engine="duckdb"))


def test_a_callers_connection_is_used_and_left_as_it_was():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = true")
    frame = TABLES["balanced"]()
    assert_stats_equal(build_stats(frame), build_stats(frame, engine="duckdb", connection=con))
    assert con.execute("SELECT current_setting('enable_progress_bar')").fetchall()[0][0] is True
    con.close()


def test_csv_and_jsonl_files_give_the_same_statistics(tmp_path):
    frame = TABLES["unbalanced"]()
    frame.to_csv(tmp_path / "s.csv", index=False)
    # integer scores in the JSONL: pandas.read_json parses decimals with a fast, not correctly rounded parser
    frame.assign(score=frame["score"].round()).to_json(tmp_path / "s.jsonl", orient="records", lines=True)
    for name in ("s.csv", "s.jsonl"):  # reference: read_scores of the same file (to_json keeps 10 digits)
        ref = build_stats(cj.read_scores(tmp_path / name))
        assert_stats_equal(ref, build_stats(tmp_path / name, engine="duckdb"))


def _compare_fits(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert a[["model", "component"]].equals(b[["model", "component"]])
    for col in ("estimate", "raw_estimate", "std_error", "lower", "upper"):
        for x, y in zip(a[col].to_numpy(float), b[col].to_numpy(float)):
            assert rel_close([x], [y], RTOL), (col, x, y)


@pytest.mark.parametrize("name", ["balanced", "unbalanced"])
def test_fitted_components_equal_the_in_memory_fit(name, tmp_path):
    frame = TABLES[name]()
    _parquet_parts(frame, tmp_path)
    glob = str(tmp_path / "*.parquet")
    if name == "balanced":
        _compare_fits(cj.estimate(frame, "anova", scenario_judge=False).components,
                      cj.estimate(glob, "anova", engine="duckdb", scenario_judge=False).components)
    _compare_fits(cj.estimate(frame, "reml", scenario_judge=False).components,
                  cj.estimate(glob, "reml", engine="duckdb", scenario_judge=False).components)


def test_estimate_fits_from_statistics_already_built():
    frame = TABLES["balanced"]()
    st = build_stats(frame, engine="duckdb")
    _compare_fits(cj.estimate(frame, "anova", scenario_judge=False).components,
                  cj.estimate(st, "anova", scenario_judge=False).components)


def test_options_that_need_rows_are_refused_with_an_engine():
    with pytest.raises(CjstatsError, match="needs the score rows, which engine='duckdb' does not load"):
        cj.estimate(TABLES["balanced"](), "reml", engine="duckdb", path="statsmodels")


# --------------------------------------------------------------------------------- bad input: twins
def _base() -> pd.DataFrame:
    return pd.DataFrame({"model": ["a"] * 6, "scenario": ["s1", "s1", "s2", "s2", "s3", "s3"],
                         "generation": ["g"] * 6, "judge": ["j1", "j2"] * 3, "score": [1.0, 2, 3, 4, 5, 6]})


def _with(col: str, values: list) -> pd.DataFrame:
    df = _base()
    df[col] = pd.Series(values, dtype=object) if any(isinstance(v, str) for v in values) or None in values \
        else values
    return df


BAD = {
    "missing_column": lambda: _base().drop(columns="judge").rename(columns={"scenario": "item"}),
    "empty": lambda: _base().iloc[:0],
    "missing_scenario": lambda: _with("scenario", ["s1", "s1", None, "s2", None, "s3"]),
    "missing_judge": lambda: _with("judge", ["j1", "j2", "j1", None, "j1", "j2"]),
    "non_numeric_score": lambda: _with("score", ["1", "2", "x", "4", "y", "6"]),
    "nan_score": lambda: _with("score", [1.0, 2.0, np.nan, 4.0, 5.0, np.nan]),
    "inf_score": lambda: _with("score", [1.0, np.inf, 3.0, 4.0, 5.0, 6.0]),
    "bool_score": lambda: _with("score", [True, False] * 3),
    "duplicates": lambda: _with("judge", ["j1", "j1", "j1", "j2", "j2", "j2"]),
}


def _message(fn) -> str:
    with pytest.raises(CjstatsError) as info:
        fn()
    return str(info.value)


def _write(frame: pd.DataFrame, path) -> None:
    """The table as a Parquet, CSV, TSV or JSONL file, by the suffix of ``path``."""
    kind = str(path).rsplit(".", 1)[-1]
    if kind == "parquet":
        frame.to_parquet(path, index=False)
    elif kind in ("csv", "tsv"):
        frame.to_csv(path, index=False, sep="," if kind == "csv" else "\t")
    else:
        frame.to_json(path, orient="records", lines=True)


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("as_file", ["dataframe", "parquet", "csv", "tsv", "jsonl"])
def test_every_read_scores_message_has_its_duckdb_twin(case, as_file, tmp_path):
    if case == "bool_score":   # in memory True/False are verdicts, read as 1/0 (issue 22); DuckDB: numbers only
        pytest.skip("read_scores maps True/False verdicts to 1/0; the DuckDB engine refuses them "
                    "(test_a_text_file_names_lines_as_read_scores_does)")
    frame = BAD[case]()
    source = frame if as_file == "dataframe" else tmp_path / f"scores.{as_file}"
    if as_file != "dataframe":
        _write(frame, source)
    expected = _message(lambda: build_stats(cj.read_scores(source)))
    assert _message(lambda: build_stats(source, engine="duckdb")) == expected


def test_a_text_file_names_lines_as_read_scores_does(tmp_path):
    """CSV: line 1 is the header; True/False scores are text there, named as True/False (issue 24), with the
    count and the first line, as read_scores names them."""
    source = tmp_path / "s.csv"
    BAD["bool_score"]().to_csv(source, index=False)
    msg = _message(lambda: build_stats(source, engine="duckdb"))
    assert msg == ("Column 'score' holds True/False values (6, first: 'True' in line 2); recode them as numbers "
                   "(True = 1, False = 0) before read_scores(): the out-of-core engines read numbers only (in "
                   "memory they are mapped so).")
    with pytest.warns(UserWarning, match="holds verdicts, read as True = 1, False = 0"):   # issue 22
        assert sorted(set(cj.read_scores(source).to_frame()["score"])) == [0.0, 1.0]
    BAD["duplicates"]().to_csv(source, index=False)
    assert "in lines 2 and 3)" in _message(lambda: build_stats(source, engine="duckdb"))


@pytest.mark.parametrize("text", [
    "model,scenario,generation,judge,score\na,s1,g,j1,1\n\na,s1,g,j2,x\n",          # blank line: rows, as read_scores
    'model,scenario,generation,judge,score\na,"s\n1",g,j1,1\na,s2,g,j2,NAN\n',     # quoted line break: rows
    "model;scenario;generation;judge;score\na;s1;g;j1;1,5\na;s1;g;j2; inf \n",      # ';' and decimal commas
    "model,scenario,generation,judge,score\na, s1,g,j1,1_000\na,s1,g,j2,+-1\n",     # pandas refuses these numbers
    "model,scenario,generation,judge,score\na,1.1,g,j1,1\na,1.10,g,j1,2\na,1.1,g,j1,3\n",  # 1.1 and 1.10: labels
    "model,scenario,generation,judge,score\na,7,g,j1,1\na,007,g,j1,2\na,7,g,j1,3\n",       # 007 is not 7
    "model,scenario,generation,judge,score\na,7,0,j1,1\na,8,0,j1,2\na,7,0,j1,3\n",         # integers
    "model,scenario,generation,judge,score\na,s1,g,j1,1\na,s1,g,j2, nan\n",                # ' nan' is missing
    "model,scenario,generation,judge,score\na,s1,g,j1,1\na, NA,g,j2,2\n",                  # so is ' NA'
    "model,scenario,generation,judge,score\na,s1,g,j1,NAN\na,s1,g,j2,inf \n",              # to_numeric refuses
])
def test_text_edge_cases_give_read_scores_message(text, tmp_path):
    source = tmp_path / "s.csv"
    source.write_text(text)
    assert _message(lambda: build_stats(source, engine="duckdb")) == \
        _message(lambda: build_stats(cj.read_scores(source)))


def test_a_jsonl_line_counts_blank_lines(tmp_path):
    source = tmp_path / "s.jsonl"
    rows = [{"model": "a", "scenario": "s1", "generation": "g", "judge": "j1", "score": 1},
            {"model": "a", "scenario": "s1", "generation": "g", "judge": "j2", "score": "x"}]
    import json
    source.write_text(json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n")
    msg = _message(lambda: build_stats(source, engine="duckdb"))
    assert msg == _message(lambda: build_stats(cj.read_scores(source)))
    assert "'x' in line 3)" in msg


@pytest.mark.parametrize("kind", ["csv", "tsv", "jsonl"])
def test_a_bad_line_in_the_second_text_file_names_that_file(kind, tmp_path):
    _write(_base(), tmp_path / f"a.{kind}")
    _write(BAD["nan_score"](), tmp_path / f"b.{kind}")
    msg = _message(lambda: build_stats(str(tmp_path / f"*.{kind}"), engine="duckdb"))
    expected = _message(lambda: build_stats(cj.read_scores(tmp_path / f"b.{kind}")))
    line = 3 if kind == "jsonl" else 4  # a JSONL file has no header line
    assert f"(first in line {line})" in expected
    assert msg == expected.replace(f"line {line})", f"line {line} of `{tmp_path / f'b.{kind}'}`)")


def test_duplicates_across_two_csv_files_name_both_lines(tmp_path):
    _base().to_csv(tmp_path / "a.csv", index=False)
    _base().iloc[[3]].to_csv(tmp_path / "b.csv", index=False)
    msg = _message(lambda: build_stats(str(tmp_path / "*.csv"), engine="duckdb"))
    assert msg == ("scores has 1 duplicate cells, several rows for one judge call (first: model 'a', scenario 's2', "
                   f"generation 'g', judge 'j2' in line 5 of `{tmp_path / 'a.csv'}` and line 2 of "
                   f"`{tmp_path / 'b.csv'}`). Average them with read_scores(..., duplicates='mean') or keep one "
                   f"row per cell.")


@pytest.mark.parametrize("name", sorted(TABLES))
def test_text_ids_give_the_statistics_of_read_scores(name, tmp_path):
    """Ids of a CSV are labels: integers only when every value is a plain integer, as read_scores reads them."""
    frame = TABLES[name]()
    frame.to_csv(tmp_path / "s.csv", index=False)
    assert_stats_equal(build_stats(cj.read_scores(tmp_path / "s.csv")),
                       build_stats(tmp_path / "s.csv", engine="duckdb"))
    frame.assign(scenario=lambda d: d["scenario"].astype(str).str.zfill(3)).to_csv(tmp_path / "t.tsv", index=False,
                                                                                   sep="\t")
    assert_stats_equal(build_stats(cj.read_scores(tmp_path / "t.tsv")),
                       build_stats(tmp_path / "t.tsv", engine="duckdb"))


def test_a_dataframe_row_is_named_by_its_index_label_as_read_scores_does():
    frame = BAD["nan_score"]().set_axis([10, 11, 12, 13, 14, 15])
    assert _message(lambda: build_stats(frame, engine="duckdb")) == _message(lambda: cj.read_scores(frame))
    assert "first in row 12" in _message(lambda: build_stats(frame, engine="duckdb"))


def test_a_glob_matching_no_file_is_one_sentence(tmp_path):
    msg = _message(lambda: build_stats(str(tmp_path / "nothing" / "*.parquet"), engine="duckdb"))
    assert msg.startswith("No file matches `") and "*.parquet`" in msg


def test_files_with_different_columns_name_the_file_and_column(tmp_path):
    _base().to_parquet(tmp_path / "a.parquet", index=False)
    _base().drop(columns="generation").to_parquet(tmp_path / "b.parquet", index=False)
    msg = _message(lambda: build_stats(str(tmp_path / "*.parquet"), engine="duckdb"))
    assert msg == (f"The score files have different columns: `{tmp_path / 'b.parquet'}` has no column 'generation' "
                   f"but `{tmp_path / 'a.parquet'}` has; write every file with the same columns.")


def test_a_column_of_the_wrong_type_in_one_of_many_files_names_file_and_column(tmp_path):
    _base().to_parquet(tmp_path / "a.parquet", index=False)
    _base().to_parquet(tmp_path / "b.parquet", index=False)
    _base().assign(score=lambda d: d["score"].astype(str)).to_parquet(tmp_path / "c.parquet", index=False)
    msg = _message(lambda: build_stats(str(tmp_path / "*.parquet"), engine="duckdb"))
    assert msg == (f"Column 'score' is VARCHAR in `{tmp_path / 'c.parquet'}` but DOUBLE in "
                   f"`{tmp_path / 'a.parquet'}`: write it with one type in every score file.")


def test_integer_and_float_scores_in_different_files_are_one_numeric_column(tmp_path):
    frame = TABLES["balanced"]()
    frame.iloc[:120].to_parquet(tmp_path / "a.parquet", index=False)
    frame.iloc[120:].assign(score=lambda d: d["score"].round().astype(int)).to_parquet(tmp_path / "b.parquet")
    expected = pd.concat([frame.iloc[:120], frame.iloc[120:].assign(score=lambda d: d["score"].round())])
    assert_stats_equal(build_stats(expected), build_stats(str(tmp_path / "*.parquet"), engine="duckdb"))


def test_duplicate_judge_calls_spread_across_two_files_name_both(tmp_path):
    _base().to_parquet(tmp_path / "a.parquet", index=False)
    _base().iloc[[3]].to_parquet(tmp_path / "b.parquet", index=False)
    msg = _message(lambda: build_stats(str(tmp_path / "*.parquet"), engine="duckdb"))
    assert msg == ("scores has 1 duplicate cells, several rows for one judge call (first: model 'a', scenario 's2', "
                   f"generation 'g', judge 'j2' in row 3 of `{tmp_path / 'a.parquet'}` and row 0 of "
                   f"`{tmp_path / 'b.parquet'}`). Average them with read_scores(..., duplicates='mean') or keep one "
                   f"row per cell.")


def test_a_bad_score_in_the_second_file_names_that_file(tmp_path):
    _base().to_parquet(tmp_path / "a.parquet", index=False)
    BAD["inf_score"]().to_parquet(tmp_path / "b.parquet", index=False)
    msg = _message(lambda: build_stats(str(tmp_path / "*.parquet"), engine="duckdb"))
    assert f"first in row 1 of `{tmp_path / 'b.parquet'}`" in msg


def test_duckdb_not_installed_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb now raises ImportError
    msg = _message(lambda: build_stats(_base(), engine="duckdb"))
    assert msg == ("engine='duckdb' needs the duckdb package, which is not installed: pip install "
                   "'cjstats[scale]'.")


def test_columns_mapping_renames_as_read_scores_does():
    frame = TABLES["balanced"]().rename(columns={"judge": "rater", "scenario": "item"})
    ref = build_stats(cj.read_scores(frame, columns={"rater": "judge", "item": "scenario"}))
    assert_stats_equal(ref, build_stats(frame, engine="duckdb", columns={"rater": "judge", "item": "scenario"}))
