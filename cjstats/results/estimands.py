"""The one estimand registry: every list of component names in the package derives from it.

:data:`ESTIMANDS` maps a name to an :class:`Estimand`: its meaning, the view of the judges it takes
(:data:`VIEWS`), its kind, and where it is used: ``per_model`` (reported by every per-model backend, in report
order: :data:`COMPONENTS`), ``joint`` (reported only by the joint fits:
:data:`JOINT_COMPONENTS`) and ``decision`` (an input of the closed-form design variances:
``cjstats.decisions.schedules.COMPONENTS``). New names are registered with :func:`register_estimand`. This
module imports nothing heavy, so the defaults can read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cjstats.exceptions import CjstatsError

__all__ = ["Estimand", "ESTIMANDS", "register_estimand", "VIEWS", "names", "COMPONENTS", "JOINT_COMPONENTS"]

#: The two views of the judges. ``panel``: the judges in the data are the population of interest (judges fixed;
#: the paper's sigma2_gamma, the estimand ``judge_panel``). ``population``: the judges are a draw from a larger
#: population (judges random, lme4's ``(1|judge)``; the estimand ``judge_population``).
VIEWS: tuple[str, ...] = ("panel", "population")


@dataclass(frozen=True, slots=True)
class Estimand:
    """A named quantity a backend may report: its meaning, the view of the judges it takes, its kind and use."""

    name: str
    meaning: str
    view: Literal["panel", "population", "either"] = "panel"
    kind: Literal["variance", "mean", "contrast"] = "variance"
    per_model: bool = False
    joint: bool = False
    decision: bool = False


#: The registry of estimand names: name -> :class:`Estimand`. The ``component`` column holds only these.
ESTIMANDS: dict[str, Estimand] = {}


def register_estimand(name: str, meaning: str, *, view: Literal["panel", "population", "either"] = "panel",
                      kind: Literal["variance", "mean", "contrast"] = "variance", per_model: bool = False,
                      joint: bool = False, decision: bool = False) -> Estimand:
    """Register an estimand name with its meaning (re-registering the same name replaces it)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise CjstatsError(f"The 'name' argument of register_estimand must be an identifier such as 'judge_model'. "
                           f"Got {name!r} instead.")
    if view not in (*VIEWS, "either"):
        raise CjstatsError(f"The 'view' argument of register_estimand must be 'panel', 'population' or 'either'. "
                           f"Got {view!r} instead.")
    est = Estimand(name, meaning, view, kind, per_model, joint, decision)
    ESTIMANDS[name] = est
    return est


def names(*, per_model: bool = False, joint: bool = False, decision: bool = False) -> tuple[str, ...]:
    """The registered names with the given use, in registration order."""
    return tuple(e.name for e in ESTIMANDS.values() if (per_model and e.per_model) or (joint and e.joint)
                 or (decision and e.decision))


# name, meaning, view, kind, per_model, joint, decision (report order: the per-model names first)
for _name, _meaning, _view, _kind, _pm, _j, _d in (
    ("mu", "the panel mean: mean over the panel's judges of the expected score of a new scenario", "panel", "mean",
     True, False, False),
    ("scenario", "sigma2_alpha: variance of the scenario effects alpha_i", "panel", "variance", True, False, True),
    ("generation", "sigma2_beta: variance of the generation-within-scenario effects beta_ij", "panel", "variance",
     True, False, True),
    ("scenario_judge", "sigma2 of (alpha gamma)_il: judge l's own deviation on scenario i (judges disagreeing about "
                       "which scenarios are hard); identifiable when a judge scored several generations of a scenario",
     "panel", "variance", True, False, False),
    ("residual", "sigma2_eps: variance of a single judge call around its cell and judge means (the within-cell "
                 "residual when scenario_judge is fitted)", "panel", "variance", True, False, True),
    ("judge_panel", "(1/K) sum_l gamma_l^2: judge-offset variance of the panel in the data (judges fixed)", "panel",
     "variance", True, False, True),
    ("judge_population", "variance of the distribution the judges are drawn from (judges random)", "population",
     "variance", True, False, False),
    ("model_scenario", "variance of (alpha p)_pi: how differently models find the same scenario hard", "panel",
     "variance", False, True, False),
    ("judge_model", "the judge x model interaction: mean of (gamma p)_pl^2 over the panel and models (panel view) or "
                    "its random-effect variance (population view)", "either", "variance", False, True, False),
):
    register_estimand(_name, _meaning, view=_view, kind=_kind, per_model=_pm, joint=_j, decision=_d)

#: The estimand names the per-model backends report, in report order (docs/estimands.md).
COMPONENTS: tuple[str, ...] = names(per_model=True)

#: Extra estimand names of the joint multi-model fit (docs/estimands.md, "Several models").
JOINT_COMPONENTS: tuple[str, ...] = names(joint=True)
