"""The report's section registry (cjstats.reporting.registry): every registered section renders from computed
results alone (every estimator, test and optimiser disabled while it renders), returns items the template can
draw, and has a title; a section registered with one line appears in the report; the rendered report holds no
placeholder."""

from __future__ import annotations

import html as html_lib
import re
import sys
from types import ModuleType

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

import cjstats as cj  # noqa: E402
from cjstats.exceptions import CjstatsError  # noqa: E402
from cjstats.reporting import SECTION_TITLES, render_sections  # noqa: E402
from cjstats.reporting.items import check_item, text  # noqa: E402
from cjstats.reporting.plan import compute_inputs, resolve_methods  # noqa: E402
from cjstats.reporting.registry import SECTIONS, Section, ordered_sections, register_section  # noqa: E402

#: Every function that fits, tests, optimises or diagnoses: none may run while a section renders.
COMPUTING = [
    ("cjstats.estimators", "estimate"), ("cjstats.estimators", "auto_method"),
    ("cjstats.estimators.joint", "fit_joint"), ("cjstats.estimators.joint", "compare_models"),
    ("cjstats.estimators.joint", "self_preference"),
    ("cjstats.estimators.humans", "judge_agreement"),
    ("cjstats.estimators.judges", "judge_table"), ("cjstats.estimators.judges", "judge_test"),
    ("cjstats.estimators.judges", "judge_f_test"),
    ("cjstats.estimators.drift", "judge_drift"),
    ("cjstats.decisions.optimise", "optimise"), ("cjstats.decisions.optimise", "scenario_judge_verdict"),
    ("cjstats.decisions.subsample", "subsample_strategies"),
    ("cjstats.decisions.predictive", "predictive_design_variance"),
    ("cjstats.decisions.sequential", "confidence_sequence"),
    ("cjstats.results.diagnosis", "diagnose"),
]

PLACEHOLDERS = re.compile(r"\bFILE\b|<table>|\bTODO\b|\bnan\b|\bNaN\b|\bNone\b")


def _inputs(scores, method, **kw):
    methods, why = resolve_methods(method, scores)
    return compute_inputs(scores, methods=methods, auto_why=why, level=0.95, seed=0, subsample_reps=20, **kw)


@pytest.fixture(scope="module")
def full_inputs():
    """Computed results under which every registered section has something to show."""
    hanna = cj.datasets.load("hanna", composite=True, humans=True, keep_sentinels=True).subset(models=["GPT", "GPT-2", "XLNet"])
    f = hanna.to_frame()
    shift = 0.6 * (f["judge"] == "ChatGPT")
    later = f.assign(score=f["score"] + np.random.default_rng(0).normal(0, 0.3, len(f)) + shift)
    drift = cj.judge_drift(f, later, labels=("May run", "June run"))
    seq = cj.confidence_sequence(f, "GPT-2", "XLNet", method="normal_mixture")
    covariate_fit = cj.fit_joint(cj.simulate_length_bias(), covariates=["length"])
    g = cj.g_study(cj.fit_joint(hanna.subset(judge_type="llm") if "judge_type" in f.columns else hanna, "reml"),
                   n=[25, 100], strategy=["all", "cyclic"], k=1, n_draws=500)
    return _inputs(hanna, ["anova", "reml"], diagnosis="auto", drift=drift, sequences={"GPT-2 vs XLNet": seq},
                   covariates=covariate_fit, gstudy=g)


@pytest.fixture(scope="module")
def latent_inputs():
    """An ordinal fit beside a score-scale one: the latent branches (simulated strategies, faceted forest)."""
    from ordinal_sim import simulate_latent

    df = simulate_latent(40, [-0.3, 0.0, 0.3], [-1.0, -0.3, 0.4, 1.0], 0.8, seed=3)
    return _inputs(cj.read_scores(df), ["ordinal", "anova"], comparisons=None)


@pytest.fixture
def nothing_computes(monkeypatch):
    """Replace every computing function, wherever the package holds it, by one that fails the test."""
    import importlib

    for module, name in COMPUTING:
        original = getattr(importlib.import_module(module), name)

        def boom(*a, _name=f"{module}.{name}", **k):
            raise AssertionError(f"a section called {_name} while rendering")

        for mod in [m for n, m in list(sys.modules.items()) if n == "cjstats" or n.startswith("cjstats.")]:
            if isinstance(mod, ModuleType) and getattr(mod, name, None) is original:
                monkeypatch.setattr(mod, name, boom)
        monkeypatch.setattr(cj, name, boom, raising=False)


NAMES = [s.name for s in ordered_sections()]


