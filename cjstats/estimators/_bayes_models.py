r"""The Gaussian model of the Bayesian backend, with scenario and generation effects integrated out.

Private helper of :mod:`cjstats.estimators.bayes`. Only numpy is needed here; PyMC and PyTensor are imported
inside :func:`build_pymc_gaussian`, the one function that builds the PyMC version of the same model.

Model (paper Eq. 1, ``eq:model``), one group (model, or model x criterion), observation r in cell c(r) (a
(scenario, generation) pair) of scenario i(r), scored by judge l(r):

    X_r = mu + alpha_i + beta_c + gamma_l + eps_r,
    alpha_i ~ N(0, s2_alpha),  beta_c ~ N(0, s2_beta),  eps_r ~ N(0, s2_eps),
    gamma ~ ZeroSumNormal(sigma_gamma)   (u_l ~ N(0, sigma_gamma^2), gamma_l = u_l - mean(u))

Integrating alpha and beta out
------------------------------
Given (mu, gamma), the residuals z_r = X_r - mu - gamma_l of one scenario are jointly Gaussian with the
nested compound-symmetric covariance s2_eps I + s2_beta Z_c Z_c' + s2_alpha 1 1'. Split each cell into its
within-cell deviations (variance s2_eps, n_c - 1 degrees of freedom) and its mean zbar_c, with variance
d_c = s2_beta + s2_eps / n_c; the cell means of scenario i have covariance D_i + s2_alpha 1 1'. Hence, up to
a constant,

    -2 log p(X | mu, gamma, s2) = (N - C) log s2_eps + SSW(gamma) / s2_eps
                                  + sum_c [log d_c + zbar_c^2 / d_c]
                                  + sum_i [log(1 + s2_alpha W_i) - s2_alpha Q_i^2 / (1 + s2_alpha W_i)]

with W_i = sum_{c in i} 1/d_c and Q_i = sum_{c in i} zbar_c / d_c (matrix determinant lemma and
Sherman-Morrison). SSW is the within-cell sum of squares of X_r - gamma_l. Everything is a quadratic form in
beta = (1, -(mu - ybar), -gamma) whose coefficients depend on the data only through sufficient statistics:

- SSW(gamma) = ssw0 - 2 gamma.b_w + gamma' G_w gamma;
- with x_c = (S_c / n_c, 1, a_c / n_c) (S_c the centred cell sum, a_c the judge counts of the cell) and cells
  grouped by their size h = n_c: sum_c zbar_c^2 / d_c = sum_h beta' M_h beta / d_h with M_h = sum x_c x_c';
- Q_i = sum_h (V_ih . beta) / d_h with V_ih = sum_{c in i, n_c = h} x_c, and W_i = sum_h m_ih / d_h.

One evaluation therefore costs O(n H (K + 2)) for n scenarios, H distinct cell sizes and K judges, whatever
the number of rows, and unbalanced data (scenarios with different numbers of generations, cells missing some
judges) need no special case: they only add cell sizes and change the counts m_ih.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cjstats.scores import GroupData

__all__ = ["GaussianStats", "gaussian_stats", "GaussianPriors", "GaussianDensity", "zerosum_basis",
           "build_pymc_gaussian", "collapsed_loglik"]

_LOG_2PI = math.log(2.0 * math.pi)


def zerosum_basis(k: int) -> np.ndarray:
    """PyMC's ``ZeroSumTransform.backward`` for one axis as a (K, K - 1) matrix with orthonormal columns.

    gamma = H z maps K - 1 unconstrained values onto the zero-sum subspace isometrically (sum gamma^2 =
    sum z^2, Jacobian 1), exactly as ``pm.ZeroSumNormal`` does, so the two implementations of the model share
    one unconstrained space.
    """
    eye = np.eye(k - 1)
    s = np.ones(k - 1)
    norm = s / (math.sqrt(k) + k)
    fill = norm - s / math.sqrt(k)
    return np.vstack([eye, fill[None, :]]) - norm[None, :]


# --------------------------------------------------------------------------------- sufficient statistics
@dataclass(frozen=True, slots=True)
class GaussianStats:
    """Sufficient statistics of one group for the collapsed likelihood (see the module docstring)."""

    n_obs: int
    n_cells: int
    n_scenarios: int
    k: int
    ybar: float
    sd: float
    has_generation: bool
    sizes: np.ndarray        # (H,) distinct cell sizes h
    cells_per_size: np.ndarray  # (H,) number of cells of each size
    ssw0: float
    b_w: np.ndarray          # (K,)
    g_w: np.ndarray          # (K, K)
    m_h: np.ndarray          # (H, D, D), D = K + 2
    v: np.ndarray            # (n, H, D)
    m_count: np.ndarray      # (n, H)
    judge_offsets0: np.ndarray  # (K,) raw judge means minus their mean (starting values only)


def gaussian_stats(g: GroupData) -> GaussianStats:
    """Reduce one group to the sufficient statistics of the collapsed Gaussian likelihood."""
    y = np.asarray(g.y, dtype=np.float64)
    k = g.design.n_judges
    n = g.design.n_scenarios
    n_cells = len(g.cell_scenario)
    ybar = float(y.mean())
    sd = float(y.std())
    yc = y - ybar
    cnt = np.bincount(g.cell, minlength=n_cells).astype(np.float64)
    s_c = np.bincount(g.cell, weights=yc, minlength=n_cells)
    a = np.zeros((n_cells, k))
    np.add.at(a, (g.cell, g.judge), 1.0)
    y_l = np.bincount(g.judge, weights=yc, minlength=k)
    n_l = np.bincount(g.judge, minlength=k).astype(np.float64)
    syy = float(yc @ yc)
    ssw0 = syy - float(np.sum(s_c**2 / cnt))
    b_w = y_l - (s_c / cnt) @ a
    g_w = np.diag(n_l) - (a / cnt[:, None]).T @ a
    sizes, size_idx = np.unique(cnt, return_inverse=True)
    h = len(sizes)
    x = np.column_stack([s_c / cnt, np.ones(n_cells), a / cnt[:, None]])       # (C, D)
    d = k + 2
    m_h = np.zeros((h, d, d))
    for j in range(h):
        xs = x[size_idx == j]
        m_h[j] = xs.T @ xs
    v = np.zeros((n, h, d))
    np.add.at(v, (g.cell_scenario, size_idx), x)
    m_count = np.zeros((n, h))
    np.add.at(m_count, (g.cell_scenario, size_idx), 1.0)
    judge_means = np.where(n_l > 0, y_l / np.maximum(n_l, 1.0), 0.0)
    return GaussianStats(
        n_obs=len(y), n_cells=n_cells, n_scenarios=n, k=k, ybar=ybar, sd=sd,
        has_generation=bool(g.design.generations_max > 1), sizes=sizes,
        cells_per_size=np.bincount(size_idx, minlength=h).astype(np.float64), ssw0=ssw0, b_w=b_w, g_w=g_w,
        m_h=m_h, v=v, m_count=m_count, judge_offsets0=judge_means - judge_means.mean(),
    )


def collapsed_loglik(st: GaussianStats, mu: float, gamma: np.ndarray, s2a: float, s2b: float, s2e: float,
                     *, grad: bool = True) -> tuple[float, dict[str, Any]]:
    """log p(X | mu, gamma, s2_alpha, s2_beta, s2_eps) with alpha and beta integrated out, and its gradient.

    Drops only parameter-free constants (N/2 log 2 pi and sum_c log n_c / 2). The gradient is returned as
    ``{"mu", "gamma", "s2a", "s2b", "s2e"}`` (derivatives with respect to the variances themselves).
    """
    beta = np.empty(st.k + 2)
    beta[0] = 1.0
    beta[1] = -(mu - st.ybar)
    beta[2:] = -gamma
    sizes = st.sizes
    dh = s2b + s2e / sizes                          # (H,)
    eh = 1.0 / dh
    mb = st.m_h @ beta                              # (H, D)
    qh = mb @ beta                                  # (H,)
    p = st.v @ beta                                 # (n, H)
    q = p @ eh                                      # (n,)
    w = st.m_count @ eh                             # (n,)
    u = 1.0 + s2a * w
    ssw = st.ssw0 - 2.0 * gamma @ st.b_w + gamma @ st.g_w @ gamma
    big_l = ((st.n_obs - st.n_cells) * math.log(s2e) + ssw / s2e + st.cells_per_size @ np.log(dh)
             + qh @ eh + np.sum(np.log(u)) - s2a * np.sum(q * q / u))
    ll = -0.5 * big_l
    if not grad:
        return ll, {}
    r = s2a * q / u                                 # (n,)
    # dL/dbeta
    vr = np.einsum("i,ihd->hd", r, st.v)            # (H, D)
    dl_dbeta = 2.0 * eh @ (mb - vr)                 # (D,)
    # dL/de_h
    dl_de = qh + (st.m_count * (s2a / u + r * r)[:, None]).sum(axis=0) - 2.0 * (r @ p) - st.cells_per_size / eh
    dl_ds2b = -(dl_de * eh * eh).sum()
    dl_ds2e = -(dl_de * eh * eh / sizes).sum() + (st.n_obs - st.n_cells) / s2e - ssw / s2e**2
    dl_ds2a = np.sum(w / u - q * q / (u * u))
    dl_dgamma = -dl_dbeta[2:] + (-2.0 * st.b_w + 2.0 * st.g_w @ gamma) / s2e
    dl_dmu = -dl_dbeta[1]
    return ll, {"mu": -0.5 * dl_dmu, "gamma": -0.5 * dl_dgamma, "s2a": -0.5 * dl_ds2a,
                "s2b": -0.5 * dl_ds2b, "s2e": -0.5 * dl_ds2e}


def _logpost_loops(theta, ybar, prior_mu_sd, scales, has_gen, basis, ssw0, b_w, g_w, sizes, cells_per_size,
                   m_h, v, m_count, n_obs, n_cells, out):  # pragma: no cover - compiled by numba when available
    """:meth:`GaussianDensity.logp` as explicit loops (compiled with numba when it is installed).

    Same coordinates and the same density as the numpy path (:func:`collapsed_loglik` plus priors and
    Jacobians); fills ``out`` with the gradient and returns the log density.
    """
    k = basis.shape[0]
    ns = scales.shape[0]
    d = k + 2
    h_n = sizes.shape[0]
    n = v.shape[0]
    mu = theta[0]
    s_a = np.exp(theta[1])
    if has_gen:
        s_b = np.exp(theta[2])
    else:
        s_b = 0.0
    s_e = np.exp(theta[ns - 1])
    s_g = np.exp(theta[ns])
    s2a = s_a * s_a
    s2b = s_b * s_b
    s2e = s_e * s_e
    gamma = np.zeros(k)
    for j in range(k):
        for a in range(k - 1):
            gamma[j] += basis[j, a] * theta[1 + ns + a]
    beta = np.empty(d)
    beta[0] = 1.0
    beta[1] = -(mu - ybar)
    for j in range(k):
        beta[2 + j] = -gamma[j]
    eh = np.empty(h_n)
    mb = np.zeros((h_n, d))
    qh = np.zeros(h_n)
    dl_dbeta = np.zeros(d)
    dl_de = np.zeros(h_n)
    big_l = 0.0
    for h in range(h_n):
        dh = s2b + s2e / sizes[h]
        eh[h] = 1.0 / dh
        big_l += cells_per_size[h] * np.log(dh)
        for a in range(d):
            acc = 0.0
            for b in range(d):
                acc += m_h[h, a, b] * beta[b]
            mb[h, a] = acc
            qh[h] += acc * beta[a]
        big_l += qh[h] * eh[h]
        for a in range(d):
            dl_dbeta[a] += 2.0 * eh[h] * mb[h, a]
        dl_de[h] += qh[h] - cells_per_size[h] * dh
    p = np.empty(h_n)
    dl_ds2a = 0.0
    for i in range(n):
        w = 0.0
        q = 0.0
        for h in range(h_n):
            acc = 0.0
            for a in range(d):
                acc += v[i, h, a] * beta[a]
            p[h] = acc
            q += acc * eh[h]
            w += m_count[i, h] * eh[h]
        u = 1.0 + s2a * w
        big_l += np.log(u) - s2a * q * q / u
        r = s2a * q / u
        dl_ds2a += w / u - q * q / (u * u)
        c = s2a / u + r * r
        for h in range(h_n):
            dl_de[h] += m_count[i, h] * c - 2.0 * r * p[h]
            f = 2.0 * eh[h] * r
            for a in range(d):
                dl_dbeta[a] -= f * v[i, h, a]
    ssw = ssw0
    for j in range(k):
        ssw -= 2.0 * gamma[j] * b_w[j]
        for l in range(k):
            ssw += gamma[j] * g_w[j, l] * gamma[l]
    big_l += (n_obs - n_cells) * np.log(s2e) + ssw / s2e
    dl_ds2b = 0.0
    dl_ds2e = (n_obs - n_cells) / s2e - ssw / (s2e * s2e)
    for h in range(h_n):
        dl_ds2b -= dl_de[h] * eh[h] * eh[h]
        dl_ds2e -= dl_de[h] * eh[h] * eh[h] / sizes[h]
    lp = -0.5 * big_l
    # priors and Jacobians; gradients on the unconstrained coordinates
    dmu = (mu - ybar) / prior_mu_sd
    lp -= 0.5 * dmu * dmu
    out[0] = 0.5 * dl_dbeta[1] - dmu / prior_mu_sd
    for i in range(ns):
        sig = np.exp(theta[1 + i])
        ratio = sig / scales[i]
        lp += -0.5 * ratio * ratio + theta[1 + i]
        out[1 + i] = 1.0 - ratio * ratio
    out[1] += -0.5 * dl_ds2a * 2.0 * s2a
    if has_gen:
        out[2] += -0.5 * dl_ds2b * 2.0 * s2b
    out[ns - 1] += -0.5 * dl_ds2e * 2.0 * s2e
    zz = 0.0
    for a in range(k - 1):
        zz += theta[1 + ns + a] * theta[1 + ns + a]
    lp += -0.5 * zz / (s_g * s_g) - (k - 1) * theta[ns]
    out[ns] += zz / (s_g * s_g) - (k - 1)
    dgam = np.empty(k)
    for j in range(k):
        acc = -2.0 * b_w[j]
        for l in range(k):
            acc += 2.0 * g_w[j, l] * gamma[l]
        dgam[j] = -0.5 * (-dl_dbeta[2 + j] + acc / s2e)
    for a in range(k - 1):
        acc = 0.0
        for j in range(k):
            acc += basis[j, a] * dgam[j]
        out[1 + ns + a] = acc - theta[1 + ns + a] / (s_g * s_g)
    return lp


_COMPILED: dict[str, Any] = {}


def _loglik_kernel() -> Any:
    """The numba-compiled :func:`_logpost_loops` (cached on disk), or ``None`` when numba is unavailable."""
    if "kernel" not in _COMPILED:
        try:
            import warnings

            import numba

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _COMPILED["kernel"] = numba.njit(cache=True, nogil=True, fastmath=False)(_logpost_loops)
        except Exception:  # numba missing or unusable: the numpy path is exact, only slower
            _COMPILED["kernel"] = None
    return _COMPILED["kernel"]


# -------------------------------------------------------------------------------------------------- priors
@dataclass(frozen=True, slots=True)
class GaussianPriors:
    """Prior scales in score units: mu ~ N(ybar, mu^2); each sigma ~ HalfNormal(scale)."""

    mu: float
    sigma_scenario: float
    sigma_generation: float
    sigma_residual: float
    sigma_judge: float


# ----------------------------------------------------------------------------------- unconstrained density
class GaussianDensity:
    """The log posterior of the collapsed Gaussian model on PyMC's unconstrained space, with its gradient.

    Coordinates, in order: ``mu``; ``log sigma_scenario``; ``log sigma_generation`` (only when some scenario
    has two generations or more); ``log sigma_residual``; ``log sigma_judge``; the K - 1 coordinates ``z`` of
    ``gamma = H z`` (:func:`zerosum_basis`). These are exactly PyMC's default transforms of the variables of
    :func:`build_pymc_gaussian` (log for the half-normal scales, zero-sum for gamma, Jacobians included), so
    the two densities agree up to a constant; the tests check it.
    """

    def __init__(self, st: GaussianStats, priors: GaussianPriors, *, compiled: bool = True) -> None:
        self.st = st
        self.kernel = _loglik_kernel() if compiled else None
        self.priors = priors
        self.k = st.k
        self.basis = zerosum_basis(st.k)
        self.scales = [priors.sigma_scenario] + ([priors.sigma_generation] if st.has_generation else []) + [
            priors.sigma_residual, priors.sigma_judge]
        self.sigma_names = ["sigma_scenario"] + (["sigma_generation"] if st.has_generation else []) + [
            "sigma_residual", "sigma_judge"]
        self.n_sigma = len(self.scales)
        self._scales = np.asarray(self.scales, dtype=np.float64)
        self.ndim = 1 + self.n_sigma + st.k - 1

    # ---- parts
    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        t = theta[1:1 + self.n_sigma]
        sig = dict(zip(self.sigma_names, np.exp(t)))
        z = theta[1 + self.n_sigma:]
        return {"mu": float(theta[0]), **sig, "gamma": self.basis @ z, "z": z, "t": t}

    def logp(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Log posterior density (up to a constant) and its gradient at the unconstrained point ``theta``."""
        theta = np.asarray(theta, dtype=np.float64)
        if self.kernel is not None:
            out = np.empty_like(theta)
            st = self.st
            lp = self.kernel(theta, st.ybar, self.priors.mu, self._scales, st.has_generation, self.basis, st.ssw0,
                             st.b_w, st.g_w, st.sizes, st.cells_per_size, st.m_h, st.v, st.m_count,
                             float(st.n_obs), float(st.n_cells), out)
            if not math.isfinite(lp):
                return -math.inf, np.zeros_like(theta)
            return lp, out
        return self.logp_numpy(theta)

    def logp_numpy(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The reference implementation of :meth:`logp` in numpy (used when numba is unavailable)."""
        theta = np.asarray(theta, dtype=np.float64)
        p = self.unpack(theta)
        st = self.st
        s_a, s_e, s_g = p["sigma_scenario"], p["sigma_residual"], p["sigma_judge"]
        s_b = p.get("sigma_generation", 0.0)
        if not all(np.isfinite([s_a, s_e, s_g, s_b])) or s_e <= 0.0 or s_g <= 0.0:
            return -np.inf, np.zeros_like(theta)
        ll, gr = collapsed_loglik(st, p["mu"], p["gamma"], s_a * s_a, s_b * s_b, s_e * s_e)
        out = np.empty_like(theta)
        # mu ~ N(ybar, prior_mu^2)
        pm_sd = self.priors.mu
        lp = ll - 0.5 * ((p["mu"] - st.ybar) / pm_sd) ** 2
        out[0] = gr["mu"] - (p["mu"] - st.ybar) / pm_sd**2
        # half-normal scales on the log scale: log p = -sigma^2/(2 s^2) + log sigma (Jacobian)
        dvar = {"sigma_scenario": gr["s2a"], "sigma_generation": gr["s2b"], "sigma_residual": gr["s2e"],
                "sigma_judge": 0.0}
        for i, (name, scale) in enumerate(zip(self.sigma_names, self.scales)):
            sig = p[name]
            lp += -0.5 * (sig / scale) ** 2 + math.log(sig)
            out[1 + i] = -(sig / scale) ** 2 + 1.0 + dvar[name] * 2.0 * sig * sig
        # gamma ~ ZeroSumNormal(sigma_judge): -sum z^2/(2 s^2) - (K - 1) log s
        z = p["z"]
        zz = float(z @ z)
        lp += -0.5 * zz / s_g**2 - (self.k - 1) * math.log(s_g)
        out[self.n_sigma] += zz / s_g**2 - (self.k - 1)
        out[1 + self.n_sigma:] = self.basis.T @ gr["gamma"] - z / s_g**2
        if not np.isfinite(lp):
            return -np.inf, np.zeros_like(theta)
        return float(lp), out

    def expand(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """The stored variables of one draw, in score units."""
        p = self.unpack(np.asarray(theta, dtype=np.float64))
        g = p["gamma"]
        out = {"mu": np.asarray(p["mu"])}
        for name in self.sigma_names:
            out[name] = np.asarray(p[name])
        out["gamma"] = np.asarray(g)
        out["scenario"] = np.asarray(p["sigma_scenario"] ** 2)
        if self.st.has_generation:
            out["generation"] = np.asarray(p["sigma_generation"] ** 2)
        out["residual"] = np.asarray(p["sigma_residual"] ** 2)
        out["judge_panel"] = np.asarray(float(g @ g) / self.k)
        out["judge_population"] = np.asarray(p["sigma_judge"] ** 2)
        return out

    def expanded_names(self) -> list[str]:
        names = ["mu", *self.sigma_names, "gamma", "scenario"]
        if self.st.has_generation:
            names.append("generation")
        return names + ["residual", "judge_panel", "judge_population"]

    def initial_point(self, rng: np.random.Generator) -> np.ndarray:
        """A jittered starting point near moment-like values (sd/2 for every scale, raw judge offsets)."""
        st = self.st
        sd = st.sd if st.sd > 0 else 1.0
        theta = np.empty(self.ndim)
        theta[0] = st.ybar + rng.uniform(-0.1, 0.1) * sd
        theta[1:1 + self.n_sigma] = math.log(0.5 * sd) + rng.uniform(-1.0, 1.0, self.n_sigma)
        z0 = self.basis.T @ st.judge_offsets0
        theta[1 + self.n_sigma:] = z0 + rng.uniform(-0.1, 0.1, self.k - 1) * sd
        return theta


# --------------------------------------------------------------------------------------------- PyMC model
def build_pymc_gaussian(st: GaussianStats, priors: GaussianPriors, judge_labels: tuple[str, ...]) -> Any:
    """The same model written in PyMC: free variables, the collapsed likelihood as a ``Potential``, and
    Deterministics for every estimand (score units).

    Variables: ``mu ~ Normal(ybar, priors.mu)``; ``sigma_* ~ HalfNormal(scale)``;
    ``gamma ~ ZeroSumNormal(sigma_judge)`` over the panel; Deterministics ``scenario = sigma_scenario^2``,
    ``generation``, ``residual``, ``judge_panel = mean(gamma^2)``, ``judge_population = sigma_judge^2``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    with pm.Model(coords={"judge": list(judge_labels)}) as model:
        mu = pm.Normal("mu", mu=st.ybar, sigma=priors.mu)
        s_a = pm.HalfNormal("sigma_scenario", sigma=priors.sigma_scenario)
        s_b = pm.HalfNormal("sigma_generation", sigma=priors.sigma_generation) if st.has_generation else None
        s_e = pm.HalfNormal("sigma_residual", sigma=priors.sigma_residual)
        s_g = pm.HalfNormal("sigma_judge", sigma=priors.sigma_judge)
        gamma = pm.ZeroSumNormal("gamma", sigma=s_g, dims="judge")
        s2a, s2e = s_a**2, s_e**2
        s2b = s_b**2 if s_b is not None else pt.constant(0.0)
        beta = pt.concatenate([pt.ones(1), -(mu - st.ybar)[None], -gamma])
        dh = s2b + s2e / st.sizes
        eh = 1.0 / dh
        qh = pt.dot(pt.dot(st.m_h, beta), beta)
        q = pt.dot(pt.dot(st.v, beta), eh)
        w = pt.dot(st.m_count, eh)
        u = 1.0 + s2a * w
        ssw = st.ssw0 - 2.0 * pt.dot(gamma, st.b_w) + pt.dot(gamma, pt.dot(st.g_w, gamma))
        big_l = ((st.n_obs - st.n_cells) * pt.log(s2e) + ssw / s2e + pt.dot(st.cells_per_size, pt.log(dh))
                 + pt.dot(qh, eh) + pt.sum(pt.log(u)) - s2a * pt.sum(q * q / u))
        pm.Potential("collapsed_loglik", -0.5 * big_l)
        pm.Deterministic("scenario", s2a)
        if st.has_generation:
            pm.Deterministic("generation", s2b)
        pm.Deterministic("residual", s2e)
        pm.Deterministic("judge_panel", pt.mean(gamma**2))
        pm.Deterministic("judge_population", s_g**2)
    return model
