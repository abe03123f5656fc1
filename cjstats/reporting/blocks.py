"""The items of the report's template: a table (:func:`format_table`), a figure, a paragraph, a heading. Used by
:mod:`cjstats.reporting` and its sections (:mod:`cjstats.reporting.sections`), which the package imports, so they
live here rather than in the package's ``__init__``."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["format_table"]

_TEXT_KINDS = ("O", "b", "S", "U")


def format_table(frame: pd.DataFrame, *, caption: str = "", se_column: str | None = None,
                 value_columns: Sequence[str] = (), note: str = "") -> dict[str, Any]:
    """A DataFrame as template data: column names, one formatted string per cell, which columns are text.

    The cells follow the package's one formatting policy (:func:`cjstats.results.format.format_frame`):
    integers as integers, booleans as yes/no, NaN as a dash, p-values with two significant digits (``< 1e-300``
    below the float floor), degrees of freedom as integers, the ``value_columns`` to the decimals the
    ``se_column`` supports (two significant digits of the smallest standard error of the column, so a column
    never mixes decimals), other float columns with one fixed number of decimals each.
    """
    from cjstats.results.format import format_frame

    cols = [str(c) for c in frame.columns]
    cells = format_frame(frame, se_column=se_column, value_columns=value_columns)
    rows = [list(r) for r in cells.itertuples(index=False)]
    text = [frame[c].dtype.kind in _TEXT_KINDS and not pd.api.types.is_bool_dtype(frame[c])
            and not _all_bool(frame[c]) for c in frame.columns]
    return {"kind": "table", "caption": caption, "columns": cols, "rows": rows, "text": text, "note": note,
            "wide": _table_px(cols, rows, text) > _PAGE_PX, "short": len(rows) <= _SHORT_ROWS}


#: Width of the report's text column in CSS pixels (max-width 1180 less the padding), and the rows of a table
#: that the PDF keeps on one page.
_PAGE_PX = 1100
_SHORT_ROWS = 18


def _table_px(cols: list[str], rows: list[list[str]], text: list[bool]) -> float:
    """About the narrowest a table can render (7.6 px a character at the table's font size, 18 px padding a
    cell): numbers and headers do not wrap, text cells wrap down to their longest word. Wider than the page, the
    browser scrolls the table, and the report says so."""
    width = 0.0
    for j, c in enumerate(cols):
        cells = [r[j] for r in rows]
        if text[j]:
            chars = max([len(c), *(len(w) for v in cells for w in v.split())])
            width += 18 + max(7.6 * chars, 80.0)
        else:
            width += 18 + 7.6 * max([len(c), *(len(v) for v in cells)])
    return width


def _all_bool(s: pd.Series) -> bool:
    return len(s) > 0 and bool(s.map(lambda v: isinstance(v, bool | np.bool_)).all())


def _figure(fig: Any, caption: str, alt: str) -> dict[str, Any]:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)           # arviz-plots figures are registered with pyplot; ours are not (no-op then)
    return {"kind": "figure", "png": base64.b64encode(buf.getvalue()).decode("ascii"), "caption": caption,
            "alt": alt}


def _text(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


def _heading(text: str) -> dict[str, Any]:
    return {"kind": "heading", "text": text}
