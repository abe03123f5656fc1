"""Carry the shape of the scores (:func:`cjstats.io.score_kind.score_shape`) into a fit, so that its summary can say
when the Gaussian model does not suit them (:func:`cjstats.io.score_kind.discrete_note`).

The shape is read from the rows when the fit had them (an in-memory table, which computes it once and keeps it:
``Scores.score_shape``); statistics from an out-of-core engine carry no score values, so those fits carry no shape
and print no note (``cjstats doctor`` still does).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from cjstats.io.score_kind import score_shape
from cjstats.io.scores import Scores

__all__ = ["shape_of", "with_score_shape"]


def shape_of(source: Any) -> dict[str, Any] | None:
    """The score shape of a table (``Scores`` or a long DataFrame with a numeric ``score`` column), else None, as a
    plain dict. A ``Scores`` table gives the shape it computed once (:attr:`~cjstats.io.scores.Scores.score_shape`);
    a DataFrame is scanned on each call."""
    if isinstance(source, Scores):
        return dict(source.score_shape)
    if isinstance(source, pd.DataFrame) and "score" in source.columns:
        values = pd.to_numeric(source["score"], errors="coerce")
        return score_shape(values.to_numpy(dtype=float)) if values.notna().all() else None
    return None


def with_score_shape(result: Any, source: Any) -> Any:
    """``result`` with ``score_shape`` recorded: in ``provenance`` (VarianceComponents) or ``diagnostics``
    (JointFit). Unchanged when the source has no rows or the result already records a shape."""
    shape = shape_of(source)
    if shape is None:
        return result
    for name in ("provenance", "diagnostics"):
        if hasattr(result, name) and dataclasses.is_dataclass(result):
            current = dict(getattr(result, name) or {})
            if "score_shape" in current:
                return result
            return dataclasses.replace(result, **{name: {**current, "score_shape": shape}})
    return result
