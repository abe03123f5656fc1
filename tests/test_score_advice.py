"""Detection and advice for discrete scores (issue 22): the score-kind rule, the one-line note in the summaries
of the Gaussian backends' results, and ``--method auto`` considering the kind of scores."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.io.score_kind import (BOUND_SHARE, FEW_LEVELS, discrete_note, prefers_discrete_model, score_kind,
                                   score_shape)


def _table(kind: str, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for m in ("A", "B"):
        for s in range(40):
            a = rng.normal()
            for j in ("j1", "j2", "j3"):
                x = 4.3 + a + rng.normal(0, 0.7)
                score = {"likert": float(np.clip(np.round(x), 1, 5)), "binary": float(x > 4.5),
                         "continuous": x}[kind]
                rows.append((m, s, j, score))
    return pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])


def test_kind_and_shape():
    assert score_kind([0, 1, 1]) == "binary"
    assert score_kind([1, 2, 3, 5]) == "ordinal"
    assert score_kind(np.arange(12)) == "continuous"
    assert score_kind([1.5, 2, 3]) == "ordinal"             # whole or half points: C/P/I grades are 1/0.5/0
    assert score_kind([1.25, 2, 3]) == "continuous"
    s = score_shape([1, 5, 5, 5, 3, np.nan])
    assert s == {"kind": "ordinal", "n_values": 3, "n_rows": 5, "min": 1.0, "max": 5.0, "floor_share": 0.2,
                 "ceiling_share": 0.6}


def test_the_rule_and_its_thresholds():
    # few values: flagged whatever the spread
    assert prefers_discrete_model(score_shape(np.arange(FEW_LEVELS).repeat(10)))
    # more values, evenly spread: not flagged; the same with a ceiling at BOUND_SHARE: flagged
    even = np.arange(10).repeat(10).astype(float)
    assert not prefers_discrete_model(score_shape(even))
    top = np.r_[np.arange(9).repeat(7), np.full(int(np.ceil(63 * BOUND_SHARE / (1 - BOUND_SHARE))), 9)]
    assert score_shape(top)["ceiling_share"] >= BOUND_SHARE and prefers_discrete_model(score_shape(top))
    floor = np.r_[np.zeros(40), np.linspace(1, 10, 60)]     # continuous scores with a floor
    assert prefers_discrete_model(score_shape(floor))
    assert not prefers_discrete_model(score_shape(np.full(5, 3.0)))   # constant: nothing to say
    assert not prefers_discrete_model(None)


def test_note_wording():
    note = discrete_note(score_shape([1, 2, 3, 4, 5, 5, 5, 5]))
    assert note.startswith("scores take 5 values and 50% sit at the top (5): the Gaussian model shrinks variances")
    assert 'method="ordinal"' in note and 'method="bayes", likelihood="ordinal"' in note
    binary = discrete_note(score_shape([0, 1, 1, 1]))
    assert binary.startswith("scores are binary (0/1, 75% at 1)") and "binary (logit/probit)" in binary
    assert discrete_note(score_shape(np.linspace(0, 1, 50))) is None


@pytest.mark.parametrize("kind", ["likert", "binary"])
def test_every_gaussian_summary_carries_one_note(kind, tmp_path):
    df = _table(kind)
    fits = [cj.estimate(df, method="anova"), cj.estimate(df, method="reml")]
    for fit in fits:
        text = fit.summary().as_text()
        assert text.count("the Gaussian model shrinks variances") == 1
        assert fit.provenance["score_shape"]["n_values"] == (5 if kind == "likert" else 2)
        again = pickle.loads(pickle.dumps(fit))
        assert again.summary().as_text() == text
    path = tmp_path / "fit.cjstats"
    fits[0].save(path)
    assert "the Gaussian model shrinks variances" in type(fits[0]).load(path).summary().as_text()
    joint = cj.fit_joint(df, method="reml")
    assert joint.summary().as_text().count("the Gaussian model shrinks variances") == 1
    comparison = cj.compare_models(df)
    assert str(comparison).count("the Gaussian model shrinks variances") == 1


def test_no_note_on_continuous_scores():
    df = _table("continuous")
    assert "shrinks variances" not in cj.estimate(df, method="anova").summary().as_text()
    assert "shrinks variances" not in str(cj.compare_models(df))


def test_auto_considers_the_kind_of_scores():
    from cjstats import estimators

    scores = cj.read_scores(_table("likert"))
    assert estimators.auto_method(scores) == ("anova", "every group is complete and balanced")   # library default
    chosen, why = estimators.auto_method(scores, discrete=True)
    assert chosen == "anova" and "which suits an ordinal model" in why and 'method="ordinal"' in why
    assert "the Gaussian anova is an approximation here" in why
    assert estimators.auto_method(scores, discrete=True, incomplete="drop")[0] == "anova"
    assert estimators.auto_method(cj.read_scores(_table("continuous")), discrete=True)[0] == "anova"


def test_cli_auto_says_why(tmp_path):
    from cli_helpers import run_main

    path = tmp_path / "likert.csv"
    _table("likert").to_csv(path, index=False)
    code, out, err = run_main(["decompose", str(path)])
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("Method: anova (--method auto: every group is complete and balanced; scores take 5 "
                            "values") and first.endswith("so the Gaussian anova is an approximation here).")
    assert out.count("the Gaussian model shrinks variances") == 1
