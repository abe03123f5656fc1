"""`cjstats doctor` on several files, globs and folders, for every eval-tool reader (issue 36): every command it
prints runs, in order, on each reader's fixture; promptfoo's deterministic assertions (`contains`, ...) are
checks, not judges; errored results are counted and the design is then never "complete"."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cjstats.exceptions import CjstatsError
from cjstats.io.promptfoo import read_promptfoo
from cli_helpers import run_main

DATA = Path(__file__).parent / "data"
PROMPTFOO = DATA / "promptfoo" / "results.json"
DEEPEVAL = sorted((DATA / "deepeval").glob("test_run_*.json"))


def _jitter(score: float, rng: np.random.Generator) -> float:
    return round(float(score) + float(rng.uniform(-0.05, 0.05)), 4)


def _deepeval_runs(tmp_path: Path) -> list[Path]:
    """The two DeepEval runs (one file per model) with a fixed, small non-additive term added to each score: the
    stored fixture's scores are exactly scenario + judge + criterion offsets, so `cjstats compare` rightly refuses
    them (no residual variance); the printed commands are tested on runs a fit can use."""
    folder = tmp_path / "deepeval"
    folder.mkdir(exist_ok=True)
    rng = np.random.default_rng(36)
    out = []
    for f in DEEPEVAL:
        doc = json.loads(f.read_text())
        run = doc.get("testRunData", doc)
        for case in run["testCases"]:
            for metric in case["metricsData"]:
                metric["score"] = _jitter(metric["score"], rng)
        out.append(folder / f.name)
        out[-1].write_text(json.dumps(doc))
    return out


def _promptfoo(tmp_path: Path, metrics: bool) -> Path:
    """The promptfoo fixture with a fixed non-additive term added to the graders' scores (the offline graders
    score exactly answer + judge offset, which `cjstats compare` rightly refuses: no residual variance).
    With ``metrics``, both llm-rubric graders score `quality` and `contains` scores `format`: read as a judge,
    `contains` was the only judge of criterion `format`, and every printed command failed."""
    doc = json.loads(PROMPTFOO.read_text())
    rng = np.random.default_rng(36)
    for r in doc["results"]["results"]:
        for c in r["gradingResult"]["componentResults"]:
            if c["assertion"]["type"] == "llm-rubric":
                c["score"] = _jitter(c["score"], rng)
            if metrics:
                c["assertion"]["metric"] = "format" if c["assertion"]["type"] == "contains" else "quality"
    path = tmp_path / ("metrics" if metrics else "plain") / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    return path


def _commands(out: str) -> list[list[str]]:
    return [shlex.split(line) for line in out.split("Commands:")[1].strip().splitlines()]


def _run_printed(args: list[str]) -> tuple[str, list[list[str]]]:
    """doctor ARGS, then every command it prints, in order; each must exit 0."""
    code, out, err = run_main(["doctor", *args])
    assert code == 0, err
    commands = _commands(out)
    assert commands[0][:2] == ["cjstats", "doctor"] and "-o" in commands[0]
    for cmd in commands:
        code, cmd_out, err = run_main(cmd[1:])
        assert code == 0, (cmd, err)
    return out, commands


@pytest.mark.parametrize("case", ["deepeval-two-files", "deepeval-glob", "deepeval-folder", "lm-eval-folder",
                                  "promptfoo", "promptfoo-metrics", "inspect-folder"])
def test_printed_commands_run_on_every_reader_fixture(case, tmp_path, monkeypatch):
    if case == "inspect-folder":
        pytest.importorskip("inspect_ai")
    runs = _deepeval_runs(tmp_path)
    args = {"deepeval-two-files": [str(p) for p in runs],
            "deepeval-glob": [str(tmp_path / "deepeval" / "test_run_*.json")],
            "deepeval-folder": [str(tmp_path / "deepeval")],
            "lm-eval-folder": [str(DATA / "lm_eval")],
            "promptfoo": [str(_promptfoo(tmp_path, metrics=False))],
            "promptfoo-metrics": [str(_promptfoo(tmp_path, metrics=True))],
            "inspect-folder": [str(DATA / "inspect")]}[case]
    monkeypatch.chdir(tmp_path)
    out, commands = _run_printed(args)
    assert "models:            2" in out                       # every fixture holds two models
    assert [c[1] for c in commands] == ["doctor", "decompose", "judges", "compare", "allocate"]
    table = pd.read_csv(tmp_path / commands[0][-1])
    assert table["model"].nunique() == 2
    if case.startswith("promptfoo"):
        assert set(table["judge"]) == {"judge-x", "judge-y"}    # contains is a check, not a judge
        assert "checks:            contains (12 results, 12 passed)" in out
        assert "criterion" not in table                         # `format` was contains' only: no criterion left


def test_several_files_print_one_command_that_takes_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = _deepeval_runs(tmp_path)
    out, commands = _run_printed([str(p) for p in runs])
    assert commands[0] == ["cjstats", "doctor", *map(str, runs), "-o", "deepeval.long.csv"]
    # a glob is printed quoted, so the printed command hands the pattern itself to cjstats
    code, out, err = run_main(["doctor", str(DATA / "deepeval" / "*.json")])
    assert code == 0, err
    assert f"cjstats doctor '{DATA / 'deepeval' / '*.json'}' -o deepeval.long.csv" in out


def _promptfoo_errored(tmp_path: Path) -> Path:
    """One result errored before grading (no gradingResult), one while grading (failureReason 2 with the
    grade it had): both are left out; the four results that only failed an assertion (failureReason 1) stay."""
    doc = json.loads(PROMPTFOO.read_text())
    rows = doc["results"]["results"]
    rows[0] = dict(rows[0], gradingResult=None, error="API error: 500", failureReason=2, success=False)
    rows[1] = dict(rows[1], error="Assertion grading failed", failureReason=2, success=False)
    path = tmp_path / "errored.json"
    path.write_text(json.dumps(doc))
    return path


def test_promptfoo_errored_results_are_counted_and_reported(tmp_path):
    path = _promptfoo_errored(tmp_path)
    scores = read_promptfoo(path)
    assert scores.provenance["errored_results"] == 2
    assert len(scores.to_frame()) == (12 - 2) * 2                # two judges per kept result
    code, out, err = run_main(["doctor", str(path)])
    assert code == 0, err
    assert "design:            incomplete (2 errored result(s) left out)" in out
    assert "design:            complete" not in out
    assert "2 result(s) errored" in out


def test_assertion_failures_are_scores_not_errors():
    scores = read_promptfoo(PROMPTFOO)                          # four results failed an assertion (failureReason 1)
    assert scores.provenance["errored_results"] == 0 and len(scores.to_frame()) == 12 * 2
    code, out, err = run_main(["doctor", str(PROMPTFOO)])
    assert "design:            complete" in out


def test_deepeval_errored_metric_is_reported(tmp_path):
    doc = json.loads(DEEPEVAL[0].read_text())
    run = doc.get("testRunData", doc)
    metric = run["testCases"][0]["metricsData"][0]
    metric.update(score=None, success=False, error="Evaluation LLM timed out")
    a = tmp_path / DEEPEVAL[0].name
    a.write_text(json.dumps(doc))
    code, out, err = run_main(["doctor", str(a), str(DEEPEVAL[1])])
    assert code == 0, err
    assert "design:            incomplete (1 errored result(s) left out)" in out


def test_deterministic_assertions_are_checks_not_judges(tmp_path):
    from cjstats.io.promptfoo import model_graded

    assert model_graded("llm-rubric") and model_graded("not-llm-rubric") and model_graded("g-eval")
    assert model_graded("model-graded-closedqa") and model_graded("factuality") and model_graded("similar:cosine")
    for kind in ("contains", "not-contains", "equals", "regex", "is-json", "javascript", "python", "max-score"):
        assert not model_graded(kind), kind
    scores = read_promptfoo(PROMPTFOO)
    assert scores.judges == ["judge-x", "judge-y"]
    assert scores.provenance["deterministic"] == {"contains": {"results": 12, "passed": 12}}
    kept = read_promptfoo(PROMPTFOO, deterministic="judge")    # the old reading, on request
    assert kept.judges == ["contains", "judge-x", "judge-y"]
    with pytest.raises(CjstatsError, match="deterministic='drop'; give 'exclude'"):
        read_promptfoo(PROMPTFOO, deterministic="drop")
    doc = json.loads(PROMPTFOO.read_text())
    for r in doc["results"]["results"]:
        r["gradingResult"]["componentResults"] = [c for c in r["gradingResult"]["componentResults"]
                                                  if c["assertion"]["type"] == "contains"]
    only = tmp_path / "only_checks.json"
    only.write_text(json.dumps(doc))
    with pytest.raises(CjstatsError) as exc:
        read_promptfoo(only)
    assert "holds only deterministic assertions (contains)" in str(exc.value) and "\n" not in str(exc.value)


def test_mixed_formats_and_several_tables_are_one_sentence(tmp_path):
    code, out, err = run_main(["doctor", str(PROMPTFOO), str(DEEPEVAL[0])])
    assert code == 1 and "The files are of different formats:" in err and "is promptfoo" in err
    for name in ("a.csv", "b.csv"):
        pd.DataFrame({"model": ["m"], "scenario": [1], "judge": ["j"], "score": [1.0]}).to_csv(tmp_path / name)
    code, out, err = run_main(["doctor", str(tmp_path / "a.csv"), str(tmp_path / "b.csv")])
    assert code == 1 and "cjstats doctor got 2 score tables" in err and "Traceback" not in err
    code, out, err = run_main(["doctor", str(tmp_path / "nothing_*.json")])
    assert code == 1 and "The pattern" in err and "matches no file" in err
