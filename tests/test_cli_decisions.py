"""``cjstats variance``, ``cjstats allocate`` and ``cjstats plan`` run in-process: exit codes and output.

Successful runs use click's CliRunner on ``cjstats.cli.cli``. User errors go through ``cjstats.cli.main`` (the
console-script entry point, which turns a CjstatsError into one sentence on stderr and exit code 1), still
in-process, inside the runner's stream isolation.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.cli import cli
from cjstats.decisions.schedules import cyclic_schedule
from cjstats.decisions.formulas import variance_contributions
from cli_helpers import run_main





class TestVariance:
    def test_table(self, runner, score_file):
        r = runner.invoke(cli, ["variance", str(score_file), "--n", "40", "--m", "2", "--k", "2"])
        assert r.exit_code == 0, r.output
        assert r.output.startswith("Method: anova (--method auto: every group is complete and balanced).\n"
                                   "Proposition 1: Var(X̄) and its terms")
        assert "Qwen" in r.output and "GPT" in r.output and "judge_share" in r.output

    def test_json_matches_the_library(self, runner, score_file, small_balanced_scores):
        r = runner.invoke(cli, ["variance", str(score_file), "--n", "40", "--m", "2", "--k", "2", "--format", "json"])
        assert r.exit_code == 0, r.output
        rows = {row["model"]: row for row in json.loads(r.output)}
        est = cj.estimate(small_balanced_scores).estimates("Qwen")
        s2sj = est.get("scenario_judge", 0.0)           # fitted (m = 3 generations scored by the same judges)
        want = variance_contributions(est["scenario"], est["generation"], est["residual"], est["judge_panel"],
                                      n=40, m=2, k=2, k_total=4,
                                      s2_scenario_judge=0.0 if s2sj != s2sj else s2sj)
        q = rows["Qwen"]
        assert (q["n"], q["m"], q["k"], q["k_total"]) == (40, 2, 2, 4)
        for c, v in want.items():
            assert q[c] == pytest.approx(v, rel=1e-12)
        assert q["variance"] == pytest.approx(sum(want.values()), rel=1e-12)

    def test_defaults_are_the_data_n_and_the_paper_operating_point(self, runner, score_file):
        r = runner.invoke(cli, ["variance", str(score_file), "--format", "csv"])
        assert r.exit_code == 0
        t = pd.read_csv(io.StringIO(r.output))
        assert t[["n", "m", "k", "k_total"]].drop_duplicates().values.tolist() == [[12, 1, 1, 4]]

    def test_m_above_one_on_m1_data_is_one_sentence(self, tmp_path):
        df = pd.DataFrame({"model": "a", "scenario": np.repeat(np.arange(8), 3), "judge": ["x", "y", "z"] * 8,
                           "score": np.random.default_rng(0).normal(size=24)})
        p = tmp_path / "m1.csv"
        df.to_csv(p, index=False)
        code, out, err = run_main(["variance", str(p), "--m", "3"])
        assert code == 1 and out == "" and err.count("\n") == 1
        assert "not identifiable" in err and "--m 1" in err


class TestAllocate:
    def test_table(self, runner, score_file):
        r = runner.invoke(cli, ["allocate", str(score_file), "--budget", "300", "--model", "Qwen"])
        assert r.exit_code == 0, r.output
        assert r.output.startswith("Method: anova (--method auto: every group is complete and balanced).\n"
                                   "Allocation for model 'Qwen': budget 300 calls")
        assert "Recommended:" in r.output

    def test_json_rows_with_costs(self, runner, score_file):
        costs = "judge_0=1,judge_1=1,judge_2=3,judge_3=9"
        r = runner.invoke(cli, ["allocate", str(score_file), "--budget", "500", "--costs", costs, "--format", "json"])
        assert r.exit_code == 0, r.output
        rows = json.loads(r.output)["designs"]
        assert {row["model"] for row in rows} == {"Qwen", "GPT"}
        assert "weighted" in {row["strategy"] for row in rows}
        for model in ("Qwen", "GPT"):
            mine = [row for row in rows if row["model"] == model]
            assert mine[0]["rank"] == 1 and all(row["cost"] <= 500 for row in mine)
            assert [row["variance"] for row in mine] == sorted(row["variance"] for row in mine)

    def test_target_se(self, runner, score_file):
        r = runner.invoke(cli, ["allocate", str(score_file), "--target-se", "0.9", "--model", "GPT",
                                "--format", "csv"])
        assert r.exit_code == 0, r.output
        t = pd.read_csv(io.StringIO(r.output))
        assert "p_reaches_target" in t.columns and t["se"].iloc[0] <= 0.9

    @pytest.mark.parametrize("args, text", [
        (["--budget", "100", "--costs", "judge_0=x"], "needs a number for judge 'judge_0'"),
        (["--budget", "100", "--costs", "judge_0"], "name=value pairs"),
        (["--budget", "100", "--costs", "nobody=1"], "must price exactly the panel's judges"),
        ([], "needs a budget"),
        (["--budget", "100", "--seed", "-1"], "The option --seed must be an integer >= 0. Got -1."),
        (["--budget", "100", "--costs", "judge_0=0,judge_1=0,judge_2=0,judge_3=0"], "designs cost nothing"),
        (["--budget", "10", "--target-se", "0.3", "--model", "Qwen"],
         "No design reaches --target-se 0.3 within budget 10 calls: the cheapest that does"),
    ])
    def test_user_errors_are_one_sentence(self, score_file, args, text):
        code, out, err = run_main(["allocate", str(score_file), *args])
        assert code == 1 and out == "" and err.count("\n") == 1 and text in err and "Traceback" not in err

    def test_money_budget_is_never_exceeded(self, runner, score_file):
        costs = "judge_0=1,judge_1=1,judge_2=4,judge_3=16"
        r = runner.invoke(cli, ["allocate", str(score_file), "--budget", "300", "--costs", costs, "--model", "Qwen",
                                "--format", "json"])
        assert r.exit_code == 0, r.output
        rows = json.loads(r.output)["designs"]
        assert all(row["cost"] <= row["max_cost"] <= 300 for row in rows)


class TestPlan:
    def test_count_prints_the_schedule(self, runner):
        r = runner.invoke(cli, ["plan", "--scenarios", "6", "--judges", "a,b,c", "--generations", "2", "--seed", "1",
                                "--format", "csv"])
        assert r.exit_code == 0, r.output
        t = pd.read_csv(io.StringIO(r.output))
        assert list(t.columns) == ["scenario", "generation", "judge"] and len(t) == 12
        expected = cyclic_schedule(6, ["a", "b", "c"], generations=2, seed=1)
        assert t["judge"].tolist() == expected["judge"].tolist()
        assert t["scenario"].tolist() == expected["scenario"].tolist()

    def test_out_file_and_audit(self, runner, tmp_path):
        out = tmp_path / "plan.csv"
        r = runner.invoke(cli, ["plan", "--scenarios", "10", "--judges", "a,b,c,d", "--seed", "3", "--out", str(out)])
        assert r.exit_code == 0, r.output
        assert r.output.startswith(f"Wrote 10 calls to {out}.")
        plan = pd.read_csv(out)
        assert len(plan) == 10 and sorted(plan["judge"].value_counts().tolist()) == [2, 2, 3, 3]

    def test_scenarios_from_a_file_and_models(self, runner, tmp_path):
        p = tmp_path / "scenarios.txt"
        p.write_text("q1\nq2\n\nq3\nq4\n")
        r = runner.invoke(cli, ["plan", "--scenarios", str(p), "--judges", "a,b", "--seed", "0", "--models", "x,y",
                                "--format", "json"])
        assert r.exit_code == 0, r.output
        rows = json.loads(r.output)
        assert len(rows) == 8 and {row["scenario"] for row in rows} == {"q1", "q2", "q3", "q4"}
        x = [(row["scenario"], row["judge"]) for row in rows if row["model"] == "x"]
        y = [(row["scenario"], row["judge"]) for row in rows if row["model"] == "y"]
        assert x == y

    def test_scenarios_from_a_score_table_and_audit_json(self, runner, score_file):
        r = runner.invoke(cli, ["plan", "--scenarios", str(score_file), "--judges", "a,b,c", "--seed", "0",
                                "--audit", "--format", "json"])
        assert r.exit_code == 0, r.output
        assert [row["calls"] for row in json.loads(r.output)] == [4, 4, 4]

    def test_baselines_and_shares(self, runner):
        r = runner.invoke(cli, ["plan", "--scenarios", "4", "--judges", "a,b,c", "--strategy", "all", "--format",
                                "csv"])
        assert r.exit_code == 0 and len(pd.read_csv(io.StringIO(r.output))) == 12
        r = runner.invoke(cli, ["plan", "--scenarios", "20", "--judges", "a,b", "--shares", "a=3,b=1", "--seed", "0",
                                "--audit", "--format", "json"])
        assert r.exit_code == 0, r.output
        assert [row["calls"] for row in json.loads(r.output)] == [15, 5]

    @pytest.mark.parametrize("args, text", [
        (["--scenarios", "nope.txt", "--judges", "a,b"], "neither a number nor an existing file"),
        (["--scenarios", "5", "--judges", "a,a"], "lists judge 'a' more than once"),
        (["--scenarios", "5", "--judges", "a,b", "--strategy", "random", "--shares", "a=1,b=1"],
         "--shares works with --strategy cyclic only"),
        (["--scenarios", "5", "--judges", "a,b", "--seed", "-1"], "The option --seed must be an integer >= 0. Got -1."),
        (["--scenarios", "5", "--judges", "a,b", "--strategy", "all", "--judges-per-generation", "2"],
         "The option --judges-per-generation does not apply to --strategy all (every judge scores every "
         "generation); leave it out."),
        (["--scenarios", "5", "--judges", "a,b", "--strategy", "all", "--unit", "scenario"],
         "The option --unit does not apply to --strategy all"),
        (["--scenarios", "5", "--judges", "a,b", "--strategy", "random", "--unit", "generation"],
         "The option --unit does not apply to --strategy random"),
    ])
    def test_user_errors_are_one_sentence(self, args, text):
        code, out, err = run_main(["plan", *args])
        assert code == 1 and out == "" and err.count("\n") == 1 and text in err

    @pytest.mark.parametrize("name, content, text", [
        ("empty.csv", "", "is empty; it must list at least one scenario."),
        ("header.csv", "scenario,x\n", "lists no scenarios."),
        ("two.csv", "a,b\n1,2\n", "has no column 'scenario' (found: a, b)."),
        ("empty.txt", "\n\n", "lists no scenarios."),
        ("bad.jsonl", "{not json\n", "Could not read the scenario file"),
    ])
    def test_unusable_scenario_files_are_one_sentence(self, tmp_path, name, content, text):
        p = tmp_path / name
        p.write_text(content)
        code, out, err = run_main(["plan", "--scenarios", str(p), "--judges", "a,b"])
        assert code == 1 and out == "" and err.count("\n") == 1 and text in err and "Traceback" not in err

    def test_random_takes_judges_per_generation(self, runner):
        r = runner.invoke(cli, ["plan", "--scenarios", "4", "--judges", "a,b,c", "--strategy", "random",
                                "--judges-per-generation", "2", "--seed", "0", "--format", "csv"])
        assert r.exit_code == 0, r.output
        t = pd.read_csv(io.StringIO(r.output))
        assert len(t) == 8 and (t.groupby("scenario")["judge"].nunique() == 2).all()
