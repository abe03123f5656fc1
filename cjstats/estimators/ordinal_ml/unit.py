"""One unit's ordinal fit (one model, or model x criterion): the scenario-only model by AGQ from its rows
(:func:`fit_unit`, a ``GroupData``) or from its per-pattern counts (:func:`fit_patterns`, the m = 1 statistics
:class:`cjstats.stats.ordinal.OrdinalPatterns`, which give the same problem number for number), and the model with
the nested generation effect by Laplace (:func:`fit_unit_nested`, rows only). Re-exported
by :mod:`cjstats.estimators.ordinal_ml`; kept here so that :mod:`.threshold_test`, which the package imports, fits
units without importing the package."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cjstats.exceptions import CjstatsError
from cjstats.estimators.ordinal_ml.likelihood import make_problem
from cjstats.estimators.ordinal_ml.nested import fit_nested
from cjstats.estimators.ordinal_ml.optimise import fit_problem
from cjstats.io.score_kind import ORDINAL_MAX_LEVELS

__all__ = ["fit_unit", "fit_unit_nested", "fit_patterns"]


def _check_values(values: np.ndarray, label: str) -> None:
    """One sentence when a unit's distinct scores cannot be the categories of the ordinal model."""
    if values.size < 2:
        raise CjstatsError(f"{label.capitalize()} has a single score value: the ordinal model needs two.")
    if values.size > ORDINAL_MAX_LEVELS:
        raise CjstatsError(f"Column 'score' of {label} takes {values.size} distinct values: method='ordinal' fits "
                           f"ordered categories (at most {ORDINAL_MAX_LEVELS}, one threshold between each two), so "
                           f"these scores are continuous; use method='reml', or round them to the rating scale.")


def _problem(g: Any, link: str, thresholds: str, nagq: int):
    values, cat = np.unique(np.asarray(g.y, dtype=np.float64), return_inverse=True)
    _check_values(values, g.label())
    p = make_problem(cat, g.scenario, g.judge, n_scenarios=g.design.n_scenarios, n_judges=g.design.n_judges,
                     n_categories=values.size, link=link, thresholds=thresholds, nagq=nagq)
    return p, values


def fit_unit(g: Any, *, link: str = "probit", thresholds: str = "shared", nagq: int = 10):
    """Fit one unit's rows (a ``GroupData``); returns (problem, UnitFit, category values)."""
    from cjstats.estimators.ordinal_ml.optimise import limit_thresholds

    p, values = _problem(g, link, thresholds, nagq)
    fixed, x0 = limit_thresholds(p)
    return p, fit_problem(p, x0, fixed=fixed), values


def fit_patterns(pat: Any, label: str, *, link: str = "probit", thresholds: str = "shared", nagq: int = 10):
    r"""Fit one unit with one generation per scenario from its per-pattern counts (an
    :class:`~cjstats.stats.ordinal.OrdinalPatterns`): -log L = -sum_p n_p log L_p over its distinct patterns p.
    The problem is the one :func:`.likelihood.compress` makes from the unit's rows (same patterns, order, rows
    and weights) and the start the one :func:`fit_unit` takes (the category shares of every call, each pattern's
    rows counted n_p times), so the fit is :func:`fit_unit`'s, number for number. ``label`` names the unit in
    messages. Returns (problem, UnitFit, category values); the problem has one scenario per pattern."""
    from dataclasses import replace

    from cjstats.estimators.ordinal_ml.optimise import limit_thresholds, start_values

    values = np.asarray(pat.values, dtype=np.float64)
    _check_values(values, label)
    cat, scen, judge, weight = pat.problem_rows()
    p = replace(make_problem(cat, scen, judge, n_scenarios=int(pat.codes.shape[0]), n_judges=pat.k,
                             n_categories=values.size, link=link, thresholds=thresholds, nagq=nagq),
                scenario_weight=weight)
    x0 = start_values(p, row_weight=None if weight is None else weight[scen])
    fixed, x0 = limit_thresholds(p, x0)
    return p, fit_problem(p, x0, fixed=fixed), values


def fit_unit_nested(g: Any, *, link: str = "probit", thresholds: str = "shared"):
    """Fit one unit's rows with the nested generation effect (:mod:`.nested`, Laplace); returns (nested problem,
    UnitFit whose x ends with log s_b, category values)."""
    from cjstats.estimators.ordinal_ml.nested import NestedProblem

    p, values = _problem(g, link, thresholds, 1)
    from cjstats.estimators.ordinal_ml.optimise import limit_thresholds

    q = NestedProblem(p, np.asarray(g.cell, dtype=np.int64), np.asarray(g.cell_scenario, dtype=np.int64),
                      int(np.asarray(g.cell_scenario).size))
    fixed, x0 = limit_thresholds(p)
    return q, fit_nested(q, np.concatenate([x0, [math.log(0.5)]]), fixed=fixed), values
