"""Errors and warnings raised by cjstats (all errors subclass :class:`CjstatsError`)."""

from __future__ import annotations

import re

__all__ = ["CjstatsError", "CjstatsWarning", "NotEstimableWarning", "IdentificationWarning"]


# numpy scalar reprs (``np.int64(0)``, ``np.str_('a')``, ``np.float64(1.5)``) printed as the plain value
_NUMPY_REPR = re.compile(
    r"\bnp\.(?:u?int\d*|float\d*|str_|bool_?|bytes_|complex\d*|datetime64|timedelta64)\(([^()]*)\)")


class CjstatsError(ValueError):
    """A user error: bad input or an impossible request. The message is one sentence saying what to fix.

    numpy scalar reprs in the message (``scenario np.int64(0)``) are printed as plain values (``scenario 0``).
    """

    def __init__(self, message: object = "", *args: object) -> None:
        if isinstance(message, str):
            message = _NUMPY_REPR.sub(r"\1", message)
        super().__init__(message, *args)


class CjstatsWarning(UserWarning):
    """Something the user should know about a result that is still returned."""


class NotEstimableWarning(CjstatsWarning):
    """A quantity cannot be estimated from the data; the result row carries the reason in ``note``."""


class IdentificationWarning(NotEstimableWarning):
    """Some parameter of a fit is not identified by the data (separation, a variance with too few groups, a
    parameter that ran off): its rows carry no number and the reason (:mod:`cjstats.estimators.identification`)."""
