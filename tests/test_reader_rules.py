"""One set of input rules for every reader (issue 31): the promptfoo, DeepEval and lm-eval readers, ``cjstats
monitor`` and ``Scores.load`` apply the rules of ``read_scores`` (cjstats/io/rules.py).

A judge call read twice is refused naming its two places in the file (or averaged with ``duplicates='mean'``),
never averaged silently; a header split at the wrong separator says so; an empty file and a JSON file cut short
get their own sentence, apart from a valid file of another tool; a model name is never empty; the monitor keeps
reference raters (``judge_type`` human) out of the judges, as the library does.

The files are written in each tool's own layout, as in tests/data (written by the tools themselves).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import cjstats as cj
from cjstats.cli import cli
from cjstats.exceptions import CjstatsError
from cjstats.io.deepeval import read_deepeval
from cjstats.io.lm_eval import read_lm_eval_samples
from cjstats.io.promptfoo import read_promptfoo

SAMPLES = "samples_gsm8k_2026-11-27T22-27-01.264633.jsonl"


# ---------------------------------------------------------------------------------- files in each tool's layout
def _promptfoo(n: int = 3) -> dict:
    """``promptfoo eval --output results.json``: one EvaluateResult per (provider, test), one llm-rubric each."""
    results = [{"provider": {"id": f"file://{m}.js", "label": m}, "promptIdx": 0, "promptId": "p0", "testIdx": t,
                "vars": {"question": f"q{t}"}, "success": True, "score": 0.5 + 0.1 * t,
                "gradingResult": {"pass": True, "score": 0.5 + 0.1 * t, "componentResults": [
                    {"pass": True, "score": 0.5 + 0.1 * t + 0.05 * (m == "b"),
                     "assertion": {"type": "llm-rubric", "value": "is correct",
                                   "provider": {"id": "file://grader.js", "label": "judge-x"}}}]}}
               for m in ("a", "b") for t in range(n)]
    return {"evalId": "eval-1", "results": {"version": 3, "timestamp": "2026-01-01T00:00:00Z", "results": results,
                                            "prompts": [], "stats": {"successes": len(results), "failures": 0}},
            "config": {"defaultTest": {}}}


def _deepeval(n: int = 3) -> dict:
    """DeepEval's ``TestRun.model_dump(by_alias=True)``: metricsData per test case, hyperparameters.model."""
    cases = [{"name": f"test_case_{i}", "input": f"q{i}", "actualOutput": f"a{i}", "success": True,
              "metricsData": [{"name": "Answer Relevancy", "threshold": 0.5, "success": True, "score": 0.6 + 0.1 * i,
                               "reason": "ok", "strictMode": False, "evaluationModel": "gpt-4o",
                               "evaluationCost": 0.0}], "order": i}
             for i in range(n)]
    return {"testFile": None, "testCases": cases, "conversationalTestCases": [], "metricsScores": [],
            "hyperparameters": {"model": "model-a"}, "testPassed": n, "testFailed": 0}


def _lm_eval_lines(n: int = 3) -> list[str]:
    """lm-eval 0.4's samples_<task>_<date>.jsonl: one line per (doc, filter) with its metric values."""
    return [json.dumps({"doc_id": d, "doc": {"question": f"q{d}"}, "target": str(d), "filter": f,
                        "metrics": ["exact_match"], "exact_match": float((d + (f == "flexible-extract")) % 2)})
            for d in range(n) for f in ("strict-match", "flexible-extract")]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _message(fn) -> str:
    with pytest.raises(CjstatsError) as exc:
        fn()
    msg = str(exc.value)
    assert "\n" not in msg and "Traceback" not in msg, msg
    return msg


# ----------------------------------------------------------------------------------------- duplicates
def _twice_promptfoo(tmp_path: Path) -> tuple[Path, str, str]:
    doc = _promptfoo()
    doc["results"]["results"].append(doc["results"]["results"][1])  # result 1 written again, as result 6
    return (_write(tmp_path / "results.json", json.dumps(doc, indent=2)), "results.results[1] of",
            "results.results[6] of")


def _twice_deepeval(tmp_path: Path) -> tuple[Path, str, str]:
    doc = _deepeval()
    doc["testCases"].append(doc["testCases"][2])
    return _write(tmp_path / "run.json", json.dumps(doc)), "testCases[2] of", "testCases[3] of"


def _twice_lm_eval(tmp_path: Path) -> tuple[Path, str, str]:
    lines = _lm_eval_lines()
    return (_write(tmp_path / "org__m" / SAMPLES, "\n".join([*lines, lines[2]]) + "\n"), "line 3 of",
            "line 7 of")


@pytest.mark.parametrize("reader, make", [(read_promptfoo, _twice_promptfoo), (read_deepeval, _twice_deepeval),
                                          (read_lm_eval_samples, _twice_lm_eval)],
                         ids=["promptfoo", "deepeval", "lm-eval"])
