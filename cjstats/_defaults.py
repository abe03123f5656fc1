"""Defaults shared by the library, the docs and the command line (one place; docs/architecture.md)."""

from __future__ import annotations

__all__ = ["CI_LEVEL", "MAX_DROP", "JOINT_LABEL", "SCORE_COLUMNS", "OPTIONAL_COLUMNS"]

# The estimand names and the two views of the judges are results' vocabulary: cjstats.results.estimands
# (ESTIMANDS, COMPONENTS, JOINT_COMPONENTS, VIEWS), which every list derives from.

#: Default level of every interval the package reports.
CI_LEVEL: float = 0.95

#: Largest share of a model's scenarios that ``incomplete="drop"`` may remove before the fit refuses
#: (``max_drop``; CLI ``--max-drop``). 1.0 allows any loss.
MAX_DROP: float = 0.5

#: Required columns of a score table, in canonical order.
SCORE_COLUMNS: tuple[str, ...] = ("model", "scenario", "generation", "judge", "score")

#: Optional columns that change how a table is analysed.
OPTIONAL_COLUMNS: tuple[str, ...] = ("criterion",)

#: The ``model`` label of the rows of the joint components table that belong to no single model.
JOINT_LABEL: str = "(joint)"
