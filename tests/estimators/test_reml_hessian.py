"""The analytic Hessian of the REML criterion (cjstats.estimators.reml.core.variance_hessian).

It is checked against (a) the central-difference Hessian it replaced (``_fd_variance_hessian``, error ~1e-9
relative in the interior, one-sided and so ~1e-5 at a boundary variance) and (b) a Richardson-extrapolated
difference of the analytic gradient (steps h, h/2, h/4: truncation O(h^6), rounding ~1e-10 at h = 1e-3
relative), on small balanced, unbalanced, one-generation and boundary designs and on one group of HANNA and
of MentalAlign; for the fixed- and random-judge models and for REML and ML. Matrices are compared on the
scale of their diagonal: |H_ij - R_ij| <= tol sqrt(|H_ii H_jj|), since the variances phi have different
scales.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.estimators import reml
from cjstats.estimators.reml import core as rs

LME4 = Path(__file__).resolve().parents[1] / "data" / "lme4"


def _simulated(m: int, seed: int, unbalanced: bool) -> cj.Scores:
    opts = {"strategy": "random", "k_per_item": 3, "misspec": {"mcar": 0.2}} if unbalanced else {}
    return cj.simulate_scores(cj.Truth.table3(["GPT"]), n=12, m=m, k=4, seed=seed, **opts)


CASES = {
    "balanced": lambda: _simulated(3, 1, False),
    "unbalanced": lambda: _simulated(3, 2, True),
    "one_generation": lambda: _simulated(1, 3, True),
    "boundary": lambda: cj.read_scores(pd.read_csv(LME4 / "boundary.csv")),
    "hanna": lambda: cj.datasets.load("hanna"),
    "mentalalign": lambda: cj.datasets.load("mentalalign"),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def group(request):
    """One group of each case, as the REML backend builds it (its Evaluator and design)."""
    return request.param, reml._GroupModel(next(CASES[request.param]().groups()))


def _fit(gm, model: str, use_reml: bool) -> rs.FitResult:
    gm.ev.reml = use_reml
    return rs.fit_model(gm.ev, model)


def _phi_gradient(ev: rs.Evaluator, model: str, phi: np.ndarray) -> np.ndarray:
    """Gradient of -2 l_R in phi = (s2, s2 theta) from the analytic theta-gradient (chain rule)."""
    nu = ev.n - ev.p(model)
    s2 = phi[0]
    th = phi[1:] / s2
    val, (gth, rss) = ev.full(model, s2, th, grad=True)
    assert math.isfinite(val)
    g = np.empty_like(phi)
    g[1:] = gth / s2
    g[0] = nu / s2 - rss / s2**2 - float(th @ gth) / s2
    return g


def _richardson_jacobian(fun, x: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Jacobian of ``fun`` at x by central differences with steps h, h/2, h/4, Richardson-extrapolated twice."""
    n = len(x)
    out = None
    for i in range(n):
        d = []
        for h in (steps[i], steps[i] / 2, steps[i] / 4):
            xp, xm = x.copy(), x.copy()
            xp[i] += h
            xm[i] -= h
            d.append((np.asarray(fun(xp)) - np.asarray(fun(xm))) / (2 * h))
        r1 = [(4 * d[1] - d[0]) / 3, (4 * d[2] - d[1]) / 3]
        col = (16 * r1[1] - r1[0]) / 15
        if out is None:
            out = np.empty(col.shape + (n,))
        out[..., i] = col
    return out


def _richardson_hessian(ev: rs.Evaluator, model: str, fit: rs.FitResult) -> np.ndarray:
    phi = np.concatenate(([fit.s2], fit.s2 * fit.theta))
    # 1e-3 of s2 on every variance: central steps into theta < 0 are fine (H stays positive definite), and the
    # criterion is analytic through theta = 0, so at a boundary this is the one-sided derivative too
    steps = np.full(len(phi), 1e-3 * fit.s2)
    steps[0] = 1e-3 * fit.s2
    h = _richardson_jacobian(lambda p: _phi_gradient(ev, model, p), phi, steps)
    return 0.5 * (h + h.T)


def _scaled_error(h: np.ndarray, ref: np.ndarray) -> float:
    scale = np.sqrt(np.outer(np.abs(np.diag(ref)), np.abs(np.diag(ref))))
    return float(np.max(np.abs(h - ref) / scale))