def test_a_judge_call_twice_is_refused_with_its_two_places(reader, make, tmp_path):
    path, first, second = make(tmp_path)
    msg = _message(lambda: reader(path))
    assert "1 duplicate cells" in msg and f"{first} `{path}` and {second} `{path}`" in msg, msg
    assert f"{reader.__name__}(..., duplicates='mean')" in msg and "read_scores" not in msg, msg
    # averaged only when asked, and counted, as read_scores does
    scores = reader(path, duplicates="mean")
    assert scores.provenance["duplicate_cells_averaged"] == 1
    assert sum(g.design.n_duplicates for g in scores.groups()) == 1


def test_the_same_results_file_given_twice_is_refused(tmp_path):
    a = _write(tmp_path / "a.json", json.dumps(_promptfoo()))
    b = _write(tmp_path / "copy" / "a.json", a.read_text())
    msg = _message(lambda: read_promptfoo([a, b]))
    assert f"results.results[0] of `{a}` and results.results[0] of `{b}`" in msg, msg


# ------------------------------------------------------------------------------------------ separators
def test_a_semicolon_header_holding_a_comma_is_named_as_such(tmp_path):
    # a ';' file whose last column name holds a comma: the header splits at ',' into two names
    path = _write(tmp_path / "scores.csv", "model;scenario;judge;score;note, free text\na;s1;j1;4,5;x\n"
                                           "b;s1;j1;3;y\n")
    msg = _message(lambda: cj.read_scores(path))
    assert "the file looks `;`-separated" in msg and "into model, scenario, judge, score, note" in msg, msg
    tab = _write(tmp_path / "tab.csv", "model\tscenario\tjudge\tscore\tnote, free\na\ts1\tj1\t4\tx\n")
    assert "the file looks `tab`-separated" in _message(lambda: cj.read_scores(tab))


def _pair_table(n: int = 30, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [(m, f"s{i}", f"j{k}", float(np.clip(np.round(mu + rng.normal(0, 0.8)), 1, 5)))
            for i in range(n) for m, mu in (("a", 3.9), ("b", 3.2)) for k in range(3)]
    return pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])


def _monitor(*args: str):
    return CliRunner().invoke(cli, ["monitor", *args])


def test_monitor_reads_a_semicolon_file_as_read_scores_does(tmp_path):
    df = _pair_table()
    df.loc[0, "score"] = 4.5                       # a decimal comma in the ';' file
    comma = tmp_path / "comma.csv"
    df.to_csv(comma, index=False)
    semi = tmp_path / "semi.csv"
    df.to_csv(semi, index=False, sep=";", decimal=",")
    want = _monitor(str(comma), "--models", "a,b", "--bounds", "1,5")
    got = _monitor(str(semi), "--models", "a,b", "--bounds", "1,5")
    assert want.exit_code == 0 and got.exit_code == 0, (want.output, got.exception)
    assert got.output == want.output


# ------------------------------------------------------------------------------- cut short, empty, foreign
@pytest.mark.parametrize("reader, doc", [(read_promptfoo, _promptfoo()), (read_deepeval, _deepeval())],
                         ids=["promptfoo", "deepeval"])
@pytest.mark.parametrize("keep", [0.2, 0.5, 0.77, 0.999])
def test_a_json_file_cut_short_is_named_as_such(reader, doc, keep, tmp_path):
    text = json.dumps(doc, indent=2)
    cut = text[: int(len(text) * keep)]
    path = _write(tmp_path / "results.json", cut)
    line = cut.rstrip().count("\n") + 1
    assert _message(lambda: reader(path)) == (f"`{path}` is cut short at line {line} (the file ends inside a JSON "
                                              f"value): rewrite it or re-run the eval.")


def test_an_lm_eval_file_cut_short_is_named_as_such(tmp_path):
    text = "\n".join(_lm_eval_lines()) + "\n"
    path = _write(tmp_path / "org__m" / SAMPLES, text[:-40])
    assert _message(lambda: read_lm_eval_samples(path)).startswith(f"`{path}` is cut short at line 6 (the file ends "
                                                                   f"inside a JSON value)")


def test_a_broken_json_file_is_not_called_cut_short(tmp_path):
    path = _write(tmp_path / "results.json", json.dumps(_promptfoo()).replace('"testIdx": 1', '"testIdx": 1,,'))
    msg = _message(lambda: read_promptfoo(path))
    assert "not valid JSON" in msg and "cut short" not in msg


def test_a_valid_file_of_another_tool_names_the_key_it_lacks(tmp_path):
    path = _write(tmp_path / "run.json", json.dumps(_deepeval()))
    assert _message(lambda: read_promptfoo(path)).startswith(
        f"`{path}` is not a promptfoo results file: it has no `results` key;")
    assert "is not a DeepEval test run" in _message(lambda: read_deepeval(_write(tmp_path / "r.json",
                                                                                json.dumps(_promptfoo()))))


