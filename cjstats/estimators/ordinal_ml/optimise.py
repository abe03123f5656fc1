r"""Maximum-likelihood fit of one unit: L-BFGS-B on the unconstrained parameters, a Newton polish with the
observed information, the Hessian, and the profile likelihood of the scenario variance.

The gradient is analytic (:func:`.likelihood.agq_value_and_grad`: exact for the adaptive quadrature,
differentiated through each scenario's mode and curvature); the per-scenario modes are warm-started from the
last evaluation and solved to 1e-10. The observed information is the central difference of that gradient
(:func:`.numdiff.central_difference`, step 1e-4 (1 + |x_j|)), 2 x (number of parameters) gradient evaluations.
Convergence is reported honestly: the final gradient norm, whether L-BFGS-B said it converged, and whether log s_a
sits at its lower bound (s_a -> 0, a boundary estimate).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cjstats import _dist
from cjstats._blas import single_thread_blas
from cjstats.estimators.ordinal_ml.likelihood import (
    OrdinalProblem,
    _bounds,
    _log_integrand,
    agq_value_and_grad,
    compress,
    unpack,
)
from cjstats.estimators.ordinal_ml.links import quantile
from cjstats.estimators.ordinal_ml.numdiff import central_difference

__all__ = ["UnitFit", "fit_problem", "newton_polish", "profile_scenario", "start_values", "LOG_S_BOUNDS", "kkt_check",
           "limit_thresholds"]

#: Bounds of log s_a in the optimiser: s_a in [exp(-9), exp(4)] on the latent scale.
LOG_S_BOUNDS = (-9.0, 4.0)
_LOG_2PI = math.log(2.0 * math.pi)




def _blas1(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with single_thread_blas():
            return fn(*args, **kwargs)
    return wrapper


class _Objective:
    """-log L with warm-started scenario modes (one cache per fit)."""

    def __init__(self, p: OrdinalProblem, nagq: int | None = None) -> None:
        self.p = p
        self.q = p.nagq if nagq is None else int(nagq)
        self.a = np.zeros(p.n_scenarios)
        self.n_eval = 0
        self._key: bytes | None = None
        self._f = math.inf
        self._g: np.ndarray | None = None

    def modes(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray, np.ndarray]:
        p = self.p
        s, u0, lo0 = _bounds(p, x)
        s2 = s * s
        a = self.a.copy()
        g, g1, g2 = _log_integrand(p, u0, lo0, a[p.scenario], a, s2, 2)
        if not np.all(np.isfinite(g)):
            a[:] = 0.0
            g, g1, g2 = _log_integrand(p, u0, lo0, a[p.scenario], a, s2, 2)
        for _ in range(100):
            step = -g1 / g2
            t = np.ones_like(a)
            new = a + step
            gn, g1n, g2n = _log_integrand(p, u0, lo0, new[p.scenario], new, s2, 2)
            for _half in range(50):          # step halving (rare) where the concave objective would decrease
                bad = ~(gn >= g - 1e-13 * np.abs(g))
                if not bad.any():
                    break
                t = np.where(bad, 0.5 * t, t)
                new = a + t * step
                gn, g1n, g2n = _log_integrand(p, u0, lo0, new[p.scenario], new, s2, 2)
            a, g, g1, g2 = new, gn, g1n, g2n
            if np.max(np.abs(t * step)) < 1e-10:
                break
        if np.all(np.isfinite(a)):
            self.a = a
        return a, -g2, g, s2, u0, lo0

    def _eval(self, x: np.ndarray, grad: bool) -> tuple[float, np.ndarray | None]:
        """-log L (and its analytic gradient) at x, cached for the last point."""
        x = np.asarray(x, dtype=np.float64)
        key = x.tobytes()
        if self._key == key and (self._g is not None or not grad):
            return self._f, self._g
        self.n_eval += 1
        a, h, g, _s2, _u0, _lo0 = self.modes(x)
        if not (np.all(np.isfinite(g)) and np.all(h > 0)):
            f, gr = math.inf, (np.full(x.size, np.nan) if grad else None)
        else:
            f, gr = agq_value_and_grad(self.p, x, a, h, self.q, grad=grad)
        self._key, self._f, self._g = key, f, gr
        return f, gr

    def __call__(self, x: np.ndarray) -> float:
        return self._eval(x, grad=False)[0]

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self._eval(x, grad=True)
        return f, g

    def grad(self, x: np.ndarray, f0: float | None = None) -> np.ndarray:
        """The analytic gradient of -log L (:func:`.likelihood.agq_value_and_grad`)."""
        return self._eval(x, grad=True)[1]

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """The observed information: central differences of the analytic gradient, step 1e-4 (1 + |x_j|),
        symmetrised."""
        hess = central_difference(self.grad, x, 1e-4, relative=True)
        return 0.5 * (hess + hess.T)


def start_values(p: OrdinalProblem, log_s: float = math.log(0.5), *, row_weight: np.ndarray | None = None
                 ) -> np.ndarray:
    """Thresholds at the link quantiles of the cumulative category shares (per judge for judge thresholds),
    offsets 0, s_a = 0.5. ``row_weight``: each row counted that many times (the rows of a pattern problem, each
    pattern's weight: the shares of every call)."""
    x = np.zeros(p.n_params)
    x[0] = log_s
    j = p.n_categories
    groups = [np.arange(p.category.size)] if p.thresholds == "shared" else [
        np.flatnonzero(p.judge == k) for k in range(p.n_judges)]
    i = 1 + p.n_gamma
    for idx in groups:
        if row_weight is None:
            freq = (np.bincount(p.category[idx], minlength=j) + 0.5) / (idx.size + 0.5 * j)
        else:
            w = np.asarray(row_weight, dtype=np.float64)[idx]
            freq = (np.bincount(p.category[idx], weights=w, minlength=j) + 0.5) / (float(w.sum()) + 0.5 * j)
        cut = quantile(np.cumsum(freq)[:-1], p.link)
        x[i] = cut[0]
        x[i + 1:i + j - 1] = np.log(np.maximum(np.diff(cut), 1e-2))
        i += j - 1
    return x


def kkt_check(f: float, g: np.ndarray, hess: np.ndarray, free: np.ndarray, res: Any, *,
              gtol: float = 1e-3) -> tuple[bool, str]:
    r"""Whether a maximum-likelihood fit reached a maximum, decided from the point itself, never from the
    optimiser's status (the policy of the REML engine's KKT check): -log L finite; the gradient small on the free
    parameters (max |g_j| < ``gtol``); the observed information positive definite on them (smallest eigenvalue
    > 1e-9 x the largest: a flat or indefinite direction means no isolated maximum, e.g. separation); and, for the
    parameters held at a lower bound (not in ``free``), a gradient of -log L that does not point inside
    (g_j >= -``gtol``: moving off the bound would not raise the likelihood). An optimiser that stopped at its
    iteration limit is not converged whatever the gradient says. Returns (converged, the reason when not)."""
    if not math.isfinite(f):
        return False, "the log-likelihood is not finite at the final point"
    g = np.asarray(g, dtype=np.float64)
    gfree = g[free] if free.size else np.zeros(0)
    if gfree.size and not np.all(np.isfinite(gfree)):
        return False, "the gradient is not finite at the final point"
    if getattr(res, "status", 0) == 1 or "ITERATIONS" in str(getattr(res, "message", "")).upper():
        return False, f"the optimiser stopped at its iteration limit ({getattr(res, 'nit', '?')} iterations)"
    gmax = float(np.max(np.abs(gfree))) if gfree.size else 0.0
    if gmax >= gtol:
        return False, f"the gradient is not zero at the final point (max |gradient| {gmax:.2g})"
    held = np.setdiff1d(np.arange(g.size), free)
    if held.size and np.any(g[held] < -gtol):
        return False, "a parameter held at its bound would raise the likelihood if moved inside"
    if free.size and np.all(np.isfinite(hess)):
        h = np.asarray(hess, dtype=np.float64)[np.ix_(free, free)]
        w = np.linalg.eigvalsh(0.5 * (h + h.T))
        if not w[-1] > 0 or w[0] <= 1e-9 * w[-1]:
            return False, (f"the observed information is not positive definite (eigenvalues {w[0]:.3g} to "
                           f"{w[-1]:.3g}): the likelihood has no isolated maximum")
    return True, ""


@dataclass
class UnitFit:
    """One unit's maximum-likelihood fit (optimiser parametrisation)."""

    x: np.ndarray
    loglik: float
    hessian: np.ndarray           # observed information of -log L in x
    grad_norm: float
    converged: bool
    at_boundary: bool
    message: str
    n_eval: int
    modes: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)


