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

Two implementations of these sums: numpy (whole-array steps over the units, :func:`_gauss_jordan`) and, with
numba installed, the compiled :func:`_sj_loops` (the same formulas fused, value, gradient and Hessian in one
pass; 0.25-0.3 ms against 0.47 ms per gradient evaluation for 600 units). They agree to 1e-12 relative
(tests/estimators/test_scenario_judge_algebra.py). The kernel is loaded once a process has done enough numpy
work to pay for importing numba (:data:`KERNEL_AFTER`), so a one-off fit never waits for it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cjstats._jit import _COMPILED, jit_kernel
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
    shares with them; the results of every evaluation (A, log|H| and the derivatives computed, not the work
    arrays) are kept as well (:meth:`_keep`), so that a theta asked for again later costs nothing.
    """

    n_h = 3     # relative variances in H

    def __init__(self, d: Design, ys: YStats, sj: ScenarioJudgeStats) -> None:
        super().__init__(d, ys, patterns=False)
        if not np.array_equal(sj.shift, ys.shift):
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
        self._c = c
        self._eye_t = np.eye(k)[:, :, None]
        self._ones_k, self._ones_kk = np.ones(k), np.ones(k * k)
        self._recent: dict[tuple[float, float, float], dict[str, Any]] = {}
        self._done: dict[tuple[float, float, float], dict[str, Any]] = {}
        # the compiled kernel (numba installed, and loaded once the process's work pays for it: _kernel_for_fit)
        self._kernel = _kernel_for_fit()
        self._units_n = j
        # its arrays, unit index last (DD_h are counts: float32 is exact)
        self._k_in = (np.ascontiguousarray(nl.T), np.ascontiguousarray(dd.transpose(3, 1, 2, 0), np.float32),
                      np.ascontiguousarray(dw[:, :, 0, :].transpose(2, 1, 0)), np.ascontiguousarray(w[:, m:].T),
                      np.ascontiguousarray(c), np.ascontiguousarray(self._wt))

    def _compiled(self, key: tuple[float, float, float], level: int) -> dict[str, Any] | None:
        """The units' sums by :func:`_sj_loops` up to ``level`` (0 value, 1 gradient, 2 Hessian), or None when
        the kernel is not used: numba missing, a negative theta_a or theta_sj (pivoted inverse), a pivot <= 0."""
        ta, tb, ts = key
        if self._kernel is None or not (ta >= 0.0 and ts >= 0.0):
            return None
        k1 = self.k + 1
        ac = 1.0 / (1.0 + tb * self._csizes)
        g = tb * ac
        g1 = ac * ac
        g2 = -2.0 * self._csizes * ac * ac * ac
        out = {"aq": np.empty((k1, k1)), "daq": np.empty((4, k1, k1)), "d2aq": np.empty((3, 3, k1, k1)),
               "hq": np.empty((6, k1, k1)), "dl": np.empty(4), "d2l": np.empty((3, 3)), "level": level}
        ld = self._kernel(ta, tb, ts, level, g, g1, g2, *self._k_in, out["aq"], out["daq"], out["d2aq"],
                          out["hq"], out["dl"], out["d2l"])
        if not math.isfinite(ld):
            return None
        out["ld"] = ld
        return out

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
        """T = (I + N Psi)^{-1} as (K, K, J), v = T'1 as (K, J), T and B = Psi T = theta_sj T + theta_a 1v' units
        first, and log|I + N Psi| per unit, from N as (K, K, J); None where |I + N Psi| <= 0 (possible only for a
        negative theta).

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
        return (t_t, v_t, np.ascontiguousarray(t_t.transpose(2, 0, 1)), np.ascontiguousarray(b_t.transpose(2, 0, 1)),
                logc)

    def _core(self, theta: np.ndarray, grad: bool = False, which: str = "fixed", hess: bool = False
              ) -> tuple[Any, ...]:
        self.counter += 1
        if self._kernel is None:
            _NUMPY_WORK[0] += self._units_n
        key = tuple(np.asarray(theta, dtype=float)[:3].tolist())
        level = 2 if hess else 1 if grad else 0
        s = self._recent.pop(key, None)
        if s is None or (s["done"] and s["level"] < level):
            done = self._done.get(key)
            s = done if done is not None and done["level"] >= level else self._value(key, level)
        self._recent[key] = s                                            # most recent last
        if len(self._recent) > 4:
            del self._recent[next(iter(self._recent))]
        k1 = self.k + 1
        if s["amat"] is None:
            return np.full((k1, k1), np.nan), math.inf, None, None
        if not s["done"]:
            if (grad or hess) and "da" not in s:
                self._grad(s)
            if hess and "d2a" not in s:
                self._hess(s)
            self._keep(key, s)
        lm = self._lmat if which == "random" else None

        def out(name: str) -> np.ndarray:
            """A copy of s[name], or for the random judges L'(s[name])L, transformed once per state (the theta_j
            difference of the random-judge fit and its KKT check come back to the same (theta_a, theta_b,
            theta_sj)): the same product each time, so the same numbers."""
            if lm is None:
                return s[name].copy()
            rname = "random_" + name
            if rname not in s:
                s[rname] = lm.T @ s[name] @ lm
            return s[rname].copy()

        amat, ld = out("amat"), s["ld"]
        if hess:
            return amat, ld, (out("da"), out("d2a")), (s["dld"].copy(), s["d2ld"].copy())
        if grad:
            return amat, ld, out("da"), s["dld"].copy()
        return amat, ld, None, None

    def _keep(self, key: tuple[float, float, float], s: dict[str, Any]) -> None:
        """Keep the results at ``key`` (A, log|H| and the derivatives computed so far, without the work arrays) in
        :attr:`_done`, so that the same theta asked for again (the random-judge fit starts where the fixed-judge
        fit started, the profiles come back to the optimum) costs no evaluation: the numbers are the ones
        computed the first time."""
        level = 2 if "d2a" in s else 1 if "da" in s else 0
        old = self._done.get(key)
        if old is not None and old["level"] >= level:
            return
        self._done[key] = {"done": True, "level": level, "amat": s["amat"], "ld": s["ld"],
                           **{x: s[x] for x in ("da", "dld", "d2a", "d2ld") if x in s}}
        if len(self._done) > _DONE_MAX:
            del self._done[next(iter(self._done))]

    def _value(self, key: tuple[float, float, float], level: int = 0) -> dict[str, Any]:
        """A and log|H| at theta = ``key`` (module docstring), and what the derivatives reuse (the compiled
        kernel's sums up to ``level``: 1 gradient, 2 Hessian, computed in the same pass)."""
        ta, tb, ts = key
        k, k1 = self.k, self.k + 1
        base, ddf, _ = self._arrays["fixed"]
        sizes = self._sizes
        s: dict[str, Any] = {"key": key, "amat": None, "done": False, "level": level}
        # the cells: by size class for the paper model's part, per unit for N and R
        a_s = 1.0 / (1.0 + tb * sizes)
        ac = 1.0 / (1.0 + tb * self._csizes)
        kq = self._compiled(key, level)
        if kq is not None:
            s.update(a_s=a_s, ac=ac, kq=kq)
            amat = base - ((tb * a_s) @ ddf).reshape(k1, k1) - kq["aq"]
            s["amat"] = 0.5 * (amat + amat.T)
            s["ld"] = float(self._size_cells @ np.log1p(tb * sizes)) + kq["ld"]
            return s
        g = tb * ac
        n_t = self._n0 - self._n(g, soa=True)                            # N as (K, K, J)
        inv = self._inverse(n_t, ta, ts)
        if inv is None:
            return s
        t_t, v_t, tmat, bmat, logc = inv
        rmat = self._r0 - self._r(g)                                     # [c N, r]
        br = bmat @ rmat
        s.update(a_s=a_s, ac=ac, n_t=n_t, t_t=t_t, v_t=v_t, tmat=tmat, bmat=bmat, rmat=rmat, br=br)
        amat = base - ((tb * a_s) @ ddf).reshape(k1, k1) - self._absorb(None, rmat, br)
        s["amat"] = 0.5 * (amat + amat.T)
        s["ld"] = float(self._size_cells @ np.log1p(tb * sizes)) + float(self._wt @ logc)
        return s

    def _grad(self, s: dict[str, Any]) -> None:
        """dA and dlog|H| in (theta_a, theta_b, theta_sj) (module docstring)."""
        k1 = self.k + 1
        _, ddf, _ = self._arrays["fixed"]
        sizes = self._sizes
        if "kq" in s:
            kq = s["kq"] if s["kq"]["level"] >= 1 else self._compiled(s["key"], 1)
            s["kq"] = kq
            daq, dlq, a_s = kq["daq"], kq["dl"], s["a_s"]
            e = daq[1]
            da = np.stack((-daq[0], -((a_s * a_s) @ ddf).reshape(k1, k1) - (e + e.T) + daq[3], -daq[2]))
            s["da"] = 0.5 * (da + da.transpose(0, 2, 1))
            s["dld"] = np.array([dlq[0], float(self._size_cells @ (sizes * a_s)) + dlq[1], dlq[2]])
            return
        tmat, bmat, rmat, br = (s[x] for x in ("tmat", "bmat", "rmat", "br"))
        n_t, t_t, v_t = s["n_t"], s["t_t"], s["v_t"]
        wt = self._wt
        # theta_a, theta_sj: B_a = v v' (v = T'1), B_sj = T'T; v'R = [c v'N, v'r] with the unit index last
        vn = (n_t * v_t[:, None, :]).sum(axis=0)                         # v'N (K, J)
        rv = np.concatenate((vn * self._c, (v_t * rmat[:, :, self.k].T).sum(axis=0)[None]))   # (K+1, J)
        da_a = -(rv @ rv.T)
        tr_ = tmat @ rmat
        da_s = -self._absorb(None, tr_, tr_)
        dl_a = float(wt @ vn.sum(axis=0))                                # 1'T N 1 = v'N 1
        dl_s = float(wt @ (t_t * n_t).sum(axis=(0, 1)))                  # tr(T N) (N is symmetric)
        # theta_b
        a_s, ac = s["a_s"], s["ac"]
        g1 = ac * ac
        nb = self._n(-g1)                                                # N_b
        rb = self._r(-g1)                                                # R_b
        e = self._absorb(None, rb, br)
        da_b = (-((a_s * a_s) @ ddf).reshape(k1, k1) - (e + e.T) + self._absorb(None, br, nb @ br))
        dl_b = float(self._size_cells @ (sizes * a_s)) + self._wsum(bmat, nb)
        s.update(nb=nb, rb=rb)
        da = np.empty((3, k1, k1))
        da[0], da[1], da[2] = da_a, da_b, da_s
        s["da"] = 0.5 * (da + da.transpose(0, 2, 1))
        s["dld"] = np.array([dl_a, dl_b, dl_s])

    def _hess(self, s: dict[str, Any]) -> None:
        """d2A and d2log|H| (module docstring); parameters in the order (a, b, sj)."""
        k1 = self.k + 1
        _, ddf, _ = self._arrays["fixed"]
        sizes, wt = self._sizes, self._wt
        if "kq" in s:
            kq = s["kq"] if s["kq"]["level"] >= 2 else self._compiled(s["key"], 2)
            s["kq"] = kq
            a_s = s["a_s"]
            a2 = a_s * a_s
            d2a, d2ld, hq = kq["d2aq"].copy(), kq["d2l"].copy(), kq["hq"]
            for kk in (0, 2):
                h1 = hq[kk // 2]
                d2a[1, kk] = d2a[kk, 1] = -(h1 + h1.T) + d2a[1, kk]
            d2ld[2, 0], d2ld[0, 1], d2ld[2, 1] = d2ld[0, 2], d2ld[1, 0], d2ld[1, 2]
            e1, e3 = hq[2], hq[4]
            d2a[1, 1] = (-((-2.0 * sizes * a2 * a_s) @ ddf).reshape(k1, k1) - (e1 + e1.T) - 2.0 * hq[3]
                         - 2.0 * (e3 + e3.T) - hq[5])
            d2ld[1, 1] = -float(self._size_cells @ (sizes * sizes * a2)) + d2ld[1, 1] - kq["dl"][3]
            d2a = 0.5 * (d2a + d2a.transpose(1, 0, 2, 3))
            s["d2a"] = 0.5 * (d2a + d2a.transpose(0, 1, 3, 2))
            s["d2ld"] = 0.5 * (d2ld + d2ld.T)
            return
        tmat, bmat, rmat, br = (s[x] for x in ("tmat", "bmat", "rmat", "br"))
        v = np.ascontiguousarray(s["v_t"].T)                             # v = T'1, units first
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
        nbb = self._n(-g2)                                               # N_bb
        rbb = self._r(-g2)
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


def _sj_loops(ta, tb, ts, level, g, g1, g2, n0d, dd, dw, ws, c1, wt, aq, daq, d2aq, hq, dl, d2l):  # pragma: no cover
    """The unit sums of :meth:`SJEvaluator._value` (level 0), ``_grad`` (1) and ``_hess`` (2) as explicit loops,
    compiled with numba when it is installed (:func:`_kernel`): the numpy path's formulas, fused, on blocks of
    :data:`_BLOCK` units with the unit index last and innermost (so every K x K step is one vector loop over
    the block), every temporary allocated once per call.

    Inputs, unit index last: n0d (K, J) the calls per judge (N0 = diag), dd (S, K, K, J) the DD_h (counts,
    stored as float32: exact, and a quarter of the memory traffic), dw (S, K, J) the DW_h, ws (K, J) the
    scenario x judge sums w_s, c1 (J,) the units' c and wt (J,) = c^2; g, g1, g2 (S,) the cell weights f(h),
    f'(h), f''(h) per size class h, so N = N0 - sum_h g DD_h, R = [c N, w_s - sum_h g DW_h] and N_b, R_b, N_bb,
    R_bb likewise with minus g1 and g2 (and no N0, w_s). Outputs (overwritten): aq = sum R'BR;
    daq = [sum R'vv'R, sum R_b'BR, sum R'T'TR, sum R'B N_b B R]; dl = sum wt (1'TN1, tr(B N_b'), tr(TN), tr(B N_b B N_b)); d2aq the sums
    R'(...)R of d2A in (a, a), (a, sj), (sj, a), (sj, sj) and (b, a), (b, sj); hq the other sums of d2A, kept
    apart as the numpy path adds them: R_b'B_a R, R_b'B_sj R, R_bb'BR, R_b'BR_b, R_b'B_b R, R'B_bb R; d2l the
    units' parts of d2log|H| (parameters (a, b, sj); (b, b) without -tr(B N_b B N_b)). Returns
    sum wt log|I + N Psi|, or nan when a pivot is <= 0 (only for a negative theta: the caller then takes the
    numpy path).
    """
    nu = wt.shape[0]
    ns = dd.shape[0]
    k = dd.shape[1]
    k1 = k + 1
    bl = _BLOCK
    nm = np.empty((k, k, bl))
    rm = np.empty((k, k1, bl))
    t = np.empty((k, k, bl))
    colv = np.empty((k, bl))
    piv = np.empty(bl)
    v = np.empty((k, bl))
    n1 = np.empty((k, bl))
    b = np.empty((k, k, bl))
    br = np.empty((k, k1, bl))
    w1 = np.empty((k, k1, bl))
    nb = np.empty((k, k, bl))
    rb = np.empty((k, k1, bl))
    nbb = np.empty((k, k, bl))
    rbb = np.empty((k, k1, bl))
    m1 = np.empty((k, k, bl))
    m2 = np.empty((k, k, bl))
    m3 = np.empty((k, k, bl))
    bk = np.empty((2, k, k, bl))
    ten = np.empty((2, k, k, bl))
    x1s = np.empty((k, bl))
    xs1 = np.empty((k, bl))
    s1 = np.empty(bl)
    s2 = np.empty(bl)
    # lane sums (one per unit of a block), added up at the end
    # (lane sums of the levels not asked for have no lanes)
    bl1 = bl if level >= 1 else 0
    bl2 = bl if level >= 2 else 0
    aq_l = np.zeros((k1, k1, bl))
    ld_l = np.zeros(bl)
    daq_l = np.zeros((4, k1, k1, bl1))
    dl_l = np.zeros((4, bl1))
    d2aq_l = np.zeros((3, 3, k1, k1, bl2))
    hq_l = np.zeros((6, k1, k1, bl2))
    d2l_l = np.zeros((3, 3, bl2))
    for u0 in range(0, nu, bl):
        n = min(bl, nu - u0)
        # N, R and C = I + ts N + ta (N1)1' (in t, inverted in place)
        _weighted(g, dd, u0, n, nm)
        for a in range(k):
            for u in range(n):
                nm[a, a, u] += n0d[a, u0 + u]
        _r_of(nm, c1, g, dw, ws, True, u0, n, rm)
        for a in range(k):
            for u in range(n):
                n1[a, u] = 0.0
            for c in range(k):
                for u in range(n):
                    n1[a, u] += nm[a, c, u]
            for c in range(k):
                for u in range(n):
                    t[a, c, u] = ts * nm[a, c, u] + ta * n1[a, u]
            for u in range(n):
                t[a, a, u] += 1.0
        # Gauss-Jordan without pivoting (as _gauss_jordan)
        for u in range(n):
            s1[u] = 1.0
        for j in range(k):
            ok = True
            for u in range(n):
                piv[u] = t[j, j, u]
                ok &= piv[u] > 0.0
            if not ok:
                return np.nan
            for i in range(k):
                for u in range(n):
                    colv[i, u] = t[i, j, u]
                    t[i, j, u] = 0.0
            for u in range(n):
                t[j, j, u] = 1.0
            for c in range(k):
                for u in range(n):
                    t[j, c, u] /= piv[u]
            for u in range(n):
                colv[j, u] = 0.0
            for i in range(k):
                for c in range(k):
                    for u in range(n):
                        t[i, c, u] -= colv[i, u] * t[j, c, u]
            for u in range(n):
                s1[u] *= piv[u]                                          # |C| = the product of the pivots
        for u in range(n):
            ld_l[u] += wt[u0 + u] * math.log(s1[u])
        for c in range(k):
            for u in range(n):
                v[c, u] = 0.0
            for a in range(k):
                for u in range(n):
                    v[c, u] += t[a, c, u]
        for a in range(k):
            for c in range(k):
                for u in range(n):
                    b[a, c, u] = ts * t[a, c, u] + ta * v[c, u]
        _mm(b, rm, br, n)
        _atb_add(rm, br, aq_l, 1.0, n)
        if level < 1:
            continue
        # theta_a, theta_sj: R'vv'R and (TR)'(TR); 1'TN1 and tr(TN)
        for c in range(k1):
            for u in range(n):
                w1[0, c, u] = 0.0
            for a in range(k):
                for u in range(n):
                    w1[0, c, u] += v[a, u] * rm[a, c, u]
        for c in range(k1):
            for d in range(k1):
                for u in range(n):
                    daq_l[0, c, d, u] += w1[0, c, u] * w1[0, d, u]
        _mm(t, rm, w1, n)
        _atb_add(w1, w1, daq_l[2], 1.0, n)
        for u in range(n):
            s1[u] = 0.0
            s2[u] = 0.0
        for a in range(k):
            for u in range(n):
                s1[u] += v[a, u] * n1[a, u]
            for c in range(k):
                for u in range(n):
                    s2[u] += t[a, c, u] * nm[c, a, u]
        for u in range(n):
            dl_l[0, u] += wt[u0 + u] * s1[u]
            dl_l[2, u] += wt[u0 + u] * s2[u]
        # theta_b
        _weighted(g1, dd, u0, n, nb)
        _r_of(nb, c1, g1, dw, ws, False, u0, n, rb)
        _atb_add(rb, br, daq_l[1], 1.0, n)
        _mm(nb, br, w1, n)
        _atb_add(br, w1, daq_l[3], 1.0, n)
        for u in range(n):
            s1[u] = 0.0
        for a in range(k):
            for c in range(k):
                for u in range(n):
                    s1[u] += b[a, c, u] * nb[a, c, u]
        for u in range(n):
            dl_l[1, u] += wt[u0 + u] * s1[u]
        if level < 2:
            continue
        # B_a = vv', B_sj = T'T; T'E_j N: v (N1)', T'N
        for a in range(k):
            for c in range(k):
                for u in range(n):
                    bk[0, a, c, u] = v[a, u] * v[c, u]
                    ten[0, a, c, u] = v[a, u] * n1[c, u]
        _atb(t, t, bk[1], n)
        _atb(t, nm, ten[1], n)
        for j in range(2):
            for kk in range(2):
                _mm(ten[j], bk[kk], m1, n)
                for a in range(k):
                    for c in range(k):
                        for u in range(n):
                            m2[a, c, u] = m1[a, c, u] + m1[c, a, u]
                _mm(m2, rm, w1, n)
                _atb_add(rm, w1, d2aq_l[2 * j, 2 * kk], 1.0, n)
        # X = T N
        _mm(t, nm, m1, n)
        for a in range(k):
            for u in range(n):
                xs1[a, u] = 0.0
                x1s[a, u] = 0.0
            for c in range(k):
                for u in range(n):
                    xs1[a, u] += m1[a, c, u]
                    x1s[a, u] += m1[c, a, u]
        for u in range(n):
            s1[u] = 0.0
            s2[u] = 0.0
        for a in range(k):
            for u in range(n):
                s1[u] += xs1[a, u]
                s2[u] += x1s[a, u] * xs1[a, u]
        for u in range(n):
            d2l_l[0, 0, u] -= wt[u0 + u] * s1[u] * s1[u]
            d2l_l[0, 2, u] -= wt[u0 + u] * s2[u]
            s1[u] = 0.0
        for a in range(k):
            for c in range(k):
                for u in range(n):
                    s1[u] += m1[a, c, u] * m1[c, a, u]
        for u in range(n):
            d2l_l[2, 2, u] -= wt[u0 + u] * s1[u]
        # (b, a) and (b, sj): R_b'B_k R and R'(B N_b B_k + B_k N_b B)R, tr(N_b B_k')
        for kk in range(2):
            _mm(nb, bk[kk], m1, n)
            _mm(b, m1, m2, n)
            _atb(m1, b, m3, n)
            for a in range(k):
                for c in range(k):
                    for u in range(n):
                        m2[a, c, u] += m3[a, c, u]
            _mm(bk[kk], rm, w1, n)
            _atb_add(rb, w1, hq_l[kk], 1.0, n)
            _mm(m2, rm, w1, n)
            _atb_add(rm, w1, d2aq_l[1, 2 * kk], 1.0, n)
            for u in range(n):
                s1[u] = 0.0
            for a in range(k):
                for c in range(k):
                    for u in range(n):
                        s1[u] += nb[a, c, u] * bk[kk, a, c, u]
            for u in range(n):
                d2l_l[1, 2 * kk, u] += wt[u0 + u] * s1[u]
        # (b, b)
        _weighted(g2, dd, u0, n, nbb)
        _r_of(nbb, c1, g2, dw, ws, False, u0, n, rbb)
        _mm(b, nb, m1, n)                                                # B N_b
        _mm(m1, b, m2, n)                                                # B N_b B
        _atb_add(rbb, br, hq_l[2], 1.0, n)                               # e1 = R_bb'BR
        _mm(b, rb, w1, n)
        _atb_add(rb, w1, hq_l[3], 1.0, n)                                # R_b'B R_b
        _mm(m2, rm, w1, n)                                               # -B_b R = B N_b B R
        _atb_add(rb, w1, hq_l[4], -1.0, n)                               # e3 = R_b'B_b R
        # B_bb = 2 B N_b B N_b B - B N_bb B
        _mm(m2, nb, m3, n)
        _mm(m3, b, nm, n)                                                # (N no longer needed)
        _mm(b, nbb, m3, n)
        _mm(m3, b, t, n)                                                 # (T no longer needed)
        for a in range(k):
            for c in range(k):
                for u in range(n):
                    m3[a, c, u] = 2.0 * nm[a, c, u] - t[a, c, u]
        _mm(m3, rm, w1, n)
        _atb_add(rm, w1, hq_l[5], 1.0, n)
        for u in range(n):
            s1[u] = 0.0
            s2[u] = 0.0
        for a in range(k):
            for c in range(k):
                for u in range(n):
                    s1[u] += b[a, c, u] * nbb[a, c, u]
                    s2[u] += m1[a, c, u] * m1[c, a, u]
        for u in range(n):
            d2l_l[1, 1, u] += wt[u0 + u] * s1[u]
            dl_l[3, u] += wt[u0 + u] * s2[u]
    # the lane sums
    ld = 0.0
    for u in range(bl):
        ld += ld_l[u]
    _lanes(aq_l, aq)
    for i in range(4):
        _lanes(daq_l[i], daq[i])
        dl[i] = 0.0
        for u in range(bl1):
            dl[i] += dl_l[i, u]
    for i in range(3):
        for j in range(3):
            _lanes(d2aq_l[i, j], d2aq[i, j])
            d2l[i, j] = 0.0
            for u in range(bl2):
                d2l[i, j] += d2l_l[i, j, u]
    for i in range(6):
        _lanes(hq_l[i], hq[i])
    return ld


#: Results kept per evaluator (:meth:`SJEvaluator._keep`: a few hundred numbers each).
_DONE_MAX = 256

#: Units per block of :func:`_sj_loops` (its vector loops' length; the block's temporaries stay in cache).
_BLOCK = 64


def _weighted(g, x, u0, n, out):  # pragma: no cover - compiled by numba when available
    """out[a, c, u] = -sum_h g_h x[h, a, c, u0 + u] for the n units of a block (x symmetric in a, c)."""
    for a in range(x.shape[1]):
        for c in range(a, x.shape[2]):
            for u in range(n):
                out[a, c, u] = 0.0
            for s in range(x.shape[0]):
                gs = g[s]
                for u in range(n):
                    out[a, c, u] -= gs * x[s, a, c, u0 + u]
        for c in range(a):
            for u in range(n):
                out[a, c, u] = out[c, a, u]


def _r_of(nm, c1, g, dw, ws, base, u0, n, out):  # pragma: no cover - compiled by numba when available
    """out = [c N, w_s - sum_h g_h DW_h] (without w_s unless ``base``) for the n units of a block."""
    k = nm.shape[0]
    for a in range(k):
        for c in range(k):
            for u in range(n):
                out[a, c, u] = c1[u0 + u] * nm[a, c, u]
        for u in range(n):
            out[a, k, u] = ws[a, u0 + u] if base else 0.0
        for s in range(dw.shape[0]):
            gs = g[s]
            for u in range(n):
                out[a, k, u] -= gs * dw[s, a, u0 + u]


def _mm(x, y, out, n):  # pragma: no cover - compiled by numba when available
    """out = X Y unit by unit (unit index last)."""
    for a in range(x.shape[0]):
        for c in range(y.shape[1]):
            for u in range(n):
                out[a, c, u] = 0.0
            for i in range(x.shape[1]):
                for u in range(n):
                    out[a, c, u] += x[a, i, u] * y[i, c, u]


def _atb(x, y, out, n):  # pragma: no cover - compiled by numba when available
    """out = X'Y unit by unit."""
    for a in range(x.shape[1]):
        for c in range(y.shape[1]):
            for u in range(n):
                out[a, c, u] = 0.0
            for i in range(x.shape[0]):
                for u in range(n):
                    out[a, c, u] += x[i, a, u] * y[i, c, u]


def _atb_add(x, y, acc, f, n):  # pragma: no cover - compiled by numba when available
    """acc += f X'Y unit by unit (f = +-1, +-2: exact)."""
    for a in range(x.shape[1]):
        for c in range(y.shape[1]):
            for i in range(x.shape[0]):
                for u in range(n):
                    acc[a, c, u] += f * (x[i, a, u] * y[i, c, u])


def _lanes(acc, out):  # pragma: no cover - compiled by numba when available
    """out = acc summed over its last (lane) axis."""
    for a in range(acc.shape[0]):
        for c in range(acc.shape[1]):
            s = 0.0
            for u in range(acc.shape[2]):
                s += acc[a, c, u]
            out[a, c] = s


#: Unit-evaluations (units times evaluations) of the numpy path in this process after which the kernel is loaded:
#: importing numba and loading the cached kernel takes ~0.35 s in a new process (compiling it, the first time
#: after an install, ~9 s), while the kernel saves ~0.25 us per unit-evaluation (0.3 against 0.5 ms per gradient
#: evaluation for 600 units). So a one-off fit (600 units: ~3e4 unit-evaluations, ~7e4 with profile intervals)
#: stays on the numpy path, and a study or a loop of fits switches after ~0.3 s of numpy work (ski rental). Of
#: the ~0.45 s of CPU, ~0.15 s is ``import numba`` and ~0.3 s the first call of a cached function, which is
#: numba's own start-up (a one-line cached function costs the same), so a smaller kernel would not load faster.
KERNEL_AFTER = 500_000
_NUMPY_WORK = [0]


def _kernel_for_fit() -> Any:
    """The kernel for a new evaluator: the loaded one, else loaded now if the numpy path's work in this process
    has reached :data:`KERNEL_AFTER`, else None (the numpy path). Either path gives the same numbers to ~1e-12
    relative (tests/estimators/test_scenario_judge_algebra.py)."""
    if "sj_reml" in _COMPILED or _NUMPY_WORK[0] >= KERNEL_AFTER:
        return _kernel()
    return None


def _kernel() -> Any:
    """:func:`_sj_loops` compiled by numba (cached on disk), or ``None`` without numba (the numpy path).

    Products and sums are fused (fastmath ``contract``: one rounding per multiply-add, as in the BLAS products
    of the numpy path); with separate roundings the (theta_b, theta_b) block of d2A at a large theta_a, a small
    difference of sums ~10^4 times larger, moved by 1.3e-12 of its scale against the numpy path, with fused
    ones by 7e-13, the numpy path's own distance from the full Woodbury algebra (the kernel's is 7e-14).
    """
    if "sj_reml" not in _COMPILED:
        try:
            from numba.extending import register_jitable

            for fn in (_weighted, _r_of, _mm, _atb, _atb_add, _lanes):
                register_jitable(fn)        # callable from the kernel; the Python functions stay as they are
        except Exception:  # noqa: BLE001 - numba missing or unusable: the numpy path is exact, only slower
            _COMPILED["sj_reml"] = None
    return jit_kernel("sj_reml", _sj_loops, fastmath={"contract"})
