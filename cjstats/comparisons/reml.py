r"""Joint REML fit of several models: nested random intercepts, fixed model x judge, from the joint statistics.

Model (lme4: ``lmer(score ~ model * judge + (1|scenario) + (1|scenario:model) +
(1|scenario:model:generation))``, any contrasts: the fit is coded by the P x K cell means eta_pl, which spans
the same column space as ``model * judge`` under ``contr.sum``, so the variances, fitted cell means and their
covariance are identical; only lme4's REML criterion differs by the constant 2 log|det T| of the recoding)::

    X_pijl = eta_pl + alpha_i + (alpha p)_pi + beta_pij + eps_pijl

With every variance divided by s2_eps (theta_a, theta_ms, theta_b), H = V/s2_eps is block-diagonal by scenario,
and inside a block it is nested compound symmetry: generation cells c (n_c rows) inside (model, scenario)
groups g inside scenarios i. Nested Woodbury identities give, for any two columns a, b of [X, y] with per-cell
sums a_c = sum_{rows in c} a:

    a'H^{-1}b = a'b - sum_c theta_b w_c a_c b_c - sum_g theta_ms/(1 + theta_ms q_g) f_g(a) f_g(b)
                - sum_i theta_a/(1 + theta_a Q_i) F_i(a) F_i(b)
    w_c = 1/(1 + n_c theta_b),  f_g(a) = sum_{c in g} w_c a_c,  q_g = sum_{c in g} n_c w_c,
    F_i(a) = sum_{g in i} f_g(a)/(1 + theta_ms q_g),  Q_i = sum_{g in i} q_g/(1 + theta_ms q_g),
    log|H| = sum_c log(1 + n_c theta_b) + sum_g log(1 + theta_ms q_g) + sum_i log(1 + theta_a Q_i).

So the profiled REML criterion (N - r)(1 + log(2 pi s2_hat)) + log|H| + log|X'H^{-1}X|, s2_hat = RSS/(N - r),
needs only per-cell-size sums of the cell judge counts and score sums, per model and per (model, scenario)
group (:class:`cjstats.stats.NestedStats`, the ``for_joint_reml`` view of ``build_stats(..., unit=("criterion",))``,
so any engine can feed it): O(rows) once, then O(groups x sizes x K + (PK)^2 x scenarios) per evaluation,
with no N x N matrix. Every step above is differentiated exactly in theta (first and second derivatives carried
forward through w_c, f_g, q_g, the 1/(1 + theta q) factors, F_i and Q_i; ``_Jets``), so the criterion's
gradient and Hessian need no step size: with beta = (X'H^{-1}X)^{-1} X'H^{-1}y and z = (-beta, 1),
d rss = z' dM z and d log|X'H^{-1}X| = tr((X'H^{-1}X)^{-1} dA) (second derivatives in ``_gls_terms``).
The optimiser (L-BFGS-B with that gradient on sqrt(theta) >= 0, like lme4's theta >= 0, then Newton steps on
the inner coordinates) finds boundary optima exactly at 0. With one generation in every (model, scenario), the
generation term is not identifiable (it is the ``scenario:model`` term) and is dropped; ``model_scenario``
then holds both.

Reported (``components``):

- ``scenario``, ``model_scenario``, ``generation``, ``residual``: the REML variances; interval: Wald on the
  log scale from the exact Hessian of the REML deviance in the variances (``_variance_hessian``; none at a
  boundary, where the row says so).
- ``mu`` per model: the row mean of the GLS cell means, t interval with (scenarios of the model - 1) df.
- ``judge_panel`` and ``judge_model`` (panel view): mean of the squared estimated effects minus the mean of
  their sampling variances, (|g|^2 - tr Cov g)/count, with g the judge (or judge x model interaction) effects
  of the GLS cell means. Interval: W = g'Cov(g)^+ g is noncentral chi-square(df, lambda) and
  lambda = count x value / mean nonzero eigenvalue of Cov(g); on balanced data this is the ANOVA interval.
- ``judge_model`` (population view): the same fixed-effects estimator scaled to a variance,
  count/df x panel value; ``judge_population``: (|gamma|^2 - tr Cov gamma)/(K - 1) - judge_model/P, no interval.
- The test of no judge x model interaction is the likelihood-ratio test of ``model * judge`` against
  ``model + judge``, both fitted by ML, on (P - 1)(K - 1) df.

Contrasts of the cell means use the GLS covariance s2_eps (X'H^{-1}X)^{-1}, with containment degrees of freedom
that reproduce the ANOVA's on balanced data: N - cells - P(K - 1) for interaction contrasts (within-model
sums zero), (model, scenario) groups - scenarios - (P - 1) for contrasts between models, scenarios - 1 otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from cjstats.comparisons._joint import JOINT_LABEL, JointFit, JointRow, check_judges_scored, components_frame, joint_stats
from cjstats.estimators.intervals import noncentral_chi2_interval
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.stats import NestedStats

__all__ = ["reml_deviance", "fit_nested", "NestedFit", "fit_joint"]

_NAN = float("nan")


def _subtract_blocks(blocks: np.ndarray, p: int, k: int, out: np.ndarray) -> None:
    """out -= blocks[q] in model q's [judges, y] rows and columns (blocks (P, K+1, K+1), y last)."""
    y = p * k
    for q in range(p):
        sl = slice(q * k, (q + 1) * k)
        bq = blocks[q]
        out[sl, sl] -= bq[:k, :k]
        out[sl, y] -= bq[:k, k]
        out[y, sl] -= bq[k, :k]
        out[y, y] -= bq[k, k]


