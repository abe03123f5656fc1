"""`cjstats drift BEFORE AFTER`: the per-judge changes, the tests and a one-line verdict (mirrors cj.judge_drift)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cli_helpers import run_main

JUDGES = ["J1", "J2", "J3", "J4"]


def _runs(shift: float, seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """40 anchor scenarios x 2 models x 4 judges judged twice; judge J2 moves by `shift` in the second run."""
    rng = np.random.default_rng(seed)
    rows = [(m, f"s{i}", j) for m in ("m1", "m2") for i in range(40) for j in JUDGES]
    b = pd.DataFrame(rows, columns=["model", "scenario", "judge"])
    item = rng.normal(0, 1, 80).repeat(4)
    offset = np.tile([-0.3, 0.0, 0.1, 0.2], 80)
    b["score"] = 3 + item + offset + rng.normal(0, 0.4, len(b))
    a = b.assign(score=3 + item + offset + shift * (b["judge"] == "J2") + rng.normal(0, 0.4, len(b)))
    return b, a


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("drift")
    b, a = _runs(0.8)
    b.to_csv(d / "before.csv", index=False)
    a.to_csv(d / "after.csv", index=False)
    a[a["judge"] != "J4"].to_csv(d / "three_judges.csv", index=False)
    a[a["scenario"] != "s0"].to_csv(d / "fewer_items.csv", index=False)
    return d


def test_prints_the_changes_the_tests_and_the_verdict(files, tmp_path):
    code, out, err = run_main(["drift", str(files / "before.csv"), str(files / "after.csv"), "--labels", "may,june",
                               "--plot", str(tmp_path / "drift.png")])
    assert code == 0, err
    lib = cj.judge_drift(pd.read_csv(files / "before.csv"), pd.read_csv(files / "after.csv"))
    assert lib.flagged() == ["J2"]
    assert "Judge drift, june - may" in out and "equal_drift" in out and "p_chisq" in out
    assert f"{lib.drift.set_index('judge').loc['J2', 'estimate']:.3f}"[:4] in out
    assert out.rstrip().splitlines()[-1].startswith("DRIFT: J2 changed at level 0.05 (holm-adjusted)")
    assert (tmp_path / "drift.png").stat().st_size > 5000 and "Wrote" in err


def test_json_has_the_library_numbers(files):
    code, out, _ = run_main(["drift", str(files / "before.csv"), str(files / "after.csv"), "--format", "json",
                             "--adjust", "bonferroni"])
    assert code == 0
    got = json.loads(out)
    lib = cj.judge_drift(pd.read_csv(files / "before.csv"), pd.read_csv(files / "after.csv"), adjust="bonferroni")
    est = {r["judge"]: r["estimate"] for r in got["drift"]}
    for judge, value in lib.drift.set_index("judge")["estimate"].items():
        assert est[judge] == pytest.approx(value, rel=1e-9)
    assert [r["test"] for r in got["tests"]] == ["panel_mean", "equal_drift", "no_drift"]
    assert got["verdict"].startswith("DRIFT: J2")


def test_no_drift_says_so(tmp_path):
    b, a = _runs(0.0, seed=4)
    b.to_csv(tmp_path / "b.csv", index=False)
    a.to_csv(tmp_path / "a.csv", index=False)
    code, out, _ = run_main(["drift", str(tmp_path / "b.csv"), str(tmp_path / "a.csv"), "--method", "anova"])
    assert code == 0 and out.rstrip().splitlines()[-1].startswith("NO DRIFT DETECTED at level 0.05")


@pytest.mark.parametrize("args, words", [
    (["after.csv", "three_judges.csv"], "different judges (only before: J4)"),
    (["before.csv", "three_judges.csv"], "keep the shared ones with --judges A,B"),
    (["before.csv", "fewer_items.csv"], "pass --unshared drop to keep the 78 shared ones"),
    (["before.csv", "missing.csv"], "AFTER `"),
    (["before.csv", "before.csv"], "same score on all 320 shared judge calls"),
    (["before.csv", "after.csv", "--judges", "J9"], "BEFORE `"),
    (["before.csv", "after.csv", "--labels", "one"], "The option --labels takes two names"),
    (["before.csv", "after.csv", "--plot", "d.txt"], "The option --plot takes a .png, .pdf or .svg"),
    (["before.csv", "after.csv", "--judges", "J9"], "The option --judges names 'J9', which is not in it"),
    (["before.csv", "after.csv", "--composite"], "has no 'criterion' column"),
])
def test_errors_are_one_sentence(files, args, words):
    argv = ["drift", *[str(files / a) if a.endswith(".csv") else a for a in args]]
    code, out, err = run_main(argv)
    assert code == 1 and out == "" and words in err and "Traceback" not in err
    assert err.strip().count("\n") == 0, err


def test_shared_judges_and_items_when_asked(files):
    code, out, _ = run_main(["drift", str(files / "before.csv"), str(files / "three_judges.csv"),
                             "--judges", "J1,J2,J3"])
    assert code == 0 and "DRIFT: J2" in out
    code, out, err = run_main(["drift", str(files / "before.csv"), str(files / "fewer_items.csv"), "--unshared",
                               "drop"])
    assert code == 0 and "kept the 78 shared items" in err and " 78" in out
