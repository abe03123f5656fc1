"""Pieces every backend shares: estimability checks, provenance and result assembly.

Backends stay parallel (none imports another); they all import this module. Backends fit from the
statistics layer (:class:`~cjstats.stats.ScoreStats`, one :class:`~cjstats.stats.CellStats` per unit); the
score rows reach only the options that declare they need them (:func:`rows_for`).
"""

from __future__ import annotations

import datetime as _dt
from types import MappingProxyType
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cjstats.components import (
    ComponentRow,
    ParameterCovariance,
    VarianceComponents,
    build_components_frame,
    build_offsets_frame,
)
from cjstats.exceptions import CjstatsError
from cjstats.scores import GroupData, Scores
from cjstats.stats import CellStats, ScoreStats, build_stats

__all__ = ["GroupFit", "check_estimable", "make_provenance", "assemble", "group_name",
           "M1_NOTE", "fit_groups", "as_stats", "rows_for", "location_params"]

Unit = CellStats | GroupData

#: The note carried by the ``generation`` row when every scenario has one generation.
M1_NOTE = ("not identifiable: one generation per scenario (m = 1), so alpha_i + beta_i1 is one constant per "
           "scenario and the scenario component holds sigma2_alpha + sigma2_beta")


@dataclass(frozen=True, slots=True)
class GroupFit:
    """What a backend computes for one group: component rows, judge offsets, diagnostics."""

    rows: list[ComponentRow]
    offsets: list[dict[str, Any]]
    diagnostics: dict[str, Any] = field(default_factory=dict)
    cov: ParameterCovariance | None = None
    dropped: dict[str, Any] | None = None   # what incomplete="drop" left out of this group (cjstats._drop)


def as_stats(data: ScoreStats | Scores, rows: Scores | None = None) -> tuple[ScoreStats, Scores | None]:
    """The statistics to fit from, and the rows (a Scores table passed as ``data`` is reduced and kept as rows)."""
    if isinstance(data, ScoreStats):
        return data, rows
    if isinstance(data, Scores):
        return build_stats(data), data if rows is None else rows
    raise CjstatsError(f"A backend's fit takes the statistics from cjstats.stats.build_stats (or a Scores table). "
                       f"Got {type(data).__name__} instead.")


def rows_for(rows: Scores | None, unit: CellStats) -> GroupData | None:
    """The rows of one unit, or None when no rows were passed (the backend then must not need them)."""
    if rows is None:
        return None
    return rows.group(unit.model, unit.criterion)


def location_params(judge_labels: tuple[str, ...]) -> tuple[str, ...]:
    """Names of a group's location parameters: ``mu`` then ``gamma[<judge>]``."""
    return ("mu", *(f"gamma[{lab}]" for lab in judge_labels))


def group_name(g: Unit) -> str:
    return g.model if g.criterion is None else f"{g.model} / {g.criterion}"


def check_estimable(g: Unit) -> None:
    """Raise one clear sentence when the unit cannot be decomposed at all."""
    d = g.design
    if d.n_judges < 2:
        raise CjstatsError(f"{g.label(capital=True)} has only one judge ('{d.judges[0]}'): judge offsets and "
                           f"the residual cannot be separated. Score it with at least 2 judges.")
    if d.n_scenarios < 2:
        raise CjstatsError(f"{g.label(capital=True)} has only one scenario: the scenario variance needs at "
                           f"least 2. Add scenarios or drop this model.")
    lo, hi = (g.y_min, g.y_max) if isinstance(g, CellStats) else (float(np.min(g.y)), float(np.max(g.y)))
    if hi == lo:
        raise CjstatsError(f"Column 'score' is constant ({lo:g} in every row) for {g.label()}: there is no "
                           f"variance to decompose.")


def make_provenance(method: str, seed: int | None, options: Mapping[str, Any]) -> dict[str, Any]:
    from cjstats import __version__

    return {"cjstats_version": __version__, "method": method, "seed": seed, "options": dict(options),
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def fit_groups(stats: ScoreStats, fit_one: Callable[[CellStats], GroupFit], *, method: str, ci_level: float,
               seed: int | None, options: Mapping[str, Any], draws: Any = None, posterior: Any = None,
               scale: str = "score", account_drop: Callable[[list[dict[str, Any]]], pd.DataFrame] | None = None,
               ) -> VarianceComponents:
    """Run ``fit_one`` on every unit's statistics and assemble the result.

    When the groups report what they dropped (``GroupFit.dropped``), ``account_drop`` turns the records into the
    result's ``dropped`` table (:func:`cjstats._drop.account_for_drop`, which may warn or refuse the fit).
    """
    results = []
    for g in stats:
        check_estimable(g)
        results.append((g, fit_one(g)))
    records = [{**g.key, **fit.dropped} for g, fit in results if fit.dropped is not None]
    dropped = account_drop(records) if records and account_drop is not None else None
    return assemble(stats, results, method=method, ci_level=ci_level,
                    provenance=make_provenance(method, seed, options), draws=draws,
                    posterior=posterior, scale=scale, dropped=dropped)


def assemble(scores: ScoreStats | Scores, results: Iterable[tuple[Unit, GroupFit]], *, method: str, ci_level: float,
             provenance: Mapping[str, Any], draws: Any = None, posterior: Any = None,
             scale: str = "score", dropped: pd.DataFrame | None = None) -> VarianceComponents:
    """Build the one immutable result from per-group fits."""
    rows, offsets, diagnostics, covariance = [], [], {}, {}
    for g, fit in results:
        rows.extend((g.key, r) for r in fit.rows)
        offsets.extend({**g.key, **o} for o in fit.offsets)
        diagnostics[group_name(g)] = fit.diagnostics
        if fit.cov is not None:
            covariance[group_name(g)] = fit.cov
    has_c = scores.has_criterion
    return VarianceComponents(
        components=build_components_frame(rows, method=method, ci_level=ci_level, has_criterion=has_c),
        judge_offsets=build_offsets_frame(offsets, method=method, ci_level=ci_level, has_criterion=has_c),
        method=method, design=scores.design, ci_level=ci_level, diagnostics=diagnostics,
        provenance=provenance, draws=draws, posterior=posterior, scale=scale,
        covariance=MappingProxyType(covariance) if covariance else None, dropped=dropped,
    )