class _Jets:
    r"""Second-order forward differentiation along ``nd`` directions, exact to rounding.

    A jet is the list [value, d_1 .. d_nd, d_11, d_12, .., d_nd,nd] (first derivatives only for ``order=1``,
    the value only for ``order=0``) of one array. The rules: a linear map L acts on every entry; a bilinear
    product B(x, y) has d_i = B(x_i, y) + B(x, y_i) and d_ij = B(x_ij, y) + B(x_i, y_j) + B(x_j, y_i) + B(x, y_ij);
    a scalar function f(x) has d_i = f'(x) x_i and d_ij = f'(x) x_ij + f''(x) x_i x_j.
    """

    def __init__(self, nd: int, order: int) -> None:
        self.nd = nd if order >= 1 else 0
        self.pairs = [(i, j) for i in range(nd) for j in range(i, nd)] if order >= 2 else []

    def var(self, value: float, direction: int | None) -> list:
        """A scalar variable: derivative 1 along ``direction`` (None: a constant)."""
        out = [np.float64(value)] + [np.float64(1.0 if i == direction else 0.0) for i in range(self.nd)]
        return out + [np.float64(0.0)] * len(self.pairs)

    @staticmethod
    def lin(op: Any, x: list) -> list:
        return [op(c) for c in x]

    def mul(self, x: list, y: list, op: Any = np.multiply) -> list:
        nd = self.nd
        out = [op(x[0], y[0])]
        out += [op(x[1 + i], y[0]) + op(x[0], y[1 + i]) for i in range(nd)]
        for h, (i, j) in enumerate(self.pairs, start=1 + nd):
            out.append(op(x[h], y[0]) + op(x[1 + i], y[1 + j]) + op(x[1 + j], y[1 + i]) + op(x[0], y[h]))
        return out

    def fn(self, x: list, f0: Any, f1: Any, f2: Any) -> list:
        nd = self.nd
        out = [f0] + [f1 * x[1 + i] for i in range(nd)]
        out += [f1 * x[h] + f2 * x[1 + i] * x[1 + j] for h, (i, j) in enumerate(self.pairs, start=1 + nd)]
        return out

    def inv1p(self, x: list) -> list:
        """1/(1 + x): derivatives -r^2, 2 r^3."""
        r = 1.0 / (1.0 + x[0])
        return self.fn(x, r, -r * r, 2 * r**3)

    def log1p(self, x: list) -> list:
        """log(1 + x): derivatives r, -r^2 with r = 1/(1 + x)."""
        r = 1.0 / (1.0 + x[0])
        return self.fn(x, np.log1p(x[0]), r, -r * r)


def _weighted_gram(theta: np.ndarray, ns: NestedStats, t: np.ndarray | None) -> tuple[np.ndarray, float]:
    """[X, y]'H^{-1}[X, y] and log|H| at relative variances theta = (theta_a, theta_ms, theta_b).

    Computed in the cell-means basis (P K columns + y), where the generation and (model, scenario) levels are
    block-diagonal by model, then mapped to X = cell indicator x T. Every cell of size h has the same weight
    w_h = 1/(1 + h theta_b), so the cell level is sum_h theta_b w_h sum_c [D_c; Y_c][D_c; Y_c]' per model and
    f_g = sum_h w_h sum_{c in g, size h} [D_c; Y_c]: the per-size sums of :class:`~cjstats.stats.NestedStats`.
    """
    (m,), (logdet,) = _weighted_gram_jet(theta, ns, t, (), 0)
    return m, float(logdet)


