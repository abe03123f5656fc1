"""`cjstats doctor` on real Inspect logs (tests/data/inspect, written by Inspect itself: make_fixture.py): what it
finds, the commands it prints, and that those commands run on the table it writes."""

from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("inspect_ai")

from cli_helpers import run_main  # noqa: E402

FOLDER = Path(__file__).parent / "data" / "inspect"
LOGS = sorted(FOLDER.glob("*.eval"))
VALUE = {"C": 1.0, "P": 0.5, "I": 0.0}


def _grades():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_inspect_fixture", FOLDER / "make_fixture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.GRADES


def test_two_logs_are_stored():
    assert len(LOGS) == 2


def test_one_log_what_it_holds():
    code, out, err = run_main(["doctor", str(LOGS[0])])
    assert code == 0, err
    assert ": inspect score table, 36 scores" in out           # 6 samples x 2 epochs x 3 graders
    assert "models:            1 (mockllm/model-" in out
    assert "scenarios:         6" in out and "up to 2 per scenario" in out
    assert "judges:            3 (mockllm/ga, mockllm/gb, mockllm/gc)" in out
    assert "scores:            ordinal, 3 distinct values in [0, 1]" in out     # C / P / I read as 1 / 0.5 / 0
    assert "An Inspect log: the line above writes it as a long table" in out
    commands = out.split("Commands:")[1].split()
    assert "compare" not in commands                           # one model: nothing to compare


def test_folder_of_logs_and_the_commands_it_prints_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(["doctor", str(FOLDER)])
    assert code == 0, err
    assert "inspect score table, 72 scores" in out and "models:            2" in out
    commands = [shlex.split(line) for line in out.split("Commands:")[1].strip().splitlines()]
    assert [c[1] for c in commands] == ["doctor", "decompose", "judges", "compare", "allocate"]
    assert commands[0] == ["cjstats", "doctor", str(FOLDER), "-o", "inspect.long.csv"]
    for cmd in commands:                                       # every printed command runs, in order
        code, out, err = run_main(cmd[1:])
        assert code == 0, (cmd, err)
    table = pd.read_csv(tmp_path / "inspect.long.csv")
    # the table holds the grades the logs were written with: per model and grader, the mean of the letters
    grades = _grades()
    got = table.groupby(["model", "judge"])["score"].mean()
    for model, by_judge in grades.items():
        for judge, letters in by_judge.items():
            assert got[f"mockllm/{model}", f"mockllm/{judge}"] == pytest.approx(
                sum(VALUE[c] for c in letters) / len(letters))


def test_a_folder_without_logs_is_one_sentence(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    code, out, err = run_main(["doctor", str(tmp_path)])
    assert code == 1 and "is a folder without eval-tool files" in err


def test_drift_reads_inspect_logs_and_says_when_they_share_no_item():
    code, out, err = run_main(["drift", str(LOGS[0]), str(LOGS[1])])
    assert code == 1 and "The two runs share no anchor item (model, scenario, generation)" in err
    code, out, err = run_main(["drift", str(LOGS[0]), str(LOGS[0])])
    assert code == 1 and "same score on all 36 shared judge calls" in err