def _minimise(obj: _Objective, x0: np.ndarray, fixed: dict[int, float] | None = None) -> tuple[np.ndarray, Any]:
    from scipy.optimize import minimize

    fixed = fixed or {}
    free = np.array([i for i in range(x0.size) if i not in fixed], dtype=np.int64)
    full = np.asarray(x0, dtype=np.float64).copy()
    for i, v in fixed.items():
        full[i] = v

    def f_and_g(z: np.ndarray) -> tuple[float, np.ndarray]:
        full[free] = z
        f, g = obj.value_and_grad(full)
        if not math.isfinite(f):
            return 1e300, np.zeros_like(z)
        return f, g[free]

    bounds = [LOG_S_BOUNDS if i == 0 else (None, None) for i in free]
    res = minimize(f_and_g, full[free], jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 1000, "ftol": 1e-14, "gtol": 1e-7, "maxcor": 20})
    full[free] = res.x
    return full.copy(), res


def newton_polish(obj: Any, x: np.ndarray, f: float, hess: np.ndarray, free: np.ndarray, *,
                  steps: int = 3) -> tuple[np.ndarray, float]:
    """Up to ``steps`` Newton steps x <- x - H^-1 g on the ``free`` coordinates (the others, e.g. a variance at its
    bound, stay put), each kept only if it lowers the objective; stops at a step below 1e-9. ``obj(x)`` is the
    objective and ``obj.grad(x)`` its gradient; ``hess`` the (fixed) Hessian at the start. Returns (x, f)."""
    for _ in range(steps):
        g = obj.grad(x)
        try:
            step = -np.linalg.solve(hess[np.ix_(free, free)], g[free])
        except np.linalg.LinAlgError:
            break
        trial = x.copy()
        trial[free] += step
        ft = obj(trial)
        if not (ft <= f):
            break
        x, f = trial, ft
        if np.max(np.abs(step)) < 1e-9:
            break
    return x, f


