"""The CLI on real-shaped data: shared data options, --method auto, filters, drops, Bayes options, the
allocate -> plan hand-off, JSON conventions and every error path (exit 1, one stderr sentence naming the option).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from cjstats.cli import cli
from cli_helpers import run_main

DATA_OPTIONS = {"columns", "judge_columns", "composite", "incomplete", "duplicates", "judges", "exclude_judges",
                "criteria", "where"}




@pytest.fixture
def holey_file(tmp_path):
    """Two models, 10 scenarios x 1 generation x 4 judges; Qwen misses one call, so dropping its incomplete
    cell leaves a balanced design; a 'task' column to filter on."""
    rng = np.random.default_rng(7)
    frames = []
    for model in ("Qwen", "GPT"):
        s, j = np.meshgrid(np.arange(10), np.arange(4), indexing="ij")
        frames.append(pd.DataFrame({"model": model, "scenario": s.ravel(), "judge": [f"judge_{x}" for x in j.ravel()],
                                    "score": rng.normal(5, 1, s.size).round(2)}))
    df = pd.concat(frames, ignore_index=True)
    df["task"] = np.where(df["scenario"] % 2 == 0, "math", "code")
    df = df.drop(index=[3])  # Qwen, scenario 0, judge_3
    p = tmp_path / "holey.csv"
    df.to_csv(p, index=False)
    return p


class TestSharedOptions:
    @pytest.mark.parametrize("name", ["decompose", "variance", "allocate", "judges", "compare", "report", "humans",
                                      "monitor", "gstudy"])
    def test_every_data_subcommand_takes_the_same_data_options(self, name):
        params = {p.name for p in cli.commands[name].params}
        assert DATA_OPTIONS <= params

    @pytest.mark.parametrize("name", ["decompose", "variance", "allocate", "gstudy"])
    def test_every_fitting_subcommand_takes_the_bayes_options(self, name):
        assert {"draws", "chains", "tune", "seed"} <= {p.name for p in cli.commands[name].params}

    @pytest.mark.parametrize("name", ["decompose", "variance", "allocate", "compare", "judges", "demo", "report",
                                      "gstudy"])
    def test_method_defaults_to_auto(self, name):
        method = next(p for p in cli.commands[name].params if p.opts == ["--method"])
        assert method.default in ("auto", ("auto",)) and "auto" in method.type.choices

    def test_dropped_rows_and_scenarios_are_one_warning_line(self, holey_file):
        code, out, err = run_main(["decompose", str(holey_file), "--method", "anova", "--incomplete", "drop"])
        assert code == 0, err
        assert err == ("Warning: --incomplete drop removed incomplete cells from 1 of 2 groups: model 'Qwen': 3 of 39 "
                       "rows and 1 of 10 scenarios.\n")

    @pytest.mark.parametrize("name, extra", [("variance", []), ("allocate", ["--budget", "300"]), ("judges", []),
                                             ("compare", [])])
    def test_every_subcommand_that_drops_says_so(self, holey_file, name, extra):
        code, out, err = run_main([name, str(holey_file), "--method", "anova", "--incomplete", "drop", *extra])
        assert code == 0, err
        assert "Warning: --incomplete drop removed" in err and "1 of 10 scenarios" in err

    @pytest.mark.parametrize("name, extra", [("decompose", []), ("judges", []), ("compare", [])])
    def test_max_drop_refuses_a_larger_loss_naming_the_flags(self, holey_file, name, extra):
        code, out, err = run_main([name, str(holey_file), "--incomplete", "drop", "--max-drop", "0.05", *extra])
        assert code == 1 and out == ""
        # the joint fit of compare drops the scenario from both models, so GPT loses it too
        who = "4 of 40 rows of model 'GPT' (and 1 more)" if name == "compare" else "3 of 39 rows of model 'Qwen'"
        assert f"--incomplete drop would remove 1 of 10 scenarios (10%) and {who}" in err.splitlines()[-1]
        assert ("more than --max-drop 0.05 allows; use --method reml, which keeps every call, or pass --max-drop 0.1"
                in err)
        code, out, err = run_main([name, str(holey_file), "--incomplete", "drop", "--max-drop", "0.1", *extra])
        assert code == 0, err

    def test_max_drop_needs_incomplete_drop(self, holey_file):
        code, out, err = run_main(["decompose", str(holey_file), "--max-drop", "0.9"])
        assert code == 1 and err == ("The option --max-drop limits what --incomplete drop removes; add --incomplete "
                                     "drop or leave it out.\n")

    def test_auto_with_drop_uses_anova(self, holey_file):
        code, out, err = run_main(["decompose", str(holey_file), "--incomplete", "drop"])
        assert code == 0, err
        assert out.startswith("Method: anova (--method auto with --incomplete drop")

    def test_exclude_judges_and_judges_select_the_panel(self, runner, score_file):
        r = runner.invoke(cli, ["decompose", str(score_file), "--offsets", "--format", "json",
                                "--exclude-judges", "judge_3"])
        assert r.exit_code == 0, r.output
        assert {row["judge"] for row in json.loads(r.stdout)} == {"judge_0", "judge_1", "judge_2"}
        r = runner.invoke(cli, ["decompose", str(score_file), "--offsets", "--format", "json",
                                "--judges", "judge_0,judge_2"])
        assert {row["judge"] for row in json.loads(r.stdout)} == {"judge_0", "judge_2"}

    def test_where_filters_rows_on_any_column(self, runner, holey_file):
        r = runner.invoke(cli, ["decompose", str(holey_file), "--where", "model=GPT", "--where", "task=math",
                                "--format", "json"])
        assert r.exit_code == 0, r.output
        rows = json.loads(r.stdout)
        assert {row["model"] for row in rows} == {"GPT"}

    def test_criteria_selects_criteria(self, runner, tmp_path, criterion_scores):
        p = tmp_path / "crit.csv"
        criterion_scores.to_frame().to_csv(p, index=False)
        r = runner.invoke(cli, ["variance", str(p), "--criteria", "safe", "--format", "json"])
        assert r.exit_code == 0, r.output
        assert {row["criterion"] for row in json.loads(r.stdout)} == {"safe"}

    def test_wide_table_from_the_cli(self, runner, tmp_path, small_balanced_frame):
        wide = small_balanced_frame.pivot_table(index=["model", "scenario", "generation"], columns="judge",
                                                values="score").add_prefix("score_").reset_index()
        p = tmp_path / "wide.csv"
        wide.to_csv(p, index=False)
        r = runner.invoke(cli, ["decompose", str(p), "--judge-columns", "score_*", "--format", "json", "--offsets"])
        assert r.exit_code == 0, r.output
        assert {row["judge"] for row in json.loads(r.stdout)} == {"judge_0", "judge_1", "judge_2", "judge_3"}


class TestBayesOptions:
    def test_draws_chains_seed_reach_the_backend_with_a_line_per_group(self, monkeypatch, score_file):
        import cjstats.estimators as est

        calls = []
        real = est.estimate

        def fake(scores, method="anova", **kw):
            calls.append((method, tuple(scores.models), kw))
            return real(scores, "anova", ci_level=kw.get("ci_level"))

        monkeypatch.setattr(est, "estimate", fake)
        code, out, err = run_main(["decompose", str(score_file), "--method", "bayes", "--draws", "200",
                                   "--chains", "2", "--seed", "5", "--format", "json"])
        assert code == 0, err
        assert [c[1] for c in calls] == [("GPT",), ("Qwen",)]
        assert all(c[0] == "bayes" and c[2]["draws"] == 200 and c[2]["chains"] == 2 for c in calls)
        assert [c[2]["seed"] for c in calls] == [5, 6]
        assert "Bayes: sampling model 'GPT' (1/2)" in err and "Bayes: sampling model 'Qwen' (2/2)" in err
        assert {row["model"] for row in json.loads(out)} == {"GPT", "Qwen"}


    def test_a_real_bayes_run_per_group_joins_into_one_result(self, tmp_path):
        rng = np.random.default_rng(3)
        s, j = np.meshgrid(np.arange(8), np.arange(3), indexing="ij")
        df = pd.concat([pd.DataFrame({"model": m, "scenario": s.ravel(), "judge": [f"j{x}" for x in j.ravel()],
                                      "score": rng.normal(5, 1, s.size)}) for m in ("a", "b")], ignore_index=True)
        p = tmp_path / "small.csv"
        df.to_csv(p, index=False)
        code, out, err = run_main(["decompose", str(p), "--method", "bayes", "--draws", "100", "--tune", "100",
                                   "--chains", "1", "--seed", "1", "--format", "json"])
        assert code == 0, err
        rows = json.loads(out)
        assert {r["model"] for r in rows} == {"a", "b"} and {r["method"] for r in rows} == {"bayes"}
        assert "Bayes: sampling model 'b' (2/2)" in err and "Traceback" not in err
        assert "draws and tune" not in err  # convergence advice names the flags


class TestAllocateToPlan:
    def test_allocation_json_keeps_recommendation_and_shares_and_plan_reads_it(self, runner, score_file, tmp_path):
        costs = "judge_0=1,judge_1=1,judge_2=4,judge_3=16"
        r = runner.invoke(cli, ["allocate", str(score_file), "--budget", "300", "--costs", costs, "--model", "Qwen",
                                "--format", "json"])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert set(doc) == {"designs", "recommendation", "shares"}
        [rec] = doc["recommendation"]
        assert rec["model"] == "Qwen" and rec["rank"] == 1 and isinstance(rec["n"], int)
        assert rec["judges"] == "judge_0,judge_1,judge_2,judge_3" and rec["method"] == "anova"
        assert {s["judge"] for s in doc["shares"]} == {"judge_0", "judge_1", "judge_2", "judge_3"}
        assert sum(s["share"] for s in doc["shares"]) == pytest.approx(1.0)
        alloc = tmp_path / "allocation.json"
        alloc.write_text(r.stdout)
        r = runner.invoke(cli, ["plan", "--from-allocation", str(alloc), "--seed", "0", "--format", "csv"])
        assert r.exit_code == 0, r.output
        import io

        plan = pd.read_csv(io.StringIO(r.stdout))
        k = 1 if rec["strategy"] in ("weighted", "cyclic", "random") and rec["judges_per_generation"] == 1 \
            else rec["judges_per_generation"]
        assert plan["scenario"].nunique() == rec["n"] and plan["generation"].nunique() == rec["m"]
        assert len(plan) == rec["n"] * rec["m"] * k
        assert set(plan["judge"]) <= {"judge_0", "judge_1", "judge_2", "judge_3"}

    def test_plan_audit_counts_every_model(self, runner):
        r = runner.invoke(cli, ["plan", "--scenarios", "6", "--judges", "a,b,c", "--models", "x,y", "--seed", "0",
                                "--audit", "--format", "json"])
        assert r.exit_code == 0, r.output
        rows = json.loads(r.stdout)
        assert {(row["model"], row["judge"], row["calls"]) for row in rows} == {
            (m, j, 2) for m in ("x", "y") for j in ("a", "b", "c")}


class TestJsonConventions:
    def test_ranks_and_counts_are_integers_and_missing_numbers_null(self, runner, score_file):
        r = runner.invoke(cli, ["allocate", str(score_file), "--budget", "300", "--format", "json"])
        designs = json.loads(r.stdout)["designs"]
        for row in designs:
            for key in ("rank", "n", "m", "calls", "judges_per_generation"):
                assert isinstance(row[key], int), (key, row[key])
        r = runner.invoke(cli, ["judges", str(score_file), "--format", "json"])
        doc = json.loads(r.stdout)
        assert all(isinstance(x["df1"], int) and isinstance(x["df2"], int) for x in doc["f_test"])

    def test_zero_total_variance_gives_null_share_not_zero(self, runner, tmp_path):
        df = pd.DataFrame({"model": "a", "scenario": np.repeat(np.arange(4), 2), "judge": ["x", "y"] * 4,
                           "score": 3.0})
        p = tmp_path / "const.csv"
        df.to_csv(p, index=False)
        r = runner.invoke(cli, ["variance", str(p), "--format", "json"])
        if r.exit_code == 0:
            [row] = json.loads(r.stdout)
            assert row["variance"] == 0 and row["judge_share"] is None
        else:  # constant scores may be refused upstream: then it is one sentence
            assert "Traceback" not in r.output


class TestErrorPaths:
    @pytest.mark.parametrize("args, option", [
        (["decompose", "{f}", "--judges", "nobody"], "--judges"),
        (["decompose", "{f}", "--exclude-judges", "judge_0,judge_1,judge_2,judge_3"], "--exclude-judges"),
        (["decompose", "{f}", "--judges", "judge_0,"], "--judges"),
        (["decompose", "{f}", "--criteria", "safe"], "--criteria"),
        (["decompose", "{f}", "--where", "model"], "--where"),
        (["decompose", "{f}", "--where", "nocol=1"], "--where"),
        (["decompose", "{f}", "--where", "model=Nobody"], "--where"),
        (["decompose", "{f}", "--columns", "judge=rater,model=rater"], "--columns"),
        (["decompose", "{f}", "--columns", "scenario=judge"], "--columns"),
        (["decompose", "{f}", "--judge-columns", "rating_*"], "--judge-columns"),
        (["decompose", "{f}", "--method", "reml", "--incomplete", "drop"], "--incomplete"),
        (["decompose", "{f}", "--method", "anova", "--draws", "100"], "--draws"),
        (["decompose", "{f}", "--method", "bayes", "--chains", "0"], "--chains"),
        (["decompose", "{f}", "--method", "reml", "--tune", "10"], "--tune"),
        (["decompose", "{f}", "--seed", "-2"], "--seed"),
        (["decompose", "{f}", "--ci-level", "2"], "--ci-level"),
        (["judges", "{f}", "--ci-level", "0"], "--ci-level"),
        (["variance", "{f}", "--k", "0"], "--k"),
        (["variance", "{f}", "--k", "9"], "--k"),
        (["variance", "{f}", "--n", "0"], "--n"),
        (["variance", "{f}", "--k-total", "2", "--k", "3"], "--k"),
        (["allocate", "{f}", "--budget", "-5"], "--budget"),
        (["allocate", "{f}", "--budget", "100", "--n-max", "0"], "--n-max"),
        (["allocate", "{f}", "--budget", "100", "--generation-cost", "-1"], "--generation-cost"),
        (["allocate", "{f}", "--target-se", "-1"], "--target-se"),
        (["variance", "{f}", "--judges", "nobody"], "--judges"),
        (["variance", "{f}", "--draws", "10"], "--draws"),
        (["variance", "{f}", "--model", "Nobody"], "--model"),
        (["allocate", "{f}", "--budget", "100", "--model", "Nobody"], "--model"),
        (["decompose", "{f}", "--composite"], "--composite"),
        (["allocate", "{f}", "--budget", "100", "--m-max", "0"], "The option --m-max"),
        (["plan", "--scenarios", "4", "--judges", "a,b", "--judges-per-generation", "3"],
         "The option --judges-per-generation"),
        (["allocate", "{f}", "--budget", "100", "--chains", "2"], "--chains"),
        (["allocate", "{f}", "--budget", "100", "--exclude-judges", "zz"], "--exclude-judges"),
        (["judges", "{f}", "--where", "x"], "--where"),
        (["allocate", "{f}"], "--budget"),
        (["plan", "--judges", "a,b"], "--scenarios"),
        (["plan", "--scenarios", "4"], "--judges"),
        (["plan", "--scenarios", "4", "--judges", "a,b", "--allocation-model", "x"], "--allocation-model"),
        (["plan", "--from-allocation", "{missing}"], "--from-allocation"),
        (["plan", "--from-allocation", "{notjson}"], "--from-allocation"),
        (["plan", "--from-allocation", "{norec}"], "--from-allocation"),
        (["plan", "--from-allocation", "{tworecs}"], "--allocation-model"),
    ])
    def test_exit_1_and_one_sentence_naming_the_option(self, tmp_path, score_file, args, option):
        (tmp_path / "bad.json").write_text("{nope")
        (tmp_path / "norec.json").write_text(json.dumps([{"a": 1}]))
        (tmp_path / "two.json").write_text(json.dumps({"recommendation": [{"model": "a", "n": 2},
                                                                          {"model": "b", "n": 2}]}))
        subs = {"{f}": str(score_file), "{missing}": str(tmp_path / "none.json"),
                "{notjson}": str(tmp_path / "bad.json"), "{norec}": str(tmp_path / "norec.json"), "{tworecs}": str(tmp_path / "two.json")}
        code, out, err = run_main([subs.get(a, a) for a in args])
        assert code == 1 and out == "", err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert option in err, err

    def test_library_argument_names_never_reach_the_user(self, tmp_path, small_balanced_frame):
        df = pd.concat([small_balanced_frame, small_balanced_frame.iloc[:1]], ignore_index=True)
        p = tmp_path / "dup.csv"
        df.to_csv(p, index=False)
        code, out, err = run_main(["decompose", str(p)])
        assert code == 1 and "--duplicates mean" in err and "duplicates='mean'" not in err
        assert "np.int64" not in err

    def test_misnamed_column_advice_is_the_columns_flag(self, tmp_path, small_balanced_frame):
        p = tmp_path / "r.csv"
        small_balanced_frame.rename(columns={"judge": "rater", "scenario": "item"}).to_csv(p, index=False)
        code, out, err = run_main(["variance", str(p)])
        assert code == 1 and "--columns item=scenario,rater=judge." in err and "read_scores(" not in err


class TestImportSpeed:
    def test_import_cjstats_imports_no_heavy_library(self):
        code = ("import sys, cjstats; heavy = [m for m in ('pandas', 'numpy', 'scipy', 'pymc', 'inspect_ai', "
                "'matplotlib') if m in sys.modules]; print(','.join(heavy))")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert r.stdout.strip() == ""

    def test_public_names_still_resolve(self):
        import cjstats as cj

        for name in cj.__all__:
            assert getattr(cj, name) is not None


class TestClickUsageErrors:
    @pytest.mark.parametrize("args, option", [
        (["decompose", "{f}", "--method", "mle"], "--method"),
        (["decompose", "{f}", "--seed", "abc"], "--seed"),
        (["decompose", "{f}", "--format", "xml"], "--format"),
        (["decompose", "{f}", "--no-such-flag"], "--no-such-flag"),
        (["variance", "{f}", "--m", "two"], "--m"),
        (["decompose"], "FILE"),
    ])
    def test_usage_errors_exit_1_with_one_sentence(self, score_file, args, option):
        code, out, err = run_main([str(score_file) if a == "{f}" else a for a in args])
        assert code == 1 and out == "" and err.count("\n") == 1, err
        assert option in err and "Usage:" not in err


def test_auto_with_incomplete_error_refuses_missing_calls_naming_the_flags(holey_file):
    code, out, err = run_main(["decompose", str(holey_file), "--incomplete", "error"])
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "is incomplete" in err and "--incomplete drop" in err
