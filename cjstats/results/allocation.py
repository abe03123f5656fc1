"""The result of :func:`cjstats.optimise`, shared by the closed-form optimiser (:mod:`cjstats.decisions.optimise`) and the
posterior-predictive one (:mod:`cjstats.decisions.predictive`), so neither imports the other's module for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from cjstats.results.base import Result

__all__ = ["Allocation", "p_best"]

_TOL = 1e-12          # relative slack when comparing a cost with the budget (as in cjstats.decisions.optimise)


@dataclass(frozen=True)
class Allocation(Result):
    """The optimiser's answer: ranked designs, the recommendation and how sure we are.

    Attributes
    ----------
    table : DataFrame
        The best design of each (strategy, judges per generation), ranked: ``rank, strategy,
        judges_per_generation, n, m, budget_per_scenario, calls, cost, max_cost, variance, se, variance_lower,
        variance_upper, p_best`` (and ``p_reaches_target`` with a target SE). ``cost`` is the expected cost and
        ``max_cost`` the most the design can cost (the budget binds on it). ``p_best`` is the probability,
        under the components' uncertainty, that the design has the lowest variance among the rows (with a
        target: that it is the cheapest row that reaches it).
    strategies : DataFrame
        One row per strategy (its best design) with the probability that the strategy is best.
    designs : DataFrame
        Every feasible design enumerated, with its predicted variance.
    recommendation : Mapping
        The first row of ``table`` as a dict.
    frequencies : Mapping or None
        Judge shares of the ``weighted`` strategy (Neyman/Cochran).
    uncertainty : str
        Where the intervals and probabilities come from: ``"posterior draws"``, ``"interval bounds"`` or
        ``"none"``.
    """

    table: pd.DataFrame
    strategies: pd.DataFrame
    designs: pd.DataFrame
    recommendation: Mapping[str, Any]
    budget: float | None
    budget_unit: str
    target_se: float | None
    k_total: int
    n_max: int
    components: Mapping[str, float]
    judge_costs: Mapping[str, float]
    generation_cost: float
    frequencies: Mapping[str, float] | None
    uncertainty: str
    ci_level: float
    model: str | None = None
    criterion: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_frame(self) -> pd.DataFrame:
        """A copy of the ranked table."""
        return self.table.copy()

    def as_text(self) -> str:
        who = "" if self.model is None else f" for model '{self.model}'" + (
            "" if self.criterion is None else f", criterion '{self.criterion}'")
        goals = ([f"budget {self.budget:g} {self.budget_unit}"] if self.budget is not None else []) + (
            [f"target SE {self.target_se:g}"] if self.target_se is not None else [])
        goal = ", ".join(goals)
        r = self.recommendation
        pct = f"{int(round(100 * self.ci_level))}%"
        ival = ("" if not math.isfinite(r["variance_lower"]) else
                f" (SE {pct} interval [{math.sqrt(r['variance_lower']):.4g}, {math.sqrt(r['variance_upper']):.4g}])")
        lines = [f"Allocation{who}: {goal}; K_tot = {self.k_total} judges; up to {self.n_max} scenarios",
                 f"Recommended: {r['strategy']}, {r['judges_per_generation']} judge(s) per generation, "
                 f"n = {r['n']} scenarios x m = {r['m']} generations = {r['calls']} calls (cost {r['cost']:g}"
                 + (f", at most {r['max_cost']:g}" if r["max_cost"] > r["cost"] * (1 + _TOL) else "") + "); "
                 f"predicted SE {r['se']:.4g}{ival}; P(best) = {r['p_best']:.2f} among the {len(self.table)} "
                 f"ranked designs",
                 "", "Best design per strategy (uncertainty: " + self.uncertainty + "; p_best among these "
                 f"{len(self.strategies)})"]
        cols = ["strategy", "judges_per_generation", "n", "m", "calls", "cost", "max_cost", "se", "variance_lower",
                "variance_upper", "p_best"]
        show = self.strategies[[c for c in cols if c in self.strategies.columns]].copy()
        show["se_lower"] = np.sqrt(show.pop("variance_lower"))
        show["se_upper"] = np.sqrt(show.pop("variance_upper"))
        lines.append(show.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        if self.frequencies:
            lines += ["", "Weighted judge shares (Neyman/Cochran): " +
                      ", ".join(f"{k} {v:.3f}" for k, v in self.frequencies.items())]
        return "\n".join([*lines, *([""] + list(self.notes) if self.notes else [])])

    def __str__(self) -> str:
        return self.as_text()


# ------------------------------------------------------------------------------------------- optimiser
def p_best(vd: np.ndarray, cost: np.ndarray, target_v: float | None) -> np.ndarray:
    """Share of draws in which each row wins (ties split): lowest variance, or cheapest reaching the target."""
    if target_v is None:
        score = vd
    else:
        score = np.where(vd <= target_v, cost[:, None], np.inf)
    best = score.min(axis=0)
    win = (score <= best * (1 + 1e-9) + 1e-300) & np.isfinite(best)
    cnt = win.sum(axis=0)
    return np.where(cnt > 0, win / np.maximum(cnt, 1), 0.0).mean(axis=1)
