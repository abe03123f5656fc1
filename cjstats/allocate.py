"""The budget optimiser: from variance components (with their uncertainty) to a recommended design.

:func:`optimise` enumerates the feasible designs for a total budget, in judge calls or in money: strategy
(CyclicJudge ``cyclic``, random judges ``random``, all judges ``all``, and with unequal prices or noise the
cost-weighted ``weighted``), number of scenarios n (up to the dataset size), generations per scenario m and
judges per generation k. It ranks them by predicted variance (or by cost to reach ``target_se``) with the
closed forms of :mod:`cjstats.variance`, and carries the uncertainty of the components through: an interval on
each design's predicted variance and the probability that each strategy is best.

Beyond the paper (its stated limitation is equal-cost calls): with per-judge prices c_l, a price per generation
c_gen and per-judge residual variances σ²_ε,l, the post-stratified mean (1/K_tot) Σ_l mean(scores of judge l)
(:func:`poststratified_mean`) recovers the panel mean exactly for ANY judge frequencies, and its variance
(1/K_tot²) Σ_l (σ²_β + σ²_ε,l)/b_l at a fixed cost Σ_l b_l (c_l + c_gen) is smallest for the Neyman/Cochran
frequencies b_l ∝ s_l / sqrt(c_l + c_gen), s_l² = σ²_β + σ²_ε,l (:func:`cjstats.variance.neyman_shares`).
Equal prices and noise give equal frequencies: CyclicJudge. :func:`cost_weighted_allocation` gives the counts
and the saving against equal cycling; :func:`cjstats.plan.cyclic_schedule` with ``shares=`` realises them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, stats

from cjstats._validate import check_choice, check_number, check_positive_int
from cjstats.exceptions import CjstatsError
from cjstats.variance import design_coefficients, neyman_shares, poststratified_variance

__all__ = ["optimise", "Allocation", "OPTIMISE_STRATEGIES", "cost_weighted_allocation", "WeightedAllocation",
           "poststratified_mean", "judge_residual_variances", "allocation_section"]

#: Strategies the optimiser compares. ``cyclic``: k judges per generation from one rotation (k = 1 is the
#: paper's C); ``random``: k judges drawn at random per generation (k = 1 is B); ``all``: every judge (A);
#: ``weighted``: one judge per generation at Neyman/Cochran frequencies, post-stratified mean.
OPTIMISE_STRATEGIES: tuple[str, ...] = ("cyclic", "random", "all", "weighted")

_COMP = ("scenario", "generation", "residual", "judge_panel")


# ---------------------------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class _Inputs:
    point: np.ndarray                 # (4,) in _COMP order
    lower: np.ndarray | None
    upper: np.ndarray | None
    ci_level: float
    draws: np.ndarray | None          # (S, 4) posterior draws, if the backend gave them
    judges: list[str] | None
    n_data: int | None
    generation_identifiable: bool
    model: str | None
    criterion: str | None


def _select(frame: pd.DataFrame, model: str, criterion: str | None) -> pd.Series:
    sel = frame["model"].astype(str) == str(model)
    if criterion is not None and "criterion" in frame.columns:
        sel &= frame["criterion"].astype(str) == str(criterion)
    return sel


def _inputs(fit: Any, model: str | None, criterion: str | None, caller: str) -> _Inputs:
    from cjstats.components import VarianceComponents

    if isinstance(fit, Mapping):
        missing = [c for c in _COMP if c not in fit]
        if missing:
            raise CjstatsError(f"The components passed to {caller} have no '{missing[0]}' (need: {', '.join(_COMP)}).")
        point = np.array([float(fit[c]) for c in _COMP])
        gen_ok = math.isfinite(point[1])
        return _Inputs(point=np.where(np.isfinite(point), point, 0.0), lower=None, upper=None, ci_level=0.95,
                       draws=None, judges=None, n_data=None, generation_identifiable=gen_ok, model=model,
                       criterion=criterion)
    if not isinstance(fit, VarianceComponents):
        raise CjstatsError(f"{caller} takes a VarianceComponents result (from cjstats.estimate) or a mapping of "
                           f"components. Got {type(fit).__name__} instead.")
    fit.estimates(model=model, criterion=criterion)          # one clear sentence when the group is ambiguous
    t = fit.components
    model = str(model) if model is not None else str(t["model"].iloc[0])
    if fit.has_criterion and criterion is None:
        criterion = str(t.loc[t["model"].astype(str) == model, "criterion"].iloc[0])
    rows = t[_select(t, model, criterion)].set_index("component")
    point = np.array([float(rows.at[c, "estimate"]) for c in _COMP])
    lower = np.array([float(rows.at[c, "lower"]) for c in _COMP])
    upper = np.array([float(rows.at[c, "upper"]) for c in _COMP])
    gen_ok = bool(math.isfinite(point[1]))
    for a in (point, lower, upper):
        if not gen_ok:
            a[1] = 0.0
    lower = np.where(np.isfinite(lower), np.maximum(lower, 0.0), point)
    upper = np.where(np.isfinite(upper), upper, point)
    draws = None
    if fit.draws is not None and not fit.draws.empty:
        d = fit.draws[_select(fit.draws, model, criterion)]
        if not d.empty:
            draws = d[list(_COMP)].to_numpy(dtype=float)
            draws = np.where(np.isfinite(draws), np.maximum(draws, 0.0), 0.0)
    off = fit.judge_offsets
    judges = off.loc[_select(off, model, criterion), "judge"].astype(str).tolist() if not off.empty else None
    des = fit.design[_select(fit.design, model, criterion)]
    n_data = int(des["n_scenarios"].iloc[0]) if not des.empty else None
    return _Inputs(point=point, lower=lower, upper=upper, ci_level=float(fit.ci_level), draws=draws,
                   judges=judges or None, n_data=n_data, generation_identifiable=gen_ok, model=model,
                   criterion=criterion)


def _interval_draws(inp: _Inputs, size: int, rng: np.random.Generator) -> np.ndarray:
    """Approximate draws of the components from their intervals: one scaled chi-square law per component.

    For an interval [L, U] at level 1 - 2a with L > 0, X = s chi2_nu / nu with nu solving
    chi2_{nu,1-a} / chi2_{nu,a} = U / L and s = L nu / chi2_{nu,a} (exact for the residual's chi-square
    interval, a Satterthwaite-type approximation otherwise). With L = 0 the estimate is matched to the median
    instead of L (and nu = 1 when the estimate is 0 too). Components are drawn independently.
    """
    a = (1 - inp.ci_level) / 2
    out = np.empty((size, 4))
    for j in range(4):
        e, lo, hi = inp.point[j], inp.lower[j], inp.upper[j]
        if hi <= 0 or hi - lo <= 1e-12 * max(hi, 1e-300):
            out[:, j] = e
            continue
        if lo > 0:
            ratio, qa = hi / lo, a
        elif e > 0:
            ratio, qa = hi / e, 0.5
        else:
            nu = 1.0
            s = hi * nu / stats.chi2.ppf(1 - a, nu)
            out[:, j] = s * rng.chisquare(nu, size) / nu
            continue

        def gap(lnu: float, qa: float = qa, ratio: float = ratio) -> float:
            nu = math.exp(lnu)
            low = stats.chi2.ppf(qa, nu)
            if low <= 0:
                return math.inf
            return math.log(stats.chi2.ppf(1 - a, nu)) - math.log(low) - math.log(ratio)

        lo_nu, hi_nu = math.log(1e-2), math.log(1e7)
        if gap(hi_nu) > 0:
            nu = 1e7
        elif gap(lo_nu) < 0:
            nu = 1e-2
        else:
            nu = math.exp(optimize.brentq(gap, lo_nu, hi_nu, xtol=1e-10))
        ref = lo if lo > 0 else e
        s = ref * nu / stats.chi2.ppf(qa, nu)
        out[:, j] = s * rng.chisquare(nu, size) / nu
    return out


def _costs(judge_costs: Mapping[str, float] | None, judges: list[str] | None, k_total: int | None,
           caller: str) -> tuple[list[str], np.ndarray]:
    if judge_costs is None:
        if k_total is None:
            if judges is None:
                raise CjstatsError(f"{caller} needs k_total (the panel size) when the components carry no judges.")
            return judges, np.ones(len(judges))
        kt = check_positive_int("k_total", k_total, caller=caller)
        names = judges if judges is not None and len(judges) == kt else [f"judge_{i}" for i in range(kt)]
        return names, np.ones(kt)
    if not isinstance(judge_costs, Mapping) or not judge_costs:
        raise CjstatsError(f"The 'judge_costs' argument of {caller} must map each judge to its price per call, "
                           f"such as {{'gpt': 1.0, 'claude': 3.0}}. Got {judge_costs!r} instead.")
    names = [str(k) for k in judge_costs]
    if judges is not None and set(names) != set(judges):
        extra = sorted(set(names) - set(judges)) or sorted(set(judges) - set(names))
        raise CjstatsError(f"The 'judge_costs' argument of {caller} must price exactly the panel's judges "
                           f"({', '.join(judges)}); '{extra[0]}' does not match.")
    if k_total is not None and int(k_total) != len(names):
        raise CjstatsError(f"The 'k_total' argument of {caller} must equal the number of priced judges "
                           f"({len(names)}). Got {k_total!r} instead.")
    order = judges if judges is not None else names
    prices = np.array([check_number(f"judge_costs['{j}']", judge_costs[j], caller=caller, minimum=0.0)
                       for j in order])
    return list(order), prices


def _rho(residual_by_judge: Mapping[str, float] | None, names: list[str], s2e: float, caller: str) -> np.ndarray:
    """Per-judge residual variances relative to their mean (mean 1), so σ²_ε,l = rho_l σ²_ε."""
    if residual_by_judge is None:
        return np.ones(len(names))
    missing = [j for j in names if j not in residual_by_judge]
    if missing:
        raise CjstatsError(f"The 'residual_by_judge' argument of {caller} has no value for judge '{missing[0]}'.")
    v = np.array([check_number(f"residual_by_judge['{j}']", residual_by_judge[j], caller=caller, minimum=0.0)
                  for j in names])
    if v.mean() <= 0:
        return np.ones(len(names))
    return v / v.mean()


def _apportion_rows(total: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Largest-remainder integer counts per row: (rows, K) summing to ``total``."""
    raw = total[:, None] * shares[None, :]
    base = np.floor(raw + 1e-9)
    left = total - base.sum(axis=1)
    order = np.argsort(-(raw - base), axis=1, kind="stable")
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(shares.size)[None, :].repeat(len(total), 0), axis=1)
    return (base + (pos < left[:, None])).astype(np.int64)


