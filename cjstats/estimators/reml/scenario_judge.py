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
n_p, sum_i r_i and sum_i r_i r_i' enter, linear and quadratic in the pattern's zsum and zscat; the class
docstring writes them as a few "units" so that one product per term gives every block). Nothing is singular at theta = 0: I + N Psi is similar to I + Psi^{1/2} N Psi^{1/2}, whose
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

    The scenarios of a pattern enter through the pattern's count n_p, zsum and zscat, i.e. through its augmented
    scatter sum_i (1, z_i)(1, z_i)'. Written as sum_j (c_j, w_j)(c_j, w_j)' over a few *units* j
    (:func:`_units`: a pattern of one scenario is one unit, c = 1 and w = z), every sum over scenarios is a sum
    over units of one K x (K+1) matrix R_j = [c_j N_p, r(w_j)] (r linear in w), so that
    sum_i R_i'B R_i = sum_j R_j'B R_j, judge, cross and score blocks at once. The last four evaluations are
    kept, so a gradient or Hessian asked for again at the same (theta_a, theta_b, theta_sj) (the KKT check after
    a step, the random-judge model's theta_j direction, the Wald Hessian at a fit's optimum) reuses what it
    shares with them.
    """

    n_h = 3     # relative variances in H

    def __init__(self, d: Design, ys: YStats, sj: ScenarioJudgeStats) -> None:
        super().__init__(d, ys, patterns=False)
        if not np.allclose(sj.shift, ys.shift, rtol=0, atol=0):
            sj = sj.recentre(ys.shift)
        self.sj = sj
        m, k = sj.m, sj.k
        c, w, owner = _units(sj)
        inc = np.asarray(sj.incidence, dtype=np.float64)[owner]         # (J, m, K) judge calls of each unit's pattern
        j = inc.shape[0]
        h = inc @ np.ones(k)                                             # (J, m) cell sizes (0: padding)
        nl = np.ones(m) @ inc                                            # (J, K) calls per judge
        self._wt = c * c                                                 # (J,): sum over a pattern's units = n_p
        # the cells by size class h: sum_c g(n_c) D_c D_c' = sum_h g(h) DD_h, likewise D_c times the cell sums
        self._csizes = np.unique(h[h > 0])
        n_s = self._csizes.shape[0]
        onehot = (h[:, :, None] == self._csizes).astype(np.float64)     # (J, m, S)
        ed = (onehot[:, :, :, None] * inc[:, :, None, :]).reshape(j, m, n_s * k).transpose(0, 2, 1)  # (J, S K, m)
        dd = (ed @ inc).reshape(j, n_s, k, k).transpose(0, 2, 3, 1)     # (J, K, K, S): DD_h
        dw = (ed @ w[:, :m, None]).reshape(j, n_s, k, 1).transpose(0, 2, 3, 1)   # (J, K, 1, S): sum_c D_c w_c
        # N = diag(n_l) - DD g, unit index last ((K, K, J): the elimination's layout), and
        # R = [c N, r] = R0 - [c DD, DW] g with R0 = [c diag(n_l), w_s], units first
        diag_nl = np.zeros((j, k, k))
        diag_nl[:, np.arange(k), np.arange(k)] = nl
        self._n0 = np.ascontiguousarray(diag_nl.transpose(1, 2, 0))     # (K, K, J)
        # (stored size class first: g @ X streams the rows, twice as fast as X @ g with S columns)
        self._dd_t = np.ascontiguousarray(dd.transpose(3, 1, 2, 0)).reshape(n_s, -1)   # (S, K K J)
        self._r0 = np.concatenate((c[:, None, None] * diag_nl, w[:, m:, None]), axis=2)   # (J, K, K+1)
        rr = np.concatenate((c[:, None, None, None] * dd, dw), axis=2)  # (J, K, K+1, S)
        self._rr = np.ascontiguousarray(rr.transpose(3, 0, 1, 2)).reshape(n_s, -1)     # (S, J K (K+1))
        self._eye_t = np.eye(k)[:, :, None]
        self._ones_k, self._ones_kk = np.ones(k), np.ones(k * k)
        self._recent: dict[tuple[float, float, float], dict[str, Any]] = {}

    def _n(self, g: np.ndarray, soa: bool = False) -> np.ndarray:
        """sum_c g(n_c) D_c D_c' per unit for weights g per cell size (S,): (J, K, K), or (K, K, J) with ``soa``."""
        k = self.k
        out = (g @ self._dd_t).reshape(k, k, -1)
        return out if soa else np.ascontiguousarray(out.transpose(2, 0, 1))

    def _r(self, g: np.ndarray) -> np.ndarray:
        """[c DD, DW] g per unit (J, K, K+1): R = R0 minus it, and the derivatives of R in theta_b are minus it at
        the derivatives of g."""
        return (g @ self._rr).reshape(-1, self.k, self.k + 1)

    def _absorb(self, x: np.ndarray | None, rl: np.ndarray, rr: np.ndarray) -> np.ndarray:
        """sum_j Rl_j' X_j Rr_j (K+1, K+1) for per-unit Rl, Rr (J, ., K+1) and X (J, ., .) (None: identity)."""
        k1 = self.k + 1
        xr = rr if x is None else x @ rr
        return rl.reshape(-1, k1).T @ xr.reshape(-1, k1)

    def _wsum(self, x: np.ndarray, y: np.ndarray) -> float:
        """sum_p n_p tr(X_p Y_p') = sum_j c_j^2 tr(X_j Y_j') for per-unit (J, K, K) arrays."""
        return float(((x * y).reshape(x.shape[0], -1) @ self._ones_kk) @ self._wt)

    def _inverse(self, n_t: np.ndarray, ta: float, ts: float) -> tuple[np.ndarray, ...] | None:
        """T = (I + N Psi)^{-1}, v = T'1, B = Psi T = theta_sj T + theta_a 1v' (units first) and log|I + N Psi| per
        unit, from N as (K, K, J); None where |I + N Psi| <= 0 (possible only for a negative theta).

        I + N Psi = I + theta_sj N + theta_a (N1)1'. For theta >= 0 its leading principal minors are >= 1:
        the k-th is |G_k| (1 + theta_a 1'G_k^{-1}(N1)_k) with G_k = I + theta_sj N_kk, a Stieltjes matrix (N is
        positive semidefinite with off-diagonal entries -sum_c f_c D_ck D_cl <= 0), whose inverse is entrywise
        >= 0, and N1 = sum_c D_c/(1 + theta_b n_c) >= 0. So elimination needs no pivoting
        (:func:`_gauss_jordan`); a negative theta (asked for only by a difference quotient at the boundary) takes
        LAPACK's pivoted inverse.
        """
        c_t = ts * n_t + ta * n_t.sum(axis=1)[:, None, :]
        c_t += self._eye_t
        if ta >= 0.0 and ts >= 0.0:
            t_t, logc = _gauss_jordan(c_t)                               # T as (K, K, J)
        else:
            cmat = c_t.transpose(2, 0, 1)
            sign, logc = np.linalg.slogdet(cmat)
            if np.any(sign <= 0):
                return None
            t_t = np.ascontiguousarray(np.linalg.inv(cmat).transpose(1, 2, 0))
        v_t = t_t.sum(axis=0)
        b_t = ts * t_t + ta * v_t[None, :, :]
        return (t_t, v_t, np.ascontiguousarray(t_t.transpose(2, 0, 1)), np.ascontiguousarray(v_t.T),
                np.ascontiguousarray(b_t.transpose(2, 0, 1)), logc)

    def _core(self, theta: np.ndarray, grad: bool = False, which: str = "fixed", hess: bool = False
              ) -> tuple[Any, ...]:
        self.counter += 1
        key = tuple(float(v) for v in np.asarray(theta, dtype=float)[:3])
        s = self._recent.pop(key, None)
        if s is None:
            s = self._value(key)
        self._recent[key] = s                                            # most recent last
        if len(self._recent) > 4:
            del self._recent[next(iter(self._recent))]
        k1 = self.k + 1
        if s["amat"] is None:
            return np.full((k1, k1), np.nan), math.inf, None, None
        if (grad or hess) and "da" not in s:
            self._grad(s)
        if hess and "d2a" not in s:
            self._hess(s)
        lm = self._lmat if which == "random" else None

        def out(x: np.ndarray) -> np.ndarray:
            return x.copy() if lm is None else lm.T @ x @ lm

        amat, ld = out(s["amat"]), s["ld"]
        if hess:
            return amat, ld, (out(s["da"]), out(s["d2a"])), (s["dld"].copy(), s["d2ld"].copy())
        if grad:
            return amat, ld, out(s["da"]), s["dld"].copy()
        return amat, ld, None, None

    def _value(self, key: tuple[float, float, float]) -> dict[str, Any]:
        """A and log|H| at theta = ``key`` (module docstring), and what the derivatives reuse."""
        ta, tb, ts = key
        k, k1 = self.k, self.k + 1
        base, ddf, _ = self._arrays["fixed"]
        sizes = self._sizes
        s: dict[str, Any] = {"key": key, "amat": None}
        # the cells: by size class for the paper model's part, per unit for N and R
        a_s = 1.0 / (1.0 + tb * sizes)
        ac = 1.0 / (1.0 + tb * self._csizes)
        g = tb * ac
        n_t = self._n0 - self._n(g, soa=True)                            # N as (K, K, J)
        inv = self._inverse(n_t, ta, ts)
        if inv is None:
            return s
        t_t, v_t, tmat, v, bmat, logc = inv
        rmat = self._r0 - self._r(g)                                     # [c N, r]
        br = bmat @ rmat
        s.update(a_s=a_s, ac=ac, n_t=n_t, t_t=t_t, v_t=v_t, tmat=tmat, v=v, bmat=bmat, rmat=rmat, br=br)
        amat = base - ((tb * a_s) @ ddf).reshape(k1, k1) - self._absorb(None, rmat, br)
        s["amat"] = 0.5 * (amat + amat.T)
        s["ld"] = float(self._size_cells @ np.log1p(tb * sizes)) + float(self._wt @ logc)
        return s

    def _grad(self, s: dict[str, Any]) -> None:
        """dA and dlog|H| in (theta_a, theta_b, theta_sj) (module docstring)."""
        k1 = self.k + 1
        _, ddf, _ = self._arrays["fixed"]
        sizes = self._sizes
        tmat, v, bmat, rmat, br = (s[x] for x in ("tmat", "v", "bmat", "rmat", "br"))
        n_t, t_t, v_t = s["n_t"], s["t_t"], s["v_t"]
        wt = self._wt
        # theta_a, theta_sj: B_a = v v' (v = T'1), B_sj = T'T
        rv = v[:, None, :] @ rmat                                        # (J, 1, K+1): v'R
        da_a = -self._absorb(None, rv, rv)
        tr_ = tmat @ rmat
        da_s = -self._absorb(None, tr_, tr_)
        dl_a = float(wt @ (v_t * n_t.sum(axis=1)).sum(axis=0))           # 1'T N 1
        dl_s = float(wt @ (t_t * n_t.transpose(1, 0, 2)).sum(axis=(0, 1)))   # tr(T N)
        # theta_b
        a_s, ac = s["a_s"], s["ac"]
        g1 = ac * ac
        nb = -self._n(g1)                                                # N_b
        rb = -self._r(g1)                                                # R_b
        e = self._absorb(None, rb, br)
        da_b = (-((a_s * a_s) @ ddf).reshape(k1, k1) - (e + e.T) + self._absorb(None, br, nb @ br))
        dl_b = float(self._size_cells @ (sizes * a_s)) + self._wsum(bmat, nb)
        s.update(nb=nb, rb=rb)
        da = np.stack((da_a, da_b, da_s))
        s["da"] = 0.5 * (da + da.transpose(0, 2, 1))
        s["dld"] = np.array([dl_a, dl_b, dl_s])

    def _hess(self, s: dict[str, Any]) -> None:
        """d2A and d2log|H| (module docstring); parameters in the order (a, b, sj)."""
        k1 = self.k + 1
        _, ddf, _ = self._arrays["fixed"]
        sizes, wt = self._sizes, self._wt
        tmat, v, bmat, rmat, br = (s[x] for x in ("tmat", "v", "bmat", "rmat", "br"))
        nmat = np.ascontiguousarray(s["n_t"].transpose(2, 0, 1))
        nb, rb = s["nb"], s["rb"]
        a_s, ac = s["a_s"], s["ac"]
        bnb = bmat @ nb
        bnbb = bnb @ bmat                                                # B N_b B
        tt = tmat.transpose(0, 2, 1)
        b_k = [v[:, :, None] * v[:, None, :], tt @ tmat]                 # B_a, B_sj
        ten = [v[:, :, None] * (nmat @ self._ones_k)[:, None, :], tt @ nmat]   # T'E_j N: v (N1)', T'N
        d2a = np.empty((3, 3, k1, k1))
        d2ld = np.empty((3, 3))
        pk = (0, 2)
        for j in range(2):
            for kk in range(2):
                g = ten[j] @ b_k[kk]
                d2a[pk[j], pk[kk]] = self._absorb(g + g.transpose(0, 2, 1), rmat, rmat)   # -R'B_jk R
        xmat = tmat @ nmat                                               # X = T N
        x1s = self._ones_k @ xmat                                        # 1'X
        xs1 = xmat @ self._ones_k                                        # X 1
        d2ld[0, 0] = -float(wt @ (xs1 @ self._ones_k) ** 2)
        d2ld[0, 2] = d2ld[2, 0] = -float(wt @ ((x1s * xs1) @ self._ones_k))
        d2ld[2, 2] = -self._wsum(xmat, xmat.transpose(0, 2, 1))
        for kk in range(2):
            bk = b_k[kk]
            g = nb @ bk
            bbk = bmat @ g + g.transpose(0, 2, 1) @ bmat                 # -B_bk = B N_b B_k + B_k N_b B
            h1 = self._absorb(None, rb, bk @ rmat)
            d2a[1, pk[kk]] = d2a[pk[kk], 1] = -(h1 + h1.T) + self._absorb(bbk, rmat, rmat)
            d2ld[1, pk[kk]] = d2ld[pk[kk], 1] = self._wsum(nb, bk)
        a2 = a_s * a_s
        g2 = -2.0 * self._csizes * ac * ac * ac
        nbb = -self._n(g2)                                               # N_bb
        rbb = -self._r(g2)
        b_b = -bnbb
        b_bb = 2.0 * (bnbb @ nb @ bmat) - bmat @ nbb @ bmat
        e1 = self._absorb(None, rbb, br)
        e3 = self._absorb(b_b, rb, rmat)
        d2a[1, 1] = (-((-2.0 * sizes * a2 * a_s) @ ddf).reshape(k1, k1) - (e1 + e1.T)
                     - 2.0 * self._absorb(bmat, rb, rb) - 2.0 * (e3 + e3.T) - self._absorb(b_bb, rmat, rmat))
        d2ld[1, 1] = (-float(self._size_cells @ (sizes * sizes * a2)) + self._wsum(bmat, nbb)
                      - self._wsum(bnb, bnb.transpose(0, 2, 1)))
        d2a = 0.5 * (d2a + d2a.transpose(1, 0, 2, 3))
        s["d2a"] = 0.5 * (d2a + d2a.transpose(0, 1, 3, 2))
        s["d2ld"] = 0.5 * (d2ld + d2ld.T)


