r"""Likelihood-ratio test of shared against per-judge thresholds in the ML ordinal model, per unit.

    LR = 2 (l_judge - l_shared),   df = (K - 1)(J - 1) - (K - 1) = (K - 1)(J - 2)

(nested models; Agresti 2010, 5.6). Two references:

- ``reference="chi2"``: LR ~ chi2_df, the asymptotic one.
- ``reference="bootstrap"``: the parametric bootstrap of LR under the shared-threshold fit. ``n_boot`` tables are
  drawn from the fitted null model on the unit's own design (same scenario, judge and generation of every row):
  a_i ~ N(0, s_a^2), (b_c ~ N(0, s_b^2) with the generation effect), e from the link, Y = #{theta_k < gamma_l +
  a_i (+ b_c) + e}; both models are refitted to each and p = (1 + #{LR* >= LR}) / (1 + n_boot).

Measured level at a nominal 5% (``benchmarks/bench_small_n_levels.py``; 4 judges, 5 categories, cutpoints
(-1.2, -0.4, 0.4, 1.2), offsets (-0.3, 0, 0.1, 0.2), s_a^2 = 0.8, one generation, AGQ 10; :data:`MEASURED_LEVEL`):
chi2 0.080 (probit) and 0.068 (logit) at 20 scenarios, 0.035 and 0.048 at 80 (400 replicates, MC SE 0.011);
bootstrap 0.010 at 20 scenarios (probit; 100 replicates of 19 bootstrap tables, MC SE 0.022; rate at 10%: 0.09). So the chi2
reference is liberal at 20 scenarios and within 1.5 Monte Carlo SE of 5% at 80. Below :data:`CHI2_MIN_SCENARIOS` scenarios a chi2 row warns and says so in its ``reference``; the
bootstrap (seeded) holds its level there (a Monte Carlo test is exact whatever ``n_boot`` when the null model
is the fitted one; the residual error is the plug-in of the nuisance parameters).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cjstats import _dist
from cjstats._validate import check_choice
from cjstats.estimators.base import as_stats, rows_for
from cjstats.estimators.ordinal_ml.likelihood import make_problem, unpack
from cjstats.estimators.ordinal_ml.links import LINKS
from cjstats.exceptions import CjstatsError, CjstatsWarning

__all__ = ["threshold_test", "bootstrap_null_categories", "CHI2_MIN_SCENARIOS", "MEASURED_LEVEL"]

#: Below this number of scenarios the chi2 reference of :func:`threshold_test` is not trusted (measured liberal at
#: 20, within Monte Carlo error at 80: :data:`MEASURED_LEVEL`), and a chi2 row warns.
CHI2_MIN_SCENARIOS = 80

#: Rejection rate at 5% under shared thresholds, (link, n scenarios, reference) -> (level, replicates); filled
#: from ``benchmarks/bench_small_n_levels.py`` (see docs/ordinal.md).
MEASURED_LEVEL: dict[tuple[str, int, str], tuple[float, int]] = {
    ("probit", 20, "chi2"): (0.080, 400), ("logit", 20, "chi2"): (0.068, 400),
    ("probit", 80, "chi2"): (0.035, 400), ("logit", 80, "chi2"): (0.048, 400),
    ("probit", 20, "bootstrap"): (0.010, 100),
}


def bootstrap_null_categories(problem: Any, x: np.ndarray, rng: np.random.Generator, *, cell: np.ndarray | None = None,
                              n_cells: int = 0) -> np.ndarray:
    """One table's categories (N,) drawn from the shared-threshold model at the optimiser's vector ``x`` on the
    design of ``problem`` (an :class:`.likelihood.OrdinalProblem`): Y = #{theta_k < gamma_l + a_i (+ b_c) + e},
    a_i ~ N(0, s_a^2), e standard normal (probit) or logistic (logit); with ``cell`` (N,) the rows' generation
    cells, x ends with log s_b and b_c ~ N(0, s_b^2)."""
    p = problem
    log_s, gamma, theta = unpack(p, x[:-1] if cell is not None else x)
    eta = rng.normal(0.0, math.exp(log_s), p.n_scenarios)[p.scenario] + gamma[p.judge]
    if cell is not None:
        eta = eta + rng.normal(0.0, math.exp(float(x[-1])), n_cells)[cell]
    e = rng.standard_normal(eta.size) if p.link == "probit" else rng.logistic(size=eta.size)
    return ((eta + e)[:, None] > theta[0][None, :]).sum(axis=1).astype(np.int64)


def _refit_lr(gd: Any, category: np.ndarray, *, link: str, nagq: int, nested: bool) -> float:
    """LR of one bootstrap table (categories coded 0..J-1 on the unit's rows), both models refitted."""
    from cjstats.estimators.ordinal_ml.nested import NestedProblem, fit_nested
    from cjstats.estimators.ordinal_ml.optimise import fit_problem

    ll = []
    for thr in ("shared", "judge"):
        p = make_problem(category, gd.scenario, gd.judge, n_scenarios=gd.design.n_scenarios,
                         n_judges=gd.design.n_judges, n_categories=_n_categories(gd), link=link, thresholds=thr,
                         nagq=1 if nested else nagq)
        if nested:
            cs = np.asarray(gd.cell_scenario, dtype=np.int64)
            f = fit_nested(NestedProblem(p, np.asarray(gd.cell, dtype=np.int64), cs, int(cs.size)), hessian=False)
        else:
            f = fit_problem(p, hessian=False)
        ll.append(f.loglik)
    return max(2 * (ll[1] - ll[0]), 0.0)


def _n_categories(gd: Any) -> int:
    return int(np.unique(np.asarray(gd.y, dtype=np.float64)).size)


def threshold_test(scores: Any, *, link: str = "probit", nagq: int = 10, generation: bool | None = None,
                   reference: str = "chi2", n_boot: int = 199, seed: int | None = 0) -> list[dict[str, Any]]:
    """Likelihood-ratio test of shared vs per-judge thresholds, per unit (module docstring for the formula and the
    measured levels).

    ``scores``: a Scores table (:func:`cjstats.read_scores`) or a DataFrame with model, scenario, judge, score.
    Binary scores (J = 2) have df = 0: the two models are the same and the p-value is NaN. ``generation`` as in
    :func:`cjstats.estimators.ordinal_ml.fit`: with several generations per scenario (``None`` or True) both
    models have the nested generation effect (Laplace), the model ``fit`` reports; ``False`` compares the
    scenario-only models (AGQ ``nagq``).

    ``reference``: ``"chi2"`` (default; warns below :data:`CHI2_MIN_SCENARIOS` scenarios, where it is liberal) or
    ``"bootstrap"`` (``n_boot`` parametric-bootstrap tables under the shared-threshold fit, seeded by ``seed``;
    about ``n_boot`` x 0.08 s per unit at 20-80 scenarios x 4 judges).

    Each row holds the unit's key (``model``, and ``criterion`` when the table has criteria), ``statistic``,
    ``df``, ``p_value``, ``reference`` (how the p-value was computed), ``random_effects`` (the fitted model form:
    ``"scenario (AGQ 10)"`` or ``"scenario + generation (Laplace)"``) and ``n_scenarios``."""
    import pandas as pd
    from cjstats._warnings import warn
    from cjstats.estimators.ordinal_ml.unit import fit_unit, fit_unit_nested
    from cjstats.io.read import read_scores

    check_choice("link", link, LINKS, caller="threshold_test")
    check_choice("reference", reference, ("chi2", "bootstrap"), caller="threshold_test")
    if reference == "bootstrap" and (not isinstance(n_boot, int | np.integer) or isinstance(n_boot, bool)
                                     or n_boot < 1):
        raise CjstatsError(f"The 'n_boot' argument of threshold_test must be a positive integer (tables drawn "
                           f"for the bootstrap reference; 199 is usual: (n_boot + 1) x 0.05 an integer). Got {n_boot!r} instead.")
    if isinstance(scores, pd.DataFrame):
        scores = read_scores(scores)
    stats, rows = as_stats(scores)
    if rows is None:
        raise CjstatsError("threshold_test needs the score rows: pass the Scores table (or a DataFrame), "
                           "not the statistics.")
    out = []
    small = []
    for g in stats:
        gd = rows_for(rows, g)
        one_gen = int(gd.design.generations_max) == 1
        nested = (not one_gen) if generation is None else (bool(generation) and not one_gen)
        if nested:
            q0, f0, _ = fit_unit_nested(gd, link=link, thresholds="shared")
            _, f1, _ = fit_unit_nested(gd, link=link, thresholds="judge")
            p0, form = q0.base, "scenario + generation (Laplace)"
        else:
            p0, f0, _ = fit_unit(gd, link=link, thresholds="shared", nagq=nagq)
            _, f1, _ = fit_unit(gd, link=link, thresholds="judge", nagq=nagq)
            form = f"scenario (AGQ {nagq})"
        df = (p0.n_judges - 1) * (p0.n_categories - 2)
        lr = max(2 * (f1.loglik - f0.loglik), 0.0)
        n = int(p0.n_scenarios)
        if df <= 0:
            pval, how = math.nan, "none (df = 0: binary scores)"
        elif reference == "chi2":
            pval, how = float(_dist.chi2_sf(lr, df)), f"chi2_{df}"
            if n < CHI2_MIN_SCENARIOS:
                how += f" (liberal below {CHI2_MIN_SCENARIOS} scenarios)"
                small.append(f"{g.label()} ({n})")
        else:
            rng = np.random.default_rng(seed)
            cell = np.asarray(gd.cell, dtype=np.int64) if nested else None
            n_cells = int(np.asarray(gd.cell_scenario).size) if nested else 0
            boot = np.array([_refit_lr(gd, bootstrap_null_categories(p0, f0.x, rng, cell=cell, n_cells=n_cells),
                                       link=link, nagq=nagq, nested=nested) for _ in range(int(n_boot))])
            pval = float((1 + np.sum(boot >= lr - 1e-9 * max(lr, 1.0))) / (1 + boot.size))
            how = f"parametric bootstrap ({int(n_boot)} tables, seed {seed})"
        out.append({**g.key, "statistic": lr, "df": df, "p_value": pval, "reference": how,
                    "random_effects": form, "n_scenarios": n})
    if small:
        warn(f"threshold_test: the chi2 reference is liberal below {CHI2_MIN_SCENARIOS} scenarios (measured level "
             f"about 7-8% at a nominal 5% with 20 scenarios), and {', '.join(small)} has fewer; use "
             f"reference='bootstrap' for a p-value that holds its level.", CjstatsWarning, stacklevel=2)
    return out
