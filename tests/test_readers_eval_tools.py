"""The readers of promptfoo, DeepEval and lm-eval files (issue 23): each equals a table built by hand from the
same file, and a foreign or broken file is refused with one sentence.

The fixtures were written by the tools themselves: tests/data/promptfoo/results.json by promptfoo 0.123.1
(`promptfoo eval --repeat 2 --output results.json` on promptfooconfig.yaml, offline JS providers and llm-rubric
graders beside it); tests/data/deepeval/*.json by DeepEval 4.3.1's TestRun.save and
tests/data/lm_eval/*/samples_*.jsonl by lm-eval 0.4.13's EvaluationTracker (make_fixture.py beside each).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cjstats.exceptions import CjstatsError
from cjstats.io.deepeval import read_deepeval
from cjstats.io.lm_eval import read_lm_eval_samples
from cjstats.io.promptfoo import read_promptfoo

DATA = Path(__file__).parent / "data"
PROMPTFOO = DATA / "promptfoo" / "results.json"
DEEPEVAL = DATA / "deepeval"
LM_EVAL = DATA / "lm_eval"


def _same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    cols = list(want.columns)
    keys = [c for c in cols if c != "score"]
    got = got[cols].astype({k: str for k in keys}).sort_values(keys).reset_index(drop=True)
    want = want.astype({k: str for k in keys}).sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_promptfoo_equals_hand_table():
    rows = json.loads(PROMPTFOO.read_text())["results"]["results"]
    # by hand: the file's 3 questions were run twice (--repeat 2, testIdx 0..5); grader = the llm-rubric's provider label
    first: dict[str, int] = {}
    for r in sorted(rows, key=lambda r: r["testIdx"]):
        first.setdefault(r["vars"]["question"], r["testIdx"])
    want = []
    for r in rows:
        q = r["vars"]["question"]
        for c in r["gradingResult"]["componentResults"]:
            a = c["assertion"]
            judge = a["provider"]["label"] if a["type"] == "llm-rubric" else a["type"]
            want.append({"model": r["provider"]["label"], "scenario": first[q],
                         "generation": int(r["testIdx"] != first[q]), "judge": judge, "score": float(c["score"])})
    want = pd.DataFrame(want)
    scores = read_promptfoo(PROMPTFOO)       # the deterministic `contains` check is no judge: left out, counted
    _same(scores.to_frame(), want[want["judge"] != "contains"].reset_index(drop=True))
    assert set(scores.to_frame()["judge"]) == {"judge-x", "judge-y"}
    assert scores.provenance["deterministic"] == {"contains": {"results": 12, "passed": 12}}
    assert scores.provenance["format"] == "promptfoo" and "pass/fail" in scores.provenance["mapping"]
    assert len(scores.to_frame()) == 2 * 6 * 2
    _same(read_promptfoo(PROMPTFOO, deterministic="judge").to_frame(), want)   # or read as a judge on request


def test_deepeval_equals_hand_table():
    want = []
    for f in sorted(DEEPEVAL.glob("*.json")):
        run = json.loads(f.read_text())
        for case in run["testCases"]:
            for m in case["metricsData"]:
                want.append({"model": run["hyperparameters"]["model"], "scenario": case["name"], "generation": 0,
                             "judge": m["evaluationModel"], "criterion": m["name"], "score": m["score"]})
    scores = read_deepeval(DEEPEVAL)
    _same(scores.to_frame(), pd.DataFrame(want))
    assert scores.provenance["passed"] == sum(r["score"] >= 0.5 for r in want)


def test_deepeval_wrapped_and_model_argument(tmp_path):
    run = json.loads(next(DEEPEVAL.glob("*.json")).read_text())
    run.pop("hyperparameters")
    (tmp_path / "latest.json").write_text(json.dumps({"testRunData": run}))
    frame = read_deepeval(tmp_path / "latest.json", model="mine").to_frame()
    assert set(frame["model"]) == {"mine"} and len(frame) == 12


def test_lm_eval_equals_hand_table():
    want = []
    for f in sorted(LM_EVAL.rglob("samples_*.jsonl")):
        model = json.loads(next(f.parent.glob("results_*.json")).read_text())["model_name"]
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            for m in rec["metrics"]:
                want.append({"model": model, "scenario": rec["doc_id"], "generation": 0,
                             "judge": f"{m},{rec['filter']}", "score": float(rec[m])})
    scores = read_lm_eval_samples(LM_EVAL)
    _same(scores.to_frame(), pd.DataFrame(want))
    assert set(scores.to_frame()["model"]) == {"org/model-a", "org/model-b"}


def test_lm_eval_model_from_folder_when_no_results_file(tmp_path):
    src = next(LM_EVAL.rglob("samples_*.jsonl"))
    (tmp_path / "org__other").mkdir()
    (tmp_path / "org__other" / src.name).write_text(src.read_text())
    assert set(read_lm_eval_samples(tmp_path).to_frame()["model"]) == {"org/other"}


def _one_sentence(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and "Traceback" not in msg and msg.endswith("."), msg
    return msg


@pytest.mark.parametrize("reader, foreign", [
    (read_promptfoo, DEEPEVAL / "test_run_model-a.json"),
    (read_deepeval, PROMPTFOO),
])
def test_foreign_json_is_refused(reader, foreign):
    with pytest.raises(CjstatsError) as exc:
        reader(foreign)
    assert "is not a" in _one_sentence(exc)


@pytest.mark.parametrize("reader", [read_promptfoo, read_deepeval])
def test_broken_json_is_refused(reader, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CjstatsError) as exc:
        reader(bad)
    assert "not valid JSON" in _one_sentence(exc)


def test_lm_eval_refuses_other_jsonl(tmp_path):
    bad = tmp_path / "samples_x_2024-01-01T00-00-00.jsonl"
    bad.write_text('{"question_id": 1, "score": 3}\n')
    with pytest.raises(CjstatsError) as exc:
        read_lm_eval_samples(bad)
    assert "not an lm-eval samples file" in _one_sentence(exc)


@pytest.mark.parametrize("reader", [read_promptfoo, read_deepeval, read_lm_eval_samples])
def test_missing_file_is_one_sentence(reader, tmp_path):
    with pytest.raises(CjstatsError) as exc:
        reader(tmp_path / "nope.json")
    assert "does not exist" in _one_sentence(exc)


def test_promptfoo_grader_fallbacks_and_errors(tmp_path):
    doc = json.loads(PROMPTFOO.read_text())
    rows = doc["results"]["results"]
    for r in rows:
        for c in r["gradingResult"]["componentResults"]:
            if c["assertion"]["type"] == "llm-rubric" and c["assertion"]["provider"]["label"] == "judge-x":
                del c["assertion"]["provider"]           # falls back to the config's defaultTest grader
    doc["config"]["defaultTest"]["options"] = {"provider": {"id": "openai:gpt-4o-mini"}}
    rows[0]["testCase"]["options"] = {"provider": "anthropic:claude"}   # the test's own grader wins
    errored = dict(rows[-1], gradingResult=None, error="timeout")
    doc["results"]["results"] = rows[:-1] + [errored]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    scores = read_promptfoo(path)
    frame = scores.to_frame()
    assert set(frame["judge"]) == {"openai:gpt-4o-mini", "anthropic:claude", "judge-y"}
    assert (frame["judge"] == "anthropic:claude").sum() == 1
    assert scores.provenance["errored_results"] == 1 and len(frame) == 24 - 2


def test_doctor_detects_fastchat(tmp_path):
    from cjstats.io.doctor import detect_format

    path = tmp_path / "gpt-4_single.jsonl"
    path.write_text("".join(json.dumps({"question_id": q, "model": m, "judge": [j, "single-v1"], "score": 5,
                                        "turn": 1}) + "\n" for q in (1, 2) for m in ("a", "b") for j in ("gpt-4",)))
    assert detect_format(path) == "fastchat"
