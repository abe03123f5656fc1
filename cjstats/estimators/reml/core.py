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

Fixed judges (the ``view="fixed"`` components): X = J C with C = [1 | contr.sum], p = K columns, so
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
from scipy import optimize, sparse, stats
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dpotri as _potri
from scipy.sparse import csgraph

from cjstats.stats.views import Design, YStats

__all__ = ["Design", "Evaluator", "ScenarioPatterns", "scenario_patterns", "fixed_effects", "FitResult", "YStats", "build_design", "contr_sum_coding", "fit_model",
           "moment_start", "profile_interval", "variance_hessian", "wald_covariance", "within_cell_rss", "y_stats"]

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
    dy = np.empty((n_s, d.k))
    yyc = np.empty(n_s)
    for s in range(n_s):
        sel = d.cell_size_idx == s
        dy[s] = ysum[sel] @ d.d_cell[sel]
        yyc[s] = ysum[sel] @ ysum[sel]
    ys = np.bincount(d.cell_scen * n_s + d.cell_size_idx, weights=ysum, minlength=d.n_scen * n_s)
    return YStats(shift=np.asarray(shift, dtype=np.float64), dy=dy, yyc=yyc, ys=ys.reshape(d.n_scen, n_s),
                  judge_sum=np.bincount(d.row_judge, weights=y0, minlength=d.k), yy=float(y0 @ y0), cell_sum=ysum)


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

    ``delta`` re-centres the scores of the random-judge model (Y_is -> Y_is + S_is'delta). Patterns are used when
    they are fewer than ``max_share`` of the scenarios (any balanced or nearly balanced table).
    """
    n, n_s = d.cnt_is.shape
    k = d.k
    if n < 64:
        return None
    cols = [d.cnt_is[:, h] for h in range(n_s)] + [d.s_isk[:, h, j] for h in range(n_s) for j in range(k)]
    span = np.empty(len(cols), dtype=np.int64)
    for i, c in enumerate(cols):   # column by column: no (n, S(K+1)) copy of the design
        lo, hi = float(c.min()), float(c.max())
        if lo < 0 or hi > 2.0**40 or not np.array_equal(c, np.floor(c)):
            return None
        span[i] = int(hi) + 1
    n_keys = float(np.prod(span.astype(np.float64)))
    if n_keys < 2.0**62:
        radix = np.cumprod(np.r_[1, span[:-1]]).astype(np.int64)
        key = np.zeros(n, dtype=np.int64)
        for c, r in zip(cols, radix):
            key += c.astype(np.int64) * r
        if n_keys <= 4 * n:   # few possible keys: a dense lookup table, O(n), no sort
            seen = np.zeros(int(n_keys), dtype=bool)
            seen[key] = True
            uniq = np.flatnonzero(seen)
            lookup = np.zeros(int(n_keys), dtype=np.int64)
            lookup[uniq] = np.arange(uniq.shape[0])
            codes = lookup[key]
            first = np.empty(uniq.shape[0], dtype=np.int64)
            first[codes[::-1]] = np.arange(n - 1, -1, -1)     # the last write of each code is its first row
        else:
            _, first, codes = np.unique(key, return_index=True, return_inverse=True)
        del key
    else:
        ic = np.column_stack(cols).astype(np.int64)
        _, first, codes = np.unique(ic, axis=0, return_index=True, return_inverse=True)
    codes = codes.ravel()
    n_p = first.shape[0]
    if n_p > max_share * n:
        return None
    y1, y2 = {}, {}
    for which, yy in (("fixed", ys.ys), ("random", ys.ys + d.s_isk @ delta)):
        y1[which] = np.stack([np.bincount(codes, weights=yy[:, h], minlength=n_p) for h in range(n_s)], axis=1)
        m2 = np.empty((n_p, n_s, n_s))
        for h in range(n_s):
            for r in range(h, n_s):
                m2[:, h, r] = m2[:, r, h] = np.bincount(codes, weights=yy[:, h] * yy[:, r], minlength=n_p)
        y2[which] = m2
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
        self._cnt = np.ascontiguousarray(d.cnt_is[:, 0]) if self._one_size else d.cnt_is
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
        self._pat = scenario_patterns(d, ys, delta) if patterns else None
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

    # -- fixed judges ---------------------------------------------------------------------------------
    def fixed_parts(self, theta: np.ndarray, grad: bool = False, hess: bool = False) -> dict[str, Any]:
        """rss, log|H| + log|X'H^{-1}X| and (optionally) their gradients in theta, fixed-judge model.

        With A = [[M, b], [b', c]]: rss = c - b'M^{-1}b = 1/(A^{-1})_{KK}, eta = M^{-1}b, log|M| = log|A| - log rss,
        d rss = z' dA z with z = (-eta, 1), d log|M| = tr(M^{-1} dM). With ``hess`` also the second derivatives
        (``d2rss``, ``d2logdet``): since d eta_j = M^{-1} r_j with r_j = (A_j z)_{1..K},

            rss_ij = z'A_ij z - 2 r_i'M^{-1} r_j,
            (log|M|)_ij = tr(M^{-1} M_ij) - tr(M^{-1} M_i M^{-1} M_j).
        """
        ta, tb = _unpack(theta)
        if hess:
            grad = True
            amat, ld, (da, d2a), (dld, d2ld) = self.core(ta, tb, hess=True)
        else:
            amat, ld, da, dld = self.core(ta, tb, grad)
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
        ta, tb = _unpack(theta[:-1])
        if hess:
            grad = True
            amat, ld, (da, d2a), (dld, d2ld) = self.core(ta, tb, hess=True, which="random")
        else:
            amat, ld, da, dld = self.core(ta, tb, grad, which="random")
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
        yhy = c - tj * float(b @ v)
        rss = yhy - xhy * xhy / xhx
        if not xhx > 0:
            return {"rss": -1.0, "logdet": math.inf, "mu": math.nan, "xhx": xhx}
        logdet = ld + logdet_t + (math.log(xhx) if self.reml else 0.0)
        out = {"rss": rss, "logdet": logdet, "mu": xhy / xhx, "xhx": xhx}
        if grad:
            n_t = len(theta)
            nv = n_t - 1
            dai = da[:nv]                                   # (nv, K+1, K+1)
            dm = np.concatenate((dai[:, :k, :k], np.zeros((1, k, k))))
            db = np.concatenate((dai[:, :k, k], np.zeros((1, k))))
            dc = np.append(dai[:, k, k], 0.0)
            dldv = np.append(dld[:nv], 0.0)
            dt = np.concatenate((tj * dai[:, :k, :k], m[None]))
            dtj = np.zeros(n_t)
            dtj[-1] = 1.0
            dxhx = -((dt @ w) @ u) + (dm.sum(axis=2) @ u)
            dxhy = -((dt @ v) @ u) + db @ u
            dyhy = dc - dtj * float(b @ v) - tj * (2.0 * (db @ v) - (dt @ v) @ v)
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


# ----------------------------------------------------------------------------------------- optimisation
@dataclass(frozen=True, slots=True)
class FitResult:
    """The REML optimum of one model (fixed or random judges)."""

    theta: np.ndarray
    s2: float
    deviance: float
    converged: bool
    iterations: int
    evaluations: int
    gradient: np.ndarray
    boundary: np.ndarray
    message: str


def _minimize(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray,
              lower: np.ndarray, *, maxiter: int = 200, tol: float = 1e-16,
              hess0: np.ndarray | None = None) -> tuple[np.ndarray, float, dict]:
    """Minimise a smooth function of a few variables over x >= lower by projected (quasi-)Newton steps.

    Steps use the analytic gradient and a Hessian from forward differences of it on the free coordinates
    (those not held at their bound by a gradient pointing outward). With ``hess0`` (the Hessian of a nearby
    problem, as along a profile) the first steps use it with BFGS updates and fall back to differences only
    when they stall. Eigenvalues are replaced by their absolute values (floored), so every step descends, and a
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
        if hess is None:
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
    scen_sum = ys.ys @ inv
    m_per = d.cnt_is.sum(axis=1)
    smean = scen_sum / m_per
    nbar = d.n_obs / d.n_cells
    if d.has_generation:
        dev2 = float(ys.yyc @ (inv * inv)) - float(m_per @ (smean * smean))
        df = max(d.n_cells - d.n_scen, 1)
        s2b = max(dev2 / df - s2e / nbar, 0.05 * s2e)
        mbar = float(np.mean(m_per))
        s2a = max(float(np.var(smean, ddof=1)) - s2b / mbar - s2e / (nbar * mbar), 0.05 * s2e)
        theta = [s2a / s2e, s2b / s2e]
    else:
        s2a = max(float(np.var(smean, ddof=1)) - s2e / nbar, 0.05 * s2e)
        theta = [s2a / s2e]
    if model == "random":
        jm = ys.shift - ys.shift.mean()
        theta.append(max(float(jm @ jm) / max(d.k - 1, 1), 0.05 * s2e) / s2e)
    return np.asarray(theta)


def fit_model(ev: Evaluator, model: str, start: np.ndarray | None = None) -> FitResult:
    """REML fit of the fixed-judge (``"fixed"``) or random-judge (``"random"``) model.

    Minimises the profiled criterion over theta >= 0, then compares with every boundary face (each theta
    set to 0 and the rest re-optimised): the lower criterion wins, so a variance whose optimum is zero is
    reported as exactly zero and flagged, never as a tiny "converged" number.
    """
    d = ev.d
    if start is None:
        start = moment_start(d, ev.ys, model)
    q = len(start)
    lower = np.zeros(q)
    before = ev.counter

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        return ev.profiled(model, x, grad=True)

    x, fx, info = _minimize(fun, start, lower)
    nit = info["nit"]
    # boundary faces: any theta that is tiny but positive gets a second look with that theta fixed at 0
    for i in range(q):
        if 0 < x[i] < 1e-6 * max(1.0, float(np.max(x))):
            free = np.ones(q, dtype=bool)
            free[i] = False

            def fun_i(z: np.ndarray, i: int = i) -> tuple[float, np.ndarray]:
                full = np.insert(z, i, 0.0)
                v, g = ev.profiled(model, full, grad=True)
                return v, np.delete(g, i)

            if q > 1:
                z, fz, _ = _minimize(fun_i, np.delete(x, i), np.zeros(q - 1))
                cand = np.insert(z, i, 0.0)
            else:
                cand = np.zeros(1)
                fz = fun(cand)[0]
            if fz <= fx:
                x, fx = cand, fz
    val, grad = fun(x)
    pr = ev.parts(model, x)
    s2 = pr["rss"] / (ev.n - ev.p(model))
    boundary = x <= 0.0
    # converged: the Newton decrement vanished, and no boundary variance has a gradient pointing inward
    conv = bool(info["success"] and math.isfinite(val) and not np.any(boundary & (grad < 0)))
    return FitResult(theta=x, s2=float(s2), deviance=float(val), converged=conv, iterations=int(nit),
                     evaluations=int(ev.counter - before), gradient=grad, boundary=boundary,
                     message=info["message"])


# ------------------------------------------------------------------------------------------- profiling
def variance_hessian(ev: Evaluator, model: str, fit: FitResult) -> np.ndarray:
    r"""Hessian of -2 l_R in the variances phi = (s2_residual, s2_residual * theta) at the optimum, analytically.

    In psi = (s2, theta), F = -2 l_R = nu log(2 pi s2) + L(theta) + rss(theta)/s2 (L = log|H| + log|X'H^{-1}X|,
    nu = N - p) has the exact second derivatives (:meth:`Evaluator.fixed_parts`, :meth:`Evaluator.random_parts`)

        F_{s2 s2} = -nu/s2^2 + 2 rss/s2^3,  F_{s2 theta_i} = -rss_i/s2^2,  F_{theta_i theta_j} = rss_ij/s2 + L_ij.

    With theta_i = phi_i/phi_0 the chain rule gives H = J'F''J + sum_i F_{theta_i} d^2 theta_i/dphi^2, where
    J = dpsi/dphi (J_00 = 1, J_i0 = -theta_i/s2, J_ii = 1/s2), d^2 theta_i/dphi_0^2 = 2 theta_i/s2^2 and
    d^2 theta_i/dphi_0 dphi_i = -1/s2^2 (the last term vanishes at an interior optimum, not at a boundary
    theta_i = 0, where the derivatives are the one-sided ones from theta_i >= 0). Used for starting steps of the
    profile search and for the Wald standard errors reported beside the profile intervals. One evaluation costs
    about two gradient evaluations; it is exact to rounding, so the standard errors do not depend on the order
    in which the statistics were summed beyond that (the difference Hessian, :func:`_fd_variance_hessian`, has
    ~1e-9 relative error of its own).
    """
    nu = ev.n - ev.p(model)
    s2 = float(fit.s2)
    th = np.asarray(fit.theta, dtype=float)
    q = len(th)
    pr = ev.parts(model, th, hess=True)
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


def _fd_variance_hessian(ev: Evaluator, model: str, fit: FitResult) -> np.ndarray:
    """The Hessian of :func:`variance_hessian` from central differences of the analytic gradient (for tests).

    Chain rule: d/dphi_i = (d/dtheta_i)/s2 for i >= 1 and d/ds2 = nu/s2 - rss/s2^2 - sum_i theta_i (d/dtheta_i)/s2;
    steps 1e-5 relative, one-sided at a boundary variance. Its own error is ~1e-9 relative in the interior.
    """
    nu = ev.n - ev.p(model)
    phi0 = np.concatenate(([fit.s2], fit.s2 * fit.theta))

    def grad(phi: np.ndarray) -> np.ndarray:
        s2 = phi[0]
        th = phi[1:] / s2
        _, (gth, rss) = ev.full(model, s2, th, grad=True)
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


def profile_interval(ev: Evaluator, model: str, fit: FitResult, which: int, level: float,
                     hess: np.ndarray | None = None) -> tuple[float, float, dict[str, Any]]:
    """Profile-likelihood interval for one variance on the REML criterion.

    ``which = 0`` is s2_residual; ``which = i >= 1`` is s2_residual * theta_{i-1}. The interval is
    {v : min over the other variances of -2 l_R(v, ...) - min(-2 l_R) <= chi2_{1, level}}. The search runs on the
    standard-deviation scale s = sqrt(v), where the signed root zeta(s) = sign(s - s_hat) sqrt(profile - min)
    is close to linear (as in lme4's ``profile``): secant steps from the quadratic approximation, then Brent's
    method on the bracket. Each point re-optimises the other variances. The lower bound is 0 when the
    criterion at v = 0 is within the cutoff (always when the estimate is at the boundary).
    """
    crit = float(stats.chi2.ppf(level, 1))
    zcut = math.sqrt(crit)
    dmin = fit.deviance
    q = len(fit.theta)
    nu = ev.n - ev.p(model)
    vhat = float(np.concatenate(([fit.s2], fit.s2 * fit.theta))[which])
    s_hat = math.sqrt(max(vhat, 0.0))
    n_eval0 = ev.counter
    if hess is None:
        hess = variance_hessian(ev, model, fit)
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
                val, (g, _rss) = ev.full(model, v, x, grad=True)
                return val, g
            x, fx, info = _minimize(fun, x0, np.zeros(q), tol=1e-9, hess0=warm.get("H"))
            warm["x"], warm["H"] = x, info["hess"]
            return fx
        i = which - 1
        if v <= 0.0:
            if q == 1:
                return ev.profiled(model, np.zeros(1))[0]

            def fun0(z):
                full = np.insert(z, i, 0.0)
                val, g = ev.profiled(model, full, grad=True)
                return val, np.delete(g, i)
            h0 = warm.get("H")
            h0 = None if h0 is None else np.delete(np.delete(h0, i, axis=0), i, axis=1)
            _, fz, _ = _minimize(fun0, np.delete(np.maximum(x0, 1e-3), i), np.zeros(q - 1), tol=1e-9, hess0=h0)
            return fz

        def fun(x):
            ti = x[i]
            val, (g, rss) = ev.full(model, v / ti, x, grad=True)
            g = g.copy()
            g[i] += -nu / ti + rss / v      # s2 = v/ti: d/dti [nu log s2 + rss/s2]
            return val, g
        x0[i] = v / warm.get("s2", fit.s2)          # keep s2_residual where it was
        lower = np.zeros(q)
        lower[i] = 1e-12 * x0[i]
        x, fx, info = _minimize(fun, x0, lower, tol=1e-9, hess0=warm.get("H"))
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
    return lower, upper, {"evaluations": ev.counter - n_eval0}


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
        ta, tb = float(theta[0]), float(theta[1]) if q > 1 else 0.0
        dm = ev.core(ta, tb, grad=True)[2][:q, :k, :k]          # (q, K, K): dM/dtheta_i
        sand = minv @ dm @ minv                                   # M^{-1} M_i M^{-1}
        out["dcov_eta"] = np.concatenate(((minv + np.tensordot(theta, sand, axes=1))[None], -sand))
    return out
