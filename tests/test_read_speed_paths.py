"""read_scores' Arrow route (codes from dictionary encoding, no per-row Python) gives exactly what the pandas
route gives: the same frame (values and dtypes), groups, provenance, warnings and error messages.

Each case is read twice, once as shipped and once with the Arrow route switched off (``_fast_scores`` returns
``None``, so the pandas route reads the table), on Parquet files, CSV files and DataFrames.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import cjstats.io.read as read_mod
from cjstats import CjstatsError, read_scores

_GROUP_FIELDS = ("y", "scenario", "cell", "judge", "cell_scenario", "scenario_labels", "cell_generation_labels")


def _read(source, **kw):
    """(frame, provenance, warning texts, groups) or ("error", message)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            s = read_scores(source, **kw)
        except CjstatsError as exc:
            return ("error", str(exc))
    groups = [(g.key, g.design, g.judge_labels, [(getattr(g, f).tolist(), getattr(g, f).dtype) for f in _GROUP_FIELDS])
              for g in s.groups()]
    summary = (len(s), repr(s), s.judges, s.models, s.criteria)  # before to_frame: the Arrow route builds it late
    return (s.to_frame(), dict(s.provenance), [str(w.message) for w in caught], groups, summary, s.design,
            s.missing_cells())


def _both(source, monkeypatch, **kw):
    """The Arrow-route and pandas-route readings of ``source``, and whether the Arrow route answered."""
    answered = []
    real = read_mod._fast_scores

    def spy(*a, **k):
        got = real(*a, **k)
        answered.append(got is not None)
        return got

    monkeypatch.setattr(read_mod, "_fast_scores", spy)
    fast = _read(source, **kw)
    monkeypatch.setattr(read_mod, "_fast_scores", lambda *a, **k: None)
    slow = _read(source, **kw)
    monkeypatch.setattr(read_mod, "_fast_scores", real)
    return fast, slow, any(answered)


def _same(fast, slow):
    assert isinstance(fast[0], str) == isinstance(slow[0], str), (fast, slow)
    if isinstance(fast[0], str):
        assert fast == slow
        return
    pd.testing.assert_frame_equal(fast[0], slow[0])
    assert fast[1:5] == slow[1:5]
    pd.testing.assert_frame_equal(fast[5], slow[5])
    pd.testing.assert_frame_equal(fast[6], slow[6])


def _table(n_scen=6, m=2, k=3, models=("m2", "m1"), seed=0, criteria=None):
    """A crossed long table in a shuffled row order (so the reader has to sort it)."""
    rng = np.random.default_rng(seed)
    idx = pd.MultiIndex.from_product([list(models), range(n_scen), range(m), [f"j{x}" for x in range(k)]]
                                     + ([list(criteria)] if criteria else []),
                                     names=["model", "scenario", "generation", "judge"]
                                     + (["criterion"] if criteria else []))
    df = idx.to_frame(index=False)
    df["score"] = rng.integers(0, 10, len(df)).astype(float) + rng.normal(0, 0.1, len(df)).round(3)
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


