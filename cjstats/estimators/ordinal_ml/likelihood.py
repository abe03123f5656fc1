r"""The marginal likelihood of the cumulative link mixed model for one model (x criterion) unit.

Model (row r: scenario i, judge l, score category Y_r in 0..J-1, the distinct observed scores sorted):

    P(Y_r <= k | alpha_i) = F(theta_{k} - gamma_l - alpha_i),   k = 0..J-2,   alpha_i ~ N(0, s_a^2),

with F the link's distribution (:mod:`.links`). ``thresholds="shared"``: one increasing set theta_0 < ... <
theta_{J-2} and judge offsets gamma_l, reference-coded in the optimiser (gamma of the first judge = 0, as R's
treatment contrasts) and reported panel-centred (sum to zero; the thresholds shift by the mean offset).
``thresholds="judge"``: an increasing set theta_{l,k} per judge and no gamma (a judge that uses the scale
differently is not a shift) -- R's ``clmm2(..., nominal = ~judge)``.

The likelihood is L = prod_i int prod_{r in i} P(Y_r | a) phi(a; 0, s_a^2) da, one one-dimensional integral
per scenario, computed by adaptive Gauss-Hermite quadrature (Liu & Pierce 1994; Pinheiro & Bates 1995): with
g_i(a) the log integrand, a_i its mode (a vectorised, safeguarded Newton iteration over all scenarios at
once: g_i is concave because both links are log-concave) and h_i = -g_i''(a_i),

    log L_i ~= log sum_q w_q exp(g_i(a_i + z_q / sqrt h_i) + z_q^2 / 2) - (1/2) log h_i,

(z_q, w_q) the Gauss-Hermite rule for the weight exp(-z^2/2); ``nagq = 1`` is the Laplace approximation
(z = 0, w = sqrt(2 pi)), the definition lme4 and ordinal use.

Optimiser parameters (unconstrained): ``log s_a``, the reference-coded offsets gamma_2..K (shared thresholds
only) and, per threshold set, theta_0 and log(theta_k - theta_{k-1}).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cjstats.estimators.ordinal_ml.links import log_prob

__all__ = ["OrdinalProblem", "make_problem", "unpack", "neg_loglik", "scenario_modes"]

_LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class OrdinalProblem:
    """The codes of one unit and the model's options."""

    category: np.ndarray      # (N,) 0..J-1
    scenario: np.ndarray      # (N,) 0..n-1
    judge: np.ndarray         # (N,) 0..K-1
    n_scenarios: int
    n_judges: int
    n_categories: int
    link: str
    thresholds: str           # "shared" | "judge"
    nagq: int

    @property
    def n_sets(self) -> int:
        return self.n_judges if self.thresholds == "judge" else 1

    @property
    def n_gamma(self) -> int:
        return self.n_judges - 1 if self.thresholds == "shared" else 0

    @property
    def n_params(self) -> int:
        return 1 + self.n_gamma + self.n_sets * (self.n_categories - 1)


def make_problem(category, scenario, judge, *, n_scenarios: int, n_judges: int, n_categories: int, link: str,
                 thresholds: str, nagq: int) -> OrdinalProblem:
    return OrdinalProblem(np.asarray(category, dtype=np.int64), np.asarray(scenario, dtype=np.int64),
                          np.asarray(judge, dtype=np.int64), int(n_scenarios), int(n_judges), int(n_categories),
                          link, thresholds, int(nagq))


def unpack(p: OrdinalProblem, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(log s_a, gamma (K,) reference-coded, thresholds (n_sets, J-1)) from the optimiser's vector."""
    x = np.asarray(x, dtype=np.float64)
    log_s = float(x[0])
    gamma = np.zeros(p.n_judges)
    gamma[1:1 + p.n_gamma] = x[1:1 + p.n_gamma]
    raw = x[1 + p.n_gamma:].reshape(p.n_sets, p.n_categories - 1)
    theta = np.cumsum(np.concatenate([raw[:, :1], np.exp(raw[:, 1:])], axis=1), axis=1)
    return log_s, gamma, theta


def _bounds(p: OrdinalProblem, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """s_a and each row's bounds u0 = theta_k - gamma_l, lo0 = theta_{k-1} - gamma_l (before subtracting a)."""
    log_s, gamma, theta = unpack(p, x)
    ext = np.concatenate([np.full((p.n_sets, 1), -np.inf), theta, np.full((p.n_sets, 1), np.inf)], axis=1)
    s = p.judge if p.thresholds == "judge" else np.zeros_like(p.judge)
    g = gamma[p.judge]
    return math.exp(log_s), ext[s, p.category + 1] - g, ext[s, p.category] - g


def _log_integrand(p: OrdinalProblem, u0, lo0, a_rows, a, s2, derivatives):
    lp, d1, d2 = log_prob(u0 - a_rows, lo0 - a_rows, p.link, derivatives=derivatives)
    n = p.n_scenarios
    g = np.bincount(p.scenario, weights=lp, minlength=n) - 0.5 * a * a / s2 - 0.5 * (_LOG_2PI + math.log(s2))
    if derivatives == 0:
        return g, None, None
    g1 = np.bincount(p.scenario, weights=d1, minlength=n) - a / s2      # d/da = d/deta (eta = gamma + a)
    g2 = np.bincount(p.scenario, weights=d2, minlength=n) - 1.0 / s2
    return g, g1, g2


def scenario_modes(p: OrdinalProblem, x: np.ndarray, *, tol: float = 1e-10, max_iter: int = 100
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mode a_i, curvature h_i = -g_i''(a_i) and g_i(a_i) per scenario (safeguarded Newton, all at once)."""
    s, u0, lo0 = _bounds(p, x)
    s2 = s * s
    a = np.zeros(p.n_scenarios)
    g, g1, g2 = _log_integrand(p, u0, lo0, a[p.scenario], a, s2, 2)
    for _ in range(max_iter):
        step = -g1 / g2
        t = np.ones_like(a)
        for _half in range(40):          # step halving where the concave objective would decrease
            new = a + t * step
            gn = _log_integrand(p, u0, lo0, new[p.scenario], new, s2, 0)[0]
            bad = ~(gn >= g - 1e-12 * np.abs(g))
            if not bad.any():
                break
            t = np.where(bad, 0.5 * t, t)
        a = new
        g, g1, g2 = _log_integrand(p, u0, lo0, a[p.scenario], a, s2, 2)
        if np.max(np.abs(t * step)) < tol:
            break
    return a, -g2, g


def neg_loglik(p: OrdinalProblem, x: np.ndarray, nagq: int | None = None) -> float:
    """-log L by adaptive Gauss-Hermite quadrature with ``nagq`` nodes (1 = Laplace)."""
    q = p.nagq if nagq is None else int(nagq)
    s, u0, lo0 = _bounds(p, x)
    a, h, g = scenario_modes(p, x)
    if q == 1:
        return float(-np.sum(g + 0.5 * _LOG_2PI - 0.5 * np.log(h)))
    z, w = np.polynomial.hermite_e.hermegauss(q)
    sd = 1.0 / np.sqrt(h)
    total = np.empty((q, p.n_scenarios))
    for j in range(q):
        nodes = a + z[j] * sd
        total[j] = _log_integrand(p, u0, lo0, nodes[p.scenario], nodes, s * s, 0)[0] + 0.5 * z[j] ** 2 + math.log(w[j])
    m = total.max(axis=0)
    li = m + np.log(np.exp(total - m).sum(axis=0)) - 0.5 * np.log(h)
    return float(-np.sum(li))