def _gauss_jordan(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverses and log-determinants of J K x K matrices stored as (K, K, J) (entry (i, l) of every matrix
    contiguous) whose leading principal minors are positive (so every pivot is), overwriting ``a``: Gauss-Jordan
    elimination without pivoting, vectorised over the J matrices (K steps of whole-array operations, faster for
    small K than a LAPACK call per matrix); log|C| is the sum of the logs of the pivots.
    """
    k = a.shape[0]
    piv = np.empty((k, a.shape[2]))
    tmp = np.empty_like(a)
    for j in range(k):
        col = a[:, j].copy()
        piv[j] = col[j]
        a[:, j] = 0.0
        a[j, j] = 1.0
        a[j] /= col[j]
        col[j] = 0.0
        np.multiply(col[:, None, :], a[j], out=tmp)
        a -= tmp
    return a, np.log(piv).sum(axis=0)


def _units(sj: ScenarioJudgeStats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Units (c_j, w_j) of every pattern p with sum_{j of p} (c_j, w_j)(c_j, w_j)' = sum_{i of p} (1, z_i)(1, z_i)'
    (z without its scenario-sum entry: the cell sums, then the scenario x judge sums), i.e. sum c_j^2 = n_p,
    sum c_j w_j = zsum_p and sum w_j w_j' = zscat_p. A pattern of one scenario is one unit (1, z); a larger one
    has the columns V_r sqrt(lambda_r) of the positive eigenpairs of its augmented scatter (at most n_p and
    1 + m + K of them). Returns c (J,), w (J, m + K) and the pattern of each unit (J,)."""
    zs, zc, n = sj.zsum[:, 1:], sj.zscat[:, 1:, 1:], np.asarray(sj.count, dtype=np.float64)
    single = n <= 1
    cs, ws, owner = [n[single]], [zs[single]], [np.flatnonzero(single)]
    multi = np.flatnonzero(~single)
    if multi.size:
        q1 = zs.shape[1] + 1
        aug = np.empty((multi.size, q1, q1))
        aug[:, 0, 0] = n[multi]
        aug[:, 0, 1:] = aug[:, 1:, 0] = zs[multi]
        aug[:, 1:, 1:] = zc[multi]
        lam, vec = np.linalg.eigh(aug)                                   # ascending eigenvalues
        for i, p in enumerate(multi):
            keep = int(min(n[p], q1))
            lp, vp = lam[i, -keep:], vec[i][:, -keep:]
            pos = lp > 0
            f = (vp[:, pos] * np.sqrt(lp[pos])).T                        # (r, 1 + m + K)
            cs.append(f[:, 0])
            ws.append(f[:, 1:])
            owner.append(np.full(f.shape[0], p))
    return np.concatenate(cs), np.concatenate(ws), np.concatenate(owner)


def sj_moment_start(d: Design, ys: YStats, model: str) -> np.ndarray:
    """Starting theta for the scenario x judge model: the moment start of the model without it, and
    theta_sj = 0.1 (the engine confirms a boundary optimum, or a failed check, from 0.5 and 0.02 as well)."""
    base = moment_start(d, ys, model)
    out = [float(base[0]), float(base[1]) if d.has_generation else 0.05, 0.1]
    if model == "random":
        out.append(float(base[-1]))
    return np.asarray(out)