# ------------------------------------------------------------------------------------------ DataFrames
FRAMES = {
    "plain": lambda: _table(),
    "sorted": lambda: _table().sort_values(["model", "scenario", "generation", "judge"]).reset_index(drop=True),
    "criterion": lambda: _table(criteria=("b", "a")),
    "no_generation": lambda: _table(m=1).drop(columns="generation"),
    "text_scenarios": lambda: _table().assign(scenario=lambda d: "q" + d["scenario"].astype(str)),
    "object_ids": lambda: _table().astype({"model": object, "judge": object}),
    "string_dtype": lambda: _table().astype({"model": "string", "scenario": "string"}),
    "int32_uint16": lambda: _table().astype({"scenario": np.int32, "generation": np.uint16}),
    "negative_ints": lambda: _table().assign(scenario=lambda d: d["scenario"] - 3),
    "wide_int_range": lambda: _table().assign(scenario=lambda d: d["scenario"] * 10**12),
    "uint64_hash_ids": lambda: _table().assign(scenario=lambda d: d["scenario"].astype(np.uint64) * 2**61 + 7),
    "int64_extremes": lambda: _table(n_scen=2).assign(scenario=lambda d: np.where(d["scenario"] == 0, -2**63,
                                                                                  2**63 - 1)),
    "integer_scores": lambda: _table().assign(score=lambda d: d["score"].round().astype(np.int64)),
    "float32_scores": lambda: _table().assign(score=lambda d: d["score"].astype(np.float32)),
    "integer_models": lambda: _table(models=(10, 2)),
    "extra_columns": lambda: _table().assign(note="x", judge_id=1),
    "near_duplicate_labels": lambda: _table(models=("gpt-4", "GPT-4 ")),
    "sentinel": lambda: _table().assign(score=lambda d: d["score"].abs().where(d.index != 3, -1.0)),
    "negative_scale": lambda: _table().assign(score=lambda d: d["score"] - 20),
    "nan_score": lambda: _table().assign(score=lambda d: d["score"].where(d.index != 4)),
    "inf_score": lambda: _table().assign(score=lambda d: d["score"].where(d.index != 4, np.inf)),
    "huge_score": lambda: _table().assign(score=lambda d: d["score"].where(d.index != 4, 1e200)),
    "bool_score": lambda: _table().assign(score=True),
    "text_score": lambda: _table().assign(score=lambda d: d["score"].astype(str)),
    "missing_label": lambda: _table().assign(judge=lambda d: d["judge"].where(d.index != 5)),
    "duplicates": lambda: pd.concat([_table(), _table().iloc[[2, 7]]], ignore_index=True),
    "incomplete": lambda: _table().drop(index=[0, 5, 9]).reset_index(drop=True),
    "judge_type": lambda: _table().assign(judge_type=lambda d: np.where(d["judge"] == "j0", "human", "llm")),
    "non_range_index": lambda: _table().set_axis(pd.Index(np.arange(100, 100 + 72), name="id")),
    "one_row": lambda: _table().iloc[:1],
    "empty": lambda: _table().iloc[:0],
}


@pytest.mark.parametrize("name", sorted(FRAMES))
@pytest.mark.parametrize("duplicates", ["error", "mean"])
def test_dataframe_arrow_route_matches_pandas_route(name, duplicates, monkeypatch):
    fast, slow, _ = _both(FRAMES[name](), monkeypatch, duplicates=duplicates)
    _same(fast, slow)


def test_chunked_text_columns_and_mappings(monkeypatch):
    """str columns made of several Arrow chunks (each its own dictionary) and a renaming mapping."""
    df = pd.concat([_table(seed=1).iloc[:30], _table(seed=1).iloc[30:]], ignore_index=True)
    assert df["judge"].array.__arrow_array__().num_chunks == 2
    df = df.rename(columns={"judge": "rater", "scenario": "item"})
    fast, slow, answered = _both(df, monkeypatch, columns={"rater": "judge", "item": "scenario"})
    assert answered
    _same(fast, slow)
    for bad in ({"nope": "judge"}, {"rater": "model"}, {"rater": "judge", "item": "judge"}, ["rater"]):
        fast, slow, _ = _both(df, monkeypatch, columns=bad)
        assert fast[0] == "error"
        _same(fast, slow)


@pytest.mark.parametrize("kw", [{"reference": "j0"}, {"judge_columns": "score_*"}])
def test_other_arguments_take_the_pandas_route(kw, monkeypatch):
    df = _table()
    if "judge_columns" in kw:
        df = df.pivot_table(index=["model", "scenario", "generation"], columns="judge", values="score")
        df = df.add_prefix("score_").reset_index()
    fast, slow, answered = _both(df, monkeypatch, **kw)
    assert not answered
    _same(fast, slow)


