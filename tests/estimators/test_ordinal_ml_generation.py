"""The nested generation effect of the ML ordinal backend equals R's
``clmm(ordered(score) ~ judge + (1|scenario) + (1|scenario:generation), link = "probit"/"logit")`` (Laplace, the
only method clmm has with two random terms), and the result reports it.

Fixture: tests/data/ordinal_ml/generation/r_reference_gen.json, made by fit_clmm_gen.R from the CSVs of
make_inputs.py there (m = 2-3 generations, ordinal 1-5 with a ceiling and binary).
Tolerances: our optimum has an (analytic) gradient norm ~1e-13 (1e-8 with the finite-difference gradient); clmm's nlminb stops at "relative convergence"
with a gradient ~1e-3 (fixture field max_grad), so its log-likelihood is at most ~1e-7 below ours (measured:
ours higher by 0-3e-8) and its parameters ~1e-4 relative from ours (measured: variances 3e-5 relative,
thresholds and offsets 2e-5 absolute). We test log-likelihood to 1e-5 (and never below R's by more than 1e-6),
variances to 5e-4 relative and thresholds/offsets to 5e-4 absolute.
"""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cjstats.estimators.ordinal_ml.likelihood import make_problem, neg_loglik, unpack
from cjstats.estimators.ordinal_ml.nested import fit_nested, laplace_neg_loglik, make_nested

DATA = Path(__file__).parent.parent / "data" / "ordinal_ml" / "generation"
REF = DATA / "r_reference_gen.json"


def _nested(name, link):
    d = pd.read_csv(DATA / f"{name}.csv")
    cat = np.unique(d["score"], return_inverse=True)[1]
    sc = np.unique(d["scenario"], return_inverse=True)[1]
    jd = np.unique(d["judge"], return_inverse=True)[1]
    cell = np.unique(sc * 100 + d["generation"].to_numpy(), return_inverse=True)[1]
    cs = np.zeros(cell.max() + 1, dtype=np.int64)
    cs[cell] = sc
    return make_nested(cat, sc, cell, jd, cs, n_scenarios=sc.max() + 1, n_judges=jd.max() + 1,
                       n_categories=cat.max() + 1, link=link, thresholds="shared")


def _ref():
    if not REF.exists():
        pytest.skip(f"R reference fixture {REF} is absent: run Rscript {DATA}/fit_clmm_gen.R")
    return json.loads(REF.read_text())


@pytest.mark.parametrize("name,link", [("gen_a", "probit"), ("gen_a", "logit"), ("gen_b", "probit"),
                                       ("gen_bin", "logit")])
def test_generation_effect_equals_clmm(name, link):
    r = _ref()[name][link]
    q = _nested(name, link)
    fit = fit_nested(q, hessian=False)
    assert fit.converged, fit.message
    log_s, gamma, theta = unpack(q.base, fit.x[:-1])
    assert fit.loglik == pytest.approx(r["loglik"], abs=1e-5)
    assert fit.loglik >= r["loglik"] - 1e-6
    assert np.exp(2 * log_s) == pytest.approx(r["s2"], rel=5e-4)
    assert np.exp(2 * fit.x[-1]) == pytest.approx(r["s2_generation"], rel=5e-4)
    np.testing.assert_allclose(theta[0], np.atleast_1d(r["theta"]), atol=5e-4)
    np.testing.assert_allclose(gamma[1:], r["beta"], atol=5e-4)


def test_vanishing_generation_effect_reduces_to_laplace_m1():
    """At s_b = e^-9 the generation effect vanishes and the joint Laplace likelihood equals the m = 1 Laplace
    likelihood of the same rows (the b_c integrals contribute their prior's mass, 1): a check of the arrow
    algebra (Schur complement, log det) independent of R."""
    q = _nested("gen_b", "probit")
    p = make_problem(q.base.category, q.base.scenario, q.base.judge, n_scenarios=q.base.n_scenarios,
                     n_judges=q.base.n_judges, n_categories=q.base.n_categories, link="probit",
                     thresholds="shared", nagq=1)
    rng = np.random.default_rng(3)
    x = np.concatenate([[np.log(0.7)], rng.normal(0, 0.2, q.base.n_gamma), [-1.0, -0.4, -0.5, -0.4]])
    f1 = neg_loglik(p, x, nagq=1)
    f2 = laplace_neg_loglik(q, np.concatenate([x, [-9.0]]))[0]
    assert f2 == pytest.approx(f1, abs=1e-5)
    # and a real generation effect changes it
    assert abs(laplace_neg_loglik(q, np.concatenate([x, [np.log(0.8)]]))[0] - f1) > 1.0


def test_laplace_matches_brute_force_integral_for_one_scenario():
    """Against a dense 3-d grid integral of one scenario with m = 2 (Laplace is an approximation: agreement
    to ~2e-3 in log L_i for 6 rows (measured); the mode and determinant algebra would be off by O(1) if wrong)."""
    from scipy.stats import norm

    q = _nested("gen_b", "probit")
    keep = q.base.scenario == 0
    cells = np.unique(q.cell[keep])
    sub = make_nested(q.base.category[keep], np.zeros(keep.sum(), dtype=np.int64),
                      np.searchsorted(cells, q.cell[keep]), q.base.judge[keep], np.zeros(cells.size, dtype=np.int64),
                      n_scenarios=1, n_judges=q.base.n_judges, n_categories=q.base.n_categories, link="probit",
                      thresholds="shared")
    x = np.array([np.log(0.8), 0.1, 0.2, 0.3, -1.0, -0.4, -0.5, -0.4, np.log(0.7)])
    lap = -laplace_neg_loglik(sub, x)[0]
    _, gamma, theta = unpack(sub.base, x[:-1])
    ext = np.concatenate([[-np.inf], theta[0], [np.inf]])
    grid = np.linspace(-6, 6, 241)
    dg = grid[1] - grid[0]
    inner = []
    for c in range(cells.size):
        rows = sub.cell == c
        eta = grid[:, None, None] + grid[None, :, None] + gamma[sub.base.judge[rows]][None, None, :]
        k = sub.base.category[rows]
        pr = np.prod(norm.cdf(ext[k + 1] - eta) - norm.cdf(ext[k] - eta), axis=2)   # (a, b)
        inner.append((pr * norm.pdf(grid, 0, 0.7)[None, :]).sum(axis=1) * dg)
    brute = np.log((np.prod(inner, axis=0) * norm.pdf(grid, 0, 0.8)).sum() * dg)
    assert lap == pytest.approx(brute, abs=1e-2)      # measured: -14.0423 vs -14.0406


