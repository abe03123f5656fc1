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
from cjstats.decisions.predictive import PosteriorPredictive
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


def panel_mean_by_quadrature(link="logit", cuts=CUTS, gamma=GAMMA, s2a=S2A, s2b=S2B, values=VALUES):
    """The panel mean by adaptive quadrature; ``cuts`` (J-1,) or per judge (K, J-1)."""
    sd = math.sqrt(s2a + s2b)
    f = stats.logistic.cdf if link == "logit" else stats.norm.cdf
    cuts = np.asarray(cuts, float)

    def ey(eta, c):
        cdf = np.concatenate([[0.0], f(c - eta), [1.0]])
        return float(np.asarray(values, float) @ np.diff(cdf))

    return float(np.mean([integrate.quad(lambda e, g=g, c=(cuts[l] if cuts.ndim == 2 else cuts): ey(e + g, c)
                                         * stats.norm.pdf(e, 0, sd), -12 * sd, 12 * sd, epsabs=1e-12)[0]
                          for l, g in enumerate(gamma)]))


def brute_force(strategy, n, m, k, reps, seed, link="logit", cuts=CUTS, gamma=GAMMA, s2a=S2A, s2b=S2B,
                values=VALUES):
    """Squared errors of the mean score, one study at a time with explicit loops over calls (default parameters:
    the module's draw; ``cuts`` may be per judge, (K, J-1))."""
    rng = np.random.default_rng(seed)
    kt = len(gamma)
    cuts = np.asarray(cuts, float)
    mu = panel_mean_by_quadrature(link, cuts, gamma, s2a, s2b, values)
    out = np.empty(reps)
    for r in range(reps):
        alpha = rng.normal(0, math.sqrt(s2a), n)
        beta = rng.normal(0, math.sqrt(s2b), (n, m))
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
                    latent = alpha[i] + beta[i, j] + gamma[l] + (rng.logistic() if link == "logit" else rng.normal())
                    scores.append(values[np.searchsorted(cuts[l] if cuts.ndim == 2 else cuts, latent)])
        out[r] = (np.mean(scores) - mu) ** 2
    return out


@pytest.mark.parametrize("strategy,n,m,k,link", [("cyclic", 3, 2, 1, "logit"), ("random", 3, 2, 2, "logit"),
                                                 ("all", 2, 1, 4, "logit"), ("cyclic", 3, 2, 1, "probit"),
                                                 ("all", 2, 1, 4, "probit")])
def test_matches_brute_force_simulation(strategy, n, m, k, link):
    p = one_draw(CUTS, GAMMA, S2A, S2B, VALUES) | {"link": link}
    sims = 20_000
    _, var, mcse = simulate_design_variance(p, [{"strategy": strategy, "n": n, "m": m,
                                                  "judges_per_generation": k}], n_sims=sims, seed=11)
    bf = brute_force(strategy, n, m, k, reps=sims, seed=12, link=link)
    tol = Z * math.hypot(mcse[0, 0], bf.std(ddof=1) / math.sqrt(bf.size))
    assert abs(var[0, 0] - bf.mean()) <= tol, (var[0, 0], bf.mean(), tol)


def test_the_probit_panel_mean_is_the_quadrature_of_the_normal_link():
    p = one_draw(CUTS, GAMMA, S2A, S2B, VALUES)
    from cjstats.decisions.predictive import _panel_mean
    assert _panel_mean(p | {"link": "probit"})[0] == pytest.approx(panel_mean_by_quadrature("probit"), abs=1e-9)
    assert _panel_mean(p)[0] == pytest.approx(panel_mean_by_quadrature("logit"), abs=1e-9)
    with pytest.raises(CjstatsError, match="link must be one of logit, probit"):
        _panel_mean(p | {"link": "cloglog"})


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


def test_optimise_refuses_prices_for_an_ordinal_fit(ordinal_fit):
    with pytest.raises(CjstatsError, match="equal-cost judge calls only"):
        cj.optimise(ordinal_fit, budget=60, judge_costs={"j0": 1.0, "j1": 2.0, "j2": 1.0})
    with pytest.raises(CjstatsError, match="target_se"):
        cj.optimise(ordinal_fit, target_se=0.1)


# ------------------------------------------------ (d') the one optimiser on a fixed posterior, numbers pinned
def synthetic_ordinal_fit(generation=True):
    """A latent-scale fit whose posterior is made by hand (2 chains x 30 draws): no sampler, so the numbers are
    exact on any machine. The components table is an ANOVA fit's; the simulation reads only the posterior."""
    import dataclasses

    import xarray as xr

    rng = np.random.default_rng(11)
    df = simulate_ordinal_scores(12, 2 if generation else 1, 3, s2a=1.0, s2b=0.3, gamma=panel_offsets(3, 0.8),
                                 cuts=np.array([-2.0, -0.7, 0.5, 1.8]), seed=7)
    fit = cj.estimate(df)
    c, d = 2, 30
    cuts = np.sort(np.array([-2.0, -0.7, 0.5, 1.8]) + 0.2 * rng.standard_normal((c, d, 4)), axis=-1)
    gam = np.array([-0.6, 0.1, 0.5]) + 0.1 * rng.standard_normal((c, d, 3))
    gam -= gam.mean(axis=-1, keepdims=True)
    data = {"cutpoints": (("chain", "draw", "cutpoint"), cuts), "gamma": (("chain", "draw", "judge"), gam),
            "scenario": (("chain", "draw"), 1.0 * rng.chisquare(8, (c, d)) / 8)}
    if generation:
        data["generation"] = (("chain", "draw"), 0.3 * rng.chisquare(8, (c, d)) / 8)
    ds = xr.Dataset(data, coords={"chain": np.arange(c), "draw": np.arange(d),
                                  "cutpoint": ["1|2", "2|3", "3|4", "4|5"], "judge": ["j0", "j1", "j2"]})
    return dataclasses.replace(fit, scale="latent", posterior={"x": xr.DataTree.from_dict({"posterior": ds})})


