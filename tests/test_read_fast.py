"""read_scores' Arrow fast paths give exactly what the pandas path gives (issue 13, item 1).

A CSV is read by pyarrow.csv and its score column parsed by pyarrow only when pandas would read the same
table; every other file falls back to pandas. Each case here is read twice, once as shipped and once with the
fast paths switched off, and the tables, provenance, warnings and error messages must be identical.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import cjstats.io.read as read_mod
import cjstats.io.scores as scores_mod
from cjstats import CjstatsError, read_scores

HEAD = "model,scenario,generation,judge,score\n"
CASES = {
    "plain": HEAD + "a,s1,0,j1,1\na,s1,0,j2,2.5\na,s2,0,j1,3\na,s2,0,j2,4\n",
    "decimal_labels": HEAD + "a,1.1,0,j1,1\na,1.10,0,j1,2\na,1.1,0,j2,3\na,1.10,0,j2,4\n",
    "leading_zeros": HEAD + "a,7,0,j1,1\na,007,0,j1,2\na,7,0,j2,3\na,007,0,j2,4\n",
    "integers": HEAD + "a,7,0,1,1\na,8,0,1,2\na,7,0,2,3\na,8,0,2,4\n",
    "blank_line": HEAD + "a,s1,0,j1,1\n\na,s1,0,j2,2\na,s2,0,j1,3\na,s2,0,j2,4\n",
    "quoted_line_break": HEAD + 'a,"s\n1",0,j1,1\na,"s\n1",0,j2,2\na,s2,0,j1,3\na,s2,0,j2,4\n',
    "quoted_fields": HEAD + 'a,"s,1",0,j1,1\na,"s,1",0,j2,2\n"a",s2,0,j1,"3"\na,s2,0,j2,4\n',
    "escaped_quote": HEAD + 'a,"s""1",0,j1,1\na,"s""1",0,j2,2\na,s2,0,j1,3\na,s2,0,j2,4\n',
    "spaces_after_commas": "model, scenario, generation, judge, score\na, s1, 0, j1, 1\na, s1, 0, j2, 2\n",
    "trailing_space": HEAD + "a,s1 ,0,j1,1\na,s1,0,j2,2\na,s1 ,0,j2,3 \na,s1,0,j1,4\n",
    "crlf": HEAD.replace("\n", "\r\n") + "a,s1,0,j1,1\r\na,s1,0,j2,2\r\n",
    "bom": "\ufeff" + HEAD + "a,s1,0,j1,1\na,s1,0,j2,2\n",
    "near_duplicate_labels": HEAD + "gpt-4,s1,0,j1,1\nGPT-4,s1,0,j1,2\n",
    "semicolons_decimal_commas": "model;scenario;generation;judge;score\na;s1;0;j1;1,5\na;s1;0;j2;2\n",
    "tabs": "model\tscenario\tgeneration\tjudge\tscore\na\ts1\t0\tj1\t1\na\ts1\t0\tj2\t2\n",
    "minus_one": HEAD + "a,s1,0,j1,-1\na,s1,0,j2,2\na,s2,0,j1,3\na,s2,0,j2,4\n",
    "exponents_and_signs": HEAD + "a,s1,0,j1,1e0\na,s1,0,j2,+2\na,s2,0,j1,.5\na,s2,0,j2,5.\n",
    "negative_zero": HEAD + "a,s1,0,j1,-0\na,s1,0,j2,-0.0\na,s2,0,j1,0\na,s2,0,j2,1\n",
    "missing_label": HEAD + "a,NA,0,j1,1\na,s1,0,j2,2\n",
    "empty_field": HEAD + "a,,0,j1,1\na,s1,0,j2,2\n",
    "missing_score": HEAD + "a,s1,0,j1,\na,s1,0,j2,2\n",
    "nan_text": HEAD + "a,s1,0,j1,nan\na,s1,0,j2,NAN\n",
    "inf_text": HEAD + "a,s1,0,j1,inf\na,s1,0,j2,1e999\n",
    "non_numeric": HEAD + "a,s1,0,j1,oops\na,s1,0,j2,1_000\n",
    "ragged_short": HEAD + "a,s1,0,j1\na,s1,0,j2,2\n",
    "ragged_long": HEAD + "a,s1,0,j1,1,9\na,s1,0,j2,2\n",
    "duplicates": HEAD + "a,s1,0,j1,1\na,s1,0,j1,2\na,s1,0,j2,3\n",
    "overflow": HEAD + "a,s1,0,j1,1e200\na,s1,0,j2,2\n",
    "header_only": HEAD,
}


def _read(path, **kw):
    """(frame, provenance, warning texts) or the error message."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            s = read_scores(path, **kw)
        except CjstatsError as exc:
            return ("error", str(exc))
    return (s.to_frame(), dict(s.provenance), [str(w.message) for w in caught],
            [(g.model, g.design, g.y.tolist(), g.scenario_labels.tolist(), g.judge_labels) for g in s.groups()])