@pytest.mark.parametrize("use_reml", [True, False], ids=["REML", "ML"])
@pytest.mark.parametrize("model", ["fixed", "random"])
def test_analytic_hessian_equals_the_difference_hessians(group, model, use_reml):
    name, gm = group
    fit = _fit(gm, model, use_reml)
    ev = gm.ev
    h = rs.variance_hessian(ev, model, fit)
    q = len(fit.theta)
    assert h.shape == (q + 1, q + 1)
    assert q == (2 if gm.has_generation else 1) + (model == "random")
    assert np.array_equal(h, h.T)
    assert np.all(np.isfinite(h))
    # (b) Richardson-extrapolated differences: the analytic Hessian to 1e-8 (measured <= 2.8e-10)
    assert _scaled_error(h, _richardson_hessian(ev, model, fit)) < 1e-8, name
    # (a) the plain difference Hessian it replaced: 1e-6 in the interior (measured <= 2.1e-9); it takes
    # one-sided steps at a boundary variance, with error of the order of its step (measured <= 1.2e-7)
    tol = 1e-5 if np.any(fit.theta <= 0) else 1e-6
    assert _scaled_error(h, rs._fd_variance_hessian(ev, model, fit)) < tol, name
    ev.reml = True


@pytest.mark.parametrize("use_reml", [True, False], ids=["REML", "ML"])
@pytest.mark.parametrize("model", ["fixed", "random"])
def test_wald_standard_errors_are_the_ones_of_the_difference_hessian(group, model, use_reml):
    """The SEs move only by the difference Hessian's own error (measured <= 1.8e-9 relative here, and <= 1.7e-8
    over every REML row of HANNA, MentalAlign and the scale tables)."""
    name, gm = group
    fit = _fit(gm, model, use_reml)
    new = np.diag(rs.wald_covariance(rs.variance_hessian(gm.ev, model, fit), fit.theta))
    old = np.diag(rs.wald_covariance(rs._fd_variance_hessian(gm.ev, model, fit), fit.theta))
    gm.ev.reml = True
    assert np.array_equal(np.isnan(new), np.isnan(old))
    ok = np.isfinite(new)
    assert ok[0]
    tol = 1e-5 if np.any(fit.theta <= 0) else 1e-6
    assert np.max(np.abs(np.sqrt(new[ok]) / np.sqrt(old[ok]) - 1.0)) < tol, name


@pytest.mark.parametrize("use_reml", [True, False], ids=["REML", "ML"])
@pytest.mark.parametrize("model", ["fixed", "random"])
def test_second_derivatives_of_the_parts_in_theta(model, use_reml):
    """d2rss and d2logdet in theta (away from the optimum, so the first derivatives are not small) equal the
    Richardson-extrapolated differences of the analytic first derivatives, for one and many cell sizes."""
    for case in ("unbalanced", "one_generation", "balanced"):
        gm = reml._GroupModel(next(CASES[case]().groups()))
        ev = gm.ev
        ev.reml = use_reml
        q = (2 if gm.has_generation else 1) + (model == "random")
        theta = np.linspace(0.3, 1.7, q)
        pr = ev.parts(model, theta, hess=True)
        plain = ev.parts(model, theta, grad=True)
        assert pr["rss"] == pytest.approx(plain["rss"], rel=1e-14)
        assert np.allclose(pr["drss"], plain["drss"], rtol=1e-12, atol=0)
        assert np.allclose(pr["dlogdet"], plain["dlogdet"], rtol=1e-12, atol=1e-12 * np.abs(plain["dlogdet"]).max())
        steps = np.full(q, 1e-3)
        for key, dkey in (("drss", "d2rss"), ("dlogdet", "d2logdet")):
            ref = _richardson_jacobian(lambda t, key=key: ev.parts(model, t, grad=True)[key], theta, steps)
            assert np.max(np.abs(pr[dkey] - ref)) < 1e-8 * np.max(np.abs(ref)), (case, key)
            assert np.array_equal(pr[dkey], pr[dkey].T)
        ev.reml = True


