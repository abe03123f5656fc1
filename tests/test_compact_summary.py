"""The compact, lme4-style printout of a fit (print(fit)), --format long, p_best's decimals, the optimiser's
sentence on unspent calls and progress that stays quiet off a terminal."""

from __future__ import annotations

import io
import re

import pytest

import cjstats as cj
from cjstats._progress import Progress, progress_enabled, progress_iter
from cjstats.results.format import format_prob, short_labels


@pytest.fixture(scope="module")
def fits():
    scores = cj.datasets.load("hanna", composite=True)
    many = cj.estimate(scores, method="reml")
    one = cj.estimate(scores.subset(models=["GPT"]), method="reml")
    return many, one


def _tables(text: str) -> list[str]:
    """The lines before the notes (the header, the components and the offsets)."""
    return text.split("\nmethods: ")[0].splitlines()


def test_formula_first_then_one_line_per_component_with_sd_and_a_legend(fits):
    _, one = fits
    text = str(one)
    lines = text.splitlines()
    assert lines[2].startswith("formula: score ~ judge + (1|scenario)")
    assert lines[3].startswith("data: 476 obs; groups: scenario 96, judge 5; REML criterion")
    head = next(i for i, ln in enumerate(lines) if ln.strip().startswith("component"))
    assert re.split(r"\s{2,}", lines[head].strip()) == ["component", "estimate", "SD", "95% interval", "method"]
    body = lines[head + 1:head + 6]
    assert [ln.split()[0] for ln in body] == ["scenario", "residual", "judge_panel", "judge_population", "mu"]
    scen = one.components.set_index("component").loc["scenario"]
    sd = f"{scen['estimate'] ** 0.5:.3f}"
    assert sd in body[0] and body[0].split()[-1] == "PL"
    assert "methods: PL = profile likelihood (REML); NC = noncentral chi-square (GLS); t = t (REML GLS" in text
    assert text.count("profile likelihood (REML)") == 1          # each full method once, in the legend
    assert "not identified by these data: generation, scenario_judge" in text
    assert max(len(ln) for ln in _tables(text)) <= 100


def test_several_models_side_by_side_in_blocks_no_wider_than_100(fits):
    many, _ = fits
    text = many.summary().as_text()
    tables = _tables(text)
    assert max(len(ln) for ln in tables) <= 100
    heads = [ln for ln in tables if ln.strip().startswith("component")]
    assert len(heads) >= 2                                        # the 11 models split into blocks
    models = list(dict.fromkeys(many.components["model"]))
    shown = [m for h in heads for m in re.split(r"\s{2,}", h.strip())[2:]]
    assert shown == models                                        # every model once, in order, as a column
    for h in heads:                                               # one line per component in each block
        i = tables.index(h)
        assert [ln.split()[0] for ln in tables[i + 1:i + 6]] == ["scenario", "residual", "judge_panel",
                                                                  "judge_population", "mu"]
    assert "ML cumulative" not in text and len(text.splitlines()) < 110


def test_the_long_table_is_kept_behind_it(fits):
    many, _ = fits
    long = many.summary().as_long_text()
    assert long.count("profile likelihood (REML)") > 20          # one row per model x component
    assert "ci_method" in long and "ci_method" not in many.summary().as_text()
    assert "| model |" in many.summary().as_markdown() and "<table" in many.summary().as_html()


def test_cli_format_long_prints_the_long_table_and_table_the_compact_one():
    from cli_helpers import run_main

    args = ["decompose", "--dataset", "hanna", "--composite", "--method", "anova", "--incomplete", "drop"]
    code, compact, err = run_main(args)
    code_long, long, err_long = run_main([*args, "--format", "long"])
    assert code == 0 and code_long == 0, (err, err_long)
    assert "methods: " in compact and "ci_method" not in compact
    assert "ci_method" in long and "methods: " not in long


def test_p_best_has_three_fixed_decimals():
    assert [format_prob(v) for v in (1.0, 0.9999, 0.000125, 0.0, 0.5)] == ["1.000", ">0.999", "<0.001", "0.000",
                                                                          "0.500"]
    fit = cj.estimate(cj.datasets.load("hanna", composite=True).subset(models=["GPT"]), method="reml")
    text = cj.optimise(fit, budget=96).as_text()
    table = text.split("Best design per strategy")[1].split("\n\n")[0].splitlines()[2:]
    for ln in table:
        assert re.search(r"(\d\.\d{3}|[<>]0\.\d{3})$", ln.strip()), ln


def test_short_labels_are_unique():
    lab = short_labels(["profile likelihood (REML)", "profile likelihood", "Wald (delta method)",
                        "ML cumulative probit (AGQ 10; latent scale), Wald (delta method)"])
    assert list(lab.values()) == ["PL", "PL2", "Wald", "Wald2"]


