"""The items a report section is made of, and the one table format.

A section renders to a list of items, each a dict with a ``kind``: ``table`` (:func:`format_table`), ``figure``
(:func:`figure`, a matplotlib figure as embedded PNG), ``heading``, ``text`` and ``note`` (a paragraph), and
``callout`` (the section's one boxed conclusion). The template ``templates/report.html.j2`` draws each kind; the
PDF and the text checks read the same items. Nothing here computes a statistic.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ITEM_KINDS", "format_table", "figure", "text", "heading", "note", "callout", "se_text", "check_item"]

#: The kinds of item the template draws.
ITEM_KINDS = ("table", "figure", "heading", "text", "note", "callout")

_TEXT_KINDS = ("O", "b", "S", "U")

#: Width of the report's text column in CSS pixels (max-width 1180 less the padding), and the rows of a table
#: that the PDF keeps on one page.
_PAGE_PX = 1100
_SHORT_ROWS = 18


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
    kinds = [frame[c].dtype.kind in _TEXT_KINDS and not pd.api.types.is_bool_dtype(frame[c])
             and not _all_bool(frame[c]) for c in frame.columns]
    return {"kind": "table", "caption": caption, "columns": cols, "rows": rows, "text": kinds, "note": note,
            "wide": _table_px(cols, rows, kinds) > _PAGE_PX, "short": len(rows) <= _SHORT_ROWS}


def _table_px(cols: list[str], rows: list[list[str]], text_cols: list[bool]) -> float:
    """About the narrowest a table can render (7.6 px a character at the table's font size, 18 px padding a
    cell): numbers and headers do not wrap, text cells wrap down to their longest word. Wider than the page, the
    browser scrolls the table, and the report says so."""
    width = 0.0
    for j, c in enumerate(cols):
        cells = [r[j] for r in rows]
        if text_cols[j]:
            chars = max([len(c), *(len(w) for v in cells for w in v.split())])
            width += 18 + max(7.6 * chars, 80.0)
        else:
            width += 18 + 7.6 * max([len(c), *(len(v) for v in cells)])
    return width


def _all_bool(s: pd.Series) -> bool:
    return len(s) > 0 and bool(s.map(lambda v: isinstance(v, bool | np.bool_)).all())


def figure(fig: Any, caption: str, alt: str) -> dict[str, Any]:
    """A matplotlib figure (from :mod:`cjstats.plots`) as an embedded PNG with its caption and alt text."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)           # arviz-plots figures are registered with pyplot; ours are not (no-op then)
    return {"kind": "figure", "png": base64.b64encode(buf.getvalue()).decode("ascii"), "caption": caption,
            "alt": alt}


def text(words: str) -> dict[str, Any]:
    return {"kind": "text", "text": words}


def heading(words: str) -> dict[str, Any]:
    return {"kind": "heading", "text": words}


def note(words: str) -> dict[str, Any]:
    return {"kind": "note", "text": words}


def callout(words: str) -> dict[str, Any]:
    return {"kind": "callout", "text": words}


def se_text(se: float) -> str:
    """A standard error in a sentence: three significant digits, fixed notation."""
    from cjstats.results.format import fixed, value_decimals

    return fixed(se, value_decimals([se], sig=3))


def check_item(item: Any) -> None:
    """Raise ``ValueError`` unless ``item`` is an item the template can draw (the sections' conformance test)."""
    if not isinstance(item, dict) or item.get("kind") not in ITEM_KINDS:
        raise ValueError(f"not a report item: {item!r:.200}")
    kind = item["kind"]
    if kind == "table":
        cols, rows, flags = item["columns"], item["rows"], item["text"]
        if not (isinstance(cols, list) and all(isinstance(c, str) for c in cols) and len(flags) == len(cols)):
            raise ValueError(f"table {item.get('caption')!r}: columns and text flags do not match")
        if not all(isinstance(r, list) and len(r) == len(cols) and all(isinstance(v, str) for v in r) for r in rows):
            raise ValueError(f"table {item.get('caption')!r}: a row is not one string per column")
        if not isinstance(item["caption"], str):
            raise ValueError("table caption is not a string")
    elif kind == "figure":
        png = base64.b64decode(item["png"], validate=True)
        if not png.startswith(b"\x89PNG\r\n\x1a\n"):
            raise ValueError(f"figure {item.get('alt')!r} is not a PNG")
        if not (isinstance(item["caption"], str) and item["caption"] and isinstance(item["alt"], str) and item["alt"]):
            raise ValueError("a figure needs a caption and alt text")
    elif not (isinstance(item.get("text"), str) and item["text"].strip()):
        raise ValueError(f"{kind} item without text")
