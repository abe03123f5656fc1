"""Errors and warnings raised by cjstats (all errors subclass :class:`CjstatsError`)."""

from __future__ import annotations

__all__ = ["CjstatsError", "CjstatsWarning", "NotEstimableWarning"]


class CjstatsError(ValueError):
    """A user error: bad input or an impossible request. The message is one sentence saying what to fix."""


class CjstatsWarning(UserWarning):
    """Something the user should know about a result that is still returned."""


class NotEstimableWarning(CjstatsWarning):
    """A quantity cannot be estimated from the data; the result row carries the reason in ``note``."""
