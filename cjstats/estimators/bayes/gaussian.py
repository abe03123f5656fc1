r"""The Gaussian model of the Bayesian backend, with its random effects integrated out analytically.

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
judges) need no special case: they only add cell sizes and change the counts m_ih. Scenarios sharing a
pattern of counts share W_i, so :class:`MarginalDensity` pools them into blocks (a balanced design is one
block, and costs the same at 4,000 or 1,000,000 rows).

Two densities are built on these statistics: :class:`GaussianDensity` over (mu, log scales, gamma), exactly the
PyMC model of :func:`build_pymc_gaussian`; and :class:`MarginalDensity`, the sampler's default, over the log
scales alone, with (mu, gamma) integrated out too and drawn afterwards from their exact conditional normal.
Both have analytic gradients, a numpy reference implementation and a numba-compiled one (cached on disk).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cjstats._jit import _COMPILED, jit_kernel  # noqa: F401 - re-exported (ordinal, scenario_judge)
from cjstats.io.scores import GroupData
from cjstats.stats.views import GaussianStats, pattern_blocks

__all__ = [
    "NU",
    "GaussianDensity",
    "GaussianPriors",
    "GaussianStats",
    "MarginalDensity",
    "collapsed_loglik",
    "gaussian_stats",
    "generation_identifiable",
    "half_t_logp",
    "zerosum_basis",
]

_LOG_2PI = math.log(2.0 * math.pi)


#: Degrees of freedom of the half-Student-t prior on every scale. A half-normal prior has a light right tail
#: that becomes a steep wall on the log scale where NUTS moves (divergences when a scale such as sigma_gamma,
#: informed by K - 1 degrees of freedom only, is prior-dominated); the half-t tail keeps the gradient bounded.
NU = 3.0


def half_t_logp(t: Any, scale: Any) -> tuple[Any, Any]:
    """log HalfStudentT(exp(t); nu=3, scale) + t (the log-transform Jacobian), up to a constant, and d/dt."""
    r2 = np.exp(2.0 * np.asarray(t, dtype=np.float64)) / np.asarray(scale, dtype=np.float64) ** 2
    return -0.5 * (NU + 1.0) * np.log1p(r2 / NU) + t, 1.0 - (NU + 1.0) * r2 / (NU + r2)


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
# GaussianStats lives in the statistics layer (cjstats.stats.views: CellStats.for_gaussian builds it without
# rows); gaussian_stats below reduces one group's rows to it (the reference the view is tested against).


def generation_identifiable(g: GroupData) -> bool:
    """Whether sigma2_beta can be told apart from the other variances.

    It cannot when every scenario has one generation (m = 1: alpha_i + beta_i1 is one constant per scenario)
    or when every (scenario, generation) cell holds a single judge call (beta_ij + eps_ijl is then one draw).
    """
    return bool(g.design.generations_max > 1 and g.design.n_rows > len(g.cell_scenario))


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
    blk_t, blk_m, blk_n, single = _pattern_blocks(v, m_count)
    return GaussianStats(
        n_obs=len(y), n_cells=n_cells, n_scenarios=n, k=k, ybar=ybar, sd=sd,
        has_generation=generation_identifiable(g), sizes=sizes,
        cells_per_size=np.bincount(size_idx, minlength=h).astype(np.float64), ssw0=ssw0, b_w=b_w, g_w=g_w,
        m_h=m_h, v=v, m_count=m_count, judge_offsets0=judge_means - judge_means.mean(),
        blk_t=blk_t, blk_m=blk_m, blk_n=blk_n, single_v=np.ascontiguousarray(v[single]),
        single_m=np.ascontiguousarray(m_count[single]),
    )


_pattern_blocks = pattern_blocks


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
        inv_u = 1.0 / u
        r = s2a * q * inv_u
        big_l += np.log(u) - r * q
        dl_ds2a += (w - q * q * inv_u) * inv_u
        c = s2a * inv_u + r * r
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
        r2 = (sig / scales[i]) ** 2
        lp += -0.5 * (NU + 1.0) * np.log1p(r2 / NU) + theta[1 + i]
        out[1 + i] = 1.0 - (NU + 1.0) * r2 / (NU + r2)
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


def _loglik_kernel() -> Any:
    return jit_kernel("joint", _logpost_loops)


#: Largest distance, in log units, of a log-scale coordinate from log(sd_y): beyond it (scales below
#: e^-300 or above e^300 times the score SD) the density is taken as zero, which keeps exp() finite. The bound
#: is far outside any posterior mass, so the sampler never meets it as an artificial wall.
LOG_SCALE_BOUND = 300.0


# -------------------------------------------------------------------------------------------------- priors
@dataclass(frozen=True, slots=True)
class GaussianPriors:
    """Prior scales in score units: mu ~ N(ybar, mu^2); each sigma ~ HalfStudentT(nu = 3, scale).

    ``sigma_scenario_judge`` is read only by the model with the scenario x judge interaction
    (:mod:`cjstats.estimators.bayes.scenario_judge`); the backend sets it to sd_y like the other scales, and
    the default of 1.0 serves code that builds the priors of the model without the term by position.
    """

    mu: float
    sigma_scenario: float
    sigma_generation: float
    sigma_residual: float
    sigma_judge: float
    sigma_scenario_judge: float = 1.0


# ----------------------------------------------------------------------------------- unconstrained density
class _CollapsedOutputs:
    """What both collapsed densities report per draw: names and dimensions of the expanded variables."""

    st: GaussianStats
    sigma_names: list[str]
    k: int

    @staticmethod
    def _sigma_names(has_generation: bool) -> list[str]:
        return ["sigma_scenario"] + (["sigma_generation"] if has_generation else []) + [
            "sigma_residual", "sigma_judge"]

    def expanded_names(self) -> list[str]:
        names = ["mu", *self.sigma_names, "gamma", "scenario"]
        if self.st.has_generation:
            names.append("generation")
        return names + ["residual", "judge_panel", "judge_population"]

    def expanded_dims(self) -> dict[str, tuple[str, ...]]:
        return {"gamma": ("judge",)}

    def _outputs(self, mu: Any, sig: dict[str, Any], g: np.ndarray) -> dict[str, np.ndarray]:
        """The stored variables of one draw, or of many at once: mu, the scales, gamma and every estimand
        (docs/estimands.md). ``mu`` and the scales are scalars or arrays of one shape, ``g`` has one more axis
        (the judges, last)."""
        g = np.asarray(g)
        out = {"mu": np.asarray(mu)}
        for name in self.sigma_names:
            out[name] = np.asarray(sig[name])
        out["gamma"] = g
        out["scenario"] = np.asarray(sig["sigma_scenario"] ** 2)
        if self.st.has_generation:
            out["generation"] = np.asarray(sig["sigma_generation"] ** 2)
        out["residual"] = np.asarray(sig["sigma_residual"] ** 2)
        out["judge_panel"] = np.asarray(np.einsum("...k,...k->...", g, g) / self.k)
        out["judge_population"] = np.asarray(sig["sigma_judge"] ** 2)
        return out

    def coords(self) -> dict[str, list[Any]]:
        return {}


class _JointCoordinates:
    """What the joint densities (mu, log scales, z) share: the stored variables of a draw and a starting point.

    A subclass has ``unpack``, ``_outputs``, ``st``, ``ndim``, ``n_sigma``, ``basis`` and ``k``.
    """

    def expand(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """The stored variables of one draw, in score units."""
        p = self.unpack(np.asarray(theta, dtype=np.float64))
        return self._outputs(p["mu"], p, p["gamma"])

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


class GaussianDensity(_JointCoordinates, _CollapsedOutputs):
    """The log posterior of the collapsed Gaussian model on PyMC's unconstrained space, with its gradient.

    Coordinates, in order: ``mu``; ``log sigma_scenario``; ``log sigma_generation`` (only when some scenario
    has two generations or more); ``log sigma_residual``; ``log sigma_judge``; the K - 1 coordinates ``z`` of
    ``gamma = H z`` (:func:`zerosum_basis`). These are exactly PyMC's default transforms of the variables of
    :func:`build_pymc_gaussian` (log for the half-t scales, zero-sum for gamma, Jacobians included), so
    the two densities agree up to a constant; the tests check it.
    """

    def __init__(self, st: GaussianStats, priors: GaussianPriors, *, compiled: bool = True) -> None:
        self.st = st
        self._log_sd = math.log(st.sd) if st.sd > 0 else 0.0
        self.kernel = _loglik_kernel() if compiled else None
        self.priors = priors
        self.k = st.k
        self.basis = zerosum_basis(st.k)
        self.scales = [priors.sigma_scenario] + ([priors.sigma_generation] if st.has_generation else []) + [
            priors.sigma_residual, priors.sigma_judge]
        self.sigma_names = self._sigma_names(st.has_generation)
        self.n_sigma = len(self.scales)
        self._scales = np.asarray(self.scales, dtype=np.float64)
        self.ndim = 1 + self.n_sigma + st.k - 1
        if self.kernel is not None:  # compile (or load from the on-disk cache) now, quietly
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.logp(self.initial_point(np.random.default_rng(0)))

    # ---- parts
    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        t = theta[1:1 + self.n_sigma]
        sig = dict(zip(self.sigma_names, np.exp(t)))
        z = theta[1 + self.n_sigma:]
        return {"mu": float(theta[0]), **sig, "gamma": self.basis @ z, "z": z, "t": t}

    def logp(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Log posterior density (up to a constant) and its gradient at the unconstrained point ``theta``."""
        theta = np.asarray(theta, dtype=np.float64)
        t = theta[1:1 + self.n_sigma]
        if not (np.all(np.isfinite(theta)) and np.all(np.abs(t - self._log_sd) <= LOG_SCALE_BOUND)):
            return -math.inf, np.zeros_like(theta)
        if self.kernel is not None:
            out = np.empty_like(theta)
            st = self.st
            lp = self.kernel(theta, st.ybar, self.priors.mu, self._scales, st.has_generation, self.basis, st.ssw0,
                             st.b_w, st.g_w, st.sizes, st.cells_per_size, st.m_h, st.v, st.m_count,
                             float(st.n_obs), float(st.n_cells), out)
            if not (math.isfinite(lp) and np.all(np.isfinite(out))):
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
        # half-t scales on the log scale (Jacobian included): see half_t_logp
        dvar = {"sigma_scenario": gr["s2a"], "sigma_generation": gr["s2b"], "sigma_residual": gr["s2e"],
                "sigma_judge": 0.0}
        for i, (name, scale) in enumerate(zip(self.sigma_names, self.scales)):
            sig = p[name]
            lpi, gi = half_t_logp(theta[1 + i], scale)
            lp += lpi
            out[1 + i] = gi + dvar[name] * 2.0 * sig * sig
        # gamma ~ ZeroSumNormal(sigma_judge): -sum z^2/(2 s^2) - (K - 1) log s
        z = p["z"]
        zz = float(z @ z)
        lp += -0.5 * zz / s_g**2 - (self.k - 1) * math.log(s_g)
        out[self.n_sigma] += zz / s_g**2 - (self.k - 1)
        out[1 + self.n_sigma:] = self.basis.T @ gr["gamma"] - z / s_g**2
        if not np.isfinite(lp):
            return -np.inf, np.zeros_like(theta)
        return float(lp), out