def _weighted_gram_jet(theta: np.ndarray, ns: NestedStats, t: np.ndarray | None, dirs: tuple[int, ...],
                       order: int) -> tuple[list, list]:
    r"""Jets (:class:`_Jets`) of M = [X, y]'H^{-1}[X, y] and log|H| along theta[dirs], up to ``order`` (0-2).

    The formulas of :func:`_weighted_gram` differentiated by the chain rule through (d/dtheta_b)
    w_h = -h w_h^2, (theta_b w_h)' = w_h^2, f_g, q_g, d_g = 1/(1 + theta_ms q_g), (theta_ms d_g), F_i, Q_i,
    d_i = 1/(1 + theta_a Q_i), (theta_a d_i) and log|H|; the second derivatives likewise (the product rule of
    :class:`_Jets`), so M's derivatives are exact to rounding, with no step size.
    """
    jt = _Jets(len(dirs), order)
    ta, tm, tb = (jt.var(theta[i], dirs.index(i) if i in dirs else None) for i in range(3))
    active = [theta[i] > 0 or i in dirs for i in range(3)]
    p, k = ns.n_models, ns.n_judges
    pk = p * k
    m0 = np.zeros((pk + 1, pk + 1))
    m0[np.arange(pk), np.arange(pk)] = ns.counts
    m0[:pk, pk] = m0[pk, :pk] = ns.sums
    m0[pk, pk] = ns.yy
    m = [m0] + [np.zeros_like(m0) for _ in range(len(tb) - 1)]
    sizes = ns.sizes.astype(float)
    htb = jt.lin(lambda c: sizes * c, tb)                            # h theta_b, (S,)
    w = jt.inv1p(htb)                                                  # w_h
    if active[2]:
        u = jt.mul(tb, w)                                              # theta_b w_h
        for mc, uc in zip(m, u):
            _subtract_blocks(np.tensordot(ns.cell_aug, uc, axes=([1], [0])), p, k, mc)
    f = jt.lin(lambda c: sum(c[h] * ns.group_aug[:, h] for h in range(len(c))), w)      # f_g, (G, K+1)
    qg = jt.lin(lambda c: ns.group_cnt @ (sizes * c), w)                        # (G,)
    tq = jt.mul(tm, qg)
    dg = jt.inv1p(tq)
    rows = lambda a, b: b * a[:, None]                                 # noqa: E731 - scale the rows of b by a
    fd = jt.mul(dg, f, rows)                                           # d_g f_g
    if active[1]:
        bounds = list(zip(ns.group_starts, [*ns.group_starts[1:], ns.n_groups]))
        outer = jt.mul(fd, f, lambda a, b: np.stack([a[i:j].T @ b[i:j] for i, j in bounds]))  # per model
        for mc, oc in zip(m, jt.mul(tm, outer)):                      # theta_ms sum_g d_g f_g f_g'
            _subtract_blocks(oc, p, k, mc)
    n_scen = ns.n_scenarios
    flat = ((ns.group_scen * (pk + 1) + ns.group_model * k)[:, None] + np.arange(k)).ravel()  # into (n, PK+1)

    def scatter(fdc: np.ndarray) -> np.ndarray:
        fs = np.zeros(n_scen * (pk + 1))
        fs[flat] = fdc[:, :k].ravel()
        fs = fs.reshape(n_scen, pk + 1)
        fs[:, pk] = np.bincount(ns.group_scen, weights=fdc[:, k], minlength=n_scen)
        return fs

    fs = jt.lin(scatter, fd)                                           # F_i, (n, PK+1)
    qs = jt.lin(lambda c: np.bincount(ns.group_scen, weights=c, minlength=n_scen), jt.mul(qg, dg))   # Q_i
    ts = jt.mul(ta, qs)
    if active[0]:
        cs = jt.mul(ta, jt.inv1p(ts))                                  # theta_a d_i
        for mc, oc in zip(m, jt.mul(jt.mul(cs, fs, rows), fs, lambda a, b: a.T @ b)):
            mc -= oc
    cells_per_size = ns.size_cells.sum(axis=0)
    logdet = [a @ cells_per_size + b.sum() + c.sum()
              for a, b, c in zip(jt.log1p(htb), jt.log1p(tq), jt.log1p(ts))]
    if t is not None and not (t.shape[0] == t.shape[1] and np.array_equal(t, np.eye(pk))):
        q = t.shape[1]
        tt = np.zeros((pk + 1, q + 1))
        tt[:pk, :q] = t
        tt[pk, q] = 1.0
        m = [tt.T @ mc @ tt for mc in m]
    return m, logdet


