r"""The cumulative-link (ordinal) model of the Bayesian backend: logit (below) or probit.

A helper of :mod:`cjstats.estimators.bayes`, with one public function: :func:`expected_score`, the model's
score-scale panel mean for given latent parameters, which the backend reports as ``mu`` and the decision
layer's posterior-predictive simulation (:mod:`cjstats.decisions.predictive`) uses as its estimand; the rest is
the backend's own. Only numpy is needed here; PyMC is imported inside
:func:`cjstats.estimators.bayes.pymc_model.build_pymc_ordinal`.

Judge scores are bounded ordered categories (the limitation the paper states for its linear model, Eq. 1,
``eq:model``). This model keeps the same effects but puts them on a latent logistic scale. For observation r
(scenario i, cell c = (i, j), judge l) with score category Y_r in 0..J-1 (the distinct observed scores, sorted):

    eta_r = alpha_i + beta_ij + gamma_l,
    P(Y_r <= k) = logistic(c_k - eta_r),   k = 0..J-2,   c_0 < c_1 < ... < c_{J-2}

    alpha = sigma_alpha * ZeroSum(z_alpha),  z_alpha ~ N(0, I)   (non-centred, zero-sum: the cutpoints carry
                                                                   the location, so mean(alpha) is not separately
                                                                   identified; fixing it to 0 removes that ridge)
    beta_ij = sigma_beta * z_beta_ij,        z_beta ~ N(0, 1)    (non-centred; omitted when m = 1)
    gamma ~ ZeroSumNormal(sigma_gamma)
    sigma_* ~ HalfStudentT(3, 2),  c ~ N(0, 5^2) restricted to increasing order (PyMC's ``ordered`` transform)

The latent residual is standard logistic, variance pi^2/3: that is the unit of the latent scale, so the
``residual`` row reports it as fixed, not estimated. ``scenario`` = sigma_alpha^2, ``generation`` =
sigma_beta^2, ``judge_panel`` = mean(gamma_l^2), ``judge_population`` = sigma_gamma^2 are latent variances.
``mu`` is reported on the score scale: the panel's expected score for a new scenario and generation,

    mu = (1/K) sum_l  E_e [ sum_k v_k P(Y = k | eta = e + gamma_l) ],   e ~ N(0, sigma_alpha^2 + sigma_beta^2)

(v_k the score of category k), computed per draw by Gauss-Hermite quadrature. Because the scenario effects
sum to zero over the n observed scenarios, the cutpoints sit at their mean; each draw therefore also shifts
the latent location by delta ~ N(0, sigma_alpha^2 / n), the distance between the observed and the population
mean of alpha, so that mu carries the sigma_alpha^2 / n of Proposition 1 as the Gaussian model's mu does.

With ``link="probit"`` the logistic F above is the standard normal Phi (latent residual variance 1, the scale
of the maximum-likelihood ``method="ordinal"``): log P(Y = k) = log(Phi(u) - Phi(l)), taken from erfc in the tail
that keeps both terms away from 1 (the upper one when l > 0), and beyond 20 latent units, where erfc underflows,
from the asymptotic series of log Phi; d/du = phi(u) / P, d/dl = -phi(l) / P.

Log density (logit): with u = c_k - eta and l = c_{k-1} - eta (u = +inf for the top category, l = -inf for the
bottom one), log P(Y = k) = log sigma(u) + log sigma(-l) + log(1 - exp(l - u)), stable at both ends; its
derivatives are d/du = sigma(-u) + 1/expm1(u - l) and d/dl = -sigma(l) - 1/expm1(u - l), where u - l is the
cutpoint gap exp(x_k) of the ordered transform.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cjstats.estimators.bayes.gaussian import NU, half_t_logp
from cjstats.exceptions import CjstatsError
from cjstats.io.scores import GroupData
from cjstats.results.likelihoods import LINKS, RESIDUAL_VARIANCE, expected_score, link_cdf  # noqa: F401  (re-exported)

SQRT2 = math.sqrt(2.0)
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

__all__ = [
    "LINKS",
    "OrdinalData",
    "RESIDUAL_VARIANCE",
    "OrdinalDensity",
    "expected_score",
    "link_cdf",
    "location_shift",
    "ordinal_data",
    "zerosum_extend",
    "zerosum_extend_grad",
]


def zerosum_extend(z: np.ndarray) -> np.ndarray:
    """PyMC's ``ZeroSumTransform.backward``: n - 1 values to n values summing to zero, in O(n)."""
    n = z.shape[-1] + 1
    s = z.sum(axis=-1, keepdims=True)
    norm = s / (math.sqrt(n) + n)
    return np.concatenate([z - norm, -s / math.sqrt(n)], axis=-1)


