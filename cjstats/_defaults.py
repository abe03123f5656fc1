"""Defaults shared by the library, the docs and the command line (one place; docs/architecture.md)."""

from __future__ import annotations

from cjstats.results.estimands import VIEWS as _VIEWS
from cjstats.results.estimands import names as _names

__all__ = ["CI_LEVEL", "MAX_DROP", "COMPONENTS", "JOINT_COMPONENTS", "JOINT_LABEL", "SCORE_COLUMNS", "OPTIONAL_COLUMNS", "VIEWS"]

#: Default level of every interval the package reports.
CI_LEVEL: float = 0.95

#: Largest share of a model's scenarios that ``incomplete="drop"`` may remove before the fit refuses
#: (``max_drop``; CLI ``--max-drop``). 1.0 allows any loss.
MAX_DROP: float = 0.5

#: The estimand names the per-model backends report, in report order (docs/estimands.md), from the one registry
#: ``cjstats.results.estimands.ESTIMANDS``.
COMPONENTS: tuple[str, ...] = _names(per_model=True)

#: Extra estimand names of the joint multi-model fit (docs/estimands.md, "Several models"), from the registry.
JOINT_COMPONENTS: tuple[str, ...] = _names(joint=True)

#: Required columns of a score table, in canonical order.
SCORE_COLUMNS: tuple[str, ...] = ("model", "scenario", "generation", "judge", "score")

#: Optional columns that change how a table is analysed.
OPTIONAL_COLUMNS: tuple[str, ...] = ("criterion",)

#: The two views of the judges (``cjstats.results.estimands.VIEWS``). ``panel``: the judges in the data are the
#: population of interest (the paper's sigma2_gamma). ``population``: the judges are a draw from a larger
#: population (lme4's ``(1|judge)``).
VIEWS: tuple[str, ...] = _VIEWS

#: The ``model`` label of the rows of the joint components table that belong to no single model.
JOINT_LABEL: str = "(joint)"