def test_the_registry_holds_the_sections_in_report_order_data_first():
    assert NAMES == ["diagnosis", "design", "components", "judges", "f_tests", "strategies", "allocation",
                     "comparisons", "human_agreement", "drift", "sequences", "covariates", "gstudy"]
    assert list(SECTION_TITLES) == NAMES
    assert SECTION_TITLES["diagnosis"] == "What the file holds (doctor)"


@pytest.mark.parametrize("name", NAMES)
def test_each_section_renders_from_computed_results_only(name, full_inputs, nothing_computes):
    section = SECTIONS[name]
    assert section.title.strip() and section.name == name
    items = section.render(full_inputs)
    assert isinstance(items, list) and items, f"{name} rendered nothing from the full inputs"
    for item in items:
        check_item(item)
    words = " ".join(_words(i) for i in items)
    assert not PLACEHOLDERS.search(words), (name, PLACEHOLDERS.search(words))


def _words(item: dict) -> str:
    if item["kind"] == "table":
        return " ".join([item["caption"], *item["columns"], *(v for row in item["rows"] for v in row)])
    if item["kind"] == "figure":
        return f"{item['caption']} {item['alt']}"
    return item["text"]


@pytest.mark.parametrize("name", ["components", "strategies", "allocation"])
def test_latent_branches_render_from_computed_results_only(name, latent_inputs, nothing_computes):
    items = SECTIONS[name].render(latent_inputs)
    assert items
    for item in items:
        check_item(item)


def test_optional_sections_are_left_out_without_their_result(latent_inputs, nothing_computes):
    ids = [s["id"] for s in render_sections(latent_inputs)]
    assert ids == ["design", "components", "judges", "f_tests", "strategies", "allocation"]


def test_the_forest_plot_puts_one_scale_on_each_axis(latent_inputs):
    fig = cj.plots.components_forest(latent_inputs.fits, by_scale=True)
    units = [a.get_xlabel() for a in fig.axes]
    assert all(" / " not in u for u in units)                      # no axis names two units
    assert any("latent" in u for u in units) and "score points²" in units
    items = SECTIONS["components"].render(latent_inputs)
    caption = [i["caption"] for i in items if i["kind"] == "figure" and i["alt"].startswith("forest")][0]
    assert "one row of panels per scale" in caption


def test_the_drawn_group_is_chosen_and_the_reason_said(full_inputs):
    g = full_inputs.group
    mu = full_inputs.main.components.query("component == 'mu'").set_index("model")["estimate"]
    assert g.reason == "top" and g.model == mu.idxmax()
    strategies = " ".join(i["text"] for i in SECTIONS["strategies"].render(full_inputs) if i["kind"] == "text")
    assert f"Drawn for {g.model}, chosen as the highest panel mean of the table's 3 models" in strategies
    assert "sorted order" not in strategies


def test_a_section_registered_with_one_line_appears_in_the_report():
    def render(inputs):          # the toy section's module: render formats what was computed
        return [text(f"Toy section: {len(inputs.fits)} fit(s) of {len(inputs.scores.models)} model(s).")]

    register_section(Section("toy", "A toy section", 25, render))   # the one line
    try:
        out = cj.report(cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT"]), method="anova",
                        comparisons=None)
    finally:
        SECTIONS.pop("toy")
    ids = re.findall(r'<section id="([a-z_]+)">', out)
    assert ids[:3] == ["design", "toy", "components"]                 # order 25: between 20 and 30
    assert '<a href="#toy">A toy section</a>' in out and "<h2>A toy section</h2>" in out
    assert "Toy section: 1 fit(s) of 1 model(s)." in out
    assert "toy" not in SECTION_TITLES


def test_registering_twice_or_a_nameless_section_is_refused():
    with pytest.raises(CjstatsError, match="already registered"):
        register_section(Section("design", "Again", 1, lambda inputs: []))
    with pytest.raises(CjstatsError, match="identifier name"):
        register_section(Section("two words", "T", 1, lambda inputs: []))
    assert "two words" not in SECTIONS


def test_the_rendered_report_holds_no_placeholder(full_inputs, tmp_path):
    """FILE, <table>, TODO, nan, None: never in the words of the report (tags and images stripped)."""
    page = cj.report(full_inputs.scores, method=["anova", "reml"], subsample_reps=20, diagnosis="auto",
                     drift=full_inputs.drift, sequences=full_inputs.sequences, covariates=full_inputs.covariates)
    words = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    words = html_lib.unescape(re.sub(r"<[^>]+>", " ", words[words.index("<body>"):]))
    found = PLACEHOLDERS.findall(words)
    assert not found, [words[max(0, m.start() - 80):m.end() + 80] for m in PLACEHOLDERS.finditer(words)][:3]


