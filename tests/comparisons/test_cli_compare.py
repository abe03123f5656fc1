"""``cjstats compare``: formats, families and errors, run in-process."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cjstats.cli import cli
from cjstats.studies.simulate_joint import simulate_joint


@pytest.fixture
def joint_file(tmp_path):
    f = simulate_joint(n=12, m=2, mu=[0, .5, 1], gamma=[-.2, 0, .2], s2_scenario=.5, s2_model_scenario=.2,
                       s2_generation=.1, s2_residual=.4, rng=3)
    p = tmp_path / "joint.csv"
    f.to_csv(p, index=False)
    return p


def test_json_is_one_object_with_three_tables(runner, joint_file):
    r = runner.invoke(cli, ["compare", str(joint_file), "--families", "j0=m0,j0=m1", "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert set(out) == {"differences", "ranks", "self_preference", "tests"}
    assert len(out["differences"]) == 3 and len(out["ranks"]) == 3
    assert [row["model"] for row in out["self_preference"]] == ["m0", "m1"]


def test_table_shows_ranks_and_significance_matrix(runner, joint_file):
    r = runner.invoke(cli, ["compare", str(joint_file), "--method", "reml", "--population"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("Model comparison (reml, population view")
    assert "Significance matrix" in r.output


def test_csv_has_a_table_column(runner, joint_file, tmp_path):
    r = runner.invoke(cli, ["compare", str(joint_file), "--format", "csv"])
    assert r.exit_code == 0
    out = tmp_path / "o.csv"
    out.write_text(r.output)
    assert set(pd.read_csv(out)["table"]) == {"differences", "ranks"}


def test_unknown_family_judge_is_one_sentence(runner, joint_file):
    r = runner.invoke(cli, ["compare", str(joint_file), "--families", "gpt=m0"])
    assert r.exit_code != 0
    assert "judge 'gpt'" in str(r.exception)


def test_malformed_families_option(runner, joint_file):
    r = runner.invoke(cli, ["compare", str(joint_file), "--families", "j0"])
    assert r.exit_code != 0 and "takes name=value pairs" in str(r.exception) and "Got 'j0'" in str(r.exception)



@pytest.mark.parametrize("engine", ["duckdb", "dask"])
def test_an_out_of_core_engine_gives_the_in_memory_comparison(runner, joint_file, engine):
    pytest.importorskip(engine)
    base = ["compare", str(joint_file), "--families", "j0=m0", "--format", "json"]
    a = runner.invoke(cli, base)
    b = runner.invoke(cli, base + ["--engine", engine])
    assert a.exit_code == 0 and b.exit_code == 0, b.output
    ja, jb = json.loads(a.output), json.loads(b.output)
    for table in ("differences", "ranks", "self_preference"):
        fa, fb = pd.DataFrame(ja[table]), pd.DataFrame(jb[table])
        pd.testing.assert_frame_equal(fa, fb, rtol=1e-12)


def test_engine_errors_are_one_sentence(joint_file):
    from cli_helpers import run_main

    for args, msg in ((["--engine", "duckdb", "--method", "bayes"], "--engine duckdb fits --method anova or reml"),
                      (["--memory-limit", "1GB"], "--memory-limit is a DuckDB setting"),
                      (["--engine", "duckdb", "--composite"], "--composite changes rows")):
        code, out, err = run_main(["compare", str(joint_file), *args])
        assert code != 0 and msg in err and "Traceback" not in err, err


class TestMethodAuto:
    """compare defaults to --method auto: the joint ANOVA on a shared complete table, REML otherwise, said first."""

    def test_a_complete_shared_table_gets_the_anova(self, runner, joint_file):
        r = runner.invoke(cli, ["compare", str(joint_file)])
        assert r.exit_code == 0, r.output
        assert r.output.startswith("Method: anova (--method auto: every model is complete and balanced on the same "
                                   "scenarios).\nModel comparison (anova, panel view")

    def test_a_missing_call_gets_reml(self, runner, joint_file, tmp_path):
        f = pd.read_csv(joint_file)
        p = tmp_path / "holey.csv"
        f.drop(index=[5]).to_csv(p, index=False)
        r = runner.invoke(cli, ["compare", str(p)])
        assert r.exit_code == 0, r.output
        assert r.output.startswith("Method: reml (--method auto: model 'm0' is not complete and balanced, 1 of 72 "
                                   "judge calls missing).\nModel comparison (reml")

    def test_models_on_different_scenarios_get_reml(self, runner, joint_file, tmp_path):
        # every model is complete and balanced on its own, but m2 lacks two scenarios: the joint ANOVA cannot pair
        f = pd.read_csv(joint_file)
        p = tmp_path / "unshared.csv"
        f[~((f["model"] == "m2") & (f["scenario"] < 2))].to_csv(p, index=False)
        r = runner.invoke(cli, ["compare", str(p)])
        assert r.exit_code == 0, r.output
        assert r.output.startswith("Method: reml (--method auto: model 'm2' does not have the same scenarios as "
                                   "model 'm0').")

    def test_method_json_carries_the_method(self, runner, joint_file):
        r = runner.invoke(cli, ["compare", str(joint_file), "--format", "json"])
        assert {row["method"] for row in json.loads(r.output)["differences"]} == {"anova"}


def test_auto_method_is_the_one_rule(small_balanced_scores, small_balanced_frame):
    import cjstats as cj
    from cjstats.estimators import auto_method

    assert auto_method(small_balanced_scores) == ("anova", "every group is complete and balanced")
    holey = cj.read_scores(small_balanced_frame.drop(index=[3]))
    assert auto_method(holey) == ("reml", "model 'Qwen' is not complete and balanced, 1 of 144 judge calls missing")
    assert auto_method(holey, incomplete="drop") == ("anova", "incomplete cells are dropped")
    assert auto_method(holey, incomplete="drop", joint=True)[0] == "anova"
    stats = cj.stats.build_stats(holey)          # statistics from an engine carry the same design
    assert auto_method(stats) == auto_method(holey)


def test_model_scenario_per_model_is_the_library_call(runner, joint_file):
    """--model-scenario per-model fits REML with one model x scenario variance per model (auto picks REML for it),
    prints the pooled-vs-per-model test, and its JSON equals compare_models(..., model_scenario='per_model')."""
    import cjstats as cj

    r = runner.invoke(cli, ["compare", str(joint_file), "--model-scenario", "per-model"])
    assert r.exit_code == 0, r.output
    assert "method: reml (--model-scenario per-model" in r.output
    assert "model x scenario variance: per model;" in r.output
    r = runner.invoke(cli, ["compare", str(joint_file), "--model-scenario", "per-model", "--format", "json"])
    out = json.loads(r.output)
    lib = cj.compare_models(pd.read_csv(joint_file, dtype={"scenario": str, "generation": str}), "reml",
                            model_scenario="per_model")
    got = pd.DataFrame(out["differences"])
    assert got["std_error"].to_numpy() == pytest.approx(lib.differences["std_error"].to_numpy(), rel=1e-12)
    assert out["tests"]["model_scenario"]["df1"] == 2
    assert out["tests"]["model_scenario"]["recommendation"] == lib.fit.tests["model_scenario"]["recommendation"]


@pytest.mark.parametrize("method", ["anova", "bayes"])
def test_model_scenario_per_model_needs_reml(runner, joint_file, method):
    r = runner.invoke(cli, ["compare", str(joint_file), "--model-scenario", "per-model", "--method", method])
    assert r.exit_code != 0
    assert "--model-scenario per-model is fitted by REML only" in str(r.exception)
    assert type(r.exception).__name__ == "CjstatsError"