def test_the_optimiser_says_why_it_leaves_calls_unspent():
    fit = cj.estimate(cj.datasets.load("hanna", composite=True).subset(models=["GPT"]), method="reml")
    a = cj.optimise(fit, budget=250)
    r = a.recommendation
    assert r["calls"] < 250
    text = a.as_text()
    assert f"The design uses {r['calls']} of the 250 budgeted calls" in text and "whole numbers" in text
    full = cj.optimise(fit, budget=96)                            # 96 calls: nothing to explain
    if full.recommendation["calls"] == 96:
        assert "budgeted calls" not in full.as_text()


def test_progress_is_off_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert progress_enabled(None) is False and progress_enabled(True) is True
    assert list(progress_iter(range(3), "x")) == [0, 1, 2]
    with Progress(3, "x") as bar:
        bar.update()
    import sys

    assert sys.stderr.getvalue() == ""


def test_progress_on_request_writes_to_stderr_only(capsys):
    out = list(progress_iter(range(3), "counting", progress=True))
    cap = capsys.readouterr()
    assert out == [0, 1, 2] and cap.out == "" and "counting" in cap.err


def test_a_component_in_two_views_keeps_both_rows():
    """The joint judge_model is reported in the panel and the population view: the compact summary shows both."""
    import warnings

    import cjstats as cj

    s = cj.simulate_scores(cj.Truth.table3(), n=15, m=2, k=3, seed=2).subset(models=["Claude", "GPT"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = str(cj.fit_joint(s, "reml"))
    assert "\n  judge_model " in text and "\n  judge_model (population) " in text
    # the shared terms first, as one list (no empty per-model columns), then the models' own rows
    shared = text.split("Random effects (variances) shared by the models, 95% intervals:")[1]
    assert shared.splitlines()[1].split() == ["component", "estimate", "SD", "95%", "interval", "method"]
    assert "(joint)" not in text
    by_model = text.split("By model, the mean score mu: estimate [95% interval] SD")[1].splitlines()
    assert by_model[1].split() == ["component", "method", "Claude", "GPT"] and by_model[2].split()[0] == "mu"


def test_the_report_table_is_the_compact_layout_with_the_text_cells(fits):
    """The report's components table (compact_frame): one row per model, one column per identified component
    named with its method label, each cell the estimate and interval the text printout shows for that model."""
    from cjstats.results.components import compact_frame

    many, _ = fits
    frame, legend, missing = compact_frame(many.summary())
    assert missing == ["generation", "scenario_judge"]          # m = 1: the notes say why
    assert list(frame["model"]) == sorted(many.components["model"].unique())
    assert list(frame.columns[1:]) == ["scenario (PL)", "residual (PL)", "judge_panel (NC)",
                                       "judge_population (PL)", "mu (t)"]
    assert legend.startswith("PL = profile likelihood")
    text = str(many)
    for _, row in frame.iterrows():                       # every cell is printed, in the same digits, by print(fit)
        for cell in row.iloc[1:]:
            assert cell.split(" [")[0] in text and cell.split(" ", 1)[1] in text
    gpt = many.components.query("model == 'GPT' and component == 'scenario'").iloc[0]
    est, rest = frame.set_index("model").loc["GPT", "scenario (PL)"].split(" ", 1)
    lo, hi = (float(x) for x in rest.strip("[]").split(", "))
    assert float(est) == pytest.approx(gpt["estimate"], abs=1e-3)
    assert (lo, hi) == (pytest.approx(gpt["lower"], abs=1e-3), pytest.approx(gpt["upper"], abs=1e-3))


@pytest.mark.parametrize("tty, asked, shown", [(True, None, True), (False, None, False), (False, True, True),
                                               (True, False, False)])
def test_bayes_fits_show_the_samplers_bar_on_a_terminal(monkeypatch, tty, asked, shown):
    """estimate(method="bayes") hands the sampler its progress bar when stderr is a terminal (or progress=True),
    and never in logs and pipes unless asked (the sampler draws the bar; this checks what it is told)."""
    pytest.importorskip("nutpie")
    import sys

    import cjstats.estimators.bayes as bayes_mod

    told = []

    class Stop(Exception):
        pass

    def fake(*args, progress, **kwargs):
        told.append(progress)
        raise Stop

    monkeypatch.setattr(bayes_mod, "_sample_nutpie", fake)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty, raising=False)
    scores = cj.datasets.load("hanna", composite=True).subset(models=["GPT"])
    with pytest.raises(Stop):
        cj.estimate(scores, method="bayes", sampler="nutpie", progress=asked)
    assert told == [shown]
