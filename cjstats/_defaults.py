"""Defaults shared by the library, the docs and the command line (one place; docs/architecture.md)."""

from __future__ import annotations

__all__ = ["CI_LEVEL", "MAX_DROP", "COMPONENTS", "JOINT_COMPONENTS", "JOINT_LABEL", "SCORE_COLUMNS", "OPTIONAL_COLUMNS", "VIEWS"]

#: Default level of every interval the package reports.
CI_LEVEL: float = 0.95

#: Largest share of a model's scenarios that ``incomplete="drop"`` may remove before the fit refuses
#: (``max_drop``; CLI ``--max-drop``). 1.0 allows any loss.
MAX_DROP: float = 0.5

#: The estimand names the backends report, in report order (docs/estimands.md); the full registry of names
#: is ``cjstats.results.components.ESTIMANDS``.
COMPONENTS: tuple[str, ...] = ("mu", "scenario", "generation", "scenario_judge", "residual", "judge_panel",
                               "judge_population")

#: Extra estimand names of the joint multi-model fit (docs/estimands.md, "Several models"), used by :mod:`cjstats.estimators.joint`.
JOINT_COMPONENTS: tuple[str, ...] = ("model_scenario", "judge_model")

#: Required columns of a score table, in canonical order.
SCORE_COLUMNS: tuple[str, ...] = ("model", "scenario", "generation", "judge", "score")

#: Optional columns that change how a table is analysed.
OPTIONAL_COLUMNS: tuple[str, ...] = ("criterion",)

#: The two views of the judges. ``fixed``: the panel in the data is the population of interest (the paper's
#: sigma2_gamma). ``random``: the judges are a draw from a larger population (lme4's ``(1|judge)``).
VIEWS: tuple[str, ...] = ("fixed", "random")

#: The ``model`` label of the rows of the joint components table that belong to no single model.
JOINT_LABEL: str = "(joint)"
