r"""Structured REML for the crossed judge model in O(rows): the numerical core of the ``reml`` backend.

Model (paper Eq. 1, ``eq:model``), one evaluated model (and criterion) at a time::

    y = X beta + Z_s alpha + Z_c b + e,
    alpha ~ N(0, s2_scenario I), b ~ N(0, s2_generation I), e ~ N(0, s2_residual I)

with X the judge columns (intercept plus sum-to-zero contrasts, the paper's mu and gamma_l), Z_s the scenario
indicators and Z_c the (scenario, generation) cell indicators. Write V = s2_residual H with relative variances
theta_a = s2_scenario/s2_residual and theta_b = s2_generation/s2_residual. H is block-diagonal by scenario; inside a
block it is I + theta_b (cell blocks of ones) + theta_a (one block of ones): two-level compound symmetry.

Two Woodbury steps invert it exactly. For a cell c with n_c rows, A_c = I + theta_b 1 1' has
A_c^{-1} = I - f_c 1 1' with f_c = theta_b/(1 + theta_b n_c) and |A_c| = 1 + theta_b n_c. For scenario i,
H_i = A_i + theta_a 1 1' gives, with a_c = 1/(1 + theta_b n_c), W_i = sum_c a_c n_c and g_i = theta_a/(1 + theta_a W_i),

    u' H_i^{-1} v = u'v - sum_c f_c U_c V_c - g_i (sum_c a_c U_c)(sum_c a_c V_c),
    log|H_i|      = sum_c log(1 + theta_b n_c) + log(1 + theta_a W_i),

where U_c, V_c are cell sums. With J the (rows x K) judge indicators, every REML quantity is a function of
M = J'H^{-1}J (K x K), b = J'H^{-1}y, c = y'H^{-1}y and log|H|. These need only per-cell counts, per-cell judge
counts, per-cell sums of y and sum(y^2): after one O(rows) pass, one evaluation costs O(n_scenarios K^2).

Fixed judges (the ``view="panel"`` components): X = J C with C = [1 | contr.sum], p = K columns, so
X'H^{-1}X = C'MC, the judge means are eta = M^{-1} b and the REML criterion, with s2_residual profiled out, is

    -2 l_R(theta) = (N - K) (1 + log(2 pi rss/(N - K))) + log|H| + log|C'MC|,   rss = c - b'M^{-1}b,

the same number as lme4's ``REMLcrit`` for ``lmer(score ~ judge + (1|scenario) + (1|scenario:generation))``
under ``contr.sum``.

Random judges (``judge_population``): add u ~ N(0, s2_judge I) on J and keep only the intercept fixed. With
T = I + theta_j M, Woodbury gives J'H_R^{-1}J = M T^{-1}, J'H_R^{-1}y = T^{-1}b, y'H_R^{-1}y = c - theta_j b'T^{-1}b and
log|H_R| = log|H| + log|T|, so the crossed random-judge REML (lme4's ``(1|judge)``) costs the same.

Cells are grouped by size (at most K distinct sizes S), so an evaluation costs O(n_scenarios S K + S K^2);
scenarios that share their cell and judge counts share every weight above, so the sums over scenarios are
taken per such pattern (:class:`ScenarioPatterns`: a balanced table is one pattern), and an evaluation costs
O(patterns (K^2 + S^2)) after one pass over the scenarios.
The criterion is minimised over theta >= 0 by projected quasi-Newton steps (analytic gradient; a Hessian from
its differences, then BFGS updates), and every boundary face is checked: a variance whose optimum is
theta = 0 is reported as exactly 0 (lme4's ``isSingular``). The Wald standard errors come from the exact
Hessian of the criterion in the variances (the Woodbury formulas differentiated twice, ``variance_hessian``),
so they are as reproducible as the estimates. Profile-likelihood intervals re-optimise the
other variances at each point of a secant search on the standard-deviation scale (``profile_interval``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dpotri as _potri
from scipy.sparse import csgraph

from cjstats.estimators.reml import engine
from cjstats.estimators.reml.engine import FitResult, wald_covariance
from cjstats.stats.cellstats import size_class_products, sumprod
from cjstats.stats.views import Design, YStats, pattern_codes, pattern_moments

__all__ = ["Design", "Evaluator", "ScenarioPatterns", "scenario_patterns", "fixed_effects", "FitResult", "YStats", "build_design", "contr_sum_coding", "fit_model",
           "ModelCriterion", "moment_start", "profile_interval", "variance_hessian", "wald_covariance", "within_cell_rss", "y_stats"]

_LOG2PI = math.log(2.0 * math.pi)


def contr_sum_coding(k: int) -> np.ndarray:
    """C = [1 | contr.sum(K)] (K x K): the fixed-effect columns X = J C, intercept = mean of judge means."""
    c = np.zeros((k, k))
    c[:, 0] = 1.0
    c[: k - 1, 1:] = np.eye(k - 1)
    c[k - 1, 1:] = -1.0
    return c


# ------------------------------------------------------------------------------------------------ design
# Design and YStats live in the statistics layer (cjstats.stats.views), which builds them without rows;
# build_design and y_stats below build them from one group's rows (the reference the views are tested against).


def build_design(cell: np.ndarray, judge: np.ndarray, cell_scenario: np.ndarray, k: int) -> Design:
    """One O(rows) pass over the layout of a group (see :class:`Design`)."""
    cell = np.asarray(cell, dtype=np.int64)
    judge = np.asarray(judge, dtype=np.int64)
    cell_scen = np.asarray(cell_scenario, dtype=np.int64)
    n_cells = int(cell_scen.shape[0])
    n_scen = int(cell_scen.max()) + 1
    cell_n = np.bincount(cell, minlength=n_cells)
    sizes, cell_size_idx = np.unique(cell_n, return_inverse=True)
    n_s = sizes.shape[0]
    d_cell = np.bincount(cell * k + judge, minlength=n_cells * k).reshape(n_cells, k).astype(np.float64)
    dd = np.empty((n_s, k, k))
    for s in range(n_s):
        sel = d_cell[cell_size_idx == s]
        dd[s] = sel.T @ sel
    key = (cell_scen * n_s + cell_size_idx)
    s_isk = np.zeros((n_scen * n_s, k))
    _add_rows(s_isk, key, d_cell)
    cnt = np.bincount(key, minlength=n_scen * n_s).astype(np.float64)
    m_per = np.bincount(cell_scen, minlength=n_scen)
    edges = sparse.coo_matrix((np.ones(cell.shape[0]), (cell, n_cells + judge)), shape=(n_cells + k,) * 2)
    n_linked = int(csgraph.connected_components(edges, directed=False, return_labels=False))
    return Design(
        n_obs=int(cell.shape[0]), n_scen=n_scen, n_cells=n_cells, k=k, sizes=sizes.astype(np.float64),
        size_cells=np.bincount(cell_size_idx, minlength=n_s).astype(np.float64), dd=dd,
        judge_n=np.bincount(judge, minlength=k).astype(np.float64), s_isk=s_isk.reshape(n_scen, n_s, k),
        cnt_is=cnt.reshape(n_scen, n_s), cell_size_idx=cell_size_idx, cell_scen=cell_scen, d_cell=d_cell,
        row_cell=cell, row_judge=judge, has_generation=bool(m_per.max() >= 2), n_linked=n_linked,
    )


def _add_rows(out: np.ndarray, key: np.ndarray, vals: np.ndarray) -> None:
    """out[key[i]] += vals[i] for every row i (one bincount per column: faster than np.add.at)."""
    for j in range(vals.shape[1]):
        out[:, j] += np.bincount(key, weights=vals[:, j], minlength=out.shape[0])


def y_stats(d: Design, y: np.ndarray, shift: np.ndarray | None = None) -> YStats:
    """Sufficient statistics of the scores ``y`` (rows in the layout of ``d``)."""
    y = np.asarray(y, dtype=np.float64)
    if shift is None:
        shift = np.bincount(d.row_judge, weights=y, minlength=d.k) / d.judge_n
    y0 = y - shift[d.row_judge]
    ysum = np.bincount(d.row_cell, weights=y0, minlength=d.n_cells)
    n_s = d.sizes.shape[0]
    dy, yyc = size_class_products(ysum, d.d_cell.T, d.cell_size_idx, n_s, d.k)
    ys = np.bincount(d.cell_scen * n_s + d.cell_size_idx, weights=ysum, minlength=d.n_scen * n_s)
    return YStats(shift=np.asarray(shift, dtype=np.float64), dy=dy, yyc=yyc, ys=ys.reshape(d.n_scen, n_s),
                  judge_sum=np.bincount(d.row_judge, weights=y0, minlength=d.k), yy=sumprod(y0, y0), cell_sum=ysum)


def within_cell_rss(d: Design, y: np.ndarray) -> tuple[float, float]:
    """Residual sum of squares of the fixed-effects fit y ~ cell + judge, and the within-cell sum of squares.

    With y_w = y - (its cell mean) and J_w the judge indicators centred within cells: J_w'J_w = diag(n_l) -
    sum_c D_c D_c'/n_c, J_w'y_w = J'y_w, and RSS = y_w'y_w - b'(J_w'J_w)^+ b with b = J'y_w. It is what the
    residual variance is estimated from; zero means the scores are exactly additive. y_w is formed directly,
    so rounding is relative to the within-cell variation, not to the spread of the cell means (a residual SD
    1e-6 of the scenario SD is still seen).
    """
    y = np.asarray(y, dtype=np.float64)
    cell_n = d.sizes[d.cell_size_idx]
    yw = y - (np.bincount(d.row_cell, weights=y, minlength=d.n_cells) / cell_n)[d.row_cell]
    jj = np.diag(d.judge_n) - np.tensordot(1.0 / d.sizes, d.dd, axes=1)
    jy = np.bincount(d.row_judge, weights=yw, minlength=d.k)
    within = float(yw @ yw)
    rss = within - float(jy @ np.linalg.pinv(jj, rtol=1e-10, hermitian=True) @ jy)   # see CellStats.within_cell_rss
    return max(rss, 0.0), within


# -------------------------------------------------------------------------------- scenario patterns
@dataclass(frozen=True, slots=True)
class ScenarioPatterns:
    r"""Scenarios grouped by their design pattern, with the moments of their score sums.

    Two scenarios share a pattern when they have the same cell counts per size class and the same judge
    counts per size class (S_is, the judge part of the scenario's cell sums). Every scenario sum of the Woodbury
    core is a sum over scenarios of (pattern-only weight) x q_i q_i' with q_i = sum_s alpha_s [S_is, Y_is]; so per
    pattern p it needs only N_p, S_p, sum_{i in p} Y_is and sum_{i in p} Y_is Y_ir. A balanced table is one
    pattern whatever its size, so an evaluation costs O(patterns x (K^2 + S^2)) instead of O(scenarios x K^2).
    """

    n: np.ndarray                          # (P,) scenarios per pattern
    cnt: np.ndarray                        # (P, S) cells per size class
    s: np.ndarray                          # (P, K, S) judge counts per size class
    y1: dict[str, np.ndarray]              # which -> (P, S): sums of Y_is
    y2: dict[str, np.ndarray]              # which -> (P, S, S): sums of Y_is Y_ir


def scenario_patterns(d: Design, ys: YStats, delta: np.ndarray, *, max_share: float = 0.25
                      ) -> ScenarioPatterns | None:
    """The :class:`ScenarioPatterns` of a group, or ``None`` when patterns would not save work.

    ``delta`` re-centres the scores of the random-judge model (Y_is -> Y_is + S_is'delta). A pattern-form design
    (``d.pat``, :class:`~cjstats.stats.views.ScenarioPatternForm`) is used as it is (the random-judge moments by
    its exact re-centring); per-scenario arrays are grouped by :func:`~cjstats.stats.views.pattern_codes` (the one
    grouping) and patterns are used when they are fewer than ``max_share`` of the scenarios (any balanced or nearly
    balanced table).
    """
    if d.pat is not None:
        pf = d.pat
        rnd = pf.recentre(-delta)
        return ScenarioPatterns(n=pf.n, cnt=pf.cnt, s=np.ascontiguousarray(pf.s.transpose(0, 2, 1)),
                                y1={"fixed": pf.y1, "random": rnd.y1}, y2={"fixed": pf.y2, "random": rnd.y2})
    n, n_s = d.cnt_is.shape
    if n < 64:
        return None
    for c in (d.cnt_is, d.s_isk):
        if float(c.min()) < 0 or float(c.max()) > 2.0**40 or not np.array_equal(c, np.floor(c)):
            return None
    codes, first = pattern_codes(d.cnt_is, d.s_isk)
    n_p = first.shape[0]
    if n_p > max_share * n:
        return None
    y1, y2 = {}, {}
    for which, yy in (("fixed", ys.ys), ("random", ys.ys + d.s_isk @ delta)):
        y1[which], y2[which] = pattern_moments(codes, n_p, yy)
    return ScenarioPatterns(n=np.bincount(codes, minlength=n_p).astype(np.float64), cnt=d.cnt_is[first],
                            s=np.ascontiguousarray(d.s_isk[first].transpose(0, 2, 1)), y1=y1, y2=y2)


# --------------------------------------------------------------------------------------------- evaluator
class Evaluator:
    """REML criteria of the fixed-judge and random-judge models on one group's sufficient statistics.

    Internally M, b and c travel together as the augmented (K+1) x (K+1) matrix A = [J y]'H^{-1}[J y], so one
    evaluation is a handful of array operations. ``counter`` counts evaluations (reported in diagnostics).
    """

    def __init__(self, d: Design, ys: YStats, *, patterns: bool = True) -> None:
        self.d, self.ys = d, ys
        self.n = d.n_obs
        k = self.k = d.k
        self.logdet_c2 = 2.0 * math.log(abs(np.linalg.det(contr_sum_coding(k))))
        self.counter = 0
        n_s = d.sizes.shape[0]
        self._one_size = n_s == 1
        base = np.zeros((k + 1, k + 1))
        base[:k, :k] = np.diag(d.judge_n)
        base[:k, k] = base[k, :k] = ys.judge_sum
        base[k, k] = ys.yy
        self._base = base
        dd = np.zeros((n_s, k + 1, k + 1))
        dd[:, :k, :k] = d.dd
        dd[:, :k, k] = dd[:, k, :k] = ys.dy
        dd[:, k, k] = ys.yyc
        self._cnt = None if d.cnt_is is None else np.ascontiguousarray(d.cnt_is[:, 0]) if self._one_size else d.cnt_is
        self._sizes = d.sizes
        self._size_cells = d.size_cells
        # the stats are centred by judge means, which the intercept-only X of the random-judge model does
        # not absorb: [J, y - const] = [J, y0] L with L = [[I, delta], [0, 1]], so A_R = L'AL; the pieces of A
        # are linear, so they are transformed once here
        delta = ys.shift - float(ys.shift @ d.judge_n) / d.n_obs
        lmat = np.eye(k + 1)
        lmat[:k, k] = delta
        self._lmat = lmat
        k1 = k + 1
        #: scenarios grouped by design pattern (None: evaluate scenario by scenario), see ScenarioPatterns
        self._pat = scenario_patterns(d, ys, delta) if patterns or d.pat is not None else None
        # per-scenario cell sums [S_is, Y_is] (only when there are no patterns to use instead)
        s_aug = None if self._pat is not None else np.concatenate((d.s_isk, ys.ys[:, :, None]), axis=2)
        self._arrays = {}
        for key, lm in (("fixed", None), ("random", lmat)):
            b_ = base if lm is None else lm.T @ base @ lm
            dd_ = dd if lm is None else lm.T @ dd @ lm
            sa = None
            if s_aug is not None:
                sa = s_aug if lm is None else s_aug @ lm
                if self._one_size:
                    sa = np.ascontiguousarray(sa[:, 0, :])
                else:   # (n*(K+1), S) so that Q = (sa @ a).reshape(n, K+1) is one matrix-vector product
                    sa = np.ascontiguousarray(sa.transpose(0, 2, 1).reshape(d.n_scen * k1, n_s))
            self._arrays[key] = (b_, dd_.reshape(n_s, k1 * k1), sa)
        self._eye_k = np.eye(k)
        #: REML (default) or ML criterion; ML only to check the profile search against lme4's ML profiles
        self.reml = True

    # -- the Woodbury core ----------------------------------------------------------------------------
    def core(self, ta: float, tb: float, grad: bool = False, which: str = "fixed", hess: bool = False
             ) -> tuple[Any, ...]:
        r"""A(theta) = [J y]'H^{-1}[J y], log|H| and, with ``grad`` or ``hess``, their derivatives in (theta_a, theta_b).

        ``which="random"`` returns A for the scores centred by one constant (the random-judge model). With
        ``grad`` the derivatives are dA of shape (2, K+1, K+1) and dlog|H| of shape (2,); with ``hess`` they are
        ``(dA, d2A)`` of shapes (2, K+1, K+1) and (2, 2, K+1, K+1) and ``(dlog|H|, d2log|H|)`` of shapes (2,) and
        (2, 2).

        With a_s = 1/(1 + theta_b n_s) per size class s, f_s = theta_b a_s, q_i = sum_s a_s S_is (the scenario's
        cell sums of [J y] by size, weighted), w_i = sum_s cnt_is n_s a_s, den_i = 1 + theta_a w_i, g_i = theta_a/den_i:

            A = A_0 - sum_s f_s DD_s - sum_i g_i q_i q_i',
            log|H| = sum_s cells_s log(1 + theta_b n_s) + sum_i log den_i.

        Derivatives in theta_b: a' = -n a^2, a'' = 2 n^2 a^3, f' = a^2, f'' = -2 n a^3 (q and w are linear in a).
        Of g: g_a = 1/den^2, g_aa = -2 w/den^3, g_b = -theta_a^2 w_b/den^2, g_ab = -2 theta_a w_b/den^3,
        g_bb = -theta_a^2 w_bb/den^2 + 2 theta_a^3 w_b^2/den^3. Then, with (u v)^s = u v' + v u',

            A_aa = -sum g_aa q q',  A_ab = -sum [g_ab q q' + g_a (q_b q)^s],
            A_bb = -sum_s f''_s DD_s - sum [g_bb q q' + 2 g_b (q_b q)^s + g ((q_bb q)^s + 2 q_b q_b')],
            (log|H|)_aa = -sum w^2/den^2,  (log|H|)_ab = sum w_b/den^2,
            (log|H|)_bb = -sum_s cells_s n_s^2 a_s^2 + sum [theta_a w_bb/den - (theta_a w_b/den)^2].

        The sums over scenarios i are taken scenario by scenario or per scenario pattern (:meth:`_scenario_sums`).
        """
        self.counter += 1
        order = 2 if hess else int(grad)
        k1 = self.k + 1
        base, ddf, _ = self._arrays[which]
        sizes = self._sizes
        a = 1.0 / (1.0 + tb * sizes)
        a2 = a * a
        f = tb * a
        coefs = [a, -sizes * a2, 2.0 * sizes * sizes * a2 * a][:order + 1]   # a, a', a''
        quad, ssum, ws = self._scenario_sums(which, coefs)
        w = ws[0]
        den = 1.0 + ta * w
        inv = 1.0 / den
        g = ta * inv
        amat = base - (f @ ddf).reshape(k1, k1) - quad(0, g, 0)
        ld = float(self._size_cells @ np.log1p(tb * sizes)) + ssum(np.log(den))
        if order == 0:
            return amat, ld, None, None

        def sym(m: np.ndarray) -> np.ndarray:
            return m + m.T

        w_b = ws[1]
        g_a = inv * inv
        g_b = -(ta * ta) * w_b * g_a
        da = np.stack((-quad(0, g_a, 0), -(a2 @ ddf).reshape(k1, k1) - quad(0, g_b, 0) - sym(quad(1, g, 0))))
        dld = np.array([ssum(w * inv), float(self._size_cells @ (sizes * a)) + ssum(ta * w_b * inv)])
        if order == 1:
            return amat, ld, da, dld
        w_bb = ws[2]
        g_aa = -2.0 * w * g_a * inv
        g_ab = -2.0 * ta * w_b * g_a * inv
        g_bb = -(ta * ta) * w_bb * g_a + 2.0 * ta**3 * w_b * w_b * g_a * inv
        d_aa = -quad(0, g_aa, 0)
        d_ab = -quad(0, g_ab, 0) - sym(quad(1, g_a, 0))
        d_bb = (-((-2.0 * sizes * a2 * a) @ ddf).reshape(k1, k1) - quad(0, g_bb, 0) - 2.0 * sym(quad(1, g_b, 0))
                - sym(quad(2, g, 0)) - 2.0 * quad(1, g, 1))
        l_ab = ssum(w_b * g_a)
        d2ld = np.array([[-ssum(w * w * g_a), l_ab],
                         [l_ab, -float(self._size_cells @ (sizes * sizes * a2))
                          + ssum(ta * w_bb * inv) - ssum((ta * w_b * inv) ** 2)]])
        d2a = np.stack((np.stack((d_aa, d_ab)), np.stack((d_ab, d_bb))))
        return amat, ld, (da, d2a), (dld, d2ld)

    def _scenario_sums(self, which: str, coefs: list[np.ndarray]) -> tuple[Callable, Callable, list[np.ndarray]]:
        """How :meth:`core` sums over scenarios, for size weights ``coefs`` (alpha_0, alpha_1, ...).

        Returns ``quad(x, c, y)`` = sum_i c_i q_i(alpha_x) q_i(alpha_y)' with q_i(alpha) = sum_s alpha_s [S_is, Y_is],
        ``ssum(v)`` = sum_i v_i, and ``ws[x]`` = (w_i(alpha_x))_i with w_i(alpha) = sum_s cnt_is n_s alpha_s; ``c``
        and ``v`` are functions of the w's. Scenario by scenario, or, with :class:`ScenarioPatterns`, per pattern p:
        sum_i v_i = sum_p N_p v_p, and quad has judge block sum_p c_p N_p S_p alpha_x alpha_y'S_p', cross blocks
        sum_p c_p S_p alpha_x (alpha_y'Y1_p) and score entry sum_p c_p alpha_x'Y2_p alpha_y.
        """
        sizes = self._sizes
        pt = self._pat
        if pt is not None:
            k, k1 = self.k, self.k + 1
            y1, y2, nn = pt.y1[which], pt.y2[which], pt.n
            u = [pt.s @ c for c in coefs]                   # (P, K) judge parts
            t = [y1 @ c for c in coefs]                     # (P,) summed score parts

            def quad(x: int, c: np.ndarray, y: int) -> np.ndarray:
                out = np.empty((k1, k1))
                out[:k, :k] = (u[x] * (c * nn)[:, None]).T @ u[y]
                out[:k, k] = (u[x] * c[:, None]).T @ t[y]
                out[k, :k] = (u[y] * c[:, None]).T @ t[x]
                out[k, k] = float(np.einsum("p,psr,s,r->", c, y2, coefs[x], coefs[y]))
                return out

            return quad, lambda v: float(nn @ v), [pt.cnt @ (sizes * c) for c in coefs]
        sa = self._arrays[which][2]
        k1 = self.k + 1
        if self._one_size:
            qs = [sa * c[0] for c in coefs]
            ws = [self._cnt * (sizes[0] * c[0]) for c in coefs]
        else:
            qs = [(sa @ c).reshape(-1, k1) for c in coefs]
            ws = [self._cnt @ (sizes * c) for c in coefs]

        def quad(x: int, c: np.ndarray, y: int) -> np.ndarray:
            return (qs[x] * c[:, None]).T @ qs[y]

        return quad, lambda v: float(v.sum()), ws

    def _core(self, theta: np.ndarray, grad: bool = False, which: str = "fixed", hess: bool = False
              ) -> tuple[Any, ...]:
        """:meth:`core` at theta = (theta_a[, theta_b]) (a subclass with other variances in H overrides this)."""
        ta, tb = _unpack(theta)
        return self.core(ta, tb, grad, which, hess)

    # -- fixed judges ---------------------------------------------------------------------------------
    def fixed_parts(self, theta: np.ndarray, grad: bool = False, hess: bool = False) -> dict[str, Any]:
        """rss, log|H| + log|X'H^{-1}X| and (optionally) their gradients in theta, fixed-judge model.

        With A = [[M, b], [b', c]]: rss = c - b'M^{-1}b = 1/(A^{-1})_{KK}, eta = M^{-1}b, log|M| = log|A| - log rss,
        d rss = z' dA z with z = (-eta, 1), d log|M| = tr(M^{-1} dM). With ``hess`` also the second derivatives
        (``d2rss``, ``d2logdet``): since d eta_j = M^{-1} r_j with r_j = (A_j z)_{1..K},

            rss_ij = z'A_ij z - 2 r_i'M^{-1} r_j,
            (log|M|)_ij = tr(M^{-1} M_ij) - tr(M^{-1} M_i M^{-1} M_j).
        """
        if hess:
            grad = True
            amat, ld, (da, d2a), (dld, d2ld) = self._core(theta, hess=True)
        else:
            amat, ld, da, dld = self._core(theta, grad)
        k = self.k
        chol, info = _potrf(amat, lower=1)
        if info != 0:
            return {"rss": -1.0, "logdet": math.inf, "eta": None, "minv": None}
        dg = np.diagonal(chol)
        rss = float(dg[k] * dg[k])
        logdet = ld + (2.0 * float(np.log(dg[:k]).sum()) + self.logdet_c2 if self.reml else 0.0)
        minv = _sym_from_lower(_potri(chol[:k, :k], lower=1)[0])
        eta = minv @ amat[:k, k]
        out = {"rss": rss, "logdet": logdet, "eta": eta, "minv": minv}
        if grad:
            n_t = len(theta)
            z = np.append(-eta, 1.0)
            out["drss"] = (da[:n_t] @ z) @ z
            dl = dld[:n_t]
            if self.reml:
                dl = dl + (da[:n_t, :k, :k] * minv).sum(axis=(1, 2))
            out["dlogdet"] = dl
        if hess:
            r = (da[:n_t] @ z)[:, :k]                                      # (n_t, K)
            out["d2rss"] = (d2a[:n_t, :n_t] @ z) @ z - 2.0 * (r @ minv) @ r.T
            d2l = d2ld[:n_t, :n_t].copy()
            if self.reml:
                mi = minv @ da[:n_t, :k, :k]                               # M^{-1} M_i
                d2l += (d2a[:n_t, :n_t, :k, :k] * minv).sum(axis=(2, 3)) - np.einsum("iab,jba->ij", mi, mi)
            out["d2logdet"] = 0.5 * (d2l + d2l.T)
            out["d2rss"] = 0.5 * (out["d2rss"] + out["d2rss"].T)
        return out

    # -- random judges --------------------------------------------------------------------------------
    def random_parts(self, theta: np.ndarray, grad: bool = False, hess: bool = False) -> dict[str, Any]:
        """Same for the random-judge model, theta = (theta_a, [theta_b,] theta_j); X is the intercept only.

        T = I + theta_j M; x'H^{-1}x = 1'T^{-1}M1, x'H^{-1}y = 1'T^{-1}b, y'H^{-1}y = c - theta_j b'T^{-1}b,
        log|H_R| = log|H| + log|T|, rss = y'H^{-1}y - (x'H^{-1}y)^2/x'H^{-1}x. With ``hess`` also the second
        derivatives (``d2rss``, ``d2logdet``, see :meth:`_random_hessian`).
        """
        tj = float(theta[-1])
        if hess:
            grad = True
            amat, ld, (da, d2a), (dld, d2ld) = self._core(theta[:-1], hess=True, which="random")
        else:
            amat, ld, da, dld = self._core(theta[:-1], grad, which="random")
        k = self.k
        m, b, c = amat[:k, :k], amat[:k, k], float(amat[k, k])
        t_mat = self._eye_k + tj * m
        chol, info = _potrf(t_mat, lower=1)
        if info != 0:
            return {"rss": -1.0, "logdet": math.inf, "mu": math.nan, "xhx": math.nan}
        logdet_t = 2.0 * float(np.log(np.diagonal(chol)).sum())
        tinv = _sym_from_lower(_potri(chol, lower=1)[0])
        u = tinv.sum(axis=1)                 # T^{-1} 1
        v = tinv @ b                         # T^{-1} b
        w = m @ u                            # M T^{-1} 1
        xhx = float(w.sum())
        xhy = float(u @ b)
        bv = float(b @ v)
        yhy = c - tj * bv
        rss = yhy - xhy * xhy / xhx
        if not xhx > 0:
            return {"rss": -1.0, "logdet": math.inf, "mu": math.nan, "xhx": xhx}
        logdet = ld + logdet_t + (math.log(xhx) if self.reml else 0.0)
        out = {"rss": rss, "logdet": logdet, "mu": xhy / xhx, "xhx": xhx}
        if grad:
            # the derivatives of M, b, c and log|H| in theta_j are zero: rows 0..nv-1 are A's, row nv zeros
            # (filled in place: the same products as stacking the zero row on, without the copies)
            n_t = len(theta)
            nv = n_t - 1
            dai = da[:nv]                                   # (nv, K+1, K+1)
            dm = np.zeros((n_t, k, k))
            dm[:nv] = dai[:, :k, :k]
            db = np.zeros((n_t, k))
            db[:nv] = dai[:, :k, k]
            dc = np.zeros(n_t)
            dc[:nv] = dai[:, k, k]
            dldv = np.zeros(n_t)
            dldv[:nv] = dld[:nv]
            dt = np.empty((n_t, k, k))
            np.multiply(tj, dai[:, :k, :k], out=dt[:nv])
            dt[nv] = m
            dtj = np.zeros(n_t)
            dtj[-1] = 1.0
            dtv = dt @ v
            dxhx = -((dt @ w) @ u) + (dm.sum(axis=2) @ u)
            dxhy = -(dtv @ u) + db @ u
            dyhy = dc - dtj * bv - tj * (2.0 * (db @ v) - dtv @ v)
            out["drss"] = dyhy - 2.0 * xhy * dxhy / xhx + xhy * xhy * dxhx / (xhx * xhx)
            out["dlogdet"] = dldv + (dt * tinv).sum(axis=(1, 2)) + (dxhx / xhx if self.reml else 0.0)
        if hess:
            out["d2rss"], out["d2logdet"] = self._random_hessian(amat, da, d2a, d2ld, tj, tinv, len(theta))
        return out

    def _random_hessian(self, amat: np.ndarray, da: np.ndarray, d2a: np.ndarray, d2ld: np.ndarray, tj: float,
                        tinv: np.ndarray, n_t: int) -> tuple[np.ndarray, np.ndarray]:
        r"""Second derivatives of rss and log|H_R| + log(x'H_R^{-1}x) in theta = (theta_a, [theta_b,] theta_j).

        Woodbury on the judge columns gives G = [J y]'H_R^{-1}[J y] = A - theta_j F T^{-1} F' with F = A[:, :K]
        (the columns [M; b']), T = I + theta_j M, and P = E'GE = [[x'H_R^{-1}x, x'H_R^{-1}y], [., y'H_R^{-1}y]]
        with E = [[1_K, 0], [0, 1]]. G is differentiated twice by the product rule, with S = T^{-1},

            S_i = -S T_i S,  S_ij = S T_i S T_j S + S T_j S T_i S - S T_ij S,
            T_i = theta_j M_i + d_i M,  T_ij = theta_j M_ij + d_i M_j + d_j M_i

        (d_i = 1 when parameter i is theta_j, else 0). Then, as for the fixed judges (rss is P's Schur
        complement; z = (-mu, 1), r_i = (P_i z)_1):

            rss_ij = z'P_ij z - 2 r_i r_j / x'H_R^{-1}x,
            (log|T|)_ij = tr(T^{-1} T_ij) - tr(T^{-1}T_i T^{-1}T_j),
            (log x'H_R^{-1}x)_ij = P_11,ij / P_11 - P_11,i P_11,j / P_11^2.
        """
        k = self.k
        nv = n_t - 1
        k1 = k + 1
        # A and its derivatives over all n_t parameters (theta_j does not enter A)
        a1 = np.zeros((n_t, k1, k1))
        a1[:nv] = da[:nv]
        a2 = np.zeros((n_t, n_t, k1, k1))
        a2[:nv, :nv] = d2a[:nv, :nv]
        m = amat[:k, :k]
        m1, m2 = a1[:, :k, :k], a2[:, :, :k, :k]
        t1 = tj * m1
        t1[-1] += m
        t2 = tj * m2
        t2[-1] += m1
        t2[:, -1] += m1
        s0 = tinv
        st = s0 @ t1                                                          # T^{-1} T_i
        s1 = -(st @ s0)
        sts = np.einsum("iab,jbc->ijac", st, st)                              # T^{-1}T_i T^{-1}T_j
        s2 = (sts + sts.transpose(1, 0, 2, 3)) @ s0 - s0 @ t2 @ s0
        f0, f1, f2 = amat[:, :k], a1[:, :, :k], a2[:, :, :, :k]

        def jet_mul(x, y):
            """(x0, x1, x2) @ (y0, y1, y2): value, first and second derivatives of a matrix product."""
            x0, x1, x2 = x
            y0, y1, y2 = y
            xy = np.einsum("iab,jbc->ijac", x1, y1)
            return (x0 @ y0, x1 @ y0 + x0 @ y1, x2 @ y0 + xy + xy.transpose(1, 0, 2, 3) + x0 @ y2)

        def tr(x):
            return np.swapaxes(x, -1, -2)

        fs = jet_mul((f0, f1, f2), (s0, s1, s2))
        n0, n1, n2 = jet_mul(fs, (f0.T, tr(f1), tr(f2)))                     # N = F T^{-1} F'
        e = np.zeros(n_t)
        e[-1] = 1.0
        g1 = a1 - tj * n1 - e[:, None, None] * n0
        g2 = a2 - tj * n2 - e[:, None, None, None] * n1[None] - e[None, :, None, None] * n1[:, None]
        emat = np.zeros((k1, 2))
        emat[:k, 0] = 1.0
        emat[k, 1] = 1.0
        g0 = amat - tj * n0
        p0 = emat.T @ g0 @ emat
        p1 = emat.T @ g1 @ emat
        p2 = emat.T @ g2 @ emat
        xhx = p0[0, 0]
        z = np.array([-p0[0, 1] / xhx, 1.0])
        r = (p1 @ z)[:, 0]
        d2rss = (p2 @ z) @ z - 2.0 * np.outer(r, r) / xhx
        d2l = np.zeros((n_t, n_t))
        d2l[:nv, :nv] = d2ld[:nv, :nv]
        d2l += (t2 * s0).sum(axis=(2, 3)) - np.einsum("iab,jba->ij", st, st)
        if self.reml:
            d2l += p2[:, :, 0, 0] / xhx - np.outer(p1[:, 0, 0], p1[:, 0, 0]) / (xhx * xhx)
        return 0.5 * (d2rss + d2rss.T), 0.5 * (d2l + d2l.T)

    # -- criteria --------------------------------------------------------------------------------------
    def p(self, model: str) -> int:
        """Columns of X, subtracted from the rows by REML (0 for ML)."""
        if not self.reml:
            return 0
        return self.k if model == "fixed" else 1

    def parts(self, model: str, theta: np.ndarray, grad: bool = False, hess: bool = False) -> dict[str, Any]:
        return self.fixed_parts(theta, grad, hess) if model == "fixed" else self.random_parts(theta, grad, hess)

    def profiled(self, model: str, theta: np.ndarray, grad: bool = False) -> tuple[float, np.ndarray | None]:
        """-2 REML log-likelihood with s2_residual profiled out: nu (1 + log(2 pi rss/nu)) + log|H| + log|X'H^-1 X|."""
        nu = self.n - self.p(model)
        pr = self.parts(model, theta, grad)
        rss = pr["rss"]
        if not rss > 0 or not math.isfinite(pr["logdet"]):
            return math.inf, (np.zeros(len(theta)) if grad else None)
        val = nu * (1.0 + _LOG2PI + math.log(rss / nu)) + pr["logdet"]
        if not grad:
            return val, None
        return val, nu * pr["drss"] / rss + pr["dlogdet"]

    def full(self, model: str, s2: float, theta: np.ndarray, grad: bool = False) -> tuple[float, Any]:
        """-2 REML log-likelihood at (s2_residual, theta): nu log(2 pi s2) + log|H| + log|X'H^-1 X| + rss/s2."""
        nu = self.n - self.p(model)
        pr = self.parts(model, theta, grad)
        if not pr["rss"] > 0 or not math.isfinite(pr["logdet"]):
            return math.inf, ((np.zeros(len(theta)), 0.0) if grad else None)
        val = nu * (_LOG2PI + math.log(s2)) + pr["logdet"] + pr["rss"] / s2
        if not grad:
            return val, None
        return val, (pr["drss"] / s2 + pr["dlogdet"], pr["rss"])


def _sym_from_lower(low: np.ndarray) -> np.ndarray:
    """Full symmetric matrix from LAPACK's lower-triangle output (the upper triangle is zero after potrf)."""
    out = low + low.T
    out.flat[:: low.shape[0] + 1] *= 0.5
    return out


def _unpack(theta: np.ndarray) -> tuple[float, float]:
    return (float(theta[0]), float(theta[1])) if len(theta) > 1 else (float(theta[0]), 0.0)


def _scenario_mean_sums(d: Design, ys: YStats, inv: np.ndarray) -> tuple[int, float, float, float, float]:
    """(n, sum_i m_i, sum_i x_i, sum_i x_i^2, sum_i m_i x_i^2) of the scenario means of cell means
    x_i = (sum_h Y_ih/h)/m_i, scenario by scenario or per pattern of a pattern-form design (``d.pat``: with
    c_p = inv/m_p, sum x = sum_p c_p'Y1_p, sum x^2 = sum_p c_p'Y2_p c_p)."""
    if d.pat is not None:
        pf = d.pat
        m_p = pf.generations
        c = inv[None, :] / m_p[:, None]                                    # (P, S)
        x2 = np.einsum("ps,psr,pr->p", c, pf.y2, c)
        return (int(pf.n_scenarios), float(pf.n @ m_p), float(np.einsum("ps,ps->", c, pf.y1)), float(x2.sum()),
                float(m_p @ x2))
    m_per = d.cnt_is.sum(axis=1)
    smean = (ys.ys @ inv) / m_per
    return (int(m_per.shape[0]), float(m_per.sum()), float(smean.sum()), float(smean @ smean),
            float(m_per @ (smean * smean)))


def moment_start(d: Design, ys: YStats, model: str) -> np.ndarray:
    """Rough method-of-moments starting values for theta (positive, so the optimiser is off the boundary).

    Within-cell judge-centred variation estimates s2_residual; the spread of cell means within scenario and of
    scenario means estimate s2_generation + s2_residual/n_c and s2_scenario + ...; ratios are floored at 0.05.
    Everything comes from the per-size-class statistics: sum_c Y_c^2/n_c = sum_h YY_h/h, sum_c cmean_c^2 =
    sum_h YY_h/h^2 and the scenario sums of cell means sum_h Y_ih/h.
    """
    inv = 1.0 / d.sizes
    within = max(ys.yy - float(ys.yyc @ inv), 1e-12)
    s2e = within / max(d.df_residual, 1)
    n, sum_m, sum_x, sum_x2, sum_mx2 = _scenario_mean_sums(d, ys, inv)
    var_smean = max(sum_x2 - sum_x * sum_x / n, 0.0) / max(n - 1, 1)
    nbar = d.n_obs / d.n_cells
    if d.has_generation:
        dev2 = float(ys.yyc @ (inv * inv)) - sum_mx2
        df = max(d.n_cells - d.n_scen, 1)
        s2b = max(dev2 / df - s2e / nbar, 0.05 * s2e)
        mbar = sum_m / n
        s2a = max(var_smean - s2b / mbar - s2e / (nbar * mbar), 0.05 * s2e)
        theta = [s2a / s2e, s2b / s2e]
    else:
        s2a = max(var_smean - s2e / nbar, 0.05 * s2e)
        theta = [s2a / s2e]
    if model == "random":
        jm = ys.shift - ys.shift.mean()
        theta.append(max(float(jm @ jm) / max(d.k - 1, 1), 0.05 * s2e) / s2e)
    return np.asarray(theta)




# ------------------------------------------------------------------------------- the criterion, the engine
class ModelCriterion:
    """One model's REML (or ML) criterion in the form the engine reads (:class:`engine.Criterion`)."""

    def __init__(self, ev: Evaluator, model: str) -> None:
        self.ev, self.model = ev, model
        self.nu = ev.n - ev.p(model)

    @property
    def n_evaluations(self) -> int:
        return self.ev.counter

    def profiled(self, theta: np.ndarray, grad: bool = False) -> tuple[float, np.ndarray | None]:
        return self.ev.profiled(self.model, theta, grad)

    def full(self, s2: float, theta: np.ndarray, grad: bool = False) -> tuple[float, Any]:
        return self.ev.full(self.model, s2, theta, grad)

    def parts(self, theta: np.ndarray, hess: bool = False) -> dict[str, Any]:
        return self.ev.parts(self.model, theta, grad=True, hess=hess)


def fit_model(ev: Evaluator, model: str, start: np.ndarray | None = None) -> FitResult:
    """REML fit of the fixed-judge (``"fixed"``) or random-judge (``"random"``) model by the engine
    (:func:`engine.fit`): from the moment start, then (to confirm a boundary optimum, or when the KKT check fails)
    from theta = 0.5 and 0.02; every boundary face is checked, so a variance whose optimum is zero is reported as
    exactly zero and flagged, never as a tiny "converged" number."""
    if start is None:
        start = moment_start(ev.d, ev.ys, model)
    start = np.asarray(start, dtype=float)
    return engine.fit(ModelCriterion(ev, model), [start, np.full(len(start), 0.5), np.full(len(start), 0.02)])


def variance_hessian(ev: Evaluator, model: str, fit: FitResult) -> np.ndarray:
    """Exact Hessian of -2 l_R in the variances (:func:`engine.variance_hessian`)."""
    return engine.variance_hessian(ModelCriterion(ev, model), fit)


def _fd_variance_hessian(ev: Evaluator, model: str, fit: FitResult) -> np.ndarray:
    """Its central-difference reference (:func:`engine.fd_variance_hessian`, for tests)."""
    return engine.fd_variance_hessian(ModelCriterion(ev, model), fit)


def profile_interval(ev: Evaluator, model: str, fit: FitResult, which: int, level: float,
                     hess: np.ndarray | None = None) -> tuple[float, float, dict[str, Any]]:
    """Profile-likelihood interval of one variance (:func:`engine.profile_interval`)."""
    return engine.profile_interval(ModelCriterion(ev, model), fit, which, level, hess=hess)


# ------------------------------------------------------------------------------------------ fixed effects
def fixed_effects(ev: Evaluator, theta: np.ndarray, s2: float, *, derivatives: bool = False
                   ) -> dict[str, Any]:
    """GLS fixed effects at the given variances, with their covariances.

    eta = M^{-1} J'H^{-1}y (the judge means), Sigma = Cov(eta_hat) = s2 M^{-1}, mu = mean(eta) with
    Var(mu_hat) = 1'Sigma 1/K^2, gamma = L eta and Cov(gamma_hat) = L Sigma L (L = I - 11'/K), and
    judge_panel_raw = (|gamma_hat|^2 - tr Cov(gamma_hat))/K, mean(gamma_hat^2) minus the mean sampling variance.

    With ``derivatives``, also dSigma/dphi_j for phi = (s2, s2 theta_1, ...) (``dcov_eta``, shape (q + 1, K, K)):
    dSigma/ds2 = M^{-1} + sum_i theta_i M^{-1} M_i M^{-1} and dSigma/d(s2 theta_i) = -M^{-1} M_i M^{-1}, with
    M_i = dM/dtheta_i from the Woodbury core.
    """
    pr = ev.fixed_parts(theta)
    k = ev.k
    eta = ev.ys.shift + pr["eta"]
    minv = pr["minv"]
    cov_eta = s2 * minv
    lmat = np.eye(k) - 1.0 / k
    gamma = lmat @ eta
    cov_gamma = lmat @ cov_eta @ lmat
    out = {"eta": eta, "cov_eta": cov_eta, "minv": minv, "lmat": lmat, "mu": float(eta.mean()),
           "var_mu": float(cov_eta.sum()) / k**2, "gamma": gamma, "cov_gamma": cov_gamma,
           "judge_panel_raw": (float(gamma @ gamma) - float(np.trace(cov_gamma))) / k}
    if derivatives:
        q = len(theta)
        dm = ev._core(theta, grad=True)[2][:q, :k, :k]          # (q, K, K): dM/dtheta_i
        sand = minv @ dm @ minv                                   # M^{-1} M_i M^{-1}
        out["dcov_eta"] = np.concatenate(((minv + np.tensordot(theta, sand, axes=1))[None], -sand))
    return out
