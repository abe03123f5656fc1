"""The few distribution functions the package uses, through scipy.special instead of scipy.stats (the one copy).

``import scipy.stats`` costs 0.4-0.5 s in a new process (``scipy.stats._stats_py`` alone about 0.27 s), which a
one-off ``cjstats estimate`` paid for a t quantile or an F tail. Each function here calls the scipy.special
function that scipy.stats 1.18 calls for that distribution (``scipy/stats/_continuous_distns.py``: ``norm._cdf`` is
``ndtr``, ``norm._ppf`` is ``ndtri``, ``chi2._sf`` is ``chdtrc``, ``chi2._ppf`` is ``2*gammaincinv(df/2, p)``,
``t._ppf`` is ``stdtrit``, ``f._sf`` is ``fdtrc``), inside a copy of the argument handling of
``rv_continuous.cdf/sf/ppf/isf`` (``scipy/stats/_distn_infrastructure.py``): NaN for a shape parameter <= 0 or a
NaN argument, the support's edge values outside the open support (sf = 1 at and below the lower end, 0 at the upper
one; ppf(0) and ppf(1) the support's ends, NaN outside [0, 1]), and ``* scale + loc`` with scale 1 and loc 0 (which
turns a -0.0 quantile into +0.0). The results are the same bits as scipy.stats for any argument
(``tests/test_dist.py`` checks a grid with NaN, +-inf, 0, 1 and bad shapes), scalars come back as numpy float64
0-d results as scipy.stats returns them, and arrays broadcast.

A distribution not listed here (``studentized_range``, ``spearmanr``) is imported from scipy.stats inside the
function that needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

__all__ = ["chi2_ppf", "chi2_sf", "f_sf", "norm_cdf", "norm_isf", "norm_ppf", "norm_sf", "t_ppf"]

_INF = np.inf


def _shapes_ok(args: tuple[np.ndarray, ...]) -> Any:
    """``rv_continuous._argcheck``'s default: every shape parameter > 0 (True without shapes)."""
    ok: Any = np.True_
    for a in args:
        ok = np.logical_and(ok, a > 0)
    return ok


def _tail(core: Callable[..., Any], x: Any, args: tuple[Any, ...], lo: float, hi: float, *, sf: bool) -> Any:
    """``rv_continuous.cdf`` (``sf=False``) or ``.sf`` (``sf=True``) on the support [lo, hi] with ``core``.

    ``core(x, *args)`` for lo < x < hi; outside, cdf is 0 below and 1 at x >= hi, sf 1 at x <= lo and 0 above;
    NaN where a shape is <= 0 or x is NaN.
    """
    x = np.asarray(x)
    x = np.asarray(x, dtype=np.promote_types(x.dtype, np.float64))
    args = tuple(np.asarray(a) for a in args)
    ok = _shapes_ok(args)
    with np.errstate(invalid="ignore"):
        inside = (lo < x) & (x < hi)
        edge = (x <= lo) if sf else (x >= hi)
        out = np.where(edge & ok, 1.0, 0.0)
        out = np.where(ok & inside, core(x, *args), out)
        out = np.where(~ok | np.isnan(x), np.nan, out)
    out = np.asarray(out, dtype=x.dtype)
    return out[()] if out.ndim == 0 else out


def _quantile(core: Callable[..., Any], q: Any, args: tuple[Any, ...], at0: float, at1: float) -> Any:
    """``rv_continuous.ppf`` (``at0, at1`` = lower, upper end) or ``.isf`` (upper, lower) with ``core``.

    ``core(q, *args) + 0.0`` for 0 < q < 1 (scipy adds loc = 0, so -0.0 becomes +0.0); ``at0`` at q == 0 and
    ``at1`` at q == 1; NaN elsewhere (q outside [0, 1] or NaN, a shape <= 0).
    """
    q = np.asarray(q)
    args = tuple(np.asarray(a) for a in args)
    ok = _shapes_ok(args)
    with np.errstate(invalid="ignore"):
        out = np.where(ok & (0 < q) & (q < 1), core(q, *args) * 1 + 0, np.nan)
        out = np.where(ok & (q == 0), at0, out)
        out = np.where(ok & (q == 1), at1, out)
    out = np.asarray(out, dtype=np.float64)
    return out[()] if out.ndim == 0 else out


def norm_cdf(x: Any) -> Any:
    """Standard normal cdf Phi(x) = ``special.ndtr(x)`` (``scipy.stats.norm.cdf``)."""
    return _tail(special.ndtr, x, (), -_INF, _INF, sf=False)


def norm_sf(x: Any) -> Any:
    """Standard normal survival 1 - Phi(x) = ``special.ndtr(-x)`` (``scipy.stats.norm.sf``)."""
    return _tail(lambda v: special.ndtr(-v), x, (), -_INF, _INF, sf=True)


def norm_ppf(q: Any) -> Any:
    """Standard normal quantile Phi^-1(q) = ``special.ndtri(q)`` (``scipy.stats.norm.ppf``)."""
    return _quantile(special.ndtri, q, (), -_INF, _INF)


def norm_isf(q: Any) -> Any:
    """Standard normal upper quantile Phi^-1(1 - q) = ``-special.ndtri(q)`` (``scipy.stats.norm.isf``)."""
    return _quantile(lambda v: -special.ndtri(v), q, (), _INF, -_INF)


def chi2_ppf(q: Any, df: Any) -> Any:
    """Chi-square quantile = ``2 * special.gammaincinv(df / 2, q)`` (``scipy.stats.chi2.ppf``)."""
    return _quantile(lambda v, d: 2 * special.gammaincinv(d / 2, v), q, (df,), 0.0, _INF)


def chi2_sf(x: Any, df: Any) -> Any:
    """Chi-square upper tail P(X > x) = ``special.chdtrc(df, x)`` (``scipy.stats.chi2.sf``)."""
    return _tail(lambda v, d: special.chdtrc(d, v), x, (df,), 0.0, _INF, sf=True)


def t_ppf(q: Any, df: Any) -> Any:
    """Student t quantile = ``special.stdtrit(df, q)`` (``scipy.stats.t.ppf``)."""
    return _quantile(lambda v, d: special.stdtrit(d, v), q, (df,), -_INF, _INF)


def f_sf(x: Any, dfn: Any, dfd: Any) -> Any:
    """F upper tail P(F > x) = ``special.fdtrc(dfn, dfd, x)`` (``scipy.stats.f.sf``)."""
    return _tail(lambda v, a, b: special.fdtrc(a, b, v), x, (dfn, dfd), 0.0, _INF, sf=True)
