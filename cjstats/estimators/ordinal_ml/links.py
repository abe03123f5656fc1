r"""The two cumulative links of the maximum-likelihood ordinal model: the stable log-probability of a category
and its first two derivatives in the linear predictor.

For a row with linear predictor eta and category bounds u = c_k - eta (upper) and l = c_{k-1} - eta (lower),
u = +inf for the top category and l = -inf for the bottom one,

    log P(Y = k) = log(F(u) - F(l)),
    d/deta  log P = -(f(u) - f(l)) / P,
    d2/deta2 log P = (f'(u) - f'(l)) / P - (d/deta log P)^2,
    d3/deta3 log P = -(f''(u) - f''(l)) / P + 3 p_D p_DD - 2 p_D^3,
    p_D = (f(u) - f(l)) / P,   p_DD = (f'(u) - f'(l)) / P,

(the third from (log P)''' = P'''/P - 3 P'' P'/P^2 + 2 (P'/P)^3; it is -(lp_uDD + lp_lDD) of
:func:`log_prob_partials`), with F the standard logistic (``"logit"``) or normal (``"probit"``) distribution,
f its density and f', f'' the density's derivatives (logit: f' = f (1 - 2F), f'' = f ((1 - 2F)^2 - 2f);
probit: f' = -x f, f'' = (x^2 - 1) f). The logit difference is computed as
log sigma(u) + log sigma(-l) + log(1 - exp(l - u)), as in :mod:`cjstats.estimators.bayes.ordinal` (whose
density is logit-only and fused into its sampler's kernel, so it is not reused here); the probit difference
is taken in whichever tail keeps both terms away from 1 (log Phi(u) + log(1 - Phi(l)/Phi(u)), or the mirror
image when l > 0). Both are log-concave in eta (Pratt 1981), which makes the per-scenario Newton step of
:mod:`cjstats.estimators.ordinal_ml.likelihood` safe. Reference: Agresti (2010), *Analysis of Ordinal
Categorical Data*, ch. 5; Christensen (2019), ``ordinal`` package vignette.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

# the latent residual variance each link fixes: one table for both ordinal backends
from cjstats.results.likelihoods import RESIDUAL_VARIANCE

__all__ = ["LINKS", "RESIDUAL_VARIANCE", "log_prob", "log_prob_partials", "cdf", "quantile"]

LINKS = ("probit", "logit")
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def cdf(x: np.ndarray, link: str) -> np.ndarray:
    """F(x) for the link."""
    if link == "logit":
        return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=np.float64)))
    from scipy.special import ndtr

    return ndtr(x)


def quantile(p: np.ndarray, link: str) -> np.ndarray:
    """F^{-1}(p) for the link."""
    p = np.asarray(p, dtype=np.float64)
    if link == "logit":
        return np.log(p) - np.log1p(-p)
    from scipy.special import ndtri

    return ndtri(p)


def _log_pdf(x: np.ndarray, link: str) -> np.ndarray:
    """log f(x), -inf at +-inf."""
    with np.errstate(invalid="ignore"):
        if link == "logit":
            out = _log_sigmoid(x) + _log_sigmoid(-x)
        else:
            out = -0.5 * x * x - _LOG_SQRT_2PI
    return np.where(np.isfinite(x), out, -np.inf)


def _dpdf_over_pdf(x: np.ndarray, link: str) -> np.ndarray:
    """f'(x) / f(x) (0 where x is infinite: f' f/P -> 0 there)."""
    xf = np.where(np.isfinite(x), x, 0.0)
    if link == "logit":
        return -np.tanh(0.5 * xf)           # 1 - 2 sigma(x)
    return -xf


def _d2pdf_over_pdf(x: np.ndarray, link: str) -> np.ndarray:
    """f''(x) / f(x) (0 where x is infinite). logit: (1 - 2F)^2 - 2F(1 - F) = tanh^2(x/2) - 2 f(x);
    probit: x^2 - 1."""
    xf = np.where(np.isfinite(x), x, 0.0)
    if link == "logit":
        t = np.tanh(0.5 * xf)
        return t * t - 0.5 * (1.0 - t * t)      # f = F (1 - F) = (1 - tanh^2(x/2)) / 4
    return xf * xf - 1.0


def log_prob(u: np.ndarray, lo: np.ndarray, link: str, *, derivatives: int = 2
             ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """log P(Y = k) = log(F(u) - F(lo)) and its first and second derivatives in eta (u = c_k - eta,
    lo = c_{k-1} - eta, with +-inf at the ends); ``derivatives`` = 0, 1 or 2 says how many to compute."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if link == "logit":
            lp = _log_sigmoid(u) + _log_sigmoid(-lo) + np.log(-np.expm1(lo - u))
        else:
            upper = lo > 0.0
            a = np.where(upper, -lo, u)          # the larger cdf of the pair, mirrored into the lower tail
            b = np.where(upper, -u, lo)
            la, lb = log_ndtr(a), log_ndtr(b)
            lp = la + np.log(-np.expm1(lb - la))
        if derivatives == 0:
            return lp, None, None
        ru = np.exp(_log_pdf(u, link) - lp)      # f(u) / P
        rl = np.exp(_log_pdf(lo, link) - lp)     # f(lo) / P
        d1 = -(ru - rl)
        if derivatives == 1:
            return lp, d1, None
        d2 = ru * _dpdf_over_pdf(u, link) - rl * _dpdf_over_pdf(lo, link) - d1 * d1
    return lp, d1, d2


