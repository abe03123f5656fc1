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

__all__ = ["plain", "freeze_plain", "Result", "ResultSummary"]


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


def _frame_markdown(t: Any) -> str:
    head = "| " + " | ".join(map(str, t.columns)) + " |"
    sep = "| " + " | ".join("---" for _ in t.columns) + " |"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in t.itertuples(index=False)]
    return "\n".join([head, sep, *body])


class ResultSummary:
    """The printable summary of a result: ``as_text()``, ``as_markdown()``, ``as_latex()``, ``as_html()``, ``str``.

    Each renderer uses the result's own (``result.as_text()``, ...) when it has one, else its tidy table
    (``result.to_frame()``).
    """

    __slots__ = ("result", "title")

    def __init__(self, result: Any, title: str | None = None) -> None:
        self.result = result
        self.title = title or type(result).__name__

    def _own(self, name: str) -> Any:
        return getattr(self.result, name, None)

    def as_text(self) -> str:
        own = self._own("as_text")
        if own is not None:
            return own()
        return "\n".join([self.title, "=" * len(self.title), self.result.to_frame().to_string(index=False)])

    def as_markdown(self) -> str:
        own = self._own("as_markdown")
        if own is not None:
            return own()
        return "\n".join([f"**{self.title}**", "", _frame_markdown(self.result.to_frame())])

    def as_latex(self) -> str:
        own = self._own("as_latex")
        if own is not None:
            return own()
        from cjstats.results.tables import as_latex

        return as_latex(self.result.to_frame(), caption=self.title)

    def as_html(self) -> str:
        import html

        own = self._own("as_html")
        if own is not None:
            return own()
        return f"<h4>{html.escape(self.title)}</h4>" + self.result.to_frame().to_html(index=False)

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()


class Result:
    """The contract every public result keeps (a mixin for frozen dataclasses; it adds no state).

    - ``to_frame()``: the result's tidy table (a copy);
    - ``summary()``: a :class:`ResultSummary` (``as_text``, ``as_markdown``, ``as_latex``, ``as_html``, ``str``);
    - ``_repr_html_()``: the HTML summary, for notebooks;
    - ``save(path)`` / ``type(result).load(path)``: a portable directory (Parquet tables, ``.npy`` arrays, JSON
      metadata, netCDF posteriors; :mod:`cjstats.results.persist`).

    Results are plain data (no closures, no mapping views), so ``pickle`` and ``copy.deepcopy`` work.
    """

    __slots__ = ()

    def to_frame(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define to_frame")

    def summary(self) -> Any:
        return ResultSummary(self)

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def save(self, path: Any) -> Any:
        """Write the result to the directory ``path`` (created; an earlier save there is replaced, a folder
        holding anything else is refused; :func:`cjstats.results.persist.save`)."""
        from cjstats.results.persist import save

        return save(self, path)

    @classmethod
    def load(cls, path: Any) -> Any:
        """Read a result written by :meth:`save` (one sentence if the directory holds another type or is damaged)."""
        from cjstats.results.persist import load

        return load(path, expected=None if cls is Result else cls)