def _gls_terms(theta: np.ndarray, ns: NestedStats, t: np.ndarray, dirs: tuple[int, ...] = (), order: int = 0
               ) -> dict:
    r"""rss(theta), log|H|, log|A| (A = X'H^{-1}X), beta, and their derivatives along theta[dirs].

    With M = [X y]'H^{-1}[X y] = [[A, b], [b', c]], beta = A^{-1}b, rss = c - b'beta and z = (-beta, 1):

        d_i rss = z' M_i z,    d_ij rss = z' M_ij z - 2 (M_i z)_X' A^{-1} (M_j z)_X,
        d_i log|A| = tr(A^{-1} A_i),    d_ij log|A| = tr(A^{-1} A_ij) - tr(A^{-1} A_i A^{-1} A_j)

    (envelope theorem: beta minimises z'Mz, and d_j beta = A^{-1} (M_j z)_X). Entries ``g_*`` are gradients
    (len(dirs),) for ``order >= 1``, ``h_*`` Hessians for ``order == 2``.
    """
    m, ld = _weighted_gram_jet(theta, ns, t, dirs, order)
    q = t.shape[1]
    m0 = m[0]
    a, b, c = m0[:q, :q], m0[:q, q], m0[q, q]
    chol = np.linalg.cholesky(a)
    zc = np.linalg.solve(chol, b)
    beta = np.linalg.solve(chol.T, zc)
    out = {"q": q, "a": a, "beta": beta, "rss": max(float(c - zc @ zc), 1e-300), "logdet": float(ld[0]),
           "logdet_a": 2 * float(np.log(np.diag(chol)).sum())}
    if order < 1:
        return out
    nd = len(dirs)
    z = np.r_[-beta, 1.0]
    ainv = np.linalg.solve(chol.T, np.linalg.solve(chol, np.eye(q)))
    mz = [m[1 + i] @ z for i in range(nd)]
    aia = [ainv @ m[1 + i][:q, :q] for i in range(nd)]
    out["g_rss"] = np.array([float(z @ v) for v in mz])
    out["g_logdet"] = np.array([float(v) for v in ld[1:1 + nd]])
    out["g_logdet_a"] = np.array([float(np.trace(v)) for v in aia])
    if order < 2:
        return out
    h_rss, h_ld, h_la = (np.empty((nd, nd)) for _ in range(3))
    for h, (i, j) in enumerate([(i, j) for i in range(nd) for j in range(i, nd)], start=1 + nd):
        h_rss[i, j] = h_rss[j, i] = float(z @ m[h] @ z) - 2 * float(mz[i][:q] @ ainv @ mz[j][:q])
        h_ld[i, j] = h_ld[j, i] = float(ld[h])
        h_la[i, j] = h_la[j, i] = float(np.sum(ainv * m[h][:q, :q])) - float(np.sum(aia[i] * aia[j].T))
    out.update(h_rss=h_rss, h_logdet=h_ld, h_logdet_a=h_la)
    return out


def reml_deviance(theta: np.ndarray, ns: NestedStats, t: np.ndarray, *, reml: bool = True
                  ) -> tuple[float, dict]:
    """Profiled -2 log (restricted) likelihood at relative variances theta; also beta, s2 and X'H^{-1}X."""
    dev, _, _, info = _profiled_deviance(theta, ns, t, reml=reml, order=0)
    return dev, info


def _profiled_deviance(theta: np.ndarray, ns: NestedStats, t: np.ndarray, *, reml: bool = True,
                       dirs: tuple[int, ...] = (), order: int = 1) -> tuple[float, np.ndarray, np.ndarray, dict]:
    r"""Profiled criterion D = nu (1 + log(2 pi rss/nu)) + log|H| [+ log|A| for REML], nu = N - q (REML) or N,
    with its exact gradient and (``order=2``) Hessian along theta[dirs] (terms from :func:`_gls_terms`):

        d_i D = nu rss_i/rss + d_i log|H| [+ d_i log|A|],
        d_ij D = nu (rss_ij/rss - rss_i rss_j/rss^2) + d_ij log|H| [+ d_ij log|A|].
    """
    order = order if dirs else 0
    g = _gls_terms(theta, ns, t, dirs, order)
    n = ns.n_rows
    dof = n - g["q"] if reml else n
    rss = g["rss"]
    s2 = rss / dof
    dev = dof * (1 + math.log(2 * math.pi * s2)) + g["logdet"] + (g["logdet_a"] if reml else 0.0)
    grad = hess = np.zeros(0)
    if order >= 1:
        grad = dof * g["g_rss"] / rss + g["g_logdet"] + (g["g_logdet_a"] if reml else 0.0)
    if order >= 2:
        hess = (dof * (g["h_rss"] / rss - np.outer(g["g_rss"], g["g_rss"]) / rss**2) + g["h_logdet"]
                + (g["h_logdet_a"] if reml else 0.0))
    return dev, grad, hess, {"beta": g["beta"], "s2": s2, "xhx": g["a"], "rss": rss}


