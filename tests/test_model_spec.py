"""The model specification (cj.Model): built from every entry point's arguments, passed directly or as an lme4-style
formula, checked against what backends and engines declare (cj.can_fit), stated by every fit (fit.model,
fit.formula) and printed at the top of its summary."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cli_helpers import run_main
from cjstats.exceptions import CjstatsError
from cjstats.results.model import TERMS, Model, parse_formula


@pytest.fixture(scope="module")
def sim():
    return cj.simulate_scores(cj.Truth.table3(), n=20, m=3, k=4, seed=5).subset(models=["Claude", "GPT"])


@pytest.fixture(scope="module")
def ratings():
    rng = np.random.default_rng(3)
    n, k = 40, 4
    lat = rng.normal(0, 0.8, n)[:, None] + np.array([-0.3, 0, 0.2, 0.4]) + rng.standard_normal((n, k))
    q = np.digitize(lat, [-1.0, 0.0, 1.0]) + 1
    return pd.DataFrame({"model": "m", "scenario": np.repeat(np.arange(n), k), "judge": np.tile([f"j{i}" for i in
                         range(k)], n), "score": q.ravel().astype(float)})


# ---------------------------------------------------------------------------------------------- the formula
@pytest.mark.parametrize("text, terms, unit, judges", [
    ("score ~ judge + (1|scenario) + (1|scenario:generation) + (1|scenario:judge)",
     ("scenario", "generation", "scenario_judge"), "model", "panel"),
    ("score ~ judge + (1|scenario)", ("scenario",), "model", "panel"),
    ("score ~ 1 + (1|judge) + (1|scenario) + (1|generation:scenario)", ("scenario", "generation"), "model",
     "population"),
    ("score ~ model*judge + (1|scenario) + (1|scenario:model)", ("scenario", "model_scenario"), "joint", "panel"),
    ("score ~ model * judge + (1|scenario) + (1|model:scenario) + (1|scenario:model:generation)",
     ("scenario", "generation", "model_scenario"), "joint", "panel"),
])
def test_formulas_in_the_vocabulary_parse(text, terms, unit, judges):
    m = parse_formula(text)
    assert (set(m.terms), m.unit, m.judges) == (set(terms), unit, judges)
    assert parse_formula(m.formula) == m            # the text form round-trips


def test_per_model_variances_and_covariates_parse():
    m = parse_formula('score ~ model*judge + judge*length + (1|scenario) + (0 + dummy(model, "a")|scenario) + '
                      '(0 + dummy(model, "b")|scenario)')
    assert (m.model_scenario, m.covariates) == ("per_model", ("length",))
    from cjstats.results.model import formula

    assert '(0 + dummy(model, "a")|scenario) + (0 + dummy(model, "b")|scenario)' in formula(m, models=["a", "b"])


def test_the_ordinal_formula_is_a_clmm_call():
    m = parse_formula("ordered(score) ~ judge + (1|scenario)", link="logit")
    assert (m.likelihood, m.link) == ("cumulative", "logit")
    assert m.formula == 'clmm(ordered(score) ~ judge + (1|scenario), link = "logit")'


@pytest.mark.parametrize("text, says", [
    ("y ~ judge + (1|scenario)", "response"),
    ("score ~ judge + (1|prompt)", "(1|prompt)"),
    ("score ~ judge + (judge|scenario)", "(judge|scenario)"),
    ("score ~ judge + length + (1|scenario)", "length"),
    ("score ~ judge + (1|judge) + (1|scenario)", "both fixed"),
    ("score ~ judge + (1|scenario:model)", "(1|model:scenario)"),
    ("score ~ judge", "scenario term"),
    ("score ~ model*judge + (1|scenario)", "model x scenario"),
    ("judge + (1|scenario)", "score ~"),
])
def test_a_formula_outside_the_vocabulary_is_one_sentence(text, says):
    with pytest.raises(CjstatsError) as e:
        parse_formula(text)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_model_arguments_are_checked():
    with pytest.raises(CjstatsError, match="no term 'judge_generation'"):
        Model(terms=("scenario", "judge_generation"))
    with pytest.raises(CjstatsError, match="link"):
        Model(likelihood="cumulative", link="identity")
    with pytest.raises(CjstatsError, match="thresholds='judge'"):
        Model(thresholds="judge")
    with pytest.raises(CjstatsError, match="unit='joint'"):
        Model(terms=("scenario", "model_scenario"))


# ---------------------------------------------------------------------------------------------- capabilities
@pytest.mark.parametrize("method, model, engine, ok, says", [
    ("reml", Model(), None, True, ""),
    ("anova", Model(), "nosj", True, ""),                           # scenario_judge 'auto': left out, said so
    ("reml", Model(auto=("generation",)), "nosj", False, "engine='nosj' does not build"),
    ("reml", Model(auto=("generation",)), "duckdb", True, ""),       # every registered engine builds the term
    ("reml", Model(auto=("generation",)), "dask", True, ""),
    ("anova", Model(likelihood="cumulative", link="probit", terms=("scenario",)), None, False, "cumulative"),
    ("ordinal", Model(), None, False, "gaussian likelihood"),
    ("ordinal", Model(terms=("scenario", "generation"), likelihood="cumulative", link="logit",
                      thresholds="judge"), None, True, ""),
    ("bayes", Model(terms=("scenario",), likelihood="cumulative", link="logit", thresholds="judge"), None, False,
     "thresholds='judge'"),
    ("ordinal", Model(terms=("scenario", "scenario_judge"), auto=(), likelihood="cumulative", link="probit"), None,
     False, "scenario_judge term"),
    ("nope", Model(), None, False, "no method 'nope'"),
    ("anova", Model(terms=("scenario", "model_scenario"), unit="joint", model_scenario="per_model"), None, False,
     "per_model"),
    ("reml", Model(terms=("scenario", "model_scenario"), unit="joint", model_scenario="per_model"), None, True, ""),
])
def test_can_fit_answers_from_the_declarations(method, model, engine, ok, says, monkeypatch):
    from cjstats.stats.engines import ENGINES, EngineCapabilities, ModuleEngine

    # an engine that does not build the scenario x judge statistics (every registered one does)
    monkeypatch.setitem(ENGINES, "nosj", ModuleEngine("nosj", "cjstats.stats.engines.numpy_engine",
                                                      capabilities=EngineCapabilities(in_memory=True)))
    got, why = cj.can_fit(method, model, engine=engine)
    assert got is ok and says in why
    assert ok or (why.endswith(".") and "\n" not in why)


# ---------------------------------------------------------------------------------------------- entry points
def _same(a, b):
    pd.testing.assert_frame_equal(a.components, b.components)
    pd.testing.assert_frame_equal(a.judge_offsets, b.judge_offsets)


def test_a_model_or_formula_fits_what_the_options_fit(sim):
    by_options = cj.estimate(sim, "reml", scenario_judge=False)
    by_formula = cj.estimate(sim, "reml", model="score ~ judge + (1|scenario) + (1|scenario:generation)")
    by_model = cj.estimate(sim, "reml", model=Model(terms=("scenario", "generation")))
    _same(by_options, by_formula)
    _same(by_options, by_model)
    assert by_formula.formula == by_options.formula == "score ~ judge + (1|scenario) + (1|scenario:generation)"


def test_the_default_model_states_the_terms_each_group_fitted(sim):
    fit = cj.estimate(sim, "anova")
    assert fit.model == Model()
    assert fit.formula == "score ~ judge + (1|scenario) + (1|scenario:generation) + (1|scenario:judge)"
    one = cj.estimate(cj.simulate_scores(cj.Truth.table3(), n=20, m=1, k=4, seed=1), "reml")
    assert one.formula == "score ~ judge + (1|scenario)"              # m = 1: generation not identifiable


def test_ordinal_fits_state_a_clmm_call(ratings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = cj.estimate(ratings, "ordinal", link="logit")
        b = cj.estimate(ratings, "ordinal", model=Model(terms=("scenario", "generation"), likelihood="cumulative",
                                                       link="logit"))
    _same(a, b)
    assert a.formula == 'clmm(ordered(score) ~ judge + (1|scenario), link = "logit")'
    assert a.model.scale == "latent"


def test_a_model_and_the_options_it_sets_are_not_both_given(sim):
    with pytest.raises(CjstatsError, match="either as model= or as the option 'scenario_judge'"):
        cj.estimate(sim, "reml", model=Model(), scenario_judge=False)


def test_a_required_term_the_data_cannot_identify_is_refused(sim):
    one = cj.simulate_scores(cj.Truth.table3(), n=20, m=1, k=4, seed=1)
    with pytest.raises(CjstatsError, match="one generation per scenario"):
        cj.estimate(one, "reml", model="score ~ judge + (1|scenario) + (1|scenario:generation)")
    with pytest.raises(CjstatsError, match="leaves out the generation term"):
        cj.estimate(sim, "reml", model="score ~ judge + (1|scenario)")


def test_the_joint_entry_points_take_a_model(sim):
    a = cj.fit_joint(sim, "reml", model_scenario="per_model")
    b = cj.fit_joint(sim, "reml", model=a.formula)
    pd.testing.assert_frame_equal(a.components, b.components)
    c = cj.compare_models(sim, "reml", model=a.formula)
    assert c.fit.formula == a.formula and 'dummy(model, "Claude")' in a.formula
    with pytest.raises(CjstatsError, match="per_model"):
        cj.fit_joint(sim, "anova", model=a.formula)
    with pytest.raises(CjstatsError, match="unit='joint'"):
        cj.fit_joint(sim, "reml", model="score ~ judge + (1|scenario)")


def test_the_summary_starts_with_the_formula_observations_and_criterion(sim):
    text = cj.estimate(sim, "reml").summary().as_text().splitlines()
    assert text[2].startswith("formula: score ~ judge + (1|scenario)")
    assert "720 obs" in text[3] or "obs; groups: scenario 20, judge 4" in text[3]
    assert "REML criterion" in text[3]
    joint = str(cj.fit_joint(sim, "reml"))
    assert "formula: score ~ model*judge" in joint and "REML criterion" in joint


def test_the_model_is_saved_and_loaded(sim, tmp_path):
    fit = cj.estimate(sim, "reml", scenario_judge=False)
    fit.save(tmp_path / "fit")
    back = cj.VarianceComponents.load(tmp_path / "fit")
    assert back.model == fit.model and back.formula == fit.formula


def test_the_command_line_takes_a_formula(sim, tmp_path):
    path = tmp_path / "s.csv"
    sim.to_frame().to_csv(path, index=False)
    code, out, err = run_main(["decompose", str(path), "--method", "reml", "--formula",
                               "score ~ judge + (1|scenario) + (1|scenario:generation)"])
    assert code == 0, err
    assert "formula: score ~ judge + (1|scenario) + (1|scenario:generation)\n" in out
    code, out, err = run_main(["decompose", str(path), "--formula", "score ~ judge + (1|prompt)"])
    assert code != 0 and "(1|prompt)" in err and "Traceback" not in err


def test_every_term_has_its_estimand():
    from cjstats.results.estimands import ESTIMANDS

    assert set(TERMS) <= set(ESTIMANDS)