def _scores(name):
    import cjstats as cj

    d = pd.read_csv(DATA / f"{name}.csv")
    d["model"] = "m"
    return cj.read_scores(d)


@pytest.fixture(scope="module")
def gen_fit():
    import cjstats as cj

    return cj.estimate(_scores("gen_a"), method="ordinal", link="probit", seed=5)


def test_fit_reports_the_generation_row_and_draws(gen_fit):
    from cjstats.estimators.ordinal_ml import parameter_draws

    r = _ref()["gen_a"]["probit"]
    c = gen_fit.to_frame().set_index("component")
    g = c.loc["generation"]
    assert g["identifiable"] and g["estimate"] == pytest.approx(r["s2_generation"], rel=5e-4)
    assert "Wald on log s_b" in g["ci_method"] and g["lower"] < g["estimate"] < g["upper"]
    # Wald on log s_b: the interval is symmetric on the log scale
    assert np.log(g["upper"] / g["estimate"]) == pytest.approx(np.log(g["estimate"] / g["lower"]), rel=1e-9)
    assert c.loc["scenario", "estimate"] == pytest.approx(r["s2"], rel=5e-4)
    p = parameter_draws(gen_fit, list(gen_fit.diagnostics)[0], n_draws=400, seed=1)
    assert p["generation_identifiable"] and p["s2_generation"].shape == (400,)
    # draws of log s_b centred on the estimate with the Wald standard error (MC error of a mean of 400: 0.05 sd)
    lsb = 0.5 * np.log(p["s2_generation"])
    se = np.log(g["upper"] / g["estimate"]) / (2 * 1.959964)
    assert abs(lsb.mean() - 0.5 * np.log(g["estimate"])) < 4 * se / 20 and lsb.std() == pytest.approx(se, rel=0.15)


def test_generation_false_keeps_the_old_model():
    import cjstats as cj

    f = cj.estimate(_scores("gen_b"), method="ordinal", link="probit", nagq=1, generation=False)
    c = f.to_frame().set_index("component")
    assert not c.loc["generation", "identifiable"] and "generation=False" in c.loc["generation", "note"]
    # the old model: all rows of a scenario share alpha_i only (the m = 1 likelihood of the same rows)
    assert list(f.diagnostics.values())[0]["generation"] is False


def test_bad_generation_argument_is_one_sentence():
    import cjstats as cj
    from cjstats.exceptions import CjstatsError

    with pytest.raises(CjstatsError, match="'generation' argument"):
        cj.estimate(_scores("gen_b"), method="ordinal", generation="yes")


def test_identical_generations_give_a_boundary_estimate():
    """Generation 1 is a copy of generation 0: s_b^2 ~ 0 is a boundary estimate, its row says so and its
    interval is the profile likelihood from 0."""
    import cjstats as cj

    d = pd.read_csv(DATA / "gen_b.csv")
    d = d[d["generation"] == 0]
    d = pd.concat([d, d.assign(generation=1)])
    d["model"] = "m"
    f = cj.estimate(cj.read_scores(d), method="ordinal", link="logit")
    g = f.to_frame().set_index("component").loc["generation"]
    assert g["estimate"] < 1e-6 and g["lower"] == 0.0 and 0 < g["upper"] < 1.0
    assert "boundary" in g["ci_method"] and "boundary" in g["note"]


def test_optimise_considers_several_generations(gen_fit):
    import cjstats as cj

    a = cj.optimise(gen_fit, budget=120, n_draws=20, seed=2)
    t = a.to_frame()
    assert (t["m"] > 1).any() and np.isfinite(t["variance"]).all()


@pytest.mark.slow
def test_profile_interval_of_the_generation_variance(gen_fit):
    """interval="profile": at each limit of s_b^2 the profile deviance equals chi2_1(0.95) = 3.84 (brentq to
    1e-3 in log s_b, so the deviance to ~0.05), and the interval is near the Wald one (n = 80, m = 3)."""
    from scipy.optimize import minimize

    from cjstats.estimators.ordinal_ml.nested import _NestedObjective, fit_nested, profile_nested

    q = _nested("gen_a", "probit")
    fit = fit_nested(q)
    lo, hi = profile_nested(q, fit, 0.95, -1)
    obj = _NestedObjective(q)
    for lim in (lo, hi):
        x0 = fit.x.copy()
        x0[-1] = 0.5 * np.log(lim)
        bounds = [(-9, 4)] + [(None, None)] * (x0.size - 2) + [(x0[-1], x0[-1])]
        res = minimize(obj.value_and_grad, x0, jac=True, method="L-BFGS-B", bounds=bounds)
        assert 2 * (fit.loglik + res.fun) == pytest.approx(3.841, abs=0.05)
    g = gen_fit.to_frame().set_index("component").loc["generation"]
    assert lo == pytest.approx(g["lower"], rel=0.2) and hi == pytest.approx(g["upper"], rel=0.2)
