"""Joint Bayesian fit, checked loosely against the joint REML fit on a small table (one PyMC fit, ~20 s)."""

from __future__ import annotations

import numpy as np
import pytest

import cjstats as cj
from cjstats.studies.simulate_joint import simulate_joint

pytest.importorskip("pymc")


@pytest.fixture(scope="module")
def fits():
    gp = np.zeros((3, 3))
    gp[1, 0] = 0.6
    gp = gp - gp.mean(0) - gp.mean(1, keepdims=True) + gp.mean()
    f = simulate_joint(n=15, m=2, mu=[0, .5, 1.5], gamma=[-.3, 0, .3], s2_scenario=.5, s2_model_scenario=.2,
                       s2_generation=.1, s2_residual=.3, judge_model=gp, rng=5)
    return f, cj.fit_joint(f, "bayes", seed=1, draws=300, tune=300), cj.fit_joint(f, "reml")


def test_differences_agree_with_reml_within_a_posterior_sd(fits):
    f, b, r = fits
    db, dr = cj.compare_models(f, fit=b).differences, cj.compare_models(f, fit=r).differences
    assert list(db["model_a"]) == list(dr["model_a"])
    assert (abs(db["difference"] - dr["difference"]) < db["std_error"]).all()
    assert np.allclose(db["std_error"], dr["std_error"], rtol=0.3)  # same data, different priors: loose


def test_self_preference_agrees_with_reml_within_a_posterior_sd(fits):
    f, b, r = fits
    sb = cj.self_preference(f, {"j0": "m1"}, fit=b).contrasts.iloc[0]
    sr = cj.self_preference(f, {"j0": "m1"}, fit=r).contrasts.iloc[0]
    assert abs(sb.estimate - sr.estimate) < sb.std_error
    assert "no test" in str(cj.self_preference(f, {"j0": "m1"}, fit=b))


def test_posterior_ranks_and_p_best(fits):
    f, b, r = fits
    ranks = cj.compare_models(f, fit=b).ranks
    assert abs(ranks["p_best"].sum() - 1) < 1e-12
    assert ranks["model"].iloc[0] == "m2" and ranks["rank_upper"].iloc[0] == 1


def test_residual_variance_interval_covers_reml(fits):
    f, b, r = fits
    rb = b.components.set_index(["component", "view"]).loc[("residual", "panel")]
    rr = r.components.set_index(["component", "view"]).loc[("residual", "panel")]
    assert rb["lower"] <= rr["estimate"] <= rb["upper"]
