"""Helpers of the audit sections (diagnosis, drift, sequences, covariates)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def items_of(obj: Any) -> list[tuple[str | None, Any]]:
    """A result or a mapping of labelled results as (label or None, result) pairs."""
    return [(str(k), v) for k, v in obj.items()] if isinstance(obj, Mapping) else [(None, obj)]


def p_text(p: float) -> str:
    from cjstats.results.format import format_p

    return format_p(p)
