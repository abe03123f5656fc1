"""Pieces every backend shares: estimability checks, provenance and result assembly.

Backends stay parallel (none imports another); they all import this module. Backends fit from the
statistics layer (:class:`~cjstats.stats.ScoreStats`, one :class:`~cjstats.stats.CellStats` per unit); the
score rows reach only the options that declare they need them (:func:`rows_for`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cjstats import _dist
from cjstats.results.components import (
    ComponentRow,
    ParameterCovariance,
    VarianceComponents,
    build_components_frame,
    build_offsets_frame,
)
from cjstats._warnings import warn
from cjstats.results.base import plain
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io.scores import GroupData, Scores
from cjstats.stats import CellStats, ScoreStats, build_stats

__all__ = ["GroupFit", "check_estimable", "make_provenance", "assemble", "group_name",
           "M1_NOTE", "SJ_NOTE", "resolve_scenario_judge", "scenario_judge_lr_test", "fit_groups", "as_stats", "rows_for", "location_params",
           "terms_of_rows"]

Unit = CellStats | GroupData

#: The note carried by the ``generation`` row when every scenario has one generation.
M1_NOTE = ("not identifiable: one generation per scenario (m = 1), so alpha_i + beta_i1 is one constant per "
           "scenario and the scenario component holds sigma2_alpha + sigma2_beta")


#: The note carried by the ``scenario_judge`` row when no judge scored two generations of a scenario.
SJ_NOTE = ("not identifiable: no judge scored two generations of the same scenario, so the scenario x judge "
           "interaction (alpha gamma)_il cannot be told from the residual, which holds it")


def resolve_scenario_judge(unit: Unit, option: Any, *, caller: str = "estimate",
                           unsupported: str | None = None, warn_unsupported: bool = True) -> tuple[bool, str]:
    """Whether to fit ``scenario_judge`` for one unit, and the note of its row when it is not fitted.

    ``option`` is ``"auto"`` (fit it where identifiable: some judge scored two generations of a scenario),
    ``True`` (fit it; refuse, naming the unit, where it is not identifiable) or ``False`` (never). ``unsupported``
    is a reason this fit cannot include the term; statistics from an engine that does not collect the scenario x
    judge sums (``unit.sj`` is None) are one such reason, checked here for every backend. Then ``True`` is
    refused, and ``"auto"`` leaves the term out, says why in the note and (``warn_unsupported``) warns, because
    the interaction is in the data.
    """
    if option not in ("auto", True, False):
        raise CjstatsError(f"The 'scenario_judge' argument of {caller} must be 'auto', True or False. "
                           f"Got {option!r} instead.")
    if option is False:
        return False, ("not fitted (scenario_judge=False): the scenario x judge interaction is part of the "
                       "residual")
    pairs = unit.max_pair_calls if isinstance(unit, CellStats) else _pair_calls(unit)
    if pairs < 2:
        if option is True:
            raise CjstatsError(f"scenario_judge=True: {unit.label()} has no judge that scored two generations of "
                               f"one scenario, so the scenario x judge interaction is not identifiable. Score "
                               f"m >= 2 generations per scenario with the same judges, or use scenario_judge='auto'.")
        return False, SJ_NOTE
    if unsupported is None and isinstance(unit, CellStats) and unit.sj is None:
        unsupported = ("the statistics come from an engine that does not collect the scenario x judge sums "
                       "(use engine='numpy')")
    if unsupported:
        if option is True:
            raise CjstatsError(f"scenario_judge=True: {unsupported}.")
        if warn_unsupported:
            warn(f"scenario_judge is identifiable for {unit.label()} but not fitted: {unsupported}.",
                 CjstatsWarning, stacklevel=5)
        return False, f"not fitted: {unsupported}; the residual holds it"
    return True, ""


def _pair_calls(g: GroupData) -> int:
    k = g.design.n_judges
    scen = np.asarray(g.cell_scenario)[np.asarray(g.cell)]
    return int(np.bincount(scen * k + np.asarray(g.judge)).max()) if len(g.y) else 0


def scenario_judge_lr_test(statistic: float, *, df: int = 1, method: str) -> dict[str, Any]:
    """Test of s2_scenario_judge = 0 from a likelihood-ratio statistic (REML criteria of the models without and
    with the term): the null value is on the boundary, so the null distribution is the mixture
    0.5 chi2_0 + 0.5 chi2_1 (Self & Liang 1987; Stram & Lee 1994) and p = 0.5 P(chi2_1 > LR)."""
    lr = max(float(statistic), 0.0)
    return {"test": "REML likelihood ratio (0.5 chi2_0 + 0.5 chi2_1)", "statistic": lr, "df": df,
            "p_value": float(0.5 * _dist.chi2_sf(lr, df)) if lr > 0 else 1.0, "method": method}


@dataclass(frozen=True, slots=True)
class GroupFit:
    """What a backend computes for one group: component rows, judge offsets, diagnostics."""

    rows: list[ComponentRow]
    offsets: list[dict[str, Any]]
    diagnostics: dict[str, Any] = field(default_factory=dict)
    cov: ParameterCovariance | None = None
    dropped: dict[str, Any] | None = None   # what incomplete="drop" left out of this group (cjstats._drop)
    #: The variance terms this group's fit holds (names of cjstats.results.model.TERMS); None: read from the rows
    #: (every identifiable variance row but the residual and the judge views).
    terms: tuple[str, ...] | None = None


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

    return {"cjstats_version": __version__, "method": method, "seed": seed, "options": plain(dict(options)),
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
    rows, offsets, diagnostics, covariance, fitted = [], [], {}, {}, {}
    for g, fit in results:
        fitted[group_name(g)] = fit.terms if fit.terms is not None else terms_of_rows(fit.rows)
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
        covariance=covariance or None, dropped=dropped, fitted_terms=fitted,
    )


def terms_of_rows(rows: Iterable[ComponentRow]) -> tuple[str, ...]:
    """The variance terms a group's rows show were fitted: the identifiable rows named in the term vocabulary."""
    from cjstats.results.model import TERMS

    have = {r.component for r in rows if r.identifiable}
    return tuple(t for t in TERMS if t in have or t == "scenario")
