"""The analytic gradient of the nested generation model's Laplace likelihood (``nested.laplace_grad``) equals
central differences of the likelihood itself, and the fit with it is the fit with the central-difference gradient.

Tables: the R-reference tables of test_ordinal_ml_generation.py (gen_a: m = 3, 1-5, 3 judges; gen_b: m = 2, 1-5,
4 judges; gen_bin: m = 2, binary) and a simulated table with unequal m (1-4 generations per scenario, a third of
the scenarios with one), each with probit and logit, shared and per-judge thresholds, at a point away from the
optimum, and at s_b -> 0.

Tolerance: the central difference with step 1e-5 of a Laplace value whose joint modes are Newton-converged to
1e-11 is accurate to ~1e-8 here (measured: largest error 1.5e-8 over these tables and s_b = 0.6, e^-4, e^-9,
gradients of size 6-63; at step 1e-3 and 1e-4 the error is 0.6-5e-5 and 0.6-5e-7, falling as h^2 (ratio 75-100):
the truncation error of a correct derivative). The tests take atol 1e-6 and also check that the error falls by a
factor > 30 from h = 1e-3 to 1e-4, so a wrong term of size down to ~1e-5 fails. Each test's docstring names a
mutation of the library that made it fail (verified once by hand, then reverted).
"""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cjstats.estimators.ordinal_ml.links import log_prob, log_prob_partials
from cjstats.estimators.ordinal_ml.nested import (
    _NestedObjective,
    fit_nested,
    joint_modes,
    laplace_grad,
    laplace_neg_loglik,
    make_nested,
)
from cjstats.estimators.ordinal_ml.optimise import start_values

DATA = Path(__file__).parent.parent / "data" / "ordinal_ml" / "generation"


def _make(cat, sc, cell, jd, link, thresholds):
    cat = np.unique(cat, return_inverse=True)[1]
    sc = np.unique(sc, return_inverse=True)[1]
    jd = np.unique(jd, return_inverse=True)[1]
    cell = np.unique(sc * 1000 + np.asarray(cell), return_inverse=True)[1]
    cs = np.zeros(cell.max() + 1, dtype=np.int64)
    cs[cell] = sc
    return make_nested(cat, sc, cell, jd, cs, n_scenarios=sc.max() + 1, n_judges=jd.max() + 1,
                       n_categories=cat.max() + 1, link=link, thresholds=thresholds)


def _table(name, link, thresholds):
    if name == "unequal":
        return _unequal(link, thresholds)
    d = pd.read_csv(DATA / f"{name}.csv")
    return _make(d["score"], d["scenario"], d["generation"].to_numpy(), d["judge"], link, thresholds)


def _unequal(link, thresholds, n=45, k=3, seed=4):
    """n scenarios with m_i = 1 (every third scenario), 2, 3 or 4 generations, k judges, scores 1-6."""
    rng = np.random.default_rng(seed)
    m = np.where(np.arange(n) % 3 == 0, 1, rng.integers(2, 5, n))
    sc = np.repeat(np.arange(n), m * k)
    gen = np.concatenate([np.repeat(np.arange(mi), k) for mi in m])
    jd = np.tile(np.arange(k), m.sum())
    cell = np.unique(sc * 1000 + gen, return_inverse=True)[1]
    noise = rng.logistic(size=sc.size) if link == "logit" else rng.standard_normal(sc.size)
    lat = rng.normal(0, 0.8, n)[sc] + rng.normal(0, 0.6, cell.max() + 1)[cell] + 0.3 * (jd - 1) + noise
    cat = (lat[:, None] > np.array([-1.5, -0.7, 0.0, 0.6, 1.3])).sum(axis=1)
    return _make(cat, sc, gen, jd, link, thresholds)


def _point(q, log_sb=np.log(0.6), seed=1):
    """A point away from the optimum (non-zero gradient): start values plus noise, s_a = 0.8, s_b as given."""
    x = np.concatenate([start_values(q.base), [0.0]]) + np.random.default_rng(seed).normal(0, 0.2, q.n_params)
    x[0], x[-1] = np.log(0.8), log_sb
    return x


def _fd(q, x, a, b, h):
    return np.array([(laplace_neg_loglik(q, x + e, a, b)[0] - laplace_neg_loglik(q, x - e, a, b)[0]) / (2 * h)
                     for e in np.eye(x.size) * h])


def _check(q, x):
    a, b, _, _ = joint_modes(q, x)
    g = laplace_grad(q, x, a, b)
    assert np.max(np.abs(g)) > 0.5
    np.testing.assert_allclose(g, _fd(q, x, a, b, 1e-5), atol=1e-6)
    e3, e4 = (np.max(np.abs(g - _fd(q, x, a, b, h))) for h in (1e-3, 1e-4))
    assert e4 < e3 / 30 or e3 < 1e-8, (e3, e4)
    return g


@pytest.mark.parametrize("name", ["gen_a", "gen_b", "gen_bin", "unequal"])
@pytest.mark.parametrize("link", ["probit", "logit"])
@pytest.mark.parametrize("thresholds", ["shared", "judge"])
def test_gradient_equals_finite_difference(name, link, thresholds):
    """Analytic = central difference (ordinal m = 2 and 3, binary, unequal m with m_i = 1 scenarios; probit,
    logit; shared and per-judge thresholds). Fails (verified) when the mode-movement term of d log det H / dx is
    dropped (``lam_a``, ``lam_b`` set to 0 in ``laplace_grad``: errors 0.5 to 7), and when the direct
    third-derivative term ``0.5 * qc[cr] * part["uDD"]`` is dropped from ``w_u``."""
    _check(_table(name, link, thresholds), _point(_table(name, link, thresholds)))