# ------------------------------------------------------------------------- mu and gamma integrated out too
def _marginal_numpy(theta, scales, has_gen, s_mu, k, s_mat, m_h, v, m_count, sizes, cps, n_obs, n_cells, p_mat):
    """Reference (numpy) implementation of the fully collapsed log density; see :class:`MarginalDensity`.

    Returns (log density, gradient, conditional mean of (mu - ybar, z), L^{-1} where L L' = A is the Cholesky
    factorisation of the conditional precision A).
    """
    ns = len(scales)
    sig = np.exp(theta)
    s2a = sig[0] ** 2
    s2b = sig[1] ** 2 if has_gen else 0.0
    s2e = sig[ns - 2] ** 2
    s_g = sig[ns - 1]
    dh = s2b + s2e / sizes
    eh = 1.0 / dh
    q = np.einsum("ihd,h->id", v, eh)                          # (n, D)
    w = m_count @ eh
    u = 1.0 + s2a * w
    phi = s_mat / s2e + np.einsum("h,hab->ab", eh, m_h) - s2a * np.einsum("i,ia,ib->ab", 1.0 / u, q, q)
    lam = np.full(k, 1.0 / s_g**2)
    lam[0] = 1.0 / s_mu**2
    a_mat = p_mat.T @ phi @ p_mat + np.diag(lam)
    g = p_mat.T @ phi[:, 0]
    chol = np.linalg.cholesky(a_mat)
    a_inv = np.linalg.inv(a_mat)
    b = a_inv @ g
    e0 = np.zeros(k + 2)
    e0[0] = 1.0
    bt = e0 - p_mat @ b
    big_g = np.outer(bt, bt) + p_mat @ a_inv @ p_mat.T
    ll = -0.5 * ((n_obs - n_cells) * math.log(s2e) + cps @ np.log(dh) + np.sum(np.log(u)) + phi[0, 0])
    ll += -np.sum(np.log(np.diag(chol))) + 0.5 * g @ b - (k - 1) * math.log(s_g)
    gq = q @ big_g                                            # (n, D)
    qgq = np.einsum("id,id->i", gq, q)
    vgq = np.einsum("ihd,id->ih", v, gq)                      # (n, H)
    dl_ds2a = -0.5 * np.sum(w / u - qgq / u**2)
    acc = (-cps / eh + np.einsum("ab,hab->h", big_g, m_h)
           + (m_count * (s2a / u)[:, None]).sum(0) - 2.0 * s2a * (vgq / u[:, None]).sum(0)
           + s2a**2 * (m_count * (qgq / u**2)[:, None]).sum(0))
    dl_de = -0.5 * acc
    dl_ds2e = -0.5 * ((n_obs - n_cells) / s2e - np.sum(big_g * s_mat) / s2e**2) + np.sum(dl_de * -eh**2 / sizes)
    dl_ds2b = np.sum(dl_de * -eh**2)
    grad = np.empty(ns)
    grad[0] = dl_ds2a * 2.0 * s2a
    if has_gen:
        grad[1] = dl_ds2b * 2.0 * s2b
    grad[ns - 2] = dl_ds2e * 2.0 * s2e
    grad[ns - 1] = (np.sum(np.diag(a_inv)[1:]) + np.sum(b[1:] ** 2)) / s_g**2 - (k - 1)
    lp_prior, g_prior = half_t_logp(theta, scales)
    lp = ll + float(np.sum(lp_prior))
    grad += g_prior
    return float(lp), grad, -b, np.linalg.inv(chol)


