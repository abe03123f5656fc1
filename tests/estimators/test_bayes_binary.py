"""Binary verdicts in the Bayesian ordinal model (issue 22): two categories make the cumulative-logit model a
random-effects logistic regression, P(Y = 1) = logistic(eta - c_0), with one cutpoint. These tests check that
the existing ``likelihood="ordinal"`` covers it on 0/1 data (and on verdicts read as 0/1): it recovers known
latent effects, and its log density is the Bernoulli-logit one.

Kept small (one generation, 3 judges, 2 chains of 400 draws: a few seconds); the tolerances are the posterior
intervals themselves, so a wrong likelihood (e.g. the Gaussian one on 0/1 scores, whose scenario variance is
on the probability scale, about 0.15 here) fails them.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

import cjstats as cj
from cjstats.studies.simulate import simulate_ordinal_scores

pytest.importorskip("pymc")
pytest.importorskip("arviz_stats")

from cjstats.estimators.bayes import ORDINAL_PRIORS  # noqa: E402
from cjstats.estimators.bayes.ordinal import OrdinalDensity, ordinal_data, zerosum_extend  # noqa: E402

GAMMA = np.array([-0.6, 0.0, 0.6])


@pytest.fixture(scope="module")
def binary():
    df = simulate_ordinal_scores(150, 1, 3, s2a=1.5, s2b=0.0, gamma=GAMMA, cuts=np.array([0.3]), seed=11)
    df["score"] = df["score"] - 1          # 1/2 -> 0/1
    assert set(df["score"]) == {0, 1}
    return df


def test_one_cutpoint_is_the_logistic_likelihood(binary):
    """The ordinal log density at J = 2 equals sum_r log Bernoulli(y_r | logistic(eta_r - c)) plus the priors."""
    scores = cj.read_scores(binary)
    g = next(iter(scores.groups()))
    od = ordinal_data(g)
    assert od.values.tolist() == [0.0, 1.0]
    dens = OrdinalDensity(od, dict(ORDINAL_PRIORS), compiled=False)
    theta = dens.initial_point(np.random.default_rng(3))
    p = dens._split(theta)
    lp, _ = dens.logp_numpy(theta)
    # the same point with the data term replaced by the Bernoulli-logit likelihood
    alpha = p["sigma_scenario"] * zerosum_extend(p["za"])
    gamma = dens.expand(theta)["gamma"]
    lin = alpha[od.scenario] + gamma[od.judge] - p["cut"][0]
    y = od.category
    bern = float(np.sum(y * -np.logaddexp(0, -lin) + (1 - y) * -np.logaddexp(0, lin)))
    none = dataclasses.replace(od, n_obs=0, category=y[:0], scenario=od.scenario[:0], cell=od.cell[:0],
                               judge=od.judge[:0])
    prior, _ = OrdinalDensity(none, dict(ORDINAL_PRIORS), compiled=False).logp_numpy(theta)
    assert lp == pytest.approx(prior + bern, rel=1e-10, abs=1e-8)


def test_binary_fit_recovers_latent_effects(binary):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = cj.estimate(binary, "bayes", likelihood="ordinal", seed=2, draws=400, tune=400, chains=2)
    c = fit.components.set_index("component")
    assert c.loc["scenario", "lower"] <= 1.5 <= c.loc["scenario", "upper"]
    assert c.loc["scenario", "lower"] > 0.5          # the Gaussian (probability-scale) value is about 0.15
    assert c.loc["residual", "estimate"] == pytest.approx(math.pi**2 / 3)
    off = fit.judge_offsets
    assert ((off["lower"] <= GAMMA) & (GAMMA <= off["upper"])).all()
    assert fit.posterior["x"].posterior["cutpoints"].shape[-1] == 1       # one cutpoint: J = 2
    # mu is the pass rate of the panel (score scale 0..1)
    assert 0.0 < c.loc["mu", "estimate"] < 1.0
    assert abs(c.loc["mu", "estimate"] - binary["score"].mean()) < 0.1
