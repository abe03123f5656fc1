r"""The nested generation effect of the ML ordinal model: several generations per scenario (m > 1).

Model (row r: scenario i, generation cell c = (i, j), judge l):

    P(Y_r <= k | alpha_i, beta_c) = F(theta_k - gamma_l - alpha_i - beta_c),
    alpha_i ~ N(0, s_a^2),   beta_c ~ N(0, s_b^2)   (scenario x generation, within the model),

so the marginal likelihood of scenario i is

    L_i = int N(a; 0, s_a^2) prod_{c in i} [ int N(b; 0, s_b^2) prod_{r in c} P(Y_r | a + b) db ] da,

an (1 + m_i)-dimensional integral. It is computed by the Laplace approximation of the joint (a, b_i.) integral
(the definition ``ordinal::clmm`` uses with two random terms; Christensen 2019; Pinheiro & Bates 1995):

    log L_i ~= G_i(a*, b*) + (1 + m_i)/2 log(2 pi) - 1/2 log det H_i,

G_i the log integrand, (a*, b*) its mode and H_i = -G_i''. H_i is arrow-shaped: with D1_c, D2_c the sums of
the rows' first and second derivatives of log P in eta over cell c,

    H_aa = 1/s_a^2 - sum_c D2_c,   H_{a b_c} = -D2_c =: v_c,   H_{b_c b_c} = 1/s_b^2 - D2_c =: w_c  (diagonal),

so det H_i = prod_c w_c (H_aa - sum_c v_c^2 / w_c) (Schur complement) and the Newton step solves in O(m_i):
da = (g_a - sum_c v_c g_c / w_c) / S, db_c = (g_c - v_c da) / w_c, S the Schur complement. All scenarios and
cells are one vectorised array (per-cell and per-scenario sums by ``np.bincount``); G_i is concave (log-concave
links), so a Newton step halved where G_i would decrease converges.

Optimiser parameters: the m = 1 vector of :mod:`.likelihood` (log s_a, reference-coded gamma, thresholds) with
``log s_b`` appended last, so :func:`.likelihood.unpack` and ``_bounds`` read ``x[:-1]``. The gradient is analytic
(:func:`laplace_grad`: the envelope theorem for G at the mode plus d/dx of 1/2 log det H, which moves directly with
x and through the mode, dz*/dx = H^-1 G_zx; one arrow solve per scenario and one pass of the third-order link
partials, O(rows + cells)). It equals the central difference of -log L to ~1e-8 (gradients of size 6-63;
tests/estimators/test_ordinal_ml_nested_grad.py) and costs about one Laplace evaluation instead of 2 dim(x) of
them; the fits equal those with the central difference (``gradient="fd"``, kept reachable) to the optimiser's
precision. The observed information is the central difference of the gradient (step 1e-4 (1 + |x_j|)).
Measured (``benchmarks/bench_ordinal_nested.py``, 2 shared cores, load ~2.7): ``cj.estimate(..., method="ordinal")``
on 80 scenarios x 10 generations x 5 judges, 1-10 (4,000 rows, 15 parameters) 0.13 s (1.67 s with the central
difference), with ``interval="profile"`` 1.3 s (18 s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cjstats import _dist
from cjstats.estimators.ordinal_ml.likelihood import OrdinalProblem, _bounds, make_problem
from cjstats.estimators.ordinal_ml.links import log_prob
from cjstats.estimators.ordinal_ml.numdiff import central_difference

__all__ = ["NestedProblem", "make_nested", "joint_modes", "mode_curvatures", "laplace_neg_loglik", "laplace_grad", "fit_nested",
           "profile_nested", "GRADIENTS"]

_LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class NestedProblem:
    """An :class:`OrdinalProblem` (its ``nagq`` is ignored: Laplace) plus the generation cells of the rows."""

    base: OrdinalProblem
    cell: np.ndarray              # (N,) 0..C-1
    cell_scenario: np.ndarray     # (C,) scenario of each cell
    n_cells: int

    @property
    def n_params(self) -> int:
        return self.base.n_params + 1


def make_nested(category, scenario, cell, judge, cell_scenario, *, n_scenarios: int, n_judges: int,
                n_categories: int, link: str, thresholds: str) -> NestedProblem:
    base = make_problem(category, scenario, judge, n_scenarios=n_scenarios, n_judges=n_judges,
                        n_categories=n_categories, link=link, thresholds=thresholds, nagq=1)
    cs = np.asarray(cell_scenario, dtype=np.int64)
    return NestedProblem(base, np.asarray(cell, dtype=np.int64), cs, int(cs.size))


def _parts(q: NestedProblem, x: np.ndarray):
    x = np.asarray(x, dtype=np.float64)
    s_a, u0, lo0 = _bounds(q.base, x[:-1])
    return s_a * s_a, math.exp(2.0 * x[-1]), u0, lo0


def _joint(q: NestedProblem, u0, lo0, a, b, s2a, s2b, derivatives: bool):
    """G_i per scenario and, with ``derivatives``, (g_a, g_b, D2 per cell)."""
    p = q.base
    eta = a[p.scenario] + b[q.cell]
    lp, d1, d2 = log_prob(u0 - eta, lo0 - eta, p.link, derivatives=2 if derivatives else 0)
    n = p.n_scenarios
    m_i = np.bincount(q.cell_scenario, minlength=n)
    G = (np.bincount(p.scenario, weights=lp, minlength=n) - 0.5 * a * a / s2a - 0.5 * (_LOG_2PI + math.log(s2a))
         - 0.5 * np.bincount(q.cell_scenario, weights=b * b, minlength=n) / s2b
         - 0.5 * m_i * (_LOG_2PI + math.log(s2b)))
    if not derivatives:
        return G, None, None, None
    D1 = np.bincount(q.cell, weights=d1, minlength=q.n_cells)
    D2 = np.bincount(q.cell, weights=d2, minlength=q.n_cells)
    ga = np.bincount(q.cell_scenario, weights=D1, minlength=n) - a / s2a
    gb = D1 - b / s2b
    return G, ga, gb, D2


def _arrow(q: NestedProblem, D2, s2a, s2b):
    """(H_aa per scenario, v per cell, w per cell, Schur complement S per scenario, log det H per scenario)."""
    n = q.base.n_scenarios
    v = -D2
    w = 1.0 / s2b + v
    haa = 1.0 / s2a + np.bincount(q.cell_scenario, weights=v, minlength=n)
    S = haa - np.bincount(q.cell_scenario, weights=v * v / w, minlength=n)
    logdet = np.log(S) + np.bincount(q.cell_scenario, weights=np.log(w), minlength=n)
    return haa, v, w, S, logdet


def joint_modes(q: NestedProblem, x: np.ndarray, a0: np.ndarray | None = None, b0: np.ndarray | None = None,
                *, tol: float = 1e-11, max_iter: int = 100):
    """The joint mode (a*, b*) of every scenario (vectorised Newton on the arrow-shaped Hessian, step halving
    per scenario), warm-started at (a0, b0); returns (a, b, G at the mode, log det H)."""
    s2a, s2b, u0, lo0 = _parts(q, x)
    n = q.base.n_scenarios
    a = np.zeros(n) if a0 is None else np.array(a0, dtype=np.float64)
    b = np.zeros(q.n_cells) if b0 is None else np.array(b0, dtype=np.float64)
    G, ga, gb, D2 = _joint(q, u0, lo0, a, b, s2a, s2b, True)
    if not np.all(np.isfinite(G)):
        a[:], b[:] = 0.0, 0.0
        G, ga, gb, D2 = _joint(q, u0, lo0, a, b, s2a, s2b, True)
    cs = q.cell_scenario
    for _ in range(max_iter):
        _, v, w, S, _ = _arrow(q, D2, s2a, s2b)
        da = (ga - np.bincount(cs, weights=v * gb / w, minlength=n)) / S
        db = (gb - v * da[cs]) / w
        t = np.ones(n)
        for _half in range(50):
            na, nb = a + t * da, b + t[cs] * db
            Gn, gan, gbn, D2n = _joint(q, u0, lo0, na, nb, s2a, s2b, True)
            bad = ~(Gn >= G - 1e-13 * np.abs(G))
            if not bad.any():
                break
            t = np.where(bad, 0.5 * t, t)
        a, b, G, ga, gb, D2 = na, nb, Gn, gan, gbn, D2n
        step = max(float(np.max(np.abs(t * da))), float(np.max(np.abs(t[cs] * db))) if db.size else 0.0)
        if step < tol:
            break
    logdet = _arrow(q, D2, s2a, s2b)[4]
    return a, b, G, logdet


def mode_curvatures(q: NestedProblem, x: np.ndarray, a0: np.ndarray | None = None, b0: np.ndarray | None = None):
    """At the joint modes of x: (a*, b*, s_a^2, s_b^2, u0, lo0, v, w, S): the modes, the variances, the rows'
    bounds before the effects, and the arrow Hessian's v_c = -D2_c, w_c = 1/s_b^2 + v_c and Schur complement S_i
    (module docstring); what a quadrature centred on the Laplace modes needs (the joint model's nested AGQ)."""
    a, b, _, _ = joint_modes(q, x, a0, b0)
    s2a, s2b, u0, lo0 = _parts(q, x)
    _, _, _, D2 = _joint(q, u0, lo0, a, b, s2a, s2b, True)
    _, v, w, S, _ = _arrow(q, D2, s2a, s2b)
    return a, b, s2a, s2b, u0, lo0, v, w, S


def laplace_grad(q: NestedProblem, x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r"""The exact gradient in x of -log L (Laplace, :func:`laplace_neg_loglik`) at the joint modes (a, b) of x
    (from :func:`joint_modes`: G_z = 0 there).

    Per scenario, z = (a, b_1..b_m) and log L_i = G(z*; x) + (1 + m)/2 log 2 pi - 1/2 log det H(z*; x). With
    dz*/dx = H^-1 G_zx (implicit differentiation of G_z(z*(x); x) = 0) the G term moves only directly (envelope
    theorem) and

        d log L_i / dx = G_x - 1/2 [ tr(H^-1 dH/dx |_z) + t' H^-1 G_zx ],   t_k = d log det H / dz_k |_x.

    Every row r of cell c has eta_r = a + b_c, so H = diag(1/s_a^2, 1/s_b^2, ..) - sum_c D2_c e_c e_c' with
    e_c = e_a + e_{b_c}, and with D3_c = sum_{r in c} d^3 log P_r / deta^3 and the arrow inverse
    (S the Schur complement, v_c = -D2_c, w_c = 1/s_b^2 + v_c):

        [H^-1]_aa = 1/S,   [H^-1]_{b_c b_c} = 1/w_c + v_c^2/(w_c^2 S),
        q_c = e_c' H^-1 e_c = 1/w_c + (1 - v_c/w_c)^2 / S,
        tr(H^-1 dH) = -2 dlog s_a [H^-1]_aa / s_a^2 - 2 dlog s_b sum_c [H^-1]_cc / s_b^2 - sum_c q_c dD2_c|_eta,
        t_a = -sum_c q_c D3_c,   t_{b_c} = -q_c D3_c,

    and lambda = H^-1 t is one arrow solve (as the Newton step), so t' H^-1 G_zx = d(lambda' G_z)/dx at fixed z:
    lambda' G_z = sum_c (lambda_a + lambda_c) D1_c - lambda_a a / s_a^2 - sum_c lambda_c b_c / s_b^2. In the row
    bounds u0 = theta_k - gamma_l, lo0 = theta_{k-1} - gamma_l (eta-derivatives d/deta = -(d/du + d/dlo) =: -D,
    partials from :func:`.links.log_prob_partials`: d1 = -(lp_u + lp_l), d2 = lp_uD + lp_lD,
    d3 = -(lp_uDD + lp_lDD); d d1/du0 = -lp_uD, d d2/du0 = lp_uDD, likewise for lo0):

        d log L_i / du0_r = lp_u + 1/2 q_c lp_uDD + 1/2 (lambda_a + lambda_c) lp_uD     (lo0: lp_l, lp_lDD, lp_lD),
        d log L_i / dlog s_a = a^2/s_a^2 - 1 + 1/(s_a^2 S) - lambda_a a / s_a^2,
        d log L_i / dlog s_b = sum_c [b_c^2/s_b^2 - 1 + [H^-1]_cc / s_b^2 - lambda_c b_c / s_b^2],

    then the chain rule to (gamma, thresholds) by :func:`.likelihood._accumulate`. O(rows + cells): one pass of
    the third-order link partials at the modes. For one cell per scenario and s_b -> 0 this is the m = 1 Laplace
    derivative of :func:`.likelihood.agq_value_and_grad`. Reference: Pinheiro & Bates (1995); Shun & McCullagh
    (1995) for the Laplace expansion; the implicit-function argument is that of the m = 1 code.
    """
    from cjstats.estimators.ordinal_ml.likelihood import _accumulate
    from cjstats.estimators.ordinal_ml.links import log_prob_partials

    x = np.asarray(x, dtype=np.float64)
    p = q.base
    s2a, s2b, u0, lo0 = _parts(q, x)
    n, cs = p.n_scenarios, q.cell_scenario
    eta = a[p.scenario] + b[q.cell]
    part = log_prob_partials(u0 - eta, lo0 - eta, p.link, order=3)
    D2 = np.bincount(q.cell, weights=part["uD"] + part["lD"], minlength=q.n_cells)
    D3 = -np.bincount(q.cell, weights=part["uDD"] + part["lDD"], minlength=q.n_cells)
    _, v, w, S, _ = _arrow(q, D2, s2a, s2b)
    Sc = S[cs]
    hinv_bb = 1.0 / w + v * v / (w * w * Sc)
    qc = 1.0 / w + (1.0 - v / w) ** 2 / Sc
    t_b = -qc * D3
    t_a = np.bincount(cs, weights=t_b, minlength=n)
    lam_a = (t_a - np.bincount(cs, weights=v * t_b / w, minlength=n)) / S
    lam_b = (t_b - v * lam_a[cs]) / w
    cr = q.cell
    lam_r = (lam_a[cs] + lam_b)[cr]
    w_u = part["u"] + 0.5 * qc[cr] * part["uDD"] + 0.5 * lam_r * part["uD"]
    w_l = part["l"] + 0.5 * qc[cr] * part["lDD"] + 0.5 * lam_r * part["lD"]
    d_log_sa = float(np.sum(a * a / s2a - 1.0 + 1.0 / (s2a * S) - lam_a * a / s2a))
    d_log_sb = float(np.sum(b * b / s2b - 1.0 + hinv_bb / s2b - lam_b * b / s2b))
    return -np.concatenate([_accumulate(p, x[:-1], w_u, w_l, d_log_sa), [d_log_sb]])


def laplace_neg_loglik(q: NestedProblem, x: np.ndarray, a0=None, b0=None):
    """-log L by the Laplace approximation of each scenario's joint (a, b) integral; returns (value, a, b)."""
    a, b, G, logdet = joint_modes(q, x, a0, b0)
    m_i = np.bincount(q.cell_scenario, minlength=q.base.n_scenarios)
    li = G + 0.5 * (1.0 + m_i) * _LOG_2PI - 0.5 * logdet
    val = float(-np.sum(li))
    return (val if np.isfinite(val) else math.inf), a, b


#: The nested objective's gradient: ``"analytic"`` (:func:`laplace_grad`) or ``"fd"`` (central differences of
#: the Laplace -log L, step 1e-5: 2 dim(x) Laplace evaluations per gradient; kept for tests and benchmarks).
GRADIENTS = ("analytic", "fd")


class _NestedObjective:
    """-log L (Laplace) and its gradient (``gradient="analytic"``, the default: :func:`laplace_grad` at the joint
    modes; ``"fd"``: central differences), the joint modes warm-started from the last point whose gradient was
    taken."""

    def __init__(self, q: NestedProblem, gradient: str = "analytic") -> None:
        if gradient not in GRADIENTS:
            raise ValueError(f"gradient must be one of {GRADIENTS}, not {gradient!r}")
        self.q = q
        self.gradient = gradient
        self.a = np.zeros(q.base.n_scenarios)
        self.b = np.zeros(q.n_cells)
        self.n_eval = 0

    def __call__(self, x: np.ndarray) -> float:
        self.n_eval += 1
        return laplace_neg_loglik(self.q, x, self.a, self.b)[0]

    def value_and_grad(self, x: np.ndarray, h: float = 1e-5) -> tuple[float, np.ndarray]:
        x = np.asarray(x, dtype=np.float64)
        f, a, b = laplace_neg_loglik(self.q, x, self.a, self.b)
        self.n_eval += 1
        if not math.isfinite(f):
            return math.inf, np.full(x.size, np.nan)
        if np.all(np.isfinite(a)) and np.all(np.isfinite(b)):
            self.a, self.b = a, b
        if self.gradient == "analytic":
            return f, laplace_grad(self.q, x, a, b)
        return f, central_difference(self, x, h)   # every evaluation warm-started at x's modes

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.value_and_grad(x)[1]

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """Central differences of the gradient (analytic, or central-difference with ``gradient="fd"``), step
        1e-4 (1 + |x_j|), symmetrised; the warm-start modes are restored to those at entry after each coordinate
        (each gradient call moves them)."""
        x = np.asarray(x, dtype=np.float64)
        a0, b0 = self.a.copy(), self.b.copy()

        def restore() -> None:
            self.a, self.b = a0, b0

        hess = central_difference(self.grad, x, 1e-4, relative=True, after_each=restore)
        return 0.5 * (hess + hess.T)


def fit_nested(q: NestedProblem, x0: np.ndarray | None = None, *, hessian: bool = True,
               gradient: str = "analytic", fixed: dict[int, float] | None = None):
    """Maximise the Laplace marginal likelihood of one unit with a generation effect (L-BFGS-B on the analytic
    gradient :func:`laplace_grad` -- ``gradient="fd"``: on its central difference --, then Newton polish on the
    observed information, as :func:`.optimise.fit_problem`). Returns a :class:`.optimise.UnitFit` whose ``x`` ends
    with log s_b; ``at_boundary`` is about s_a and ``extra["generation_at_boundary"]`` about s_b."""
    from scipy.optimize import minimize

    from cjstats._blas import single_thread_blas
    from cjstats.estimators.ordinal_ml.optimise import LOG_S_BOUNDS, UnitFit, kkt_check, newton_polish, start_values

    with single_thread_blas():
        obj = _NestedObjective(q, gradient)
        if x0 is None:
            x0 = np.concatenate([start_values(q.base), [math.log(0.5)]])
        fixed = dict(fixed or {})
        x0 = np.asarray(x0, dtype=np.float64).copy()
        bounds = [LOG_S_BOUNDS] + [(None, None)] * (x0.size - 2) + [LOG_S_BOUNDS]
        for i, v in fixed.items():      # equal bounds hold an entry where it is (per-judge threshold limits)
            x0[i] = v
            bounds[i] = (v, v)

        def fg(z):
            f, g = obj.value_and_grad(z)
            return (1e300, np.zeros_like(z)) if not math.isfinite(f) else (f, g)

        res = minimize(fg, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": 1000, "ftol": 1e-14, "gtol": 1e-7, "maxcor": 20})
        x = res.x.copy()
        f = obj.value_and_grad(x)[0]
        at = [x[0] <= LOG_S_BOUNDS[0] + 1e-6, x[-1] <= LOG_S_BOUNDS[0] + 1e-6]
        free = np.array([i for i in range(x.size) if not ((i == 0 and at[0]) or (i == x.size - 1 and at[1]))
                         and i not in fixed], dtype=np.int64)
        hess = obj.hessian(x) if hessian else np.full((x.size, x.size), np.nan)
        x, f = newton_polish(obj, x, f, hess, free, steps=3 if hessian else 0)
        g = obj.grad(x)
        gnorm = float(np.max(np.abs(g[free])))
    converged, why = kkt_check(f, g, hess, free, res) if hessian else (bool(gnorm < 1e-3 and math.isfinite(f)), "")
    msg = (f"L-BFGS-B: {res.message}; max |gradient| {gnorm:.2g}"
           + (" (finite differences)" if gradient == "fd" else "")
           + (f"; not converged: {why}" if why else "")
           + ("; s_a at its lower bound (a boundary estimate)" if at[0] else "")
           + ("; s_b at its lower bound (generation variance ~0: a boundary estimate)" if at[1] else ""))
    return UnitFit(x=x, loglik=-f, hessian=hess, grad_norm=gnorm, converged=converged, at_boundary=bool(at[0]),
                   message=msg, n_eval=obj.n_eval, modes=obj.a.copy(),
                   extra={"generation_at_boundary": bool(at[1]), "cell_modes": obj.b.copy(),
                          "n_scenarios": q.base.n_scenarios,
                          "fixed": sorted(int(i) for i in fixed)})


def profile_nested(q: NestedProblem, fit, level: float, index: int, *, at_boundary: bool = False,
                   gradient: str = "analytic") -> tuple[float, float]:
    """Profile-likelihood interval for s_a^2 (``index`` 0) or s_b^2 (``index`` -1): {s^2 : 2 (l_max - l_p(s)) <=
    chi2_1(level)}, each profile point an L-BFGS-B fit with that log s held fixed (equal bounds); the lower limit
    is 0 when the profile at the lower bound of s stays inside (always checked for a boundary estimate)."""
    from scipy.optimize import brentq, minimize
    from cjstats._blas import single_thread_blas
    from cjstats.estimators.ordinal_ml.optimise import LOG_S_BOUNDS

    crit = float(_dist.chi2_ppf(level, 1))
    obj = _NestedObjective(q, gradient)
    idx = index % fit.x.size
    warm = [fit.x.copy()]

    def dev(log_s: float) -> float:
        x0 = warm[0].copy()
        x0[idx] = log_s
        bounds = [LOG_S_BOUNDS] + [(None, None)] * (x0.size - 2) + [LOG_S_BOUNDS]
        for i in fit.extra.get("fixed", ()):
            bounds[i] = (float(fit.x[i]), float(fit.x[i]))
        bounds[idx] = (log_s, log_s)

        def fg(z):
            f, g = obj.value_and_grad(z)
            return (1e300, np.zeros_like(z)) if not math.isfinite(f) else (f, g)

        res = minimize(fg, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": 500, "ftol": 1e-12, "gtol": 1e-6})
        warm[0] = res.x.copy()
        return 2.0 * (fit.loglik + float(res.fun)) - crit

    with single_thread_blas():
        l0 = float(fit.x[idx])
        cov = np.linalg.pinv(fit.hessian) if np.all(np.isfinite(fit.hessian)) else None
        se = math.sqrt(max(cov[idx, idx], 1e-8)) if cov is not None and not at_boundary else 0.5
        step = min(max(se, 0.05), 1.0)
        hi = min(l0 + step, LOG_S_BOUNDS[1])
        while dev(hi) < 0 and hi < LOG_S_BOUNDS[1]:
            hi = min(hi + 2 * step, LOG_S_BOUNDS[1])
        warm[0] = fit.x.copy()
        upper = brentq(dev, l0, hi, xtol=1e-3) if dev(hi) > 0 else LOG_S_BOUNDS[1]
        warm[0] = fit.x.copy()
        if at_boundary:
            lower = -math.inf
        else:
            lo = l0 - step
            lower = None
            while dev(lo) < 0:
                if lo <= LOG_S_BOUNDS[0] + 1e-9:
                    lower = -math.inf
                    break
                lo = max(lo - 2 * step, LOG_S_BOUNDS[0])
            if lower is None:
                warm[0] = fit.x.copy()
                lower = brentq(dev, lo, l0, xtol=1e-3)
    return (0.0 if lower == -math.inf else math.exp(2 * lower)), math.exp(2 * upper)