def _newton_polish(theta: np.ndarray, ns: NestedStats, t: np.ndarray, reml: bool, dirs: tuple[int, ...]
                   ) -> tuple[np.ndarray, bool]:
    """Newton steps theta_I -= (D_II)^{-1} D_I on the coordinates I of theta[dirs] inside the boundary, from a
    point the optimiser left (it stops where the criterion's rounding noise, ~1e-9 absolute, hides progress;
    the exact gradient still points on). Returns theta and whether it is a stationary point: Newton decrement
    D_I' (D_II)^{-1} D_I <= 1e-8 with D_II positive definite, and no boundary coordinate whose gradient is
    negative by more than that decrement's worth, D_i < 0 with D_i^2/D_ii > 1e-8."""
    th = theta.copy()
    idx = np.array(dirs)
    for _ in range(8):
        dev, grad, hess, _ = _profiled_deviance(th, ns, t, reml=reml, dirs=dirs, order=2)
        inner = th[idx] > 0
        bnd = ~inner
        d = np.diag(hess)
        kkt = bool(np.all((grad[bnd] >= 0) | (grad[bnd] ** 2 <= 1e-8 * np.maximum(d[bnd], 1e-300))))
        if not inner.any():
            return th, kkt
        gi, hi = grad[inner], hess[np.ix_(inner, inner)]
        try:
            chol = np.linalg.cholesky(hi)
        except np.linalg.LinAlgError:
            return th, False
        step = -np.linalg.solve(chol.T, np.linalg.solve(chol, gi))
        dec = -float(gi @ step)
        if dec <= 1e-24 * max(1.0, abs(dev)):
            return th, kkt
        trial = th.copy()
        trial[idx[inner]] += step
        if np.any(trial[idx[inner]] <= 0) or _profiled_deviance(trial, ns, t, reml=reml, order=0)[0] > (
                dev + 1e-13 * max(1.0, abs(dev))):
            return th, kkt and dec <= 1e-8
        th = trial
    return th, kkt and dec <= 1e-8


@dataclass(frozen=True, slots=True)
class NestedFit:
    theta: np.ndarray      # relative variances (scenario, model_scenario, generation)
    s2: float
    beta: np.ndarray
    cov_beta: np.ndarray
    deviance: float
    converged: bool
    n_evaluations: int


def fit_nested(ns: NestedStats, t: np.ndarray, *, reml: bool = True) -> NestedFit:
    """Minimise the profiled criterion over sqrt(theta) >= 0 (generation fixed at 0 when not identifiable).

    L-BFGS-B with the exact gradient of :func:`_profiled_deviance` (x = sqrt(theta): d/dx = 2 x d/dtheta) from
    two starts, values below 1e-8 snapped to 0 when that does not worsen the criterion, then exact Newton
    steps on the inner coordinates (:func:`_newton_polish`). Converged: L-BFGS-B reported it, or the polished
    point is stationary (Newton decrement <= 1e-8, boundary gradients not negative). ``n_evaluations`` counts
    the optimiser's evaluations over the starts tried.
    """
    free = np.array([True, True, ns.has_generation])
    dirs = tuple(int(i) for i in np.flatnonzero(free))

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        th = np.zeros(3)
        th[free] = x**2
        dev, grad, _, _ = _profiled_deviance(th, ns, t, reml=reml, dirs=dirs)
        return dev, 2 * x * grad     # d/dx = 2 x d/dtheta

    best = None
    n_eval = 0
    for x0 in (np.full(free.sum(), 0.7), np.full(free.sum(), 0.1)):
        r = optimize.minimize(fun, x0, method="L-BFGS-B", jac=True, bounds=[(0, None)] * int(free.sum()),
                              options={"ftol": 1e-14, "gtol": 1e-7, "maxiter": 500})
        n_eval += int(r.nfev)
        # snap tiny values to the boundary when that does not worsen the criterion
        x = r.x.copy()
        for i in range(len(x)):
            if 0 < x[i] < 1e-4:
                trial = x.copy()
                trial[i] = 0.0
                if fun(trial)[0] <= r.fun + 1e-9:
                    x = trial
        th = np.zeros(3)
        th[free] = x**2
        th, stationary = _newton_polish(th, ns, t, reml, dirs)
        dev = _profiled_deviance(th, ns, t, reml=reml, order=0)[0]
        ok = bool(r.success or stationary)
        if best is None or dev < best[1]:
            best = (th, dev, ok)
        if ok and r.nit > 0 and np.abs(r.jac).max() < 1e-3:
            break  # one well-converged start is enough
    th, _, converged = best
    dev, _, _, info = _profiled_deviance(th, ns, t, reml=reml, order=0)
    cov = info["s2"] * np.linalg.inv(info["xhx"])
    return NestedFit(theta=th, s2=info["s2"], beta=info["beta"], cov_beta=cov, deviance=dev,
                     converged=converged, n_evaluations=n_eval)


