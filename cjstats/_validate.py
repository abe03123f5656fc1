"""Small shared validators whose messages name the argument, what is allowed and what arrived."""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any

from cjstats._defaults import CI_LEVEL
from cjstats.exceptions import CjstatsError

__all__ = ["import_registered", "check_choice", "resolve_ci_level", "check_positive_int", "check_number", "require_packages",
           "is_bool_value", "bool_score_message", "nonnumeric_score_message"]


def check_choice(name: str, value: Any, allowed: Iterable[str], *, caller: str) -> str:
    """Return ``value`` if it is one of ``allowed``; otherwise raise one clear sentence."""
    allowed = sorted(allowed)
    if not isinstance(value, str) or value not in allowed:
        choices = ", ".join(f"'{a}'" for a in allowed)
        raise CjstatsError(f"The '{name}' argument of {caller} must be one of {choices}. Got {value!r} instead.")
    return value


def resolve_ci_level(ci_level: float | None) -> float:
    """Fill in the default interval level and check that it lies in (0, 1)."""
    if ci_level is None:
        return CI_LEVEL
    if isinstance(ci_level, bool) or not isinstance(ci_level, Real) or not 0.0 < float(ci_level) < 1.0:
        raise CjstatsError(f"The value of ci_level should be in the interval (0, 1) but got {ci_level!r}.")
    return float(ci_level)


def check_positive_int(name: str, value: Any, *, caller: str, minimum: int = 1) -> int:
    """Return ``value`` as an int if it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < minimum:
        raise CjstatsError(
            f"The '{name}' argument of {caller} must be an integer >= {minimum}. Got {value!r} instead."
        )
    return int(value)


def check_number(name: str, value: Any, *, caller: str, minimum: float | None = None) -> float:
    """Return ``value`` as a float if it is a finite real number (>= ``minimum`` when given)."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and value == value and abs(float(value)) != float("inf")
    if ok and minimum is not None and float(value) < minimum:
        ok = False
    if not ok:
        bound = "" if minimum is None else f" >= {minimum:g}"
        raise CjstatsError(f"The '{name}' argument of {caller} must be a finite number{bound}. Got {value!r} instead.")
    return float(value)


def require_packages(caller: str, *packages: str, extra: str = "plots") -> None:
    """Refuse, in one sentence naming the extra to install, a call whose optional packages are missing."""
    import importlib.util

    def absent(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is None
        except ValueError:                       # sys.modules[name] is None: import blocked
            return True

    missing = [p for p in packages if absent(p)]
    if missing:
        raise CjstatsError(f"{caller} requires package(s): {', '.join(missing)}. Install them with "
                           f"pip install 'cjstats[{extra}]'.")


def is_bool_value(value: Any) -> bool:
    """Whether a score value is a truth value: a Python or numpy bool, or the text True/False (any case)."""
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):
        return True
    return isinstance(value, str) and value.strip().lower() in ("true", "false")


def bool_score_message(count: int | None = None, raw: Any = None, where: str | None = None) -> str:
    """The sentence for True/False scores (a bool column, or True/False text) read by an out-of-core engine, with
    the count and first row when known. In memory, read_scores maps them (True = 1, False = 0, with a warning:
    :mod:`cjstats.io.verdicts`); the DuckDB engine reads numbers only and says so."""
    detail = "" if count is None else f" ({count}, first: {raw!r} in {where})"
    return (f"Column 'score' holds True/False values{detail}; recode them as numbers (True = 1, False = 0) before "
            f"read_scores(): the out-of-core engines read numbers only (in memory they are mapped so).")


def nonnumeric_score_message(count: int, raw: Any, where: str) -> str:
    """The sentence for non-numeric scores, naming the first one; True/False values get their own sentence."""
    if is_bool_value(raw):
        return bool_score_message(count, raw, where)
    return (f"Column 'score' has {count} non-numeric values (first: {raw!r} in {where}). "
            f"Drop or recode them before read_scores().")


def import_registered(module: str, kind: str, name: str) -> Any:
    """Import the module behind a registry entry (a backend, a joint backend, an engine); a module this version
    of the package does not ship is one sentence, any other import error propagates unchanged."""
    from importlib import import_module

    try:
        return import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise CjstatsError(f"The '{name}' {kind} is not part of this version of cjstats.") from exc
        raise