def zerosum_extend_grad(g: np.ndarray) -> np.ndarray:
    """The gradient with respect to z of f(zerosum_extend(z)), given g = df/dalpha (the transpose map)."""
    n = g.shape[-1]
    head = g[..., :-1]
    return head - head.sum(axis=-1, keepdims=True) / (math.sqrt(n) + n) - g[..., -1:] / math.sqrt(n)


@dataclass(frozen=True, slots=True)
class OrdinalData:
    """Codes of one group for the ordinal model."""

    n_obs: int
    n_scenarios: int
    n_cells: int
    k: int
    values: np.ndarray       # (J,) the score of each category
    category: np.ndarray     # (N,) int
    scenario: np.ndarray     # (N,) int
    cell: np.ndarray         # (N,) int
    judge: np.ndarray        # (N,) int
    has_generation: bool


def ordinal_data(g: GroupData) -> OrdinalData:
    from cjstats.estimators.bayes.gaussian import generation_identifiable

    values, category = np.unique(np.asarray(g.y, dtype=np.float64), return_inverse=True)
    return OrdinalData(n_obs=len(g.y), n_scenarios=g.design.n_scenarios, n_cells=len(g.cell_scenario),
                       k=g.design.n_judges, values=values, category=category.astype(np.int64),
                       scenario=np.asarray(g.scenario, dtype=np.int64), cell=np.asarray(g.cell, dtype=np.int64),
                       judge=np.asarray(g.judge, dtype=np.int64), has_generation=generation_identifiable(g))


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _ordinal_loops(theta, n_sig, has_gen, n_scen, n_cells, k, n_cut, basis, s_prior, cut_prior, category, scenario,
                   cell, judge, nu, probit, out):  # pragma: no cover - compiled by numba when available
    """:meth:`OrdinalDensity.logp_numpy` as explicit loops (compiled with numba when available); ``probit``
    selects the link (0: logit, 1: probit)."""

    def log_ndtr(x):                                        # log Phi(x), stable in both tails
        if x > 5.0:
            return np.log1p(-0.5 * math.erfc(x / SQRT2))
        if x > -20.0:
            return np.log(0.5 * math.erfc(-x / SQRT2))
        r = 1.0 / (x * x)                                   # asymptotic series (Abramowitz-Stegun 26.2.12)
        return -0.5 * x * x - LOG_SQRT_2PI - np.log(-x) + np.log1p(r * (-1.0 + r * (3.0 + r * (-15.0 + 105.0 * r))))

    nza = n_scen - 1
    nzb = n_cells if has_gen else 0
    off_za = n_sig
    off_zb = off_za + nza
    off_zg = off_zb + nzb
    off_x = off_zg + k - 1
    for i in range(theta.shape[0]):
        out[i] = 0.0
    s_a = np.exp(theta[0])
    s_b = np.exp(theta[1]) if has_gen else 0.0
    s_g = np.exp(theta[n_sig - 1])
    lp = 0.0
    # priors on the scales (half-Student-t, log transform)
    for i in range(n_sig):
        r2 = (np.exp(theta[i]) / s_prior[i]) ** 2
        lp += -0.5 * (nu + 1.0) * np.log1p(r2 / nu) + theta[i]
        out[i] = 1.0 - (nu + 1.0) * r2 / (nu + r2)
    # alpha = s_a * zerosum(z_a)
    alpha = np.empty(n_scen)
    ssum = 0.0
    for i in range(nza):
        ssum += theta[off_za + i]
    sq = np.sqrt(n_scen)
    norm = ssum / (sq + n_scen)
    for i in range(nza):
        alpha[i] = s_a * (theta[off_za + i] - norm)
        lp -= 0.5 * theta[off_za + i] * theta[off_za + i]
        out[off_za + i] = -theta[off_za + i]
    alpha[n_scen - 1] = -s_a * ssum / sq
    # gamma = basis @ z_g
    gamma = np.zeros(k)
    zz = 0.0
    for a in range(k - 1):
        zg = theta[off_zg + a]
        zz += zg * zg
        for j in range(k):
            gamma[j] += basis[j, a] * zg
    lp += -0.5 * zz / (s_g * s_g) - (k - 1) * theta[n_sig - 1]
    out[n_sig - 1] += zz / (s_g * s_g) - (k - 1)
    for a in range(k - 1):
        out[off_zg + a] -= theta[off_zg + a] / (s_g * s_g)
    if has_gen:
        for c in range(n_cells):
            zb = theta[off_zb + c]
            lp -= 0.5 * zb * zb
            out[off_zb + c] = -zb
    # cutpoints (ordered transform) and their prior
    cut = np.empty(n_cut)
    acc = theta[off_x]
    cut[0] = acc
    for q in range(1, n_cut):
        acc += np.exp(theta[off_x + q])
        cut[q] = acc
        lp += theta[off_x + q]
        out[off_x + q] = 1.0
    dcut = np.zeros(n_cut)
    for q in range(n_cut):
        lp -= 0.5 * (cut[q] / cut_prior) ** 2
        dcut[q] = -cut[q] / (cut_prior * cut_prior)
    # per-category constants: log(1 - exp(-gap)) and 1/expm1(gap)
    lgap = np.zeros(n_cut + 1)
    igap = np.zeros(n_cut + 1)
    for q in range(1, n_cut):
        gap = cut[q] - cut[q - 1]
        lgap[q] = np.log(-np.expm1(-gap))
        igap[q] = 1.0 / np.expm1(gap)
    d_alpha = np.zeros(n_scen)
    d_gamma = np.zeros(k)
    d_sb = 0.0
    for r in range(category.shape[0]):
        eta = alpha[scenario[r]] + gamma[judge[r]]
        if has_gen:
            eta += s_b * theta[off_zb + cell[r]]
        q = category[r]
        deta = 0.0
        if probit:
            # P = Phi(u) - Phi(l) from erfc in the tail that keeps both terms away from 1 (upper when l > 0);
            # beyond 20 latent units, where erfc underflows, in logs (log_ndtr's asymptotic series)
            du = 0.0
            dl = 0.0
            u = cut[q] - eta if q < n_cut else math.inf
            l = cut[q - 1] - eta if q > 0 else -math.inf
            if u > -20.0 and l < 20.0:
                if l > 0.0:
                    pr = 0.5 * (math.erfc(l / SQRT2) - (math.erfc(u / SQRT2) if q < n_cut else 0.0))
                else:
                    pr = 0.5 * ((math.erfc(-u / SQRT2) if q < n_cut else 2.0) - (math.erfc(-l / SQRT2) if q > 0
                                                                                else 0.0))
                lpr = np.log(pr)
                if q < n_cut:
                    du = np.exp(-0.5 * u * u) * INV_SQRT_2PI / pr
                if q > 0:
                    dl = -np.exp(-0.5 * l * l) * INV_SQRT_2PI / pr
            else:
                if l > 0.0:
                    a = log_ndtr(-l)
                    b = log_ndtr(-u) if q < n_cut else -math.inf
                else:
                    a = log_ndtr(u)
                    b = log_ndtr(l) if q > 0 else -math.inf
                lpr = a + np.log(-np.expm1(b - a))
                if q < n_cut:
                    du = np.exp(-0.5 * u * u - LOG_SQRT_2PI - lpr)
                if q > 0:
                    dl = -np.exp(-0.5 * l * l - LOG_SQRT_2PI - lpr)
            if q < n_cut:
                dcut[q] += du
            if q > 0:
                dcut[q - 1] += dl
            lp += lpr
            deta = -(du + dl)
        else:
            # log sigma(u) + log sigma(-l) = -max(-u, 0) - max(l, 0) - log((1 + e^-|u|)(1 + e^-|l|)): one log
            prod = 1.0
            if q < n_cut:
                u = cut[q] - eta
                eu = np.exp(-abs(u))
                prod = 1.0 + eu
                if u > 0:                                   # sigma(-u)
                    su = eu / prod
                else:
                    lp += u
                    su = 1.0 / prod
                du = su + igap[q]
                dcut[q] += du
                deta -= du
            if q > 0:
                l = cut[q - 1] - eta
                el = np.exp(-abs(l))
                if l > 0:                                   # sigma(l)
                    lp -= l
                    sl = 1.0 / (1.0 + el)
                else:
                    sl = el / (1.0 + el)
                prod *= 1.0 + el
                dl = -sl - igap[q]
                dcut[q - 1] += dl
                deta -= dl
            lp += lgap[q] - np.log(prod)
        d_alpha[scenario[r]] += deta
        d_gamma[judge[r]] += deta
        if has_gen:
            out[off_zb + cell[r]] += s_b * deta
            d_sb += theta[off_zb + cell[r]] * deta
    # alpha = s_a * extend(z): d/dz = s_a * extend^T(d_alpha); d/dlog s_a = sum(alpha * d_alpha)
    hsum = 0.0
    dsa = 0.0
    for i in range(n_scen):
        dsa += alpha[i] * d_alpha[i]
    for i in range(nza):
        hsum += d_alpha[i]
    for i in range(nza):
        out[off_za + i] += s_a * (d_alpha[i] - hsum / (sq + n_scen) - d_alpha[n_scen - 1] / sq)
    out[0] += dsa
    if has_gen:
        out[1] += s_b * d_sb
    for a in range(k - 1):
        g = 0.0
        for j in range(k):
            g += basis[j, a] * d_gamma[j]
        out[off_zg + a] += g
    # cutpoints: c_q = x_0 + sum_{p=1..q} exp(x_p)
    tail = 0.0
    for q in range(n_cut - 1, -1, -1):
        tail += dcut[q]
        if q == 0:
            out[off_x] += tail
        else:
            out[off_x + q] += tail * np.exp(theta[off_x + q])
    return lp