# ---------------------------------------------------------------------------------------------- result
@dataclass(frozen=True)
class Allocation:
    """The optimiser's answer: ranked designs, the recommendation and how sure we are.

    Attributes
    ----------
    table : DataFrame
        The best design of each (strategy, judges per generation), ranked: ``rank, strategy,
        judges_per_generation, n, m, budget_per_scenario, calls, cost, variance, se, variance_lower,
        variance_upper, p_best`` (and ``p_reaches_target`` with a target SE). ``p_best`` is the probability,
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
                 f"n = {r['n']} scenarios x m = {r['m']} generations = {r['calls']} calls (cost {r['cost']:g}); "
                 f"predicted SE {r['se']:.4g}{ival}; P(best) = {r['p_best']:.2f}",
                 "", "Best design per strategy (uncertainty: " + self.uncertainty + ")"]
        cols = ["strategy", "judges_per_generation", "n", "m", "calls", "cost", "se", "variance_lower",
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
def _first_feasible_m(var_fn, m0: np.ndarray, target: float, m_cap: np.ndarray) -> np.ndarray:
    """Raise m from m0 until var_fn(m) <= target (the leftover/rounding terms need a step or two)."""
    m = m0.copy()
    for _ in range(64):
        bad = (var_fn(m) > target) & (m <= m_cap)
        if not bad.any():
            break
        m = np.where(bad, m + 1, m)
    return m


def optimise(fit: Any, *, budget: float | None = None, k_total: int | None = None, n_max: int | None = None,
             judge_costs: Mapping[str, float] | None = None, generation_cost: float = 0.0,
             target_se: float | None = None, model: str | None = None, criterion: str | None = None,
             m_max: int | None = None, residual_by_judge: Mapping[str, float] | None = None,
             strategies: Sequence[str] | None = None, n_draws: int = 4000, seed: int | None = 0) -> Allocation:
    """Find the design with the smallest predicted variance for a budget (or the cheapest that reaches a SE).

    Parameters
    ----------
    fit : VarianceComponents or mapping
        Components from :func:`cjstats.estimate` (one model/criterion is used: ``model=``, ``criterion=``), or
        a mapping ``{scenario, generation, residual, judge_panel}`` of point values (no uncertainty then).
    budget : float, optional
        Total budget: judge calls when no prices are given, else money (calls x price + generations x
        ``generation_cost``).
    k_total : int, optional
        Panel size (default: the fit's judges, or the priced judges).
    n_max : int, optional
        Scenarios available (default: the fit's n; required for a mapping).
    judge_costs : mapping, optional
        Price per call of each panel judge. Unequal prices add the ``weighted`` strategy.
    generation_cost : float
        Price of producing one generation (one model output).
    target_se : float, optional
        Rank designs by cost to reach this standard error instead (within ``budget`` if also given).
    m_max : int, optional
        Most generations per scenario you can produce (1 is forced when the fit had m = 1).
    residual_by_judge : mapping, optional
        σ²_ε,l per judge (e.g. :func:`judge_residual_variances`); unequal values add ``weighted``.
    strategies : sequence, optional
        Subset of :data:`OPTIMISE_STRATEGIES`.
    n_draws, seed
        Draws used for intervals and probabilities (posterior draws are used as given when the fit has them;
        otherwise approximate draws matched to the component intervals).

    Returns
    -------
    Allocation

    Notes
    -----
    Variances are the closed forms of :mod:`cjstats.variance` (Proposition 1 and Eqs. 3-5 with the leftover
    judge term; :func:`~cjstats.variance.poststratified_variance` for ``weighted``), including the scenario
    term σ²_α/n because n is a design choice. Costs of ``cyclic`` and ``random`` use the panel's mean price per
    call (exact in expectation; the rotation gives each judge the same number of calls +-1).

    Examples
    --------
    >>> import cjstats as cj
    >>> fit = cj.estimate(cj.datasets.load("hanna", composite=True))
    >>> cj.optimise(fit, budget=480, model="GPT").recommendation["strategy"]  # doctest: +SKIP
    'cyclic'
    """
    caller = "optimise"
    if budget is None and target_se is None:
        raise CjstatsError(f"{caller} needs a budget (calls or money) or a target_se to aim for.")
    if budget is not None:
        budget = check_number("budget", budget, caller=caller, minimum=0.0)
        if budget <= 0:
            raise CjstatsError(f"The 'budget' argument of {caller} must be positive. Got {budget!r} instead.")
    if target_se is not None:
        target_se = check_number("target_se", target_se, caller=caller, minimum=0.0)
        if target_se <= 0:
            raise CjstatsError(f"The 'target_se' argument of {caller} must be positive. Got {target_se!r} instead.")
    cg = check_number("generation_cost", generation_cost, caller=caller, minimum=0.0)
    n_draws = check_positive_int("n_draws", n_draws, caller=caller, minimum=10)
    inp = _inputs(fit, model, criterion, caller)
    names, prices = _costs(judge_costs, inp.judges, k_total, caller)
    kt = len(names)
    notes: list[str] = []
    if kt < 1:
        raise CjstatsError(f"{caller} needs a panel of at least one judge.")
    if inp.judges is not None and kt != len(inp.judges):
        notes.append(f"planning a panel of {kt} judges with the judge_panel component of the fit's "
                     f"{len(inp.judges)}-judge panel.")
    nmax = n_max if n_max is not None else inp.n_data
    if nmax is None:
        raise CjstatsError(f"{caller} needs n_max (the number of scenarios available) when fit is a mapping.")
    nmax = check_positive_int("n_max", nmax, caller=caller)
    m_cap = 10**7 if m_max is None else check_positive_int("m_max", m_max, caller=caller)
    if not inp.generation_identifiable:
        m_cap = 1
        notes.append("generation is not identifiable (m = 1 in the data): designs use one generation per "
                     "scenario, and the scenario component holds scenario + generation.")
    s2a, s2b, s2e, s2g = inp.point
    rho = _rho(residual_by_judge, names, s2e, caller)
    unit = "calls" if judge_costs is None and cg == 0 else "money"
    unequal = bool(np.ptp(prices) > 0 or np.ptp(rho) > 0)
    if strategies is None:
        strategies = [s for s in OPTIMISE_STRATEGIES if s != "weighted" or unequal]
    strategies = [check_choice("strategies", s, OPTIMISE_STRATEGIES, caller=caller) for s in strategies]
    if not strategies:
        raise CjstatsError(f"The 'strategies' argument of {caller} is empty: give at least one strategy.")
    sd = np.sqrt(s2b + rho * s2e)
    shares = neyman_shares(np.where(sd > 0, sd, 1.0), prices, generation_cost=cg) \
        if "weighted" in strategies else None
    target_v = None if target_se is None else target_se ** 2
    n = np.arange(1, nmax + 1, dtype=float)
    frames = []
    for s in strategies:
        ks = {"cyclic": range(1, max(kt, 2)), "random": range(1, max(kt, 2)), "all": [kt], "weighted": [1]}[s]
        for k in ks:
            if k > kt:
                continue
            if s == "weighted":
                frames.append(_weighted_designs(n, shares, prices, cg, rho, inp.point, budget, target_v, m_cap))
                continue
            assignment = "random" if s == "random" else "cyclic"
            per_gen = cg + (prices.sum() if s == "all" else k * prices.mean())

            def var_fn(m: np.ndarray, n=n, k=k, assignment=assignment) -> np.ndarray:
                c = design_coefficients(n=n, m=np.maximum(m, 1), k=k, k_total=kt, assignment=assignment)
                return sum(c[name] * v for name, v in zip(_COMP, inp.point))

            if target_v is None:
                m = np.floor(budget / (n * per_gen) * (1 + 1e-12)) if per_gen > 0 else np.full_like(n, m_cap)
                m = np.minimum(m, m_cap)
            else:
                c1 = design_coefficients(n=n, m=1, k=k, k_total=kt, assignment=assignment)
                per_m = (c1["generation"] * s2b + c1["residual"] * s2e +
                         (c1["judge_panel"] * s2g if assignment == "random" else 0.0))
                room = target_v - s2a / n
                with np.errstate(divide="ignore", invalid="ignore"):
                    m0 = np.where(room > 0, np.ceil(np.maximum(per_m / room, 1.0) * (1 - 1e-12)), np.inf)
                m0 = np.where(np.isfinite(m0), np.minimum(m0, m_cap + 1), m_cap + 1)
                m = _first_feasible_m(var_fn, np.maximum(m0, 1), target_v, np.full_like(n, m_cap))
                m = np.where(m > m_cap, 0, m)
                if budget is not None:
                    m = np.where(n * m * per_gen <= budget * (1 + 1e-12), m, 0)
            ok = m >= 1
            if not ok.any():
                continue
            nn, mm = n[ok], m[ok]
            c = design_coefficients(n=nn, m=mm, k=k, k_total=kt, assignment=assignment)
            frames.append(pd.DataFrame({
                "strategy": s, "judges_per_generation": k, "n": nn.astype(np.int64), "m": mm.astype(np.int64),
                "calls": (nn * mm * k).astype(np.int64), "cost": nn * mm * per_gen,
                **{f"c_{name}": c[name] for name in _COMP}}))
    designs = pd.concat([f for f in frames if f is not None and not f.empty], ignore_index=True) \
        if any(f is not None and not f.empty for f in frames) else pd.DataFrame()
    if designs.empty:
        if target_v is not None:
            raise CjstatsError(f"No design reaches target_se={target_se:g}" + (
                f" within budget {budget:g}" if budget is not None else "") + f" with at most {nmax} scenarios"
                + (f" and {m_cap} generation(s) each" if m_cap < 10**7 else "") +
                f": the scenario term alone gives SE {math.sqrt(s2a / nmax):.4g} at n = {nmax}.")
        raise CjstatsError(f"The budget {budget:g} {unit} of {caller} does not pay for one generation of one "
                           f"scenario; raise it.")
    coef = designs[[f"c_{c}" for c in _COMP]].to_numpy()
    designs["variance"] = coef @ inp.point
    designs["se"] = np.sqrt(designs["variance"])
    designs["budget_per_scenario"] = designs["m"] * designs["judges_per_generation"]
    if target_v is None:
        designs = designs.sort_values(["variance", "cost", "n"], ascending=[True, True, False], kind="stable")
    else:
        designs = designs.sort_values(["cost", "variance"], kind="stable")
    designs = designs.reset_index(drop=True)
    table = designs.drop_duplicates(["strategy", "judges_per_generation"], keep="first").reset_index(drop=True)
    # uncertainty ---------------------------------------------------------------------------------------
    rng = np.random.default_rng(seed)
    if inp.draws is not None:
        draws, uncertainty = inp.draws, "posterior draws"
    elif inp.lower is not None:
        draws, uncertainty = _interval_draws(inp, n_draws, rng), "interval bounds"
    else:
        draws, uncertainty = inp.point[None, :], "none"
    tcoef = table[[f"c_{c}" for c in _COMP]].to_numpy()
    vd = tcoef @ draws.T                                         # (rows, S)
    a = (1 - inp.ci_level) / 2
    if uncertainty == "posterior draws":
        table["variance_lower"], table["variance_upper"] = np.quantile(vd, a, axis=1), np.quantile(vd, 1 - a, axis=1)
    elif uncertainty == "interval bounds":
        table["variance_lower"], table["variance_upper"] = tcoef @ inp.lower, tcoef @ inp.upper
    else:
        table["variance_lower"] = table["variance_upper"] = np.nan
    table["p_best"] = _p_best(vd, table["cost"].to_numpy(), target_v)
    if target_v is not None:
        table["p_reaches_target"] = (vd <= target_v).mean(axis=1)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    strat = table.drop_duplicates("strategy", keep="first").reset_index(drop=True)
    svd = strat[[f"c_{c}" for c in _COMP]].to_numpy() @ draws.T
    strat["p_best"] = _p_best(svd, strat["cost"].to_numpy(), target_v)
    keep = ["rank", "strategy", "judges_per_generation", "n", "m", "budget_per_scenario", "calls", "cost",
            "variance", "se", "variance_lower", "variance_upper", "p_best"] + \
        (["p_reaches_target"] if target_v is not None else [])
    table, strat = table[keep], strat[keep]
    designs = designs[["strategy", "judges_per_generation", "n", "m", "budget_per_scenario", "calls", "cost",
                       "variance", "se"]]
    rec = {k: (v.item() if hasattr(v, "item") else v) for k, v in table.iloc[0].to_dict().items()}
    if uncertainty == "interval bounds":
        notes.append("Intervals: the predicted variance at the components' interval bounds (it increases in "
                     "every component); P(best): approximate draws, one scaled chi-square law per component "
                     "matched to its interval, drawn independently.")
    if unit == "money":
        notes.append("cyclic/random costs use the panel's mean price per call (the rotation gives every judge "
                     "the same number of calls, +-1).")
    if "weighted" in strategies:
        notes.append("weighted: one judge per generation at Neyman/Cochran frequencies, analysed with the "
                     "post-stratified mean (cjstats.allocate.poststratified_mean); realise it with "
                     "cyclic_schedule(..., shares=allocation.frequencies). Its scenario term sigma2_alpha/n assumes "
                     "each judge's calls spread over the scenarios in proportion (the weighted round robin does, "
                     "+-1 call); realised_variance gives the exact value of a concrete schedule.")
    return Allocation(table=table, strategies=strat, designs=designs, recommendation=rec, budget=budget,
                      budget_unit=unit, target_se=target_se, k_total=kt, n_max=nmax,
                      components=dict(zip(_COMP, map(float, inp.point))),
                      judge_costs=dict(zip(names, map(float, prices))), generation_cost=cg,
                      frequencies=None if shares is None else dict(zip(names, map(float, shares))),
                      uncertainty=uncertainty, ci_level=inp.ci_level, model=inp.model, criterion=inp.criterion,
                      notes=tuple(notes))


def _p_best(vd: np.ndarray, cost: np.ndarray, target_v: float | None) -> np.ndarray:
    """Share of draws in which each row wins (ties split): lowest variance, or cheapest reaching the target."""
    if target_v is None:
        score = vd
    else:
        score = np.where(vd <= target_v, cost[:, None], np.inf)
    best = score.min(axis=0)
    win = (score <= best * (1 + 1e-9) + 1e-300) & np.isfinite(best)
    cnt = win.sum(axis=0)
    return np.where(cnt > 0, win / np.maximum(cnt, 1), 0.0).mean(axis=1)


def _weighted_designs(n: np.ndarray, shares: np.ndarray, prices: np.ndarray, cg: float, rho: np.ndarray,
                      point: np.ndarray, budget: float | None, target_v: float | None,
                      m_cap: int) -> pd.DataFrame | None:
    """Designs of the cost-weighted strategy: n scenarios x m generations, one judge per generation."""
    kt = shares.size
    price = prices + cg
    s2a, s2b, s2e, _ = point

    def coefs(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        b = _apportion_rows(n * m, shares)
        with np.errstate(divide="ignore"):
            inv = np.where(b > 0, 1.0 / np.maximum(b, 1), np.inf)
        return b, inv.sum(axis=1) / kt**2, (inv * rho).sum(axis=1) / kt**2, (b * price).sum(axis=1)

    if target_v is None:
        m = np.minimum(np.floor(budget / (n * float(shares @ price)) * (1 + 1e-12)), m_cap)
        for _ in range(64):
            _, _, _, cost = coefs(np.maximum(m, 1))
            over = (cost > budget * (1 + 1e-12)) & (m >= 1)
            if not over.any():
                break
            m = np.where(over, m - 1, m)
    else:
        d = (s2b + rho * s2e) @ (1 / shares) / kt**2
        room = target_v - s2a / n
        with np.errstate(divide="ignore", invalid="ignore"):
            m0 = np.where(room > 0, np.ceil(np.maximum(d / (n * room), 1.0)), m_cap + 1)
        m0 = np.minimum(m0, m_cap + 1)

        def var_fn(mm: np.ndarray) -> np.ndarray:
            _, cg_, cr_, _ = coefs(np.maximum(mm, 1))
            return s2a / n + cg_ * s2b + cr_ * s2e

        m = _first_feasible_m(var_fn, np.maximum(m0, 1), target_v, np.full_like(n, m_cap))
        m = np.where(m > m_cap, 0, m)
        if budget is not None:
            m = np.where(coefs(np.maximum(m, 1))[3] <= budget * (1 + 1e-12), m, 0)
    b, c_gen, c_res, cost = coefs(np.maximum(m, 1))
    ok = (m >= 1) & (b.min(axis=1) >= 1)
    if not ok.any():
        return None
    return pd.DataFrame({"strategy": "weighted", "judges_per_generation": 1, "n": n[ok].astype(np.int64),
                         "m": m[ok].astype(np.int64), "calls": (n[ok] * m[ok]).astype(np.int64), "cost": cost[ok],
                         "c_scenario": 1 / n[ok], "c_generation": c_gen[ok], "c_residual": c_res[ok],
                         "c_judge_panel": 0.0})


# -------------------------------------------------------------------------------- cost-weighted allocation
@dataclass(frozen=True, slots=True)
class WeightedAllocation:
    """Neyman/Cochran judge frequencies for a money budget, against equal cycling at the same budget.

    ``variance`` is that of the post-stratified mean with ``counts`` calls per judge (conditional on the
    scenarios unless ``s2_scenario`` was given); ``equal_*`` describe equal cycling (CyclicJudge) with as many
    calls as the budget buys at the mean price. ``saving`` = 1 - (variance x cost)/(equal_variance x
    equal_cost), the reduction in variance per unit cost.
    """

    judges: tuple[str, ...]
    shares: tuple[float, ...]
    counts: tuple[int, ...]
    cost: float
    variance: float
    equal_counts: tuple[int, ...]
    equal_cost: float
    equal_variance: float
    saving: float

    def as_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"judge": self.judges, "share": self.shares, "calls": self.counts,
                             "equal_calls": self.equal_counts})


def cost_weighted_allocation(s2_generation: float, s2_residual: float, *, judge_costs: Mapping[str, float],
                             budget: float, generation_cost: float = 0.0,
                             residual_by_judge: Mapping[str, float] | None = None,
                             s2_scenario: float = 0.0, n: int | None = None) -> WeightedAllocation:
    """Judge call counts for a money budget under unequal prices (Neyman/Cochran) and the saving over cycling.

    b_l ∝ s_l / sqrt(c_l + c_gen) with s_l² = σ²_β + σ²_ε,l (:func:`cjstats.variance.neyman_shares`), rounded by
    largest remainders and trimmed to the budget; variance from :func:`cjstats.variance.poststratified_variance`.
    Equal cycling buys floor(budget / mean(c_l + c_gen)) calls shared equally (+-1).
    """
    caller = "cost_weighted_allocation"
    names, prices = _costs(judge_costs, None, None, caller)
    cg = check_number("generation_cost", generation_cost, caller=caller, minimum=0.0)
    budget = check_number("budget", budget, caller=caller, minimum=0.0)
    s2b = check_number("s2_generation", s2_generation, caller=caller, minimum=0.0)
    s2e = check_number("s2_residual", s2_residual, caller=caller, minimum=0.0)
    rho = _rho(residual_by_judge, names, s2e, caller)
    s2e_l = rho * s2e if residual_by_judge is None else np.array([float(residual_by_judge[j]) for j in names])
    sd = np.sqrt(s2b + s2e_l)
    shares = neyman_shares(np.where(sd > 0, sd, 1.0), prices, generation_cost=cg)
    price = prices + cg
    t = int(math.floor(budget / float(shares @ price) * (1 + 1e-12)))
    while t >= 1:
        b = _apportion_rows(np.array([float(t)]), shares)[0]
        if float(b @ price) <= budget * (1 + 1e-12):
            break
        t -= 1
    if t < len(names) or (b < 1).any():
        raise CjstatsError(f"The budget {budget:g} of {caller} does not buy one call of every judge at the "
                           f"cost-weighted frequencies; raise it.")
    kw = dict(s2_scenario=s2_scenario, n=n) if s2_scenario else {}
    var_w = poststratified_variance(s2b, s2e_l, b, **kw)
    te = int(math.floor(budget / float(price.mean()) * (1 + 1e-12)))
    be = _apportion_rows(np.array([float(te)]), np.full(len(names), 1 / len(names)))[0]
    if (be < 1).any():
        raise CjstatsError(f"The budget {budget:g} of {caller} does not buy one call of every judge; raise it.")
    var_e = poststratified_variance(s2b, s2e_l, be, **kw)
    cost_w, cost_e = float(b @ price), float(te * price.mean())
    return WeightedAllocation(judges=tuple(names), shares=tuple(map(float, shares)), counts=tuple(map(int, b)),
                              cost=cost_w, variance=var_w, equal_counts=tuple(map(int, be)), equal_cost=cost_e,
                              equal_variance=var_e, saving=1 - (var_w * cost_w) / (var_e * cost_e))


def poststratified_mean(scores: Any, *, judges: Sequence[str] | None = None) -> float | pd.DataFrame:
    """The post-stratified panel mean (1/K_tot) Σ_l mean(scores of judge l): unbiased for any judge frequencies.

    ``scores`` is a DataFrame with columns ``judge, score`` (or a :class:`~cjstats.scores.Scores`). With
    ``model`` (and ``criterion``) columns the result is a DataFrame with one ``poststratified_mean`` per
    group; otherwise a float. ``judges`` is the panel: every panel judge must have at least one score, since
    the panel mean cannot be recovered without it.
    """
    from cjstats.scores import Scores

    caller = "poststratified_mean"
    df = scores.to_frame() if isinstance(scores, Scores) else scores
    if not isinstance(df, pd.DataFrame):
        raise CjstatsError(f"{caller} takes a DataFrame with columns judge and score, or a Scores table. "
                           f"Got {type(scores).__name__} instead.")
    for col in ("judge", "score"):
        if col not in df.columns:
            raise CjstatsError(f"The table passed to {caller} has no column '{col}' (found: "
                               f"{', '.join(map(str, df.columns))}).")
    keys = [c for c in ("model", "criterion") if c in df.columns]
    panel = None if judges is None else [str(j) for j in judges]

    def one(part: pd.DataFrame) -> float:
        means = part.groupby(part["judge"].astype(str))["score"].mean()
        if panel is not None:
            missing = [j for j in panel if j not in means.index]
            if missing:
                raise CjstatsError(f"Judge '{missing[0]}' has no score, so {caller} cannot recover the panel mean; "
                                   f"give every panel judge at least one call.")
            means = means.reindex(panel)
        return float(means.mean())

    if not keys:
        return one(df)
    rows = [{**dict(zip(keys, key if isinstance(key, tuple) else (key,))), "poststratified_mean": one(part)}
            for key, part in df.groupby(keys, sort=True)]
    return pd.DataFrame(rows)


def judge_residual_variances(scores: Any, *, model: str | None = None,
                             criterion: str | None = None) -> dict[str, float]:
    """Per-judge residual variances σ²_ε,l of one balanced group (for unequal-noise allocation).

    With crossed-ANOVA residuals r_ijl and S_l = Σ_ij r_ijl², E[S_l/(nm − 1)] = σ²_l (1 − 2/K) + σ̄²/K, so
    σ̄² = K/(K − 1) mean_l S_l/(nm − 1) (= MS_W) and σ²_l = (S_l/(nm − 1) − σ̄²/K)/(1 − 2/K), unbiased for
    K >= 3 (negative values are set to 0). With K = 2 the two cannot be told apart and both get MS_W.
    """
    from cjstats.subsample import pool_array

    y = pool_array(scores, model=model, criterion=criterion)
    n, m, k = y.shape
    c = n * m
    if c < 2 or k < 2:
        raise CjstatsError("judge_residual_variances needs at least 2 (scenario, generation) cells and 2 judges.")
    r = y - y.mean(axis=2, keepdims=True) - y.mean(axis=(0, 1), keepdims=True) + y.mean()
    s = (r ** 2).sum(axis=(0, 1)) / (c - 1)
    mean_s2 = k / (k - 1) * s.mean()
    per = np.full(k, mean_s2) if k == 2 else np.maximum((s - mean_s2 / k) / (1 - 2 / k), 0.0)
    from cjstats.scores import Scores

    if isinstance(scores, Scores):
        g = scores.group(model if model is not None else scores.models[0], criterion)
        names = list(g.judge_labels)
    else:
        names = [f"judge_{i}" for i in range(k)]
    return dict(zip(names, map(float, per)))


# ----------------------------------------------------------------------------------------- demo section
def allocation_section(fit: Any) -> str:
    """A short titled text block for the demo report: what each judge-assignment strategy buys per model.

    At the price of one judge call per scenario (n calls), the standard error of the benchmark score with one
    fixed judge (Proposition 1, K = 1), a random judge per scenario (Eq. 4) and CyclicJudge (Eq. 5 with the
    leftover term), against all K_tot judges at K_tot times the calls (Eq. 3).
    """
    from cjstats.variance import design_variance

    t = fit.components
    keys = ["model", "criterion"] if "criterion" in t.columns else ["model"]
    rows = []
    for key, part in t.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        est = dict(zip(part["component"], part["estimate"].astype(float)))
        des = fit.design
        sel = np.ones(len(des), dtype=bool)
        for name, value in zip(keys, key):
            sel &= des[name].astype(str).to_numpy() == str(value)
        d = des[sel].iloc[0]
        n, kt = int(d["n_scenarios"]), int(d["n_judges"])
        s2a = est["scenario"] + (0.0 if math.isnan(est["generation"]) else est["generation"])
        args = (s2a, 0.0, est["residual"], est["judge_panel"])
        se = {a: math.sqrt(design_variance(*args, n=n, m=1, k=1, k_total=kt, assignment=a))
              for a in ("fixed", "random", "cyclic")}
        se_all = math.sqrt(design_variance(*args, n=n, m=1, k=kt, k_total=kt, assignment="cyclic"))
        judge_share = est["judge_panel"] / (se["fixed"] ** 2)
        rows.append({**dict(zip(keys, key)), "one judge": se["fixed"], "random judge": se["random"],
                     "CyclicJudge": se["cyclic"], f"all {kt} judges ({kt}x calls)": se_all,
                     "judge share (one judge)": f"{100 * judge_share:.0f}%"})
    table = pd.DataFrame(rows)
    first = rows[0]
    ns = fit.design["n_scenarios"].unique()
    calls = f"{int(ns[0])} judge calls (one per scenario)" if len(ns) == 1 else "one judge call per scenario"
    title = f"Allocation: standard error of the benchmark score at {calls}"
    return "\n".join([
        title, "-" * len(title),
        table.to_string(index=False, float_format=lambda v: f"{v:.4f}"), "",
        "one judge: the same judge scores every scenario (Prop. 1, K = 1); random judge: a judge drawn per "
        "scenario (Eq. 4); CyclicJudge: one rotation over shuffled scenarios (Eq. 5), same cost as one judge.",
        f"e.g. {first['model']}: CyclicJudge cuts the SE from {first['one judge']:.4f} to "
        f"{first['CyclicJudge']:.4f} at the same cost. Plan it: cjstats plan; optimise a budget: cjstats allocate.",
    ])
