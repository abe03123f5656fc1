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

The gradient is analytic (:func:`agq_value_and_grad`, differentiated through each scenario's mode and curvature)
and scenarios with the same response pattern are evaluated once (:func:`compress`, exact): docs/ordinal.md, Speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cjstats.estimators.ordinal_ml.links import log_prob

__all__ = ["OrdinalProblem", "make_problem", "compress", "unpack", "neg_loglik", "neg_loglik_grad",
           "agq_value_and_grad", "scenario_modes"]

_LOG_2PI = math.log(2.0 * math.pi)
#: Threshold gaps are exp(raw) with raw capped here (a gap of e^300 is an infinite one on the latent scale, whose
#: unit is the link's residual): an optimiser's trial step toward a category no row of a judge uses sent raw
#: past ~709 and exp overflowed (inf thresholds, then inf * 0 = NaN in the gradient). The capped map is the one
#: differentiated (its derivative is 0 beyond the cap), so value and gradient stay consistent.
MAX_LOG_GAP = 300.0


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
    scenario_weight: np.ndarray | None = None   # (n,) multiplicity of each scenario (``compress``); None = 1

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


def compress(p: OrdinalProblem) -> tuple[OrdinalProblem, np.ndarray]:
    """Scenarios with the same multiset of (judge, category) rows have the same integrand, mode and
    contribution to log L (u0 and lo0 depend on the row only through its judge and category), so the
    likelihood is a weighted sum over the distinct response patterns: returns the problem on one representative
    scenario per pattern, with ``scenario_weight`` = the pattern's number of scenarios, and ``inverse`` (n,)
    mapping every original scenario to its pattern. Exact; for few categories and judges the patterns are few
    (MentalAlign, 4 judges x 1-5: 11-78 patterns among 1,000 scenarios per model)."""
    kj = p.n_judges * p.n_categories
    code = p.judge * p.n_categories + p.category
    w0 = np.ones(p.n_scenarios) if p.scenario_weight is None else np.asarray(p.scenario_weight, dtype=np.float64)
    counts = np.bincount(p.scenario * kj + code, minlength=p.n_scenarios * kj).reshape(p.n_scenarios, kj)
    if p.scenario_weight is not None:          # weighted problems are not merged further (weights stay as given)
        return p, np.arange(p.n_scenarios)
    _, first, inverse = np.unique(counts, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    if first.size == p.n_scenarios:
        return p, np.arange(p.n_scenarios)
    new_id = np.full(p.n_scenarios, -1, dtype=np.int64)
    new_id[first] = np.arange(first.size)
    keep = new_id[p.scenario] >= 0
    weight = np.bincount(inverse, weights=w0, minlength=first.size)
    pc = OrdinalProblem(p.category[keep], new_id[p.scenario[keep]], p.judge[keep], int(first.size), p.n_judges,
                        p.n_categories, p.link, p.thresholds, p.nagq, weight)
    return pc, inverse


def unpack(p: OrdinalProblem, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(log s_a, gamma (K,) reference-coded, thresholds (n_sets, J-1)) from the optimiser's vector."""
    x = np.asarray(x, dtype=np.float64)
    log_s = float(x[0])
    gamma = np.zeros(p.n_judges)
    gamma[1:1 + p.n_gamma] = x[1:1 + p.n_gamma]
    raw = x[1 + p.n_gamma:].reshape(p.n_sets, p.n_categories - 1)
    theta = np.cumsum(np.concatenate([raw[:, :1], np.exp(np.minimum(raw[:, 1:], MAX_LOG_GAP))], axis=1), axis=1)
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
    wt = 1.0 if p.scenario_weight is None else p.scenario_weight
    if q == 1:
        return float(-np.sum(wt * (g + 0.5 * _LOG_2PI - 0.5 * np.log(h))))
    z, w = np.polynomial.hermite_e.hermegauss(q)
    sd = 1.0 / np.sqrt(h)
    total = np.empty((q, p.n_scenarios))
    for j in range(q):
        nodes = a + z[j] * sd
        total[j] = _log_integrand(p, u0, lo0, nodes[p.scenario], nodes, s * s, 0)[0] + 0.5 * z[j] ** 2 + math.log(w[j])
    m = total.max(axis=0)
    li = m + np.log(np.exp(total - m).sum(axis=0)) - 0.5 * np.log(h)
    return float(-np.sum(wt * li))


def _accumulate(p: OrdinalProblem, x: np.ndarray, w_u: np.ndarray, w_l: np.ndarray, d_log_s: float) -> np.ndarray:
    """The gradient in x of sum_r (w_u[r] u0_r + w_l[r] lo0_r) + d_log_s * log s_a (u0, lo0 as in ``_bounds``):
    per-threshold sums by bincount, then the chain rule through theta_k = raw_0 + sum_{m<=k} exp(raw_m)
    (a reversed cumulative sum) and gamma (reference-coded; u0 and lo0 fall by gamma_l)."""
    raw = np.asarray(x[1 + p.n_gamma:], dtype=np.float64).reshape(p.n_sets, p.n_categories - 1)
    j = p.n_categories
    s = p.judge if p.thresholds == "judge" else np.zeros_like(p.judge)
    base = s * (j + 1) + p.category
    ext = (np.bincount(base + 1, weights=w_u, minlength=p.n_sets * (j + 1))
           + np.bincount(base, weights=w_l, minlength=p.n_sets * (j + 1))).reshape(p.n_sets, j + 1)
    dtheta = ext[:, 1:j]                                   # columns 0 and J are the infinite bounds
    draw = np.cumsum(dtheta[:, ::-1], axis=1)[:, ::-1]
    draw[:, 1:] *= np.where(raw[:, 1:] < MAX_LOG_GAP, np.exp(np.minimum(raw[:, 1:], MAX_LOG_GAP)), 0.0)
    dgamma = -np.bincount(p.judge, weights=w_u + w_l, minlength=p.n_judges)
    return np.concatenate([[d_log_s], dgamma[1:1 + p.n_gamma], draw.ravel()])


def agq_value_and_grad(p: OrdinalProblem, x: np.ndarray, a: np.ndarray, h: np.ndarray, nagq: int | None = None,
                       *, grad: bool = True) -> tuple[float, np.ndarray | None]:
    r"""-log L and its exact gradient in x for the adaptive-quadrature approximation, given the scenario modes
    ``a`` (g_i'(a_i) = 0) and curvatures ``h`` = -g_i''(a_i) at x (from :func:`scenario_modes`).

    With sigma_i = h_i^{-1/2}, nodes a_iq = a_i + z_q sigma_i and pi_iq the normalised terms of the sum,

        d log L_i / dx = sum_q pi_iq [g_x(a_iq) + g_a(a_iq)(a_x + z_q sigma_x)] - h_x / (2 h_i),
        a_x = g_ax(a_i) / h_i,   h_x = -(g_aax(a_i) + g_aaa(a_i) a_x),   sigma_x = -sigma_i h_x / (2 h_i),

    (implicit differentiation of g_a(a_i; x) = 0, so the nodes move with the mode and the curvature). Collected
    per scenario: d log L_i = sum_q pi_iq g_x(a_iq) + c1_i g_ax(a_i) + c2_i g_aax(a_i) with
    c2_i = (1 + sigma_i sum_q pi_iq z_q g_a(a_iq)) / (2 h_i) and c1_i = (sum_q pi_iq g_a(a_iq) + c2_i g_aaa) / h_i.
    For ``nagq = 1`` (Laplace) this is g_x(a_i) + g_aax/(2h) + g_aaa g_ax/(2h^2), the Laplace derivative.
    Every row and node is one vectorised array (nodes x rows); per-scenario sums are np.bincount.
    References: Liu & Pierce (1994); Pinheiro & Bates (1995) section 2; Christensen (2019) ordinal, clmm.
    """
    from cjstats.estimators.ordinal_ml.links import log_prob_partials

    q = p.nagq if nagq is None else int(nagq)
    s, u0, lo0 = _bounds(p, x)
    s2 = s * s
    n = p.n_scenarios
    z, w = np.polynomial.hermite_e.hermegauss(q)
    sig = 1.0 / np.sqrt(h)
    nodes = a[None, :] + z[:, None] * sig[None, :]                      # (q, n)
    an = nodes[:, p.scenario]                                          # (q, N)
    part = log_prob_partials(u0[None, :] - an, lo0[None, :] - an, p.link, order=1)
    idx = (np.arange(q)[:, None] * n + p.scenario[None, :]).ravel()
    g = (np.bincount(idx, weights=part["lp"].ravel(), minlength=q * n).reshape(q, n)
         - 0.5 * nodes * nodes / s2 - 0.5 * (_LOG_2PI + math.log(s2)))
    total = g + 0.5 * z[:, None] ** 2 + np.log(w)[:, None]
    m = total.max(axis=0)
    e = np.exp(total - m)
    li = m + np.log(e.sum(axis=0)) - 0.5 * np.log(h)
    wt = np.ones(n) if p.scenario_weight is None else np.asarray(p.scenario_weight, dtype=np.float64)
    value = float(-np.sum(wt * li))
    if not grad:
        return value, None
    pi = e / e.sum(axis=0)                                             # (q, n)
    ga = (np.bincount(idx, weights=-(part["u"] + part["l"]).ravel(), minlength=q * n).reshape(q, n)
          - nodes / s2)                                                # g_a at the nodes
    alpha = (pi * ga).sum(axis=0)
    beta = (pi * ga * z[:, None]).sum(axis=0)
    mode = log_prob_partials(u0 - a[p.scenario], lo0 - a[p.scenario], p.link, order=3)
    g3 = -np.bincount(p.scenario, weights=mode["uDD"] + mode["lDD"], minlength=n)   # g_aaa (prior: 0)
    c2 = 0.5 * (1.0 + sig * beta) / h
    c1 = (alpha + c2 * g3) / h
    pi, c1, c2 = pi * wt, c1 * wt, c2 * wt                             # scenario multiplicities (``compress``)
    pir = pi[:, p.scenario]
    c1r, c2r = c1[p.scenario], c2[p.scenario]
    w_u = (pir * part["u"]).sum(axis=0) - c1r * mode["uD"] + c2r * mode["uDD"]
    w_l = (pir * part["l"]).sum(axis=0) - c1r * mode["lD"] + c2r * mode["lDD"]
    d_log_s = float(np.sum((pi * (nodes * nodes / s2 - 1.0)).sum(axis=0) + c1 * 2.0 * a / s2 + c2 * 2.0 / s2))
    return value, -_accumulate(p, x, w_u, w_l, d_log_s)


def neg_loglik_grad(p: OrdinalProblem, x: np.ndarray, nagq: int | None = None) -> tuple[float, np.ndarray]:
    """(-log L, its gradient in x) by adaptive Gauss-Hermite quadrature (:func:`agq_value_and_grad`)."""
    a, h, _ = scenario_modes(p, x)
    return agq_value_and_grad(p, x, a, h, nagq)