@_blas1
def fit_problem(p: OrdinalProblem, x0: np.ndarray | None = None, *, hessian: bool = True,
                fixed: dict[int, float] | None = None) -> UnitFit:
    """Maximise the marginal likelihood of one unit; polish with Newton steps on the observed information.
    Scenarios with the same response pattern are fitted once, weighted by their number (:func:`.compress`:
    exact); ``modes`` are returned per original scenario. ``fixed`` holds entries of the optimiser's vector at
    given values (:func:`limit_thresholds`: per-judge thresholds at their limits); they are not free in the
    convergence check, and ``extra["fixed"]`` lists them."""
    full_p = p
    p, inverse = compress(full_p)
    obj = _Objective(p)
    fixed = dict(fixed or {})
    start = start_values(p) if x0 is None else np.asarray(x0, dtype=np.float64).copy()
    if fixed and start.size != p.n_params:
        raise ValueError("x0 does not match the problem")
    for i, v in fixed.items():
        start[i] = v
    x, res = _minimise(obj, start, fixed=fixed)
    f = obj(x)
    at_lower = x[0] <= LOG_S_BOUNDS[0] + 1e-6
    hess = obj.hessian(x) if hessian else np.full((x.size, x.size), np.nan)
    # Newton polish (free parameters; log s_a stays put at the boundary, fixed entries stay put)
    free_idx = np.array([i for i in range(x.size) if i not in fixed and not (i == 0 and at_lower)], dtype=np.int64)
    x, f = newton_polish(obj, x, f, hess, free_idx, steps=3 if hessian else 0)
    g = obj.grad(x)
    gnorm = float(np.max(np.abs(g[free_idx]))) if free_idx.size else 0.0
    converged, why = kkt_check(f, g, hess, free_idx, res) if hessian else (bool(gnorm < 1e-3 and math.isfinite(f)), "")
    msg = (f"L-BFGS-B: {res.message}; max |gradient| {gnorm:.2g}"
           + ("; s_a at its lower bound (scenario variance estimated as ~0: a boundary estimate)" if at_lower else "")
           + (f"; {len(fixed)} per-judge thresholds held at their limits (unused categories)" if fixed else "")
           + (f"; not converged: {why}" if why else ""))
    return UnitFit(x=x, loglik=-f, hessian=hess, grad_norm=gnorm, converged=converged, at_boundary=bool(at_lower),
                   message=msg, n_eval=obj.n_eval, modes=obj.a[inverse].copy(),
                   extra={"n_patterns": p.n_scenarios, "n_scenarios": full_p.n_scenarios,
                          "fixed": sorted(int(i) for i in fixed)})


#: Latent distance standing in for an infinite threshold, and log of the spacing standing in for two coinciding
#: ones (:func:`limit_thresholds`): F(-40) is below 4e-18 for both links, so the limit is reached to double precision.
_FAR = 40.0


