r"""Designs for comparing two models: variance of a paired difference under strategies A/B/C and schedules.

Pure formulas (floats in, floats out). Two models a and b are each evaluated on n scenarios with B judge calls
per scenario (paper §4, strategies A = every judge per generation, B = one random judge per generation,
C = CyclicJudge rotation). Under the joint model (docs/estimands.md, "Several models"), the difference of their panel means is

    d = mu_a - mu_b + [alpha terms] + mean (alpha p) + mean beta + judge terms + mean eps

and, with ``shared_scenarios`` (both models answer the same n scenarios) the alpha_i cancel:

    Var(d) = 2 s2_ms/n  [+ 2 s2_scenario/n if scenarios are not shared]
             + 2 (c_gen s2_generation + c_res s2_residual) + c_judge J

with the per-model coefficients c of :func:`cjstats.decisions.formulas.strategy_coefficients` (Eqs. 3-5 with the
leftover term) and the judge term

    J = s2_judge_difference = mean_l (g_al - g_bl)^2      shared schedule (same judge for a and b per call slot)
    J = 2 s2_judge_panel                                  independent schedules,

where g_pl = gamma_l + (gamma p)_pl is judge l's offset on model p (what the per-model fit reports) and
s2_judge_panel = mean_l g_pl^2 is the per-model ``judge_panel`` (the mean of the two models').

Why: with a shared schedule, call slot s of model a and of model b goes to the same judge l(s), so gamma_l
enters both panel means identically and cancels from d; only the interaction difference
g_al - g_bl = (gamma p)_al - (gamma p)_bl is left, with per-call variance mean_l (g_al - g_bl)^2 over a
uniformly used panel. Independent schedules draw l_a(s) and l_b(s) separately, so g_{a,l_a} - g_{b,l_b} has
variance mean_l g_al^2 + mean_l g_bl^2. Averaged over the pairs of a joint fit, s2_judge_difference is
2P/(P - 1) x ``judge_model`` (panel) and s2_judge_panel is ``judge_panel`` + ``judge_model`` (the identities
tested in ``test_compare_anova.py``). Strategy A and a complete CyclicJudge rotation use every judge equally,
so c_judge is only the leftover term (zero when K_tot divides nB); strategy B pays c_judge = 1/(nB), and a
shared schedule then keeps only the interaction: the judge offsets gamma_l cancel from paired differences.
The simulation in ``tests/comparisons/test_design.py`` checks these variances.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats._defaults import JOINT_LABEL
from cjstats._validate import check_choice, check_number, check_positive_int
from cjstats.exceptions import CjstatsError
from cjstats.decisions.formulas import STRATEGIES, strategy_coefficients

__all__ = ["difference_variance", "difference_coefficients", "difference_components", "difference_component_bounds",
           "optimise_difference",
           "difference_allocation", "simulate_difference"]

Strategy = Literal["all", "random", "cyclic"]
Schedule = Literal["shared", "independent"]


def difference_coefficients(strategy: Strategy, *, schedule: Schedule = "shared", budget: int, n: int,
                            k_total: int, shared_scenarios: bool = True) -> dict[str, float]:
    """Coefficients c of Var(d) = sum c_x s2_x for the difference of two models' panel means (module docstring).

    Keys: ``scenario``, ``model_scenario``, ``generation``, ``residual``, ``judge_panel``, ``judge_difference``.
    """
    caller = "difference_coefficients"
    check_choice("strategy", strategy, STRATEGIES, caller=caller)
    check_choice("schedule", schedule, ("shared", "independent"), caller=caller)
    n = check_positive_int("n", n, caller=caller)
    c = {key: float(v) for key, v in strategy_coefficients(strategy, budget=budget, n=n, k_total=k_total).items()}
    cj = c["judge_panel"]
    return {"scenario": 0.0 if shared_scenarios else 2.0 / n, "model_scenario": 2.0 / n,
            "generation": 2 * c["generation"], "residual": 2 * c["residual"],
            "judge_panel": 0.0 if schedule == "shared" else 2 * cj,
            "judge_difference": cj if schedule == "shared" else 0.0}


def _pair_mean(name: str, v: Any, caller: str) -> float:
    """A pooled variance, or the mean of a pair (model a's, model b's) for the per-model form."""
    if isinstance(v, (tuple, list, np.ndarray)):
        vals = [float(check_number(name, x, caller=caller, minimum=0.0)) for x in v]
        if len(vals) != 2:
            raise CjstatsError(f"The '{name}' argument of {caller} must be one number (pooled) or a pair (model a's, "
                               f"model b's variance). Got {len(vals)} numbers instead.")
        return (vals[0] + vals[1]) / 2
    return float(check_number(name, v, caller=caller, minimum=0.0))


def difference_variance(strategy: Strategy, *, s2_model_scenario: float | tuple[float, float], s2_generation: float,
                        s2_residual: float, s2_judge_panel: float, s2_judge_difference: float, budget: int, n: int,
                        k_total: int, schedule: Schedule = "shared", shared_scenarios: bool = True,
                        s2_scenario: float = 0.0) -> float:
    """Variance of the difference of two models' panel means (module docstring).

    Var(d) = 2 s2_ms/n [+ 2 s2_scenario/n] + 2 (c_gen s2_beta + c_res s2_eps) + c_judge J with
    J = s2_judge_difference (shared schedule) or 2 s2_judge_panel (independent schedules). With the per-model
    form (``model_scenario="per_model"`` in :func:`cjstats.fit_joint`) ``s2_model_scenario`` is the pair
    (s2_ms of a, s2_ms of b) and enters as (s2_ms,a + s2_ms,b)/n.

    Examples
    --------
    >>> kw = dict(s2_model_scenario=0.2, s2_generation=0.1, s2_residual=0.4, s2_judge_panel=0.5,
    ...           s2_judge_difference=0.0, budget=1, n=100, k_total=4)
    >>> difference_variance("random", schedule="independent", **kw) > difference_variance("random", **kw)
    True
    >>> difference_variance("cyclic", **kw) == difference_variance("cyclic", schedule="independent", **kw)
    True
    """
    caller = "difference_variance"
    s2_model_scenario = _pair_mean("s2_model_scenario", s2_model_scenario, caller)
    vals = {"scenario": s2_scenario, "model_scenario": s2_model_scenario, "generation": s2_generation,
            "residual": s2_residual, "judge_panel": s2_judge_panel, "judge_difference": s2_judge_difference}
    for key, v in vals.items():
        check_number(f"s2_{key}", v, caller=caller, minimum=0.0)
    c = difference_coefficients(strategy, schedule=schedule, budget=budget, n=n, k_total=k_total,
                                shared_scenarios=shared_scenarios)
    return float(sum(c[key] * vals[key] for key in c))


def optimise_difference(*, s2_model_scenario: float | tuple[float, float], s2_generation: float, s2_residual: float,
                        s2_judge_panel: float, s2_judge_difference: float, budget: int, k_total: int, n_max: int,
                        s2_scenario: float = 0.0, shared_scenarios: bool = True,
                        schedules: tuple[str, ...] = ("shared", "independent")) -> pd.DataFrame:
    """Designs for a paired comparison ranked by Var(d), for a total of ``budget`` judge calls (both models).

    Every (strategy, schedule, n <= n_max) with B = budget // (2n) >= 1 calls per scenario and model is
    scored with :func:`difference_variance`; the table is sorted by ``variance`` (best first) with columns
    ``strategy, schedule, n, calls_per_scenario, calls, variance, se``.
    """
    caller = "optimise_difference"
    budget = check_positive_int("budget", budget, caller=caller, minimum=2)
    n_max = check_positive_int("n_max", n_max, caller=caller)
    rows = []
    for strategy in STRATEGIES:
        for schedule in schedules:
            check_choice("schedule", schedule, ("shared", "independent"), caller=caller)
            for n in range(1, min(n_max, budget // 2) + 1):
                b = budget // (2 * n)
                v = difference_variance(strategy, s2_model_scenario=s2_model_scenario, s2_generation=s2_generation,
                                        s2_residual=s2_residual, s2_judge_panel=s2_judge_panel,
                                        s2_judge_difference=s2_judge_difference, budget=b, n=n, k_total=k_total,
                                        schedule=schedule, shared_scenarios=shared_scenarios,
                                        s2_scenario=s2_scenario)
                rows.append({"strategy": strategy, "schedule": schedule, "n": n, "calls_per_scenario": b,
                             "calls": 2 * n * b, "variance": v, "se": math.sqrt(v)})
    if not rows:
        raise CjstatsError(f"The 'budget' argument of {caller} ({budget}) leaves no design with at least one call "
                           f"per scenario and model. Raise the budget.")
    out = pd.DataFrame(rows)
    # ties (e.g. B and C when nothing judge-related is left): prefer CyclicJudge, then A, then shared schedules
    out["_pref"] = out["strategy"].map({"cyclic": 0, "all": 1, "random": 2}) * 2 + (out["schedule"] != "shared")
    out["_v"] = out["variance"].round(15)
    return (out.sort_values(["_v", "calls", "_pref"], kind="stable").drop(columns=["_pref", "_v"])
            .reset_index(drop=True))


def simulate_difference(strategy: Strategy, *, schedule: Schedule, n: int, budget: int, gamma: np.ndarray,
                        judge_model: np.ndarray, s2_model_scenario: float, s2_generation: float,
                        s2_residual: float, s2_scenario: float = 0.0, shared_scenarios: bool = True,
                        replicates: int = 2000, seed: int | None = 0) -> np.ndarray:
    """Monte Carlo draws of d (model 0 minus model 1, true difference 0) for a fixed judge panel.

    ``gamma`` (K,) and ``judge_model`` (2, K) are fixed (panel view); the scenario, generation and residual
    effects are redrawn in every replicate. Strategy A: B // K generations scored by all K judges plus one
    generation scored by the next B mod K judges of a rotation; B: each of the B generations by a uniformly
    random judge; C: each generation by the next judge of one rotation over all n B calls (random start).
    ``shared``: model 1 uses model 0's judge for every call slot; ``independent``: its own draw / rotation.
    """
    rng = np.random.default_rng(seed)
    gamma = np.asarray(gamma, dtype=float)
    gp = np.asarray(judge_model, dtype=float)
    k = len(gamma)
    t = n * budget

    def judges() -> np.ndarray:  # (n, B) judge of each call slot
        if strategy == "random":
            return rng.integers(0, k, size=(n, budget))
        if strategy == "cyclic":
            return ((rng.integers(0, k) + np.arange(t)) % k).reshape(n, budget)
        q, r = divmod(budget, k)
        out = np.empty((n, budget), dtype=int)
        out[:, :q * k] = np.tile(np.arange(k), q)
        if r:
            out[:, q * k:] = ((rng.integers(0, k) + np.arange(n * r)) % k).reshape(n, r)
        return out

    def generation_of_slot() -> np.ndarray:
        if strategy != "all":
            return np.arange(budget)
        q, r = divmod(budget, k)
        return np.r_[np.repeat(np.arange(q), k), np.full(r, q)].astype(int)

    g_of = generation_of_slot()
    n_gen = int(g_of.max()) + 1
    out = np.empty(replicates)
    for rep in range(replicates):
        la = judges()
        lb = la if schedule == "shared" else judges()
        means = []
        alpha = rng.normal(0, math.sqrt(s2_scenario), n)
        for p, lab in ((0, la), (1, lb)):
            a = alpha if shared_scenarios else rng.normal(0, math.sqrt(s2_scenario), n)
            ap = rng.normal(0, math.sqrt(s2_model_scenario), n)
            beta = rng.normal(0, math.sqrt(s2_generation), (n, n_gen))[:, g_of]
            eps = rng.normal(0, math.sqrt(s2_residual), (n, budget))
            x = a[:, None] + ap[:, None] + beta + gamma[lab] + gp[p][lab] + eps
            means.append(x.mean())
        out[rep] = means[0] - means[1]
    return out


def difference_components(fit, model_a: str, model_b: str) -> dict[str, float]:
    """The inputs of :func:`difference_variance` for models a and b, from a joint fit (``cj.fit_joint``).

    ``s2_model_scenario``, ``s2_generation`` (0 when not identifiable; then ``model_scenario`` holds it) and
    ``s2_residual`` are the joint components (with a per-model fit, ``s2_model_scenario`` is the pair (a's, b's));
    with g_pl = eta_pl - mean_l eta_pl the judge offsets on each model,
    ``s2_judge_difference`` = mean_l (g_al - g_bl)^2 and ``s2_judge_panel`` = mean over a, b of mean_l g_pl^2,
    each minus the mean sampling variance of the estimated terms (the bias correction of ``judge_panel``),
    truncated at 0.
    """
    models = list(fit.models)
    for m in (model_a, model_b):
        if m not in models:
            raise CjstatsError(f"The fit has no model '{m}' (models: {', '.join(models)}).")
    p, k = fit.cell_means.shape
    a, b = models.index(model_a), models.index(model_b)
    g = fit.cell_means - fit.cell_means.mean(axis=1, keepdims=True)
    center = np.eye(k) - 1.0 / k

    def var_of(coef_rows: dict[int, np.ndarray]) -> float:
        c = np.zeros((p, k))
        for row, v in coef_rows.items():
            c[row] = v
        return fit.contrast(c, "panel").std_error ** 2

    v_diff = np.mean([var_of({a: center[l], b: -center[l]}) for l in range(k)])
    v_a = np.mean([var_of({a: center[l]}) for l in range(k)])
    v_b = np.mean([var_of({b: center[l]}) for l in range(k)])
    def comp(name: str, model: str | None = None) -> float:
        x = _component_value(fit.components, name, model, "estimate")
        return 0.0 if math.isnan(x) else x

    per_model = _is_per_model(fit)
    ms = (comp("model_scenario", model_a), comp("model_scenario", model_b)) if per_model else comp("model_scenario")
    return {"s2_model_scenario": ms, "s2_generation": comp("generation"),
            "s2_residual": comp("residual"),
            "s2_judge_difference": max(float(((g[a] - g[b]) ** 2).mean()) - v_diff, 0.0),
            "s2_judge_panel": max(float((g[a] ** 2).mean() + (g[b] ** 2).mean()) / 2 - (v_a + v_b) / 2, 0.0)}


def _is_per_model(fit) -> bool:
    """Whether a joint fit has one ``model_scenario`` row per model (``model_scenario="per_model"``)."""
    t = fit.components
    return bool(((t["component"] == "model_scenario") & t["model"].isin(list(fit.models))).any())


def _component_value(t: pd.DataFrame, name: str, model: str | None, column: str) -> float:
    """``column`` of the fixed-view row of component ``name`` (of ``model``, or the shared row)."""
    sel = (t["component"] == name) & (t["view"] == "panel")
    if model is not None:
        sel &= t["model"] == model
    else:

        sel &= t["model"] == JOINT_LABEL
    row = t[sel]
    return float(row[column].iloc[0]) if len(row) else float("nan")


def _quadratic_bounds(fit, contrasts: list[np.ndarray], count: int, level: float) -> tuple[float, float]:
    """Interval for |v|^2/count of the true contrasts v_i = sum c_i eta (each a (P, K) array) of a joint fit.

    With v_hat the estimates and S their covariance (from the fit's contrast variances: Cov(v_i, v_j) =
    (Var(v_i + v_j) - Var v_i - Var v_j)/2), W = v_hat' S^+ v_hat is noncentral chi-square with r = rank S degrees
    of freedom and noncentrality lambda = v' S^+ v; lambda is inverted from W and mapped to the value by the mean
    nonzero eigenvalue of S, |v|^2/count ~ lambda x mean_ev/count (the mapping the joint REML uses for judge_model).
    """
    from cjstats.estimators.intervals import noncentral_chi2_interval

    fitted = [fit.contrast(c, "panel") for c in contrasts]
    est = np.array([r.estimate for r in fitted])
    var = np.array([r.std_error**2 for r in fitted])
    n = len(contrasts)
    cov = np.diag(var)
    for i in range(n):
        for j in range(i + 1, n):
            v_ij = fit.contrast(contrasts[i] + contrasts[j], "panel").std_error ** 2
            cov[i, j] = cov[j, i] = (v_ij - var[i] - var[j]) / 2
    ev, vec = np.linalg.eigh(cov)
    nz = ev > ev.max() * 1e-9
    if not nz.any():
        return float("nan"), float("nan")
    proj = vec[:, nz].T @ est
    w = float((proj**2 / ev[nz]).sum())
    lo, hi = noncentral_chi2_interval(w, int(nz.sum()), level)
    scale = float(ev[nz].mean()) / count
    return lo * scale, hi * scale


def difference_component_bounds(fit, model_a: str, model_b: str) -> tuple[dict[str, float], dict[str, float]]:
    """Lower and upper interval bounds (at the fit's level) of the :func:`difference_components` of a, b.

    ``s2_model_scenario``, ``s2_generation`` and ``s2_residual``: the joint fit's intervals (a component that is
    not identifiable is 0, as in :func:`difference_components`; one whose interval is missing, e.g. a REML
    variance at its boundary, has an unknown (NaN) upper bound and lower bound 0). The judge terms: the noncentral
    chi-square interval of :func:`_quadratic_bounds` for (g_a - g_b) (``s2_judge_difference``, K contrasts) and
    for (g_a, g_b) (``s2_judge_panel``, 2K contrasts), g_p the judge offsets on model p.
    """
    models = list(fit.models)
    a, b = models.index(model_a), models.index(model_b)
    p, k = fit.cell_means.shape
    level = float(fit.ci_level)
    t = fit.components
    lower, upper = {}, {}

    def bounds(name: str, model: str | None) -> tuple[float, float]:
        if not bool(np.isfinite(_component_value(t, name, model, "estimate"))):
            return 0.0, 0.0          # not identifiable (or absent): 0, as in difference_components
        lo, hi = _component_value(t, name, model, "lower"), _component_value(t, name, model, "upper")
        return (max(lo, 0.0) if math.isfinite(lo) else 0.0), (hi if math.isfinite(hi) else float("nan"))

    for key, name in (("s2_model_scenario", "model_scenario"), ("s2_generation", "generation"),
                      ("s2_residual", "residual")):
        if name == "model_scenario" and _is_per_model(fit):
            (la, ha), (lb, hb) = bounds(name, model_a), bounds(name, model_b)
            lower[key], upper[key] = (la, lb), (ha, hb)
        else:
            lower[key], upper[key] = bounds(name, None)
    center = np.eye(k) - 1.0 / k

    def contrast(rows: dict[int, np.ndarray]) -> np.ndarray:
        c = np.zeros((p, k))
        for r, v in rows.items():
            c[r] = v
        return c

    diff = [contrast({a: center[l], b: -center[l]}) for l in range(k)]
    panel = [contrast({a: center[l]}) for l in range(k)] + [contrast({b: center[l]}) for l in range(k)]
    lower["s2_judge_difference"], upper["s2_judge_difference"] = _quadratic_bounds(fit, diff, k, level)
    lo, hi = _quadratic_bounds(fit, panel, 2 * k, level)
    lower["s2_judge_panel"], upper["s2_judge_panel"] = lo, hi
    return lower, upper


def difference_allocation(fit, *, budget: float, models: tuple[str, str] | None = None, k_total: int | None = None,
                          n_max: int | None = None, shared_scenarios: bool = True):
    """``cj.optimise(fit, target="difference", ...)``: the design that minimises Var(difference of two models).

    ``fit`` is a joint fit (:func:`cjstats.fit_joint`; ``models`` names the pair, default the two highest
    means) or a mapping with the inputs of :func:`difference_variance`. ``budget`` counts judge calls for both
    models together. Returns an :class:`cjstats.decisions.optimise.Allocation` whose table also has a ``schedule``
    column (shared or independent). With a joint fit, ``variance_lower`` and ``variance_upper`` are the predicted
    variance at the components' interval bounds (:func:`difference_component_bounds`; ``uncertainty = "interval
    bounds"``); with a mapping of point values they are NaN (``uncertainty = "none"``).
    """
    from collections.abc import Mapping

    from cjstats.results.allocation import Allocation

    caller = "optimise"
    if budget is None:
        raise CjstatsError(f"{caller}(target='difference') needs a budget of judge calls (both models together).")
    if isinstance(fit, Mapping):
        comps = {key: float(fit[key]) for key in ("s2_model_scenario", "s2_generation", "s2_residual",
                                                   "s2_judge_panel", "s2_judge_difference")}
        if k_total is None or n_max is None:
            raise CjstatsError(f"{caller}(target='difference') needs k_total and n_max when fit is a mapping.")
        pair = models
    else:
        if not hasattr(fit, "cell_means"):
            raise CjstatsError(f"{caller}(target='difference') needs a joint fit from cj.fit_joint (or a mapping "
                               f"of difference_variance inputs). Got {type(fit).__name__} instead.")
        if models is None:
            order = np.argsort(-fit.model_means())
            models = (fit.models[order[0]], fit.models[order[1]])
        pair = tuple(models)
        comps = difference_components(fit, pair[0], pair[1])
        k_total = len(fit.judges) if k_total is None else k_total
        n_max = int(fit.diagnostics.get("n", 0)) if n_max is None else n_max
    kt = check_positive_int("k_total", k_total, caller=caller)
    designs = optimise_difference(budget=int(budget), k_total=kt, n_max=n_max, shared_scenarios=shared_scenarios,
                                  **comps)
    lower = upper = None
    if not isinstance(fit, Mapping):
        lower, upper = difference_component_bounds(fit, pair[0], pair[1])
    designs = designs.assign(
        judges_per_generation=np.where(designs["strategy"] == "all", kt, 1),
        m=np.where(designs["strategy"] == "all", np.maximum(designs["calls_per_scenario"] // kt, 1),
                   designs["calls_per_scenario"]),
        budget_per_scenario=designs["calls_per_scenario"], cost=designs["calls"].astype(float),
        max_cost=designs["calls"].astype(float), variance_lower=np.nan, variance_upper=np.nan, p_best=np.nan)
    if lower is not None:
        # Var(d) is a sum of the components with non-negative coefficients, so it is bounded by its values at the
        # components' interval bounds (as the per-model optimiser's "interval bounds")
        keys = ("model_scenario", "generation", "residual", "judge_panel", "judge_difference")
        coef = np.array([[difference_coefficients(st, schedule=sc, budget=int(b), n=int(n), k_total=kt,
                                                  shared_scenarios=shared_scenarios)[key] for key in keys]
                         for st, sc, n, b in designs[["strategy", "schedule", "n", "calls_per_scenario"]]
                         .itertuples(index=False)])
        lo_vec = np.array([np.mean(lower[f"s2_{key}"]) for key in keys])     # a per-model pair enters as its mean
        hi_vec = np.array([np.mean(upper[f"s2_{key}"]) for key in keys])
        designs["variance_lower"] = coef @ lo_vec
        # an unknown upper bound (NaN) counts only where its component enters the design
        designs["variance_upper"] = np.where(coef > 0, coef * hi_vec[None, :], 0.0).sum(axis=1)
    best = designs.groupby(["strategy", "schedule"], sort=False).head(1).reset_index(drop=True)
    best["strategy"] = best["strategy"] + " (" + best["schedule"] + ")"
    best.insert(0, "rank", np.arange(1, len(best) + 1))
    rec = best.iloc[0].to_dict()
    note = (f"target='difference': Var(mean of '{pair[0]}' - mean of '{pair[1]}') with both models on the same "
            f"scenarios; budget = judge calls of both models." if pair else "target='difference'")
    notes = (note,)
    if lower is not None:
        missing = [key for key, v in upper.items() if bool(np.any(np.isnan(v)))]
        notes += ("Intervals: the predicted variance at the components' interval bounds (it increases in every "
                  "component); the judge terms' bounds invert the noncentral chi-square of the pair's judge offsets."
                  + (f" No upper bound where {', '.join(missing)} has no interval (a REML variance at 0)."
                     if missing else ""),)
    return Allocation(table=best, strategies=best, designs=designs, recommendation=rec, budget=float(budget),
                      budget_unit="calls", target_se=None, k_total=kt, n_max=int(n_max), components=comps,
                      judge_costs={}, generation_cost=0.0, frequencies=None,
                      uncertainty="none" if lower is None else "interval bounds",
                      ci_level=float(getattr(fit, "ci_level", 0.95)), model=None, notes=notes)
