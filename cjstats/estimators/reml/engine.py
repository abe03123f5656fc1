r"""The one REML engine: a boundary-aware optimiser, a stationarity (KKT) check and a profiler for any REML or ML
criterion of relative variances theta >= 0, used by the per-model fits (:mod:`cjstats.estimators.reml.core`),
the joint fits of several models (:mod:`cjstats.estimators.joint.reml`) and the ML refits behind their tests.

A criterion (:class:`Criterion`) is -2 log (restricted) likelihood as a function of theta = (variances)/s2 with
the residual variance s2 either profiled out or given:

    profiled:  D(theta) = nu (1 + log(2 pi rss(theta)/nu)) + L(theta),
    full:      F(s2, theta) = nu log(2 pi s2) + L(theta) + rss(theta)/s2,

with nu = N - p for REML (N for ML), L = log|H| (+ log|X'H^{-1}X| for REML) and rss = min_beta (y - X beta)'
H^{-1}(y - X beta). A criterion gives rss, L and their exact first and second derivatives in theta
(``parts``); everything below is written once in those terms:

- :func:`fit`: projected Newton steps on theta itself (never on sqrt(theta), whose gradient is exactly 0 at
  the boundary and lets an optimiser stop there although the criterion still falls), from several starts (the
  first near the method-of-moments solution), every boundary face looked at, and the result accepted as
  converged only when :func:`kkt_check` says it is a minimum on theta >= 0.
- :func:`kkt_check`: the Karush-Kuhn-Tucker conditions on the variance scale. By the envelope theorem the
  derivative of the profiled criterion along a variance v_i = s2 theta_i (s2 re-optimised) is dD/dtheta_i / s2,
  so the signs are those of the theta-gradient g: interior coordinates need a Newton decrement
  g_I' (D_II)^{-1} g_I <= 1e-6 with D_II positive definite; a coordinate at 0 needs g_i >= 0, or g_i^2/D_ii <=
  1e-8 (moving it inward cannot lower the criterion by more than ~5e-9).
- :func:`variance_hessian`, :func:`wald_covariance`: the exact Hessian of F in the variances and the Wald
  covariance 2 H^{-1}.
- :func:`profile_interval`: profile-likelihood intervals, each point re-optimising the other variances.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from scipy import optimize
from scipy.linalg.lapack import dpotrf as _potrf

from cjstats import _dist

__all__ = ["Criterion", "FitResult", "fit", "kkt_check", "minimize_bounded", "profiled_hessian",
           "variance_hessian", "fd_variance_hessian", "wald_covariance", "satterthwaite_covariance",
           "profile_interval"]

_NAN = math.nan
KKT_DECREMENT = 1e-6      # largest Newton decrement (deviance units) of a converged interior optimum
KKT_BOUNDARY = 1e-8       # largest g_i^2/D_ii of a coordinate held at 0 with a gradient pointing inward


class Criterion(Protocol):
    """-2 log (restricted) likelihood in relative variances theta (module docstring)."""

    nu: int                      # N - p for REML, N for ML

    @property
    def n_evaluations(self) -> int: ...          # evaluations so far (a counter)

    def profiled(self, theta: np.ndarray, grad: bool = False) -> tuple[float, np.ndarray | None]: ...

    def full(self, s2: float, theta: np.ndarray, grad: bool = False) -> tuple[float, Any]: ...

    def parts(self, theta: np.ndarray, hess: bool = False) -> dict[str, Any]:
        """rss, drss, logdet (L), dlogdet, and with ``hess`` d2rss, d2logdet."""


@dataclass(frozen=True, slots=True)
class FitResult:
    """A REML (or ML) optimum: theta, the residual variance, the criterion and how the optimum was reached."""

    theta: np.ndarray
    s2: float
    deviance: float
    converged: bool
    iterations: int
    evaluations: int
    gradient: np.ndarray
    boundary: np.ndarray
    message: str
    starts: int = 1
    kkt: dict = field(default_factory=dict)


def profiled_hessian(crit: Criterion, theta: np.ndarray) -> np.ndarray:
    """Exact Hessian of the profiled criterion: nu (rss_ij/rss - rss_i rss_j/rss^2) + L_ij."""
    pr = crit.parts(np.asarray(theta, dtype=float), hess=True)
    rss = pr["rss"]
    h = crit.nu * (pr["d2rss"] / rss - np.outer(pr["drss"], pr["drss"]) / rss**2) + pr["d2logdet"]
    return 0.5 * (h + h.T)


def kkt_check(crit: Criterion, theta: np.ndarray, lower: np.ndarray | None = None) -> dict[str, Any]:
    """The KKT conditions of min D(theta) over theta >= lower at ``theta`` (module docstring).

    Returns ``stationary`` (bool), ``decrement`` (the Newton decrement on the interior coordinates), ``inward``
    (the largest g_i^2/D_ii over boundary coordinates whose gradient points inward, 0 if none), ``gradient`` and
    ``message`` (what failed, in words).
    """
    th = np.asarray(theta, dtype=float)
    lower = np.zeros_like(th) if lower is None else np.asarray(lower, dtype=float)
    val, g = crit.profiled(th, grad=True)
    out: dict[str, Any] = {"stationary": False, "decrement": _NAN, "inward": _NAN, "gradient": g,
                           "message": ""}
    if not math.isfinite(val) or g is None or not np.all(np.isfinite(g)):
        out["message"] = "the criterion is not finite there"
        return out
    try:
        h = profiled_hessian(crit, th)
    except (np.linalg.LinAlgError, FloatingPointError, ZeroDivisionError):
        out["message"] = "the criterion has no Hessian there"
        return out
    bnd = th <= lower
    d = np.diag(h)
    push = bnd & (g < 0)
    inward = float(np.max(g[push] ** 2 / np.maximum(d[push], 1e-300))) if push.any() else 0.0
    out["inward"] = inward
    inner = ~bnd
    dec = 0.0
    pd = True
    if inner.any():
        hi = h[np.ix_(inner, inner)]
        gi = g[inner]
        try:
            chol = np.linalg.cholesky(hi)
            z = np.linalg.solve(chol, gi)
            dec = float(z @ z)
        except np.linalg.LinAlgError:
            pd = False
            dec = _NAN
    out["decrement"] = dec
    msgs = []
    if not pd:
        msgs.append("the criterion is not convex in the free variances there (a saddle or a ridge)")
    elif dec > KKT_DECREMENT:
        msgs.append(f"the criterion can still fall by about {dec / 2:.3g} along the free variances")
    if inward > KKT_BOUNDARY:
        msgs.append(f"a variance held at 0 has a gradient pointing inward (the criterion can fall by about "
                    f"{inward / 2:.3g} by making it positive)")
    out["stationary"] = not msgs
    out["message"] = "; ".join(msgs) if msgs else "KKT conditions hold"
    return out


def _boundary_faces(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x: np.ndarray, fx: float,
                    hess_fn: Callable[[np.ndarray], np.ndarray] | None) -> tuple[np.ndarray, float]:
    """A variance that is tiny but positive gets a second look with it fixed at 0 (the rest re-optimised):
    the lower criterion wins, so a variance whose optimum is zero is reported as exactly zero."""
    q = len(x)
    for i in range(q):
        if 0 < x[i] < 1e-6 * max(1.0, float(np.max(x))):
            if q > 1:
                def fun_i(z: np.ndarray, i: int = i) -> tuple[float, np.ndarray]:
                    v, g = fun(np.insert(z, i, 0.0))
                    return v, np.delete(g, i)
                h_i = None if hess_fn is None else (
                    lambda z, i=i: np.delete(np.delete(hess_fn(np.insert(z, i, 0.0)), i, 0), i, 1))
                z, fz, _ = minimize_bounded(fun_i, np.delete(x, i), np.zeros(q - 1), hess_fn=h_i)
                cand = np.insert(z, i, 0.0)
            else:
                cand = np.zeros(1)
                fz = fun(cand)[0]
            if fz <= fx:
                x, fx = cand, fz
    return x, fx


def fit(crit: Criterion, starts: Sequence[np.ndarray], *, exact_hessian: bool = False,
        confirm_boundary: bool = True) -> FitResult:
    """Minimise the profiled criterion over theta >= 0 from ``starts`` (the first near the moment solution).

    From each start in turn: projected Newton steps (:func:`minimize_bounded`; with ``exact_hessian`` on the
    criterion's own Hessian, else on differences of its gradient), the boundary faces (:func:`_boundary_faces`),
    then :func:`kkt_check`. The search stops at the first start whose optimum satisfies the KKT conditions and is
    interior; an optimum on the boundary is confirmed from a second start (unless ``confirm_boundary`` is False,
    for a refit started at a related model's optimum), and a point that fails the check sends the search on to
    every start. The lowest criterion wins (ties keep the earlier start), and ``converged`` is
    the KKT check at that point: a fit whose check fails is never reported as converged, and its ``message``
    says why.
    """
    starts = [np.asarray(s, dtype=float) for s in starts]
    q = len(starts[0])
    lower = np.zeros(q)
    before = crit.n_evaluations

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        return crit.profiled(x, grad=True)

    hess_fn = (lambda x: profiled_hessian(crit, x)) if exact_hessian else None
    best: tuple[float, np.ndarray, dict, dict] | None = None
    nit = 0
    tried = 0
    ok_boundary = 0
    for s in starts:
        x, fx, info = minimize_bounded(fun, s, lower, hess_fn=hess_fn)
        tried += 1
        nit += int(info["nit"])
        x, fx = _boundary_faces(fun, x, fx, hess_fn)
        k = kkt_check(crit, x, lower)
        if best is None or fx < best[0] - 1e-9 * max(1.0, abs(best[0])) or (
                fx <= best[0] + 1e-9 * max(1.0, abs(best[0])) and k["stationary"] and not best[3]["stationary"]):
            best = (fx, x, info, k)
        if k["stationary"]:
            if not np.any(x <= 0):
                break
            ok_boundary += 1
            if ok_boundary >= 2 or q == 0 or not confirm_boundary:
                break
    assert best is not None
    val, x, info, k = best                  # the criterion and its gradient at x are known already
    grad = k["gradient"]
    pr = crit.parts(x)
    s2 = pr["rss"] / crit.nu
    conv = bool(k["stationary"] and math.isfinite(val))
    msg = info["message"] if conv else f"{info['message']}; not a minimum: {k['message']}"
    return FitResult(theta=x, s2=float(s2), deviance=float(val), converged=conv, iterations=nit,
                     evaluations=int(crit.n_evaluations - before), gradient=grad, boundary=x <= 0.0,
                     message=msg, starts=tried, kkt=k)


# ----------------------------------------------------------------------------------------- optimisation
def minimize_bounded(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray,
                     lower: np.ndarray, *, maxiter: int = 200, tol: float = 1e-16,
                     hess0: np.ndarray | None = None,
                     hess_fn: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, float, dict]:
    """Minimise a smooth function of a few variables over x >= lower by projected (quasi-)Newton steps.

    Steps use the analytic gradient and a Hessian from forward differences of it on the free coordinates
    (those not held at their bound by a gradient pointing outward). With ``hess0`` (the Hessian of a nearby
    problem, as along a profile) the first steps use it with BFGS updates and fall back to differences only
    when they stall; with ``hess_fn`` (the exact Hessian) every step is a Newton step on it. Eigenvalues are replaced by their absolute values (floored), so every step descends, and a
    backtracking line search keeps x >= lower. It stops when the Newton decrement g'H^{-1}g falls below
    ``tol`` (the criterion is -2 log-likelihood; 1e-16 puts the variances within ~1e-9 relative of the
    optimum, and near the optimum a step is also accepted when the criterion is flat to rounding but the
    gradient shrinks).
    """
    lower = np.asarray(lower, dtype=float)
    x = np.maximum(np.asarray(x0, dtype=float), lower)
    fx, gx = fun(x)
    nfev = 1
    q = x.shape[0]
    info: dict[str, Any] = {"success": False, "message": "iteration limit reached", "nit": 0, "hess": None}
    if not math.isfinite(fx):
        info["message"] = "criterion not finite at the starting values"
        info["nfev"] = nfev
        return x, fx, info
    hess = None if hess0 is None else np.array(hess0, dtype=float)
    last_hess = hess
    exact = hess is None
    for it in range(maxiter):
        info["nit"] = it + 1
        free = ~((x <= lower) & (gx > 0))
        idx = np.flatnonzero(free)
        if idx.size == 0:
            info.update(success=True, message="every parameter at its bound")
            break
        if hess_fn is not None:      # exact Newton: a fresh Hessian at every iterate
            hess = np.asarray(hess_fn(x), dtype=float)
            nfev += 1
            exact = True
        elif hess is None:
            hess = np.eye(q) if last_hess is None else last_hess.copy()
            hf, nh = _fd_hessian(fun, x, gx, idx, lower)
            hess[np.ix_(idx, idx)] = hf
            nfev += nh
            exact = True
        last_hess = hess
        hf = hess[np.ix_(idx, idx)] if idx.size < q else hess
        gf = gx[idx]
        chol, bad = _potrf(hf, lower=1)
        if bad == 0 and np.all(np.diagonal(chol) > 1e-8 * np.sqrt(np.abs(np.diagonal(hf)).max())):
            step = -_chol_solve_small(chol, gf)
            decrement = -float(gf @ step)
            pd_ok = True
        else:
            if not np.all(np.isfinite(hf)):
                info["message"] = "Hessian not finite"
                break
            w, v = np.linalg.eigh(hf)
            wabs = np.maximum(np.abs(w), 1e-10 * max(float(np.abs(w).max()), 1e-300))
            proj = v.T @ gf
            decrement = float(proj @ (proj / wabs))
            step = -(v @ (proj / wabs))
            pd_ok = False
        if decrement < tol and pd_ok:
            info.update(success=True, message=f"Newton decrement below {tol:g}")
            break
        t = 1.0
        accepted = False
        for _ls in range(40):
            xn = x.copy()
            xn[idx] = np.maximum(x[idx] + t * step, lower[idx])
            fn, gn = fun(xn)
            nfev += 1
            if math.isfinite(fn) and (fn <= fx + 1e-4 * float(gf @ (xn[idx] - x[idx])) or (
                    abs(fn - fx) <= 1e-12 * max(1.0, abs(fx)) and float(gn[idx] @ gn[idx]) < float(gf @ gf))):
                accepted = True      # Armijo, or (at the criterion's rounding level) a smaller gradient
                break
            t *= 0.5
            if not exact and _ls >= 2:
                break
        if not accepted:
            if not exact:
                hess = None      # the carried Hessian misled: difference a fresh one
                continue
            ok = decrement < 1e-8
            info.update(success=ok, message="no further decrease possible" if ok else "line search failed")
            break
        small = (abs(fx - fn) <= 1e-15 * max(1.0, abs(fx))
                 and np.max(np.abs(xn - x)) <= 1e-12 * max(1.0, float(np.max(np.abs(x)))))
        sv, yv = xn - x, gn - gx
        x, fx, gx = xn, fn, gn
        if small:
            info.update(success=True, message="step below machine precision")
            break
        sy = float(sv @ yv)
        if sy > 1e-300:     # BFGS update of the carried Hessian
            hs = hess @ sv
            hess = hess + np.outer(yv, yv) / sy - np.outer(hs, hs) / float(sv @ hs)
            exact = False
        else:
            hess = None
    info["nfev"] = nfev
    info["grad"] = gx
    info["hess"] = hess if hess is not None else last_hess
    return x, fx, info


def _chol_solve_small(chol: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve (L L') x = rhs for a small lower-triangular L (forward and back substitution)."""
    n = rhs.shape[0]
    y = np.empty(n)
    for i in range(n):
        y[i] = (rhs[i] - chol[i, :i] @ y[:i]) / chol[i, i]
    x = np.empty(n)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - chol[i + 1:, i] @ x[i + 1:]) / chol[i, i]
    return x


def _fd_hessian(fun, x: np.ndarray, gx: np.ndarray, idx: np.ndarray, lower: np.ndarray
                ) -> tuple[np.ndarray, int]:
    """Hessian on the coordinates ``idx`` from forward (backward at an upper-side need) differences of the gradient."""
    q = len(idx)
    h = np.empty((q, q))
    for a, i in enumerate(idx):
        step = 1e-6 * max(abs(x[i]), 1e-3)
        xp = x.copy()
        xp[i] += step
        gp = fun(xp)[1]
        h[:, a] = (gp[idx] - gx[idx]) / step
    return 0.5 * (h + h.T), q


# ------------------------------------------------------------------------------------------- profiling
def variance_hessian(crit: Criterion, fit: FitResult) -> np.ndarray:
    r"""Hessian of -2 l_R in the variances phi = (s2_residual, s2_residual * theta) at the optimum, analytically.

    In psi = (s2, theta), F = -2 l_R = nu log(2 pi s2) + L(theta) + rss(theta)/s2 (L = log|H| + log|X'H^{-1}X|,
    nu = N - p) has the exact second derivatives (``crit.parts(theta, hess=True)``)

        F_{s2 s2} = -nu/s2^2 + 2 rss/s2^3,  F_{s2 theta_i} = -rss_i/s2^2,  F_{theta_i theta_j} = rss_ij/s2 + L_ij.

    With theta_i = phi_i/phi_0 the chain rule gives H = J'F''J + sum_i F_{theta_i} d^2 theta_i/dphi^2, where
    J = dpsi/dphi (J_00 = 1, J_i0 = -theta_i/s2, J_ii = 1/s2), d^2 theta_i/dphi_0^2 = 2 theta_i/s2^2 and
    d^2 theta_i/dphi_0 dphi_i = -1/s2^2 (the last term vanishes at an interior optimum, not at a boundary
    theta_i = 0, where the derivatives are the one-sided ones from theta_i >= 0). Used for starting steps of the
    profile search and for the Wald standard errors reported beside the profile intervals. One evaluation costs
    about two gradient evaluations; it is exact to rounding, so the standard errors do not depend on the order
    in which the statistics were summed beyond that (the difference Hessian, :func:`fd_variance_hessian`, has
    ~1e-9 relative error of its own).
    """
    nu = crit.nu
    s2 = float(fit.s2)
    th = np.asarray(fit.theta, dtype=float)
    q = len(th)
    pr = crit.parts(th, hess=True)
    rss = pr["rss"]
    if not rss > 0 or not math.isfinite(pr["logdet"]):
        raise np.linalg.LinAlgError("The REML criterion is not finite at the optimum, so it has no Hessian there.")
    f_psi = np.empty((q + 1, q + 1))
    f_psi[0, 0] = -nu / s2**2 + 2.0 * rss / s2**3
    f_psi[0, 1:] = f_psi[1:, 0] = -pr["drss"] / s2**2
    f_psi[1:, 1:] = pr["d2rss"] / s2 + pr["d2logdet"]
    f_th = pr["drss"] / s2 + pr["dlogdet"]
    jac = np.zeros((q + 1, q + 1))
    jac[0, 0] = 1.0
    jac[1:, 0] = -th / s2
    jac[np.arange(1, q + 1), np.arange(1, q + 1)] = 1.0 / s2
    h = jac.T @ f_psi @ jac
    h[0, 0] += 2.0 * float(f_th @ th) / s2**2
    h[0, 1:] -= f_th / s2**2
    h[1:, 0] -= f_th / s2**2
    return 0.5 * (h + h.T)


def fd_variance_hessian(crit: Criterion, fit: FitResult) -> np.ndarray:
    """The Hessian of :func:`variance_hessian` from central differences of the analytic gradient (for tests).

    Chain rule: d/dphi_i = (d/dtheta_i)/s2 for i >= 1 and d/ds2 = nu/s2 - rss/s2^2 - sum_i theta_i (d/dtheta_i)/s2;
    steps 1e-5 relative, one-sided at a boundary variance. Its own error is ~1e-9 relative in the interior.
    """
    nu = crit.nu
    phi0 = np.concatenate(([fit.s2], fit.s2 * fit.theta))

    def grad(phi: np.ndarray) -> np.ndarray:
        s2 = phi[0]
        th = phi[1:] / s2
        _, (gth, rss) = crit.full(s2, th, grad=True)
        g = np.empty_like(phi)
        g[1:] = gth / s2
        g[0] = nu / s2 - rss / s2**2 - float(th @ gth) / s2
        return g

    q = len(phi0)
    g0 = grad(phi0)
    h = np.empty((q, q))
    for i in range(q):
        step = 1e-5 * max(abs(phi0[i]), 1e-3 * phi0[0])
        xp, xm = phi0.copy(), phi0.copy()
        xp[i] += step
        if phi0[i] - step > 0:
            xm[i] -= step
            h[:, i] = (grad(xp) - grad(xm)) / (2 * step)
        else:
            h[:, i] = (grad(xp) - g0) / step
    return 0.5 * (h + h.T)


def wald_covariance(hess: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Asymptotic covariance 2 H^{-1} of the variances phi = (s2_residual, s2_residual * theta).

    H is the Hessian of -2 l_R in phi (:func:`variance_hessian`), so the inverse information is 2 H^{-1}. It is
    taken over the free variances only: the rows and columns of a variance at the boundary (theta_i = 0) are
    NaN. Raises ``numpy.linalg.LinAlgError`` when H is singular on the free variances.
    """
    free = [0] + [1 + i for i in range(len(theta)) if theta[i] > 0]
    out = np.full(hess.shape, math.nan)
    out[np.ix_(free, free)] = 2.0 * np.linalg.inv(hess[np.ix_(free, free)])
    return out


def satterthwaite_covariance(hess: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, str]:
    """The covariance A of the variances phi = (s2_residual, s2_residual * theta) that Satterthwaite's degrees of
    freedom use (:func:`cjstats.results.contrast.satterthwaite_df`), and which rule gave it.

    ``"full"``: A = 2 H^{-1} over every variance when H (:func:`variance_hessian`) is positive definite, a variance
    at the boundary included (its uncertainty is real: dropping it, as if s2_scenario were known to be 0, gave mu
    intervals covering 74% of the time when the scenario variance fell on the boundary; lmerTest, whose Hessian
    is in the standard deviations, drops it). ``"free, capped"``: the Wald covariance over the free variances
    (:func:`wald_covariance`) when H is not positive definite; the caller caps the df by its design df.
    ``"design"``: neither exists (A is None). Returns A over the kept variances, the mask of the kept variances
    and the rule.
    """
    hess = np.asarray(hess, dtype=float)
    keep = np.ones(len(hess), dtype=bool)
    try:
        if np.linalg.eigvalsh(hess).min() > 0:
            return 2.0 * np.linalg.inv(hess), keep, "full"
    except np.linalg.LinAlgError:
        pass
    try:
        cov = wald_covariance(hess, theta)
    except np.linalg.LinAlgError:
        return None, keep, "design"
    keep = np.isfinite(np.diag(cov))
    return cov[np.ix_(keep, keep)], keep, "free, capped"


def profile_interval(crit: Criterion, fit: FitResult, which: int, level: float,
                     hess: np.ndarray | None = None) -> tuple[float, float, dict[str, Any]]:
    """Profile-likelihood interval for one variance on the REML criterion.

    ``which = 0`` is s2_residual; ``which = i >= 1`` is s2_residual * theta_{i-1}. The interval is
    {v : min over the other variances of -2 l_R(v, ...) - min(-2 l_R) <= chi2_{1, level}}. The search runs on the
    standard-deviation scale s = sqrt(v), where the signed root zeta(s) = sign(s - s_hat) sqrt(profile - min)
    is close to linear (as in lme4's ``profile``): secant steps from the quadratic approximation, then Brent's
    method on the bracket. Each point re-optimises the other variances. The lower bound is 0 when the
    criterion at v = 0 is within the cutoff (always when the estimate is at the boundary).
    """
    cutoff = float(_dist.chi2_ppf(level, 1))
    zcut = math.sqrt(cutoff)
    dmin = fit.deviance
    q = len(fit.theta)
    nu = crit.nu
    vhat = float(np.concatenate(([fit.s2], fit.s2 * fit.theta))[which])
    s_hat = math.sqrt(max(vhat, 0.0))
    n_eval0 = crit.n_evaluations
    if hess is None:
        hess = variance_hessian(crit, fit)
    try:
        var_v = float(wald_covariance(hess, fit.theta)[which, which])
    except np.linalg.LinAlgError:
        var_v = math.nan
    sd_v = math.sqrt(var_v) if var_v > 0 else math.nan   # v - vhat ~ sd_v per unit of zeta
    cache: dict[float, float] = {}
    warm: dict[str, np.ndarray] = {}

    def prof(v: float) -> float:
        """min over the other parameters of -2 l_R with component ``which`` held at v."""
        x0 = warm.get("x", fit.theta).copy()
        if which == 0:
            def fun(x):
                val, (g, _rss) = crit.full(v, x, grad=True)
                return val, g
            x, fx, info = minimize_bounded(fun, x0, np.zeros(q), tol=1e-9, hess0=warm.get("H"))
            warm["x"], warm["H"] = x, info["hess"]
            return fx
        i = which - 1
        if v <= 0.0:
            if q == 1:
                return crit.profiled(np.zeros(1))[0]

            def fun0(z):
                full = np.insert(z, i, 0.0)
                val, g = crit.profiled(full, grad=True)
                return val, np.delete(g, i)
            h0 = warm.get("H")
            h0 = None if h0 is None else np.delete(np.delete(h0, i, axis=0), i, axis=1)
            _, fz, _ = minimize_bounded(fun0, np.delete(np.maximum(x0, 1e-3), i), np.zeros(q - 1), tol=1e-9, hess0=h0)
            return fz

        def fun(x):
            ti = x[i]
            val, (g, rss) = crit.full(v / ti, x, grad=True)
            g = g.copy()
            g[i] += -nu / ti + rss / v      # s2 = v/ti: d/dti [nu log s2 + rss/s2]
            return val, g
        x0[i] = v / warm.get("s2", fit.s2)          # keep s2_residual where it was
        lower = np.zeros(q)
        lower[i] = 1e-12 * x0[i]
        x, fx, info = minimize_bounded(fun, x0, lower, tol=1e-9, hess0=warm.get("H"))
        warm["x"], warm["s2"], warm["H"] = x, v / x[i], info["hess"]
        return fx

    def zeta(s: float) -> float:
        s = max(s, 0.0)
        if s not in cache:
            dv = prof(s * s) - dmin
            cache[s] = math.copysign(math.sqrt(max(dv, 0.0)), s - s_hat)
        return cache[s]

    cache[s_hat] = 0.0

    def side(sign: float) -> float:
        target = sign * zcut
        warm.pop("x", None)
        warm.pop("s2", None)
        wald_lo = vhat - zcut * sd_v if math.isfinite(sd_v) else -1.0
        near_zero = s_hat <= 0 or wald_lo <= 0.05 * vhat
        if sign < 0 and which >= 1 and near_zero and (s_hat <= 0 or zeta(0.0) >= target):
            return 0.0
        # search on t = log(sd): zeta is close to linear there; first step from the Wald interval of log v
        if s_hat > 0 and math.isfinite(sd_v) and sd_v > 0:
            t1 = math.log(s_hat) + 0.5 * target * sd_v / vhat
        else:
            t1 = math.log(max(s_hat, math.sqrt(fit.s2))) + sign * 0.5
        t1 = min(max(t1, math.log(s_hat) - 20.0), math.log(s_hat) + 20.0) if s_hat > 0 else t1
        if s_hat <= 0:
            return math.inf if sign > 0 and not math.isfinite(zeta(math.exp(t1)) - target) else _bisect_up(
                lambda s: zeta(s) - target, math.exp(t1))
        # zeta ~ (v - vhat)/sd_v near the optimum, and dv/dt = 2 v on t = log(sd)
        slope0 = 2.0 * vhat / sd_v if s_hat > 0 and math.isfinite(sd_v) and sd_v > 0 else None
        root = _secant_root(lambda t: zeta(math.exp(t)) - target, math.log(s_hat), -target, t1, sign,
                            slope0=slope0)
        if math.isinf(root):      # the profile stays within the cutoff: the bound is 0 or unbounded
            return math.inf if root > 0 else 0.0
        return math.exp(2.0 * root)   # NaN (search failed) passes through

    upper = side(+1.0)
    lower = side(-1.0)
    return lower, upper, {"evaluations": crit.n_evaluations - n_eval0}


def _bisect_up(fun: Callable[[float], float], s1: float) -> float:
    """Upper root of an increasing function with fun(0) < 0 (estimate at the boundary): s^2 at the root."""
    lo, hi = 0.0, s1
    tries = 0
    while fun(hi) < 0 and tries < 200:
        lo, hi = hi, hi * 2.0
        tries += 1
    if tries >= 200:
        return math.inf
    root = optimize.brentq(fun, lo, hi, xtol=1e-12 * hi, rtol=1e-10)
    return root * root


def _secant_root(fun: Callable[[float], float], t0: float, f0: float, t1: float, sign: float, *,
                 tol: float = 1e-4, slope0: float | None = None) -> float:
    """Root of a nearly linear increasing function beyond t0 (in direction ``sign``), with f(t0) = f0.

    Secant steps (extrapolation limited to 4x the last step) until the root is bracketed, then secant steps
    kept inside the bracket (bisection when a step would leave it); with ``slope0`` (the derivative at t0)
    the first step fits a quadratic through (t0, f0, slope0) and (t1, f1). It stops when |f| < ``tol``: for
    zeta that is a bound whose chi-square statistic is within 2 z tol of the cutoff. Returns +-inf when the
    function does not reach zero within 60 units of t (a factor e^60 in the standard deviation), and NaN when
    100 steps do not find the root (a failed search is never reported as a bound).
    """
    inside = (t0, f0)               # last point short of the root
    beyond: tuple[float, float] | None = None
    prev = (t0, f0)
    t = t1
    for _ in range(100):
        if abs(t - t0) > 60.0:
            return sign * math.inf
        f = fun(t)
        if not math.isfinite(f):
            f = sign * 1e300
        if abs(f) < tol:
            return t
        if f * sign < 0:
            inside = (t, f)
        else:
            beyond = (t, f)
        if beyond is not None:
            lo, hi = sorted((inside[0], beyond[0]))
            if hi - lo <= 1e-12:
                return 0.5 * (lo + hi)
            nxt = math.nan
            if f != prev[1]:
                nxt = t - f * (t - prev[0]) / (f - prev[1])
            if not (lo < nxt < hi):
                if beyond[1] != inside[1]:
                    nxt = inside[0] - inside[1] * (beyond[0] - inside[0]) / (beyond[1] - inside[1])
                if not (lo < nxt < hi) or min(nxt - lo, hi - nxt) < 1e-3 * (hi - lo):
                    nxt = 0.5 * (lo + hi)
        else:
            if slope0 is not None and prev[0] == t0 and t != t0:
                # quadratic through (t0, f0) with slope slope0 and (t, f)
                dt = t - t0
                curv = (f - f0 - slope0 * dt) / (dt * dt)
                disc = slope0 * slope0 - 4.0 * curv * f0
                nxt = math.nan
                if disc >= 0 and curv != 0:
                    r1 = (-slope0 + math.sqrt(disc)) / (2 * curv)
                    r2 = (-slope0 - math.sqrt(disc)) / (2 * curv)
                    cands = [r for r in (r1, r2) if r * sign > 0]
                    nxt = t0 + min(cands, key=abs) if cands else math.nan
                elif curv == 0 and slope0 != 0:
                    nxt = t0 - f0 / slope0
                if not math.isfinite(nxt) or (nxt - t) * sign <= 0 and f * sign < 0:
                    nxt = t - f * (t - prev[0]) / (f - prev[1]) if f != prev[1] else t + (t - prev[0])
            elif f == prev[1]:
                nxt = prev[0] + 2.0 * (t - prev[0])
            else:
                nxt = t - f * (t - prev[0]) / (f - prev[1])
                lim = t + 4.0 * (t - prev[0])
                nxt = min(nxt, lim) if sign > 0 else max(nxt, lim)
                if (nxt - t) * sign <= 0:
                    nxt = t + (t - prev[0])
        prev = (t, f)
        t = nxt
    return math.nan