def _cholesky_lower(a, out, n):  # pragma: no cover - compiled into the kernels (register_jitable)
    """The Cholesky factor L (A = L L') of the leading n x n block of the symmetric ``a``, written to the lower
    triangle of ``out`` (``out`` may be ``a``: each entry is read before it is written; the upper triangle is left
    as it is). Returns False, at the first pivot that is not > 0 (or NaN), where A is not positive definite.

    The one Cholesky of the marginal kernels (:func:`_marginal_loops`, and the scenario x judge kernel's two).
    """
    for j in range(n):
        acc = a[j, j]
        for p in range(j):
            acc -= out[j, p] * out[j, p]
        if not acc > 0.0:
            return False
        out[j, j] = np.sqrt(acc)
        for i in range(j + 1, n):
            acc = a[i, j]
            for p in range(j):
                acc -= out[i, p] * out[j, p]
            out[i, j] = acc / out[j, j]
    return True


def kernel_helpers_jitable() -> None:
    """Make the kernels' shared helpers (:func:`_cholesky_lower`) callable from numba-compiled code; called by
    each kernel loader before it compiles (numba stays an optional, lazily imported extra)."""
    try:
        from numba.extending import register_jitable
    except Exception:  # noqa: BLE001 - numba missing: jit_kernel returns None and the numpy path runs
        return
    register_jitable(_cholesky_lower)


