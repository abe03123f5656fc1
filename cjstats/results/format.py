"""One number-formatting policy for every rendering of a result: text summaries, the HTML report, LaTeX, the CLI.

The rules (docs/reports.md, "How numbers are printed"):

* an estimate is shown to the precision its standard error supports: the decimals that give the standard error
  two significant digits (:func:`se_decimals`); within one table column every cell gets the same decimals, those
  of the most precise row (:func:`column_decimals`), so a column never mixes 2, 3 and 4 decimals;
* an interval is written with the decimals of its estimate, both ends (``[0.860, 1.000]``, never ``[0.8602, 1]``);
* a p-value has two significant digits; one below the smallest positive double (about 1e-308, where a p-value
  underflows to 0) is written ``< 1e-300`` and never ``0``;
* degrees of freedom are integers when they are whole (ANOVA: ``29790``, never ``2.979e+04``) or large (a
  Satterthwaite 950.4 prints ``950``), otherwise one decimal (``12.3``);
* a float column without a standard error gets fixed decimals, enough for three significant digits of its
  largest value and two of its smallest non-zero one; whole-number columns print as integers; probabilities
  (``p_best``) three decimals, ``<0.001``/``>0.999`` near the ends (:func:`format_prob`); interval levels as given
  (``0.95``);
* a compact summary (``print(fit)``) formats each row from its own standard error (:func:`row_decimals`): a row
  never takes the decimals of a more precise row;
* a number that does not exist (NaN) is a dash.

Functions take plain floats (or a DataFrame for :func:`format_frame`) and return strings; nothing here computes
a statistic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["P_FLOOR", "P_COLUMNS", "DF_COLUMNS", "PROB_COLUMNS", "LEVEL_COLUMNS", "SE_GROUPS", "NA", "se_decimals", "column_decimals", "value_decimals",
           "fixed", "format_p", "format_df", "format_interval", "format_pm", "format_frame", "format_scalar",
           "format_prob", "short_labels", "row_decimals"]

#: p-values below this print as ``< 1e-300`` (below ~1e-308 a double underflows to 0, so ``p = 0`` would show).
P_FLOOR = 1e-300
#: Column names holding p-values.
P_COLUMNS: tuple[str, ...] = ("p", "p_value", "p_adjusted", "p_value_adjusted", "pvalue")
#: Column names holding degrees of freedom.
DF_COLUMNS: tuple[str, ...] = ("df", "df1", "df2", "df_num", "df_den", "df_denominator", "df_numerator")
#: Column names holding probabilities (three decimals, :func:`format_prob`: ``1.000``, ``>0.999``, ``<0.001``, never
#: ``1`` beside ``0.9999`` and ``0.000125``).
PROB_COLUMNS: tuple[str, ...] = ("p_best", "prob", "probability", "share", "power")
#: Column names holding an interval level (printed as given: ``0.95``).
LEVEL_COLUMNS: tuple[str, ...] = ("ci_level", "level")
#: Standard-error columns and the columns whose decimals they set (when present in a table).
SE_GROUPS: dict[str, tuple[str, ...]] = {
    "std_error": ("estimate", "difference", "mean", "lower", "upper", "std_error"),
    "bias_se": ("bias", "bias_lower", "bias_upper", "bias_se"),
}
#: The mark of a number that does not exist.
NA = "–"
#: Most decimals any number gets.
MAX_DECIMALS = 8


def _finite(v: Any) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool | np.bool_) \
        and math.isfinite(float(v))


def se_decimals(se: float, digits: int = 2) -> int | None:
    """Decimals that give the standard error ``se`` ``digits`` significant digits (None when se is not positive).

    >>> se_decimals(0.0213), se_decimals(0.5), se_decimals(3.2), se_decimals(12.0)
    (3, 2, 1, 0)
    """
    if not (_finite(se) and float(se) > 0):
        return None
    return int(min(max(digits - 1 - math.floor(math.log10(float(se))), 0), MAX_DECIMALS))


def column_decimals(ses: Iterable[float], digits: int = 2) -> int | None:
    """One number of decimals for a whole column: that of its most precise row (smallest positive SE).

    Every row then shows at least the precision its own standard error supports, and the column lines up.
    """
    ds = [d for d in (se_decimals(s, digits) for s in ses) if d is not None]
    return max(ds) if ds else None


def value_decimals(values: Iterable[float], sig: int = 3) -> int:
    """Fixed decimals for a float column without standard errors: ``sig`` significant digits of its largest
    absolute value and two of its smallest non-zero one (0 when every value is whole)."""
    x = np.array([float(v) for v in values if _finite(v)], dtype=float)
    if x.size == 0 or np.all(x == np.round(x)):
        return 0
    a = np.abs(x[x != 0])
    big = sig - 1 - math.floor(math.log10(float(a.max())))
    small = 1 - math.floor(math.log10(float(a.min())))
    return int(min(max(big, small, 0), MAX_DECIMALS))


def fixed(v: Any, decimals: int, *, na: str = NA, signed: bool = False) -> str:
    """``v`` with ``decimals`` decimals (a dash for NaN, ``+inf``/``-inf`` for an infinite value such as a separated
    judge's offset; ``-0.000`` is written ``0.000``)."""
    if not _finite(v):
        if isinstance(v, float | np.floating) and math.isinf(float(v)):
            return "+inf" if float(v) > 0 else "-inf"
        return na
    s = f"{float(v):+.{decimals}f}" if signed else f"{float(v):.{decimals}f}"
    if float(s) == 0:                      # no "-0.00"
        s = s.replace("-", "+" if signed else "", 1)
    return s


def format_p(p: Any, *, na: str = NA, latex: bool = False) -> str:
    """A p-value with two significant digits; below :data:`P_FLOOR` (including an underflowed 0) ``< 1e-300``.

    >>> format_p(0.0312), format_p(4.2e-87), format_p(0.0), format_p(1.0)
    ('0.031', '4.2e-87', '< 1e-300', '1')
    """
    if not _finite(p):
        return na
    p = float(p)
    if p < P_FLOOR:
        return "$<10^{-300}$" if latex else "< 1e-300"
    return f"{p:.2g}"


def format_df(df: Any, *, na: str = NA) -> str:
    """Degrees of freedom: an integer when whole or >= 100, else one decimal; infinite df is ``inf``.

    >>> format_df(29790.0), format_df(950.4), format_df(12.34), format_df(4)
    ('29790', '950', '12.3', '4')
    """
    if isinstance(df, int | np.integer) and not isinstance(df, bool | np.bool_):
        return str(int(df))
    if isinstance(df, float | np.floating) and math.isinf(df):
        return "inf"
    if not _finite(df):
        return na
    df = float(df)
    if abs(df - round(df)) < 1e-9 or abs(df) >= 100:
        return str(int(round(df)))
    return f"{df:.1f}"


def format_interval(lower: Any, upper: Any, decimals: int, *, na: str = NA) -> str:
    """``[lower, upper]`` with the same decimals at both ends (a dash when either end does not exist)."""
    if not (_finite(lower) and _finite(upper)):
        return na
    return f"[{fixed(lower, decimals)}, {fixed(upper, decimals)}]"


def format_pm(estimate: Any, half_width: Any, decimals: int | None = None, *, na: str = NA) -> str:
    """``estimate ± half_width`` with the decimals of the half-width (two significant digits) unless given."""
    if not _finite(estimate):
        return na
    d = decimals if decimals is not None else (se_decimals(half_width) or 0)
    return f"{fixed(estimate, d)} ± {fixed(half_width, d)}"


def format_scalar(v: Any, *, na: str = NA) -> str:
    """One number on its own (a sentence, a title): integers as integers, floats with four significant digits
    in fixed notation when that is readable."""
    if v is None:
        return na
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if isinstance(v, int | np.integer):
        return f"{int(v):,}"
    if not _finite(v):
        return na
    v = float(v)
    if v == round(v) and abs(v) < 1e15:
        return f"{int(round(v)):,}"
    if 1e-4 <= abs(v) < 1e6:
        return fixed(v, value_decimals([v], sig=4))
    return f"{v:.3e}"


def _is_bool(s: pd.Series) -> bool:
    return pd.api.types.is_bool_dtype(s) or (s.dtype == object and s.map(lambda v: isinstance(v, bool | np.bool_))
                                             .all() and len(s) > 0)


def format_frame(frame: pd.DataFrame, *, se_column: str | None = None, value_columns: Sequence[str] = (),
                 p_columns: Sequence[str] = P_COLUMNS, df_columns: Sequence[str] = DF_COLUMNS, na: str = NA,
                 thousands: bool = True, latex: bool = False, se_groups: bool = True) -> pd.DataFrame:
    """Every cell of ``frame`` as a string, one decimals setting per column.

    ``value_columns`` get the decimals of ``se_column`` (:func:`column_decimals`); with ``se_groups`` the known
    standard-error columns of :data:`SE_GROUPS` present in the frame set the decimals of their estimates too
    (``std_error`` for ``estimate``, ``difference``, ``lower``, ``upper``...); p-value columns :func:`format_p`;
    degrees of freedom :func:`format_df`; probabilities :func:`format_prob`; interval levels as given; integers as
    integers (with ``,`` separators when ``thousands``); booleans yes/no; other float columns
    :func:`value_decimals`; text as it is.
    """
    out = {}
    by_se: dict[str, int] = {}
    if se_groups:
        for se, cols in SE_GROUPS.items():
            d = column_decimals(frame[se]) if se in frame.columns else None
            if d is not None:
                by_se.update({c: d for c in cols if c in frame.columns})
    dec_se = column_decimals(frame[se_column]) if se_column is not None and se_column in frame.columns else None
    if dec_se is not None:
        by_se.update({c: dec_se for c in value_columns if c in frame.columns})
    for c in frame.columns:
        s = frame[c]
        name = str(c)
        if _is_bool(s):
            out[c] = ["yes" if bool(v) else "no" for v in s]
        elif name in p_columns and pd.api.types.is_numeric_dtype(s):
            out[c] = [format_p(v, na=na, latex=latex) for v in s]
        elif name in df_columns and pd.api.types.is_numeric_dtype(s):
            out[c] = [format_df(v, na=na) for v in s]
        elif pd.api.types.is_integer_dtype(s):
            out[c] = [f"{int(v):,}" if thousands else str(int(v)) for v in s]
        elif pd.api.types.is_float_dtype(s) and name in PROB_COLUMNS:
            out[c] = [format_prob(v, na=na) for v in s]
        elif pd.api.types.is_float_dtype(s) and name in LEVEL_COLUMNS:
            out[c] = [f"{float(v):g}" if _finite(v) else na for v in s]
        elif pd.api.types.is_float_dtype(s):
            d = by_se.get(c, value_decimals(s))
            if d == 0 and all(float(v) == round(float(v)) for v in s if _finite(v)) and c not in by_se:
                out[c] = [(f"{int(round(float(v))):,}" if thousands else str(int(round(float(v)))))
                          if _finite(v) else na for v in s]
            else:
                out[c] = [fixed(v, d, na=na) for v in s]
        else:
            out[c] = [na if v is None or (isinstance(v, float) and math.isnan(v)) else
                      _cell(v, na=na, thousands=thousands) for v in s]
    return pd.DataFrame(out, index=frame.index, columns=frame.columns)


def _cell(v: Any, *, na: str, thousands: bool) -> str:
    """A cell of a mixed (object) column."""
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if isinstance(v, int | np.integer):
        return f"{int(v):,}" if thousands else str(int(v))
    if isinstance(v, float | np.floating):
        return format_scalar(v, na=na)
    return str(v)


# ----------------------------------------------------------------------------------- compact summaries
#: Short labels of interval methods, by the first phrase a method string contains (case-insensitive).
_SHORT_METHODS: tuple[tuple[str, str], ...] = (
    ("profile likelihood", "PL"), ("noncentral chi-square", "NC"), ("t (", "t"), ("t,", "t"),
    ("satterthwaite", "Satt"), ("posterior", "post"), ("bootstrap", "boot"), ("wald", "Wald"),
    ("chi-square", "chi2"),
)


def short_labels(methods: Iterable[Any]) -> dict[str, str]:
    """A short label (a few letters) for each distinct method string, unique among them, in order of appearance.

    >>> short_labels(["profile likelihood (REML)", "t (REML GLS, Satterthwaite df)", "profile likelihood"])
    {'profile likelihood (REML)': 'PL', 't (REML GLS, Satterthwaite df)': 't', 'profile likelihood': 'PL2'}
    """
    out: dict[str, str] = {}
    used: set[str] = set()
    for m in methods:
        m = "" if m is None or (isinstance(m, float) and math.isnan(m)) else str(m)
        if not m or m in out:
            continue
        low = m.lower()
        base = next((s for key, s in _SHORT_METHODS if low.startswith(key) or (len(key) > 3 and key in low)),
                    None) or (m.split()[0][:6] if m.split() else "m")
        label, i = base, 2
        while label in used:
            label, i = f"{base}{i}", i + 1
        used.add(label)
        out[m] = label
    return out


def format_prob(v: Any, decimals: int = 3, *, na: str = NA) -> str:
    """A probability with fixed decimals; strictly between 0 and 1 but rounding to an end: ``<0.001``/``>0.999``.

    >>> format_prob(1.0), format_prob(0.9999), format_prob(0.000125), format_prob(0.0), format_prob(0.25)
    ('1.000', '>0.999', '<0.001', '0.000', '0.250')
    """
    if not _finite(v):
        return na
    v = float(v)
    step = 10.0 ** -decimals
    if 0.0 < v < step / 2:
        return f"<{step:.{decimals}f}"
    if 1.0 - step / 2 < v < 1.0:
        return f">{1 - step:.{decimals}f}"
    return fixed(v, decimals)


def row_decimals(se: Any, *values: Any) -> int:
    """Decimals of one row: those its own standard error supports (:func:`se_decimals`), else three significant
    digits of its values (:func:`value_decimals`, at least one decimal)."""
    d = se_decimals(se)
    return d if d is not None else max(value_decimals([v for v in values if _finite(v)]), 1)
