r"""REML with the scenario x judge interaction: the Woodbury core of :class:`~cjstats.estimators.reml.core.Evaluator`
for H_i = I + Z_i Lambda Z_i' with three relative variances theta = (theta_a, theta_b, theta_sj).

Model (docs/scenario-judge.md, ``scenario_judge``), one unit at a time:

    X_ijl = mu + alpha_i + beta_ij + gamma_l + (alpha gamma)_il + eps_ijl,

lme4's ``lmer(score ~ judge + (1|scenario) + (1|scenario:generation) + (1|scenario:judge))`` (and, for the random
judges, ``score ~ 1 + (1|judge) + ...``). The judge fixed effects, the REML criteria and every formula that reads
A = [J y]'H^{-1}[J y] and log|H| are the core module's; only A, log|H| and their derivatives change.

Per scenario pattern p (:mod:`cjstats.stats.scenario_judge`: W = Z'Z, G = Z'J, count n_p, S_p = sum z_i and
Sc_p = sum z_i z_i' with z_i = Z_i'y0_i), Woodbury gives H^{-1} = I - Z R Z' with

    C = I + Lambda W,   T = C^{-1},   R = (Lambda^{-1} + W)^{-1} = T Lambda,   log|H_i| = log|C|,

so, with M_p(R) = [[n_p G'RG, G'R S_p], [S_p'RG, tr(R Sc_p)]],

    A = A_0 - sum_p M_p(R_p),   log|H| = sum_p n_p log|C_p|,

where A_0 = [J y0]'[J y0]. With E_k the selector of the effects whose variance is theta_k (so dLambda = E_k):

    dR/dtheta_k = T E_k T' =: Q_k,          d2R/dtheta_j dtheta_k = -(T E_j W Q_k + Q_k W E_j T'),
    dlog|C|/dtheta_k = tr(T E_k W),         d2log|C|/dtheta_j dtheta_k = -tr(E_j X E_k X),  X = W T,

(the first from d(T Lambda) = -T E_k W T Lambda + T E_k and I - W T Lambda = (I + W Lambda)^{-1} = T'), and A is
linear in R: dA = -sum_p M_p(Q_k), d2A = -sum_p M_p(d2R). Nothing is singular at theta = 0 (C = I there).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cjstats.estimators.reml.core import Evaluator, moment_start
from cjstats.stats.scenario_judge import ScenarioJudgeStats
from cjstats.stats.views import Design, YStats

__all__ = ["SJEvaluator", "sj_moment_start"]


class SJEvaluator(Evaluator):
    """The fixed- and random-judge REML criteria of the model with ``scenario_judge`` (module docstring).

    theta = (theta_a, theta_b, theta_sj) for the fixed judges, (theta_a, theta_b, theta_sj, theta_j) for the
    random ones (variances over the residual variance).
    """

    n_h = 3     # relative variances in H

    def __init__(self, d: Design, ys: YStats, sj: ScenarioJudgeStats) -> None:
        super().__init__(d, ys, patterns=False)
        if not np.allclose(sj.shift, ys.shift, rtol=0, atol=0):
            sj = sj.recentre(ys.shift)
        self.sj = sj
        w, g = sj.blocks()
        self._w, self._g = w, g
        m, q = sj.m, sj.q
        self._sel = [np.array([0]), np.arange(1, 1 + m), np.arange(1 + m, q)]
        self._lam_pattern = np.zeros((3, q))
        for j, idx in enumerate(self._sel):
            self._lam_pattern[j, idx] = 1.0
        self._eye_q = np.eye(q)
        self._np = sj.count

    def _absorb(self, r: np.ndarray) -> np.ndarray:
        """sum_p M_p(R_p) for R of shape (..., P, q, q): (..., K+1, K+1)."""
        g, n, s, sc = self._g, self._np, self.sj.zsum, self.sj.zscat
        k = self.k
        rg = r @ g                                                   # (..., P, q, K)
        gg = np.einsum("pak,...pal->...kl", g * n[:, None, None], rg)
        gs = np.einsum("...pak,pa->...k", rg, s)
        ss = np.einsum("...pab,pab->...", r, sc)
        out = np.empty(r.shape[:-3] + (k + 1, k + 1))
        out[..., :k, :k] = gg
        out[..., :k, k] = gs
        out[..., k, :k] = gs
        out[..., k, k] = ss
        return out

    def _core(self, theta: np.ndarray, grad: bool = False, which: str = "fixed", hess: bool = False
              ) -> tuple[Any, ...]:
        self.counter += 1
        th = np.asarray(theta, dtype=float)[:3]
        lam = th @ self._lam_pattern                                 # (q,)
        w = self._w
        c = self._eye_q + lam[:, None] * w                           # I + Lambda W
        t = np.linalg.inv(c)
        r = t * lam[None, None, :]
        r = 0.5 * (r + r.transpose(0, 2, 1))
        sign, logc = np.linalg.slogdet(c)
        if np.any(sign <= 0):
            k1 = self.k + 1
            return np.full((k1, k1), np.nan), math.inf, None, None
        amat = self._base - self._absorb(r)
        ld = float(self._np @ logc)
        if which == "random":
            amat = self._lmat.T @ amat @ self._lmat
        if not (grad or hess):
            return amat, ld, None, None
        qk = np.stack([t[:, :, idx] @ t[:, :, idx].transpose(0, 2, 1) for idx in self._sel])   # (3, P, q, q)
        x = w @ t                                                                             # (P, q, q)
        diag_x = np.diagonal(x, axis1=1, axis2=2)                                             # (P, q)
        dld = np.array([float(self._np @ diag_x[:, idx].sum(axis=1)) for idx in self._sel])
        da = -self._absorb(qk)
        if which == "random":
            da = self._lmat.T @ da @ self._lmat
        if not hess:
            return amat, ld, da, dld
        d2r = np.empty((3, 3) + t.shape)
        d2ld = np.empty((3, 3))
        for j, jdx in enumerate(self._sel):
            tew = t[:, :, jdx] @ w[:, jdx, :]                       # T E_j W  (P, q, q)
            for kk, kdx in enumerate(self._sel):
                v = tew @ qk[kk]
                d2r[j, kk] = -(v + v.transpose(0, 2, 1))
                d2ld[j, kk] = -float(self._np @ np.einsum("pab,pba->p", x[:, jdx][:, :, kdx], x[:, kdx][:, :, jdx]))
        d2a = -self._absorb(d2r)
        if which == "random":
            d2a = self._lmat.T @ d2a @ self._lmat
        d2a = 0.5 * (d2a + d2a.transpose(1, 0, 2, 3))
        return amat, ld, (da, d2a), (dld, 0.5 * (d2ld + d2ld.T))


def sj_moment_start(d: Design, ys: YStats, model: str) -> np.ndarray:
    """Starting theta for the scenario x judge model: the moment start of the model without it, and
    theta_sj = 0.1 (the engine confirms a boundary optimum, or a failed check, from 0.5 and 0.02 as well)."""
    base = moment_start(d, ys, model)
    out = [float(base[0]), float(base[1]) if d.has_generation else 0.05, 0.1]
    if model == "random":
        out.append(float(base[-1]))
    return np.asarray(out)