def limit_thresholds(p: OrdinalProblem, x0: np.ndarray | None = None) -> tuple[dict[int, float], np.ndarray]:
    r"""Per-judge thresholds (``thresholds="judge"``) of categories a judge never uses, held at their limits, and
    a start vector that agrees with them.

    For judge l the likelihood has no maximum in those thresholds: an unused bottom category sends theta_{l,0} to
    -inf, an unused top category sends theta_{l,J-2} to +inf, an unused middle category k makes theta_{l,k-1} and
    theta_{l,k} coincide; the supremum is the likelihood with the judge's probabilities of its unused categories
    at 0, which these values reach to double precision (a threshold 40 latent units beyond its used neighbour,
    a spacing of exp(-40); F(-40) < 4e-18 for both links). Returns ({index in the optimiser's vector: value},
    start) in the raw layout of :func:`.likelihood.unpack` (theta_0, then log spacings); ({}, start) for shared
    thresholds. ``x0``: the start to adapt (default :func:`start_values`)."""
    from cjstats.estimators.ordinal_ml.likelihood import unpack

    x = (start_values(p) if x0 is None else np.asarray(x0, dtype=np.float64)).copy()
    if p.thresholds != "judge":
        return {}, x
    j = p.n_categories
    used = np.zeros((p.n_judges, j), dtype=bool)
    used[p.judge, p.category] = True
    _, _, theta = unpack(p, x)
    out: dict[int, float] = {}
    for lab in range(p.n_judges):
        u = np.flatnonzero(used[lab])
        if u.size < 2 or u.size == j:   # one category: left out before the fit (identification); all: nothing to do
            continue
        a, b = int(u[0]), int(u[-1])
        th = theta[lab].copy()
        for k in range(a + 1, b):         # an unused middle category: its two thresholds coincide
            if not used[lab, k]:
                th[k] = th[k - 1]
        th[:a] = th[a] - _FAR             # thresholds below the first used category: -inf, coinciding
        th[b:] = th[b - 1] + _FAR         # thresholds above the last used category: +inf, coinciding
        raw = np.concatenate([[th[0]], np.log(np.maximum(np.diff(th), np.exp(-_FAR)))])
        base = 1 + p.n_gamma + lab * (j - 1)
        x[base:base + j - 1] = raw
        held = list(range(a)) + [k for k in range(a + 1, b) if not used[lab, k]] + list(range(b, j - 1))
        for k in held:
            # raw[0] is theta_0 itself (held when the bottom category is unused); raw[k] (k >= 1) the log spacing
            # theta_k - theta_{k-1}: held at exp(-40) inside an unused run, at 40 at the edge of the used range
            out[base + k] = float(raw[k])
        if a > 0:                         # the spacing that leads back up to the first used threshold stays free
            out.pop(base + a, None)
    return out, x


@_blas1
def profile_scenario(p: OrdinalProblem, fit: UnitFit, level: float) -> tuple[float, float, int]:
    """Profile-likelihood interval for s_a^2: {s^2 : 2 (l_max - l_p(s)) <= chi2_1(level)}; the lower limit is 0
    when the profile at the lower bound of s_a stays inside. Returns (lower, upper, evaluations)."""
    from scipy.optimize import brentq

    crit = float(_dist.chi2_ppf(level, 1))
    p = compress(p)[0]
    obj = _Objective(p)
    cache: dict[float, np.ndarray] = {}
    warm = [fit.x.copy()]

    held = {i: float(fit.x[i]) for i in fit.extra.get("fixed", [])}

    def dev(log_s: float) -> float:
        x, _ = _minimise(obj, warm[0], fixed={**held, 0: log_s})
        cache[log_s] = x
        return 2.0 * (fit.loglik + obj(x)) - crit

    l0 = float(fit.x[0])
    se = math.sqrt(max(np.linalg.pinv(fit.hessian)[0, 0], 1e-8)) if np.all(np.isfinite(fit.hessian)) else 0.5
    # upper limit
    hi = l0 + max(se, 0.05)
    while dev(hi) < 0 and hi < LOG_S_BOUNDS[1]:
        warm[0] = cache[hi]
        hi = min(hi + 2 * max(se, 0.05), LOG_S_BOUNDS[1])
    warm[0] = fit.x.copy()
    upper = brentq(dev, l0, hi, xtol=1e-4) if dev(hi) > 0 else LOG_S_BOUNDS[1]
    # lower limit
    warm[0] = fit.x.copy()
    lower: float | None = None
    if fit.at_boundary:
        lower = -math.inf
    else:
        lo = l0 - max(se, 0.05)
        while dev(lo) < 0:
            warm[0] = cache[lo]
            if lo <= LOG_S_BOUNDS[0] + 1e-9:
                lower = -math.inf
                break
            lo = max(lo - 2 * max(se, 0.05), LOG_S_BOUNDS[0])
        if lower is None:
            warm[0] = fit.x.copy()
            lower = brentq(dev, lo, l0, xtol=1e-4)
    return (0.0 if lower == -math.inf else math.exp(2 * lower)), math.exp(2 * upper), obj.n_eval


def centred(p: OrdinalProblem, x: np.ndarray) -> dict[str, np.ndarray]:
    """Reported parameters: s2 scenario, panel-centred gamma (K,), thresholds shifted by the mean offset."""
    log_s, gamma, theta = unpack(p, x)
    gbar = gamma.mean()
    return {"scenario": np.exp(2 * log_s), "gamma": gamma - gbar, "thresholds": theta - gbar}
