"""What every public result shares: plain data (so it pickles), a tidy frame, a printable summary, save and load.

- :func:`plain` turns read-only mapping views (``types.MappingProxyType``, which cannot be pickled) into plain
  dicts, recursively; results call it on their mapping attributes when they are built.
- :class:`Result` is the mixin every public result uses: ``to_frame()`` (tidy), ``summary()`` (an object with
  ``as_text()``, ``as_markdown()``, ``as_latex()``, ``as_html()`` and ``str``), ``_repr_html_``, and
  ``save(path)`` / ``type.load(path)`` (:mod:`cjstats.results.persist`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["plain", "freeze_plain"]


def plain(obj: Any) -> Any:
    """``obj`` with every ``MappingProxyType`` inside dicts, lists and tuples replaced by a plain dict."""
    if isinstance(obj, MappingProxyType):
        return {k: plain(v) for k, v in obj.items()}
    if type(obj) is dict:
        return {k: plain(v) for k, v in obj.items()} if any(
            isinstance(v, (MappingProxyType, dict, list, tuple)) for v in obj.values()) else obj
    if type(obj) in (list, tuple):
        return type(obj)(plain(v) for v in obj)
    return obj


def freeze_plain(result: Any, *names: str) -> None:
    """Replace the named mapping attributes of a (frozen) result by plain dicts (:func:`plain`)."""
    for name in names:
        value = getattr(result, name, None)
        if isinstance(value, Mapping):
            object.__setattr__(result, name, plain(value))