# ------------------------------------------------------------------------------------------ Parquet files
@pytest.mark.parametrize("name", sorted(set(FRAMES) - {"object_ids", "bool_score", "empty"}))
def test_parquet_arrow_route_matches_pandas_route(name, tmp_path, monkeypatch):
    path = tmp_path / "s.parquet"
    FRAMES[name]().to_parquet(path)
    fast, slow, _ = _both(path, monkeypatch)
    _same(fast, slow)


@pytest.mark.parametrize("variant", ["object_ids", "category", "nullable_int", "row_groups", "no_pandas_metadata",
                                     "large_string", "dictionary_type"])
def test_parquet_types_and_layouts(variant, tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "s.parquet"
    df = _table(n_scen=40)
    if variant == "object_ids":
        df.astype({"model": object, "judge": object}).to_parquet(path)
    elif variant == "category":
        df.astype({"judge": "category", "scenario": "category"}).to_parquet(path)
    elif variant == "nullable_int":
        df.astype({"scenario": "Int64"}).to_parquet(path)
    elif variant == "row_groups":  # one dictionary per row group, in different orders
        df.to_parquet(path, row_group_size=50)
        assert pq.ParquetFile(path).num_row_groups > 2
    else:
        table = pa.Table.from_pandas(df, preserve_index=False)
        if variant == "large_string":
            table = table.cast(pa.schema([f.with_type(pa.large_string()) if pa.types.is_string(f.type) else f
                                          for f in table.schema]))
        if variant == "dictionary_type":
            table = table.set_column(3, "judge", pc_dictionary(table["judge"]))
        pq.write_table(table.replace_schema_metadata(None), path)
    fast, slow, answered = _both(path, monkeypatch)
    assert answered == (variant in ("object_ids", "row_groups", "no_pandas_metadata", "large_string"))
    _same(fast, slow)


def pc_dictionary(col):
    import pyarrow.compute as pc

    return pc.dictionary_encode(col)


def test_parquet_with_a_stored_index_named_like_a_column(tmp_path, monkeypatch):
    """pd.read_parquet restores a stored index; the Arrow route must not read it as a column."""
    path = tmp_path / "s.parquet"
    _table().set_index("scenario").to_parquet(path)
    fast, slow, answered = _both(path, monkeypatch)
    assert fast[0] == "error" and not answered
    _same(fast, slow)


# ------------------------------------------------------------------------------------------ CSV files
HEAD = "model,scenario,generation,judge,score\n"
CSVS = {
    "int_text_scenarios": HEAD + "a,10,0,j1,1\na,9,0,j1,2\na,10,0,j2,3\na,9,0,j2,4\n",
    "minus_zero_scenario": HEAD + "a,0,0,j1,1\na,-0,0,j1,2\na,0,0,j2,3\na,-0,0,j2,4\n",
    "minus_zero_judge": HEAD + "a,s1,0,0,1\na,s1,0,-0,2\na,s2,0,0,3\na,s2,0,-0,4\n",
    "integer_judges": HEAD + "a,s1,0,10,1\na,s1,0,2,2\na,s2,0,10,3\na,s2,0,2,4\n",
    "huge_int_text": HEAD + "a,99999999999999999999,0,j1,1\na,1,0,j1,2\n",
    "mixed_int_text": HEAD + "a,1,0,j1,1\na,x,0,j1,2\na,1,0,j2,3\na,x,0,j2,4\n",
    "criterion": "model,scenario,generation,judge,criterion,score\na,s1,0,j1,c2,1\na,s1,0,j1,c1,2\n",
    "unsorted": HEAD + "b,s2,1,j2,1\na,s1,0,j1,2\nb,s1,0,j1,3\na,s2,1,j2,4\na,s1,1,j1,5\n",
    "no_generation": "model,scenario,judge,score\na,s1,j1,1\na,s1,j2,2\na,s2,j1,3\na,s2,j2,4\n",
    "renamed": "system,item,generation,rater,score\na,s1,0,j1,1\na,s1,0,j2,2\n",
    "judge_type": "model,scenario,generation,judge,judge_type,score\na,s1,0,j1,llm,1\na,s1,0,h,human,2\n",
    "duplicates": HEAD + "a,s1,0,j1,1\na,s1,0,j1,2\na,s1,0,j2,3\n",
}


@pytest.mark.parametrize("name", sorted(CSVS))
@pytest.mark.parametrize("duplicates", ["error", "mean"])
def test_csv_arrow_route_matches_pandas_route(name, duplicates, tmp_path, monkeypatch):
    path = tmp_path / "s.csv"
    path.write_text(CSVS[name])
    kw = {"columns": {"system": "model", "item": "scenario", "rater": "judge"}} if name == "renamed" else {}
    fast, slow, _ = _both(path, monkeypatch, duplicates=duplicates, **kw)
    _same(fast, slow)


def test_arrow_route_is_taken_for_plain_sources(tmp_path, monkeypatch):
    """The equality tests above would pass trivially if the Arrow route never answered: show it does."""
    df = _table(criteria=("c1", "c2"))
    df.to_parquet(tmp_path / "s.parquet")
    df.to_csv(tmp_path / "s.csv", index=False)
    for source in (df, tmp_path / "s.parquet", tmp_path / "s.csv"):
        fast, slow, answered = _both(source, monkeypatch)
        assert answered, source
        _same(fast, slow)


# ------------------------------------------------------------------------------------------ the Arrow pieces
@pytest.mark.parametrize("layout", ["shuffled", "two_sorted_runs", "sorted", "reversed_blocks", "duplicates"])
def test_sort_key_gives_the_stable_order_of_the_key(layout):
    from cjstats.io._arrow import sort_key

    rng = np.random.default_rng(7)
    sizes = [3, 40, 2, 5]
    cells = np.stack(np.meshgrid(*[np.arange(n) for n in sizes], indexing="ij"), -1).reshape(-1, 4)
    if layout == "shuffled":
        cells = cells[rng.permutation(len(cells))]
    elif layout == "two_sorted_runs":  # one descent: NumPy's merge of runs
        cells = np.concatenate([cells[600:], cells[:600]])
    elif layout == "reversed_blocks":  # a few descents only
        cells = np.concatenate([cells[i:i + 200] for i in range(1000, -1, -200)])
    elif layout == "duplicates":
        cells = np.concatenate([cells, cells[[5, 900]]])[rng.permutation(len(cells) + 2)]
    codes = [cells[:, i].astype(np.int32) for i in range(4)]
    order, key, dup = sort_key(codes, sizes)
    want_key = ((cells[:, 0] * 40 + cells[:, 1]) * 2 + cells[:, 2]) * 5 + cells[:, 3]
    assert dup == (layout == "duplicates")
    if dup:
        return
    want = np.argsort(want_key, kind="stable")
    if layout == "sorted":
        assert order is None
        order = np.arange(len(cells))
    np.testing.assert_array_equal(order, want)
    np.testing.assert_array_equal(key, want_key[want])


def test_text_codes_of_a_dictionary_with_unused_labels_and_several_chunks():
    import pyarrow as pa

    from cjstats.io._arrow import text_codes

    chunk1 = pa.DictionaryArray.from_arrays(pa.array([2, 0, 2], pa.int32()), pa.array(["b", "x ", "a"]))
    chunk2 = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["c", "a", "X"]))
    codes, labels, is_int, all_used = text_codes(pa.chunked_array([chunk1, chunk2]))
    values = ["a", "b", "a", "c", "a"]
    assert [labels[int(c)].as_py() for c in codes] == values
    assert labels.to_pylist() == sorted(labels.to_pylist()) and not is_int and not all_used
    assert set(values) <= set(labels.to_pylist())


