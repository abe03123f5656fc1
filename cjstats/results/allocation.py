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

    def budget_sentence(self) -> str:
        """Why the recommended design spends fewer calls than a call budget (empty when it spends them all, or the
        budget is in money): a design is whole numbers n x m x k, and what is left cannot buy one more scenario or
        one more generation per scenario, or the designs that would spend it predict no smaller SE."""
        r = self.recommendation
        if self.budget is None or self.budget_unit != "calls":
            return ""
        calls, budget = int(r["calls"]), float(self.budget)
        left = budget - calls
        if left < 1:
            return ""
        n, m = int(r["n"]), int(r["m"])
        per = calls / (n * m) if n * m else float("nan")       # calls per generation (k, or 1 for weighted)
        k = int(round(per)) if math.isfinite(per) and abs(per - round(per)) < 1e-9 else None
        head = (f"The design uses {calls:,} of the {budget:g} budgeted calls (left over: {left:g}): a design is whole "
                f"numbers of scenarios, generations and judges"
                + (f" (n x m x k = {n} x {m} x {k})" if k is not None else f" (n = {n}, m = {m})"))
        if k is None:
            return head + ", so the budget cannot be hit exactly."
        scen, gen = m * k, n * k
        if left < min(scen, gen):
            return (head + f", and one more scenario ({scen} calls) or one more generation per scenario ({gen} "
                           f"calls) would not fit in what is left.")
        d = self.designs
        more = d[(d["calls"] > calls) & (d["calls"] <= budget)] if "calls" in d.columns else d.iloc[:0]
        if len(more):
            return (head + f"; the {len(more)} enumerated design(s) that spend more of it predict a larger SE (or "
                           f"the same).")
        mmax = int(d["m"].max()) if "m" in d.columns and len(d) else m
        return (head + f"; no enumerated design spends more within the budget (n at most {self.n_max} scenarios, m "
                       f"at most {mmax} generations, k at most {self.k_total} judges).")

    def as_text(self) -> str:
        from cjstats.results.format import format_prob

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
                 f"predicted SE {r['se']:.4g}{ival}; P(best) = {format_prob(r['p_best'])} among the "
                 f"{len(self.table)} ranked designs",
                 *([s] if (s := self.budget_sentence()) else []),
                 "", "Best design per strategy (uncertainty: " + self.uncertainty + "; p_best among these "
                 f"{len(self.strategies)})"]
        cols = ["strategy", "judges_per_generation", "n", "m", "calls", "cost", "max_cost", "se", "variance_lower",
                "variance_upper", "p_best"]
        show = self.strategies[[c for c in cols if c in self.strategies.columns]].copy()
        show["se_lower"] = np.sqrt(show.pop("variance_lower"))
        show["se_upper"] = np.sqrt(show.pop("variance_upper"))
        if "p_best" in show.columns:                  # fixed decimals: 1.000, >0.999, <0.001 (never 1, 0.9999)
            show["p_best"] = [format_prob(v) for v in show.pop("p_best")]
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