@pytest.mark.parametrize("name,link,thresholds", [("gen_a", "probit", "shared"), ("unequal", "logit", "judge"),
                                                  ("gen_bin", "probit", "shared")])
@pytest.mark.parametrize("log_sb", [-4.0, -9.0])
def test_gradient_near_vanishing_generation_variance(name, link, thresholds, log_sb):
    """At s_b = e^-4 and e^-9 (the optimiser's lower bound: s_b^2 = 1.5e-8, the b-block of H ~ 1/s_b^2), the
    terms b_c^2/s_b^2 - 1 + [H^-1]_cc/s_b^2 nearly cancel; the gradient still equals the central difference.
    Fails (verified) when [H^-1]_cc is replaced by 1/w_c (the v_c^2/(w_c^2 S) term dropped; at e^-9 only the
    relative check of d/dlog s_b sees it) and when the mode-movement term is dropped."""
    q = _table(name, link, thresholds)
    x = _point(q, log_sb)
    g = _check(q, x)
    # d/dlog s_b itself is small here (~s_b^2: 1e-7 to 1e-5 at e^-9), below the absolute tolerance: check it
    # relatively, by a central difference in log s_b alone with a step large enough to beat rounding (1e-2:
    # truncation ~(2 h)^2 / 6 relative, as -log L moves like s_b^2 = exp(2 log s_b) there)
    a, b, _, _ = joint_modes(q, x)
    e = np.zeros(x.size)
    e[-1] = 1e-2
    num = (laplace_neg_loglik(q, x + e, a, b)[0] - laplace_neg_loglik(q, x - e, a, b)[0]) / 2e-2
    assert g[-1] == pytest.approx(num, rel=5e-4)          # measured: 7e-5 to 9e-5 = (2h)^2 / 6


@pytest.mark.parametrize("link", ["probit", "logit"])
def test_third_derivative_in_eta_is_the_derivative_of_the_second(link):
    """d^3/deta^3 log P(Y = k | eta) = -(lp_uDD + lp_lDD) (``links.log_prob_partials``; the nested gradient's
    D3) equals the central difference of log_prob's second derivative in eta, at finite and infinite bounds and in
    both tails. Fails (verified) with the factor 2 of ``2.0 * ru * pd2`` in ``log_prob_partials`` set to 1."""
    u = np.array([0.7, 1.3, np.inf, -3.0, 2.0, 4.0, 9.0, -6.0])
    lo = np.array([-0.4, -np.inf, 0.2, -5.0, 1.9, -np.inf, 8.5, -np.inf])
    part = log_prob_partials(u, lo, link)
    d3 = -(part["uDD"] + part["lDD"])
    h = 1e-5
    d2p = log_prob(u - h, lo - h, link)[2]          # eta + h
    d2m = log_prob(u + h, lo + h, link)[2]          # eta - h
    np.testing.assert_allclose(d3, (d2p - d2m) / (2 * h), atol=1e-7, rtol=1e-6)
    assert np.max(np.abs(d3)) > 0.05


@pytest.mark.parametrize("name,link,thresholds", [("gen_a", "probit", "shared"), ("gen_bin", "logit", "shared"),
                                                  ("unequal", "probit", "judge")])
def test_fit_with_analytic_gradient_equals_fd_fit(name, link, thresholds):
    """``fit_nested`` (analytic gradient, the default) reaches the optimum of ``gradient="fd"``: log-likelihood
    within 1e-8 (measured: equal to the last bit), parameters within 1e-5 (measured: 1.1e-8), Hessian (central
    differences of either gradient) within 1e-4 relative (measured: 8e-7), with 30-62 instead of 298-2102
    Laplace evaluations. Fails (verified) when the mode-movement term of d log det H / dx is dropped (the fit
    does not converge, its log-likelihood is 0.03-2.2 lower and x moves by 0.06-0.4)."""
    q = _table(name, link, thresholds)
    fa = fit_nested(q)
    ff = fit_nested(q, gradient="fd")
    assert fa.converged and ff.converged
    assert fa.loglik == pytest.approx(ff.loglik, abs=1e-8)
    np.testing.assert_allclose(fa.x, ff.x, atol=1e-5)
    np.testing.assert_allclose(fa.hessian, ff.hessian, atol=1e-4 * np.max(np.abs(ff.hessian)))
    assert fa.n_eval < ff.n_eval / 4
    assert "finite differences" in ff.message and "finite differences" not in fa.message


def test_objective_gradient_flag():
    """The objective's default gradient is the analytic one; ``gradient="fd"`` keeps the central difference
    reachable; anything else is refused. Fails (verified) with the objective's default set to "fd"."""
    q = _table("gen_b", "probit", "shared")
    x = _point(q)
    fa, ga = _NestedObjective(q).value_and_grad(x)
    ff, gf = _NestedObjective(q, gradient="fd").value_and_grad(x)
    assert fa == ff
    np.testing.assert_allclose(ga, gf, atol=1e-6)
    a, b, _, _ = joint_modes(q, x)
    np.testing.assert_array_equal(ga, laplace_grad(q, x, a, b))
    with pytest.raises(ValueError, match="gradient"):
        _NestedObjective(q, gradient="exact")
