"""The score kind of a table is known once (issue 34): a ``Scores`` table scans its scores on first use and keeps the
shape, every fit and ``--method auto`` read that value, the kept shape is the one a fresh scan gives, and a derived
table (subset, composite) computes its own."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
import cjstats.estimators.score_advice as score_advice
import cjstats.io.score_kind as score_kind_mod
import cjstats.io.scores as scores_mod
from cjstats.estimators import auto_method
from cjstats.io.score_kind import discrete_note, score_shape


def _frame(kind: str, seed: int = 3, models: tuple[str, ...] = ("A", "B")) -> pd.DataFrame:
    """Two models x 30 scenarios x 2 generations x 3 judges of one kind of score."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in models:
        for s in range(30):
            a = rng.normal()
            for g in range(2):
                for j in ("j1", "j2", "j3"):
                    x = 3.6 + a + rng.normal(0, 0.8)
                    score = {"binary": float(x > 3.8), "likert": float(np.clip(np.round(x), 1, 5)),
                             "continuous": x, "ceiling": float(min(np.round(x + 1.2), 5.0))}[kind]
                    rows.append((m, s, g, j, score))
    return pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])


KINDS = ("binary", "likert", "continuous", "ceiling")


def _fresh(table: cj.Scores) -> dict:
    return score_shape(table.to_frame()["score"].to_numpy(dtype=float))


@pytest.fixture
def count_scans(monkeypatch):
    """Count every call of the scan, under each name a module imported it as."""
    calls = []
    real = score_kind_mod.score_shape

    def counted(values):
        calls.append(len(values))
        return real(values)

    monkeypatch.setattr(score_kind_mod, "score_shape", counted)
    monkeypatch.setattr(score_advice, "score_shape", counted)
    monkeypatch.setattr(scores_mod, "score_shape", counted, raising=False)
    return calls


def test_the_scan_runs_once_per_table(count_scans):
    table = cj.read_scores(_frame("likert"))
    fits = [cj.estimate(table, method="anova") for _ in range(3)] + [cj.estimate(table, method="reml")]
    chosen, why = auto_method(table, discrete=True)
    assert len(count_scans) == 1, f"the scores were scanned {len(count_scans)} times"
    assert count_scans == [len(table)]
    assert all(f.provenance["score_shape"] == fits[0].provenance["score_shape"] for f in fits)
    assert chosen == "anova" and "ordinal model" in why
    other = cj.read_scores(_frame("continuous"))   # a second table scans its own scores, once
    cj.estimate(other, method="anova")
    cj.estimate(other, method="anova")
    assert len(count_scans) == 2


def test_the_scan_sorts_once(monkeypatch):
    calls = []
    real = np.unique

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(np, "unique", counted)
    score_shape(np.random.default_rng(0).normal(size=1000))
    assert len(calls) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_kept_shape_is_a_fresh_scan(kind):
    table = cj.read_scores(_frame(kind))
    fresh = _fresh(table)
    assert dict(table.score_shape) == fresh
    assert dict(table.score_shape) == fresh          # read again: the same kept value
    expected_kind = {"binary": "binary", "likert": "ordinal", "continuous": "continuous", "ceiling": "ordinal"}
    assert fresh["kind"] == expected_kind[kind]
    if kind == "ceiling":
        assert fresh["ceiling_share"] >= score_kind_mod.BOUND_SHARE
    fit = cj.estimate(table, method="anova")
    recorded = fit.provenance["score_shape"]
    assert type(recorded) is dict and recorded == fresh            # a plain dict: it pickles and saves
    assert pickle.loads(pickle.dumps(fit)).provenance["score_shape"] == fresh
    note, text = discrete_note(fresh), fit.summary().as_text()
    assert (note in text) if note else ("docs/discrete_scores.md" not in text)
    assert (note is None) == (kind == "continuous")


def test_kept_shape_is_read_only_and_travels_with_the_table(tmp_path):
    table = cj.read_scores(_frame("ceiling"))
    fresh = _fresh(table)
    with pytest.raises(TypeError):
        table.score_shape["kind"] = "continuous"          # type: ignore[index]
    assert dict(pickle.loads(pickle.dumps(table)).score_shape) == fresh
    table.save(tmp_path / "t")
    assert dict(cj.Scores.load(tmp_path / "t").score_shape) == fresh


def test_reading_the_shape_does_not_build_the_long_frame():
    table = cj.read_scores(_frame("likert"))
    if table._table is not None:
        pytest.skip("this table was read by the pandas route: its long frame exists from the start")
    table.score_shape
    assert table._table is None


def test_a_derived_table_computes_its_own_shape():
    parts = []
    for crit, kind in (("verdict", "binary"), ("rubric", "ceiling")):
        f = _frame(kind)
        f["criterion"] = crit
        parts.append(f)
    ceiling_b = _frame("continuous", models=("C",))
    parts.append(ceiling_b.assign(criterion="verdict"))
    parts.append(_frame("ceiling", seed=9, models=("C",)).assign(criterion="rubric"))
    table = cj.read_scores(pd.concat(parts, ignore_index=True))
    whole = dict(table.score_shape)                    # the parent's shape is kept before the derived tables exist
    assert whole == _fresh(table)
    derived = {"verdict": table.subset(criteria=["verdict"]), "rubric": table.subset(criteria=["rubric"]),
               "model C": table.subset(models=["C"]), "composite": table.composite()}
    for name, sub in derived.items():
        assert dict(sub.score_shape) == _fresh(sub), name
        assert dict(sub.score_shape) != whole, name
        assert cj.estimate(sub, method="anova").provenance["score_shape"] == _fresh(sub), name
    assert derived["verdict"].score_shape["n_rows"] + derived["rubric"].score_shape["n_rows"] == whole["n_rows"]
    assert dict(table.score_shape) == whole            # the parent's kept shape is untouched


def test_one_sort_gives_the_same_facts():
    """The facts of a small column, counted by hand (missing and infinite values ignored)."""
    assert score_shape([5, 1, 1, 2, 5, 5, np.nan, np.inf]) == {
        "kind": "ordinal", "n_values": 3, "n_rows": 6, "min": 1.0, "max": 5.0, "floor_share": 2 / 6,
        "ceiling_share": 3 / 6}
    assert score_shape([0.0, 1.0, 1.0, 1.0]) == {"kind": "binary", "n_values": 2, "n_rows": 4, "min": 0.0,
                                                 "max": 1.0, "floor_share": 0.25, "ceiling_share": 0.75}
    shape = score_shape(np.r_[np.linspace(0, 1, 12), 1.0])    # 12 values, the top one twice
    assert shape["kind"] == "continuous" and shape["n_values"] == 12 and shape["ceiling_share"] == 2 / 13
