"""The decision layer's input: one (model, criterion) group of a fit's variance components.

:func:`group_components` is the ONE place where the decision layer reads a fit: every decision module
(:mod:`~cjstats.decisions.optimise`, :mod:`~cjstats.decisions.schedules`, the plots and the CLI) takes a
:class:`GroupComponents` from it, never the backend that made the fit. It reads only the result's public API
(:class:`~cjstats.VarianceComponents`: ``components``, ``draws``, ``judge_offsets``, ``design``, ``scale``,
``resolve_group``), so a new backend is planned for from its first result. A plain mapping of the four
components (point values, no uncertainty) is accepted too.

A latent-scale fit (``likelihood="ordinal"``) has no score-scale components for the closed forms; its
decisions read the posterior through :func:`cjstats.decisions.predictive.ordinal_draws` instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError

__all__ = ["DECISION_COMPONENTS", "GroupComponents", "group_components"]

#: The components the decision layer reads: the four of the paper (Eq. 1, ``eq:model``: σ²_α, σ²_β, σ²_ε and
#: the panel's σ²_γ), then the scenario x judge interaction σ²_αγ (``scenario_judge``; 0 when the fit has no
#: such term or it is not identifiable, as with m = 1). Every decision module uses this order.
DECISION_COMPONENTS: tuple[str, ...] = ("scenario", "generation", "residual", "judge_panel", "scenario_judge")

_PAPER: tuple[str, ...] = DECISION_COMPONENTS[:4]          # the four a mapping must give


@dataclass(frozen=True)
class GroupComponents:
    """The public input of the decision layer: one (model, criterion) group of a fit, or a plain mapping.

    Build it with :func:`group_components` (from a :class:`~cjstats.VarianceComponents` or a mapping of the four
    components); ``plan``, ``allocate`` and the CLI read only this, never the backend that made the fit.

    ``estimates`` holds the five :data:`DECISION_COMPONENTS` (``generation`` is NaN when not identifiable;
    ``scenario_judge`` is 0 when the fit has no scenario x judge term or it is not identifiable, and then the
    interaction is inside ``residual``); ``lower`` and ``upper`` their interval bounds and ``draws`` (S, 5)
    posterior draws in that order when a fit has them (a ``scenario_judge`` column of zeros when the draws have
    none); ``judges`` and ``offsets`` the panel; ``n_scenarios`` and ``n_judges`` the group's row of
    ``fit.design``.
    """

    estimates: dict[str, float]
    lower: dict[str, float] | None = None
    upper: dict[str, float] | None = None
    ci_level: float = 0.95
    draws: np.ndarray | None = None
    judges: list[str] | None = None
    offsets: dict[str, float] | None = None
    n_scenarios: int | None = None
    n_judges: int | None = None
    model: str | None = None
    criterion: str | None = None

    @property
    def generation_identifiable(self) -> bool:
        return math.isfinite(self.estimates["generation"])

    @property
    def scenario_judge(self) -> float:
        """σ²_αγ, the scenario x judge interaction variance the decisions use (0 when absent)."""
        return float(self.estimates.get("scenario_judge", 0.0))


def _select(frame: pd.DataFrame, model: str, criterion: str | None) -> pd.Series:
    sel = frame["model"].astype(str) == str(model)
    if criterion is not None and "criterion" in frame.columns:
        sel &= frame["criterion"].astype(str) == str(criterion)
    return sel


def group_components(components: Any, model: str | None = None, criterion: str | None = None,
                     caller: str = "group_components") -> GroupComponents:
    """The components of one group of a VarianceComponents result or of a mapping (the ONE extractor).

    A latent-scale fit (``fit.scale == "latent"``, the ordinal model) is refused: the closed forms need
    score-scale variances.

    A mapping must give the four components as real numbers >= 0 (``generation`` may be NaN: not identifiable)
    and may give ``scenario_judge`` (σ²_αγ, default 0). From a fit, ``scenario_judge`` is its ``components`` row
    of that name when the term was fitted and is identifiable, else 0.
    """
    from cjstats.results.components import VarianceComponents

    if isinstance(components, Mapping):
        absent = [c for c in _PAPER if c not in components]
        if absent:
            raise CjstatsError(f"The 'components' argument of {caller} has no '{absent[0]}' (need: "
                               f"{', '.join(_PAPER)}).")
        est = {}
        for c in _PAPER:
            v = components[c]
            ok = isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))
            ok = ok and ((c == "generation" and math.isnan(float(v))) or (math.isfinite(float(v)) and float(v) >= 0))
            if not ok:
                nan = " (or NaN when not identifiable)" if c == "generation" else ""
                raise CjstatsError(f"The '{c}' component passed to {caller} must be a finite variance >= 0{nan}. "
                                   f"Got {v!r} instead.")
            est[c] = float(v)
        sj = components.get("scenario_judge", 0.0)
        ok = isinstance(sj, (int, float, np.number)) and not isinstance(sj, (bool, np.bool_))
        if not (ok and math.isfinite(float(sj)) and float(sj) >= 0):
            raise CjstatsError(f"The 'scenario_judge' component passed to {caller} must be a finite variance >= 0 "
                               f"(or left out: 0). Got {sj!r} instead.")
        est["scenario_judge"] = float(sj)
        return GroupComponents(estimates=est, model=model, criterion=criterion)
    if not isinstance(components, VarianceComponents):
        raise CjstatsError(f"The 'components' argument of {caller} must be a VarianceComponents result (from "
                           f"cjstats.estimate) or a mapping such as {{'scenario': 1.5, 'generation': 0.27, "
                           f"'residual': 1.49, 'judge_panel': 0.95}}. Got {type(components).__name__} instead.")
    fit = components
    if fit.scale != "score":
        raise CjstatsError(f"{caller} needs score-scale components, but this fit used likelihood='ordinal', whose "
                           f"components are on the latent scale. Fit with likelihood='gaussian' to plan.")
    model, criterion = fit.resolve_group(model, criterion)
    t = fit.components
    rows = t[_select(t, model, criterion)].drop_duplicates("component").set_index("component")
    est, lower, upper = ({c: float(rows.at[c, col]) for c in _PAPER} for col in ("estimate", "lower", "upper"))
    sj_ok = "scenario_judge" in rows.index and (
        "identifiable" not in rows.columns or bool(rows.at["scenario_judge", "identifiable"]))
    for out, col in ((est, "estimate"), (lower, "lower"), (upper, "upper")):
        v = float(rows.at["scenario_judge", col]) if sj_ok else 0.0
        out["scenario_judge"] = v if math.isfinite(v) else (0.0 if col != "upper" else est["scenario_judge"])
    if not math.isfinite(est["scenario_judge"]):
        est["scenario_judge"] = 0.0
    draws = None
    if fit.draws is not None and not fit.draws.empty:
        d = fit.draws[_select(fit.draws, model, criterion)]
        if not d.empty:
            sj = (d["scenario_judge"].to_numpy(dtype=float) if sj_ok and "scenario_judge" in d.columns
                  else np.zeros(len(d)))
            draws = np.column_stack([d[list(_PAPER)].to_numpy(dtype=float), sj])
    off = fit.judge_offsets
    offsets = None
    if not off.empty:
        o = off[_select(off, model, criterion)]
        offsets = dict(zip(o["judge"].astype(str), o["estimate"].astype(float))) or None
    des = fit.design[_select(fit.design, model, criterion)]
    n_scen = int(des["n_scenarios"].iloc[0]) if not des.empty else None
    n_judges = int(des["n_judges"].iloc[0]) if not des.empty else None
    return GroupComponents(estimates=est, lower=lower, upper=upper, ci_level=float(fit.ci_level), draws=draws,
                           judges=list(offsets) if offsets else None, offsets=offsets, n_scenarios=n_scen,
                           n_judges=n_judges, model=model, criterion=criterion)
