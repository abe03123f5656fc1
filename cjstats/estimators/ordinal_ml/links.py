r"""The two cumulative links of the maximum-likelihood ordinal model: the stable log-probability of a category
and its first two derivatives in the linear predictor.

For a row with linear predictor eta and category bounds u = c_k - eta (upper) and l = c_{k-1} - eta (lower),
u = +inf for the top category and l = -inf for the bottom one,

    log P(Y = k) = log(F(u) - F(l)),
    d/deta  log P = -(f(u) - f(l)) / P,
    d2/deta2 log P = (f'(u) - f'(l)) / P - (d/deta log P)^2,

with F the standard logistic (``"logit"``) or normal (``"probit"``) distribution, f its density and f' the
density's derivative (logit: f' = f (1 - 2F); probit: f' = -x f). The logit difference is computed as
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

__all__ = ["LINKS", "RESIDUAL_VARIANCE", "log_prob", "cdf", "quantile"]

LINKS = ("probit", "logit")
#: The latent residual variance each link fixes (the unit of the latent scale).
RESIDUAL_VARIANCE = {"probit": 1.0, "logit": math.pi**2 / 3.0}
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
