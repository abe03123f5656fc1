"""The contributor path (docs/architecture.md, "Adding a term"): a new variance term is one estimand, one term
and one contribution registration (plus the backend that fits it). A toy judge x generation variance
(1|generation:judge), registered here and removed afterwards, is then parsed from a formula, fitted by the one
backend that declares it, refused in one sentence by those that do not, stated in fit.formula, and carried into
the decision layer's components vector and the variance of a benchmark score."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.decisions.components import TERM_CONTRIBUTIONS, register_contribution
from cjstats.estimators import REGISTRY, Capabilities
from cjstats.exceptions import CjstatsError
from cjstats.results.components import ComponentRow, build_components_frame
from cjstats.results.estimands import ESTIMANDS, register_estimand
from cjstats.results.model import TERMS, Model, parse_formula, register_term

NAME = "judge_generation"


class ToyBackend:
    """Fits the REML model, then the judge x generation variance by moments: the variance of the judge x
    generation-index means after removing both main effects, less the residual's share of it."""

    name = "toy"
    requires: tuple[str, ...] = ()
    extra = ""
    capabilities = Capabilities(terms=("scenario", "generation", "scenario_judge", NAME),
                                optional_terms=("scenario_judge", NAME), model_options=("model",), rows_always=True)

    def fit(self, stats, *, ci_level, seed, rows=None, model=None):
        base = REGISTRY["reml"].fit(stats, ci_level=ci_level, seed=seed,
                                    scenario_judge=model.scenario_judge if model else "auto")
        table = rows.to_frame()
        extra = []
        for g in stats:
            t = table[table["model"] == g.model]
            cell = t.groupby(["judge", "generation"])["score"].mean().unstack()
            inter = cell.sub(cell.mean(axis=1), axis=0).sub(cell.mean(axis=0), axis=1) + float(cell.values.mean())
            n = t["scenario"].nunique()
            resid = base.components.query("model == @g.model and component == 'residual'")["estimate"].iloc[0]
            v = max(float(np.nanvar(inter.values, ddof=1)) - resid / n, 0.0)
            extra.append((g.model, v))
        rows_ = [(dict(model=m), ComponentRow(NAME, v, math.nan, math.nan, math.nan, "toy moments", "panel", v))
                 for m, v in extra]
        add = build_components_frame(rows_, method="toy", ci_level=ci_level, has_criterion=False)
        fitted = {k: (*v, NAME) for k, v in base.fitted_terms.items()}
        return dataclasses.replace(base, components=pd.concat([base.components, add], ignore_index=True), method="toy",
                                   fitted_terms=fitted)


@pytest.fixture
def toy_term(monkeypatch):
    """One registration per registry, undone afterwards."""
    register_estimand(NAME, "sigma2 of (gamma beta)_lj: judge l's own deviation on generation index j (a toy)")
    register_term(NAME, "(1|generation:judge)")
    register_contribution(NAME, lambda d: 1.0 / (d.m * d.k))     # averaged over the m k calls of a scenario
    backend = ToyBackend()
    monkeypatch.setitem(REGISTRY, "toy", backend)
    try:
        yield backend
    finally:
        TERMS.pop(NAME, None)
        ESTIMANDS.pop(NAME, None)
        TERM_CONTRIBUTIONS.pop(NAME, None)


@pytest.fixture(scope="module")
def table():
    return cj.simulate_scores(cj.Truth.table3(), n=20, m=3, k=4, seed=9).subset(models=["Claude"])


def test_the_term_is_in_the_vocabulary_and_the_formula(toy_term):
    m = parse_formula("score ~ judge + (1|scenario) + (1|scenario:generation) + (1|judge:generation)")
    assert NAME in m.terms
    assert "(1|generation:judge)" in m.formula


def test_the_backend_that_declares_it_fits_it_and_states_it(toy_term, table):
    model = Model(terms=("scenario", "generation", NAME))
    fit = cj.estimate(table, "toy", model=model)
    row = fit.components.query("component == @NAME")
    assert len(row) == 1 and row["estimate"].iloc[0] >= 0
    assert fit.formula == "score ~ judge + (1|scenario) + (1|scenario:generation) + (1|generation:judge)"


@pytest.mark.parametrize("method", ["anova", "reml", "ordinal"])
def test_the_others_refuse_it_in_one_sentence(toy_term, table, method):
    model = Model(terms=("scenario", "generation", NAME))
    ok, why = cj.can_fit(method, model)
    assert not ok and why.count(". ") == 0 and why.endswith(".")
    if method != "ordinal":
        assert f"the {NAME} term" in why and "method='toy'" in why
    with pytest.raises(CjstatsError):
        cj.estimate(table, method, model=model)


def test_it_flows_into_the_decisions(toy_term, table):
    fit = cj.estimate(table, "toy", model=Model(terms=("scenario", "generation", NAME)))
    comps = cj.Components.from_fit(fit, model="Claude")
    v = fit.components.query("component == @NAME")["estimate"].iloc[0]
    assert comps[NAME] == v
    design = cj.VarianceDesign("cyclic", n=50, k_total=4, m=4, k=1)
    without = cj.Components({k: x for k, x in comps.items() if k != NAME})
    assert cj.score_variance(comps, design) == pytest.approx(cj.score_variance(without, design) + v / 4, rel=1e-12)


def test_without_the_registration_the_term_does_not_exist(table):
    assert NAME not in TERMS and NAME not in TERM_CONTRIBUTIONS
    with pytest.raises(CjstatsError, match="no term 'judge_generation'"):
        Model(terms=("scenario", NAME))