def _marginal_loops(theta, scales, has_gen, s_mu, k, s_mat, m_h, v, m_count, sizes, cps, n_obs, n_cells, p_mat,
                    blk_t, blk_m, blk_n, lo, hi, out, cond_mean, chol_inv):  # pragma: no cover - numba
    """:func:`_marginal_numpy` as explicit loops (compiled with numba when it is installed).

    ``v`` and ``m_count`` hold only the scenarios handled one by one; pattern blocks come in ``blk_*``.
    Returns -inf outside lo <= theta <= hi or where anything is not finite.
    """
    ns = scales.shape[0]
    for i in range(ns):
        if not (lo <= theta[i] <= hi):
            return -np.inf
    d = k + 2
    h_n = sizes.shape[0]
    n = v.shape[0]
    s_a = np.exp(theta[0])
    s2a = s_a * s_a
    s2b = 0.0
    if has_gen:
        s2b = np.exp(2.0 * theta[1])
    s2e = np.exp(2.0 * theta[ns - 2])
    s_g = np.exp(theta[ns - 1])
    eh = np.empty(h_n)
    big_l = (n_obs - n_cells) * np.log(s2e)
    for h in range(h_n):
        dh = s2b + s2e / sizes[h]
        eh[h] = 1.0 / dh
        big_l += cps[h] * np.log(dh)
    phi = np.empty((d, d))
    for a in range(d):
        for b in range(d):
            acc = s_mat[a, b] / s2e
            for h in range(h_n):
                acc += eh[h] * m_h[h, a, b]
            phi[a, b] = acc
    q = np.zeros((n, d))
    u = np.empty(n)
    w = np.empty(n)
    for i in range(n):
        wi = 0.0
        for h in range(h_n):
            wi += m_count[i, h] * eh[h]
            for a in range(d):
                q[i, a] += eh[h] * v[i, h, a]
        w[i] = wi
        u[i] = 1.0 + s2a * wi
        big_l += np.log(u[i])
        f = s2a / u[i]
        for a in range(d):
            fa = f * q[i, a]
            for b in range(d):
                phi[a, b] -= fa * q[i, b]
    n_blk = blk_n.shape[0]
    u_b = np.empty(n_blk)
    w_b = np.empty(n_blk)
    for p in range(n_blk):
        wi = 0.0
        for h in range(h_n):
            wi += blk_m[p, h] * eh[h]
        w_b[p] = wi
        u_b[p] = 1.0 + s2a * wi
        big_l += blk_n[p] * np.log(u_b[p])
        f = s2a / u_b[p]
        for h in range(h_n):
            if blk_m[p, h] == 0.0:
                continue
            for h2 in range(h_n):
                if blk_m[p, h2] == 0.0:
                    continue
                c = f * eh[h] * eh[h2]
                for a in range(d):
                    for b in range(d):
                        phi[a, b] -= c * blk_t[p, h, h2, a, b]
    big_l += phi[0, 0]
    # A = P' phi P + Lambda, g = P' phi e0
    tmp = np.zeros((d, k))
    for a in range(d):
        for c in range(k):
            acc = 0.0
            for b in range(d):
                acc += phi[a, b] * p_mat[b, c]
            tmp[a, c] = acc
    a_mat = np.zeros((k, k))
    g = np.zeros(k)
    for c1 in range(k):
        for c2 in range(k):
            acc = 0.0
            for a in range(d):
                acc += p_mat[a, c1] * tmp[a, c2]
            a_mat[c1, c2] = acc
        acc = 0.0
        for a in range(d):
            acc += p_mat[a, c1] * phi[a, 0]
        g[c1] = acc
    a_mat[0, 0] += 1.0 / (s_mu * s_mu)
    for c in range(1, k):
        a_mat[c, c] += 1.0 / (s_g * s_g)
    # Cholesky A = L L'
    chol = np.zeros((k, k))
    if not _cholesky_lower(a_mat, chol, k):
        return -np.inf
    logdet = 0.0
    for j in range(k):
        logdet += np.log(chol[j, j])
    # A^{-1} from L: solve L X = I, then A^{-1} = X' X
    x = np.zeros((k, k))
    for c in range(k):
        for i in range(k):
            acc = 1.0 if i == c else 0.0
            for p in range(i):
                acc -= chol[i, p] * x[p, c]
            x[i, c] = acc / chol[i, i]
    for i in range(k):
        for j in range(k):
            chol_inv[i, j] = x[i, j]
    a_inv = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            acc = 0.0
            for p in range(k):
                acc += x[p, i] * x[p, j]
            a_inv[i, j] = acc
    bvec = np.zeros(k)
    gb = 0.0
    for i in range(k):
        acc = 0.0
        for j in range(k):
            acc += a_inv[i, j] * g[j]
        bvec[i] = acc
        gb += g[i] * acc
        cond_mean[i] = -acc
    lp = -0.5 * big_l - logdet + 0.5 * gb - (k - 1) * theta[ns - 1]
    # G = bt bt' + P A^{-1} P', bt = e0 - P b
    bt = np.zeros(d)
    bt[0] = 1.0
    for a in range(d):
        for c in range(k):
            bt[a] -= p_mat[a, c] * bvec[c]
    pa = np.zeros((d, k))
    for a in range(d):
        for c in range(k):
            acc = 0.0
            for c2 in range(k):
                acc += p_mat[a, c2] * a_inv[c2, c]
            pa[a, c] = acc
    big_g = np.empty((d, d))
    gs = 0.0
    for a in range(d):
        for b in range(d):
            acc = bt[a] * bt[b]
            for c in range(k):
                acc += pa[a, c] * p_mat[b, c]
            big_g[a, b] = acc
            gs += acc * s_mat[a, b]
    dl_de = np.zeros(h_n)
    for h in range(h_n):
        acc = -cps[h] / eh[h]
        for a in range(d):
            for b in range(d):
                acc += big_g[a, b] * m_h[h, a, b]
        dl_de[h] = acc
    dsa = 0.0
    gq = np.empty(d)
    for i in range(n):
        qgq = 0.0
        for a in range(d):
            acc = 0.0
            for b in range(d):
                acc += big_g[a, b] * q[i, b]
            gq[a] = acc
            qgq += acc * q[i, a]
        inv_u = 1.0 / u[i]
        dsa += (w[i] - qgq * inv_u) * inv_u
        for h in range(h_n):
            vgq = 0.0
            for a in range(d):
                vgq += v[i, h, a] * gq[a]
            dl_de[h] += (s2a * m_count[i, h] * inv_u - 2.0 * s2a * vgq * inv_u
                         + s2a * s2a * m_count[i, h] * qgq * inv_u * inv_u)
    cg = np.zeros((h_n, h_n))
    for p in range(n_blk):
        for h in range(h_n):
            for h2 in range(h_n):
                cg[h, h2] = 0.0
                if blk_m[p, h] == 0.0 or blk_m[p, h2] == 0.0:
                    continue
                acc = 0.0
                for a in range(d):
                    for b in range(d):
                        acc += big_g[a, b] * blk_t[p, h, h2, a, b]
                cg[h, h2] = acc
        qgq = 0.0
        for h in range(h_n):
            for h2 in range(h_n):
                qgq += eh[h] * eh[h2] * cg[h, h2]
        inv_u = 1.0 / u_b[p]
        dsa += (blk_n[p] * w_b[p] - qgq * inv_u) * inv_u
        for h in range(h_n):
            vgq = 0.0
            for h2 in range(h_n):
                vgq += eh[h2] * cg[h2, h]
            dl_de[h] += (blk_n[p] * s2a * blk_m[p, h] * inv_u - 2.0 * s2a * vgq * inv_u
                         + s2a * s2a * blk_m[p, h] * qgq * inv_u * inv_u)
    dl_ds2e = -0.5 * ((n_obs - n_cells) / s2e - gs / (s2e * s2e))
    dl_ds2b = 0.0
    for h in range(h_n):
        dl_de[h] *= -0.5
        dl_ds2e -= dl_de[h] * eh[h] * eh[h] / sizes[h]
        dl_ds2b -= dl_de[h] * eh[h] * eh[h]
    out[0] = -0.5 * dsa * 2.0 * s2a
    if has_gen:
        out[1] = dl_ds2b * 2.0 * s2b
    out[ns - 2] = dl_ds2e * 2.0 * s2e
    acc = 0.0
    for c in range(1, k):
        acc += a_inv[c, c] + bvec[c] * bvec[c]
    out[ns - 1] = acc / (s_g * s_g) - (k - 1)
    for i in range(ns):
        r2 = (np.exp(theta[i]) / scales[i]) ** 2
        lp += -0.5 * (NU + 1.0) * np.log1p(r2 / NU) + theta[i]
        out[i] += 1.0 - (NU + 1.0) * r2 / (NU + r2)
    if not np.isfinite(lp):
        return -np.inf
    for i in range(ns):
        if not np.isfinite(out[i]):
            return -np.inf
    return lp


