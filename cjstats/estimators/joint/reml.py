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
A group's pieces (w_c, f_g, q_g, its 1/(1 + theta q) factor) depend on two variances only, its model's theta_ms and
theta_b, so their jets are taken along those two and placed into the stack of every direction afterwards
(``_NestedGram``): with one model x scenario variance per model that removes a factor ~P from the per-group work.
The optimiser (L-BFGS-B with that gradient on sqrt(theta) >= 0, like lme4's theta >= 0, then Newton steps on
the inner coordinates) finds boundary optima exactly at 0. With one generation in every (model, scenario), the
generation term is not identifiable (it is the ``scenario:model`` term) and is dropped; ``model_scenario``
then holds both.

Reported (``components``):

- ``scenario``, ``model_scenario``, ``generation``, ``residual``: the REML variances; interval: Wald on the
  log scale from the exact Hessian of the REML deviance in the variances (``_variance_hessian``; none at a
  boundary, where the row says so).
- ``mu`` per model: the row mean of the GLS cell means, t interval with Satterthwaite df (below).
- ``judge_panel`` and ``judge_model`` (panel view): mean of the squared estimated effects minus the mean of
  their sampling variances, (|g|^2 - tr Cov g)/count, with g the judge (or judge x model interaction) effects
  of the GLS cell means. Interval: W = g'Cov(g)^+ g is noncentral chi-square(df, lambda) and
  lambda = count x value / mean nonzero eigenvalue of Cov(g); on balanced data this is the ANOVA interval.
- ``judge_model`` and ``judge_population`` (population view): the REML variances of (1|judge:model) and
  (1|judge) in the model with judges random (``_judges_random_deviance``: the judge columns lie in the span of
  the cell means, so the criterion reuses the fixed-judge quantities; on heavily incomplete tables the moment
  values (|h|^2 - tr Cov h)/df of the GLS effects differ from it), with the MLS intervals of those moments
  (``_population_rows``).
- The test of no judge x model interaction is the likelihood-ratio test of ``model * judge`` against
  ``model + judge``, both fitted by ML, on (P - 1)(K - 1) df.

