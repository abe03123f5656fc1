"""The registry of report sections: a section is one module with ``render(inputs) -> list[item]`` and one
:func:`register_section` line in :mod:`cjstats.reporting.sections`.

``render`` only formats: it receives the :class:`~cjstats.reporting.plan.ReportInputs` that
:func:`~cjstats.reporting.plan.compute_inputs` computed once (every fit, test, allocation and comparison the report
shows) and returns the section's items (:mod:`cjstats.reporting.items`): figures drawn by :mod:`cjstats.plots`,
tables through :func:`~cjstats.reporting.items.format_table`, and sentences. An empty list leaves the section out
(an optional result that was not given). :func:`cjstats.reporting.report` renders the registered sections in
``order``; ``tests/test_report_sections.py`` checks every entry (it renders from computed results with every
estimator disabled, its items are well formed, it has a title).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cjstats.exceptions import CjstatsError

__all__ = ["Section", "SECTIONS", "register_section", "ordered_sections"]


@dataclass(frozen=True)
class Section:
    """One report section: its id (the HTML anchor), its title, its place and its renderer."""

    name: str
    title: str
    order: float
    render: Callable[[Any], list[dict[str, Any]]]


#: Every registered section by name (:func:`ordered_sections` gives them in report order).
SECTIONS: dict[str, Section] = {}


def register_section(section: Section) -> Section:
    """Add ``section`` to :data:`SECTIONS` (a name registered twice is refused, so no section is replaced by
    accident)."""
    if not isinstance(section, Section):
        raise CjstatsError(f"register_section takes a Section(name, title, order, render); got "
                           f"{type(section).__name__}.")
    if section.name in SECTIONS:
        raise CjstatsError(f"A report section named '{section.name}' is already registered; choose another name.")
    if not section.name.replace("_", "").isalnum() or not section.title.strip():
        raise CjstatsError(f"A report section needs an identifier name (letters, digits, '_') and a title; got "
                           f"name {section.name!r}, title {section.title!r}.")
    SECTIONS[section.name] = section
    return section


def ordered_sections() -> list[Section]:
    """The registered sections in report order (by ``order``, then name)."""
    return sorted(SECTIONS.values(), key=lambda s: (s.order, s.name))
