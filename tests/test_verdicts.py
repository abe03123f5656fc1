"""Binary verdicts read as numbers (issue 22): C/I/P/N (as Inspect's value_to_float), pass/fail, true/false and
yes/no map to 1/0.5/0 with the mapping stated once; a text score column of other words is one sentence."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats import CjstatsError
from cjstats.io.verdicts import VERDICTS, msg_verdicts, verdict_mapping

BASE = pd.DataFrame({"model": "A", "scenario": np.repeat(np.arange(4), 2), "judge": ["j1", "j2"] * 4})


def _read(values):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = cj.read_scores(BASE.assign(score=values))
    return scores.to_frame()["score"].tolist(), [str(w.message) for w in caught]


@pytest.mark.parametrize("values, numbers, stated", [
    (list("CIPNCCIC"), [1, 0, 0.5, 0, 1, 1, 0, 1], "read as C = 1, P = 0.5, I = 0, N = 0 (as Inspect's value_to_float)"),
    (["pass", "fail", " Pass", "FAIL", "pass", "pass", "fail", "fail"], [1, 0, 1, 0, 1, 1, 0, 0],
     "read as pass = 1, fail = 0"),
    ([True, False] * 4, [1, 0] * 4, "read as True = 1, False = 0"),
    (["true", "false"] * 4, [1, 0] * 4, "read as true = 1, false = 0"),
    (["yes", "no", "no", "yes"] * 2, [1, 0, 0, 1] * 2, "read as yes = 1, no = 0"),
])
def test_verdicts_map_with_the_mapping_stated_once(values, numbers, stated):
    got, messages = _read(values)
    assert got == [float(x) for x in numbers]
    assert len(messages) == 1 and messages[0].startswith("Column 'score' holds verdicts, " + stated)


def test_inspect_numbers():
    """The C/I/P/N numbers are Inspect's own (value_to_float) where inspect-ai is installed."""
    inspect_scorer = pytest.importorskip("inspect_ai.scorer")
    to_float = inspect_scorer.value_to_float()
    for word in ("C", "I", "P", "N", "yes", "no", "true", "false"):
        assert to_float(word) == VERDICTS[word.casefold()]


def test_other_words_are_one_sentence():
    with pytest.raises(CjstatsError) as info:
        cj.read_scores(BASE.assign(score=["good", "bad", "ok", "good", "bad", "ok", "great", "poor"]))
    assert str(info.value) == ("Column 'score' holds text (8 values: 'good', 'bad', 'ok', 'great', ...) that is neither "
                               "numbers nor verdicts (C/I/P/N (Inspect), pass/fail, true/false, yes/no); recode it as "
                               "numbers before read_scores().")
    # numbers with a stray word keep the non-numeric sentence naming the word; verdicts mixed with numbers too
    with pytest.raises(CjstatsError, match=r"1 non-numeric values \(first: 'pass'"):
        cj.read_scores(BASE.assign(score=["1", "0", "pass", "1", "0", "1", "0", "1"]))


def test_rule_is_pure():
    assert verdict_mapping(["C", "I"]) == {"C": 1.0, "I": 0.0}
    assert verdict_mapping(["C", "maybe"]) is None and verdict_mapping([]) is None and verdict_mapping([1.0]) is None
    assert msg_verdicts("score_x", {"PASS": 1.0, "pass": 1.0, "fail": 0.0}) == (
        "Column 'score_x' holds verdicts, read as PASS = 1, fail = 0; recode the column as numbers to score them "
        "otherwise.")


def test_binary_verdicts_get_the_binary_note():
    rng = np.random.default_rng(3)
    rows = [("A", s, j, "pass" if rng.random() < 0.7 else "fail") for s in range(30) for j in ("j1", "j2", "j3")]
    with pytest.warns(UserWarning, match="holds verdicts"):
        scores = cj.read_scores(pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"]))
    text = cj.estimate(scores, method="anova").summary().as_text()
    assert "note: scores are binary (0/1, " in text and "a binary (logit/probit) model fits pass rates" in text


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    pytest.importorskip("inspect_ai")
    from inspect_ai.scorer import Score, accuracy, scorer

    from test_inspect import _run

    def make(words):
        it = iter(words)

        @scorer(metrics=[accuracy()], name="verdict")
        def verdict():
            async def score(state, target):
                return Score(value=next(it))
            return score
        return verdict()

    good = tmp_path_factory.mktemp("verdicts_ok")
    _run(make(["pass", "fail", "PASS", "fail"] * 3), "model-v", good)
    bad = tmp_path_factory.mktemp("verdicts_bad")
    _run(make(["pass", "maybe", "fail", "pass"] * 3), "model-w", bad)
    return good, bad


class TestInspectLogs:
    def test_words_are_mapped_and_stated_once(self, logs):
        from cjstats.io.inspect import read_inspect_log

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scores = read_inspect_log(logs[0])
        stated = [str(w.message) for w in caught if "holds verdicts" in str(w.message)]
        assert stated == ["Column 'score_verdict' holds verdicts, read as pass = 1, fail = 0; recode the column as "
                          "numbers to score them otherwise."]
        assert sorted(scores.to_frame()["score"]) == [0.0] * 6 + [1.0] * 6
        assert scores.provenance["score_mapping"] == {"score_verdict": {"pass": 1.0, "fail": 0.0, "PASS": 1.0}}

    def test_an_unknown_word_is_one_sentence(self, logs):
        from cjstats.io.inspect import read_inspect_log

        with pytest.raises(CjstatsError, match=r"^Column 'score_verdict' of the Inspect log holds 'maybe', neither a "
                                               r"number nor a verdict .*values=\{'maybe': <number>\}\)\.$"):
            read_inspect_log(logs[1])