@pytest.mark.parametrize("reader, name, what", [(read_promptfoo, "results.json", "promptfoo results"),
                                                (read_deepeval, "run.json", "DeepEval test-run"),
                                                (read_lm_eval_samples, SAMPLES, "lm-eval samples")])
def test_an_empty_file_is_named_empty(reader, name, what, tmp_path):
    path = _write(tmp_path / "org__m" / name, "\n")
    assert _message(lambda: reader(path)) == f"The {what} file `{path}` is empty: it has no JSON in it."


# ---------------------------------------------------------------------------------------- model names
def test_lm_eval_in_the_current_folder_is_named_after_it(tmp_path, monkeypatch):
    folder = tmp_path / "org__mine"
    _write(folder / SAMPLES, "\n".join(_lm_eval_lines()) + "\n")
    monkeypatch.chdir(folder)
    assert read_lm_eval_samples(SAMPLES).models == ["org/mine"]


def test_lm_eval_model_from_the_results_file_when_model_name_is_empty(tmp_path, monkeypatch):
    # lm-eval writes model_name '' when model_args names no pretrained=/model=/path=; here it names one
    _write(tmp_path / "run" / SAMPLES, "\n".join(_lm_eval_lines()) + "\n")
    results = {"results": {}, "config": {"model": "vllm", "model_args": "pretrained=org/x,dtype=auto"},
               "model_name": "", "model_name_sanitized": ""}
    _write(tmp_path / "run" / "results_2026-11-27T22-27-01.264633.json", json.dumps(results))
    monkeypatch.chdir(tmp_path / "run")
    assert read_lm_eval_samples(SAMPLES).models == ["org/x"]


# -------------------------------------------------------------------------------------------- monitor
def test_monitor_keeps_human_raters_out_of_the_judges(tmp_path):
    """MentalAlign, Empathy, gpt-4o - human-original: the library gives 1.102 (human rows are reference raters);
    counting them as judges gave 1.235."""
    table = cj.datasets.table("mentalalign")
    path = tmp_path / "empathy.csv"
    table[table["criterion"] == "Empathy"].to_csv(path, index=False)
    lib = cj.confidence_sequence(cj.read_scores(path), "gpt-4o", "human-original", bounds=(1, 5))
    out = _monitor(str(path), "--models", "gpt-4o,human-original", "--bounds", "1,5", "--format", "json")
    assert out.exit_code == 0, out.exception
    rows = json.loads(out.output)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert len(rows) == len(lib.table) == 1000
    assert rows[-1]["estimate"] == pytest.approx(lib.table["estimate"].iloc[-1], abs=1e-12)
    assert round(rows[-1]["estimate"], 3) == 1.102


def test_monitor_refuses_a_judge_call_twice(tmp_path):
    df = _pair_table()
    path = tmp_path / "s.csv"
    pd.concat([df, df.iloc[[4]]]).to_csv(path, index=False)
    out = _monitor(str(path), "--models", "a,b", "--bounds", "1,5")
    assert isinstance(out.exception, CjstatsError) and "lines 6 and 182" in str(out.exception), out.exception
    assert _monitor(str(path), "--models", "a,b", "--bounds", "1,5", "--duplicates", "mean").exit_code == 0


def test_monitor_orders_scenarios_by_a_number_column(tmp_path):
    df = _pair_table(n=12)
    df["t"] = df["scenario"].str[1:].astype(int).map(lambda i: 11 - i)   # s11 first, ..., s0 last: 10 < 9 as text
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    out = _monitor(str(path), "--models", "a,b", "--bounds", "1,5", "--order", "t", "--format", "json")
    rows = json.loads(out.output)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert [r["scenario"] for r in rows] == [f"s{i}" for i in range(11, -1, -1)]
    assert "names column 'zz'" in str(_monitor(str(path), "--models", "a,b", "--bounds", "1,5", "--order",
                                               "zz").exception)


# ----------------------------------------------------------------------------------------- Scores.load
def test_scores_load_refuses_a_saved_table_edited_to_hold_a_call_twice(tmp_path):
    saved = cj.read_scores(_pair_table()).save(tmp_path / "t")
    frame = pd.read_parquet(saved / "scores.parquet")
    pd.concat([frame, frame.iloc[[3]]]).to_parquet(saved / "scores.parquet")
    msg = _message(lambda: cj.Scores.load(saved))
    assert "was changed after scores.save" in msg and "1 duplicate cells" in msg and "rows 3 and 180" in msg, msg
    frame.loc[7, "score"] = np.nan
    frame.to_parquet(saved / "scores.parquet")
    assert "1 missing (NaN) values (first in row 7)" in _message(lambda: cj.Scores.load(saved))
