"""The Bayesian ordinal model with the probit link (``estimate(..., "bayes", likelihood="ordinal", link="probit")``).

Known truth (probit data), agreement with the maximum-likelihood probit fit of ``method="ordinal"`` on the same
table, the decisions layer reading the link, and the refusals.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

import cjstats as cj
from cjstats.decisions.predictive import ordinal_draws
from cjstats.estimators.bayes.ordinal import expected_score
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.studies.simulate import panel_offsets, simulate_ordinal_scores

pytest.importorskip("nutpie")

GAM = panel_offsets(4, 0.35)
CUTS = np.array([-1.5, -0.6, 0.0, 0.7, 1.5])


@pytest.fixture(scope="module")
def data():
    return simulate_ordinal_scores(80, 2, 4, s2a=0.4, s2b=0.1, gamma=GAM, cuts=CUTS, seed=11, link="probit")


@pytest.fixture(scope="module")
def fits(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CjstatsWarning)
        bayes = cj.estimate(data, "bayes", likelihood="ordinal", link="probit", seed=2, draws=2000)
    ml = cj.estimate(data, "ordinal", link="probit")
    return bayes, ml


def test_probit_recovers_known_effects(fits):
    fit, _ = fits
    d = fit.diagnostics["x"]
    assert d["r_hat_max"] <= 1.01 and d["divergences"] == 0
    c = fit.components.set_index("component")
    for comp, truth in (("scenario", 0.4), ("generation", 0.1), ("judge_panel", float(np.mean(GAM**2)))):
        assert c.loc[comp, "lower"] <= truth <= c.loc[comp, "upper"], comp
        assert "cumulative-probit" in c.loc[comp, "note"]
    off = fit.judge_offsets
    z2 = float((((off["estimate"] - GAM) / off["std_error"]) ** 2).sum())
    assert z2 <= stats.chi2.ppf(0.999, 3)
    # the residual is the probit's unit, 1, not the logistic pi^2/3
    assert c.loc["residual", "estimate"] == 1.0 and "standard normal" in c.loc["residual", "note"]
    assert (fit.draws["residual"] == 1.0).all()
    true_mu = expected_score(CUTS[None, :], np.arange(1.0, 7.0), GAM[None, :], np.array([0.5]), link="probit")[0]
    assert c.loc["mu", "lower"] <= true_mu <= c.loc["mu", "upper"]
    assert fit.provenance["options"]["link"] == "probit"


def test_probit_agrees_with_the_ml_fit(fits):
    """Same model, same table: posterior means within a third of the ML standard error of the ML estimates
    (at 640 rows the posterior and the likelihood nearly coincide; a logit fit, on its own latent scale,
    is 1.6-1.8 times larger and fails this)."""
    bayes, ml = fits
    b = bayes.components.set_index("component")
    m = ml.components.set_index("component")
    for comp in ("mu", "scenario", "judge_panel"):
        assert abs(b.loc[comp, "estimate"] - m.loc[comp, "estimate"]) <= m.loc[comp, "std_error"] / 3, comp
    # generation (m = 2, truth 0.1) is weakly identified: the ML estimate sits near 0, where a posterior mean is
    # pushed up by the prior, so only the ML value inside the credible interval is asked for
    assert b.loc["generation", "lower"] <= m.loc["generation", "estimate"] <= b.loc["generation", "upper"]
    ob, om = bayes.judge_offsets.set_index("judge"), ml.judge_offsets.set_index("judge")
    diff = (ob["estimate"] - om["estimate"]).abs()
    assert (diff <= om["std_error"] / 3).all(), diff


DESIGNS = [{"strategy": "all", "n": 40, "m": 1}, {"strategy": "cyclic", "n": 40, "m": 1},
           {"strategy": "random", "n": 40, "m": 1}]


def test_the_decision_layer_reads_the_link(fits, monkeypatch):
    """The score-scale strategy variances of the Bayes probit fit are those of the ML probit fit (same model;
    the two average over different parameter uncertainty, posterior vs asymptotic normal, so within 20%, not
    within Monte Carlo error); read with the logit link, the same draws give numbers outside that band."""
    from cjstats.decisions import predictive

    bayes, ml = fits
    assert ordinal_draws(bayes, n_draws=50)["link"] == "probit"
    vb = cj.predictive_design_variance(bayes, designs=DESIGNS, n_draws=100, n_sims=400, seed=3)
    vm = cj.predictive_design_variance(ml, designs=DESIGNS, n_draws=100, n_sims=400, seed=3)
    rel = (vb["variance"] / vm["variance"]).to_numpy()
    assert np.all(np.abs(rel - 1) < 0.2), rel
    assert vb["variance"].iloc[1] < vb["variance"].iloc[2]          # CyclicJudge below a random judge
    real = predictive.ordinal_draws
    monkeypatch.setattr(predictive, "ordinal_draws", lambda *a, **k: {**real(*a, **k), "link": "logit"})
    wrong = cj.predictive_design_variance(bayes, designs=DESIGNS, n_draws=100, n_sims=400, seed=3)
    # one judge per call (cyclic, random) keeps the latent residual in the score: the logit's pi^2/3 moves them
    # by 29-43%; averaging every judge (all) hides most of it
    assert np.all(np.abs(wrong["variance"].to_numpy()[1:] / vm["variance"].to_numpy()[1:] - 1) > 0.2)


def test_link_is_refused_for_the_gaussian_model(data):
    with pytest.raises(CjstatsError, match="applies to likelihood='ordinal' only"):
        cj.estimate(data, "bayes", link="probit", draws=50, tune=50, chains=1)
    with pytest.raises(CjstatsError, match="link"):
        cj.estimate(data, "bayes", likelihood="ordinal", link="cloglog", draws=50, tune=50, chains=1)


def test_every_group_of_a_table_is_fitted():
    """Two models x two criteria: one ordinal fit per group, each on its own rows (the loop once reused the
    name of the score rows for the component rows, so the second group failed with an AttributeError)."""
    parts = []
    for i, (model, crit) in enumerate([("a", "c1"), ("a", "c2"), ("b", "c1"), ("b", "c2")]):
        d = simulate_ordinal_scores(15, 1, 3, s2a=0.5, s2b=0.0, gamma=panel_offsets(3, 0.3),
                                    cuts=np.array([-0.8, 0.2, 1.0]) + 0.3 * i, seed=20 + i, link="probit",
                                    model=model)
        parts.append(d.assign(criterion=crit))
    import pandas as pd

    df = pd.concat(parts, ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CjstatsWarning)
        fit = cj.estimate(df, "bayes", likelihood="ordinal", link="probit", seed=3, draws=200, chains=2)
    mu = fit.components[fit.components["component"] == "mu"].set_index(["model", "criterion"])["estimate"]
    assert len(mu) == 4
    for (model, crit), d in zip([("a", "c1"), ("a", "c2"), ("b", "c1"), ("b", "c2")], parts):
        assert abs(mu[(model, crit)] - d["score"].mean()) < 0.35, (model, crit)   # each group's own scores
    assert sorted(fit.posterior) == ["a / c1", "a / c2", "b / c1", "b / c2"]
