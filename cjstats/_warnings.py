"""How cjstats warns: :func:`warn`, which a blanket "ignore every warning" filter set by another package cannot
silence.

Some packages switch every warning off for the whole session when they are imported: ``ppi_py`` runs
``warnings.simplefilter("ignore")`` at import time, so after ``import ppi_py`` (directly, or through a package
that imports it) no later warning of any library is shown. A :class:`~cjstats.exceptions.CjstatsWarning` says
that a returned number needs care (too few labels, a fit that did not converge, dropped scenarios), so losing it
silently is worse than showing it.

Design: every cjstats warning goes through :func:`warn` (``tests/test_bad_input_surfaces.py`` checks that no
module calls ``warnings.warn`` with a cjstats category directly). :func:`warn` looks up the filter that
:mod:`warnings` would apply to the warning (the first entry of ``warnings.filters`` that matches its text,
category, module and line, as :func:`warnings.warn_explicit` does). Only when that filter is a *catch-all*
``"ignore"`` -- one that names no cjstats category, no message and no module, i.e. it ignores everything or every
``UserWarning`` -- is the warning re-issued inside ``warnings.catch_warnings()`` with a ``"default"`` filter for
its category in front, so it is shown (once per location, Python's default). Every deliberate choice is kept:
``warnings.simplefilter("ignore", cj.CjstatsWarning)`` or ``filterwarnings("ignore", message=...)``,
``module=...`` or ``category=NotEstimableWarning`` still silence, ``"error"`` still raises, ``"always"`` and
``pytest.warns`` still record, and code that wants a quiet block of cjstats calls says so with an
``"ignore"`` filter for ``CjstatsWarning``. The cost: a blanket ignore the user set on purpose
(``python -W ignore``, or ``warnings.simplefilter("ignore")`` in their own script) looks the same as ppi_py's
and is overridden too; to silence cjstats, name its category. The alternative, inserting a ``"default"`` filter for
``CjstatsWarning`` once after known offenders are imported, was not taken: it depends on knowing every offender
and on the order of imports, and it would override a user's own later ``simplefilter("ignore")`` the same way
while being harder to undo.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from cjstats.exceptions import CjstatsWarning

__all__ = ["warn"]


def _applies(flt: tuple[Any, ...], text: str, category: type[Warning], module: str, lineno: int) -> bool:
    """Whether the ``warnings.filters`` entry ``flt`` matches a warning, as ``warnings.warn_explicit`` tests it."""
    _, msg, cat, mod, ln = flt
    return ((msg is None or bool(msg.match(text))) and issubclass(category, cat)
            and (mod is None or bool(mod.match(module))) and (ln == 0 or lineno == ln))


def _silenced_by_catch_all(text: str, category: type[Warning], module: str, lineno: int) -> bool:
    """True when the filter :mod:`warnings` would apply is a blanket ``"ignore"`` that names no cjstats category,
    no message and no module (``simplefilter("ignore")``, or ``simplefilter("ignore", UserWarning)``)."""
    for flt in warnings.filters:
        if _applies(flt, text, category, module, lineno):
            action, msg, cat, mod, ln = flt
            blanket = ((msg is None or msg.pattern == "") and mod is None and ln == 0
                       and not issubclass(cat, CjstatsWarning))
            return action == "ignore" and blanket
    return False


def _caller(stacklevel: int) -> tuple[str, int]:
    """(module name, line) of the frame a warning with ``stacklevel`` (counted from :func:`warn`'s caller) names."""
    try:
        frame = sys._getframe(stacklevel + 1)
    except ValueError:
        return "sys", 1
    return frame.f_globals.get("__name__", "<string>"), frame.f_lineno


def warn(message: str, category: type[Warning] = CjstatsWarning, stacklevel: int = 1) -> None:
    """``warnings.warn(message, category, stacklevel)``, shown even under a catch-all ``"ignore"`` filter.

    ``stacklevel`` counts from the caller of :func:`warn`, exactly as it would for ``warnings.warn`` called in
    its place. See the module docstring for which filters are overridden (only blanket ignores) and why.
    """
    level = stacklevel + 1                     # this function's frame
    module, lineno = _caller(stacklevel)
    if _silenced_by_catch_all(str(message), category, module, lineno):
        with warnings.catch_warnings():
            warnings.filterwarnings("default", category=category)
            warnings.warn(message, category, stacklevel=level)
        return
    warnings.warn(message, category, stacklevel=level)

