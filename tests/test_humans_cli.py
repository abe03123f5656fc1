"""``cjstats humans``: judges against human raters from the command line (in-process)."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from click.testing import CliRunner

import cjstats as cj
from cjstats.cli import cli
from cli_helpers import run_main

pytest.importorskip("ppi_py")




@pytest.fixture(scope="module")
def ma_file(tmp_path_factory) -> str:
    """A MentalAlign slice (3 models, 2 criteria) without the judge_type column: the expert must be named."""
    f = cj.datasets.load_frame("mentalalign")
    f = f[f["criterion"].isin(["Empathy", "Safety"]) & f["model"].isin(["gpt-4o", "qwen3-4b", "human-original"])]
    p = tmp_path_factory.mktemp("humans") / "ma.csv"
    f.drop(columns="judge_type").to_csv(p, index=False)
    return str(p)


class TestHumans:
    def test_table_has_agreement_and_means(self, ma_file):
        r = CliRunner().invoke(cli, ["humans", ma_file, "--reference", "human-expert", "--labels", "50"])
        assert r.exit_code == 0, r.output
        assert r.output.startswith("Judges against the reference raters (human-expert); bias = judge - human")
        assert "Human-scale means by PPI++ (judge prediction: panel; 95% intervals)" in r.output

    def test_json_rows_carry_their_table(self, ma_file):
        r = CliRunner().invoke(cli, ["humans", ma_file, "--reference", "human-expert", "--labels", "50",
                                     "--format", "json"])
        assert r.exit_code == 0, r.output
        rows = json.loads(r.output)
        assert {row["table"] for row in rows} == {"agreement", "means", "differences"}
        means = [row for row in rows if row["table"] == "means"]
        assert len(means) == 6 and all(row["n_labeled"] <= 50 for row in means)

    def test_agreement_by_model(self, ma_file):
        r = CliRunner().invoke(cli, ["humans", ma_file, "--reference", "human-expert", "--show", "agreement",
                                     "--by-model", "--format", "json"])
        assert r.exit_code == 0, r.output
        rows = json.loads(r.output)
        assert len(rows) == 3 * 2 * 5 and {row["model"] for row in rows} == {"gpt-4o", "qwen3-4b", "human-original"}

    def test_label_budget_question(self, ma_file):
        r = CliRunner().invoke(cli, ["humans", ma_file, "--reference", "human-expert", "--labels", "50",
                                     "--show", "means", "--label-cost", "1", "--judge-cost", "0.001",
                                     "--target-se", "0.05", "--format", "csv"])
        assert r.exit_code == 0, r.output
        df = pd.read_csv(io.StringIO(r.output))
        plan = df[df["table"] == "label_budget"]
        assert len(plan) == 6 and {"n_labels", "n_judged", "cost", "human_only_cost"} <= set(plan.columns)

    def test_missing_reference_is_one_sentence_and_exit_1(self, ma_file):
        code, out, err = run_main(["humans", ma_file])
        assert code == 1 and out == ""
        assert err.startswith("scores has no reference raters: name the human raters with reference='<judge>' "
                              "(command line: --reference)")
        assert err.count("\n") == 1

    def test_unknown_reference_is_one_sentence_and_exit_1(self, ma_file):
        code, _, err = run_main(["humans", ma_file, "--reference", "crowd"])
        assert code == 1 and err.startswith("The reference rater 'crowd' is not in column 'judge'")

    def test_label_cost_without_goal(self, ma_file):
        code, _, err = run_main(["humans", ma_file, "--reference", "human-expert", "--label-cost", "1"])
        assert code == 1 and "needs --judge-cost and exactly one of --target-se and --budget" in err


class TestSharedDataOptions:
    """``humans`` takes the data options every data subcommand takes, with the reference raters kept apart."""

    def test_criteria_and_judges_select_what_the_agreement_covers(self, ma_file):
        code, out, err = run_main(["humans", ma_file, "--reference", "human-expert", "--show", "agreement",
                                   "--criteria", "Safety", "--judges", "gpt-4o,o4-mini", "--format", "json"])
        assert code == 0, err
        rows = [r for r in json.loads(out) if r["table"] == "agreement"]
        assert {r["criterion"] for r in rows} == {"Safety"}
        assert {r["judge"] for r in rows} == {"gpt-4o", "o4-mini", "panel"}

    def test_where_filters_rows_and_composite_averages_criteria(self, ma_file):
        code, out, err = run_main(["humans", ma_file, "--reference", "human-expert", "--show", "agreement",
                                   "--where", "model=gpt-4o", "--composite", "--format", "json"])
        assert code == 0, err
        rows = [r for r in json.loads(out) if r["table"] == "agreement"]
        assert rows and all("criterion" not in r or r["criterion"] is None for r in rows)
        direct = cj.judge_agreement(cj.read_scores(pd.read_csv(ma_file).query("model == 'gpt-4o'"),
                                                   reference="human-expert").composite())
        panel = next(r for r in rows if r["judge"] == "panel")
        want = direct.table.set_index("judge").loc["panel", "bias"]
        assert panel["bias"] == pytest.approx(float(want), rel=1e-12)

    def test_an_unknown_judge_is_one_sentence(self, ma_file):
        code, out, err = run_main(["humans", ma_file, "--reference", "human-expert", "--judges", "gpt-5"])
        assert code == 1 and "The option --judges names 'gpt-5', which is not in FILE" in err
