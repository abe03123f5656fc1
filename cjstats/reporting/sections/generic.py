"""A result given to the report as is (a DataFrame, a result with DataFrame attributes, or a mapping of them):
every tidy frame it carries as a table."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.reporting.items import format_table, heading, note


#: Why a known table of a result can be empty (an empty table is left out; these say what is missing and why).
EMPTY_REASONS = {"humans": "No human ceiling: it needs items rated by two or more reference raters, and no item "
                           "of this table has two human ratings."}


def frames_of(obj: Any) -> list[tuple[str, pd.DataFrame]]:
    """The tidy frames a result object carries (a DataFrame itself, its DataFrame attributes, or to_frame())."""
    if isinstance(obj, pd.DataFrame):
        return [("table", obj)]
    frames: list[tuple[str, pd.DataFrame]] = []
    names = ([f.name for f in dataclasses.fields(obj)] if dataclasses.is_dataclass(obj)
             else [n for n in vars(obj)] if hasattr(obj, "__dict__") else [])
    for n in names:
        v = getattr(obj, n, None)
        if isinstance(v, pd.DataFrame) and not n.startswith("_"):
            frames.append((n, v))
    if not frames and callable(getattr(obj, "to_frame", None)):
        frames.append(("table", obj.to_frame()))
    return frames


def check_generic(obj: Any, what: str) -> None:
    """Refuse a result without any tidy frame in one sentence (before anything is fitted)."""
    for _, o in (obj.items() if isinstance(obj, Mapping) else [(None, obj)]):
        if not frames_of(o):
            raise CjstatsError(f"The '{what}' argument of report must be a DataFrame or a result with DataFrame "
                               f"attributes; got {type(o).__name__}.")


def generic_items(obj: Any, what: str) -> list[dict[str, Any]]:
    check_generic(obj, what)
    items: list[dict[str, Any]] = []
    for label, o in (obj.items() if isinstance(obj, Mapping) else [(None, obj)]):
        frames = frames_of(o)
        if label is not None:
            items.append(heading(str(label)))
        shown = [(name, frame) for name, frame in frames if not frame.empty]
        for name, frame in shown:
            items.append(format_table(frame, caption=name))
        for name, _ in frames:
            if name in EMPTY_REASONS and all(n != name for n, _ in shown):
                items.append(note(EMPTY_REASONS[name]))
        if not shown:
            items.append(note(f"The {what.replace('_', ' ')} result has no rows to show."))
    return items