# ------------------------------------------------------------------- a comparison on the latent scale (issue 35)
@pytest.fixture(scope="module")
def verdict_comparisons():
    """A pass/fail table of 3 models: the report's auto comparison (the joint ordinal model, as cjstats compare's
    --method auto) and a logit one given by the caller."""
    import warnings
    from pathlib import Path

    from cjstats.reporting.plan import auto_comparison

    sys.path.insert(0, str(Path(__file__).parent / "data" / "joint_ordinal"))
    from make_tables import simulate

    scores = cj.read_scores(simulate(n=30, P=3, K=3, J=2, seed=21))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto, run = auto_comparison(scores, 0.95, 0)
        logit = cj.compare_models(scores, method="ordinal", link="logit")
    return auto, run, logit


def _section(comparisons, run=None):
    from types import SimpleNamespace

    return SECTIONS["comparisons"].render(SimpleNamespace(comparisons=comparisons, comparison_run=run))


def test_an_ordinal_comparison_shows_pass_rates_then_the_latent_scale(verdict_comparisons, nothing_computes):
    auto, run, logit = verdict_comparisons
    assert run["method"] == "ordinal" and "scores are binary" in run["why"] and auto.fit.method == "ordinal"
    items = _section(auto, run)
    for item in items:
        check_item(item)
    words = " ".join(_words(i) for i in items)
    assert not PLACEHOLDERS.search(words) and "the Gaussian model shrinks" not in words
    texts = [i["text"] for i in items if i["kind"] == "text"]
    assert texts[0].startswith("Joint fit of every model (ordinal)") and "method 'auto' chose ordinal" in texts[0]
    assert any("on the latent probit scale (the latent residual SD is 1" in t and "pass rate" in t for t in texts)
    tables = {i["caption"]: i for i in items if i["kind"] == "table"}
    assert list(tables) == ["pass rate of each model (95% interval)",
                            "differences in pass rate (a minus b, 95% interval; p adjusted: holm)",
                            "latent differences on the probit scale (a minus b, 95% interval; p adjusted: holm)",
                            f"ranks by the latent mean ({auto.rank_method})"]
    rates = tables["pass rate of each model (95% interval)"]
    assert rates["columns"] == ["model", "pass rate", "std_error", "lower", "upper"]
    sm = auto.score_means.set_index("model")
    assert [r[0] for r in rates["rows"]] == list(auto.ranks["model"])          # in rank order
    for row in rates["rows"]:      # the numbers of score_means, to the decimals their SEs support
        est, lo, hi = (float(sm.loc[row[0], c]) for c in ("estimate", "lower", "upper"))
        assert float(row[1]) == pytest.approx(est, abs=6e-3) and float(row[3]) == pytest.approx(lo, abs=6e-3)
        assert float(row[4]) == pytest.approx(hi, abs=6e-3) and 0 < lo < est < hi < 1
    diffs = tables["differences in pass rate (a minus b, 95% interval; p adjusted: holm)"]
    assert len(diffs["rows"]) == 3 and diffs["columns"] == ["model_a", "model_b", "difference", "std_error",
                                                             "lower", "upper", "p_value", "p_adjusted"]
    # Holm over the three pass-rate differences, as the latent differences are adjusted
    from cjstats.estimators.intervals import adjust_p

    sd = auto.score_differences
    assert np.allclose(sd["p_adjusted"], adjust_p(sd["p_value"].to_numpy(), "holm"), rtol=0, atol=0)
    assert (sd["p_adjusted"] >= sd["p_value"]).all()
    assert [i["caption"] for i in items if i["kind"] == "figure"] == ["Rank of each model with its interval "
                                                                      "(latent mean)."]
    # a logit fit says so; labelled comparisons get a heading each
    items = _section({"logit": logit})
    texts = [i["text"] for i in items if i["kind"] in ("text", "heading")]
    assert texts[0] == "logit" and "latent logit scale (the latent residual SD is pi/sqrt(3)" in texts[1]
    assert any(i["kind"] == "table" and i["caption"].startswith("latent differences on the logit scale")
               for i in items)


def test_a_gaussian_comparison_beside_an_ordinal_one_keeps_its_generic_tables(verdict_comparisons):
    auto, _, _ = verdict_comparisons
    gauss = cj.compare_models(cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(
        models=["GPT", "GPT-2"]), method="anova")
    items = _section({"ordinal": auto, "anova": gauss})
    captions = [i["caption"] for i in items if i["kind"] == "table"]
    heads = [i["text"] for i in items if i["kind"] == "heading"]
    assert heads == ["ordinal", "anova"] and "pass rate of each model (95% interval)" in captions
    assert "differences" in captions and "ranks" in captions                  # the anova's frames, as before