def test_unused_dictionary_labels_raise_no_near_duplicate_warning():
    """A Parquet dictionary may hold labels no row uses: they must not warn ('x ' and 'X' are unused here)."""
    import pyarrow as pa

    judge = pa.chunked_array([pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 1], pa.int32()),
                                                             pa.array(["j1", "j2", "x ", "X"]))])
    cols = {"model": pa.chunked_array([pa.array(["m"] * 4)]), "scenario": pa.chunked_array([pa.array([0, 0, 1, 1])]),
            "judge": judge, "score": pa.chunked_array([pa.array([1.0, 2.0, 3.0, 4.0])])}
    got = read_mod._fast_scores(cols, {}, from_text=False, provenance={})
    assert got is not None
    scores, distinct = got
    assert list(distinct["judge"]) == ["j1", "j2"] and scores.judges == ["j1", "j2"]
    want = read_scores(pd.DataFrame({"model": "m", "scenario": [0, 0, 1, 1], "judge": ["j1", "j2"] * 2,
                                     "score": [1.0, 2.0, 3.0, 4.0]}))
    pd.testing.assert_frame_equal(scores.to_frame(), want.to_frame())


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_table_does_not_follow_later_changes_to_the_callers_frame(order):
    """The Arrow route may use a DataFrame's own arrays as codes; the table (built late) must not share them."""
    df = _table(n_scen=70)
    if order == "sorted":
        df = df.sort_values(["model", "scenario", "generation", "judge"]).reset_index(drop=True)
    want = read_scores(df.copy()).to_frame()
    s = read_scores(df)
    before = [g.y.copy() for g in s.groups()]
    df.loc[:, "score"] = -5.0  # in place, in the frame's own arrays
    df.loc[:, "scenario"] = 3
    df.loc[:, "generation"] = 1
    pd.testing.assert_frame_equal(s.to_frame(), want)
    for g, y in zip(s.groups(), before, strict=True):
        np.testing.assert_array_equal(g.y, y)


