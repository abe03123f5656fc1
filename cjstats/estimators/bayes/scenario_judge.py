r"""The Gaussian model of the Bayesian backend with the scenario x judge interaction (estimand ``scenario_judge``).

Private helper of :mod:`cjstats.estimators.bayes`; only numpy is needed here (the PyMC version of the same model
is :func:`cjstats.estimators.bayes.pymc_model.build_pymc_gaussian_sj`).

Model (docs/scenario-judge.md, ``scenario_judge``), one unit (model, or model x criterion):

    X_ijl = mu + alpha_i + beta_ij + gamma_l + (alpha gamma)_il + eps_ijl,
    alpha_i ~ N(0, s2_alpha), beta_ij ~ N(0, s2_beta), (alpha gamma)_il ~ N(0, s2_sj), eps_ijl ~ N(0, s2_eps),
    gamma ~ ZeroSumNormal(sigma_gamma),

with sigma_sj ~ HalfStudentT(3, sd_y) like the other scales (``priors["sigma_scenario_judge"]``).

The random effects integrated out
---------------------------------
Given (mu, gamma) the scores of scenario i are Gaussian with covariance s2_eps H_i, H_i = I + Z_i Lambda Z_i'
(Lambda the relative variances theta = (s2_alpha, s2_beta, s2_sj)/s2_eps on the scenario's alpha, beta and
(alpha gamma) effects). The REML backend already evaluates everything a likelihood needs from the per-pattern
statistics of :mod:`cjstats.stats.scenario_judge`: :class:`~cjstats.estimators.reml.scenario_judge.SJEvaluator`
returns A(theta) = [J y0]'H^{-1}[J y0] (J the judge indicators, y0 = y - shift[judge]) and log|H| with their
exact derivatives in theta. With eta = mu + gamma (the judge means), r = y - J eta = [J y0] z and
z = (-(eta - shift), 1), so

    log p(X | mu, gamma, s2) = -1/2 [N log(2 pi s2_eps) + log|H| + z'A(theta) z / s2_eps]

exactly (:func:`sj_loglik`); this module reimplements none of the algebra, it imports the evaluator.

Two densities are built on it, with the same coordinates and roles as their counterparts without the term in
:mod:`cjstats.estimators.bayes.gaussian`:

- :class:`SJJointDensity` over (mu, log scales, z) with gamma = H z (PyMC's unconstrained space of
  :func:`~cjstats.estimators.bayes.pymc_model.build_pymc_gaussian_sj`; the tests check the two log densities
  are equal up to a constant);
- :class:`SJMarginalDensity` (the default ``parametrisation="marginal"``) over the scales alone (log scales, and
  sigma_sj = |u| on a signed coordinate u: see the class): with
  x = (mu - ybar, z), eta = ybar + P x (P = [1 | H]) and z = T [x; 1], the exponent is
  -1/2 [x; 1]' A~ [x; 1] with A~ = T'AT/s2_eps + diag(1/s_mu^2, 1/sigma_gamma^2 ..., 0), Gaussian in x, so

      log p(s2 | X) = const - 1/2 [N log s2_eps + log|H| + log|B| + s] - (K - 1) log sigma_gamma + priors,

  with B = A~[:K, :K] and s = A~_KK - A~_K.'B^{-1}A~_.K (both from one Cholesky factor of A~), and
  x | s2, X ~ N(-B^{-1} A~_.K, B^{-1}) exactly. With G = E[[x; 1][x; 1]' | s2, X] the gradient is
  d(log|B| + s) = <G, dA~>, where dA~/dtheta_k = T' dA_k T / s2_eps comes from the evaluator's exact dA.

Both run in numpy; one evaluation costs O(patterns q^3), q = 1 + m + K, whatever the number of rows. The marginal
density also has a compiled kernel (:func:`_sj_marginal_loops`, numba), the one nutpie's C callbacks call: it
eliminates the larger of the generation and scenario x judge blocks (diagonal in every W_p) in closed form, so an
evaluation costs O(patterns (c^2 r^2 + r^3 + K^2 r)), r = 1 + min(m, K), c the classes of equal cell or
judge size in the block eliminated, on statistics precomputed per pattern
(:func:`_sj_class_stats`); the tests hold it equal to the numpy path.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cjstats.estimators.bayes.gaussian import (
    LOG_SCALE_BOUND,
    NU,
    GaussianPriors,
    _CollapsedOutputs,
    _ConditionalDraws,
    _cholesky_lower,
    _JointCoordinates,
    half_t_logp,
    jit_kernel,
    kernel_helpers_jitable,
    zerosum_basis,
)
from cjstats.estimators.reml.scenario_judge import SJEvaluator
from cjstats.stats import CellStats
from cjstats.stats.views import GaussianStats

__all__ = ["SJData", "SJJointDensity", "SJMarginalDensity", "sj_data", "sj_loglik"]

_LOG_2PI = math.log(2.0 * math.pi)


class SJData:
    """What the densities read for one unit: the evaluator of A(theta) and log|H|, and the Gaussian view's
    ybar, sd_y and has_generation (the same numbers the model without the term uses)."""

    def __init__(self, ev: SJEvaluator, st: GaussianStats) -> None:
        self.ev = ev
        self.st = st
        self.k = ev.k
        self.n_obs = float(ev.n)
        self.shift = np.asarray(ev.ys.shift, dtype=np.float64)
        self.has_generation = bool(st.has_generation)

    def core(self, s2a: float, s2b: float, s2sj: float, s2e: float, grad: bool) -> tuple[Any, ...]:
        """(A, log|H|, dA (3, K+1, K+1), dlog|H| (3,)) at theta = (s2a, s2b, s2sj)/s2e (derivatives in theta)."""
        theta = np.array([s2a, s2b, s2sj]) / s2e
        return self.ev._core(theta, grad=grad)


def sj_data(g: CellStats) -> SJData:
    """The scenario x judge statistics of one unit (``g.sj``, built by the numpy engine), ready for the densities."""
    d, ys = g.for_reml()
    return SJData(SJEvaluator(d, ys, g.sj), g.for_gaussian())


def sj_loglik(data: SJData, mu: float, gamma: np.ndarray, s2a: float, s2b: float, s2sj: float, s2e: float,
              *, grad: bool = True) -> tuple[float, dict[str, Any]]:
    """log p(X | mu, gamma, s2) with alpha, beta and (alpha gamma) integrated out (module docstring), and its
    gradient ``{"mu", "gamma", "s2a", "s2b", "s2sj", "s2e"}`` (derivatives in the variances themselves).

    Includes every constant (-N/2 log 2 pi), so it equals the dense multivariate normal density.
    """
    amat, ld, da, dld = data.core(s2a, s2b, s2sj, s2e, grad)
    k = data.k
    z = np.empty(k + 1)
    z[:k] = -(mu + np.asarray(gamma, dtype=np.float64) - data.shift)
    z[k] = 1.0
    az = amat @ z
    quad = float(z @ az)
    n = data.n_obs
    ll = -0.5 * (n * (_LOG_2PI + math.log(s2e)) + ld + quad / s2e)
    if not grad:
        return ll, {}
    theta = np.array([s2a, s2b, s2sj]) / s2e
    dq = np.einsum("a,kab,b->k", z, da, z)                          # dz'Az/dtheta_k
    dth = -0.5 * (dld + dq / s2e)                                   # dll/dtheta_k
    de = az[:k] / s2e                                               # dll/de = -(1/2)(2 Az)_e (-1) / s2e
    out = {"mu": float(de.sum()), "gamma": de, "s2a": dth[0] / s2e, "s2b": dth[1] / s2e,
           "s2sj": dth[2] / s2e,
           "s2e": -0.5 * (n / s2e - quad / s2e**2) - float(dth @ theta) / s2e}
    return ll, out


class _SJOutputs(_CollapsedOutputs):
    """The stored variables of the model with the term: those of the model without it, plus
    ``sigma_scenario_judge`` and the estimand ``scenario_judge`` = sigma_sj^2."""

    @staticmethod
    def _sigma_names(has_generation: bool) -> list[str]:
        return ["sigma_scenario"] + (["sigma_generation"] if has_generation else []) + [
            "sigma_scenario_judge", "sigma_residual", "sigma_judge"]

    def expanded_names(self) -> list[str]:
        names = super().expanded_names()
        i = names.index("residual")
        return names[:i] + ["scenario_judge"] + names[i:]

    def _outputs(self, mu: Any, sig: dict[str, Any], g: np.ndarray) -> dict[str, np.ndarray]:
        out = super()._outputs(mu, sig, g)
        out["scenario_judge"] = np.asarray(sig["sigma_scenario_judge"] ** 2)
        return {name: out[name] for name in self.expanded_names()}   # nutpie reads them in this order


def _scales(priors: GaussianPriors, names: list[str]) -> np.ndarray:
    return np.array([getattr(priors, nm) for nm in names], dtype=np.float64)


class SJJointDensity(_JointCoordinates, _SJOutputs):
    """The log posterior of the model with the term over (mu, log scales, z), gamma = H z, and its gradient.

    Coordinates, in order: ``mu``; ``log sigma_scenario``; ``log sigma_generation`` (only when generation is
    identifiable); ``log sigma_scenario_judge``; ``log sigma_residual``; ``log sigma_judge``; the K - 1
    coordinates ``z`` (:func:`~cjstats.estimators.bayes.gaussian.zerosum_basis`): PyMC's default transforms of
    the variables of :func:`~cjstats.estimators.bayes.pymc_model.build_pymc_gaussian_sj`, Jacobians included.
    """

    def __init__(self, data: SJData, priors: GaussianPriors) -> None:
        self.data = data
        self.st = data.st
        self.priors = priors
        self.k = data.k
        self.basis = zerosum_basis(self.k)
        self.sigma_names = self._sigma_names(data.has_generation)
        self.scales = _scales(priors, self.sigma_names)
        self.n_sigma = len(self.sigma_names)
        self.ndim = 1 + self.n_sigma + self.k - 1
        self._log_sd = math.log(self.st.sd) if self.st.sd > 0 else 0.0

    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        t = theta[1:1 + self.n_sigma]
        z = theta[1 + self.n_sigma:]
        return {"mu": float(theta[0]), **dict(zip(self.sigma_names, np.exp(t))), "gamma": self.basis @ z, "z": z}

    def logp(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Log posterior density (up to a constant) and its gradient at the unconstrained point ``theta``."""
        theta = np.asarray(theta, dtype=np.float64)
        t = theta[1:1 + self.n_sigma]
        if not (np.all(np.isfinite(theta)) and np.all(np.abs(t - self._log_sd) <= LOG_SCALE_BOUND)):
            return -math.inf, np.zeros_like(theta)
        p = self.unpack(theta)
        s2 = {nm: p[nm] ** 2 for nm in self.sigma_names}
        ll, gr = sj_loglik(self.data, p["mu"], p["gamma"], s2["sigma_scenario"], s2.get("sigma_generation", 0.0),
                           s2["sigma_scenario_judge"], s2["sigma_residual"])
        out = np.empty_like(theta)
        pm_sd = self.priors.mu
        ybar = self.st.ybar
        lp = ll - 0.5 * ((p["mu"] - ybar) / pm_sd) ** 2
        out[0] = gr["mu"] - (p["mu"] - ybar) / pm_sd**2
        dvar = {"sigma_scenario": gr["s2a"], "sigma_generation": gr["s2b"], "sigma_scenario_judge": gr["s2sj"],
                "sigma_residual": gr["s2e"], "sigma_judge": 0.0}
        lp_pr, g_pr = half_t_logp(t, self.scales)
        lp += float(np.sum(lp_pr))
        for i, name in enumerate(self.sigma_names):
            out[1 + i] = g_pr[i] + dvar[name] * 2.0 * s2[name]
        z = p["z"]
        zz = float(z @ z)
        s_g = p["sigma_judge"]
        lp += -0.5 * zz / s_g**2 - (self.k - 1) * math.log(s_g)
        out[self.n_sigma] += zz / s_g**2 - (self.k - 1)
        out[1 + self.n_sigma:] = self.basis.T @ gr["gamma"] - z / s_g**2
        if not (math.isfinite(lp) and np.all(np.isfinite(out))):
            return -math.inf, np.zeros_like(theta)
        return float(lp), out