def _ordinal_kernel() -> Any:
    from cjstats.estimators.bayes.gaussian import jit_kernel

    return jit_kernel("ordinal", _ordinal_loops)


class OrdinalDensity:
    """Log posterior of the ordinal model on PyMC's unconstrained space, with its gradient.

    Coordinates, in order: ``log sigma_scenario``, [``log sigma_generation``], ``log sigma_judge``; the n - 1
    zero-sum coordinates of the standardised scenario effects; [the C standardised generation effects]; the
    K - 1 zero-sum coordinates of gamma; the J - 1 ordered-transform coordinates of the cutpoints.
    """

    def __init__(self, od: OrdinalData, priors: dict[str, float], *, compiled: bool = True,
                 link: str = "logit") -> None:
        from cjstats.estimators.bayes.gaussian import zerosum_basis

        link_cdf(link)                                      # checks the name
        self.link = link
        self.od = od
        self.priors = priors
        self.k = od.k
        self.basis = zerosum_basis(od.k)
        self.sigma_names = ["sigma_scenario"] + (["sigma_generation"] if od.has_generation else []) + ["sigma_judge"]
        self.s_prior = np.array([priors[nm] for nm in self.sigma_names], dtype=np.float64)
        self.cut_prior = float(priors["cutpoints"])
        self.n_sig = len(self.sigma_names)
        self.n_cut = len(od.values) - 1
        self.nzb = od.n_cells if od.has_generation else 0
        self.ndim = self.n_sig + (od.n_scenarios - 1) + self.nzb + (od.k - 1) + self.n_cut
        self.kernel = _ordinal_kernel() if compiled else None
        if self.kernel is not None:  # compile (or load from the on-disk cache) now, quietly
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.logp(self.initial_point(np.random.default_rng(0)))

    def _split(self, theta: np.ndarray) -> dict[str, Any]:
        od = self.od
        i = self.n_sig
        za = theta[i:i + od.n_scenarios - 1]
        i += od.n_scenarios - 1
        zb = theta[i:i + self.nzb]
        i += self.nzb
        zg = theta[i:i + od.k - 1]
        i += od.k - 1
        x = theta[i:]
        sig = dict(zip(self.sigma_names, np.exp(theta[:self.n_sig])))
        cut = np.concatenate([x[:1], x[:1] + np.cumsum(np.exp(x[1:]))])
        return {**sig, "za": za, "zb": zb, "zg": zg, "x": x, "cut": cut}

    def logp(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        from cjstats.estimators.bayes.gaussian import LOG_SCALE_BOUND

        theta = np.asarray(theta, dtype=np.float64)
        if not (np.all(np.isfinite(theta)) and np.all(np.abs(theta[:self.n_sig]) <= LOG_SCALE_BOUND)
                and np.all(theta[self.ndim - self.n_cut + 1:] <= LOG_SCALE_BOUND)):
            return -math.inf, np.zeros_like(theta)
        if self.kernel is None:
            return self.logp_numpy(theta)
        od = self.od
        out = np.empty_like(theta)
        lp = self.kernel(theta, self.n_sig, od.has_generation, od.n_scenarios, od.n_cells, od.k, self.n_cut,
                         self.basis, self.s_prior, self.cut_prior, od.category, od.scenario, od.cell, od.judge, NU,
                         self.link == "probit", out)
        if not (math.isfinite(lp) and np.all(np.isfinite(out))):
            return -math.inf, np.zeros_like(theta)
        return lp, out

    def logp_numpy(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Reference implementation of :meth:`logp` (numpy)."""
        theta = np.asarray(theta, dtype=np.float64)
        od = self.od
        p = self._split(theta)
        out = np.zeros_like(theta)
        s_a, s_g = p["sigma_scenario"], p["sigma_judge"]
        s_b = p.get("sigma_generation", 0.0)
        lp_s, g_s = half_t_logp(theta[:self.n_sig], self.s_prior)
        lp = float(np.sum(lp_s))
        out[:self.n_sig] = g_s
        za, zb, zg, x, cut = p["za"], p["zb"], p["zg"], p["x"], p["cut"]
        lp += -0.5 * float(za @ za) - 0.5 * float(zb @ zb)
        zz = float(zg @ zg)
        lp += -0.5 * zz / s_g**2 - (od.k - 1) * math.log(s_g)
        lp += float(np.sum(x[1:])) - 0.5 * float(np.sum((cut / self.cut_prior) ** 2))
        alpha = s_a * zerosum_extend(za)
        gamma = self.basis @ zg
        eta = alpha[od.scenario] + gamma[od.judge]
        if od.has_generation:
            eta = eta + s_b * zb[od.cell]
        ext = np.concatenate([[-np.inf], cut, [np.inf]])
        q = od.category
        u = ext[q + 1] - eta
        lo = ext[q] - eta
        gaps = np.concatenate([[np.inf], np.diff(cut), [np.inf]])      # u - l for each category
        with np.errstate(over="ignore", divide="ignore"):
            lg = np.where(np.isfinite(gaps), np.log(-np.expm1(-gaps)), 0.0)
            ig = np.where(np.isfinite(gaps), 1.0 / np.expm1(gaps), 0.0)
        top = q == self.n_cut
        bottom = q == 0
        if self.link == "probit":
            from scipy.special import log_ndtr

            with np.errstate(over="ignore", invalid="ignore"):
                flip = lo > 0
                a = np.where(flip, log_ndtr(-lo), log_ndtr(u))
                b = np.where(flip, log_ndtr(-u), log_ndtr(lo))
                lpr = a + np.log(-np.expm1(b - a))
                lp += float(np.sum(lpr))
                uu = np.where(top, 0.0, u)
                ll = np.where(bottom, 0.0, lo)
                du = np.where(top, 0.0, np.exp(-0.5 * uu * uu - LOG_SQRT_2PI - lpr))
                dl = np.where(bottom, 0.0, -np.exp(-0.5 * ll * ll - LOG_SQRT_2PI - lpr))
        else:
            lsu = np.where(top, 0.0, _log_sigmoid(np.where(top, 0.0, u)))
            lsl = np.where(bottom, 0.0, _log_sigmoid(-np.where(bottom, 0.0, lo)))
            lp += float(np.sum(lsu + lsl + lg[q]))
            du = np.where(top, 0.0, _sigmoid(-np.where(top, 0.0, u)) + ig[q])
            dl = np.where(bottom, 0.0, -_sigmoid(np.where(bottom, 0.0, lo)) - ig[q])
        deta = -(du + dl)
        dcut = -cut / self.cut_prior**2
        dcut += np.bincount(np.where(top, 0, q), weights=du, minlength=self.n_cut + 1)[:self.n_cut]
        dcut += np.bincount(np.where(bottom, 0, q - 1), weights=dl, minlength=self.n_cut + 1)[:self.n_cut]
        d_alpha = np.bincount(od.scenario, weights=deta, minlength=od.n_scenarios)
        d_gamma = np.bincount(od.judge, weights=deta, minlength=od.k)
        i = self.n_sig
        out[0] += float(alpha @ d_alpha)
        out[i:i + od.n_scenarios - 1] = -za + s_a * zerosum_extend_grad(d_alpha)
        i += od.n_scenarios - 1
        if od.has_generation:
            d_b = np.bincount(od.cell, weights=deta, minlength=od.n_cells)
            out[1] += s_b * float(zb @ d_b)
            out[i:i + self.nzb] = -zb + s_b * d_b
        i += self.nzb
        out[self.n_sig - 1] += zz / s_g**2 - (od.k - 1)
        out[i:i + od.k - 1] = self.basis.T @ d_gamma - zg / s_g**2
        i += od.k - 1
        tail = np.cumsum(dcut[::-1])[::-1]
        out[i] = tail[0]
        out[i + 1:] = 1.0 + tail[1:] * np.exp(x[1:])
        if not math.isfinite(lp):
            return -math.inf, np.zeros_like(theta)
        return lp, out

    def expand(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        p = self._split(np.asarray(theta, dtype=np.float64))
        g = self.basis @ p["zg"]
        out = {nm: np.asarray(p[nm]) for nm in self.sigma_names}
        out["gamma"] = g
        out["cutpoints"] = p["cut"]
        out["scenario"] = np.asarray(p["sigma_scenario"] ** 2)
        if self.od.has_generation:
            out["generation"] = np.asarray(p["sigma_generation"] ** 2)
        out["judge_panel"] = np.asarray(float(g @ g) / self.k)
        out["judge_population"] = np.asarray(p["sigma_judge"] ** 2)
        return out

    def expanded_names(self) -> list[str]:
        names = [*self.sigma_names, "gamma", "cutpoints", "scenario"]
        if self.od.has_generation:
            names.append("generation")
        return names + ["judge_panel", "judge_population"]

    def expanded_dims(self) -> dict[str, tuple[str, ...]]:
        return {"gamma": ("judge",), "cutpoints": ("cutpoint",)}

    def coords(self) -> dict[str, list[Any]]:
        v = self.od.values
        return {"cutpoint": [f"{v[i]:g}|{v[i + 1]:g}" for i in range(len(v) - 1)]}

    def initial_point(self, rng: np.random.Generator) -> np.ndarray:
        """Jittered start: scales near 1, effects near 0, cutpoints at the empirical logits."""
        od = self.od
        theta = np.empty(self.ndim)
        theta[:self.n_sig] = rng.uniform(-1.0, 0.5, self.n_sig)
        i = self.n_sig
        m = od.n_scenarios - 1 + self.nzb + od.k - 1
        theta[i:i + m] = rng.uniform(-0.5, 0.5, m)
        i += m
        freq = np.bincount(od.category, minlength=self.n_cut + 1) / od.n_obs
        cum = np.clip(np.cumsum(freq)[:-1], 1e-3, 1 - 1e-3)
        if self.link == "probit":
            from scipy.special import ndtri

            cut = ndtri(cum) + rng.uniform(-0.2, 0.2)
        else:
            cut = np.log(cum / (1 - cum)) + rng.uniform(-0.2, 0.2)
        cut = np.maximum.accumulate(cut + np.arange(self.n_cut) * 1e-3)
        theta[i] = cut[0]
        theta[i + 1:] = np.log(np.maximum(np.diff(cut), 1e-3))
        return theta


def location_shift(s2_alpha: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draws of the population location relative to the observed scenarios, one per posterior draw.

    The zero-sum scenario effects put the cutpoints at the mean of the n observed scenarios; the population
    mean of alpha differs from it by delta ~ N(0, sigma_alpha^2 / n). Adding delta to each draw carries that
    uncertainty into ``mu``, as the Gaussian model's mu carries sigma_alpha^2 / n (Proposition 1).
    """
    s2 = np.asarray(s2_alpha, dtype=np.float64)
    return rng.standard_normal(s2.shape) * np.sqrt(s2 / n)
