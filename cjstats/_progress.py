"""Progress of long loops (Bayes fits, predictive simulations, simulation studies, the report) on stderr.

One rule: ``progress=None`` (the default of every library function that loops) shows progress only when stderr is
a terminal, ``True`` always, ``False`` never. It is drawn by tqdm when installed, else by one line rewritten in
place; library code never prints: everything goes through :func:`progress_iter` / :class:`Progress`, which write
to ``sys.stderr`` only when enabled.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["progress_enabled", "progress_iter", "Progress"]

T = TypeVar("T")


def progress_enabled(progress: bool | None) -> bool:
    """Whether to show progress: ``progress`` when given, else whether stderr is a terminal."""
    if progress is not None:
        return bool(progress)
    stream = sys.stderr
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """A counter ``done / total`` with a label, drawn on stderr when enabled (tqdm if installed)."""

    def __init__(self, total: int | None, label: str, *, progress: bool | None = None) -> None:
        self.enabled = progress_enabled(progress)
        self.total, self.label, self.done = total, label, 0
        self._bar: Any = None
        self._t0 = time.monotonic()
        if not self.enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:                                   # a plain line, rewritten in place
            self._draw()
        else:
            self._bar = tqdm(total=total, desc=label, file=sys.stderr, leave=False, dynamic_ncols=True)

    def _draw(self, end: str = "") -> None:
        of = f"/{self.total}" if self.total is not None else ""
        sys.stderr.write(f"\r{self.label}: {self.done}{of} ({time.monotonic() - self._t0:.0f} s){end}")
        sys.stderr.flush()

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
        else:
            self._draw()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
        else:
            self._draw("\n")
        self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def progress_iter(items: Iterable[T], label: str, *, total: int | None = None,
                  progress: bool | None = None) -> Iterator[T]:
    """Yield ``items``, counting them on stderr when progress is enabled (see the module docstring)."""
    if total is None:
        try:
            total = len(items)                                # type: ignore[arg-type]
        except TypeError:
            total = None
    with Progress(total, label, progress=progress) as bar:
        for item in items:
            yield item
            bar.update()
