"""``cjstats gstudy``: the CLI prints the library's G study (and replication) of the joint fit, to the printed
precision, on the bundled MentalAlign table and on a small simulated one; bad options end in one sentence."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.studies.simulate_joint import simulate_joint
from cli_helpers import run_main

DESIGN = ["--n", "50,200", "--strategy", "all,cyclic"]


def _ok(args):
    code, out, err = run_main(args)
    assert code == 0, err
    return out, err


@functools.cache
def g_fit():
    """The library's joint fit of the composite of MentalAlign (incomplete, so --method auto fits REML)."""
    return cj.fit_joint(cj.datasets.load("mentalalign", composite=True), "reml")


@pytest.fixture(scope="module")
def mentalalign():
    fit = g_fit()
    g = cj.g_study(fit, n=[50, 200], strategy=["all", "cyclic"], seed=0)
    r = cj.replication(fit, n=[50, 200], strategy=["all", "cyclic"], n_sims=500, seed=0)
    return g, r


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    gp = np.random.default_rng(2).normal(0, 0.2, (3, 3))
    df = simulate_joint(n=12, m=2, mu=[0.0, 0.4, 0.8], gamma=[-0.3, 0.0, 0.3], s2_scenario=1.0,
                        s2_model_scenario=0.3, s2_generation=0.2, s2_residual=0.5, judge_model=gp, rng=3)
    path = tmp_path_factory.mktemp("gstudy") / "small.csv"
    df.to_csv(path, index=False)
    return path


def test_json_is_the_library_g_study_and_replication(mentalalign):
    g, r = mentalalign
    out, _ = _ok(["gstudy", "--dataset", "mentalalign", "--composite", *DESIGN, "--replication", "--n-sims", "500",
                  "--format", "json"])
    got = json.loads(out)
    assert set(got) == {"gstudy", "components", "replication", "top"}
    cli = pd.DataFrame(got["gstudy"])
    assert set(cli["method"]) == {"reml"}
    for col in ("universe", "relative_error", "absolute_error", "e_rho2", "e_rho2_lower", "e_rho2_upper", "phi",
                "phi_lower", "phi_upper"):
        np.testing.assert_allclose(cli[col], g.table[col], rtol=1e-12, atol=0, err_msg=col)
    assert list(cli["strategy"]) == list(g.table["strategy"]) and list(cli["n"]) == [50, 200, 50, 200]
    rep = pd.DataFrame(got["replication"])
    for col in ("p_same_top", "p_same_top_se", "kendall_tau", "kendall_tau_se"):
        np.testing.assert_allclose(rep[col], r.table[col], rtol=1e-12, atol=0, err_msg=col)
    assert set(rep["top_model"]) == {"gemini-2.0-flash"}
    comp = pd.DataFrame(got["components"])
    np.testing.assert_allclose(comp["estimate"], g.components["estimate"], rtol=1e-12, atol=0)


def test_table_prints_the_library_text_and_the_docs_rows(mentalalign):
    g, _ = mentalalign
    r = cj.replication(g_fit(), n=[50, 200], strategy=["all", "cyclic"], seed=0)      # the default 4000 sims
    out, _ = _ok(["gstudy", "--dataset", "mentalalign", "--composite", *DESIGN, "--replication"])
    lines = out.splitlines()
    assert lines[0].startswith("Method: reml (--method auto: model 'claude-3.5-haiku' is not complete and balanced")
    assert g.as_text() in out and r.as_text() in out
    # docs/gstudy.md shows this command's rows
    docs = (Path(__file__).resolve().parent.parent / "docs" / "gstudy.md").read_text(encoding="utf-8")
    block = docs.split("cjstats gstudy --dataset mentalalign --composite --n 50,200 --strategy all,cyclic "
                       "--replication\n```\n\n```text\n", 1)[1].split("```", 1)[0]
    shown = [line for line in block.splitlines() if line.strip() and line != "..."]
    assert len(shown) == 10 and all(line in lines for line in shown)
    # the printed precision: E rho^2 and Phi to 3 decimals with their intervals, e.g. the cyclic n=50 row
    row = g.table[(g.table.strategy == "cyclic") & (g.table.n == 50)].iloc[0]
    want = f"{row.e_rho2:.3f} [{row.e_rho2_lower:.3f}, {row.e_rho2_upper:.3f}]"
    assert any(line.split()[:2] == ["cyclic", "50"] and want in line for line in lines)


def test_csv_stacks_the_tables(small):
    out, _ = _ok(["gstudy", str(small), "--n", "10,40", "--replication", "--n-sims", "200", "--format", "csv"])
    t = pd.read_csv(pd.io.common.StringIO(out))
    assert set(t["table"]) == {"gstudy", "components", "replication", "top"}
    assert (t["table"] == "gstudy").sum() == 6          # 2 n x the default strategies all, random, cyclic
    assert set(t.loc[t["table"] == "gstudy", "method"]) == {"anova"}   # complete and balanced: the ANOVA