def _same(a, b):
    assert isinstance(a[0], str) == isinstance(b[0], str), (a, b)
    if isinstance(a[0], str):
        assert a == b
        return
    pd.testing.assert_frame_equal(a[0], b[0])
    assert a[1:] == b[1:]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("duplicates", ["error", "mean"])
def test_csv_fast_path_reads_what_pandas_reads(name, duplicates, tmp_path, monkeypatch):
    path = tmp_path / ("s.tsv" if name == "tabs" else "s.csv")
    path.write_bytes(CASES[name].encode("utf-8"))
    fast = _read(path, duplicates=duplicates)
    monkeypatch.setattr(read_mod, "_read_csv_arrow", lambda *a, **k: None)
    monkeypatch.setattr(read_mod, "_text_scores", lambda *a, **k: None)
    _same(fast, _read(path, duplicates=duplicates))


def test_csv_fast_path_is_taken_for_a_plain_file(tmp_path):
    """The equality test above would pass trivially if the fast path never ran: show it runs."""
    path = tmp_path / "s.csv"
    path.write_text(CASES["plain"])
    df = read_mod._read_csv_arrow(path, ",")
    assert df is not None and list(df.columns) == ["model", "scenario", "generation", "judge", "score"]
    assert df["scenario"].tolist() == ["s1", "s1", "s2", "s2"]
    for bad in ("spaces_after_commas", "missing_label", "empty_field", "escaped_quote", "bom", "ragged_short"):
        path.write_bytes(CASES[bad].encode("utf-8"))
        assert read_mod._read_csv_arrow(path, ",") is None, bad


def test_group_index_of_unsorted_frame_matches_sorted_frame():
    """The codes computed once by read_scores give the same groups as Scores building them itself."""
    rng = np.random.default_rng(3)
    n = 400
    frame = pd.DataFrame({"model": rng.choice(["m2", "m1"], n), "criterion": rng.choice(["c", "b"], n),
                          "scenario": rng.integers(0, 30, n), "generation": rng.integers(0, 3, n),
                          "judge": rng.choice(["j3", "j1", "j2"], n), "score": rng.normal(size=n)})
    frame = frame.drop_duplicates(["model", "criterion", "scenario", "generation", "judge"])
    fast = read_scores(frame)
    rebuilt = scores_mod.Scores(fast.to_frame().sample(frac=1.0, random_state=1).reset_index(drop=True))
    pd.testing.assert_frame_equal(fast.to_frame(), rebuilt.to_frame())
    for a, b in zip(fast.groups(), rebuilt.groups(), strict=True):
        assert a.design == b.design and a.key == b.key
        for f in ("y", "scenario", "cell", "judge", "cell_scenario", "scenario_labels", "cell_generation_labels"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


@pytest.mark.parametrize("values", [
    np.array([5, -3, 5, 0, 127, -128], dtype=np.int8),      # int8 near its limits: no overflow in the shift
    np.array([60000, 3, 3, 65535], dtype=np.uint16),
    np.array([10**12, -(10**12), 0]),                         # range too wide: the hash-table path
    np.array([2, 2, 2]),
])
def test_integer_codes_equal_pandas_factorize(values):
    codes, uniques = scores_mod._codes(pd.Series(values))
    want_codes, want_uniques = pd.factorize(pd.Series(values), sort=True)
    np.testing.assert_array_equal(codes, want_codes)
    assert list(uniques) == list(np.asarray(want_uniques, dtype=object))
    assert all(type(u) is type(w) for u, w in zip(uniques, np.asarray(want_uniques, dtype=object), strict=True))


def test_sorted_table_keeps_values_and_dtypes_of_a_plain_sort():
    """Id columns rebuilt from codes equal a stable sort of the rows, dtype for dtype (str, int8, object)."""
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame({"model": rng.choice(["m2", "m1"], n), "criterion": rng.choice(["c", "b"], n),
                          "scenario": rng.choice(np.array(["q7", "q10", "q1"], dtype=object), n),
                          "generation": rng.integers(-2, 3, n).astype(np.int8),
                          "judge": rng.choice(["j3", "j1", "j2"], n), "score": rng.normal(size=n)})
    frame = frame.drop_duplicates(["model", "criterion", "scenario", "generation", "judge"]).reset_index(drop=True)
    got = scores_mod.Scores(frame).to_frame()
    want = frame.sort_values(["model", "criterion", "scenario", "generation", "judge"], kind="stable")
    pd.testing.assert_frame_equal(got, want.reset_index(drop=True))
    assert isinstance(got["model"].dtype, pd.StringDtype) and got["generation"].dtype == np.int8
