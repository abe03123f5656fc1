"""Tables for papers: a wide model x component table and booktabs LaTeX with standard deviations beside variances.

Rendering only: every number is read from a result (``fit.components``); the standard deviation of a variance
component is sqrt(estimate) and its interval [sqrt(lower), sqrt(upper)] (a monotone transform of the interval,
so its level is kept). LaTeX is written by pandas' ``Styler.to_latex`` (needs jinja2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cjstats.results.estimands import COMPONENTS
from cjstats.exceptions import CjstatsError

__all__ = ["wide", "long", "as_latex", "components_latex"]

_VARIANCES = tuple(c for c in COMPONENTS if c != "mu")
_STATS = ("estimate", "std_error", "lower", "upper", "sd", "sd_lower", "sd_upper")


def _is_fit(obj: Any) -> bool:
    """A fit result (a VarianceComponents or anything with its tidy tables); tested by its attributes so that this
    rendering layer does not import the result module that renders through it (``Summary.as_latex``)."""
    return isinstance(getattr(obj, "components", None), pd.DataFrame) and hasattr(obj, "judge_offsets")


def _fit_check(fit: Any, caller: str) -> pd.DataFrame:
    if not _is_fit(fit):
        raise CjstatsError(f"{caller} takes a VarianceComponents from cj.estimate(scores); got {type(fit).__name__}.")
    return fit.components


def _long_frame(t: pd.DataFrame) -> pd.DataFrame:
    keys = ["model"] + (["criterion"] if "criterion" in t.columns else [])
    out = t[keys + ["component", "estimate", "std_error", "lower", "upper"]].copy()
    is_var = t["component"].isin(_VARIANCES).to_numpy()
    for src, dst in (("estimate", "sd"), ("lower", "sd_lower"), ("upper", "sd_upper")):
        v = t[src].to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            out[dst] = np.where(is_var, np.sqrt(np.maximum(v, 0.0)), np.nan)
    for c in ("method", "ci_level", "at_boundary", "identifiable"):
        out[c] = t[c].to_numpy()
    return out


def long(fit: Any) -> pd.DataFrame:
    """The components with standard deviations beside the variances.

    Columns ``model, [criterion], component, estimate, std_error, lower, upper, sd, sd_lower, sd_upper, method,
    ci_level, at_boundary, identifiable``; ``sd = sqrt(estimate)`` for the variance components (NaN for ``mu``).
    """
    return _long_frame(_fit_check(fit, "tables.long"))


def wide(fit: Any, *, stats: Sequence[str] = ("estimate", "sd")) -> pd.DataFrame:
    """Model (x criterion) rows, component x statistic columns: the paper's table shape, as numbers.

    Parameters
    ----------
    fit : VarianceComponents
    stats : sequence of str
        Any of ``estimate, std_error, lower, upper, sd, sd_lower, sd_upper`` (``sd`` columns exist for the
        variance components only).

    Returns
    -------
    DataFrame
        Columns a MultiIndex ``(component, stat)`` in the order of the estimand names; NaN where a component
        is not identifiable.

    Examples
    --------
    >>> import cjstats as cj
    >>> w = wide(cj.estimate(cj.datasets.load("hanna", composite=True), method="reml"))
    >>> w[("judge_panel", "sd")].round(2).loc["GPT"]
    np.float64(0.51)
    """
    bad = [s for s in stats if s not in _STATS]
    if bad or not stats:
        raise CjstatsError(f"The 'stats' argument of tables.wide must name some of {', '.join(_STATS)}. "
                           f"Got {list(stats)!r} instead.")
    t = long(fit)
    index = ["model"] + (["criterion"] if "criterion" in t.columns else [])
    out = t.pivot_table(index=index, columns="component", values=list(stats), aggfunc="first", dropna=False,
                        sort=False)
    out = out.swaplevel(0, 1, axis=1)
    cols = [(c, s) for c in COMPONENTS for s in stats if (c, s) in out.columns
            and not (s.startswith("sd") and c not in _VARIANCES)]
    return out[cols]


def _fmt(v: Any, digits: int) -> str:
    from cjstats.results.format import fixed

    if isinstance(v, float | np.floating):
        return fixed(v, digits, na="--")
    return "--" if v is None else str(v)


def as_latex(obj: Any, *, caption: str | None = None, label: str | None = None, digits: int = 3) -> str:
    """A booktabs LaTeX table (``\\toprule``/``\\midrule``/``\\bottomrule``; needs ``\\usepackage{booktabs}``).

    A :class:`~cjstats.results.components.VarianceComponents` becomes one row per (model, [criterion]) and two columns per
    component: the variance with its interval ``est [lo, hi]`` and its standard deviation ``sd`` beside it (users
    quote sigma; the paper's tables give variances). Any DataFrame (a judge table, an allocation, F tests...)
    is written as it is, numbers with ``digits`` decimals, except p-values (two significant digits,
    :math:`<10^{-300}` below the float floor), degrees of freedom (integers when whole) and integer columns: the
    package's one formatting policy (:mod:`cjstats.results.format`).

    Parameters
    ----------
    obj : VarianceComponents or DataFrame
    caption, label : str, optional
    digits : int
        Decimals of every number.

    Returns
    -------
    str
    """
    if _is_fit(obj):
        return components_latex(obj.components, caption=caption, label=label, digits=digits)
    elif isinstance(obj, pd.DataFrame):
        from cjstats.results.format import DF_COLUMNS, P_COLUMNS, format_df, format_p

        styler = obj.style.format(precision=digits, escape="latex", na_rep="--").hide(axis="index")
        num = [c for c in obj.columns if pd.api.types.is_numeric_dtype(obj[c]) and not pd.api.types.is_bool_dtype(obj[c])]
        p_cols = [c for c in num if str(c) in P_COLUMNS]
        if p_cols:                                   # p-values keep two significant digits, never 0.000
            styler = styler.format(lambda v: format_p(v, na="--", latex=True), subset=p_cols)
        df_cols = [c for c in num if str(c) in DF_COLUMNS]
        if df_cols:                                  # degrees of freedom: 29790, never 29790.000
            styler = styler.format(lambda v: format_df(v, na="--"), subset=df_cols)
        styler = styler.format_index(escape="latex", axis=1)
    else:
        raise CjstatsError(f"as_latex takes a VarianceComponents or a DataFrame; got {type(obj).__name__}.")
    return styler.to_latex(hrules=True, caption=caption, label=label, position_float="centering",
                           multicol_align="c", column_format=None)


def components_latex(components: pd.DataFrame, *, caption: str | None = None, label: str | None = None,
                     digits: int = 3) -> str:
    """Booktabs LaTeX of a tidy components table (``fit.components``): see :func:`as_latex`."""
    t = _long_frame(components)
    index = ["model"] + (["criterion"] if "criterion" in t.columns else [])
    rows: dict[tuple, dict[tuple[str, str], str]] = {}
    comps = [c for c in COMPONENTS if c in set(t.loc[t["identifiable"], "component"])]
    for r in t.itertuples(index=False):
        if r.component not in comps:
            continue
        cell = rows.setdefault(tuple(getattr(r, k) for k in index), {})
        mark = "$^*$" if r.at_boundary else ""
        cell[(r.component, "estimate [CI]")] = (f"{_fmt(r.estimate, digits)}{mark} "
                                                f"[{_fmt(r.lower, digits)}, {_fmt(r.upper, digits)}]")
        if r.component in _VARIANCES:
            cell[(r.component, "sd")] = _fmt(r.sd, digits)
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index = (pd.MultiIndex.from_tuples(frame.index, names=index) if len(index) > 1
                   else pd.Index([k[0] for k in frame.index], name="model"))
    frame.columns = pd.MultiIndex.from_tuples(frame.columns)
    frame = frame[[c for c in [(c, s) for c in comps for s in ("estimate [CI]", "sd")] if c in frame.columns]]
    frame = frame.fillna("--")
    lvl = components["ci_level"].dropna()
    level = float(lvl.iloc[0]) if len(lvl) else float("nan")
    method = ", ".join(map(str, pd.unique(components["method"])))
    starred = bool(t.loc[t["component"].isin(comps), "at_boundary"].astype(bool).any())
    caption = caption or (f"Variance components ({method}), estimate with {100 * level:g}\\% interval and "
                          "standard deviation sd = sqrt(variance)" + ("; $^*$ at the boundary." if starred else "."))
    styler = frame.style.format_index(escape="latex", axis=0).format_index(escape="latex", axis=1)
    return styler.format(escape=None).to_latex(hrules=True, caption=caption, label=label,
                                               position_float="centering", multicol_align="c")