#: What the former second optimiser (predictive.optimise_ordinal, before cj.optimise took it in) returned on
#: synthetic_ordinal_fit(): per table row variance, variance_lower, variance_upper, p_best, mc_se.
OLD_ORDINAL = {
    "budget=60": (
        [("cyclic", 1, 12, 5), ("random", 1, 12, 5), ("cyclic", 2, 10, 3), ("random", 2, 10, 3), ("all", 3, 10, 2)],
        [0.05297637815748293, 0.054874649064445315, 0.06010477296078717, 0.06047389787297402, 0.06307968599289909],
        [0.033624248267827124, 0.03650376025686114, 0.0373643664113413, 0.038213464848265905, 0.03927605329717739],
        [0.07527700873316398, 0.07840090223424764, 0.0917640908947789, 0.08898480704187113, 0.09837714370259724],
        [0.4666666666666667, 0.3, 0.11666666666666667, 0.08333333333333333, 0.03333333333333333],
        [0.000674506595483732, 0.0007167578934111815, 0.0007912300469245215, 0.000788374718720188,
         0.0008224702443137004],
        [0.5166666666666667, 0.4, 0.08333333333333333]),
    "budget=137, cyclic and all, seed=4": (
        [("cyclic", 1, 12, 11), ("cyclic", 2, 12, 5), ("all", 3, 11, 4)],
        [0.03963753016141764, 0.04214153129182028, 0.04317425677003978],
        [0.021013945490815762, 0.022594834530538788, 0.023022302392996637],
        [0.06698404253467295, 0.06185705084129698, 0.06660988666778087],
        [0.6833333333333333, 0.13333333333333333, 0.18333333333333332],
        [0.0005300642319829383, 0.0005428625856489393, 0.0005655383702812281],
        [0.7833333333333333, 0.21666666666666667]),
}


@pytest.mark.parametrize("case", list(OLD_ORDINAL))
def test_optimise_on_an_ordinal_fit_gives_the_former_ordinal_optimiser_numbers(case):
    kw = {"budget=60": dict(budget=60),
          "budget=137, cyclic and all, seed=4": dict(budget=137, strategies=["cyclic", "all"], seed=4)}[case]
    alloc = cj.optimise(synthetic_ordinal_fit(), **kw)
    rows, var, lower, upper, p_best, mc_se, strat_p = OLD_ORDINAL[case]
    t = alloc.table
    assert list(zip(t["strategy"], t["judges_per_generation"], t["n"], t["m"])) == rows
    for col, want in (("variance", var), ("variance_lower", lower), ("variance_upper", upper), ("p_best", p_best),
                      ("mc_se", mc_se)):
        np.testing.assert_allclose(t[col].to_numpy(), want, rtol=0, atol=1e-12, err_msg=col)
    np.testing.assert_allclose(alloc.strategies["p_best"].to_numpy(), strat_p, rtol=0, atol=1e-12)
    assert (t["cost"] == t["calls"]).all() and (t["max_cost"] == t["calls"]).all()
    assert alloc.uncertainty == PosteriorPredictive.label and alloc.budget_unit == "calls"
    assert alloc.recommendation["variance"] == pytest.approx(var[0], abs=1e-12)
    assert alloc.notes[0].startswith("ordinal fit: variances are on the score scale")


def test_optimise_on_an_ordinal_fit_without_generations():
    """m = 1 in the data: m is capped at 1 and the note says why. The "all" row keeps the former optimiser's
    numbers; cyclic and random are offered too (the former candidate rule started m at budget // (n_max k) = 4
    above the cap of 1 and so dropped them without a word)."""
    alloc = cj.optimise(synthetic_ordinal_fit(generation=False), budget=50)
    t = alloc.table
    assert list(zip(t["strategy"], t["judges_per_generation"], t["n"], t["m"])) == [
        ("all", 3, 12, 1), ("random", 2, 12, 1), ("cyclic", 2, 12, 1), ("cyclic", 1, 12, 1), ("random", 1, 12, 1)]
    assert t["variance"].iloc[0] == pytest.approx(0.06721510908680085, abs=1e-12)
    assert t["variance_lower"].iloc[0] == pytest.approx(0.044772256009151884, abs=1e-12)
    assert t["variance_upper"].iloc[0] == pytest.approx(0.08997244295177687, abs=1e-12)
    assert t["mc_se"].iloc[0] == pytest.approx(0.0008708640470878527, abs=1e-12)
    assert any("generation is not identifiable" in n for n in alloc.notes)


def test_optimise_refuses_what_an_ordinal_fit_cannot_plan():
    fit = synthetic_ordinal_fit()
    cases = [(dict(budget=60, generation_cost=1.0), "generation_cost must be 0"),
             (dict(budget=60, residual_by_judge={"j0": 1.0, "j1": 1.0, "j2": 1.0}), "residual_by_judge"),
             (dict(target_se=0.1), "budget instead of target_se"),
             (dict(), "needs a budget"),
             (dict(budget=0.5), "at least one judge call"),
             (dict(budget=60, strategies=["weighted"]), "weighted strategy"),
             (dict(budget=60, strategies=[]), "is empty"),
             (dict(budget=60, k_total=4), "must equal the fit's 3 judges")]
    for kw, match in cases:
        with pytest.raises(CjstatsError, match=match):
            cj.optimise(fit, **kw)


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