def log_prob_partials(u: np.ndarray, lo: np.ndarray, link: str, *, order: int = 3) -> dict[str, np.ndarray]:
    r"""log P = log(F(u) - F(lo)) and its partial derivatives in the two bounds, for the analytic gradients of
    the adaptive-quadrature likelihood (:func:`cjstats.estimators.ordinal_ml.likelihood.agq_value_and_grad`) and of
    the nested Laplace likelihood (:func:`cjstats.estimators.ordinal_ml.nested.laplace_grad`).

    With D = d/du + d/dlo (a common shift of both bounds; d/da = -D for a scenario effect a), r_u = f(u)/P,
    r_l = f(lo)/P, s_. = f'(.)/P, t_. = f''(.)/P, p_D = r_u - r_l and p_DD = s_u - s_l:

        lp_u = r_u,  lp_l = -r_l,  lp_D = p_D,
        lp_uD = s_u - r_u p_D,   lp_lD = -s_l + r_l p_D,
        lp_uDD = t_u - 2 s_u p_D - r_u p_DD + 2 r_u p_D^2,   lp_lDD = -t_l + 2 s_l p_D + r_l p_DD - 2 r_l p_D^2,

    from the rule for third derivatives of a logarithm in mixed directions,
    (log P)_vwx = P_vwx/P - (P_vw P_x + P_vx P_w + P_wx P_v)/P^2 + 2 P_v P_w P_x/P^3, with P_u = f(u),
    P_lo = -f(lo) and every mixed partial of P in (u, lo) zero. Entries at an infinite bound are 0. The
    derivatives in the linear predictor eta (d/deta = -D) follow: d log P/deta = -(lp_u + lp_l),
    d2/deta2 = lp_uD + lp_lD and the third

        d3/deta3 log P = -(lp_uDD + lp_lDD) = -(t_u - t_l) + 3 p_D p_DD - 2 p_D^3

    (tested against central differences of ``log_prob``'s second derivative in
    tests/estimators/test_ordinal_ml_nested_grad.py).
    ``order`` = 1 returns ``lp``, ``u``, ``l``; 2 adds ``uD``, ``lD``; 3 adds ``uDD``, ``lDD``.
    """
    lp = log_prob(u, lo, link, derivatives=0)[0]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ru = np.exp(_log_pdf(u, link) - lp)
        rl = np.exp(_log_pdf(lo, link) - lp)
        out = {"lp": lp, "u": ru, "l": -rl}
        if order < 2:
            return out
        pd_ = ru - rl
        su = ru * _dpdf_over_pdf(u, link)
        sl = rl * _dpdf_over_pdf(lo, link)
        out["uD"] = su - ru * pd_
        out["lD"] = -sl + rl * pd_
        if order < 3:
            return out
        pdd = su - sl
        tu = ru * _d2pdf_over_pdf(u, link)
        tl = rl * _d2pdf_over_pdf(lo, link)
        pd2 = pd_ * pd_
        out["uDD"] = tu - 2.0 * su * pd_ - ru * pdd + 2.0 * ru * pd2
        out["lDD"] = -tl + 2.0 * sl * pd_ + rl * pdd - 2.0 * rl * pd2
    return out
