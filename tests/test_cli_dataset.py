"""The command line on the bundled data: ``--dataset NAME`` on every data subcommand, ``cjstats datasets``, a
filter that removes the human raters, quoted names, and the out-of-core guard for human raters.

The walk runs every data subcommand with its defaults on both bundled tables (HANNA: its 346 parse-failure scores
dropped at load, so a few judge calls are missing and ``--method auto`` picks REML, as on MentalAlign, whose
judges missed a few calls); ``humans`` must
find each table's human raters, which ``Scores.to_frame()`` would have left out.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import cjstats as cj
from cjstats.cli import cli
from cjstats.cli._app import DATASETS
from cli_helpers import run_main

DATA_SUBCOMMANDS = ["decompose", "judges", "variance", "allocate", "compare", "humans", "report", "monitor", "gstudy"]
EXTRA = {"allocate": ["--budget", "480"]}
METHOD_LINE = {"hanna": "Method: reml (--method auto: model 'BertGeneration', criterion 'Coherence' is not complete "
                        "and balanced, 1 of 480 judge calls missing)",
               "mentalalign": "Method: reml (--method auto: model 'claude-3.5-haiku', criterion 'Empathy' is not "
                              "complete and balanced, 1 of 4000 judge calls missing; scores take 5 values and 73% sit at the "
                              "top (5), which suits an ordinal model"}
HUMANS = {"hanna": "Judges against the reference raters (human_slot_1, human_slot_2, human_slot_3)",
          "mentalalign": "Judges against the reference raters (human-expert)"}


def _ok(args):
    code, out, err = run_main(args)
    assert code == 0, err
    return out, err


def test_the_cli_names_the_bundled_tables_of_the_library():
    assert set(DATASETS) == set(cj.datasets.NAMES)


@pytest.mark.parametrize("name", DATA_SUBCOMMANDS)
def test_every_data_subcommand_takes_dataset_and_file_is_optional(name):
    cmd = cli.commands[name]
    assert "dataset" in {p.name for p in cmd.params}
    file = next(p for p in cmd.params if p.name == "file")
    assert file.required is False


@pytest.mark.parametrize("dataset", ["hanna", "mentalalign"])
@pytest.mark.parametrize("name", ["decompose", "judges", "variance", "allocate"])
def test_fitting_subcommands_run_with_their_defaults(name, dataset):
    out, _ = _ok([name, "--dataset", dataset, *EXTRA.get(name, [])])
    assert out.startswith(METHOD_LINE[dataset])


# --method auto per criterion (issue 35): MentalAlign's 1-5 ratings get the joint ordinal model, except Safety, where
# a model gets 5 from one judge on every call (separated: its latent mean is not identified), which keeps REML. Seven
# joint ordinal fits of 40,000 calls take ~35 s of CPU: CI compares two criteria (one of each), -m slow all seven.
@pytest.mark.parametrize("dataset, criteria, method, methods", [
    ("hanna", 6, "reml", {"reml"}), ("mentalalign", ["Empathy", "Safety"], "ordinal", {"ordinal", "reml"}),
    pytest.param("mentalalign", 7, "ordinal", {"ordinal", "reml"}, marks=pytest.mark.slow)])
def test_compare_runs_per_criterion_with_its_defaults(dataset, criteria, method, methods):
    some = ["--criteria", ",".join(criteria)] if isinstance(criteria, list) else []
    out, _ = _ok(["compare", "--dataset", dataset, "--format", "json", *some])
    doc = json.loads(out)
    table = cj.datasets.load(dataset)
    table = table.subset(criteria=criteria) if some else table
    assert {r["criterion"] for r in doc["ranks"]} == set(table.criteria)
    assert len(table.criteria) == (len(criteria) if some else criteria)
    assert {r["method"] for r in doc["differences"]} == methods
    assert {r["method"] for r in doc["differences"] if r["criterion"] == table.criteria[0]} == {method}
    assert set(doc["tests"]) == set(table.criteria)
    # each criterion's comparison is the library's compare_models on that criterion alone
    first = table.criteria[0]
    one = cj.read_scores(table.subset(criteria=[first]).to_frame().drop(columns="criterion"))
    want = cj.compare_models(one, method, seed=0).ranks.set_index("model")["mean"]
    got = {r["model"]: r["mean"] for r in doc["ranks"] if r["criterion"] == first}
    assert got == pytest.approx(want.to_dict(), rel=1e-12)


@pytest.mark.parametrize("dataset", ["hanna", "mentalalign"])
def test_humans_sees_the_human_raters(dataset):
    out, _ = _ok(["humans", "--dataset", dataset, "--show", "agreement"])
    assert out.startswith(HUMANS[dataset])


@pytest.mark.parametrize("dataset", ["hanna", "mentalalign"])
def test_report_runs_with_its_defaults(dataset, tmp_path):
    path = tmp_path / f"{dataset}.html"
    _, err = _ok(["report", "--dataset", dataset, "-o", str(path)])
    assert err.startswith(METHOD_LINE[dataset]) and path.stat().st_size > 10_000
    assert 'id="human_agreement"' in path.read_text()   # the human raters reached the report


def test_dataset_and_file_together_or_neither_is_one_sentence(tmp_path):
    code, out, err = run_main(["decompose", str(tmp_path / "x.csv"), "--dataset", "hanna"])
    assert code == 1 and out == "" and err.startswith("Give FILE or --dataset, not both")
    code, out, err = run_main(["judges"])
    assert code == 1 and err == "Give a score FILE, or --dataset hanna (or mentalalign) for a bundled table.\n"
    code, out, err = run_main(["decompose", "--dataset", "hanna", "--engine", "duckdb"])
    assert code == 1 and err.startswith("--dataset hanna is a bundled table read in memory")


class TestExport:
    def test_the_exported_file_reads_with_defaults_and_keeps_the_humans(self, tmp_path):
        path = tmp_path / "hanna.csv"
        code, out, err = run_main(["datasets", "export", "hanna", "-o", str(path)])
        assert code == 0 and err == f"Wrote hanna to {path}.\n"
        back = cj.read_scores(path)
        want = cj.datasets.load("hanna", humans=True)
        # 31,680 LLM calls less HANNA's 346 parse-failure sentinels (scores below 1), dropped at export as at load
        assert len(back) == len(want) == 31_680 - 346 and back.reference_judges == want.reference_judges
        pd.testing.assert_frame_equal(back.to_frame(), want.to_frame())
        out, _ = _ok(["humans", str(path), "--show", "agreement"])
        assert out.startswith(HUMANS["hanna"])

    def test_it_refuses_to_overwrite_without_force(self, tmp_path):
        path = tmp_path / "m.csv"
        path.write_text("x\n")
        code, _, err = run_main(["datasets", "export", "mentalalign", "-o", str(path)])
        assert code == 1 and err == f"`{path}` exists; pass --force to overwrite it, or choose another file.\n"

    def test_other_prompt_variants_and_stdout(self):
        out, _ = _ok(["datasets", "export", "hanna", "--eval-prompt", "2"])
        df = pd.read_csv(pd.io.common.StringIO(out))
        assert list(df.columns) == ["model", "scenario", "generation", "judge", "criterion", "score", "judge_type"]
        sentinels = int((~cj.datasets.table("hanna", eval_prompt=2, humans=False, keep_sentinels=True)["score"]
                         .between(1, 5)).sum())
        assert sentinels > 0 and len(df) == 31_680 - sentinels + 19_008 and df["score"].between(1, 5).all()
        assert df.loc[df["judge"] == "ChatGPT", "score"].tolist() != \
            cj.datasets.table("hanna").query("judge == 'ChatGPT'")["score"].tolist()

    def test_keep_sentinels_exports_the_table_as_shipped(self, tmp_path):
        path = tmp_path / "hanna.csv"
        _ok(["datasets", "export", "hanna", "-o", str(path), "--keep-sentinels"])
        df = pd.read_csv(path)
        assert len(df[df["judge_type"] == "llm"]) == 31_680 and df["score"].min() == -1

    def test_list(self):
        out, _ = _ok(["datasets", "list", "--format", "json"])
        assert [r["name"] for r in json.loads(out)] == ["hanna", "mentalalign"]


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """HANNA as shipped (load_frame), one criterion: 4 judge-prompt variants per call; the humans have
    eval_prompt 0."""
    path = tmp_path_factory.mktemp("raw") / "hanna_raw.csv"
    frame = cj.datasets.load_frame("hanna")
    frame[frame["criterion"] == "Coherence"].to_csv(path, index=False)
    return path


class TestWhereAndTheHumans:

    def test_a_filter_that_removes_every_human_says_so(self, raw):
        code, out, err = run_main(["humans", str(raw), "--where", "eval_prompt=1"])
        assert code == 1 and out == ""
        assert err == ("The option --where eval_prompt=1 removes all 3,168 reference (human) ratings, whose "
                       "'eval_prompt' is 0, so there is no human to compare the judges with; keep them too by "
                       "adding --where eval_prompt=0 (the same column keeps either value).\n")

    def test_the_advised_fix_runs(self, raw):
        out, _ = _ok(["humans", str(raw), "--where", "eval_prompt=1", "--where", "eval_prompt=0",
                      "--show", "agreement", "--format", "json"])
        rows = [r for r in json.loads(out) if r["table"] == "agreement"]
        # the raw file is load_frame's, parse-failure scores and all, so the library side keeps them too
        direct = cj.judge_agreement(cj.datasets.load("hanna", humans=True, keep_sentinels=True)
                                    .subset(criteria=["Coherence"]))
        got = {r["judge"]: r["bias"] for r in rows}
        assert got == pytest.approx(direct.table.set_index("judge")["bias"].to_dict(), rel=1e-12)

    def test_the_report_warns_that_it_lost_its_human_section(self, raw, tmp_path):
        code, _, err = run_main(["report", str(raw), "--where", "eval_prompt=2", "-o", str(tmp_path / "r.html")])
        assert code == 0, err
        assert "Warning: --where eval_prompt=2 removes all 3,168 reference (human) ratings" in err
        assert "so the report has no human section" in err
        assert 'id="human_agreement"' not in (tmp_path / "r.html").read_text()

    def test_other_subcommands_do_not_need_the_humans(self, raw):
        code, out, err = run_main(["decompose", str(raw), "--where", "eval_prompt=1"])
        assert code == 0 and "Warning" not in err


class TestQuotedNames:
    @pytest.fixture
    def odd(self, tmp_path):
        """Model and judge names holding a comma and '='."""
        frame = cj.datasets.table("mentalalign", humans=False)
        frame = frame[frame["criterion"] == "Empathy"].drop(columns=["criterion", "judge_type"])
        frame = frame[frame["scenario"].astype(int) <= 120]
        frame["model"] = frame["model"].replace({"gpt-4o": "org/gpt-4o,v2"})
        frame["judge"] = frame["judge"].replace({"gpt-4o": "judge=gpt-4o"})
        path = tmp_path / "odd.csv"
        frame.to_csv(path, index=False)
        return path

    def test_families_takes_quoted_names_and_repeats(self, odd):
        out, _ = _ok(["compare", str(odd), "--families", '"judge=gpt-4o"="org/gpt-4o,v2"',
                      "--families", '"judge=gpt-4o"=gpt-4o-mini', "--format", "json"])
        sp = json.loads(out)["self_preference"]
        assert sp and {r["judge"] for r in sp} == {"judge=gpt-4o"}
        want = cj.self_preference(cj.read_scores(odd), {"judge=gpt-4o": ["org/gpt-4o,v2", "gpt-4o-mini"]},
                                  method="reml")
        assert [r["estimate"] for r in sp] == pytest.approx(want.contrasts["estimate"].tolist(), rel=1e-9)

    def test_judges_takes_a_quoted_name(self, odd):
        out, _ = _ok(["judges", str(odd), "--judges", '"judge=gpt-4o",o4-mini', "--format", "json"])
        assert {r["judge"] for r in json.loads(out)["per_judge"]} >= {"judge=gpt-4o", "o4-mini"}

    def test_an_unclosed_quote_is_one_sentence(self, odd):
        code, _, err = run_main(["compare", str(odd), "--families", '"judge=gpt-4o=x'])
        assert code == 1 and err.startswith("The option --families has an opening double quote without its closing")