def _deviance_in_variances(v: np.ndarray, ns: NestedStats, t: np.ndarray, free: np.ndarray) -> float:
    """Non-profiled REML deviance at variances v = (s2_eps, s2_a, s2_ms, s2_b)[free]: the function whose exact
    Hessian :func:`_variance_hessian` gives (computed here independently, as its reference)."""
    full = np.zeros(4)
    full[np.r_[True, free]] = v
    s2 = full[0]
    th = full[1:] / s2
    m, logdet = _weighted_gram(th, ns, t)
    q = t.shape[1]
    a, b, c = m[:q, :q], m[:q, q], m[q, q]
    chol = np.linalg.cholesky(a)
    z = np.linalg.solve(chol, b)
    rss = float(c - z @ z)
    n = ns.n_rows
    return (n - q) * math.log(s2) + logdet + 2 * float(np.log(np.diag(chol)).sum()) + rss / s2


def _variance_hessian(fit: NestedFit, ns: NestedStats, t: np.ndarray, free: np.ndarray) -> np.ndarray:
    r"""Exact Hessian of the non-profiled REML deviance in the variances phi = (s2_eps, s2_eps theta[free]).

    D(s2, theta) = nu log s2 + L(theta) + R(theta)/s2 with nu = N - q, L = log|H| + log|X'H^{-1}X| and
    R = rss (derivatives from :func:`_gls_terms`). In (s2, theta): D_s = nu/s2 - R/s2^2,
    D_ss = -nu/s2^2 + 2R/s2^3, D_si = -R_i/s2^2, D_i = L_i + R_i/s2, D_ij = L_ij + R_ij/s2. With
    theta_i = phi_i/phi_0 (J = d(s2, theta)/d phi: row s2 = e_0, row theta_i = (e_i - theta_i e_0)/s2),

        Hess_phi = J' Hess_(s2, theta) J + sum_i D_i d^2 theta_i/d phi^2,
        d^2 theta_i/d phi_0^2 = 2 theta_i/s2^2,  d^2 theta_i/d phi_0 d phi_i = -1/s2^2.
    """
    dirs = tuple(int(i) for i in np.flatnonzero(free))
    nd = len(dirs)
    g = _gls_terms(fit.theta, ns, t, dirs, 2)
    s2, th = fit.s2, fit.theta[list(dirs)]
    nu = ns.n_rows - g["q"]
    r, r1, r2 = g["rss"], g["g_rss"], g["h_rss"]
    d1 = g["g_logdet"] + g["g_logdet_a"] + r1 / s2
    hu = np.empty((nd + 1, nd + 1))
    hu[0, 0] = -nu / s2**2 + 2 * r / s2**3
    hu[0, 1:] = hu[1:, 0] = -r1 / s2**2
    hu[1:, 1:] = g["h_logdet"] + g["h_logdet_a"] + r2 / s2
    jac = np.zeros((nd + 1, nd + 1))
    jac[0, 0] = 1.0
    jac[1:, 0] = -th / s2
    jac[1:, 1:] = np.eye(nd) / s2
    hess = jac.T @ hu @ jac
    hess[0, 0] += float(d1 @ th) * 2 / s2**2
    hess[0, 1:] -= d1 / s2**2
    hess[1:, 0] -= d1 / s2**2
    return hess