def test_core_second_derivatives_with_many_cell_sizes():
    """d2A and d2log|H| of the Woodbury core against Richardson differences of dA and dlog|H|."""
    gm = reml._GroupModel(next(CASES["unbalanced"]().groups()))
    ev = gm.ev
    assert len(gm.design.sizes) > 1
    for which in ("fixed", "random"):
        x = np.array([0.8, 0.35])
        amat, ld, (da, d2a), (dld, d2ld) = ev.core(*x, which=which, hess=True)
        a0, l0, da0, dld0 = ev.core(*x, grad=True, which=which)
        assert np.allclose(amat, a0, rtol=0, atol=1e-13 * np.abs(a0).max())
        assert ld == pytest.approx(l0, rel=1e-14)
        assert np.allclose(da, da0, rtol=0, atol=1e-13 * np.abs(da0).max())
        ref_a = np.moveaxis(  # (i, j, K+1, K+1): d/dtheta_j of dA/dtheta_i
            _richardson_jacobian(lambda t: ev.core(*t, grad=True, which=which)[2], x, np.full(2, 1e-3)), -1, 1)
        ref_l = _richardson_jacobian(lambda t: ev.core(*t, grad=True, which=which)[3], x, np.full(2, 1e-3))
        assert np.max(np.abs(d2a - ref_a)) < 1e-9 * np.abs(ref_a).max()
        assert np.max(np.abs(d2ld - ref_l)) < 1e-9 * np.abs(ref_l).max()


def test_the_hessian_costs_one_evaluation_of_the_criterion():
    gm = reml._GroupModel(next(CASES["unbalanced"]().groups()))
    fit = rs.fit_model(gm.ev, "random")
    before = gm.ev.counter
    rs.variance_hessian(gm.ev, "random", fit)
    assert gm.ev.counter - before == 1
    before = gm.ev.counter
    rs._fd_variance_hessian(gm.ev, "random", fit)
    assert gm.ev.counter - before == 2 * len(fit.theta) + 3


def test_boundary_case_has_a_boundary_variance_and_a_usable_hessian():
    """The boundary case puts scenario and generation at 0 in the fixed-judge model: the Hessian is the
    one-sided one there, positive on the free variance (s2_residual)."""
    gm = reml._GroupModel(next(CASES["boundary"]().groups()))
    fit = rs.fit_model(gm.ev, "fixed")
    assert np.all(fit.theta == 0)
    h = rs.variance_hessian(gm.ev, "fixed", fit)
    cov = rs.wald_covariance(h, fit.theta)
    assert cov[0, 0] > 0 and np.all(np.isnan(cov[1:, 1:]))


def test_profile_intervals_do_not_depend_on_the_starting_hessian(group):
    """The Hessian only starts the profile search (the first secant step and the slope at the optimum): with
    the difference Hessian instead, every bound moves by far less than the search's own tolerance (it stops
    when |zeta - cutoff| < 1e-4); measured <= 7e-11 relative over HANNA, MentalAlign and the scale tables."""
    name, gm = group
    ev = gm.ev
    for model in ("fixed", "random"):
        fit = rs.fit_model(ev, model)
        h_new = rs.variance_hessian(ev, model, fit)
        h_old = rs._fd_variance_hessian(ev, model, fit)
        whichs = range(len(fit.theta) + 1) if model == "fixed" else [len(fit.theta)]
        for which in whichs:
            a = rs.profile_interval(ev, model, fit, which, 0.95, hess=h_new)[:2]
            b = rs.profile_interval(ev, model, fit, which, 0.95, hess=h_old)[:2]
            for x, y in zip(a, b):
                assert (x == y) or abs(x - y) <= 1e-8 * abs(y), (name, model, which, a, b)


def test_a_criterion_that_is_not_finite_has_no_hessian():
    gm = reml._GroupModel(next(CASES["balanced"]().groups()))
    fit = rs.fit_model(gm.ev, "fixed")
    bad = rs.FitResult(theta=np.array([-5.0, -5.0]), s2=fit.s2, deviance=fit.deviance, converged=False,
                       iterations=0, evaluations=0, gradient=fit.gradient, boundary=fit.boundary, message="")
    with np.errstate(invalid="ignore", divide="ignore"), \
            pytest.raises(np.linalg.LinAlgError, match="not finite at the optimum"):
        rs.variance_hessian(gm.ev, "fixed", bad)
