"""``cjstats monitor`` reads its data as every data subcommand does: ``--dataset``, ``--where``, ``--criteria``
(``--criterion`` is its earlier spelling), ``--judges``, ``--exclude-judges``, ``--columns``, ``--composite``; the
sequence it prints is the library's :func:`cjstats.confidence_sequence` on the same table, human raters left
out of the judges (``judge_type``); and HANNA, its parse-failure scores dropped at load, passes ``--bounds 1,5``.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import cjstats as cj
from cjstats.cli import cli
from cli_helpers import run_main

from test_cli_data import DATA_OPTIONS

PAIR = ("gpt-4o", "claude-3.5-haiku")


def _json(args):
    code, out, err = run_main(["monitor", *args, "--format", "json"])
    assert code == 0, err
    return pd.DataFrame(json.loads(out))


def _same(cli_rows: pd.DataFrame, lib) -> None:
    t = lib.table
    assert list(cli_rows["scenario"].astype(str)) == list(t["scenario"].astype(str))
    for col in ("x", "estimate", "lower", "upper"):
        assert cli_rows[col].to_numpy() == pytest.approx(t[col].to_numpy(), rel=1e-12, abs=1e-12), col
    assert set(cli_rows["decision"]) == {lib.decision}


def test_monitor_takes_the_shared_data_options():
    params = {p.name for p in cli.commands["monitor"].params}
    assert DATA_OPTIONS | {"dataset", "max_drop", "criterion"} <= params
    assert next(p for p in cli.commands["monitor"].params if p.name == "file").required is False


@pytest.fixture(scope="module")
def mentalalign():
    return cj.datasets.load("mentalalign")


def test_mentalalign_empathy_is_the_librarys_sequence(mentalalign):
    got = _json(["--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5", "--criteria", "Empathy"])
    lib = cj.confidence_sequence(mentalalign, *PAIR, bounds=(1, 5), criterion="Empathy")
    _same(got, lib)
    assert len(got) == 1000 and lib.decision == "STOP"
    # the printed numbers, too
    code, out, _ = run_main(["monitor", "--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5",
                             "--criteria", "Empathy"])
    last = lib.table.iloc[-1]
    assert code == 0 and f"Now: estimate {last['estimate']:.4g}, CS [{last['lower']:.4g}, {last['upper']:.4g}]" in out
    assert out.rstrip().endswith(lib.decision)


def test_the_human_expert_is_no_judge(mentalalign):
    """The bundled table holds the human-expert rows (judge_type human): they are left out of the panel."""
    table = cj.datasets.table("mentalalign")
    assert (table["judge_type"] == "human").any()
    got = _json(["--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5", "--criteria", "Empathy"])
    with_humans_as_judges = cj.read_scores(table[table["criterion"] == "Empathy"].drop(columns="judge_type"))
    wrong = cj.confidence_sequence(with_humans_as_judges, *PAIR, bounds=(1, 5))
    assert got["x"].to_numpy() != pytest.approx(wrong.table["x"].to_numpy())


def test_criterion_is_the_earlier_spelling_of_criteria(mentalalign):
    a = _json(["--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5", "--criterion", "Empathy"])
    b = _json(["--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5", "--criteria", "Empathy"])
    pd.testing.assert_frame_equal(a, b)
    code, out, err = run_main(["monitor", "--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5",
                               "--criterion", "Empathy", "--criteria", "Safety"])
    assert code == 1 and out == "" and "--criterion is the earlier spelling of --criteria" in err


def test_several_criteria_ask_for_one_or_the_composite(mentalalign):
    code, out, err = run_main(["monitor", "--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5"])
    assert code == 1 and out == ""
    assert err.startswith("The table of --dataset mentalalign has 7 criteria (Empathy, ")
    assert "monitor one with --criteria NAME, or their mean with --composite." in err
    got = _json(["--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5", "--composite"])
    _same(got, cj.confidence_sequence(mentalalign.composite(), *PAIR, bounds=(1, 5)))


def test_judges_where_and_exclude_judges_are_the_librarys_subsets(mentalalign):
    two = ["gpt-4o", "o4-mini"]
    got = _json(["--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5", "--criteria", "Empathy",
                 "--judges", ",".join(two)])
    _same(got, cj.confidence_sequence(mentalalign.subset(judges=two), *PAIR, bounds=(1, 5), criterion="Empathy"))
    where = _json(["--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5", "--criteria",
                   "Empathy", "--where", "judge=gpt-4o", "--where", "judge=o4-mini"])
    pd.testing.assert_frame_equal(where, got)
    rest = [j for j in mentalalign.judges if j != "gpt-4o"]
    excl = _json(["--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5", "--criteria", "Empathy",
                  "--exclude-judges", "gpt-4o"])
    _same(excl, cj.confidence_sequence(mentalalign.subset(judges=rest), *PAIR, bounds=(1, 5), criterion="Empathy"))


def test_columns_renames_a_file_and_the_order_still_follows_it(tmp_path):
    df = cj.datasets.table("mentalalign").query("criterion == 'Empathy' and model in @PAIR")
    df = df.iloc[::-1].rename(columns={"judge": "rater", "scenario": "item"})       # arrival: last context first
    path = tmp_path / "ma.csv"
    df.to_csv(path, index=False)
    got = _json([str(path), "--columns", "rater=judge,item=scenario", "--models", ",".join(PAIR), "--bounds", "1,5"])
    assert got["scenario"].iloc[0] == str(df["item"].iloc[0])
    back = cj.read_scores(df.rename(columns={"rater": "judge", "item": "scenario"}))
    _same(got, cj.confidence_sequence(back, *PAIR, bounds=(1, 5), order=list(dict.fromkeys(df["item"].astype(str)))))


def test_monitor_drops_nothing_so_incomplete_is_refused():
    code, out, err = run_main(["monitor", "--dataset", "mentalalign", "--models", ",".join(PAIR), "--bounds", "1,5",
                               "--criteria", "Empathy", "--incomplete", "drop"])
    assert code == 1 and out == "" and err.startswith("The option --incomplete is not used by monitor")


def test_hanna_passes_bounds_1_5_now_that_its_sentinels_are_dropped(tmp_path):
    got = _json(["--dataset", "hanna", "--models", "GPT-2,Human", "--bounds", "1,5", "--criteria", "Coherence"])
    lib = cj.confidence_sequence(cj.datasets.load("hanna"), "GPT-2", "Human", bounds=(1, 5), criterion="Coherence")
    _same(got, lib)
    # as shipped (keep_sentinels), a score below 1 lies outside --bounds 1,5, and the command says so
    path = tmp_path / "hanna_raw.csv"
    cj.datasets.export("hanna", path, keep_sentinels=True)
    code, out, err = run_main(["monitor", str(path), "--models", "GPT,Human", "--bounds", "1,5", "--criteria",
                               "Coherence"])
    assert code == 1 and out == "" and "--bounds" in err
    exported = tmp_path / "hanna.csv"
    cj.datasets.export("hanna", exported)
    code, out, err = run_main(["monitor", str(exported), "--models", "GPT,Human", "--bounds", "1,5", "--criteria",
                               "Coherence"])
    assert code == 0, err