def _wald_cov(fit: NestedFit, ns: NestedStats, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Variances (s2_eps, s2_a, s2_ms, s2_b)[free] and the inverse of half the exact Hessian of the REML deviance
    (:func:`_variance_hessian`), over the variances not at the boundary (NaN rows and columns for those)."""
    free = np.array([True, True, ns.has_generation])
    v = np.r_[fit.s2, fit.s2 * fit.theta][np.r_[True, free]]
    k = len(v)
    h = _variance_hessian(fit, ns, t, free)
    boundary = np.r_[False, fit.theta[free] == 0]
    cov = np.full((k, k), np.nan)
    keep = ~boundary
    try:
        cov[np.ix_(keep, keep)] = np.linalg.inv(h[np.ix_(keep, keep)] / 2)
    except np.linalg.LinAlgError:
        pass
    return v, cov


def _effect_row(component: str, g: np.ndarray, cov: np.ndarray, count: int, df: int, level: float, *,
                scale: float = 1.0, view: str = "fixed", note: str = "") -> JointRow:
    """(|g|^2 - tr Cov g)/count (times scale) with the noncentral chi-square interval of the module docstring."""
    raw = (float(g @ g) - float(np.trace(cov))) / count * scale
    est, boundary = (0.0, True) if raw < 0 else (raw, False)
    ev, vec = np.linalg.eigh(cov)
    tol = ev.max() * 1e-9
    nz = ev > tol
    mean_ev = float(ev[nz].mean())
    proj = vec[:, nz].T @ g
    w = float((proj**2 / ev[nz]).sum())
    lo, hi = noncentral_chi2_interval(w, int(nz.sum()), level)
    to_value = mean_ev / count * scale
    se = to_value * math.sqrt(2 * (int(nz.sum()) + 2 * max(w - nz.sum(), 0.0)))
    return JointRow(component, est, lo * to_value, hi * to_value, se,
                        "noncentral chi-square inversion (GLS effects)", view, raw, boundary, True, note)


def _variance_row(component: str, est: float, var: float, level: float, boundary: bool, note: str = ""
                  ) -> JointRow:
    if boundary:
        return JointRow(component, 0.0, _NAN, _NAN, _NAN, "Wald (log scale)", "fixed", 0.0, True, True,
                            (note + "; " if note else "") + "REML optimum at 0: no Wald interval")
    se = math.sqrt(var) if var > 0 else _NAN
    z = float(special.ndtri(1 - (1 - level) / 2))
    f = math.exp(z * se / est) if est > 0 and np.isfinite(se) else _NAN
    return JointRow(component, est, est / f, est * f, se, "Wald (log scale)", "fixed", est, False, True, note)


def _single_thread_blas() -> Any:
    """One BLAS thread while fitting: every product is small, and on a busy machine OpenBLAS's threads made an
    evaluation 20 times slower (41 ms against 2 ms on MentalAlign)."""
    import contextlib

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def fit_joint(source: Any, *, ci_level: float) -> JointFit:
    """Joint REML fit (module docstring) from the joint statistics of ``source`` (a table or a joint unit of
    :func:`cjstats.stats.build_stats`); missing cells, unequal generations and unshared scenarios are fine."""
    with _single_thread_blas():
        return _fit_joint(source, ci_level=ci_level)


def _fit_joint(source: Any, *, ci_level: float) -> JointFit:
    js, _ = joint_stats(source, "compare_models")
    ns = js.for_joint_reml()
    p, k = ns.n_models, ns.n_judges
    check_judges_scored(ns.counts, js.models, js.judge_labels)
    t_full = np.eye(p * k)
    fit = fit_nested(ns, t_full, reml=True)
    beta_raw = fit.beta + np.repeat(ns.shift, k)       # the scores were centred by one constant per model
    beta = beta_raw.reshape(p, k)
    cov = fit.cov_beta
    v, vcov = _wald_cov(fit, ns, t_full)
    free = np.array([True, True, ns.has_generation])
    names = ["residual", "scenario", "model_scenario", "generation"]
    used = [n for n, f in zip(names, np.r_[True, free]) if f]
    level = ci_level
    rows: list[tuple[str, JointRow]] = []
    n_scen_model = np.bincount(ns.group_model, minlength=p)
    a = (1 - level) / 2
    for q, name in enumerate(js.models):
        c = np.zeros(p * k)
        c[q * k:(q + 1) * k] = 1.0 / k
        est = float(c @ beta_raw)
        se = math.sqrt(float(c @ cov @ c))
        df = max(int(n_scen_model[q]) - 1, 1)
        tq = float(special.stdtrit(df, 1 - a))
        rows.append((name, JointRow("mu", est, est - tq * se, est + tq * se, se, "t (GLS, scenarios - 1 df)",
                                        "fixed", est)))
    m1_note = "m = 1: holds s2_model_scenario + s2_generation (generation not separable)"
    for comp in ("scenario", "model_scenario", "generation", "residual"):
        if comp not in used:
            rows.append((JOINT_LABEL, JointRow.not_identifiable(
                comp, "not identifiable: one generation per (model, scenario) (m = 1)")))
            continue
        i = used.index(comp)
        bnd = comp != "residual" and v[i] == 0
        rows.append((JOINT_LABEL, _variance_row(comp, float(v[i]), float(vcov[i, i]), level, bnd,
                                                m1_note if comp == "model_scenario" and not ns.has_generation else "")))
    # judge and judge x model effects of the GLS cell means
    lk = np.eye(k) - 1.0 / k
    lp = np.eye(p) - 1.0 / p
    colmean = np.kron(np.full((1, p), 1.0 / p), np.eye(k))  # (K, PK): judge means
    g_judge = lk @ colmean @ beta_raw
    cov_judge = lk @ colmean @ cov @ colmean.T @ lk
    l_int = np.kron(lp, lk)
    g_int = l_int @ beta_raw
    cov_int = l_int @ cov @ l_int
    dfi = (p - 1) * (k - 1)
    rows.append((JOINT_LABEL, _effect_row("judge_panel", g_judge, cov_judge, k, k - 1, level)))
    jm_panel = _effect_row("judge_model", g_int, cov_int, p * k, dfi, level)
    jm_pop = _effect_row("judge_model", g_int, cov_int, p * k, dfi, level, scale=p * k / dfi, view="random")
    raw_pop_j = (float(g_judge @ g_judge) - float(np.trace(cov_judge))) / (k - 1) - max(jm_pop.raw_estimate, 0) / p
    rows.append((JOINT_LABEL, JointRow("judge_population", max(raw_pop_j, 0.0), _NAN, _NAN, _NAN, "", "random",
                                           raw_pop_j, raw_pop_j < 0, True,
                                           f"judges random: {k} judges give {k - 1} degrees of freedom; no "
                                           f"interval in the joint REML fit (see cj.estimate)")))
    rows.append((JOINT_LABEL, jm_panel))
    rows.append((JOINT_LABEL, jm_pop))
    # likelihood-ratio test of the interaction (ML fits)
    t_add = np.hstack([np.kron(np.eye(p), np.ones((k, 1))),
                       np.kron(np.ones((p, 1)), np.vstack([np.eye(k - 1), -np.ones((1, k - 1))]))])
    ml_full = fit_nested(ns, t_full, reml=False)
    ml_add = fit_nested(ns, t_add, reml=False)
    lr = max(ml_add.deviance - ml_full.deviance, 0.0)
    test = {"test": "LR", "statistic": lr, "df1": dfi, "p_value": float(stats.chi2.sf(lr, dfi)),
            "loglik_full_ml": -ml_full.deviance / 2, "loglik_additive_ml": -ml_add.deviance / 2}
    n_cells, n_groups, n_scen = ns.n_cells, ns.n_groups, ns.n_scenarios
    df_within = ns.n_rows - n_cells - p * (k - 1)
    df_between = n_groups - n_scen - (p - 1)
    s2_jm_pop = max(jm_pop.raw_estimate, 0.0)
    s2_j_pop = max(raw_pop_j, 0.0)

    def contrast_fn(c: np.ndarray, view: str) -> tuple[float, float]:
        cf = c.reshape(-1)
        var = float(cf @ cov @ cf)
        if abs(c.sum()) > 1e-12:
            df = n_scen - 1
        elif np.abs(c.sum(axis=1)).max() > 1e-12:
            df = df_between
        else:
            df = df_within
        if view == "population":
            add = float((c**2).sum()) * s2_jm_pop + float((c.sum(axis=0) ** 2).sum()) * s2_j_pop
            if add > 0:
                df = (var + add) ** 2 / (var**2 / df + add**2 / max(dfi, 1))
                var += add
        return var, float(df)

    diag = {"theta": fit.theta.tolist(), "s2_residual": fit.s2, "reml_deviance": fit.deviance,
            "converged": fit.converged, "n_evaluations": fit.n_evaluations, "n": n_scen, "p": p, "k": k,
            "n_cells": n_cells, "has_generation": ns.has_generation, "cell_counts": ns.counts.reshape(p, k),
            "df_within": df_within, "df_between": df_between}
    if not fit.converged:
        import warnings

        warnings.warn("The joint REML optimiser did not report convergence; check diagnostics['converged'].",
                      CjstatsWarning, stacklevel=2)
    return JointFit(method="reml", models=js.models, judges=js.judge_labels, cell_means=beta,
                    components=components_frame(rows, method="reml", ci_level=ci_level),
                    tests={"judge_model": test}, ci_level=ci_level, diagnostics=diag, contrast_fn=contrast_fn)