def test_gzip_csv_takes_the_arrow_route(tmp_path, monkeypatch):
    import gzip

    path = tmp_path / "s.csv.gz"
    with gzip.open(path, "wt") as fh:
        _table(criteria=("c1",)).to_csv(fh, index=False)
    fast, slow, answered = _both(path, monkeypatch)
    assert answered
    _same(fast, slow)


@pytest.mark.parametrize("case", ["duplicates", "sentinel", "judge_type", "duplicates_error"])
def test_declined_csv_reads_what_the_pandas_route_reads(case, tmp_path, monkeypatch):
    """A CSV the Arrow route reads but declines (scores parsed while reading) goes on from that table: the
    result, warnings and messages (with line numbers) equal the pandas route's from the file."""
    df = _table(n_scen=20, criteria=("c1", "c2"))
    kw = {"duplicates": "error" if case == "duplicates_error" else "mean"}
    if case.startswith("duplicates"):
        df = pd.concat([df, df.iloc[[3, 50, 51]].assign(score=lambda d: d["score"] + 1)], ignore_index=True)
    elif case == "sentinel":
        df = df.assign(score=lambda d: d["score"].abs().where(d.index % 17 != 0, -1.0))
    else:
        df = df.assign(judge_type=lambda d: np.where(d["judge"] == "j0", "human", "llm"))
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    fast = _read(path, **kw)
    monkeypatch.setattr(read_mod, "_read_csv_arrow", lambda *a, **k: None)
    monkeypatch.setattr(read_mod, "_text_scores", lambda *a, **k: None)
    _same(fast, _read(path, **kw))
    if case == "duplicates_error":
        assert "lines" in fast[1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ragged_designs_give_the_same_groups(seed, monkeypatch):
    """Groups built from the sorted key (Arrow route) equal those built from the sorted codes (pandas route) on
    ragged designs: rows dropped at random, a judge missing from one model, scenarios with 1 to 3 generations."""
    rng = np.random.default_rng(seed)
    df = _table(n_scen=30, m=3, k=4, models=("m3", "m1", "m2"), seed=seed, criteria=("c2", "c1"))
    df = df[rng.random(len(df)) > 0.3]
    df = df[~((df["model"] == "m2") & (df["judge"] == "j1"))]
    df = df[~((df["scenario"] % 3 == 0) & (df["generation"] > 0))].reset_index(drop=True)
    fast, slow, answered = _both(df, monkeypatch)
    assert answered
    _same(fast, slow)
    assert any(not d.complete for _, d, _, _ in fast[3])