Contrasts c'eta of the cell means use the GLS covariance Sigma = s2_eps (X'H^{-1}X)^{-1} with Satterthwaite's degrees
of freedom, lmerTest's rule: nu = 2 (c'Sigma c)^2 / (g'Ag), g_j = c' dSigma/dphi_j c over the variances phi =
(s2_eps, s2_eps theta) (``_cov_derivatives``: dSigma/dphi_i = -A^{-1} A_i A^{-1}, dSigma/ds2_eps = A^{-1} +
sum_i theta_i A^{-1} A_i A^{-1}, A = X'H^{-1}X, A_i = dA/dtheta_i exact from the jets) and A = 2 H^{-1} from the exact
Hessian of the REML deviance (:func:`engine.satterthwaite_covariance`). So each pair of models gets its own df
when the model x scenario variance is per model, and so does any contrast whose variance mixes components (a
model's mean mixes the scenario and model x scenario variances). On balanced data with one pooled variance it
reproduces the containment df, which remain the fallback where the formula is undefined: N - cells - P(K - 1)
for interaction contrasts (within-model sums zero), (model, scenario) groups - scenarios - (P - 1) for contrasts
between models, scenarios - 1 otherwise. (lmerTest differentiates in the standard deviations, where a variance
at 0 drops out; here it stays in A, as in the per-model fits.)
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special
from scipy.linalg.lapack import dpotrf as _potrf, dpotri as _potri, dtrtrs as _trtrs

from cjstats import _dist
from cjstats._blas import single_thread_blas
from cjstats.results.components import ComponentRow
from cjstats.results.contrast import JointCovariance
from cjstats.estimators.joint._joint import (JOINT_LABEL, JointFit, check_judges_scored, check_residual,
                                       components_frame, joint_stats, mls_row)
from cjstats.estimators.intervals import noncentral_chi2_interval
from cjstats.estimators.reml import engine
from cjstats.estimators.reml.engine import FitResult
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.stats import NestedStats

__all__ = ["reml_deviance", "fit_nested", "NestedFit", "fit_joint", "ExtraColumns", "model_scenario_test"]

_NAN = float("nan")


@functools.lru_cache(maxsize=64)
def _block_index(p: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the P model blocks (K x K, model-major) in a (P K + 1)-square matrix."""
    q, i, j = np.meshgrid(np.arange(p), np.arange(k), np.arange(k), indexing="ij")
    return (q * k + i).ravel(), (q * k + j).ravel()


def _subtract_blocks(blocks: np.ndarray, p: int, k: int, out: np.ndarray) -> None:
    """out -= blocks[..., q, :, :] in model q's [judges, shared] rows and columns (blocks (..., P, K+L, K+L): the
    model's K judges, then L columns shared by every model, the E extra fixed columns and y last; out
    (..., P K + L, P K + L), the leading axes matching)."""
    y = p * k
    r, c = _block_index(p, k)
    lead = blocks.shape[:-3]
    out[..., r, c] -= blocks[..., :k, :k].reshape(lead + (-1,))
    out[..., :y, y:] -= blocks[..., :k, k:].reshape(lead + (y, -1))
    out[..., y:, :y] -= np.swapaxes(blocks[..., k:, :k], -3, -2).reshape(lead + (-1, y))
    out[..., y:, y:] -= blocks[..., k:, k:].sum(axis=-3)


def _per_model_outer(ns: NestedStats) -> Any:
    """(a, b) -> per model sum over its groups of a_g b_g' ((..., G, K+1) each -> (..., P, K+1, K+1)): one batched
    matrix product when every model has the same number of groups, else one product per model."""
    p, g = ns.n_models, ns.n_groups
    if g % p == 0 and np.array_equal(ns.group_starts, np.arange(p) * (g // p)):
        n = g // p

        def outer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            a4 = a.reshape(a.shape[:-2] + (p, n, a.shape[-1]))
            b4 = b.reshape(b.shape[:-2] + (p, n, b.shape[-1]))
            return np.swapaxes(a4, -1, -2) @ b4
        return outer
    bounds = list(zip(ns.group_starts, [*ns.group_starts[1:], g]))
    return lambda a, b: np.stack([np.swapaxes(a[..., i:j, :], -1, -2) @ b[..., i:j, :] for i, j in bounds], axis=-3)


@dataclass(frozen=True, slots=True)
class ExtraColumns:
    r"""Fixed-effect columns beside the P K cell indicators (the hook of :class:`NestedCriterion`; e.g. each
    judge's slope on an item covariate, :mod:`cjstats.estimators.joint.covariates`).

    The nested identities of the module docstring need of any column a only a'b (row level) and its cell sums
    a_c, so E extra columns X_e enter by widening every cell's vector [D_c; Y_c] to [D_c; E_c; Y_c] (E_c the
    cell sums of X_e), the extra columns shared by every model like y. With X = [cell indicators, X_e] (P K + E
    columns), everything downstream (beta, rss, log|X'H^{-1}X| and their exact derivatives) is unchanged, and
    nothing about the variance parameters changes. Arrays, in the order of the :class:`NestedStats` they go with
    (its models, judges, sizes and groups; y centred by its ``shift``):

    - ``gram`` (P K + E + 1)^2: [X, X_e, y]'[X, X_e, y] over the rows;
    - ``cell_aug`` (P, S, K+E+1, K+E+1): per model and cell size, sum_c [D_c; E_c; Y_c][D_c; E_c; Y_c]';
    - ``group_aug`` (G, S, K+E+1): per group and cell size, sum_c [D_c; E_c; Y_c].
    """

    n: int
    gram: np.ndarray
    cell_aug: np.ndarray
    group_aug: np.ndarray


class _Jets:
    r"""Second-order forward differentiation along ``nd`` directions, exact to rounding.

    A jet of an array x of shape s is one stacked array of shape (J,) + s: [value, d_1 .. d_nd, d_11, d_12, ..,
    d_nd,nd] along the first axis (J = 1 + nd + nd(nd+1)/2; first derivatives only for ``order=1``, the value only
    for ``order=0``). The rules: a linear map L acts on every entry; a bilinear product B(x, y) has
    d_i = B(x_i, y) + B(x, y_i) and d_ij = B(x_ij, y) + B(x_i, y_j) + B(x_j, y_i) + B(x, y_ij); a scalar function
    f(x) has d_i = f'(x) x_i and d_ij = f'(x) x_ij + f''(x) x_i x_j. Every rule is a handful of batched array
    operations over the stacked entries, whatever nd is (the operations ``op`` broadcast over leading axes).
    """

    def __init__(self, nd: int, order: int) -> None:
        self.nd = nd if order >= 1 else 0
        pairs = [(i, j) for i in range(nd) for j in range(i, nd)] if order >= 2 else []
        self.n_pairs = len(pairs)
        self.pi = 1 + np.array([i for i, _ in pairs], dtype=np.int64)     # stack index of d_i of each pair
        self.pj = 1 + np.array([j for _, j in pairs], dtype=np.int64)
        self.size = 1 + self.nd + self.n_pairs

    def var(self, value: float, direction: int | None) -> np.ndarray:
        """A scalar variable (shape (J,)): derivative 1 along ``direction`` (None: a constant)."""
        out = np.zeros(self.size)
        out[0] = value
        if direction is not None and self.nd:
            out[1 + direction] = 1.0
        return out

    def var_array(self, value: np.ndarray, directions: list[int | None]) -> np.ndarray:
        """An array of variables (shape (J, n)), entry e with derivative 1 along ``directions[e]`` (None: a constant)."""
        value = np.asarray(value, dtype=np.float64)
        out = np.zeros((self.size,) + value.shape)
        out[0] = value
        for e, d in enumerate(directions):
            if d is not None and self.nd:
                out[1 + d, e] = 1.0
        return out

    #: Entries (per stack entry) from which :meth:`mul` takes its pairs of directions one at a time on views
    #: rather than by indexing the stacks (which copies them once per pair); the same operations either way.
    BIG = 4096

    def mul(self, x: np.ndarray, y: np.ndarray, op: Any = np.multiply) -> np.ndarray:
        nd = self.nd
        if self.n_pairs and max(x[0].size, y[0].size) >= self.BIG:
            return self._mul_views(x, y, op)
        parts = [op(x[:1], y[:1])]
        if nd:
            parts.append(op(x[1:1 + nd], y[:1]) + op(x[:1], y[1:1 + nd]))
        if self.n_pairs:
            h = slice(1 + nd, None)
            parts.append(op(x[h], y[:1]) + op(x[self.pi], y[self.pj]) + op(x[self.pj], y[self.pi])
                         + op(x[:1], y[h]))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _mul_views(self, x: np.ndarray, y: np.ndarray, op: Any) -> np.ndarray:
        """:meth:`mul` term for term, one pair of directions at a time (large entries: no copies of the stacks)."""
        nd = self.nd
        first = op(x[:1], y[:1])
        out = np.empty((self.size,) + first.shape[1:], dtype=first.dtype)
        out[0] = first[0]
        if nd:
            out[1:1 + nd] = op(x[1:1 + nd], y[:1]) + op(x[:1], y[1:1 + nd])
        for h, (i, j) in enumerate(zip(self.pi.tolist(), self.pj.tolist()), start=1 + nd):
            out[h] = (op(x[h:h + 1], y[:1]) + op(x[i:i + 1], y[j:j + 1]) + op(x[j:j + 1], y[i:i + 1])
                      + op(x[:1], y[h:h + 1]))[0]
        return out

    def cross(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The jet of x'y for jets of matrices x (J, n, a) and y (J, n, b): shape (J, a, b). The rule of :meth:`mul`
        with op(a, b) = a'b, term for term and summed in the same order, but one 2-D matrix product per term on
        views of x and y (the batched form copies x and y once per pair of directions to index them, which on
        a large table (one model x scenario variance per model, MentalAlign: 78 pairs x 1,000 scenarios x 41
        columns) costs more than the products). Each product is the same BLAS call on the same numbers, so the
        result equals the batched form's bit for bit."""
        nd = self.nd
        xt = np.swapaxes(x, -1, -2)
        out = np.empty((self.size, x.shape[-1], y.shape[-1]))
        np.matmul(xt[0], y[0], out=out[0])
        for i in range(1, 1 + nd):
            out[i] = xt[i] @ y[0] + xt[0] @ y[i]
        for h, (i, j) in enumerate(zip(self.pi.tolist(), self.pj.tolist()), start=1 + nd):
            out[h] = xt[h] @ y[0] + xt[i] @ y[j] + xt[j] @ y[i] + xt[0] @ y[h]
        return out

    def quad_sum(self, c: np.ndarray, x: np.ndarray, apply: Any) -> np.ndarray:
        """The jet of sum_n c_n x_n'G_r x_n for scalar jets c (J, n) and vector jets x (J, n, L), with symmetric
        G_r given by ``apply`` (v of shape (..., L) -> G v of shape (..., R, L)): shape (J, R). With s = x'Gx,
        s_i = 2 x_i'G x and s_ij = 2 x_ij'G x + 2 x_i'G x_j, so G is applied to x's value and first derivatives
        only, and every sum over n of a product is one matrix product."""
        nd, n_lead = self.nd, x.shape[1:-1]
        gx = apply(x[:1 + nd] if self.n_pairs else x[:1])                     # (1 [+ nd], n, R, L)
        nr, nl = gx.shape[-2], gx.shape[-1]
        s0 = (x[0][..., None, :] * gx[0]).sum(axis=-1)                          # (n, R)
        c0 = c[0].reshape(-1)
        parts = [(c0 @ s0.reshape(-1, nr))[None]]
        if nd:
            si = 2.0 * (x[1:1 + nd][..., None, :] * gx[0]).sum(axis=-1)         # (nd, n, R)
            c1 = c[1:1 + nd].reshape(nd, -1)
            parts.append(c1 @ s0.reshape(-1, nr) + np.tensordot(c0, si.reshape(nd, -1, nr), axes=([0], [1])))
        if self.n_pairs:
            h = slice(1 + nd, None)
            i, j = self.pi - 1, self.pj - 1
            w0 = (c[0].reshape(n_lead + (1, 1)) * gx[0]).swapaxes(-1, -2).reshape(-1, nr)   # (n L, R)
            t1 = x[h].reshape(self.n_pairs, -1) @ w0                             # sum c0 x_ij'G x
            cx = (c[0].reshape((1,) + n_lead + (1,)) * x[1:1 + nd]).reshape(nd, -1)          # (nd, n L)
            gj = np.moveaxis(gx[1:], 0, -2).swapaxes(-1, -3).reshape(-1, nd * nr)            # (n L, nd R)
            cross = (cx @ gj).reshape(nd, nd, nr)                                # sum c0 x_i'G x_j
            cs_ = np.tensordot(c1, si.reshape(nd, -1, nr), axes=([1], [1]))      # sum c_i s_j, (nd, nd, R)
            parts.append(c[h].reshape(self.n_pairs, -1) @ s0.reshape(-1, nr) + cs_[i, j] + cs_[j, i]
                         + 2.0 * t1 + 2.0 * cross[i, j])
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def fn(self, x: np.ndarray, f0: np.ndarray, f1: np.ndarray, f2: np.ndarray) -> np.ndarray:
        nd = self.nd
        out = np.empty_like(x)
        out[0] = f0
        if nd:
            out[1:1 + nd] = f1 * x[1:1 + nd]
        if self.n_pairs:
            out[1 + nd:] = f1 * x[1 + nd:] + f2 * x[self.pi] * x[self.pj]
        return out

    def inv(self, x: np.ndarray) -> np.ndarray:
        """Matrix inverse of a jet of square matrices (J, n, n): with V = X^{-1}, d_i = -V X_i V and
        d_ij = -V X_ij V + V X_i V X_j V + V X_j V X_i V."""
        nd = self.nd
        v = np.linalg.inv(x[0])
        out = np.empty_like(x)
        out[0] = v
        if nd:
            vxv = -(v @ x[1:1 + nd] @ v)                          # d_i
            out[1:1 + nd] = vxv
        if self.n_pairs:
            vx = v @ x[1:1 + nd]                                    # V X_i
            out[1 + nd:] = -(v @ x[1 + nd:] @ v) + vx[self.pi - 1] @ vx[self.pj - 1] @ v + \
                vx[self.pj - 1] @ vx[self.pi - 1] @ v
        return out

    def logdet(self, x: np.ndarray) -> np.ndarray:
        """log|X| of a jet of positive definite matrices (J, n, n): d_i = tr(V X_i), d_ij = tr(V X_ij) -
        tr(V X_i V X_j) with V = X^{-1}; shape (J,)."""
        nd = self.nd
        chol = np.linalg.cholesky(x[0])
        out = np.empty(self.size)
        out[0] = 2 * float(np.log(np.diagonal(chol)).sum())
        if nd:
            v = np.linalg.inv(x[0])
            vx = v @ x[1:1 + nd]
            out[1:1 + nd] = np.trace(vx, axis1=-2, axis2=-1)
            if self.n_pairs:
                out[1 + nd:] = (np.einsum("ab,hba->h", v, x[1 + nd:])
                                - np.einsum("hab,hba->h", vx[self.pi - 1], vx[self.pj - 1]))
        return out

    def inv1p(self, x: np.ndarray) -> np.ndarray:
        """1/(1 + x): derivatives -r^2, 2 r^3."""
        r = 1.0 / (1.0 + x[0])
        return self.fn(x, r, -r * r, 2 * r**3)

    def log1p(self, x: np.ndarray) -> np.ndarray:
        """log(1 + x): derivatives r, -r^2 with r = 1/(1 + x)."""
        r = 1.0 / (1.0 + x[0])
        return self.fn(x, np.log1p(x[0]), r, -r * r)


def _weighted_gram(theta: np.ndarray, ns: NestedStats, t: np.ndarray | None,
                   extra: ExtraColumns | None = None) -> tuple[np.ndarray, float]:
    """[X, y]'H^{-1}[X, y] and log|H| at relative variances theta = (theta_a, theta_ms, theta_b).

    Computed in the cell-means basis (P K columns + y), where the generation and (model, scenario) levels are
    block-diagonal by model, then mapped to X = cell indicator x T. Every cell of size h has the same weight
    w_h = 1/(1 + h theta_b), so the cell level is sum_h theta_b w_h sum_c [D_c; Y_c][D_c; Y_c]' per model and
    f_g = sum_h w_h sum_{c in g, size h} [D_c; Y_c]: the per-size sums of :class:`~cjstats.stats.NestedStats`.
    """
    (m,), (logdet,) = _weighted_gram_jet(theta, ns, t, (), 0, extra)
    return m, float(logdet)


def _weighted_gram_jet(theta: np.ndarray, ns: NestedStats, t: np.ndarray | None, dirs: tuple[int, ...],
                       order: int, extra: ExtraColumns | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Jets (:class:`_Jets`) of M = [X, y]'H^{-1}[X, y] and log|H| along theta[dirs], up to ``order`` (0-2).

    theta = (theta_a, theta_ms, theta_b), or (theta_a, theta_ms[1..P], theta_b) with one model x scenario variance
    per model (each group g then has theta_ms of its model). The formulas of :func:`_weighted_gram`
    differentiated by the chain rule through (d/dtheta_b) w_h = -h w_h^2, (theta_b w_h)' = w_h^2, f_g, q_g,
    d_g = 1/(1 + theta_ms q_g), (theta_ms d_g), F_i, Q_i, d_i = 1/(1 + theta_a Q_i), (theta_a d_i) and log|H|;
    the second derivatives likewise (the product rule of :class:`_Jets`), so M's derivatives are exact to
    rounding, with no step size. Returns the stacked jets of M ((J, q+1, q+1)) and of log|H| ((J,)). With
    ``extra`` (:class:`ExtraColumns`) X gains its E columns after the P K (t) columns: q = t columns + E.
    (The pieces are :class:`_NestedGram`'s; this is its full-matrix readout.)
    """
    g = _NestedGram(theta, ns, dirs, order, extra)
    return g.transform(g.matrix(order), t), g.logdet


_PLANS: dict[tuple, tuple[Any, Any, "_GramPlan"]] = {}


class _GramPlan:
    """What :class:`_NestedGram` needs besides theta, fixed by the statistics, the number of model x scenario
    variances r, the directions and the order: the jet rules, where each group's local directions go in the stack
    of all directions, index arrays and the constant part of M (kept per statistics object, :func:`_gram_plan`)."""

    def __init__(self, ns: NestedStats, r: int, dirs: tuple[int, ...], order: int,
                 extra: ExtraColumns | None) -> None:
        p, k = ns.n_models, ns.n_judges
        self.jt = jt = _Jets(len(dirs), order)
        ib = self.ib = r + 1
        self.ta_dir, self.tb_dir = (dirs.index(i) if i in dirs else None for i in (0, ib))
        self.ms_of_model = np.zeros(p, dtype=np.int64) if r == 1 else np.arange(p)
        self.ms_dirs = ms_dirs = [dirs.index(1 + j) if 1 + j in dirs else None for j in range(r)]
        pk = self.pk = p * k
        ne = self.ne = 0 if extra is None else extra.n
        dim = self.dim = pk + ne + 1                                       # cells, extra columns, y
        if extra is None:
            base = np.zeros((dim, dim))
            base[np.arange(pk), np.arange(pk)] = ns.counts
            base[:pk, pk] = base[pk, :pk] = ns.sums
            base[pk, pk] = ns.yy
            self.cell_aug, self.group_aug = ns.cell_aug, ns.group_aug
        else:
            base = extra.gram
            self.cell_aug, self.group_aug = extra.cell_aug, extra.group_aug
        self.base = base
        self.sizes = ns.sizes.astype(float)
        self.cells_per_size = ns.size_cells.sum(axis=0)
        # A group's pieces depend on two variances only, its model's theta_ms and theta_b: their jets are taken
        # along those ("local" directions, the same rules) and placed into the stack of every direction after.
        self.own = any(d is not None for d in ms_dirs)
        ldirs = self.ldirs = ([0] if self.own else []) + ([1] if ib in dirs else [])   # 0: own theta_ms, 1: theta_b
        self.jl = jl = _Jets(len(ldirs), order)
        gdir = [[ms_dirs[self.ms_of_model[q]] if a == 0 else dirs.index(ib) for a in ldirs] for q in range(p)]
        self.maps = [self._local_map(jl, g, len(dirs), order) for g in gdir]
        self.one_map = all(np.array_equal(m[1], self.maps[0][1]) for m in self.maps)
        self.has_dir = np.array([ms_dirs[self.ms_of_model[q]] is not None for q in range(p)], dtype=float)
        self.group_bounds = list(zip(ns.group_starts, [*ns.group_starts[1:], ns.n_groups]))
        self.outer = _per_model_outer(ns)
        self._basis: tuple[np.ndarray, np.ndarray | None] | None = None
        n_scen, nj = ns.n_scenarios, jt.size
        self.flat = ((ns.group_scen * dim + ns.group_model * k)[:, None] + np.arange(k)).ravel()  # into (n, dim)
        # every model in every scenario, groups model-major in scenario order: F_i's judge columns are then a
        # transpose of the group vectors (a strided copy instead of an indexed one; the same numbers placed)
        self.grid = bool(ns.n_groups == p * n_scen
                         and np.array_equal(ns.group_model, np.repeat(np.arange(p), n_scen))
                         and np.array_equal(ns.group_scen, np.tile(np.arange(n_scen), p)))
        self.scen_of = (np.arange(nj)[:, None] * n_scen + ns.group_scen[None, :]).ravel()
        self.block_idx = np.concatenate([np.arange(p)[:, None] * k + np.arange(k),
                                         np.broadcast_to(np.arange(pk, dim), (p, dim - pk))], axis=1)   # (P, K+L)

    @staticmethod
    def _local_map(jl: _Jets, gdir: list[int | None], nd: int, order: int) -> tuple[np.ndarray, np.ndarray]:
        """(local stack entries, their places in the stack of all nd directions) for one model: local direction a
        is direction gdir[a] (None: not differentiated, its entries dropped)."""
        loc, glob = [0], [0]
        for a, g in enumerate(gdir):
            if g is not None and jl.nd:
                loc.append(1 + a)
                glob.append(1 + g)
        if order >= 2:
            pairs = {pr: 1 + nd + h for h, pr in enumerate((i, j) for i in range(nd) for j in range(i, nd))}
            lpairs = [(a, b) for a in range(len(gdir)) for b in range(a, len(gdir))]
            for h, (a, b) in enumerate(lpairs):
                if gdir[a] is not None and gdir[b] is not None:
                    loc.append(1 + jl.nd + h)
                    glob.append(pairs[tuple(sorted((gdir[a], gdir[b])))])
        return np.asarray(loc), np.asarray(glob)

    def basis(self, t: np.ndarray | None) -> np.ndarray | None:
        """The map tt from the t-basis [X t, extra, y] to the cell-means basis (None: the identity); the last t
        seen is remembered (a criterion passes the same array at every evaluation)."""
        if t is None:
            return None
        seen = self._basis                  # read once: another thread may replace it
        if seen is not None and seen[0] is t:
            return seen[1]
        pk = self.pk
        if t.shape[0] == t.shape[1] and np.array_equal(t, np.eye(pk)):
            tt = None
        else:
            q = t.shape[1]
            tt = np.zeros((self.dim, q + self.ne + 1))
            tt[:pk, :q] = t
            tt[pk:, q:] = np.eye(self.ne + 1)
        self._basis = (t, tt)
        return tt

    def to_global(self, x: np.ndarray, over_groups: bool) -> np.ndarray:
        """Local jets (Jl, n, ...) into the stack of all directions (J, n, ...); the second axis runs over groups
        (ordered by model) or, with ``over_groups`` False, over models."""
        out = np.zeros((self.jt.size,) + x.shape[1:])
        if self.one_map:
            loc, glob = self.maps[0]
            out[glob] = x[loc]
            return out
        bounds = self.group_bounds if over_groups else [(q, q + 1) for q in range(len(self.maps))]
        for (loc, glob), (lo, hi) in zip(self.maps, bounds):
            out[glob, lo:hi] = x[loc, lo:hi]
        return out


def _gram_plan(ns: NestedStats, r: int, dirs: tuple[int, ...], order: int, extra: ExtraColumns | None) -> _GramPlan:
    """The :class:`_GramPlan` of these statistics, built once (the last 16 kept; the key holds the objects)."""
    key = (id(ns), id(extra), r, tuple(dirs), order)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is ns and hit[1] is extra:
        return hit[2]
    plan = _GramPlan(ns, r, dirs, order, extra)
    while len(_PLANS) >= 16:
        try:
            _PLANS.pop(next(iter(_PLANS)))
        except (StopIteration, KeyError, RuntimeError):   # emptied or changed by another thread meanwhile
            break
    _PLANS[key] = (ns, extra, plan)
    return plan


class _NestedGram:
    r"""The jets of the pieces of M = [X, y]'H^{-1}[X, y] (cell-means basis) along theta[dirs] up to ``order``:
    the cell weights theta_b w_h, the group vectors f_g and d_g f_g, theta_ms per group, the scenario vectors F_i
    and theta_a d_i (:func:`_weighted_gram_jet`), and the jet of log|H|. Two readouts:

    - :meth:`matrix`: the jets of M itself (the three sums of outer products of the module docstring);
    - :meth:`contract`: the jets of <G, M> = sum_ab G_ab M_ab for fixed symmetric G, without forming M's
      derivatives: each sum of outer products c a b' contracts to c (a'G b), a scalar per group or scenario, and
      a'G b differentiates by the product rule (:meth:`_Jets.quad`). A REML criterion needs its matrix's
      derivatives only through such contractions (z'M_ij z and tr(A^{-1} A_ij) for a fixed z and A^{-1}), so
      its second derivatives cost O(groups x K^2 + scenarios x dim^2) per direction instead of one
      (dim x dim) outer-product sum per pair of directions.
    """

    def __init__(self, theta: np.ndarray, ns: NestedStats, dirs: tuple[int, ...], order: int,
                 extra: ExtraColumns | None) -> None:
        r = len(theta) - 2                      # model x scenario variances: 1 (pooled) or P (one per model)
        plan = self.plan = _gram_plan(ns, r, dirs, order, extra)
        jt, jl = plan.jt, plan.jl
        self.jt = jt
        self.ns, self.order, self.extra = ns, order, extra
        self.ne, self.dim, self.base, self.cell_aug = plan.ne, plan.dim, plan.base, plan.cell_aug
        p, k, ib, pk = ns.n_models, ns.n_judges, plan.ib, plan.pk
        ta, tb = jt.var(theta[0], plan.ta_dir), jt.var(theta[ib], plan.tb_dir)
        self.active = [theta[0] > 0 or plan.ta_dir is not None, bool(np.any(theta[1:ib] > 0)) or plan.own,
                       theta[ib] > 0 or plan.tb_dir is not None]
        nj = jt.size
        sizes = plan.sizes
        scal = lambda a, b: a[:, None] * b                                 # noqa: E731 - (J,) scalars times (J, n)
        htb = tb[:, None] * sizes                                          # h theta_b, (J, S)
        self.u = jt.mul(tb, jt.inv1p(htb), scal) if self.active[2] else None   # theta_b w_h, (J, S)
        tb_l = jl.var(theta[ib], plan.ldirs.index(1) if 1 in plan.ldirs else None)   # local jets from here
        w = jl.inv1p(tb_l[:, None] * sizes)                                # w_h
        group_aug = plan.group_aug
        f = sum(w[:, h, None, None] * group_aug[None, :, h] for h in range(len(sizes)))   # f_g, (Jl, G, K+E+1)
        qg = (w * sizes) @ ns.group_cnt.T                                  # q_g, (Jl, G)
        tm_p = np.zeros((jl.size, p))                                      # theta_ms of each model
        tm_p[0] = theta[1 + plan.ms_of_model]
        if plan.own and jl.nd:
            tm_p[1] = plan.has_dir
        tq = jl.mul(tm_p[:, ns.group_model], qg)
        dg = jl.inv1p(tq)
        rows = self._rows = lambda a, b: b * a[..., None]                  # noqa: E731 - scale the rows of b by a
        fd_l = jl.mul(dg, f, rows)                                         # d_g f_g
        if self.active[1]:          # sum_g theta_ms (d_g f_g) f_g' per model, (J, P, K+E+1, K+E+1)
            outer = jl.mul(fd_l, f, plan.outer)
            self.group_term = plan.to_global(jl.mul(tm_p, outer, lambda a, b: a[..., None, None] * b), False)
        n_scen = ns.n_scenarios
        fd = plan.to_global(fd_l, True)
        scen_of = plan.scen_of

        def scen_sum(c: np.ndarray) -> np.ndarray:
            """(J, G) -> (J, n): sums over each scenario's groups."""
            return np.bincount(scen_of, weights=c.ravel(), minlength=nj * n_scen).reshape(nj, n_scen)

        # F_i, (J, n, dim): on a complete table every column is written below (the judge columns of every model,
        # then the shared ones), elsewhere a model's columns stay 0 in the scenarios it did not see
        fs = (np.empty if plan.grid else np.zeros)((nj, n_scen, self.dim))
        if plan.grid:
            np.reshape(fs[:, :, :pk], (nj, n_scen, p, k), copy=False)[...] = \
                fd[:, :, :k].reshape(nj, p, n_scen, k).transpose(0, 2, 1, 3)
        else:
            src, flat = fd[:, :, :k].reshape(nj, -1), fs.reshape(nj, -1)
            for j in range(nj):             # row by row: one fancy assignment over all rows is slower
                flat[j, plan.flat] = src[j]
        for j in range(self.ne + 1):                                       # the shared columns: extra, then y
            fs[:, :, pk + j] = scen_sum(fd[:, :, k + j])
        qs = scen_sum(plan.to_global(jl.mul(qg, dg), True))                # Q_i, (J, n)
        ts = jt.mul(ta, qs, scal)
        self.fs = fs
        self.cs = jt.mul(ta, jt.inv1p(ts), scal) if self.active[0] else None   # theta_a d_i
        # sum_g log(1 + theta_ms q_g) in the stack of all directions, as it was always summed (the layout of these
        # arrays fixes the order of the sum over groups, so log|H| keeps its rounding)
        tm_all = jt.var_array(theta[1 + plan.ms_of_model], [plan.ms_dirs[j] for j in plan.ms_of_model])
        tq_all = jt.mul(tm_all[:, ns.group_model], plan.to_global(qg, True))
        self.logdet = (jt.log1p(htb) @ plan.cells_per_size + jt.log1p(tq_all).sum(axis=-1)
                       + jt.log1p(ts).sum(axis=-1))

    def _to(self, order: int) -> tuple[_Jets, int]:
        """The jet rules of ``order`` (<= the pieces' order) and how many leading stack entries they read."""
        jt = self.jt if order == self.order else _Jets(self.jt.nd, order)
        return jt, jt.size

    def matrix(self, order: int) -> np.ndarray:
        """The jets of M in the cell-means basis up to ``order``, (J, dim, dim)."""
        jt, nj = self._to(order)
        ns, dim = self.ns, self.dim
        p, k = ns.n_models, ns.n_judges
        m = np.zeros((nj, dim, dim))
        m[0] = self.base
        if self.active[2]:
            _subtract_blocks(np.tensordot(self.u[:nj], self.cell_aug, axes=([1], [1])), p, k, m)
        if self.active[1]:
            _subtract_blocks(self.group_term[:nj], p, k, m)
        if self.active[0]:
            fs = self.fs[:nj]
            m -= jt.cross(jt.mul(self.cs[:nj], fs, self._rows), fs)
        return m

    def transform(self, m: np.ndarray, t: np.ndarray | None) -> np.ndarray:
        """M in the basis X = cell indicators x t (then the extra columns and y): tt' M tt."""
        tt = self.basis(t)
        return m if tt is None else tt.T @ m @ tt

    def basis(self, t: np.ndarray | None) -> np.ndarray | None:
        """The map tt from the t-basis [X t, extra, y] to the cell-means basis (None: the identity)."""
        return self.plan.basis(t)

    def contract(self, g: np.ndarray) -> np.ndarray:
        r"""Jets of <G_r, M> for a stack of R symmetric (dim, dim) matrices G (cell-means basis), (J, R).

        <G, M> = <G, M_0> - sum_h u_h sum_p <G_p, C_ph> - sum_g theta_ms,g (d_g f_g)'G_p(g) f_g
        - sum_i (theta_a d_i) F_i'G F_i, with G_p the block of G on model p's judges and the shared columns and
        C_ph the per-model, per-size cell cross-products (``cell_aug``). The group sums are small ((K+E+1)^2 per
        model) and are contracted once formed; the scenario sums (dim^2 per scenario) never are."""
        jt = self.jt
        out = np.zeros((jt.size, len(g)))
        out[0] = np.einsum("rab,ab->r", g, self.base)
        if self.active[2] or self.active[1]:
            idx = self.plan.block_idx                                                       # (P, K+L)
            gb = g[:, idx[:, :, None], idx[:, None, :]]                                      # (R, P, K+L, K+L)
        if self.active[2]:
            out -= self.u @ np.einsum("rpab,phab->hr", gb, self.cell_aug)
        if self.active[1]:
            out -= np.einsum("rpab,jpab->jr", gb, self.group_term)        # formed (small), then contracted
        if self.active[0]:
            dim, nr = self.dim, len(g)
            gcat = np.swapaxes(g, 0, 1).reshape(dim, nr * dim)                                # [G_1 .. G_R]
            out -= jt.quad_sum(self.cs, self.fs, lambda v: (v @ gcat).reshape(v.shape[:-1] + (nr, dim)))
        return out


def _gls_terms(theta: np.ndarray, ns: NestedStats, t: np.ndarray, dirs: tuple[int, ...] = (), order: int = 0,
               extra: ExtraColumns | None = None, dense: bool = False) -> dict:
    r"""rss(theta), log|H|, log|A| (A = X'H^{-1}X), beta, and their derivatives along theta[dirs].

    With M = [X y]'H^{-1}[X y] = [[A, b], [b', c]], beta = A^{-1}b, rss = c - b'beta and z = (-beta, 1):

        d_i rss = z' M_i z,    d_ij rss = z' M_ij z - 2 (M_i z)_X' A^{-1} (M_j z)_X,
        d_i log|A| = tr(A^{-1} A_i),    d_ij log|A| = tr(A^{-1} A_ij) - tr(A^{-1} A_i A^{-1} A_j)

    (envelope theorem: beta minimises z'Mz, and d_j beta = A^{-1} (M_j z)_X). Entries ``g_*`` are gradients
    (len(dirs),) for ``order >= 1``, ``h_*`` Hessians for ``order == 2``. X has the E ``extra`` columns after t's.

    ``dense=False``: z'M_i z, tr(A^{-1} A_i), z'M_ij z and tr(A^{-1} A_ij) are contractions of M's jets with the
    fixed matrices zz' and A^{-1} (:meth:`_NestedGram.contract`), so M's derivatives are formed only to first
    order and only for a Hessian (for (M_i z)_X and A^{-1} A_i): with one model x scenario variance per model
    (P + 2 directions, (P + 2)(P + 3)/2 pairs) most of the cost of a Hessian goes. ``dense=True`` (what the
    fits use, :attr:`NestedCriterion.CONTRACTED_HESSIANS`): form them (:meth:`_NestedGram.matrix`) and contract
    afterwards, the same numbers summed in another order, and the same to the last bit as before the contracted
    form existed.
    """
    gram = _NestedGram(theta, ns, dirs, order, extra)
    m, ld = gram.transform(gram.matrix(order if dense else (1 if order == 2 else 0)), t), gram.logdet
    q = t.shape[1] + (0 if extra is None else extra.n)
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
    out["g_logdet"] = np.array([float(v) for v in ld[1:1 + nd]])
    if dense:
        mz = [m[1 + i] @ z for i in range(nd)]
        aia = [ainv @ m[1 + i][:q, :q] for i in range(nd)]
        out["g_rss"] = np.array([float(z @ v) for v in mz])
        out["g_logdet_a"] = np.array([float(np.trace(v)) for v in aia])
    else:                   # z'M z and tr(A^{-1} A) contracted from the pieces: M's derivatives never formed
        tt = gram.basis(t)
        if tt is None:
            zr = z
            ar = np.zeros((gram.dim, gram.dim))
            ar[:q, :q] = ainv
        else:
            zr = tt @ z
            ar = tt[:, :q] @ ainv @ tt[:, :q].T
        con = gram.contract(np.stack([np.outer(zr, zr), ar]))
        out["g_rss"] = con[1:1 + nd, 0].copy()
        out["g_logdet_a"] = con[1:1 + nd, 1].copy()
    if order < 2:
        return out
    if dense:
        zmz = [float(z @ m[h] @ z) for h in range(1 + nd, len(m))]
        tra = [float(np.sum(ainv * m[h][:q, :q])) for h in range(1 + nd, len(m))]
    else:                   # (M_i z)_X and A^{-1} A_i still need M's first derivatives formed
        mz = [m[1 + i] @ z for i in range(nd)]
        aia = [ainv @ m[1 + i][:q, :q] for i in range(nd)]
        zmz, tra = con[1 + nd:, 0].tolist(), con[1 + nd:, 1].tolist()
    h_rss, h_ld, h_la = (np.empty((nd, nd)) for _ in range(3))
    for h, (i, j) in enumerate([(i, j) for i in range(nd) for j in range(i, nd)]):
        h_rss[i, j] = h_rss[j, i] = zmz[h] - 2 * float(mz[i][:q] @ ainv @ mz[j][:q])
        h_ld[i, j] = h_ld[j, i] = float(ld[1 + nd + h])
        h_la[i, j] = h_la[j, i] = tra[h] - float(np.sum(aia[i] * aia[j].T))
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


class NestedCriterion:
    r"""The joint REML (or ML) criterion in the form the REML engine reads (:class:`engine.Criterion`).

    theta is the free part of (theta_a, theta_ms, theta_b) (generation dropped when not identifiable), or with
    ``per_model`` of (theta_a, theta_ms[1..P], theta_b) with one model x scenario variance per model; rss, L =
    log|H| [+ log|X'H^{-1}X|] and their exact derivatives come from :func:`_gls_terms`. ``extra``
    (:class:`ExtraColumns`) adds fixed columns after t's (beta then holds t's coefficients, then theirs).
    """

    #: Derivatives with M's jets contracted (:func:`_gls_terms`, ``dense=False``) rather than formed. Off: the
    #: two differ by rounding (~1e-13 relative with ten variances), the Newton steps then stop at an optimum
    #: ~1e-13 away, and the Satterthwaite df of MentalAlign's fits amplify that (tests/test_numbers_unchanged.py
    #: with it on: 5 frames move by 1.3e-12 to 4e-12, over their 1e-12: the model-mean and pair df of joint.ma.reml
    #: and joint.ma4.reml.per_model, and the optimiser's designs built on the first), so the stored numbers would
    #: need regenerating. The per-model fit of the MentalAlign composite (process time, one BLAS thread, one run
    #: each): 24.6 s before either, 12.8 s formed, 8.4 s contracted (the pooled fit 0.7-0.9 s).
    CONTRACTED_HESSIANS = False

    def __init__(self, ns: NestedStats, t: np.ndarray, *, reml: bool = True, per_model: bool = False,
                 extra: ExtraColumns | None = None) -> None:
        self.ns, self.t, self.reml, self.extra = ns, t, reml, extra
        self.n_ms = ns.n_models if per_model else 1
        self.free = np.array([True] * (1 + self.n_ms) + [ns.has_generation])
        self.dirs = tuple(int(i) for i in np.flatnonzero(self.free))
        self.nu = ns.n_rows - (t.shape[1] + (0 if extra is None else extra.n) if reml else 0)
        self._count = 0
        self.dense = not self.CONTRACTED_HESSIANS
        self._memo: dict[tuple[bytes, int, bool], dict[str, Any]] = {}

    @property
    def n_evaluations(self) -> int:
        """Evaluations requested (one answered from the memo of :meth:`parts` counts too, so the count says how
        often the optimiser asked, as it did before the memo existed)."""
        return self._count

    #: How many recent evaluations :meth:`parts` remembers (by the exact bits of theta and the order).
    MEMO_SIZE = 4

    def expand(self, x: np.ndarray) -> np.ndarray:
        """The full (theta_a, theta_ms..., theta_b) of the free part x."""
        th = np.zeros(len(self.free))
        th[self.free] = x
        return th

    def parts(self, x: np.ndarray, hess: bool = False, grad: bool = True) -> dict[str, Any]:
        """rss, L and their derivatives at x (:class:`engine.Criterion`). The last :attr:`MEMO_SIZE` results are
        remembered by the exact bits of x and the order: the engine asks again at the same theta (its KKT check
        at the optimum the Newton steps stopped at, the variance Hessian of the Wald covariance after the fit's
        check computed the same Hessian), and a remembered result is the same computation's, bit for bit."""
        self._count += 1
        order = 2 if hess else (1 if grad else 0)
        xa = np.ascontiguousarray(x, dtype=np.float64)
        key = (xa.tobytes(), order, self.dense)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._parts(xa, order)
            if len(self._memo) >= self.MEMO_SIZE:
                self._memo.pop(next(iter(self._memo)))
            self._memo[key] = hit
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in hit.items()}

    def _parts(self, x: np.ndarray, order: int) -> dict[str, Any]:
        g = _gls_terms(self.expand(x), self.ns, self.t, self.dirs, order, self.extra, dense=self.dense)
        la = g["logdet_a"] if self.reml else 0.0
        out = {"rss": g["rss"], "logdet": g["logdet"] + la, "beta": g["beta"], "a": g["a"]}
        if order >= 1:
            out["drss"] = g["g_rss"]
            out["dlogdet"] = g["g_logdet"] + (g["g_logdet_a"] if self.reml else 0.0)
        if order >= 2:
            out["d2rss"] = g["h_rss"]
            out["d2logdet"] = g["h_logdet"] + (g["h_logdet_a"] if self.reml else 0.0)
        return out

    def profiled(self, x: np.ndarray, grad: bool = False) -> tuple[float, np.ndarray | None]:
        if np.any(np.asarray(x) < 0):
            return math.inf, (np.zeros(len(x)) if grad else None)
        try:
            pr = self.parts(x, grad=grad)
        except np.linalg.LinAlgError:        # X'H^{-1}X numerically singular at an extreme theta
            return math.inf, (np.zeros(len(x)) if grad else None)
        rss = pr["rss"]
        val = self.nu * (1 + math.log(2 * math.pi * rss / self.nu)) + pr["logdet"]
        return val, (self.nu * pr["drss"] / rss + pr["dlogdet"] if grad else None)

    def full(self, s2: float, x: np.ndarray, grad: bool = False) -> tuple[float, Any]:
        if np.any(np.asarray(x) < 0) or not s2 > 0:
            return math.inf, ((np.zeros(len(x)), 0.0) if grad else None)
        try:
            pr = self.parts(x, grad=grad)
        except np.linalg.LinAlgError:
            return math.inf, ((np.zeros(len(x)), 0.0) if grad else None)
        val = self.nu * math.log(2 * math.pi * s2) + pr["logdet"] + pr["rss"] / s2
        return val, ((pr["drss"] / s2 + pr["dlogdet"], pr["rss"]) if grad else None)


def moment_start(ns: NestedStats, per_model: bool = False) -> np.ndarray:
    r"""Method-of-moments starting values for (theta_a, theta_ms, theta_b), floored at 0.05 (off the boundary).

    With eta_pl the judge means of each model and r = y - eta the judge-adjusted scores, cell sums R_c, group
    sums R_g (n_g rows) and group means rbar_g: s2_eps from the within-cell sum of squares sum r^2 - sum_c R_c^2/n_c
    on N - cells - P(K - 1) df; s2_gen from sum_c R_c^2/n_c - sum_g R_g^2/n_g = (cells - groups)(s2_eps +
    nbar_c s2_gen); s2_ms from the spread of rbar_g around their scenario means (expected s2_ms + s2_gen/m +
    s2_eps/n_g per model); s2_scenario from the spread of the scenario means. Unweighted, so only a start.
    """
    p, k = ns.n_models, ns.n_judges
    cnt = ns.counts
    eta = np.where(cnt > 0, ns.sums / np.maximum(cnt, 1), 0.0).reshape(p, k)
    z = np.concatenate([-eta, np.ones((p, 1))], axis=1)                       # (P, K+1)
    ss_adj = ns.yy - 2 * float(ns.sums @ eta.ravel()) + float(cnt @ (eta.ravel() ** 2))
    inv = 1.0 / ns.sizes
    cell_r2 = float(sum(inv[h] * z[q] @ ns.cell_aug[q, h] @ z[q] for q in range(p) for h in range(len(inv))))
    zg = z[ns.group_model]                                                    # (G, K+1)
    rg = np.einsum("ghk,gk->g", ns.group_aug, zg)                              # R_g
    ng = ns.group_cnt @ ns.sizes
    df_e = max(ns.n_rows - ns.n_cells - p * (k - 1), 1)
    s2e = max((ss_adj - cell_r2) / df_e, 1e-12 * max(ss_adj / max(ns.n_rows, 1), 1e-300))
    s2b = 0.0
    if ns.has_generation:
        nbar = ns.n_rows / ns.n_cells
        s2b = max(((cell_r2 - float(rg @ (rg / ng))) / max(ns.n_cells - ns.n_groups, 1) - s2e) / nbar, 0.0)
    rbar = rg / ng
    n_scen = ns.n_scenarios
    per = np.bincount(ns.group_scen, minlength=n_scen)
    smean = np.bincount(ns.group_scen, weights=rbar, minlength=n_scen) / np.maximum(per, 1)
    dev = rbar - smean[ns.group_scen]
    df_ms = max(ns.n_groups - n_scen, 1)
    mbar = ns.n_cells / ns.n_groups
    noise = s2b / mbar + float(np.mean(s2e / ng))
    s2ms = max(float(dev @ dev) / df_ms * (1 + 1 / max(p - 1, 1)) - noise, 0.0)
    if per_model:      # each model's share of the spread around the scenario means
        dfp = np.maximum(np.bincount(ns.group_model, minlength=p) * (1 - 1 / max(p, 2)), 1.0)
        ssp = np.bincount(ns.group_model, weights=dev * dev, minlength=p)
        s2ms = np.maximum(ssp / dfp - noise, 0.0)
    used = per > 0
    s2a = max(float(np.var(smean[used], ddof=1)) - (float(np.mean(s2ms)) + noise) / max(float(np.mean(per[used])), 1.0),
              0.0) \
        if used.sum() > 1 else 0.0
    floor = 0.05
    return np.r_[max(s2a / s2e, floor), np.maximum(np.atleast_1d(s2ms) / s2e, floor), max(s2b / s2e, floor)]


@dataclass(frozen=True, slots=True)
class NestedFit:
    theta: np.ndarray      # relative variances (scenario, model_scenario, generation)
    s2: float
    beta: np.ndarray
    cov_beta: np.ndarray
    deviance: float
    converged: bool
    n_evaluations: int
    result: FitResult | None = None     # the engine's fit (theta over the free variances)
    criterion: Any = None               # the NestedCriterion it minimised (its memo holds the optimum's Hessian)


def fit_nested(ns: NestedStats, t: np.ndarray, *, reml: bool = True, start: np.ndarray | None = None,
               per_model: bool = False, extra: ExtraColumns | None = None) -> NestedFit:
    """Minimise the profiled criterion over theta >= 0 with the REML engine (:func:`engine.fit`, exact Newton
    steps on theta, KKT check on the variance scale), generation fixed at 0 when not identifiable. Starts: the
    moment solution (:func:`moment_start`), then theta = 0.5 and 0.02 in every variance when the first optimum is
    on the boundary (a refit from ``start``, a related fit's optimum, takes the others only when the KKT check
    fails). ``extra``: fixed columns beside t's (:class:`ExtraColumns`; beta and cov_beta then cover both)."""
    crit = NestedCriterion(ns, t, reml=reml, per_model=per_model, extra=extra)
    free = crit.free
    first = moment_start(ns, per_model) if start is None else np.asarray(start, dtype=float)
    starts = [first[free], np.full(int(free.sum()), 0.5), np.full(int(free.sum()), 0.02)]
    r = engine.fit(crit, starts, exact_hessian=True, confirm_boundary=start is None)
    th = crit.expand(r.theta)
    pr = crit.parts(r.theta, grad=False)
    s2 = pr["rss"] / crit.nu
    cov = s2 * np.linalg.inv(pr["a"])
    return NestedFit(theta=th, s2=s2, beta=pr["beta"], cov_beta=cov, deviance=r.deviance,
                     converged=r.converged, n_evaluations=r.evaluations, result=r, criterion=crit)


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


def _variance_hessian(fit: NestedFit, ns: NestedStats, t: np.ndarray, free: np.ndarray,
                      extra: ExtraColumns | None = None) -> np.ndarray:
    r"""Exact Hessian of the non-profiled REML deviance in the variances phi = (s2_eps, s2_eps theta[free]): the
    engine's :func:`engine.variance_hessian` on :class:`NestedCriterion` (the chain rule from (s2, theta) to phi
    is written there once for every REML fit)."""
    per_model = len(fit.theta) > 3
    crit = fit.criterion
    if not (isinstance(crit, NestedCriterion) and crit.dense and crit.reml and crit.ns is ns and crit.t is t
            and crit.extra is extra and crit.n_ms == (ns.n_models if per_model else 1)):
        crit = NestedCriterion(ns, t, per_model=per_model, extra=extra)
        crit.dense = True       # the reported Hessian: M's second derivatives formed, whatever the fit used
    # (the fit's own criterion when it formed them too: its KKT check computed this Hessian at the optimum)
    return engine.variance_hessian(crit, _AtTheta(np.asarray(fit.theta)[free], float(fit.s2)))


@dataclass(frozen=True, slots=True)
class _AtTheta:
    """A point (theta over the free variances, s2) for the engine's Hessian."""

    theta: np.ndarray
    s2: float


def _wald_cov(fit: NestedFit, ns: NestedStats, t: np.ndarray,
              extra: ExtraColumns | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Variances (s2_eps, s2_a, s2_ms..., s2_b)[free], their Wald covariance (:func:`engine.wald_covariance`: NaN rows
    and columns for variances at the boundary, all NaN when the Hessian is singular) and the exact Hessian of the
    REML deviance in them (:func:`_variance_hessian`), which the profiles reuse."""
    free = np.r_[np.ones(len(fit.theta) - 1, dtype=bool), ns.has_generation]
    v = np.r_[fit.s2, fit.s2 * fit.theta][np.r_[True, free]]
    h = _variance_hessian(fit, ns, t, free, extra)
    try:
        cov = engine.wald_covariance(h, fit.theta[free])
    except np.linalg.LinAlgError:
        cov = np.full(h.shape, np.nan)
    return v, cov, h


def _cov_derivatives(fit: NestedFit, ns: NestedStats, t: np.ndarray, free: np.ndarray) -> np.ndarray:
    r"""dSigma/dphi_j, (1 + free variances, q, q): the derivatives of Sigma = Cov(beta_hat) = s2 A^{-1}(theta) in the
    variances phi = (s2_eps, s2_eps theta[free]) (the order of :func:`_wald_cov`). With A_i = dA/dtheta_i (the
    first-order jets of :func:`_weighted_gram_jet`) and theta_i = phi_i/s2_eps:

        dSigma/dphi_i = -A^{-1} A_i A^{-1},    dSigma/ds2_eps = A^{-1} + sum_i theta_i A^{-1} A_i A^{-1}

    (Sigma is homogeneous of degree 1 in phi, so sum_j phi_j dSigma/dphi_j = Sigma)."""
    dirs = tuple(int(i) for i in np.flatnonzero(free))
    m, _ = _weighted_gram_jet(np.asarray(fit.theta, dtype=float), ns, t, dirs, 1)
    q = t.shape[1]
    ainv = fit.cov_beta / fit.s2
    d = np.stack([-ainv @ m[1 + i][:q, :q] @ ainv for i in range(len(dirs))])
    d0 = ainv - np.tensordot(np.asarray(fit.theta)[free], d, axes=1)
    return np.concatenate([d0[None], d])


def _effect_row(component: str, g: np.ndarray, cov: np.ndarray, count: int, df: int, level: float, *,
                scale: float = 1.0, view: str = "panel", note: str = "") -> ComponentRow:
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
    return ComponentRow(component, est, lo * to_value, hi * to_value, se,
                        "noncentral chi-square inversion (GLS effects)", view, raw, boundary, True, note)


def _quadratic_ms(g: np.ndarray, cov: np.ndarray, extra: float) -> tuple[float, float, float, int]:
    r"""|g|^2/d, tr(Cov)/d and the Satterthwaite degrees of freedom of |g|^2 for g ~ N(0, extra P + Cov) on the
    d-dimensional range of Cov (P its projector): |g|^2 = sum_j lambda_j chi2_1 with lambda_j = extra + c_j over
    the nonzero eigenvalues c_j of Cov, df = (sum lambda)^2/sum lambda^2 (= d when Cov is isotropic, as on
    balanced data)."""
    ev = np.linalg.eigvalsh(cov)
    c = ev[ev > ev.max() * 1e-9]
    d = len(c)
    lam = max(extra, 0.0) + c
    return float(g @ g) / d, float(c.sum()) / d, float(lam.sum() ** 2 / (lam**2).sum()), d


def _population_rows(g_judge: np.ndarray, cov_judge: np.ndarray, g_int: np.ndarray, cov_int: np.ndarray, p: int,
                     k: int, df_within: int, level: float) -> tuple[ComponentRow, ComponentRow]:
    r"""``judge_model`` and ``judge_population`` in the population view (judges and judge x model effects
    random), with MLS intervals built from the GLS effects exactly as the joint ANOVA builds them from mean
    squares, to which they reduce on balanced data.

    With h the judge x model effects (dimension d = (P-1)(K-1)) and g the judge effects of the GLS cell means,
    under the random model E|h|^2 = d s2_jm + tr C_h and E|g|^2 = (K-1)(s2_j + s2_jm/P) + tr C_g. So

        judge_model      = MS_1 - MS_2,  MS_1 = |h|^2/d, MS_2 = tr(C_h)/d (df: the within-cell df),
        judge_population = MS_3 - MS_1/P,  MS_3 = |g|^2/(K-1) - tr(C_g)/(K-1) + tr(C_h)/(d P),

    each with the MLS interval (Ting et al. 1990) of a difference of two mean squares; the df of |h|^2 and |g|^2
    are Satterthwaite's (:func:`_quadratic_ms`), K - 1 and d on balanced data. The two bounds account for the
    uncertainty of both terms, unlike the fixed-view interval rescaled.
    """
    dfi = (p - 1) * (k - 1)
    jm_raw = (float(g_int @ g_int) - float(np.trace(cov_int))) / dfi
    ms1, ms2, df1, _ = _quadratic_ms(g_int, cov_int, jm_raw)
    jm = mls_row("judge_model", 1.0, ms1, df1, ms2, max(df_within, 1), level, view="population")
    trg = float(np.trace(cov_judge))
    j_raw = (float(g_judge @ g_judge) - trg) / (k - 1) - jm_raw / p
    g2, _, df3, _ = _quadratic_ms(g_judge, cov_judge, j_raw + jm_raw / p)
    ms3 = g2 - trg / (k - 1) + float(np.trace(cov_int)) / (dfi * p)
    jp = mls_row("judge_population", 1.0, max(ms3, 1e-300), df3, ms1 / p, df1, level, view="population",
                 note=f"judges random: {k} judges give {k - 1} degrees of freedom")
    return jm, jp


@functools.lru_cache(maxsize=16)
def _judge_model_maps(p: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """T_j = 1_P (x) I_K (cell means -> judge effects) and T_r = I_P (x) 1_K (model columns), read-only."""
    tj, tr = np.kron(np.ones((p, 1)), np.eye(k)), np.kron(np.eye(p), np.ones((k, 1)))
    tj.flags.writeable = tr.flags.writeable = False
    return tj, tr


def _judges_random_deviance(x: np.ndarray, crit: NestedCriterion) -> tuple[float, np.ndarray, float]:
    r"""Profiled REML criterion of the joint model with judges random (lme4: ``score ~ 0 + model + (1|judge) +
    (1|judge:model) + <the scenario terms>``) at x = (the free nested theta of ``crit``, theta_jm, theta_j), its
    exact gradient, and s2_eps at x.

    The judge and judge x model columns lie in the span of the cell indicators X, Z = X T_z (T_z = [I_PK,
    1_P (x) I_K]), and the model columns are X T_r (T_r = I_P (x) 1_K). So with the fixed-judge quantities at the
    nested theta (first-order jets of :func:`_weighted_gram_jet`: A = X'H_0^{-1}X, eta = A^{-1}X'H_0^{-1}y, rss_0,
    log|H_0|) and W = A^{-1} + T_z D T_z' (D = diag(theta_jm I_PK, theta_j I_K)):

        log|H| = log|H_0| + log|A| + log|W|,   X_r'H^{-1}X_r = T_r'W^{-1}T_r,
        rss = rss_0 + Q,  Q = min_b (eta - T_r b)'W^{-1}(eta - T_r b),

    D = nu (1 + log(2 pi rss/nu)) + log|H| + log|T_r'W^{-1}T_r| with nu = N - P, O(groups) per evaluation (the
    scores' per-model centring is absorbed by T_r). With R = W^{-1} - W^{-1}T_r(T_r'W^{-1}T_r)^{-1}T_r'W^{-1} and
    e = R eta: d(log|W| + log|T_r'W^{-1}T_r|) = tr(R dW), dQ = 2 e'd eta - e'dW e, where along a nested theta_i
    dW = -A^{-1}A_i A^{-1} and d eta = A^{-1}(M_i z)_X (z = (-eta, 1)), and along theta_jm, theta_j dW = T T'."""
    if np.any(x < 0):
        return math.inf, np.zeros(len(x)), _NAN
    ns = crit.ns
    p, k = ns.n_models, ns.n_judges
    q = p * k
    nn = len(crit.dirs)
    try:
        m, ld = _weighted_gram_jet(crit.expand(x[:nn]), ns, crit.t, crit.dirs, 1)
        a, bvec = m[0, :q, :q], m[0, :q, q]
        ca = np.linalg.cholesky(a)
        ainv = np.linalg.solve(ca.T, np.linalg.solve(ca, np.eye(q)))
        eta = ainv @ bvec
        z = np.r_[-eta, 1.0]
        tj, tr = _judge_model_maps(p, k)
        w = ainv + x[nn] * np.eye(q) + x[nn + 1] * tj @ tj.T
        wi = np.linalg.inv(w)
        cw = np.linalg.cholesky(w)
        bm = tr.T @ wi @ tr
        cb = np.linalg.cholesky(bm)
    except np.linalg.LinAlgError:
        return math.inf, np.zeros(len(x)), _NAN
    rmat = wi - wi @ tr @ np.linalg.solve(bm, tr.T @ wi)
    e = rmat @ eta
    rss = max(float(m[0, q, q] - bvec @ eta) + float(eta @ e), 1e-300)
    nu = ns.n_rows - p
    logdet = (float(ld[0]) + 2 * float(np.log(np.diag(ca)).sum()) + 2 * float(np.log(np.diag(cw)).sum())
              + 2 * float(np.log(np.diag(cb)).sum()))
    g_rss, g_ld = np.zeros(len(x)), np.zeros(len(x))
    for i in range(nn):
        mi = m[1 + i]
        ai = mi[:q, :q]
        dw = -ainv @ ai @ ainv
        deta = ainv @ (mi @ z)[:q]
        g_rss[i] = float(z @ mi @ z) + 2 * float(e @ deta) - float(e @ dw @ e)
        g_ld[i] = float(ld[1 + i]) + float(np.sum(ainv * ai)) + float(np.sum(rmat * dw))
    for i, dw in ((nn, np.eye(q)), (nn + 1, tj @ tj.T)):
        g_rss[i] = -float(e @ dw @ e)
        g_ld[i] = float(np.sum(rmat * dw))
    dev = nu * (1 + math.log(2 * math.pi * rss / nu)) + logdet
    return dev, nu * g_rss / rss + g_ld, rss / nu


def _judges_random_hessian(x: np.ndarray, crit: NestedCriterion) -> np.ndarray:
    r"""Exact Hessian of :func:`_judges_random_deviance` at x = (the free nested theta, theta_jm, theta_j).

    The criterion is a function D(M, theta_jm, theta_j) of M = [X, y]'H_0^{-1}[X, y] at the nested theta, so along
    directions i, j: D_ij = D''[M_i, M_j] + <dD/dM, M_ij> (+ the judge variances, in which W is linear). The first
    term is the second-order jet (:class:`_Jets`, its matrix inverse and log-determinant rules) of D through A^{-1},
    eta, W = A^{-1} + T_z D T_z', its inverse, T_r'W^{-1}T_r and Q, with M's second derivatives set to 0; the
    second adds them by one contraction (:meth:`_NestedGram.contract`), with (z = (-eta, 1), u = (A^{-1}e, 0),
    e = R eta, the notation of :func:`_judges_random_deviance`)

        dD/dM = nu/rss (z + u)(z + u)' + [A^{-1} - A^{-1} R A^{-1}, 0; 0, 0]

    (d rss = (z + u)'dM (z + u) by the envelope rules there, d(log|A| + log|W| + log|T_r'W^{-1}T_r|) =
    tr(A^{-1}dA) - tr(R A^{-1}dA A^{-1})); log|H_0| brings its own exact second derivatives."""
    ns = crit.ns
    p, k = ns.n_models, ns.n_judges
    q = p * k
    nn = len(crit.dirs)
    gram = _NestedGram(crit.expand(x[:nn]), ns, crit.dirs, 2, None)
    m1 = gram.matrix(1)                                   # M and its first derivatives (t = identity)
    jt = _Jets(nn + 2, 2)
    nest_pairs = np.array([h for h, (i, j) in enumerate((i, j) for i in range(nn + 2) for j in range(i, nn + 2))
                           if j < nn])                   # the (nested, nested) pairs, in the nested order
    mj = np.zeros((jt.size,) + m1.shape[1:])
    mj[:1 + nn] = m1
    ld = np.zeros(jt.size)
    ld[:1 + nn] = gram.logdet[:1 + nn]
    ld[1 + nn + 2 + nest_pairs] = gram.logdet[1 + nn:]
    mm = np.matmul
    a, bvec, c = mj[:, :q, :q], mj[:, :q, q], mj[:, q, q]
    ainv = jt.inv(a)
    eta = jt.mul(ainv, bvec[..., None], mm)[..., 0]
    rss0 = c - jt.mul(bvec[:, None, :], eta[..., None], mm)[:, 0, 0]
    tj, tr = _judge_model_maps(p, k)
    w = ainv.copy()
    w[0] += x[nn] * np.eye(q) + x[nn + 1] * tj @ tj.T
    w[1 + nn] += np.eye(q)
    w[2 + nn] += tj @ tj.T
    wi = jt.inv(w)
    bm = tr.T @ wi @ tr
    wie = jt.mul(wi, eta[..., None], mm)[..., 0]
    v = (tr.T @ wie[..., None])[..., 0]
    qf = jt.mul(eta[:, None, :], wie[..., None], mm)[:, 0, 0] - \
        jt.mul(v[:, None, :], jt.mul(jt.inv(bm), v[..., None], mm), mm)[:, 0, 0]
    rss = rss0 + qf
    nu = ns.n_rows - p
    r0 = rss[0]
    log_rss = jt.fn(rss, math.log(r0), 1.0 / r0, -1.0 / r0**2)
    dev = nu * log_rss + ld + jt.logdet(a) + jt.logdet(w) + jt.logdet(bm)
    hess = np.empty((nn + 2, nn + 2))
    hess[jt.pi - 1, jt.pj - 1] = hess[jt.pj - 1, jt.pi - 1] = dev[1 + nn + 2:]
    # + <dD/dM, M_ij> over the nested pairs
    a0 = ainv[0]
    w0i = wi[0]
    b0i = np.linalg.inv(bm[0])
    rmat = w0i - w0i @ tr @ b0i @ tr.T @ w0i
    e = rmat @ eta[0]
    zu = np.r_[-eta[0] + a0 @ e, 1.0]
    gmat = (nu / r0) * np.outer(zu, zu)
    gmat[:q, :q] += a0 - a0 @ rmat @ a0
    con = gram.contract(gmat[None])[1 + nn:, 0]
    hn = np.zeros((nn, nn))
    pi, pj = np.triu_indices(nn)
    hn[pi, pj] = hn[pj, pi] = con
    hess[:nn, :nn] += hn
    return 0.5 * (hess + hess.T)


def _fit_judges_random(ns: NestedStats, fit: NestedFit, per_model: bool, start: tuple[float, float]
                       ) -> tuple[float, float, bool]:
    """REML s2_judge_model and s2_judge of the joint model with judges random (:func:`_judges_random_deviance`),
    by projected Newton steps on theta >= 0 (:func:`engine.minimize_bounded`, the exact gradient and the exact
    Hessian of :func:`_judges_random_hessian`) from the fixed-judge optimum with the moment values ``start``, and
    again with 0.01 in the judge variances; the lower criterion wins. The search stops at a Newton decrement of
    1e-22 (not the engine's 1e-16); with exact Newton steps the last one lands at the optimum to rounding, so
    the variances do not depend on the order in which an engine summed the statistics beyond ~1e-14
    (tests/comparisons/test_joint_sources.py), and on balanced data they equal the moment values to 1e-8
    (tests/comparisons/test_joint_reml_engine.py). Returns the two variances and whether the search converged."""
    crit = NestedCriterion(ns, np.eye(ns.n_models * ns.n_judges), per_model=per_model)
    th0 = np.maximum(np.asarray(fit.theta)[crit.free], 0.0)
    seen: dict[bytes, tuple[float, np.ndarray, float]] = {}

    def dev(x: np.ndarray) -> tuple[float, np.ndarray, float]:
        """The criterion at x, the points of the searches remembered (s2 at the winner is not computed again)."""
        key = np.ascontiguousarray(x, dtype=np.float64).tobytes()
        if key not in seen:
            seen[key] = _judges_random_deviance(x, crit)
        return seen[key]

    fun = lambda x: dev(x)[:2]                                    # noqa: E731
    hess = lambda x: _judges_random_hessian(x, crit)              # noqa: E731
    best = None
    for js in (np.maximum(np.asarray(start, dtype=float) / fit.s2, 0.01), np.full(2, 0.01)):
        x, fx, info = engine.minimize_bounded(fun, np.r_[th0, js], np.zeros(len(th0) + 2), tol=1e-22, hess_fn=hess)
        if best is None or fx < best[1]:
            best = (x, fx, info)
    x, _, info = best
    s2 = dev(x)[2]
    return float(s2 * x[-2]), float(s2 * x[-1]), bool(info.get("success", False))


def _population_reml(ns: NestedStats, fit: NestedFit, per_model: bool, jm: ComponentRow, jp: ComponentRow
                     ) -> tuple[ComponentRow, ComponentRow]:
    """The population-view ``judge_model`` and ``judge_population`` rows with the REML estimates of the model with
    judges random (:func:`_fit_judges_random`; on balanced data they equal the moment estimates of
    :func:`_population_rows` unless one is truncated at 0), the MLS intervals kept. If the search does not
    converge the moment rows stay, and say so."""
    s2_jm, s2_j, ok = _fit_judges_random(ns, fit, per_model, (max(jm.raw_estimate, 0.0),
                                                               max(jp.raw_estimate, 0.0)))
    if not ok:
        why = "moment estimate (the REML fit with judges random did not converge)"
        return (dataclasses.replace(jm, note=f"{jm.note}; {why}" if jm.note else why),
                dataclasses.replace(jp, note=f"{jp.note}; {why}" if jp.note else why))
    how = "REML with judges random; interval MLS from the GLS effects"
    out = []
    for row, v in ((jm, s2_jm), (jp, s2_j)):
        note = f"{row.note}; {how}" if row.note else how
        out.append(dataclasses.replace(row, estimate=v, raw_estimate=v, at_boundary=v <= 0, note=note))
    return out[0], out[1]


def _variance_row(component: str, est: float, se: float, bounds: tuple[float, float], boundary: bool,
                  note: str = "") -> ComponentRow:
    """A joint variance with its profile-likelihood interval (the Wald standard error beside it; none at 0)."""
    lo, hi = bounds
    if boundary:
        note = (note + "; " if note else "") + "REML optimum at 0"
    return ComponentRow(component, 0.0 if boundary else est, lo, hi, _NAN if boundary or not se > 0 else se,
                    "profile likelihood (REML)", "panel", 0.0 if boundary else est, boundary, True, note)


_PER_MODEL_TEST_BUDGET = 300_000     # groups x second-order jet entries: above it a pooled fit skips the test

#: The chi2_{P-1} reference's label. Its level at a nominal 5% (3 models x 4 judges, s2 scenario 0.5, residual 1;
#: ``benchmarks/bench_small_n_levels.py``, 400 replicates, MC SE 0.011): 0.043 / 0.055 at 20 / 80 scenarios with
#: m = 2 and model x scenario 0.2; 0.005 / 0.020 with m = 1 and model x scenario 0.05 (per-model variances at 0).
#: The bootstrap reference (:func:`model_scenario_test`; 150 replicates x 19 tables, MC SE 0.018): 0.080 / 0.040
#: and 0.020 / 0.013 (docs/comparisons.md).
CHI2_LABEL = "LR (REML), chi2_(P-1) reference (conservative at small n: per-model variances at 0)"


def _row_design(ns: NestedStats) -> tuple[dict[str, np.ndarray], bool]:
    """A row-level design with the statistics' cell structure: every group's cells of each size, each cell given
    judges so that the per-(group, size) judge counts (``group_aug``) are met (greedy: the judges with the most
    rows left, one row each, while the cell has room). Returns index arrays per row (``cell``, ``group``,
    ``scenario``, ``model``, ``judge``), per cell (``cell_ps`` = model x size index) and whether the design's
    per-(model, size) judge cross-products reproduce ``cell_aug`` (True on complete tables and at m = 1, where
    the cells are the groups; otherwise a design with the same counts)."""
    k, n_s = ns.n_judges, len(ns.sizes)
    rows_cell, rows_judge, cell_group, cell_size = [], [], [], []
    c = 0
    for g in range(ns.n_groups):
        for si in range(n_s):
            n_c = int(round(ns.group_cnt[g, si]))
            if n_c == 0:
                continue
            left = np.rint(ns.group_aug[g, si, :k]).astype(np.int64)
            h = int(ns.sizes[si])
            for _ in range(n_c):
                taken = np.zeros(k, dtype=np.int64)
                for _r in range(h):
                    j = int(np.argmax(np.where(taken == 0, left, left - 10**9)))  # a new judge first
                    taken[j] += 1
                    left[j] -= 1
                    rows_cell.append(c)
                    rows_judge.append(j)
                cell_group.append(g)
                cell_size.append(si)
                c += 1
    cell = np.asarray(rows_cell, dtype=np.int64)
    judge = np.asarray(rows_judge, dtype=np.int64)
    cg = np.asarray(cell_group, dtype=np.int64)
    cs = np.asarray(cell_size, dtype=np.int64)
    group = cg[cell]
    d = np.zeros((c, k))
    np.add.at(d, (cell, judge), 1.0)
    ps = ns.group_model[cg] * n_s + cs
    dd = np.zeros((ns.n_models * n_s, k, k))
    np.add.at(dd, ps, d[:, :, None] * d[:, None, :])
    exact = bool(np.allclose(dd.reshape(ns.n_models, n_s, k, k), ns.cell_aug[:, :, :k, :k]))
    return {"cell": cell, "judge": judge, "group": group, "scenario": ns.group_scen[group],
            "model": ns.group_model[group], "cell_ps": ps, "cell_group": cg, "cell_d": d, "n_cells": c}, exact


def _simulate_nested(ns: NestedStats, design: dict[str, np.ndarray], theta: np.ndarray,
                     rng: np.random.Generator) -> NestedStats:
    r"""The statistics of one table drawn from the pooled model on ``design`` (:func:`_row_design`) with relative
    variances theta = (theta_a, theta_ms, theta_b), s2_eps = 1 and fixed effects 0: y = a_i + (a p)_g + b_c + e.
    The REML LR is invariant to the fixed effects and to the scale of y, so these are the only parameters."""
    from dataclasses import replace

    k, n_s, p = ns.n_judges, len(ns.sizes), ns.n_models
    ta, tm, tb = (math.sqrt(max(float(v), 0.0)) for v in theta)
    y = (ta * rng.standard_normal(ns.n_scenarios)[design["scenario"]]
         + tm * rng.standard_normal(ns.n_groups)[design["group"]]
         + tb * rng.standard_normal(design["n_cells"])[design["cell"]] + rng.standard_normal(design["cell"].size))
    yc = np.bincount(design["cell"], weights=y, minlength=design["n_cells"])
    aug = np.array(ns.cell_aug, dtype=np.float64).reshape(p * n_s, k + 1, k + 1)
    cross = np.zeros((p * n_s, k))
    np.add.at(cross, design["cell_ps"], design["cell_d"] * yc[:, None])
    aug[:, :k, k] = aug[:, k, :k] = cross
    aug[:, k, k] = np.bincount(design["cell_ps"], weights=yc * yc, minlength=p * n_s)
    g_aug = np.array(ns.group_aug, dtype=np.float64)
    gs = design["cell_group"] * n_s + design["cell_ps"] % n_s
    g_aug[:, :, k] = np.bincount(gs, weights=yc, minlength=ns.n_groups * n_s).reshape(ns.n_groups, n_s)
    sums = np.bincount(design["model"] * k + design["judge"], weights=y, minlength=p * k)
    return replace(ns, cell_aug=aug.reshape(ns.cell_aug.shape), group_aug=g_aug, sums=sums, yy=float(y @ y),
                   shift=np.zeros(p))


def _lr_pooled_vs_per_model(ns: NestedStats, t: np.ndarray, pooled: NestedFit | None = None
                            ) -> tuple[float, float, float, bool]:
    """(LR, D_pooled, D_per_model, both converged): the pooled fit (from the moment start unless given), then the
    per-model fit started at the pooled optimum, as :func:`_model_scenario_test` does for a pooled fit."""
    p = ns.n_models
    fit = fit_nested(ns, t, reml=True) if pooled is None else pooled
    th = np.asarray(fit.theta)
    other = fit_nested(ns, t, reml=True, start=np.maximum(np.r_[th[0], np.full(p, th[1]), th[2]], 0.01),
                       per_model=True)
    return max(fit.deviance - other.deviance, 0.0), fit.deviance, other.deviance, other.converged and fit.converged


def _model_scenario_test(ns: NestedStats, t: np.ndarray, fit: NestedFit, per_model: bool, *,
                         reference: str = "chi2", n_boot: int = 199, seed: int | None = 0) -> dict[str, Any]:
    r"""REML likelihood-ratio test of one pooled model x scenario variance against one per model (same fixed
    effects, so REML criteria compare): LR = D_pooled - D_per_model on P - 1 df.

    ``reference="chi2"``: chi2_{P-1}. Where per-model variances sit at 0 it is conservative (the null is on the
    boundary only in part); measured in ``benchmarks/bench_small_n_levels.py`` (docs/comparisons.md), and the row's
    ``test`` says so. ``reference="bootstrap"``: the parametric bootstrap of LR under the pooled REML fit
    (:func:`_simulate_nested` on the table's design, :func:`_row_design`), p = (1 + #{LR* >= LR})/(1 + n_boot),
    seeded; about n_boot x 25 ms at 20-80 scenarios x 3 models x 4 judges (:func:`model_scenario_test`).
    The other form is fitted from the one at hand; a pooled fit of a large table skips it (the per-model refit
    costs seconds there: its exact Hessian carries (P + 2)(P + 3)/2 second-order entries per group) and says how
    to run it."""
    p = ns.n_models
    th = np.asarray(fit.theta)
    pairs = (p + 2) * (p + 3) // 2
    if not per_model and ns.n_groups * pairs > _PER_MODEL_TEST_BUDGET and reference == "chi2":
        return {"test": CHI2_LABEL, "statistic": _NAN, "df1": p - 1, "p_value": _NAN, "converged": False,
                "recommendation": f"not tested by default on a table this large ({ns.n_groups} model x scenario "
                                  f"groups, {p} models); fit with model_scenario='per_model' to test it"}
    if per_model:
        other = fit_nested(ns, t, reml=True, start=np.maximum(np.r_[th[0], th[1:-1].mean(), th[-1]], 0.01))
        d_pool, d_per = other.deviance, fit.deviance
        conv = other.converged and fit.converged
        pooled = other
    else:
        lr, d_pool, d_per, conv = _lr_pooled_vs_per_model(ns, t, fit)
        pooled = fit
    lr = max(d_pool - d_per, 0.0)
    from cjstats.results.format import format_p

    df = p - 1
    if reference == "bootstrap" and df > 0:
        design, exact = _row_design(ns)
        rng = np.random.default_rng(seed)
        boot = np.array([_lr_pooled_vs_per_model(_simulate_nested(ns, design, pooled.theta, rng), t)[0]
                         for _ in range(int(n_boot))])
        pval = float((1 + np.sum(boot >= lr - 1e-9 * max(lr, 1.0))) / (1 + boot.size))
        label = (f"LR (REML), parametric bootstrap under the pooled fit ({int(n_boot)} tables, seed {seed}"
                 + ("" if exact else "; cell design reconstructed from the statistics") + ")")
    else:
        pval = float(_dist.chi2_sf(lr, df)) if df > 0 else _NAN
        label = CHI2_LABEL
    if not conv:
        advice = "one of the two REML fits did not converge; the test is not reliable"
    elif pval < 0.05:
        advice = (f"the model x scenario variance differs between models (LR {lr:.3g} on {df} df, "
                  f"p = {format_p(pval)}): "
                  + ("the per-model variances are the right choice" if per_model else
                     "use model_scenario='per_model' so that each pair's standard error reflects its two models"))
    else:
        advice = (f"no evidence that the model x scenario variance differs between models (LR {lr:.3g} on {df} df, "
                  f"p = {format_p(pval)}): the pooled variance is adequate"
                  + (" (model_scenario='pooled' gives narrower intervals)" if per_model else ""))
    return {"test": label, "statistic": lr, "df1": df, "p_value": pval, "deviance_pooled": d_pool,
            "deviance_per_model": d_per, "converged": bool(conv), "recommendation": advice}


def model_scenario_test(source: Any, *, reference: str = "bootstrap", n_boot: int = 199, seed: int | None = 0,
                        model_scenario: str = "pooled") -> dict[str, Any]:
    """The pooled vs per-model model x scenario variance test of :func:`fit_joint` (``fit.tests["model_scenario"]``)
    with a choice of reference: ``"bootstrap"`` (default here: ``n_boot`` parametric-bootstrap tables under the
    pooled REML fit, seeded; holds its level at 20 scenarios where the chi2 is conservative) or ``"chi2"`` (what
    ``fit_joint`` reports). ``source`` as in :func:`fit_joint`."""
    from cjstats._validate import check_choice
    from cjstats.exceptions import CjstatsError

    check_choice("reference", reference, ("chi2", "bootstrap"), caller="model_scenario_test")
    check_choice("model_scenario", model_scenario, ("pooled", "per_model"), caller="model_scenario_test")
    if not isinstance(n_boot, int | np.integer) or isinstance(n_boot, bool) or n_boot < 1:
        raise CjstatsError(f"The 'n_boot' argument of model_scenario_test must be a positive integer (tables drawn "
                           f"for the bootstrap reference; 199 is usual: (n_boot + 1) x 0.05 an integer). Got {n_boot!r} instead.")
    js, _ = joint_stats(source, "model_scenario_test")
    ns = js.for_joint_reml()
    t = np.eye(ns.n_models * ns.n_judges)
    with single_thread_blas():
        fit = fit_nested(ns, t, reml=True, per_model=model_scenario == "per_model")
        return _model_scenario_test(ns, t, fit, model_scenario == "per_model", reference=reference,
                                    n_boot=int(n_boot), seed=seed)


def _kkt_summary(r: FitResult) -> dict[str, Any]:
    """The engine's KKT check in plain numbers (for diagnostics)."""
    k = r.kkt
    return {"stationary": bool(k.get("stationary", False)), "decrement": float(k.get("decrement", _NAN)),
            "inward": float(k.get("inward", _NAN)), "message": str(k.get("message", ""))}


def fit_joint(source: Any, *, ci_level: float, model_scenario: str = "pooled") -> JointFit:
    """Joint REML fit (module docstring) from the joint statistics of ``source`` (a table or a joint unit of
    :func:`cjstats.stats.build_stats`); missing cells, unequal generations and unshared scenarios are fine.
    ``model_scenario="per_model"`` gives each model its own variance of (alpha p)_pi (lme4:
    ``(1|scenario) + (0 + d_1|scenario) + ... + (0 + d_P|scenario)``, d_p the dummy of model p)."""
    with single_thread_blas():
        return _fit_joint(source, ci_level=ci_level, model_scenario=model_scenario)


def _fit_joint(source: Any, *, ci_level: float, model_scenario: str = "pooled") -> JointFit:
    js, _ = joint_stats(source, "compare_models")
    ns = js.for_joint_reml()
    p, k = ns.n_models, ns.n_judges
    check_judges_scored(ns.counts, js.models, js.judge_labels)
    t_full = np.eye(p * k)
    per_model = model_scenario == "per_model"
    if per_model:       # a model's own variance needs two of its scenarios (identification module)
        from cjstats.estimators.identification import too_few_scenarios

        few = too_few_scenarios(np.bincount(ns.group_model, minlength=p), [str(m) for m in js.models])
        if few:
            raise CjstatsError("model_scenario='per_model' cannot be fitted: " + "; ".join(f.reason for f in few)
                               + ". Use model_scenario='pooled' (one variance shared by the models), or drop "
                               + ("that model" if len(few) == 1 else "those models") + ".")
    fit = fit_nested(ns, t_full, reml=True, per_model=per_model)
    check_residual(float(fit.s2), js)
    beta_raw = fit.beta + np.repeat(ns.shift, k)       # the scores were centred by one constant per model
    beta = beta_raw.reshape(p, k)
    cov = fit.cov_beta
    v, vcov, h_var = _wald_cov(fit, ns, t_full)
    n_ms = p if per_model else 1
    free = np.r_[np.ones(1 + n_ms, dtype=bool), ns.has_generation]
    # (label, component) of every variance in the order of v: residual, scenario, model_scenario..., generation
    ms_labels = list(js.models) if per_model else [JOINT_LABEL]
    names = ([(JOINT_LABEL, "residual"), (JOINT_LABEL, "scenario")] + [(lab, "model_scenario") for lab in ms_labels]
             + [(JOINT_LABEL, "generation")])
    used = [n for n, f in zip(names, np.r_[True, free]) if f]
    level = ci_level
    rows: list[tuple[str, ComponentRow]] = []
    n_scen_model = np.bincount(ns.group_model, minlength=p)
    df_within = ns.n_rows - ns.n_cells - p * (k - 1)
    df_between = ns.n_groups - ns.n_scenarios - (p - 1)
    amat, keep, df_rule = engine.satterthwaite_covariance(h_var, fit.theta[free])
    df_args = {"df_structure": (ns.n_scenarios - 1, df_between, df_within), "df_population": max((p - 1) * (k - 1), 1),
               "dcov": None if amat is None else _cov_derivatives(fit, ns, t_full, free)[keep],
               "var_cov": amat, "df_capped": df_rule != "full"}
    cs_mu = np.kron(np.eye(p), np.full((1, k), 1.0 / k)).reshape(p, p, k)
    _, df_mu = JointCovariance.reml(cov, p, k, s2_judge_model=0.0, s2_judge=0.0, **df_args).variance_df(cs_mu)
    df_mu = np.where(np.isfinite(df_mu) & (df_mu > 0), df_mu, np.maximum(n_scen_model - 1, 1))
    a = (1 - level) / 2
    for q, name in enumerate(js.models):
        c = np.zeros(p * k)
        c[q * k:(q + 1) * k] = 1.0 / k
        est = float(c @ beta_raw)
        se = math.sqrt(float(c @ cov @ c))
        tq = float(special.stdtrit(float(df_mu[q]), 1 - a))
        rows.append((name, ComponentRow("mu", est, est - tq * se, est + tq * se, se, "t (GLS, Satterthwaite df)",
                                        "panel", est)))
    m1_note = "m = 1: holds s2_model_scenario + s2_generation (generation not separable)"
    crit = fit.criterion            # the fit's own criterion (its memo holds the optimum)
    failed = []
    order = [n for n in names if n[1] == "scenario"] + [n for n in names if n[1] == "model_scenario"] + [
        (JOINT_LABEL, "generation"), (JOINT_LABEL, "residual")]
    for lab, comp in order:
        if (lab, comp) not in used:
            rows.append((JOINT_LABEL, ComponentRow.not_identifiable(
                comp, "not identifiable: one generation per (model, scenario) (m = 1)")))
            continue
        i = used.index((lab, comp))
        bnd = comp != "residual" and v[i] == 0
        lo, hi, _ = engine.profile_interval(crit, fit.result, i, level, hess=h_var)
        if math.isnan(lo) or math.isnan(hi):
            failed.append(comp if lab == JOINT_LABEL else f"{comp}[{lab}]")
        note = m1_note if comp == "model_scenario" and not ns.has_generation else ""
        if comp == "model_scenario" and per_model:
            note = (note + "; " if note else "") + "per-model variance (model_scenario='per_model')"
        rows.append((lab, _variance_row(comp, float(v[i]), math.sqrt(vcov[i, i]) if vcov[i, i] > 0 else _NAN,
                                        (lo, hi), bnd, note)))
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
    jm_pop, jpop = _population_rows(g_judge, cov_judge, g_int, cov_int, p, k, df_within, level)
    jm_pop, jpop = _population_reml(ns, fit, per_model, jm_pop, jpop)
    rows.append((JOINT_LABEL, jpop))
    rows.append((JOINT_LABEL, jm_panel))
    rows.append((JOINT_LABEL, jm_pop))
    raw_pop_j = jpop.raw_estimate
    # likelihood-ratio test of the interaction (ML fits)
    t_add = np.hstack([np.kron(np.eye(p), np.ones((k, 1))),
                       np.kron(np.ones((p, 1)), np.vstack([np.eye(k - 1), -np.ones((1, k - 1))]))])
    ml_full = fit_nested(ns, t_full, reml=False, start=np.maximum(fit.theta, 0.01), per_model=per_model)
    ml_add = fit_nested(ns, t_add, reml=False, start=np.maximum(fit.theta, 0.01), per_model=per_model)
    unconverged = [name for name, f in (("REML", fit), ("ML (full)", ml_full), ("ML (additive)", ml_add))
                   if not f.converged]
    lr = max(ml_add.deviance - ml_full.deviance, 0.0)
    test = {"test": "LR", "statistic": lr, "df1": dfi, "p_value": float(_dist.chi2_sf(lr, dfi)),
            "loglik_full_ml": -ml_full.deviance / 2, "loglik_additive_ml": -ml_add.deviance / 2}
    tests = {"judge_model": test, "model_scenario": _model_scenario_test(ns, t_full, fit, per_model)}
    n_cells, n_scen = ns.n_cells, ns.n_scenarios
    s2_jm_pop = max(jm_pop.raw_estimate, 0.0)
    s2_j_pop = max(raw_pop_j, 0.0)

    diag = {"theta": fit.theta.tolist(), "s2_residual": fit.s2, "reml_deviance": fit.deviance,
            "converged": fit.converged, "n_evaluations": fit.n_evaluations, "n": n_scen, "p": p, "k": k,
            "n_cells": n_cells, "has_generation": ns.has_generation, "cell_counts": ns.counts.reshape(p, k),
            "df_within": df_within, "df_between": df_between}
    diag.update(model_scenario=model_scenario, message=fit.result.message, kkt=_kkt_summary(fit.result), starts=fit.result.starts,
                ml_converged=ml_full.converged and ml_add.converged,
                at_boundary=[c for c, th in zip(("scenario", "model_scenario", "generation"), fit.theta)
                             if th == 0 and (c != "generation" or ns.has_generation)])
    from cjstats._warnings import warn

    if unconverged:
        why = "; ".join(f"{name}: {f.result.message}" for name, f in
                        (("REML", fit), ("ML (full)", ml_full), ("ML (additive)", ml_add)) if not f.converged)
        warn(f"The joint {', '.join(unconverged)} fit did not reach a minimum ({why}); its numbers are "
             "not trustworthy: check the table for models or judges with very few scores, or compare "
             "with method='anova' on the complete scenarios.", CjstatsWarning, stacklevel=3)
    if failed:
        warn(f"The profile-likelihood search did not converge for {', '.join(failed)} in the joint REML "
             "fit; those bounds are NaN.", CjstatsWarning, stacklevel=3)
    return JointFit(method="reml", models=js.models, judges=js.judge_labels, cell_means=beta,
                    components=components_frame(rows, method="reml", ci_level=ci_level),
                    tests=tests, ci_level=ci_level, diagnostics=diag,
                    covariance=JointCovariance.reml(cov, p, k, s2_judge_model=s2_jm_pop, s2_judge=s2_j_pop,
                                                    **df_args))


def fit(stats: Any, *, ci_level: float, seed: int | None = None, rows: Any = None,
        model_scenario: str = "pooled") -> JointFit:
    """:func:`fit_joint` of the joint statistics ``stats`` (the registered backend is
    :func:`cjstats.estimators.joint.reml_backend.fit`, which also takes covariates). REML reads no rows (``rows`` is
    unused) and is deterministic (``seed`` is unused)."""
    from cjstats.estimators.joint._joint import JointSource

    return fit_joint(JointSource(stats, rows), ci_level=ci_level, model_scenario=model_scenario)
