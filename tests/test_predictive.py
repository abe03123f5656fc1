"""Posterior-predictive design variances of ordinal fits (cjstats.decisions.predictive) and optimise's ordinal dispatch.

Monte Carlo tolerances: two estimates of a mean squared error are compared within 4 standard errors of their
difference, each standard error sd(squared errors)/sqrt(number of simulations). Seeds are fixed.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

import cjstats as cj
from cjstats.exceptions import CjstatsError
from cjstats.decisions.predictive import predictive_design_variance, simulate_design_variance
from cjstats.studies.simulate import panel_offsets, simulate_ordinal_scores

Z = 4.0




def one_draw(cuts, gamma, s2a, s2b, values):
    return {"cutpoints": np.asarray(cuts, float)[None, :], "gamma": np.asarray(gamma, float)[None, :],
            "s2_scenario": np.array([s2a]), "s2_generation": np.array([s2b]), "values": np.asarray(values, float)}


# ------------------------------------------------------------------------- (a) the paper's ordering
def test_gaussian_like_ordinal_scale_reproduces_cyclic_advantage():
    """Many categories (unit latent spacing) and effects large against the logistic unit: the scores are the
    latent scores rounded, so Prop. 1 holds with sigma_eps^2 = pi^2/3 + 1/12 and V_C <= min(V_A, V_B)."""
    k = 4
    s2a, s2b, s2g = 4.0, 25.0, 100.0
    gam = panel_offsets(k, s2g)
    cuts = np.arange(-80.0, 81.0)
    p = one_draw(cuts, gam, s2a, s2b, np.arange(cuts.size + 1))
    n, budget = 10, 4                                      # B = 4 calls per scenario
    designs = [{"strategy": "all", "n": n, "m": budget // k}, {"strategy": "random", "n": n, "m": budget},
               {"strategy": "cyclic", "n": n, "m": budget}]
    sims = 20_000
    d, var, mcse = simulate_design_variance(p, designs, n_sims=sims, seed=3)
    v = dict(zip(d["strategy"], var[:, 0]))
    se = dict(zip(d["strategy"], mcse[:, 0]))
    for other in ("all", "random"):
        assert v["cyclic"] - v[other] <= Z * math.hypot(se["cyclic"], se[other]), (v, se)
    assert v["cyclic"] < min(v["all"], v["random"])
    # and the values are the paper's Eqs. 2-5 with the logistic-plus-rounding residual
    s2e = math.pi**2 / 3 + 1 / 12
    paper = {"all": s2a / n + (k * s2b + s2e) / (n * budget),
             "random": s2a / n + (s2b + np.mean(gam**2) + s2e) / (n * budget),
             "cyclic": s2a / n + (s2b + s2e) / (n * budget)}
    # random single judge: sigma_gamma^2 = K^-1 sum gamma_l^2 (Eq. 4)
    for s, value in paper.items():
        assert v[s] == pytest.approx(value, abs=Z * se[s]), (s, v[s], value)


# ------------------------------------------------------------------ (b) brute force, one posterior draw
CUTS = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
GAMMA = np.array([-0.8, -0.2, 0.3, 0.7])
S2A, S2B = 0.5, 0.3
VALUES = np.arange(1.0, 7.0)


def panel_mean_by_quadrature():
    sd = math.sqrt(S2A + S2B)

    def ey(eta):
        cdf = np.concatenate([[0.0], 1 / (1 + np.exp(-(CUTS - eta))), [1.0]])
        return float(VALUES @ np.diff(cdf))

    return float(np.mean([integrate.quad(lambda e, g=g: ey(e + g) * stats.norm.pdf(e, 0, sd), -12 * sd,
                                         12 * sd, epsabs=1e-12)[0] for g in GAMMA]))


def brute_force(strategy, n, m, k, reps, seed):
    """Squared errors of the mean score, one study at a time with explicit loops over calls."""
    rng = np.random.default_rng(seed)
    kt = len(GAMMA)
    mu = panel_mean_by_quadrature()
    out = np.empty(reps)
    for r in range(reps):
        alpha = rng.normal(0, math.sqrt(S2A), n)
        beta = rng.normal(0, math.sqrt(S2B), (n, m))
        order = rng.permutation(n)                          # shuffled scenarios for the rotation
        judge_order = rng.permutation(kt)
        scores = []
        t = 0
        for i in order:
            for j in range(m):
                if strategy == "all":
                    judges = range(kt)
                elif strategy == "random":
                    judges = rng.choice(kt, size=k, replace=False)
                else:
                    judges = [judge_order[(t + s) % kt] for s in range(k)]
                    t += k
                for l in judges:
                    latent = alpha[i] + beta[i, j] + GAMMA[l] + rng.logistic()
                    scores.append(VALUES[np.searchsorted(CUTS, latent)])
        out[r] = (np.mean(scores) - mu) ** 2
    return out


@pytest.mark.parametrize("strategy,n,m,k", [("cyclic", 3, 2, 1), ("random", 3, 2, 2), ("all", 2, 1, 4)])
def test_matches_brute_force_simulation(strategy, n, m, k):
    p = one_draw(CUTS, GAMMA, S2A, S2B, VALUES)
    sims = 20_000
    _, var, mcse = simulate_design_variance(p, [{"strategy": strategy, "n": n, "m": m,
                                                  "judges_per_generation": k}], n_sims=sims, seed=11)
    bf = brute_force(strategy, n, m, k, reps=sims, seed=12)
    tol = Z * math.hypot(mcse[0, 0], bf.std(ddof=1) / math.sqrt(bf.size))
    assert abs(var[0, 0] - bf.mean()) <= tol, (var[0, 0], bf.mean(), tol)


# --------------------------------------------------------------------------------- (c) determinism
def test_seeded_and_deterministic():
    p = one_draw(CUTS, GAMMA, S2A, S2B, VALUES)
    des = [{"strategy": s, "n": 5, "m": 2} for s in ("cyclic", "random")] + [{"strategy": "all", "n": 5, "m": 1}]
    a = simulate_design_variance(p, des, n_sims=300, seed=5)
    b = simulate_design_variance(p, des, n_sims=300, seed=5)
    c = simulate_design_variance(p, des, n_sims=300, seed=6)
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])


# ------------------------------------------------------------------------------- (d) optimise, fit
@pytest.fixture(scope="module")
def ordinal_fit():
    k = 3
    gam = panel_offsets(k, 0.8)
    df = simulate_ordinal_scores(20, 2, k, s2a=1.0, s2b=0.3, gamma=gam, cuts=np.array([-2.0, -0.7, 0.5, 1.8]), seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cj.estimate(df, "bayes", likelihood="ordinal", seed=1, draws=200, tune=200, chains=2)


def test_optimise_dispatches_ordinal_fits(ordinal_fit):
    alloc = cj.optimise(ordinal_fit, budget=60)
    assert alloc.budget_unit == "calls"
    assert (alloc.table["calls"] <= 60).all()
    st = alloc.strategies.set_index("strategy")
    assert set(st.index) == {"cyclic", "random", "all"}
    for other in ("random", "all"):
        tol = Z * math.hypot(st.at["cyclic", "mc_se"], st.at[other, "mc_se"])
        assert st.at["cyclic", "variance"] <= st.at[other, "variance"] + tol
    assert alloc.strategies["p_best"].sum() == pytest.approx(1.0)
    assert "posterior-predictive" in alloc.as_text()
    again = cj.optimise(ordinal_fit, budget=60)
    pd.testing.assert_frame_equal(alloc.table, again.table)


def test_predictive_design_variance_on_a_fit(ordinal_fit):
    des = [{"strategy": "cyclic", "n": 20, "m": 3}, {"strategy": "random", "n": 20, "m": 3},
           {"strategy": "all", "n": 20, "m": 1}]
    out = predictive_design_variance(ordinal_fit, designs=des, n_sims=100, n_draws=40, seed=0)
    assert out.attrs["scale"] == "score"
    assert (out["variance_lower"] <= out["variance"]).all() and (out["variance"] <= out["variance_upper"]).all()
    assert out["p_best"].sum() == pytest.approx(1.0)                      # all three cost 60 calls
    assert out.loc[0, "variance"] == pytest.approx(out.loc[0, "se"] ** 2)


def test_optimise_ordinal_refuses_prices(ordinal_fit):
    with pytest.raises(CjstatsError, match="equal-cost judge calls only"):
        cj.optimise(ordinal_fit, budget=60, judge_costs={"j0": 1.0, "j1": 2.0, "j2": 1.0})
    with pytest.raises(CjstatsError, match="target_se"):
        cj.optimise(ordinal_fit, target_se=0.1)


# ---------------------------------------------------------------------------------------- (e) errors
def test_gaussian_fit_is_refused():
    df = simulate_ordinal_scores(10, 2, 3, s2a=1.0, s2b=0.3, gamma=panel_offsets(3, 0.5), cuts=np.array([-1.0, 0.0, 1.0]),
                       seed=1)
    fit = cj.estimate(df)
    with pytest.raises(CjstatsError, match="likelihood='ordinal'"):
        predictive_design_variance(fit, designs=[{"strategy": "cyclic", "n": 5, "m": 1}])
    with pytest.raises(CjstatsError, match="likelihood='ordinal'"):
        predictive_design_variance({"scenario": 1.0}, designs=[{"strategy": "cyclic", "n": 5, "m": 1}])


def test_bad_designs_are_refused():
    p = one_draw(CUTS, GAMMA, S2A, S2B, VALUES)
    with pytest.raises(CjstatsError, match="not one of"):
        simulate_design_variance(p, [{"strategy": "weighted", "n": 2, "m": 1}])
    with pytest.raises(CjstatsError, match="every one of the 4 judges"):
        simulate_design_variance(p, [{"strategy": "all", "n": 2, "m": 1, "judges_per_generation": 2}])
    with pytest.raises(CjstatsError, match="positive integer"):
        simulate_design_variance(p, [{"strategy": "cyclic", "n": 0, "m": 1}])