def _marginal_kernel() -> Any:
    kernel_helpers_jitable()
    return jit_kernel("marginal", _marginal_loops)


#: The variables a marginal density's sampler stores per draw besides the scales: the exact conditional normal of
#: x = (mu - ybar, z) given them, its mean and L^{-1} (covariance L^{-T} L^{-1}).
COND_MEAN, COND_CHOL_INV = "conditional_mean", "conditional_chol_inv"


class _ConditionalDraws:
    """(mu, gamma) drawn after sampling, for the marginal densities (over the scales alone).

    The sampler stores, per draw, the scales and the conditional normal of x = (mu - ybar, z) given them
    (:meth:`conditional_expand`; compiled callbacks write the same variables, :mod:`cjstats.estimators.bayes.native`);
    :meth:`conditional_draws` then draws x = mean + L^{-T} e, e ~ N(0, I) from
    ``numpy.random.default_rng([seed, chain])`` (one stream per chain, set by the fit's seed: nutpie hands every
    chain's Python expand function the same seeds, so a stream made there repeats across chains and fits), and
    writes the model's variables (:meth:`_outputs`).
    A subclass has ``evaluate``, ``sigmas``, ``sigma_names``, ``basis``, ``k``, ``st`` and ``_outputs``.

    Used by both marginal densities, the paper model's (:class:`MarginalDensity`) and the scenario x judge one.
    The paper model's density drew (mu, gamma) inside nutpie's expand function until 2026-12-07, from a stream
    made of nutpie's seeds, which are (0, 0, 0) for every chain and fit: every chain and seed then carried the same
    Monte Carlo error in mu and the judge offsets, and their ESS and r_hat were overstated.
    """

    def draw_conditional(self, theta: np.ndarray, rng: np.random.Generator) -> tuple[float, np.ndarray]:
        """One exact draw of (mu, gamma) given the scales' coordinates ``theta``: x = mean + L^{-T} e has
        covariance (L L')^{-1}."""
        _, _, mean, chol_inv = self.evaluate(theta)
        x = mean + chol_inv.T @ rng.standard_normal(self.k)
        return float(x[0] + self.st.ybar), self.basis @ x[1:]

    def expand(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """The stored variables of one draw at ``theta``, (mu, gamma) drawn from ``default_rng(0)`` (a probe; the
        sampler's draws come from :meth:`conditional_draws`)."""
        theta = np.asarray(theta, dtype=np.float64)
        mu, g = self.draw_conditional(theta, np.random.default_rng(0))
        return self._outputs(mu, dict(zip(self.sigma_names, self.sigmas(theta))), g)

    def conditional_layout(self) -> tuple[list[str], list[tuple[int, ...]], dict[str, list[str]],
                                          dict[str, tuple[str, ...]]]:
        """Names, shapes, coords and dims of what the sampler stores per draw."""
        k = self.k
        names = [*self.sigma_names, COND_MEAN, COND_CHOL_INV]
        shapes = [()] * len(self.sigma_names) + [(k,), (k, k)]
        coords = {"x_row": [str(i) for i in range(k)], "x_col": [str(i) for i in range(k)]}
        return names, shapes, coords, {COND_MEAN: ("x_row",), COND_CHOL_INV: ("x_row", "x_col")}

    def conditional_expand(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """What the sampler stores for the draw at ``theta`` (NaN for the conditional at a zero-density point)."""
        theta = np.asarray(theta, dtype=np.float64)
        lp, _, mean, lb_inv = self.evaluate(theta)
        if not math.isfinite(lp):
            mean, lb_inv = np.full(self.k, math.nan), np.full((self.k, self.k), math.nan)
        out = {nm: np.asarray(v) for nm, v in zip(self.sigma_names, self.sigmas(theta))}
        out[COND_MEAN], out[COND_CHOL_INV] = mean, lb_inv
        return out

    def conditional_draws(self, tree: Any, *, names: list[str], seed: int, judge: list[Any]) -> None:
        """Replace the stored posterior of ``tree`` by the model's variables ``names`` (in that order)."""
        import xarray as xr

        post = tree.posterior.to_dataset()
        mean = np.asarray(post[COND_MEAN].transpose("chain", "draw", "x_row").values)
        lb_inv = np.asarray(post[COND_CHOL_INV].transpose("chain", "draw", "x_row", "x_col").values)
        sig = {nm: np.asarray(post[nm].transpose("chain", "draw").values) for nm in self.sigma_names}
        n_chain, n_draw, k = mean.shape
        x = np.empty_like(mean)
        for c in range(n_chain):
            eps = np.random.default_rng([int(seed), c]).standard_normal((n_draw, k))
            x[c] = mean[c] + np.einsum("dij,di->dj", lb_inv[c], eps)       # mean + L^{-T} e
        out = self._outputs(x[..., 0] + self.st.ybar, sig, x[..., 1:] @ self.basis.T)    # all draws at once
        dims = self.expanded_dims()
        data = {nm: (("chain", "draw", *dims.get(nm, ())), np.asarray(out[nm], dtype=np.float64)) for nm in names}
        coords = {"chain": post["chain"].values, "draw": post["draw"].values, "judge": list(judge), **self.coords()}
        tree["posterior"] = xr.DataTree(xr.Dataset(data, coords=coords, attrs=post.attrs))


class MarginalDensity(_ConditionalDraws, _CollapsedOutputs):
    r"""The Gaussian model with alpha, beta, mu and gamma all integrated out: a density over the log scales.

    Given the variances, the collapsed likelihood (module docstring) is a quadratic form in
    beta = (1, -(mu - ybar), -gamma) with matrix Phi(s2), and the priors mu ~ N(ybar, s_mu^2),
    gamma = H z with z ~ N(0, sigma_gamma^2 I) are Gaussian, so (mu, z) can be integrated out exactly. With
    beta = e0 + P (mu - ybar, z), A = P' Phi P + diag(1/s_mu^2, 1/sigma_gamma^2, ...) and g = P' Phi e0:

        log p(s2 | X) = const - 1/2 [(N - C) log s2_eps + sum_h C_h log d_h + sum_i log u_i + Phi_00]
                        - 1/2 log|A| + 1/2 g' A^{-1} g - (K - 1) log sigma_gamma + log priors + Jacobians

    and (mu - ybar, z) | s2, X ~ N(-A^{-1} g, A^{-1}) exactly. NUTS samples the 3 or 4 log scales; each draw
    then gets (mu, gamma) from that conditional normal, so the draws are from the same joint posterior as the
    PyMC model, without the funnel between sigma_gamma and gamma (weak judge effects) or the steep wall of
    log sigma_gamma given gamma (strong ones). The gradient is analytic: with G = E[beta beta' | s2, X],
    d log p = -1/2 <G, dPhi> + (direct terms).

    Coordinates: ``log sigma_scenario``, [``log sigma_generation``], ``log sigma_residual``, ``log sigma_judge``.
    """

    def __init__(self, st: GaussianStats, priors: GaussianPriors, *, compiled: bool = True) -> None:
        self.st = st
        self.priors = priors
        self.k = st.k
        self.basis = zerosum_basis(st.k)
        self.sigma_names = self._sigma_names(st.has_generation)
        self.scales = np.array([getattr(priors, nm) for nm in self.sigma_names], dtype=np.float64)
        self.ndim = len(self.sigma_names)
        k, d = st.k, st.k + 2
        s_mat = np.zeros((d, d))
        s_mat[0, 0] = st.ssw0
        s_mat[0, 2:] = st.b_w
        s_mat[2:, 0] = st.b_w
        s_mat[2:, 2:] = st.g_w
        self.s_mat = s_mat
        p_mat = np.zeros((d, k))
        p_mat[1, 0] = -1.0
        p_mat[2:, 1:] = -self.basis
        self.p_mat = p_mat
        self._log_sd = math.log(st.sd) if st.sd > 0 else 0.0
        self.kernel = _marginal_kernel() if compiled else None
        if self.kernel is not None:  # compile (or load from the on-disk cache) now, quietly
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.logp(self.initial_point(np.random.default_rng(0)))

    def _args(self, *, blocks: bool) -> tuple:
        st = self.st
        v, m = (st.single_v, st.single_m) if blocks else (st.v, st.m_count)
        return (self.scales, st.has_generation, float(self.priors.mu), st.k, self.s_mat, st.m_h, v, m,
                st.sizes, st.cells_per_size, float(st.n_obs), float(st.n_cells), self.p_mat)

    def evaluate(self, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """(log density, gradient, conditional mean of (mu - ybar, z), L^{-1} with L L' = A)."""
        theta = np.asarray(theta, dtype=np.float64)
        if self.kernel is None:
            if not np.all(np.abs(theta - self._log_sd) <= LOG_SCALE_BOUND):
                return -math.inf, np.zeros_like(theta), np.zeros(self.k), np.eye(self.k)
            try:
                return _marginal_numpy(theta, *self._args(blocks=False))
            except np.linalg.LinAlgError:
                return -math.inf, np.zeros_like(theta), np.zeros(self.k), np.eye(self.k)
        out = np.empty_like(theta)
        mean = np.empty(self.k)
        chol_inv = np.zeros((self.k, self.k))
        st = self.st
        lp = self.kernel(theta, *self._args(blocks=True), st.blk_t, st.blk_m, st.blk_n,
                         self._log_sd - LOG_SCALE_BOUND, self._log_sd + LOG_SCALE_BOUND, out, mean, chol_inv)
        return lp, out, mean, chol_inv

    def logp(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        lp, grad = self.evaluate(theta)[:2]
        if not math.isfinite(lp):  # the compiled kernel also returns -inf for a non-finite gradient
            return -math.inf, np.zeros(self.ndim)
        if self.kernel is None and not np.all(np.isfinite(grad)):
            return -math.inf, np.zeros(self.ndim)
        return lp, grad

    def sigmas(self, theta: np.ndarray) -> np.ndarray:
        """The scales at the coordinates ``theta`` (log scales)."""
        return np.exp(np.asarray(theta, dtype=np.float64))

    def initial_point(self, rng: np.random.Generator) -> np.ndarray:
        sd = self.st.sd if self.st.sd > 0 else 1.0
        return math.log(0.5 * sd) + rng.uniform(-1.0, 1.0, self.ndim)


# --------------------------------------------------------------------------------------------- PyMC model
