"""``--method ordinal`` on the command line (issue 22): decompose, allocate and report fit the ML cumulative-link
model; compare, judges, variance and demo refuse it in one sentence naming the command that fits it.

The tables are simulated from the latent model (``tests/ordinal_sim.py``, fixed seeds): a 1-5 rubric with a
ceiling (the most frequent score is 5) and pass/fail verdicts. The CLI's numbers are checked against
``cj.estimate(..., method="ordinal")`` on the same file, so a CLI that drops ``--link`` or ``--thresholds`` fails.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import cjstats as cj  # noqa: E402
from cli_helpers import run_main  # noqa: E402
from ordinal_sim import simulate_latent  # noqa: E402


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("ordinal_cli")
    ordinal = simulate_latent(40, [0.4, 0.0, -0.4], [-1.2, -0.6, 0.0, 0.3], 1.0, seed=11, model="a")
    binary = simulate_latent(50, [0.8, 0.0, -0.8], [0.0], 1.0, link="logit", seed=12, values=[0, 1], model="a")
    counts = ordinal["score"].value_counts()
    assert counts.idxmax() == 5 and counts[5] / len(ordinal) > 0.35        # the ceiling the brief asks for
    assert set(binary["score"]) == {0, 1}
    out = {}
    for name, df in (("ordinal", ordinal), ("binary", binary)):
        out[name] = str(d / f"{name}.csv")
        df.to_csv(out[name], index=False)
    return out


def _one_sentence(code: int, out: str, err: str) -> str:
    assert code == 1 and out == "", (code, out, err)
    text = err.strip()
    assert "\n" not in text and "Traceback" not in text, err
    return text


def _rows(out: str) -> dict[str, dict]:
    return {r["component"]: r for r in json.loads(out)}


# --------------------------------------------------------------------------------------------- decompose
def test_decompose_prints_latent_components_and_says_so(tables):
    code, out, err = run_main(["decompose", tables["ordinal"], "--method", "ordinal"])
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("Latent scale:") and "cumulative-probit" in first and "residual fixed at 1" in first
    assert "cjstats allocate --method ordinal" in first          # where the score-scale decisions are
    for word in ("scenario", "judge_panel", "mu", "fixed by the probit link", "Judge offsets"):
        assert word in out, word


def test_decompose_json_equals_the_library_fit(tables):
    code, out, err = run_main(["decompose", tables["ordinal"], "--method", "ordinal", "--format", "json"])
    assert code == 0, err
    rows = _rows(out)
    lib = cj.estimate(cj.read_scores(tables["ordinal"]), method="ordinal").components.set_index("component")
    for comp in ("mu", "scenario", "judge_panel"):
        assert rows[comp]["method"] == "ordinal"
        assert rows[comp]["estimate"] == pytest.approx(lib.loc[comp, "estimate"], rel=1e-6)
        assert rows[comp]["lower"] < rows[comp]["estimate"] < rows[comp]["upper"]
    assert rows["residual"]["estimate"] == 1.0
    assert "latent scale" in rows["scenario"]["note"]
    assert rows["mu"]["estimate"] == pytest.approx(3.6, abs=0.5)   # mu is on the 1-5 score scale


def test_decompose_binary_logit_offsets(tables):
    code, out, err = run_main(["decompose", tables["binary"], "--method", "ordinal", "--link", "logit",
                               "--offsets", "--format", "json"])
    assert code == 0, err
    got = {r["judge"]: r["estimate"] for r in json.loads(out)}
    lib = cj.estimate(cj.read_scores(tables["binary"]), method="ordinal", link="logit").judge_offsets
    assert got == pytest.approx(dict(zip(lib["judge"], lib["estimate"])), rel=1e-6)
    assert got["j0"] > got["j2"]       # true offsets +0.8 and -0.8: 1.6 apart, ~3.5 SE of the difference
    code, out, err = run_main(["decompose", tables["binary"], "--method", "ordinal", "--link", "logit",
                               "--format", "json"])
    assert code == 0, err
    rows = _rows(out)
    assert rows["residual"]["estimate"] == pytest.approx(math.pi ** 2 / 3)
    assert 0 < rows["mu"]["estimate"] < 1                          # the pass rate
    code, out, err = run_main(["decompose", tables["binary"], "--method", "ordinal", "--link", "logit"])
    assert code == 0 and "cumulative-logit" in out.splitlines()[0] and "pi^2/3" in out.splitlines()[0]


def test_decompose_per_judge_thresholds(tables):
    code, out, err = run_main(["decompose", tables["ordinal"], "--method", "ordinal", "--thresholds", "judge",
                               "--format", "json"])
    assert code == 0, err
    rows = _rows(out)
    assert rows["judge_panel"]["estimate"] is None and "thresholds='judge'" in rows["judge_panel"]["note"]
    lib = cj.estimate(cj.read_scores(tables["ordinal"]), method="ordinal", thresholds="judge").components
    assert rows["scenario"]["estimate"] == pytest.approx(
        float(lib.loc[lib["component"] == "scenario", "estimate"].iloc[0]), rel=1e-6)


@pytest.mark.parametrize("args, names", [
    (["--link", "logit"], ["--link", "--method ordinal"]),
    (["--method", "reml", "--thresholds", "judge"], ["--thresholds", "--method ordinal"]),
    (["--method", "ordinal", "--draws", "10"], ["--draws", "--method bayes"]),
    (["--method", "ordinal", "--incomplete", "drop"], ["--incomplete", "--method anova"]),
    (["--method", "ordinal", "--scenario-judge", "on"], ["--scenario-judge on", "--method ordinal"]),
    (["--method", "bayes", "--engine", "duckdb"], ["--engine numpy", "bayes"]),
    (["--method", "ordinal", "--link", "cloglog"], ["--link", "probit", "logit"]),
])
def test_decompose_refuses_in_one_sentence(tables, args, names):
    text = _one_sentence(*run_main(["decompose", tables["binary"], *args]))
    for name in names:
        assert name in text, (name, text)


# ---------------------------------------------------------------------------------------------- allocate
def test_allocate_simulates_designs_from_the_ordinal_fit(tables):
    code, out, err = run_main(["allocate", tables["binary"], "--method", "ordinal", "--link", "logit",
                               "--budget", "90", "--format", "json"])
    assert code == 0, err
    res = json.loads(out)
    rec = res["recommendation"][0]
    assert rec["method"] == "ordinal" and rec["calls"] <= 90 and rec["strategy"] in ("all", "cyclic", "random")
    # the SE of a pass rate (p ~ 0.45) from 90 verdicts: at least sqrt(p(1-p)/90) = 0.052 (calls on one scenario
    # are positively correlated), at most sqrt(0.25/30) = 0.091 (design "all": 30 scenarios, their means' variance
    # <= 1/4); 0.045 and 0.10 leave room for the simulation's Monte Carlo error (mc_se ~1% of the variance)
    assert 0.045 < rec["se"] < 0.10
    assert {d["strategy"] for d in res["designs"]} == {"all", "cyclic", "random"}
    code, out, err = run_main(["allocate", tables["binary"], "--method", "ordinal", "--budget", "90"])
    assert code == 0, err
    assert out.startswith("Method: ordinal (cumulative probit, latent scale)")
    assert "score scale" in out and "Recommended:" in out


@pytest.mark.parametrize("args, name", [
    (["--target-se", "0.1"], "--target-se"),
    (["--budget", "90", "--costs", "j0=1,j1=2,j2=1"], "--costs"),
    (["--budget", "90", "--generation-cost", "1"], "--generation-cost"),
])
def test_allocate_refuses_what_the_ordinal_optimiser_cannot_do(tables, args, name):
    text = _one_sentence(*run_main(["allocate", tables["binary"], "--method", "ordinal", *args]))
    assert name in text and "--budget" in text and "--method auto" in text


# -------------------------------------------------------------------------------------------------- report
def test_report_with_the_ordinal_backend(tables, tmp_path):
    html = tmp_path / "r.html"
    code, out, err = run_main(["report", tables["binary"], "-o", str(html), "--method", "ordinal", "--link",
                               "logit"])
    assert code == 0, err
    text = html.read_text(encoding="utf-8")
    assert "cumulative logit" in text and "latent scale" in text
    text = _one_sentence(*run_main(["report", tables["binary"], "-o", str(tmp_path / "x.html"), "--link", "logit"]))
    assert "--method ordinal" in text and not (tmp_path / "x.html").exists()


# --------------------------------------------------------------------------------- commands that refuse it
@pytest.mark.parametrize("command, args, instead", [
    ("judges", [], "cjstats decompose FILE --method ordinal --offsets"),
    ("variance", [], "cjstats allocate FILE --method ordinal --budget"),
    ("demo", None, "cjstats decompose --dataset mentalalign --method ordinal"),
])
def test_commands_needing_score_scale_components_refuse_it(tables, command, args, instead):
    argv = [command] if args is None else [command, tables["ordinal"], *args]
    text = _one_sentence(*run_main([*argv, "--method", "ordinal"]))
    assert text.startswith("Invalid value for '--method': ordinal is not offered by this command:")
    assert instead in text and text.endswith(f"(see cjstats {command} --help).")


def test_compare_fits_the_joint_ordinal_model(tmp_path):
    """compare --method ordinal: the joint cumulative-link model (latent differences and the score scale)."""
    rng = np.random.default_rng(3)
    rows = [(m, i, 0, j, float(rng.normal(0.3 * mi + a, 1) > 0)) for i, a in enumerate(rng.normal(0, 0.7, 30))
            for mi, m in enumerate(["a", "b", "c"]) for j in ("j1", "j2", "j3")]
    path = tmp_path / "verdicts.csv"
    pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"]).to_csv(path, index=False)
    code, out, err = run_main(["compare", str(path), "--method", "ordinal", "--link", "logit"])
    assert code == 0, err
    assert "Model comparison (ordinal" in out and "pass rate" in out
    assert "the Gaussian model shrinks" not in out          # the discrete-score note is for a Gaussian fit only
    text = _one_sentence(*run_main(["compare", str(path), "--method", "reml", "--link", "logit"]))
    assert "--link applies to --method ordinal only" in text
    # issue 35: --method auto (the default) fits the joint ordinal model on verdicts, and takes --link
    code, auto, err = run_main(["compare", str(path), "--link", "logit"])
    assert code == 0, err
    first, rest = auto.split("\n", 1)
    assert first == ("Method: ordinal (--method auto: scores are binary (0/1, 63% at 1): the joint cumulative-link "
                     "model fits latent-scale differences and pass rates (the Gaussian fit: reml)).")
    assert rest == out                                      # the same fit as --method ordinal --link logit


def _verdict_table(tmp_path, name: str, edit=None) -> str:
    rng = np.random.default_rng(3)
    rows = [(m, i, 0, j, float(rng.normal(0.3 * mi + a, 1) > 0)) for i, a in enumerate(rng.normal(0, 0.7, 30))
            for mi, m in enumerate(["a", "b", "c"]) for j in ("j1", "j2", "j3")]
    d = pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])
    d = edit(d) if edit is not None else d
    path = tmp_path / f"{name}.csv"
    d.to_csv(path, index=False)
    return str(path)


def _separate(d: pd.DataFrame) -> pd.DataFrame:
    d.loc[(d["model"] == "a") & (d["judge"] == "j1"), "score"] = 0.0
    return d


def _two_generations(d: pd.DataFrame) -> pd.DataFrame:
    g = d.assign(generation=1, score=(np.random.default_rng(1).random(len(d)) < 0.6).astype(float))
    return pd.concat([d, g], ignore_index=True)


def _five_values(d: pd.DataFrame) -> pd.DataFrame:
    return d.assign(score=2 * d["score"] + np.arange(len(d)) % 3 + 1)


def _ten_values_ceiling(d: pd.DataFrame) -> pd.DataFrame:
    return d.assign(score=np.where(d["score"] > 0, 10.0, 1.0 + np.arange(len(d)) % 9))


@pytest.mark.parametrize("edit, method, words", [
    (_five_values, "ordinal", "scores take 5 values: the joint cumulative-link model fits latent-scale differences "
                              "and expected ratings (the Gaussian fit: reml)"),
    (_separate, "anova", "but the joint ordinal model does not fit this table (model 'a' gets 0 from judge 'j1' "
                         "on every call, so its latent mean is not identified), so the Gaussian anova is an "
                         "approximation"),
    (_two_generations, "anova", "(it has no generation term, and the scenarios have several generations)"),
    (_ten_values_ceiling, "anova", "every model is complete and balanced on the same scenarios)."),
])
def test_compare_auto_chooses_ordinal_only_where_it_fits(tmp_path, edit, method, words):
    """Ratings with few values are fitted too; a separated cell, several generations or a long scale keep the
    Gaussian fit, and the reason says why (a long scale piled at a bound: the reason as before issue 35)."""
    path = _verdict_table(tmp_path, edit.__name__, edit)
    code, out, err = run_main(["compare", path])
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith(f"Method: {method} (--method auto: ") and words in first, first
    assert f"Model comparison ({method}" in out
    if method != "ordinal":
        text = _one_sentence(*run_main(["compare", path, "--link", "logit"]))
        assert f"--link applies to --method ordinal only, and this comparison is fitted by {method}" in text


def test_compare_auto_keeps_the_gaussian_fit_without_score_rows(tmp_path):
    """An out-of-core engine loads no score rows, which the joint ordinal fit reads: auto keeps its choice."""
    pytest.importorskip("duckdb")
    code, out, err = run_main(["compare", _verdict_table(tmp_path, "v"), "--engine", "duckdb"])
    assert code == 0, err
    assert out.splitlines()[0] == ("Method: anova (--method auto: every model is complete and balanced on the same "
                                   "scenarios).")


def test_the_other_choices_still_work_where_ordinal_is_refused(tables):
    code, out, err = run_main(["variance", tables["ordinal"], "--method", "reml", "--format", "json"])
    assert code == 0, err
    text = _one_sentence(*run_main(["judges", tables["ordinal"], "--method", "bayes"]))
    assert "'bayes' is not one of" in text                   # click's own message for any other bad value


def test_help_offers_ordinal_where_it_fits():
    for command, offered in (("decompose", True), ("allocate", True), ("report", True), ("variance", False)):
        code, out, err = run_main([command, "--help"])
        assert code == 0, err
        assert ("ordinal]" in out) is offered, command
        assert ("--link" in out) is offered and ("--thresholds" in out) is offered, command
    code, out, err = run_main(["compare", "--help"])     # the joint model: --link, shared thresholds only
    assert code == 0 and "ordinal]" in out and "--link" in out and "--thresholds" not in out


# ------------------------------------------------------------------------------------ --method auto's advice
@pytest.mark.parametrize("command, advice", [
    ("decompose", "(latent scale: --method ordinal)"),
    ("allocate", "(latent scale: --method ordinal)"),
    ("judges", "(latent scale: cjstats decompose --method ordinal)"),
    ("variance", "(latent scale: cjstats decompose --method ordinal)"),
])
def test_auto_names_the_ordinal_fit_this_command_can_run(tables, command, advice):
    extra = ["--budget", "60"] if command == "allocate" else []
    code, out, err = run_main([command, tables["ordinal"], *extra])
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("Method: ") and "which suits an ordinal model" in first
    assert advice in first and "cj.estimate" not in first


def test_continuous_scores_are_refused_with_the_fix(tmp_path):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    p = tmp_path / "continuous.csv"
    pd.DataFrame({"model": "a", "scenario": np.repeat(np.arange(20), 3), "judge": np.tile(["x", "y", "z"], 20),
                  "score": rng.normal(size=60)}).to_csv(p, index=False)
    text = _one_sentence(*run_main(["decompose", str(p), "--method", "ordinal"]))
    assert "60 distinct values" in text and "--method reml" in text
