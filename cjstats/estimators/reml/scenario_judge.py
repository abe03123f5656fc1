r"""REML with the scenario x judge interaction: the Woodbury core of :class:`~cjstats.estimators.reml.core.Evaluator`
for H_i = I + Z_i Lambda Z_i' with three relative variances theta = (theta_a, theta_b, theta_sj).

Model (docs/scenario-judge.md, ``scenario_judge``), one unit at a time:

    X_ijl = mu + alpha_i + beta_ij + gamma_l + (alpha gamma)_il + eps_ijl,

lme4's ``lmer(score ~ judge + (1|scenario) + (1|scenario:generation) + (1|scenario:judge))`` (and, for the random
judges, ``score ~ 1 + (1|judge) + ...``). The judge fixed effects, the REML criteria and every formula that reads
A = [J y]'H^{-1}[J y] and log|H| are the core module's; only A, log|H| and their derivatives change.

The generation effects are eliminated first, in closed form, and the scenario effect joins the scenario x judge
effects: inside scenario i every row has one judge, so the scenario's indicator is the sum of its K scenario x judge
indicators Z_l (which are also the rows' judge columns J), and

    H_i = A_i + Z_l Psi Z_l',   A_i = I + theta_b Z_c Z_c',   Psi = theta_sj I + theta_a 11'  (K x K).

A_i is block diagonal by cell: A_c^{-1} = I - f_c 11' with f_c = theta_b/(1 + theta_b n_c) (as in the paper
model, :mod:`cjstats.estimators.reml.core`). Woodbury on the K columns Z_l then gives, with

    N_i = Z_l'A_i^{-1}Z_l = diag(n_l) - sum_c f_c D_c D_c',   r_i = Z_l'A_i^{-1}y0_i = s_i - sum_c f_c D_c Y_c,
    R_i = [N_i  r_i] (K x K+1),  T_i = (I + N_i Psi)^{-1},  B_i = Psi T_i = (Psi^{-1} + N_i)^{-1},

(D_c the judge calls of cell c, n_c their number, Y_c and s_i the cell and scenario x judge sums of y0)

    A = sum_i [J y0]'A_i^{-1}[J y0] - sum_i R_i'B_i R_i,   log|H| = sum_c log(1 + theta_b n_c) + sum_i log|I + N_i Psi|.

The first sum is the paper model's at theta_a = 0 (size classes); the second needs K x K matrices per scenario
pattern p (:mod:`cjstats.stats.scenario_judge`: scenarios with the same judge calls share N_i and B_i, so only
n_p, rho_p = sum_i r_i and C_p = sum_i r_i r_i' enter, the last two linear and quadratic in the pattern's zsum
and zscat). Nothing is singular at theta = 0: I + N Psi is similar to I + Psi^{1/2} N Psi^{1/2}, whose
eigenvalues are >= 1, so T exists for every theta >= 0 and B = Psi T needs no Psi^{-1}.

Derivatives. With E_a = 11', E_sj = I (dPsi/dtheta_k), N_b = dN/dtheta_b = -sum_c f_c' D_c D_c' and N_bb likewise
(f' = 1/(1 + theta_b n)^2, f'' = -2n/(1 + theta_b n)^3), and R_b, R_bb the derivatives of R:

    B_k = T'E_k T,  B_jk = -(T'E_j N B_k + B_k N E_j T),  B_b = -B N_b B,  B_bk = -(B N_b B_k + B_k N_b B),
    B_bb = 2 B N_b B N_b B - B N_bb B,

and A, linear in B and quadratic in R, is differentiated by the product rule (A_k = -sum R'B_k R,
A_b = A0_b - sum (R_b'BR + R'BR_b + R'B_b R), ...). For log|I + N Psi|:

    l_k = tr(T N E_k),  l_b = tr(B N_b),  l_jk = -tr(X E_j X E_k) (X = T N),  l_bk = tr(N_b B_k),
    l_bb = tr(B N_bb) - tr(B N_b B N_b).

Every evaluation costs a few products of K x K matrices per pattern (the cells enter only through D'diag(f)),
instead of an inverse of order 1 + m + K.
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
        m, k = sj.m, sj.k
        inc = np.asarray(sj.incidence, dtype=np.float64)
        self._np = np.asarray(sj.count, dtype=np.float64)
        self._d = np.ascontiguousarray(inc)                              # (P, m, K) D
        self._dt = np.ascontiguousarray(inc.transpose(0, 2, 1))          # (P, K, m) D'
        self._h = inc.sum(axis=2)                                        # (P, m) cell sizes (0: padding)
        self._diag_nl = np.zeros((inc.shape[0], k, k))                   # diag(n_l): calls per judge
        self._diag_nl[:, np.arange(k), np.arange(k)] = inc.sum(axis=1)
        zs, zc = sj.zsum, sj.zscat
        cy, cs = slice(1, 1 + m), slice(1 + m, 1 + m + k)
        self._zy = np.ascontiguousarray(zs[:, cy])[:, :, None]           # (P, m, 1) sums of the cell sums
        self._zs = np.ascontiguousarray(zs[:, cs])                       # (P, K) sums of s_i
        self._syy = np.ascontiguousarray(zc[:, cy, cy])                  # (P, m, m) scatter of the cell sums
        self._sys = np.ascontiguousarray(zc[:, cy, cs])                  # (P, m, K) cell sums x s_i
        self._sss = np.ascontiguousarray(zc[:, cs, cs])                  # (P, K, K) scatter of s_i
        self._diag_k = (np.arange(k), np.arange(k))

    def _cells(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For per-cell weights g (P, m): X = D'diag(g) (P, K, m), X D (P, K, K) and X sum_i Y_i (P, K)."""
        x = self._dt * g[:, None, :]
        return x, x @ self._d, (x @ self._zy)[:, :, 0]

    def _absorb(self, x: np.ndarray | None, rl: np.ndarray, rr: np.ndarray, yy: float) -> np.ndarray:
        """sum_p n_p Rl_p' X_p Rr_p (K+1, K+1) for per-pattern [N, rho/n_p]-shaped Rl, Rr (P, ., K+1), X (P, ., .)
        (None: the identity), with the score entry replaced by ``yy``: the judge block is sum_p n_p N X N and the
        cross block sum_p N X rho, but the score entry sum_i r_i'X r_i needs the scatter of the r_i."""
        k1 = self.k + 1
        xr = rr if x is None else x @ rr
        out = (rl * self._np[:, None, None]).reshape(-1, k1).T @ xr.reshape(-1, k1)
        out[-1, -1] = yy
        return out

    def _wsum(self, x: np.ndarray, y: np.ndarray) -> float:
        """sum_p n_p tr(X_p Y_p') for (P, K, K) arrays (X, Y per scenario of the pattern)."""
        return float(self._np @ (x * y).sum(axis=(1, 2)))

    @staticmethod
    def _csum(x: np.ndarray, c: np.ndarray) -> float:
        """sum_p tr(X_p C_p') for X per scenario of the pattern and C already summed over them (a scatter)."""
        return float(np.vdot(x, c))

    def _core(self, theta: np.ndarray, grad: bool = False, which: str = "fixed", hess: bool = False
              ) -> tuple[Any, ...]:
        self.counter += 1
        ta, tb, ts = (float(v) for v in np.asarray(theta, dtype=float)[:3])
        k, k1 = self.k, self.k + 1
        base, ddf, _ = self._arrays["fixed"]
        sizes = self._sizes
        n = self._np
        # the cells: by size class for the paper model's part, per pattern for N and r
        a_s = 1.0 / (1.0 + tb * sizes)
        ac = 1.0 / (1.0 + tb * self._h)
        x0, xd, xy = self._cells(tb * ac)
        nmat = self._diag_nl - xd                                        # N
        rho = self._zs - xy                                              # sum_i r_i
        u = x0 @ self._syy - self._sys.transpose(0, 2, 1)                # X Syy - Sys'
        c00 = self._sss - x0 @ self._sys + u @ x0.transpose(0, 2, 1)      # C = sum_i r_i r_i'
        # T = (I + N Psi)^{-1}, B = Psi T, Psi = theta_sj I + theta_a 11' (N Psi = theta_sj N + theta_a (N1)1')
        r1 = nmat.sum(axis=2)                                            # N 1
        cmat = ts * nmat + ta * r1[:, :, None]
        cmat[:, self._diag_k[0], self._diag_k[1]] += 1.0
        sign, logc = np.linalg.slogdet(cmat)
        if np.any(sign <= 0):
            return np.full((k1, k1), np.nan), math.inf, None, None
        tmat = np.linalg.inv(cmat)
        v = tmat.sum(axis=1)                                             # T'1
        bmat = ts * tmat + ta * v[:, None, :]
        bmat = 0.5 * (bmat + bmat.transpose(0, 2, 1))
        rbar = np.concatenate((nmat, (rho / n[:, None])[:, :, None]), axis=2)      # [N, rho/n]
        br = bmat @ rbar
        amat = base - ((tb * a_s) @ ddf).reshape(k1, k1) - self._absorb(None, rbar, br, self._csum(bmat, c00))
        ld = float(self._size_cells @ np.log1p(tb * sizes)) + float(n @ logc)
        lmat = self._lmat if which == "random" else None
        if not (grad or hess):
            return (amat if lmat is None else lmat.T @ amat @ lmat), ld, None, None
        # theta_a, theta_sj: B_a = v v' (v = T'1), B_sj = T'T
        rv = (v[:, None, :] @ rbar)                                      # (P, 1, K+1): v'R
        vc = (c00 @ v[:, :, None])[:, :, 0]
        da_a = -self._absorb(None, rv, rv, float(np.vdot(v, vc)))
        tr_ = tmat @ rbar
        tc = tmat @ c00
        da_s = -self._absorb(None, tr_, tr_, self._csum(tmat, tc))
        dl_a = float(n @ (v * r1).sum(axis=1))                           # 1'T N 1
        dl_s = self._wsum(tmat, nmat)                                    # tr(T N)
        # theta_b
        a2 = a_s * a_s
        x1, xd1, xy1 = self._cells(ac * ac)
        nb = -xd1
        rb = np.concatenate((nb, (-xy1 / n[:, None])[:, :, None]), axis=2)
        c0b = u @ x1.transpose(0, 2, 1)                               # sum_i r_i r_b,i'
        nbbr = nb @ br
        bnb = bmat @ nb
        bnbb = bnb @ bmat                                                # B N_b B
        g1 = self._absorb(None, rb, br, self._csum(bmat, c0b))
        da_b = (-(a2 @ ddf).reshape(k1, k1) - (g1 + g1.T)
                + self._absorb(None, br, nbbr, self._csum(bnbb, c00)))
        dl_b = float(self._size_cells @ (sizes * a_s)) + self._wsum(bmat, nb)
        da = np.stack((da_a, da_b, da_s))
        dld = np.array([dl_a, dl_b, dl_s])
        if not hess:
            if lmat is not None:
                amat, da = lmat.T @ amat @ lmat, lmat.T @ da @ lmat
            return amat, ld, da, dld
        # second derivatives (module docstring); parameters in the order (a, b, sj)
        b_k = [v[:, :, None] * v[:, None, :], tmat.transpose(0, 2, 1) @ tmat]
        # T'E_j N: E_a = 11' -> v (N1)'; E_sj = I -> T'N
        ten = [v[:, :, None] * r1[:, None, :], tmat.transpose(0, 2, 1) @ nmat]
        d2a = np.empty((3, 3, k1, k1))
        d2ld = np.empty((3, 3))
        pk = (0, 2)
        xmat = tmat @ nmat                                               # X = T N
        x1s = xmat.sum(axis=1)                                           # 1'X
        xs1 = xmat.sum(axis=2)                                           # X 1
        for j in range(2):
            for kk in range(2):
                g = ten[j] @ b_k[kk]
                bjk = -(g + g.transpose(0, 2, 1))
                d2a[pk[j], pk[kk]] = -self._absorb(bjk, rbar, rbar, self._csum(bjk, c00))
        d2ld[0, 0] = -float(n @ xs1.sum(axis=1) ** 2)
        d2ld[0, 2] = d2ld[2, 0] = -float(n @ (x1s * xs1).sum(axis=1))
        d2ld[2, 2] = -self._wsum(xmat, xmat.transpose(0, 2, 1))
        for kk in range(2):
            bk = b_k[kk]
            g = nb @ bk
            bbk = -(bmat @ g + g.transpose(0, 2, 1) @ bmat)              # -(B N_b B_k + B_k N_b B)
            h1 = self._absorb(None, rb, bk @ rbar, self._csum(bk, c0b))
            d2a[1, pk[kk]] = d2a[pk[kk], 1] = -(h1 + h1.T) - self._absorb(bbk, rbar, rbar, self._csum(bbk, c00))
            d2ld[1, pk[kk]] = d2ld[pk[kk], 1] = self._wsum(nb, bk)
        x2, xd2, xy2 = self._cells(-2.0 * self._h * ac * ac * ac)
        nbb = -xd2
        rbb = np.concatenate((nbb, (-xy2 / n[:, None])[:, :, None]), axis=2)
        c0bb = u @ x2.transpose(0, 2, 1)                              # sum_i r_i r_bb,i'
        cbb = x1 @ self._syy @ x1.transpose(0, 2, 1)                     # sum_i r_b,i r_b,i'
        b_b = -bnbb
        b_bb = 2.0 * (bnbb @ nb @ bmat) - bmat @ nbb @ bmat
        e1 = self._absorb(None, rbb, br, self._csum(bmat, c0bb))
        e3 = self._absorb(b_b, rb, rbar, self._csum(b_b, c0b))
        d2a[1, 1] = (-((-2.0 * sizes * a2 * a_s) @ ddf).reshape(k1, k1) - (e1 + e1.T)
                     - 2.0 * self._absorb(bmat, rb, rb, self._csum(bmat, cbb)) - 2.0 * (e3 + e3.T)
                     - self._absorb(b_bb, rbar, rbar, self._csum(b_bb, c00)))
        d2ld[1, 1] = (-float(self._size_cells @ (sizes * sizes * a2)) + self._wsum(bmat, nbb)
                      - self._wsum(bnb, bnb.transpose(0, 2, 1)))
        d2a = 0.5 * (d2a + d2a.transpose(1, 0, 2, 3))
        if lmat is not None:
            amat, da, d2a = lmat.T @ amat @ lmat, lmat.T @ da @ lmat, lmat.T @ d2a @ lmat
        return amat, ld, (da, d2a), (dld, 0.5 * (d2ld + d2ld.T))


def sj_moment_start(d: Design, ys: YStats, model: str) -> np.ndarray:
    """Starting theta for the scenario x judge model: the moment start of the model without it, and
    theta_sj = 0.1 (the engine confirms a boundary optimum, or a failed check, from 0.5 and 0.02 as well)."""
    base = moment_start(d, ys, model)
    out = [float(base[0]), float(base[1]) if d.has_generation else 0.05, 0.1]
    if model == "random":
        out.append(float(base[-1]))
    return np.asarray(out)