class SJMarginalDensity(_ConditionalDraws, _SJOutputs):
    r"""The model with the term and with mu and gamma integrated out too: a density over the scales.

    Coordinates: ``log sigma_scenario``, [``log sigma_generation``], ``u``, ``log sigma_residual``,
    ``log sigma_judge``, with sigma_scenario_judge = |u| (u on the whole real line). See the module docstring for
    the algebra; each posterior draw of the scales gets (mu, gamma) from their exact conditional normal
    (:meth:`draw_conditional`).

    Why u and not log sigma_sj: the interaction's posterior often piles up at 0 (no interaction in the data). On
    the log scale that is a long left tail of log sigma_sj, where the curvature differs from the bulk's, and NUTS
    needs about twice the gradient evaluations of the model without the term (issue 34). The density of u is
    p(u) = p_sigma(|u|) / 2: the likelihood depends on u^2 = s2_sj only and the half-t prior density of sigma_sj
    is finite and smooth at 0, so p(u) is smooth and symmetric with its mode region at u = 0 and needs no
    Jacobian. The posterior of (sigma_scenario_judge, the other scales) is exactly the same as with log
    sigma_sj, the same prior HalfStudentT(3, ``priors.sigma_scenario_judge``) included; only the coordinate
    NUTS moves in differs. When the interaction is clearly positive, p(u) has two mirror-image modes; a chain
    may stay in either, and both give the same draws of sigma_sj = |u|.
    """

    def __init__(self, data: SJData, priors: GaussianPriors, *, compiled: bool = True) -> None:
        self.data = data
        self.st = data.st
        self.priors = priors
        k = self.k = data.k
        self.basis = zerosum_basis(k)
        self.sigma_names = self._sigma_names(data.has_generation)
        self.scales = _scales(priors, self.sigma_names)
        self.ndim = len(self.sigma_names)
        self._log_sd = math.log(self.st.sd) if self.st.sd > 0 else 0.0
        self._idx = {nm: i for i, nm in enumerate(self.sigma_names)}
        # z = T [x; 1], x = (mu - ybar, z_gamma): e = eta - shift = e0 + P x
        p_mat = np.column_stack((np.ones(k), self.basis))
        e0 = self.st.ybar - data.shift
        tmat = np.zeros((k + 1, k + 1))
        tmat[:k, :k] = -p_mat
        tmat[:k, k] = -e0
        tmat[k, k] = 1.0
        self.tmat = tmat
        self._log_s_mu = math.log(priors.mu)
        self.kernel = _sj_marginal_kernel() if compiled else None
        if self.kernel is not None:
            sj = data.ev.sj
            cls, pairs, pat, off, grp = _sj_class_stats(sj)
            ix = self._idx
            pos = np.array([ix["sigma_scenario"], ix.get("sigma_generation", -1), ix["sigma_scenario_judge"],
                            ix["sigma_residual"], ix["sigma_judge"]], dtype=np.int64)
            base = np.zeros((k + 1, k + 1))
            base[:k, :k] = np.diag(data.ev.d.judge_n)
            base[:k, k] = base[k, :k] = data.ev.ys.judge_sum
            base[k, k] = data.ev.ys.yy
            self._kargs = (self.scales, pos, float(priors.mu), data.n_obs, cls, pairs, pat, off, grp, base, tmat,
                           self._log_sd - LOG_SCALE_BOUND, self._log_sd + LOG_SCALE_BOUND)
            import warnings

            with warnings.catch_warnings():   # compile (or load from the on-disk cache) now, quietly
                warnings.simplefilter("ignore")
                self.evaluate(self.initial_point(np.random.default_rng(0)))

    def _bad(self, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """What :meth:`evaluate` returns at a point of zero density (built only there: it is on the hot path)."""
        return -math.inf, np.zeros_like(theta), np.zeros(self.k), np.eye(self.k)

    def evaluate(self, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """(log density, gradient, conditional mean of x = (mu - ybar, z), L_B^{-1} with L_B L_B' = B)."""
        theta = np.asarray(theta, dtype=np.float64)
        k = self.k
        if self.kernel is not None:                 # it returns -inf for a non-finite or out-of-bounds theta
            out = np.empty_like(theta)
            mean = np.empty(k)
            lb_inv = np.zeros((k, k))
            try:
                lp = self.kernel(theta, *self._kargs, out, mean, lb_inv)
            except (np.linalg.LinAlgError, ValueError, ArithmeticError):
                return self._bad(theta)
            if not math.isfinite(lp):
                return self._bad(theta)
            return lp, out, mean, lb_inv
        ix = self._idx
        j_sj = ix["sigma_scenario_judge"]
        u = float(theta[j_sj])
        logs = theta.copy()
        logs[j_sj] = self._log_sd                                 # the bound below does not apply to u
        if not (np.all(np.isfinite(theta)) and np.all(np.abs(logs - self._log_sd) <= LOG_SCALE_BOUND)
                and abs(u) <= math.exp(self._log_sd + LOG_SCALE_BOUND)):
            return self._bad(theta)
        s2 = np.exp(2.0 * logs)
        s2a = s2[ix["sigma_scenario"]]
        s2b = s2[ix["sigma_generation"]] if "sigma_generation" in ix else 0.0
        s2sj = u * u
        s2e = s2[ix["sigma_residual"]]
        s2g = s2[ix["sigma_judge"]]
        amat, ld, da, dld = self.data.core(s2a, s2b, s2sj, s2e, True)
        if not math.isfinite(ld):
            return self._bad(theta)
        tm = self.tmat
        ta = tm.T @ amat @ tm / s2e
        at = ta.copy()
        at[0, 0] += 1.0 / self.priors.mu**2
        idx_g = np.arange(1, k)
        at[idx_g, idx_g] += 1.0 / s2g
        at = 0.5 * (at + at.T)
        try:
            chol = np.linalg.cholesky(at)
        except np.linalg.LinAlgError:
            return self._bad(theta)
        lb = chol[:k, :k]
        logdet_b = 2.0 * float(np.sum(np.log(np.diag(lb))))
        schur = float(chol[k, k] ** 2)
        lb_inv = np.linalg.inv(lb)
        b_inv = lb_inv.T @ lb_inv
        xhat = -b_inv @ at[:k, k]
        n = self.data.n_obs
        lp = -0.5 * (n * math.log(s2e) + ld + logdet_b + schur) - (k - 1) * 0.5 * math.log(s2g) - self._log_s_mu
        v = np.append(xhat, 1.0)
        gmat = np.outer(v, v)
        gmat[:k, :k] += b_inv
        # d(lp)/dtheta_k (relative variances) and the direct s2e and s2g terms
        dtt = np.einsum("ab,kab->k", tm @ gmat @ tm.T, da)           # <G, T'dA_k T>
        dth = -0.5 * (dld + dtt / s2e)
        theta_rel = np.array([s2a, s2b, s2sj]) / s2e
        grad = np.zeros_like(theta)
        grad[ix["sigma_scenario"]] = dth[0] * 2.0 * theta_rel[0]
        if "sigma_generation" in ix:
            grad[ix["sigma_generation"]] = dth[1] * 2.0 * theta_rel[1]
        grad[j_sj] = dth[2] * 2.0 * u / s2e                              # d theta_sj / du = 2u / s2e
        direct_e = -0.5 * (2.0 * n - 2.0 * float(np.sum(gmat * ta)))
        grad[ix["sigma_residual"]] = direct_e - 2.0 * float(dth @ theta_rel)
        grad[ix["sigma_judge"]] = float(np.trace(gmat[1:k, 1:k])) / s2g - (k - 1)
        lp_pr, g_pr = half_t_logp(logs, self.scales)
        sc = self.scales[j_sj]                                  # |u| ~ HalfStudentT(3, sc): density in u, no Jacobian
        lp_pr[j_sj] = -0.5 * (NU + 1.0) * math.log1p(u * u / (NU * sc * sc))
        g_pr[j_sj] = -(NU + 1.0) * u / (NU * sc * sc + u * u)
        lp += float(np.sum(lp_pr))
        grad = grad + g_pr
        if not (math.isfinite(lp) and np.all(np.isfinite(grad))):
            return self._bad(theta)
        return lp, grad, xhat, lb_inv

    def logp(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        lp, grad = self.evaluate(theta)[:2]
        return lp, grad

    def sigmas(self, theta: np.ndarray) -> np.ndarray:
        """The scales at the coordinates ``theta``: exp of the log scales, |u| for sigma_scenario_judge."""
        theta = np.asarray(theta, dtype=np.float64)
        sig = np.exp(theta)
        j = self._idx["sigma_scenario_judge"]
        sig[j] = abs(theta[j])
        return sig

    def initial_point(self, rng: np.random.Generator) -> np.ndarray:
        sd = self.st.sd if self.st.sd > 0 else 1.0
        x = math.log(0.5 * sd) + rng.uniform(-1.0, 1.0, self.ndim)
        j = self._idx["sigma_scenario_judge"]
        x[j] = math.exp(x[j])                                   # u = sigma_sj > 0
        return x


# ------------------------------------------------------------------------------------- compiled kernel
def _sj_marginal_loops(theta, scales, pos, s_mu, n_obs, cls, pairs, pat, off, grp, base, tmat, lo, hi,
                       out, cond_mean, lb_inv):  # pragma: no cover - compiled by numba when available
    r""":meth:`SJMarginalDensity.evaluate` with the per-pattern algebra in closed form on precomputed statistics.

    An accelerator only (numba; cached on disk): :class:`SJMarginalDensity` with ``compiled=False`` runs the
    reference path on :class:`~cjstats.estimators.reml.scenario_judge.SJEvaluator`, and the tests hold the two
    equal. ``theta`` holds log scales except at ``pos[2]``, u with sigma_sj = |u| (:class:`SJMarginalDensity`).
    ``pos`` = positions of (scenario, generation or -1, scenario_judge, residual, judge) in ``theta``.

    Per pattern p (S = Lambda^{1/2}, K_p = I + S W S, R = S K_p^{-1} S, T = (I + Lambda W)^{-1}):
    A = A_0 - sum_p M_p(R), log|H| = sum_p n_p log|K_p|, dlog|H|/dtheta_k = sum_p n_p sum_{j in k} (W T)_jj and
    <Gamma, dA/dtheta_k> = -sum_p sum_{j in k} (T' N_p T)_jj, N_p = n_p G Gamma_KK G' + u s' + s u' + Gamma_yy Z
    (G = Z'J, s = sum_i Z_i'y0_i, Z = sum_i Z_i'y0_i y0_i'Z_i, u = G Gamma_K.).

    Block elimination: the effects are ordered [d | r], d the larger of the generation and scenario x judge
    blocks (one variance theta_d; W_dd = diag(omega) in every pattern, since an observation has one cell and one
    judge), r = the scenario effect and the smaller block (``grp[1:]`` their variances, ``grp[0]`` the d
    block's). With D = I + theta_d diag(omega), B = W_rd, E = W_rr, E' = E - theta_d B D^{-1} B',
    F_s = I + S_r E' S_r, F = I + Lambda_r E', P = theta_d D^{-1} B' and U = [P; -I]:

        log|K_p| = log|D| + log|F_s|,   R = diag(theta_d D^{-1}, 0) + U S_r F_s^{-1} S_r U',
        T = diag(D^{-1}, 0) + U F^{-1} [Lambda_r B D^{-1}, -I],

    and every trace above reduces to r x r, K x r and K x K products once the d effects are grouped into
    classes of equal omega (D^{-1} is constant on a class): per class v, ``cls`` holds n_v, omega_v, tr Z_vv,
    G_v's (s_v, G'G, G'B') and B_v's (B B', s_v'B', Z_rv B_v'), ``pairs`` the B_v Z_vv' B_v'' of each pair of
    classes of a pattern, ``pat`` the pattern's n_p, s_r, G_r', E and Z_rr, ``off`` the first class and pair of
    each pattern (:func:`_sj_class_stats`). No per-evaluation cost grows with the d block's size.
    Returns -inf outside lo <= theta <= hi (|u| <= e^hi) or where anything is not finite.
    """
    ns = theta.shape[0]
    u = theta[pos[2]]                                          # sigma_sj = |u| (a signed coordinate, not a log)
    for i in range(ns):
        if i == pos[2]:
            if not abs(u) <= np.exp(hi):
                return -np.inf
        elif not (lo <= theta[i] <= hi):
            return -np.inf
    n_pat = pat.shape[0]
    n_cls = cls.shape[0]
    r = grp.shape[0] - 1
    k = base.shape[0] - 1
    k1 = k + 1
    rr = r * r
    # the small work arrays, a few allocations (views below)
    rw = np.empty((8, r, r))
    kw = np.empty((6, k1, k1))
    kk = np.empty((2, k, k))
    vr = np.empty((4, r))
    v3 = np.empty((4, 3))
    pr = np.empty((n_pat, 3, r, r))                            # per pattern: H = F^{-1} Lambda_r, F^{-1}, U'Z U
    # offsets of the packed statistics (see _sj_class_stats)
    o_gz = 3
    o_zb = o_gz + k
    o_gg = o_zb + r
    o_gb = o_gg + k * k
    o_bb = o_gb + k * r
    o_zbr = o_bb + rr
    p_zs = 1
    p_gr = p_zs + r
    p_e = p_gr + k * r
    p_zrr = p_e + rr
    s2e = np.exp(2.0 * theta[pos[3]])
    s2g = np.exp(2.0 * theta[pos[4]])
    th = v3[0]
    th[:] = 0.0
    s2a = np.exp(2.0 * theta[pos[0]])
    s2b = np.exp(2.0 * theta[pos[1]]) if pos[1] >= 0 else 0.0
    th[0] = s2a / s2e
    th[1] = s2b / s2e
    th[2] = u * u / s2e
    thd = th[grp[0]]
    th_r = vr[0]
    sr = vr[1]
    for i in range(r):
        th_r[i] = th[grp[1 + i]]
        sr[i] = np.sqrt(th_r[i])
    amat = base.copy()
    ld = 0.0
    dld = v3[1]
    dld[:] = 0.0
    idd_c = np.empty(n_cls)                                    # 1 / (1 + theta_d omega_v)
    x_c = np.empty((n_cls, r, r))                              # X_v = B_v (Z U)_v
    gu_all = np.empty((n_pat, k, r))                           # G'U
    zsu_all = np.empty((n_pat, r))                             # s'U
    ewp = rw[0]
    lf = rw[1]
    lfi = rw[2]
    tmp_r = rw[5]
    tmp_kr = np.empty((k, r))
    for p in range(n_pat):
        c0 = off[p, 0]
        c1 = off[p + 1, 0]
        nv = c1 - c0
        q0 = off[p, 1]
        cntp = pat[p, 0]
        fsi = pr[p, 1]
        sfs = pr[p, 0]
        gu = gu_all[p]
        zsu = zsu_all[p]
        uzu = pr[p, 2]
        for i in range(r):
            for j in range(r):
                ewp[i, j] = pat[p, p_e + i * r + j]
        for vc in range(c0, c1):
            dv = 1.0 + thd * cls[vc, 1]
            idd_c[vc] = 1.0 / dv
            ld += cntp * cls[vc, 0] * np.log(dv)
            cv = thd / dv
            for i in range(r):
                for j in range(r):
                    ewp[i, j] -= cv * cls[vc, o_bb + i * r + j]
        # F_s = I + S_r E' S_r = L_F L_F'
        for i in range(r):
            for j in range(i + 1):
                lf[i, j] = sr[i] * ewp[i, j] * sr[j]
            lf[i, i] += 1.0
        if not _cholesky_lower(lf, lf, r):
            return -np.inf
        for j in range(r):
            ld += 2.0 * cntp * np.log(lf[j, j])
        for c in range(r):                                     # L_F^{-1}
            for i in range(c):
                lfi[i, c] = 0.0
            for i in range(c, r):
                acc = 1.0 if i == c else 0.0
                for j in range(c, i):
                    acc -= lf[i, j] * lfi[j, c]
                lfi[i, c] = acc / lf[i, i]
        for a in range(r):                                     # F_s^{-1} and S_r F_s^{-1} S_r
            for b in range(a + 1):
                acc = 0.0
                for i in range(a, r):
                    acc += lfi[i, a] * lfi[i, b]
                fsi[a, b] = acc
                fsi[b, a] = acc
                sfs[a, b] = sr[a] * acc * sr[b]
                sfs[b, a] = sfs[a, b]
        # F = I + Lambda_r E' = S_r F_s S_r^{-1}, so F^{-1} = S_r F_s^{-1} S_r^{-1} and H = F^{-1} Lambda_r =
        # S_r F_s^{-1} S_r (sfs): no r^3 product for F^{-1}.
        # dlog|H|: sum_{a in d} (W T)_aa = sum_v n_v omega_v/D_v + (omega_v c_v - 1)/D_v <H, B_v B_v'>,
        # c_v = theta_d/D_v;
        # (W T)_(d+i)(d+i) = (E' F^{-1})_ii
        acc = 0.0
        for vc in range(c0, c1):
            idv = idd_c[vc]
            cv = thd * idv
            hb = 0.0
            for i in range(r):
                for j in range(r):
                    hb += sfs[i, j] * cls[vc, o_bb + i * r + j]
            acc += idv * (cls[vc, 0] * cls[vc, 1] + (cls[vc, 1] * cv - 1.0) * hb)
        dld[grp[0]] += cntp * acc
        for i in range(r):                     # (E' F^{-1})_ii = sum_c E'_ic s_c (F_s^{-1})_ci / s_i; where s_i = 0
            if th_r[i] > 0.0:                  # (theta = 0) it is multiplied by theta in every output: left out
                acc = 0.0
                for c in range(r):
                    acc += ewp[i, c] * sr[c] * fsi[c, i]
                dld[grp[1 + i]] += cntp * acc / sr[i]
        # G'U = sum_v c_v G_v'B_v' - G_r', s'U, (Z U)_r, X_v = B_v (Z U)_v, U'Z U = sum_v c_v X_v - (Z U)_r
        for c in range(k):
            for j in range(r):
                gu[c, j] = -pat[p, p_gr + c * r + j]
        for j in range(r):
            zsu[j] = -pat[p, p_zs + j]
            for i in range(r):
                uzu[i, j] = pat[p, p_zrr + i * r + j]          # -(Z U)_r, built up below
        for vc in range(c0, c1):
            cv = thd * idd_c[vc]
            for c in range(k):
                for j in range(r):
                    gu[c, j] += cv * cls[vc, o_gb + c * r + j]
            for j in range(r):
                zsu[j] += cv * cls[vc, o_zb + j]
            for i in range(r):
                for j in range(r):
                    uzu[i, j] -= cv * cls[vc, o_zbr + i * r + j]
            xv = x_c[vc]
            for i in range(r):
                for j in range(r):
                    xv[i, j] = -cls[vc, o_zbr + j * r + i]
            for w2 in range(nv):
                cw = thd * idd_c[c0 + w2]
                pq = q0 + (vc - c0) * nv + w2
                for i in range(r):
                    for j in range(r):
                        xv[i, j] += cw * pairs[pq, i * r + j]
        for vc in range(c0, c1):
            cv = thd * idd_c[vc]
            xv = x_c[vc]
            for i in range(r):
                for j in range(r):
                    uzu[i, j] += cv * xv[i, j]
        # A -= M_p(R): G'RG = sum_v c_v G_v'G_v + (G'U) sfs (G'U)', G'R s likewise,
        # <R, Z> = sum_v c_v tr Z_vv + <sfs, U'ZU>
        for c in range(k):
            for j in range(r):
                acc = 0.0
                for i in range(r):
                    acc += gu[c, i] * sfs[i, j]
                tmp_kr[c, j] = acc
        for c1_ in range(k):
            for c2 in range(c1_ + 1):                          # symmetric: one triangle
                acc = 0.0
                for j in range(r):
                    acc += tmp_kr[c1_, j] * gu[c2, j]
                for vc in range(c0, c1):
                    acc += thd * idd_c[vc] * cls[vc, o_gg + c1_ * k + c2]
                amat[c1_, c2] -= cntp * acc
                if c2 < c1_:
                    amat[c2, c1_] = amat[c1_, c2]
            acc = 0.0
            for j in range(r):
                acc += tmp_kr[c1_, j] * zsu[j]
            for vc in range(c0, c1):
                acc += thd * idd_c[vc] * cls[vc, o_gz + c1_]
            amat[c1_, k] -= acc
            amat[k, c1_] -= acc
        acc = 0.0
        for vc in range(c0, c1):
            acc += thd * idd_c[vc] * cls[vc, 2]
        for i in range(r):
            for j in range(r):
                acc += sfs[i, j] * uzu[i, j]
        amat[k, k] -= acc
    # A~ = T'AT/s2e + prior precisions; its Cholesky factor. T = [[-P, -e0], [0, 1]] with P = [1 | H] and H =
    # zerosum_basis(K) = [I; f 1'] - n 1 1' (SJMarginalDensity.tmat): with A = [[C, a], [a', alpha]] and w = C e0 - a,
    # T'AT = [[P'CP, P'w], [w'P, e0'w - e0'a + alpha]], and P'X costs O(K^2): (P'X)_0. = 1'X,
    # (P'X)_(1+j). = X_j. + f X_(K-1). - n 1'X. So no (K+1)^3 product.
    n_h = 1.0 - (-tmat[0, 1]) if k > 1 else 0.0                # P_01 = H_00 = 1 - n
    f_h = -tmat[k - 1, 1] + n_h if k > 1 else 0.0              # P_(K-1)1 = H_(K-1)0 = f - n
    tmp = kw[0]                                                # P'C (rows 0..K-1, columns 0..K-1)
    for c in range(k):
        acc = 0.0
        for i in range(k):
            acc += amat[i, c]
        tmp[0, c] = acc
        for j in range(k - 1):
            tmp[1 + j, c] = amat[j, c] + f_h * amat[k - 1, c] - n_h * acc
    ta = kw[1]                                                 # T' A T / s2e (symmetric: one triangle)
    for a in range(k):                                         # P'CP = (P'(P'C)')'
        rs = 0.0
        for i in range(k):
            rs += tmp[a, i]
        ta[a, 0] = rs / s2e
        for b in range(1, a + 1):
            ta[a, b] = (tmp[a, b - 1] + f_h * tmp[a, k - 1] - n_h * rs) / s2e
        for b in range(a + 1):
            ta[b, a] = ta[a, b]
    wv = kw[2, 0]                                              # w = C e0 - a (e0 = -T_.K; A~ written later)
    sw = 0.0
    ew = amat[k, k]
    for i in range(k):
        acc = -amat[i, k]
        for c in range(k):
            acc -= amat[i, c] * tmat[c, k]
        wv[i] = acc
        sw += acc
        ew -= tmat[i, k] * (acc - amat[i, k])
    ta[k, 0] = sw / s2e
    ta[0, k] = ta[k, 0]
    for j in range(k - 1):
        ta[k, 1 + j] = (wv[j] + f_h * wv[k - 1] - n_h * sw) / s2e
        ta[1 + j, k] = ta[k, 1 + j]
    ta[k, k] = ew / s2e
    at = kw[2]
    at[:, :] = ta
    at[0, 0] += 1.0 / (s_mu * s_mu)
    for c in range(1, k):
        at[c, c] += 1.0 / s2g
    chol = kw[3]
    chol[:, :] = 0.0
    if not _cholesky_lower(at, chol, k1):
        return -np.inf
    logdet_b = 0.0
    for j in range(k):
        logdet_b += 2.0 * np.log(chol[j, j])
    schur = chol[k, k] * chol[k, k]
    # L_B^{-1}, B^{-1}, the conditional mean and G = v v' + [[B^{-1}, 0], [0, 0]]
    x = kk[0]
    x[:, :] = 0.0
    for c in range(k):
        for i in range(k):
            acc = 1.0 if i == c else 0.0
            for p in range(i):
                acc -= chol[i, p] * x[p, c]
            x[i, c] = acc / chol[i, i]
    for i in range(k):
        for j in range(k):
            lb_inv[i, j] = x[i, j]
    b_inv = kk[1]
    for i in range(k):
        for j in range(k):
            acc = 0.0
            for c in range(max(i, j), k):
                acc += x[c, i] * x[c, j]
            b_inv[i, j] = acc
    v = np.empty(k1)
    for i in range(k):
        acc = 0.0
        for j in range(k):
            acc -= b_inv[i, j] * at[j, k]
        v[i] = acc
        cond_mean[i] = acc
    v[k] = 1.0
    gm = kw[4]
    for a in range(k1):
        for b in range(k1):
            gm[a, b] = v[a] * v[b] + (b_inv[a, b] if (a < k and b < k) else 0.0)
    lp = -0.5 * (n_obs * np.log(s2e) + ld + logdet_b + schur) - 0.5 * (k - 1) * np.log(s2g) - np.log(s_mu)
    # Gamma = T G T' = [[P G11 P' + e0 y' + y e0' - e0 e0', -y], [-y', 1]], G = [[G11, g], [g', 1]], y = P g + e0;
    # P X costs O(K^2): (P X)_i. = X_0. + X_(1+i). - n s (i < K - 1), (P X)_(K-1). = X_0. + (f - n) s,
    # s = sum_(j >= 1) X_j.
    yv = kw[2, 1]                                              # (A~ is no longer read)
    acc = 0.0
    for j in range(1, k):
        acc += gm[j, k]
    for i in range(k - 1):
        yv[i] = gm[0, k] + gm[1 + i, k] - n_h * acc - tmat[i, k]
    yv[k - 1] = gm[0, k] + (f_h - n_h) * acc - tmat[k - 1, k]
    for c in range(k):                                         # tmp = (P G11)' (G11 symmetric: = G11 P')
        acc = 0.0
        for j in range(1, k):
            acc += gm[j, c]
        for i in range(k - 1):
            tmp[c, i] = gm[0, c] + gm[1 + i, c] - n_h * acc
        tmp[c, k - 1] = gm[0, c] + (f_h - n_h) * acc
    gam = kw[5]                                                # (symmetric: one triangle)
    for a in range(k):                                         # P G11 P' = (P (P G11)')'
        acc = 0.0
        for j in range(1, k):
            acc += tmp[j, a]
        for b in range(a + 1):
            if b < k - 1:
                x0 = tmp[0, a] + tmp[1 + b, a] - n_h * acc
            else:
                x0 = tmp[0, a] + (f_h - n_h) * acc
            e_a = -tmat[a, k]
            e_b = -tmat[b, k]
            gam[a, b] = x0 + e_a * yv[b] + yv[a] * e_b - e_a * e_b
            gam[b, a] = gam[a, b]
        gam[a, k] = -yv[a]
        gam[k, a] = -yv[a]
    gam[k, k] = 1.0
    gta = 0.0
    for a in range(k1):
        for b in range(k1):
            gta += gm[a, b] * ta[a, b]
    # <Gamma, dA/dtheta_k> = -sum_p sum_{j in k} (T' N_p T)_jj: with M = U'N_p U (r x r) and Q = F^{-T} M F^{-1},
    # the r block's terms are Q_ii, the d block's
    # sum_v D_v^{-2} [sum_{a in v} (N_p)_aa + 2 tr(H Y_v) + <H'M H, B_v B_v'>],
    # Y_v = B_v (N_p U)_v, H'M H = Lambda_r Q Lambda_r
    gkk = gam[k, k]
    dtt = v3[2]
    dtt[:] = 0.0
    gmu = np.empty((k, r))
    ugu = vr[2]
    mm = rw[6]
    hmh = rw[7]
    sms = rw[3]
    gbg = vr[3]
    for p in range(n_pat):
        c0 = off[p, 0]
        c1 = off[p + 1, 0]
        cntp = pat[p, 0]
        fsi = pr[p, 1]
        sfs = pr[p, 0]
        gu = gu_all[p]
        zsu = zsu_all[p]
        uzu = pr[p, 2]
        for c in range(k):                                     # Gamma_KK G'U and Gamma_yK G'U
            for j in range(r):
                acc = 0.0
                for c2 in range(k):
                    acc += gam[c, c2] * gu[c2, j]
                gmu[c, j] = acc
        for j in range(r):
            acc = 0.0
            for c in range(k):
                acc += gam[k, c] * gu[c, j]
            ugu[j] = acc
        for i in range(r):                 # M = n_p (G'U)' Gamma (G'U) + s'U u'U + u'U s'U + g U'ZU (symmetric)
            for j in range(i + 1):
                acc = 0.0
                for c in range(k):
                    acc += gu[c, i] * gmu[c, j]
                mm[i, j] = cntp * acc + zsu[i] * ugu[j] + ugu[i] * zsu[j] + gkk * uzu[i, j]
                mm[j, i] = mm[i, j]
        # Q = F^{-T} M F^{-1} = S_r^{-1} Q_s S_r^{-1}, Q_s = F_s^{-1} S_r M S_r F_s^{-1}
        for a in range(r):
            for b in range(a + 1):
                sms[a, b] = sr[a] * mm[a, b] * sr[b]
                sms[b, a] = sms[a, b]
        for a in range(r):
            for i in range(r):
                acc = 0.0
                for b in range(r):
                    acc += sms[a, b] * fsi[b, i]
                tmp_r[a, i] = acc
        for i in range(r):                     # H'M H = Lambda_r Q Lambda_r = S_r Q_s S_r (symmetric)
            for j in range(i + 1):
                acc = 0.0
                for a in range(r):
                    acc += fsi[a, i] * tmp_r[a, j]
                hmh[i, j] = sr[i] * acc * sr[j]
                hmh[j, i] = hmh[i, j]
                if i == j and th_r[i] > 0.0:           # the r block: Q_ii (theta = 0: left out, as in dlog|H|)
                    dtt[grp[1 + i]] -= acc / th_r[i]
        tot = 0.0
        for vc in range(c0, c1):
            idv = idd_c[vc]
            naa = cls[vc, 2] * gkk
            for c in range(k):
                acc = 0.0
                for c2 in range(k):
                    acc += gam[c, c2] * cls[vc, o_gg + c * k + c2]
                naa += cntp * acc + 2.0 * gam[k, c] * cls[vc, o_gz + c]
            for j in range(r):                                 # (B_v G_v) Gamma_K.
                acc = 0.0
                for c in range(k):
                    acc += cls[vc, o_gb + c * r + j] * gam[c, k]
                gbg[j] = acc
            thy = 0.0                                          # tr(H Y_v) = sum_ij H_ij (Y_v)_ji
            xv = x_c[vc]
            for j in range(r):
                for i in range(r):
                    acc = 0.0
                    for c in range(k):
                        acc += cls[vc, o_gb + c * r + j] * gmu[c, i]
                    y = cntp * acc + gbg[j] * zsu[i] + cls[vc, o_zb + j] * ugu[i] + gkk * xv[j, i]
                    thy += sfs[i, j] * y
            hb = 0.0
            for i in range(r):
                for j in range(r):
                    hb += hmh[i, j] * cls[vc, o_bb + i * r + j]
            tot += idv * idv * (naa + 2.0 * thy + hb)
        dtt[grp[0]] -= tot
    dth = v3[3]
    for i in range(3):
        dth[i] = -0.5 * (dld[i] + dtt[i] / s2e)
    for i in range(ns):
        out[i] = 0.0
    out[pos[0]] = dth[0] * 2.0 * th[0]
    if pos[1] >= 0:
        out[pos[1]] = dth[1] * 2.0 * th[1]
    out[pos[2]] = dth[2] * 2.0 * u / s2e                       # d theta_sj / du = 2u / s2e
    out[pos[3]] = -0.5 * (2.0 * n_obs - 2.0 * gta) - 2.0 * (dth[0] * th[0] + dth[1] * th[1] + dth[2] * th[2])
    tr = 0.0
    for c in range(1, k):
        tr += gm[c, c]
    out[pos[4]] = tr / s2g - (k - 1)
    for i in range(ns):
        if i == pos[2]:                                        # half-t density of |u|: no Jacobian
            r2 = (u / scales[i]) ** 2
            lp += -0.5 * (NU + 1.0) * np.log1p(r2 / NU)
            out[i] -= (NU + 1.0) * u / (NU * scales[i] * scales[i] + u * u)
            continue
        if i == pos[0]:                                        # sigma^2 / scale^2, sigma^2 from above
            r2 = s2a
        elif i == pos[1]:
            r2 = s2b
        elif i == pos[3]:
            r2 = s2e
        else:
            r2 = s2g
        r2 /= scales[i] * scales[i]
        lp += -0.5 * (NU + 1.0) * np.log1p(r2 / NU) + theta[i]
        out[i] += 1.0 - (NU + 1.0) * r2 / (NU + r2)
    if not np.isfinite(lp):
        return -np.inf
    for i in range(ns):
        if not np.isfinite(out[i]):
            return -np.inf
    return lp


def _sj_class_stats(sj: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The per-pattern statistics :func:`_sj_marginal_loops` reads, from the scenario x judge statistics ``sj``
    (:class:`~cjstats.stats.scenario_judge.ScenarioJudgeStats`): (cls, pairs, pat, off, grp), packed as the kernel's
    docstring says.

    The effects of a pattern are split into the d block, the larger of the generation (m) and scenario x judge
    (K) blocks, whose W_dd = diag(omega) is diagonal, and the r block (the scenario effect, then the smaller
    block); the d effects are grouped into classes of equal omega. Per class v (rows of ``cls``):
    [n_v, omega_v, tr Z_vv, G_v's = sum_{a in v} s_a G_a (K), B_v s_v (r), G_v'G_v (K x K), G_v'B_v' (K x r),
    B_v B_v' (r x r), Z_rv B_v' (r x r)], with B = W_rd, G = Z'J, s = sum_i Z_i'y0_i, Z = sum_i Z_i'y0_i y0_i'Z_i.
    Per pair of classes (v, v') of a pattern, row-major (``pairs``): B_v Z_vv' B_v''. Per pattern (``pat``):
    [n_p, s_r (r), G_r' (K x r), W_rr (r x r), Z_rr (r x r)]. ``off[p]`` = the first class and pair of pattern p
    (``off[P]`` the totals); ``grp`` = the variance (0 scenario, 1 generation, 2 scenario x judge) of the d
    block, then of each r effect.
    """
    w, g = sj.blocks()
    m, k, n_pat = sj.m, g.shape[2], w.shape[0]
    group = np.zeros(sj.q, dtype=np.int64)
    group[1:1 + m] = 1
    group[1 + m:] = 2
    big = 1 if m >= k else 2
    dix, rix = np.flatnonzero(group == big), np.flatnonzero(group != big)
    cls_rows: list[np.ndarray] = []
    pair_rows: list[np.ndarray] = []
    pat_rows: list[np.ndarray] = []
    off = np.zeros((n_pat + 1, 2), dtype=np.int64)
    for p in range(n_pat):
        wp, gp, zs, zz = w[p], g[p], sj.zsum[p], sj.zscat[p]
        b = wp[np.ix_(rix, dix)]                                   # (r, d)
        omega = np.diag(wp)[dix]
        members = [np.flatnonzero(omega == om) for om in np.unique(omega)]
        for mem in members:
            bv, gv, dv = b[:, mem], gp[dix[mem]], dix[mem]
            cls_rows.append(np.concatenate([
                [len(mem), omega[mem[0]], np.trace(zz[np.ix_(dv, dv)])], gv.T @ zs[dv], bv @ zs[dv],
                (gv.T @ gv).ravel(), (gv.T @ bv.T).ravel(), (bv @ bv.T).ravel(),
                (zz[np.ix_(rix, dv)] @ bv.T).ravel()]))
        for mv in members:
            for mw in members:
                pair_rows.append((b[:, mv] @ zz[np.ix_(dix[mv], dix[mw])] @ b[:, mw].T).ravel())
        pat_rows.append(np.concatenate([[float(sj.count[p])], zs[rix], gp[rix].T.ravel(), wp[np.ix_(rix, rix)].ravel(),
                                        zz[np.ix_(rix, rix)].ravel()]))
        off[p + 1] = off[p] + [len(members), len(members) ** 2]
    grp = np.concatenate([[big], group[rix]]).astype(np.int64)
    return (np.ascontiguousarray(np.array(cls_rows, dtype=np.float64)),
            np.ascontiguousarray(np.array(pair_rows, dtype=np.float64)),
            np.ascontiguousarray(np.array(pat_rows, dtype=np.float64)), off, grp)



def _sj_marginal_kernel() -> Any:
    """The compiled kernel (numba, cached on disk, GIL released). It is plain loops with no BLAS or LAPACK call:
    nutpie's chains call the density from several threads, and concurrent calls into the BLAS made runs with
    the same seed differ; loops give the same bits on any thread, so the chains need not take turns."""
    kernel_helpers_jitable()
    return jit_kernel("sj_marginal", _sj_marginal_loops)
