"""Interval numerics shared by the estimator backends (pure numpy/scipy; no backend imports another).

Noncentrality intervals invert a CDF that decreases in lambda: lambda_L solves P(X <= x_obs; lambda_L) = 1 - a
and lambda_U solves P(X <= x_obs; lambda_U) = a, with a = (1 - level)/2; a bound is 0 when even lambda = 0
puts less probability below x_obs. scipy.special's ufuncs are called directly: the scipy.stats wrappers cost
about 50 times more per call, which matters inside a root search.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

__all__ = ["noncentral_f_interval", "noncentral_chi2_interval", "adjust_p"]

_NAN = float("nan")


def _invert_noncentral(cdf, df1: float, x_obs: float, level: float) -> tuple[float, float]:
    """Bounds on lambda with cdf(x_obs; lambda_L) = 1 - a and cdf(x_obs; lambda_U) = a (cdf decreases in lambda)."""
    a = (1.0 - level) / 2.0
    if not np.isfinite(x_obs):
        return _NAN, _NAN

    def solve(target: float) -> float:
        if cdf(0.0) <= target:
            return 0.0
        # lambda is near x_obs - df1 in expectation; grow an upper bracket from there.
        hi = max(10.0, 2.0 * x_obs + 10.0)
        if np.isnan(cdf(hi)):   # x_obs beyond what the distribution function evaluates (e.g. 1e33): no bound
            return _NAN
        while cdf(hi) > target:
            hi *= 2.0
            if hi > 1e12:
                return _NAN
        return float(optimize.brentq(lambda lam: cdf(lam) - target, 0.0, hi, xtol=1e-10, rtol=1e-12))

    return solve(1 - a), solve(a)


def noncentral_f_interval(f_obs: float, df1: float, df2: float, level: float) -> tuple[float, float]:
    """Interval for the noncentrality lambda of an observed F ~ F'(df1, df2, lambda).

    lambda_L solves P(F' <= f_obs; lambda_L) = 1 - a and lambda_U solves P(F' <= f_obs; lambda_U) = a; a
    bound is 0 when even lambda = 0 puts less probability below f_obs. Exact for the ratio
    lambda = nm sum(gamma^2)/s2_eps.
    """
    def cdf(lam: float) -> float:
        return float(special.fdtr(df1, df2, f_obs)) if lam <= 0 else float(special.ncfdtr(df1, df2, lam, f_obs))

    return _invert_noncentral(cdf, df1, df1 * f_obs, level)


def noncentral_chi2_interval(x_obs: float, df: float, level: float) -> tuple[float, float]:
    """Interval for the noncentrality lambda of an observed X ~ chi2'(df, lambda), by inverting its CDF."""
    def cdf(lam: float) -> float:
        return float(special.chdtr(df, x_obs)) if lam <= 0 else float(special.chndtr(x_obs, df, lam))

    return _invert_noncentral(cdf, df, x_obs, level)


def adjust_p(p: np.ndarray, adjust: str = "holm") -> np.ndarray:
    """Adjusted p-values across a family: Holm's step-down max_{j<=i} min(1, (m - j + 1) p_(j)) (Holm 1979),
    Bonferroni min(1, m p), Benjamini-Hochberg min_{j>=i} min(1, m p_(j) / j) (``"bh"``; 1995), or ``"none"``.

    The one multiplicity adjustment of the package (comparisons, self-preference, drift); written out rather than
    importing statsmodels, whose import alone costs about a second."""
    p = np.asarray(p, dtype=np.float64)
    m = p.size
    if adjust == "none" or m == 0:
        return p.copy()
    if adjust == "bonferroni":
        return np.minimum(1.0, m * p)
    order = np.argsort(p)
    if adjust == "bh":
        ranked = m * p[order] / np.arange(1, m + 1)
        adj = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    else:
        adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out