def test_options_reach_the_library(small):
    fit = cj.fit_joint(cj.read_scores(pd.read_csv(small)), "anova", ci_level=0.8)
    g = cj.g_study(fit, n=[30], m=[1, 3], k=[2], strategy=["random", "fixed"], judges="population", k_total=6,
                   n_draws=300, seed=7)
    out, _ = _ok(["gstudy", str(small), "--n", "30", "--m", "1,3", "--k", "2", "--strategy", "random,fixed",
                  "--population", "--k-total", "6", "--n-draws", "300", "--seed", "7", "--ci-level", "0.8",
                  "--format", "json"])
    cli = pd.DataFrame(json.loads(out)["gstudy"])
    assert set(cli["judges"]) == {"population"} and set(cli["k_total"]) == {6}
    np.testing.assert_allclose(cli[["e_rho2", "e_rho2_lower", "phi", "phi_upper"]],
                               g.table[["e_rho2", "e_rho2_lower", "phi", "phi_upper"]], rtol=1e-12, atol=0)


def test_a_table_with_criteria_is_studied_per_criterion(small, tmp_path):
    df = pd.read_csv(small)
    both = pd.concat([df.assign(criterion="a"), df.assign(criterion="b", score=df["score"] * 2)])
    path = tmp_path / "crit.csv"
    both.to_csv(path, index=False)
    out, _ = _ok(["gstudy", str(path), "--n", "20", "--strategy", "cyclic", "--format", "json"])
    t = pd.DataFrame(json.loads(out)["gstudy"])
    assert list(t["criterion"]) == ["a", "b"]
    # doubling the scores leaves every ratio of variances where it was
    assert t["e_rho2"].iloc[0] == pytest.approx(t["e_rho2"].iloc[1], rel=1e-9)
    text, _ = _ok(["gstudy", str(path), "--n", "20", "--strategy", "cyclic"])
    assert "Criterion 'a'" in text and "Criterion 'b'" in text


@pytest.mark.parametrize("args, sentence", [
    (["--n", "0"], "The option --n takes integers >= 1 separated by commas, such as '20,80'. Got '0'."),
    (["--m", "two"], "The option --m takes integers >= 1 separated by commas, such as '20,80'. Got 'two'."),
    (["--strategy", "all,rotating"], "The option --strategy names 'rotating', which is not a judge strategy (known: "
                                     "all, random, cyclic, fixed)."),
    (["--k-total", "6"], "The option --k-total sets the size of a new panel of judges, which needs --population "
                         "(otherwise the fit's panel is the universe of judges); add --population or leave "
                         "--k-total 6 out."),
    (["--n-sims", "100"], "The option --n-sims applies to --replication only; add --replication or leave it out."),
    (["--fixed-models"], "The option --fixed-models applies to --replication only; add --replication or leave it "
                         "out."),
    (["--replication", "--n-sims", "0"], "The option --n-sims must be an integer >= 1. Got 0."),
    # --link with auto, as compare: refused once auto has chosen another backend (ratings with 29 values here)
    (["--link", "logit"], "The option --link applies to --method ordinal only, and this comparison is fitted by "
                          "anova (without --link the first line says why); add --method ordinal or leave --link "
                          "logit out."),
    (["--method", "reml", "--link", "logit"], "The option --link applies to --method ordinal only (got --method "
                                              "reml); add --method ordinal or leave --link logit out."),
    (["--k", "4", "--strategy", "cyclic"], "The option --k must be at most k_total=3 (judges per generation from "
                                           "the panel). Got 4 instead."),
    (["--draws", "100"], "The option --draws applies to --method bayes only; leave it out."),
])
def test_bad_options_are_one_sentence(small, args, sentence):
    code, out, err = run_main(["gstudy", str(small), *args])
    assert code == 1 and out == "" and err == sentence + "\n"


def test_per_model_scenario_variances_are_the_reml_fit_of_the_library(small):
    fit = cj.fit_joint(cj.read_scores(pd.read_csv(small)), "reml", model_scenario="per_model")
    g = cj.g_study(fit, n=[20], strategy=["cyclic"], n_draws=200)
    code, out, err = run_main(["gstudy", str(small), "--model-scenario", "per-model", "--n", "20", "--strategy",
                               "cyclic", "--n-draws", "200", "--format", "json"])
    assert code == 0, err
    cli = pd.DataFrame(json.loads(out)["gstudy"])
    assert set(cli["method"]) == {"reml"}
    np.testing.assert_allclose(cli[["e_rho2", "phi", "phi_lower"]], g.table[["e_rho2", "phi", "phi_lower"]],
                               rtol=1e-12, atol=0)
    code, _, err = run_main(["gstudy", str(small), "--model-scenario", "per-model", "--method", "anova"])
    assert code == 1 and err == ("--model-scenario per-model is fitted by REML only; use --method reml or auto (got "
                                 "--method anova).\n")


def test_fixed_models_is_the_library_flat_prior(small):
    fit = cj.fit_joint(cj.read_scores(pd.read_csv(small)), "anova")
    flat = cj.replication(fit, n=[20], strategy=["cyclic"], models="fixed", n_sims=300).table
    shrunk = cj.replication(fit, n=[20], strategy=["cyclic"], n_sims=300).table
    args = ["gstudy", str(small), "--n", "20", "--strategy", "cyclic", "--replication", "--n-sims", "300",
            "--format", "json"]
    for extra, want in (([], shrunk), (["--fixed-models"], flat)):
        out, _ = _ok([*args, *extra])
        got = pd.DataFrame(json.loads(out)["replication"])
        np.testing.assert_allclose(got[["p_same_top", "kendall_tau"]], want[["p_same_top", "kendall_tau"]],
                                   rtol=1e-12, atol=0)
