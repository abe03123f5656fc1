"""The budget optimiser: from variance components (with their uncertainty) to a recommended design.

:func:`optimise` enumerates the feasible designs for a total budget, in judge calls or in money: strategy
(CyclicJudge ``cyclic``, random judges ``random``, all judges ``all``, and with unequal prices or noise the
cost-weighted ``weighted``), number of scenarios n (up to the dataset size), generations per scenario m and
judges per generation k. It ranks them by predicted variance (or by cost to reach ``target_se``) with the
closed forms of :mod:`cjstats.decisions.formulas`, and carries the uncertainty of the components through: an interval on
each design's predicted variance and the probability that each strategy is best. It is the one optimiser: for
an ordinal (latent-scale) fit the same steps run with the variance of each candidate simulated from the
posterior instead (:class:`cjstats.decisions.predictive.PosteriorPredictive`).

Beyond the paper (its stated limitation is equal-cost calls): with per-judge prices c_l, a price per generation
c_gen and per-judge residual variances σ²_ε,l, the post-stratified mean (1/K_tot) Σ_l mean(scores of judge l)
(:func:`poststratified_mean`) recovers the panel mean exactly for ANY judge frequencies, and its variance
(1/K_tot²) Σ_l (σ²_β + σ²_ε,l)/b_l at a fixed cost Σ_l b_l (c_l + c_gen) is smallest for the Neyman/Cochran
frequencies b_l ∝ s_l / sqrt(c_l + c_gen), s_l² = σ²_β + σ²_ε,l (:func:`cjstats.decisions.formulas.neyman_shares`).
Equal prices and noise give equal frequencies: CyclicJudge. :func:`cost_weighted_allocation` gives the counts
and the saving against equal cycling; :func:`cjstats.decisions.schedules.cyclic_schedule` with ``shares=`` realises them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import optimize

from cjstats import _dist
from cjstats._validate import check_choice, check_number, check_positive_int
from cjstats.results.allocation import Allocation
from cjstats.results.allocation import p_best as _p_best
from cjstats.exceptions import CjstatsError
from cjstats.decisions.inputs import DECISION_COMPONENTS as _COMP
from cjstats.decisions.inputs import group_components
from cjstats.decisions.predictive import OPTIMISE_DRAWS, OPTIMISE_SIMS, PosteriorPredictive, ordinal_draws
from cjstats.decisions.schedules import _largest_remainder, _rng
from cjstats.decisions.formulas import (
    _bisect_first,
    _first_true,
    _last_true,
    _next_multiple,
    _period,
    _to_int,
    design_coefficients,
    neyman_shares,
    poststratified_variance,
)

__all__ = ["optimise", "Allocation", "OPTIMISE_STRATEGIES", "cost_weighted_allocation", "WeightedAllocation",
           "poststratified_mean", "judge_residual_variances", "allocation_section", "scenario_judge_verdict"]

#: Strategies the optimiser compares. ``cyclic``: k judges per generation from one rotation (k = 1 is the
#: paper's C); ``random``: k judges drawn at random per generation (k = 1 is B); ``all``: every judge (A);
#: ``weighted``: one judge per generation at Neyman/Cochran frequencies, post-stratified mean.
OPTIMISE_STRATEGIES: tuple[str, ...] = ("cyclic", "random", "all", "weighted")

_TOL = 1e-12          # relative slack when comparing a cost with the budget or a variance with the target


# ---------------------------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class _Inputs:
    point: np.ndarray                 # (5,) in _COMP order (the last is scenario_judge, 0 when absent)
    lower: np.ndarray | None
    upper: np.ndarray | None
    ci_level: float
    draws: np.ndarray | None          # (S, 5) posterior draws, if the backend gave them
    judges: list[str] | None
    n_data: int | None
    generation_identifiable: bool
    model: str | None
    criterion: str | None

    @property
    def names(self) -> tuple[str, ...]:
        """The components that enter the variances: the four of the paper, and scenario_judge when it is (or may
        be) positive. Leaving a zero interaction out keeps every sum of the paper's model as it was."""
        sj = self.point[4] > 0 or (self.upper is not None and self.upper[4] > 0) or (
            self.draws is not None and bool((self.draws[:, 4] > 0).any()))
        return _COMP if sj else _COMP[:4]


def _inputs(fit: Any, model: str | None, criterion: str | None, caller: str) -> _Inputs:
    """The optimiser's view of one group (built on :func:`cjstats.decisions.inputs.group_components`, the one extractor)."""
    g = group_components(fit, model, criterion, caller)
    gen_ok = g.generation_identifiable
    point = np.array([g.estimates[c] for c in _COMP])
    lower = upper = None
    if g.lower is not None:
        lower = np.array([g.lower[c] for c in _COMP])
        upper = np.array([g.upper[c] for c in _COMP])
    for a in (point, lower, upper):
        if a is not None and not gen_ok:
            a[1] = 0.0
    if lower is not None:
        lower = np.where(np.isfinite(lower), np.maximum(lower, 0.0), point)
        upper = np.where(np.isfinite(upper), upper, point)
    draws = None if g.draws is None else np.where(np.isfinite(g.draws), np.maximum(g.draws, 0.0), 0.0)
    return _Inputs(point=point, lower=lower, upper=upper, ci_level=g.ci_level, draws=draws, judges=g.judges,
                   n_data=g.n_scenarios, generation_identifiable=gen_ok, model=g.model, criterion=g.criterion)


def _with_residual(inp: _Inputs, value: float) -> _Inputs:
    """Replace the residual component by ``value``, scaling its interval and draws in proportion."""
    old = float(inp.point[2])
    scale = value / old if old > 0 else None

    def fix(a: np.ndarray | None, axis_last: bool = False) -> np.ndarray | None:
        if a is None:
            return None
        a = a.copy()
        idx = (..., 2) if axis_last else 2
        a[idx] = a[idx] * scale if scale is not None else value
        return a

    return dataclasses.replace(inp, point=fix(inp.point), lower=fix(inp.lower), upper=fix(inp.upper),
                               draws=fix(inp.draws, axis_last=True))


def _interval_draws(inp: _Inputs, size: int, rng: np.random.Generator) -> np.ndarray:
    """Approximate draws of the components from their intervals: one scaled chi-square law per component.

    For an interval [L, U] at level 1 - 2a with L > 0, X = s chi2_nu / nu with nu solving
    chi2_{nu,1-a} / chi2_{nu,a} = U / L and s = L nu / chi2_{nu,a} (exact for the residual's chi-square
    interval, a Satterthwaite-type approximation otherwise). With L = 0 the estimate is matched to the median
    instead of L (and nu = 1 when the estimate is 0 too). Components are drawn independently.
    """
    a = (1 - inp.ci_level) / 2
    out = np.empty((size, inp.point.size))
    for j in range(inp.point.size):
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
            s = hi * nu / _dist.chi2_ppf(1 - a, nu)
            out[:, j] = s * rng.chisquare(nu, size) / nu
            continue

        def gap(lnu: float, qa: float = qa, ratio: float = ratio) -> float:
            nu = math.exp(lnu)
            low = _dist.chi2_ppf(qa, nu)
            if low <= 0:
                return math.inf
            return math.log(_dist.chi2_ppf(1 - a, nu)) - math.log(low) - math.log(ratio)

        lo_nu, hi_nu = math.log(1e-2), math.log(1e7)
        if gap(hi_nu) > 0:
            nu = 1e7
        elif gap(lo_nu) < 0:
            nu = 1e-2
        else:
            nu = math.exp(optimize.brentq(gap, lo_nu, hi_nu, xtol=1e-10))
        ref = lo if lo > 0 else e
        s = ref * nu / _dist.chi2_ppf(qa, nu)
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


def _residual_by_judge(residual_by_judge: Mapping[str, float] | None, names: list[str],
                       caller: str) -> np.ndarray | None:
    """σ²_ε,l per panel judge as absolute residual variances (the one meaning of ``residual_by_judge``)."""
    if residual_by_judge is None:
        return None
    if not isinstance(residual_by_judge, Mapping):
        raise CjstatsError(f"The 'residual_by_judge' argument of {caller} must map each judge to its residual "
                           f"variance, such as {{'gpt': 1.2, 'claude': 0.8}}. Got {residual_by_judge!r} instead.")
    unknown = sorted(set(map(str, residual_by_judge)) - set(names))
    if unknown:
        raise CjstatsError(f"The 'residual_by_judge' argument of {caller} names judge '{unknown[0]}', which is not "
                           f"in the panel ({', '.join(names)}).")
    by_name = {str(k): v for k, v in residual_by_judge.items()}
    missing = [j for j in names if j not in by_name]
    if missing:
        raise CjstatsError(f"The 'residual_by_judge' argument of {caller} has no value for judge '{missing[0]}'.")
    return np.array([check_number(f"residual_by_judge['{j}']", by_name[j], caller=caller, minimum=0.0)
                     for j in names])


def _free_judge_sentence(judge: str, caller: str, what: str) -> str:
    return (f"Judge '{judge}' costs 0 per call and generation_cost is 0, so {what} of {caller} would give it every "
            f"call; give it a positive price or a generation_cost.")


# ---------------------------------------------------------------------------------------------- result
def _design_costs(strategy: str, k: int, n: np.ndarray, m: np.ndarray, prices: np.ndarray,
                  cg: float) -> tuple[np.ndarray, np.ndarray]:
    """(expected cost, maximum cost) of n scenarios x m generations with k judges per generation.

    ``all``: exactly n m (Σ c_l + c_gen). ``cyclic``: T = n m k calls in one rotation; every judge gets
    q = T // K_tot calls and the r = T mod K_tot extra calls go to a random r-subset (seeded judge shuffle):
    expected T mean(c) + n m c_gen, at most q Σ c_l + (the r largest prices) + n m c_gen. ``random``: k judges
    drawn per generation: expected as cyclic, at most n m (the k largest prices + c_gen).
    """
    kt = prices.size
    top = np.concatenate([[0.0], np.cumsum(np.sort(prices)[::-1])])          # top[r]: the r dearest judges
    gens = n * m
    if strategy == "all":
        c = gens * (prices.sum() + cg)
        return c, c
    expected = gens * (cg + k * prices.mean())
    if strategy == "random":
        return expected, gens * (cg + top[k])
    q, r = np.divmod(np.asarray(gens * k, dtype=np.int64), kt)
    return expected, q * prices.sum() + top[r] + gens * cg


def _uniform_designs(strategy: str, k: int, n: np.ndarray, inp: _Inputs, kt: int, prices: np.ndarray, cg: float,
                     budget: float | None, target_v: float | None, m_cap: int) -> pd.DataFrame | None:
    """The best m for every n of one (strategy, k): the most generations affordable in the worst case, or the
    fewest that reach the target (found exactly: see :func:`cjstats.decisions.formulas.scenarios_for_target_se`)."""
    assignment = "random" if strategy == "random" else "cyclic"
    point = inp.point
    n_int = n.astype(np.int64)

    names = inp.names
    s2sj = float(point[4])

    def variance(rows: np.ndarray, m: np.ndarray) -> np.ndarray:
        c = design_coefficients(n=n[rows], m=m, k=k, k_total=kt, assignment=assignment)
        return sum(c[name] * v for name, v in zip(names, point))

    if target_v is None:
        per_gen = cg + k * prices.mean()                      # expected <= maximum cost: an upper bound on m
        hi = np.minimum(_to_int(budget / (n * per_gen) * (1 + _TOL), m_cap), m_cap)
        over = _bisect_first(lambda r, x: _design_costs(strategy, k, n[r], x, prices, cg)[1] > budget * (1 + _TOL),
                             np.ones_like(hi), hi)
        m = over - 1                                          # the last m whose maximum cost fits the budget
    else:
        # V(m) = s2a/n + P/m + J(m) with J >= 0 the leftover of a rotation (zero when n m k is a multiple of
        # K_tot); P/m <= room is necessary, and the next such m is sufficient: at most K_tot steps apart.
        # The interaction adds s2sj/(n K_tot) (to the fixed part) and, for random, s2sj (1 - k/K_tot)/(nk) per
        # 1/m; for cyclic s2sj r (K_tot - r)/(n K_tot (mk)^2) >= 0, zero when K_tot divides mk (then so does nmk).
        c1 = design_coefficients(n=n, m=1, k=k, k_total=kt, assignment=assignment)
        per_m = c1["generation"] * point[1] + c1["residual"] * point[2] + (
            c1["judge_panel"] * point[3] if assignment == "random" else 0.0)
        room = target_v - c1["scenario"] * point[0]
        if s2sj > 0:
            room = room - s2sj / (n * kt)
            if assignment == "random":
                per_m = per_m + s2sj * (1.0 - k / kt) / (n * k)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(room > 0, per_m / np.where(room > 0, room, 1.0), np.inf)
        lo = np.maximum(1, _to_int(ratio * (1 - 1e-9), m_cap + 1))
        if assignment == "cyclic":
            p = _period(np.full_like(n_int, k) if s2sj > 0 else n_int * k, kt)
        else:
            p = np.ones_like(n_int)
        hi = _next_multiple(np.maximum(1, _to_int(ratio * (1 + 1e-9), m_cap + 1) + 1), p) + p
        hi = np.minimum(hi, m_cap)
        m = _first_true(lambda r, x: variance(r, x) <= target_v, lo, hi)
        m = np.where((room > 0) & (m <= hi), m, 0)
    ok = m >= 1
    if not ok.any():
        return None
    nn, mm = n[ok], m[ok].astype(float)
    c = design_coefficients(n=nn, m=mm, k=k, k_total=kt, assignment=assignment)
    cost, max_cost = _design_costs(strategy, k, nn, mm, prices, cg)
    return pd.DataFrame({"strategy": strategy, "judges_per_generation": k, "n": nn.astype(np.int64),
                         "m": mm.astype(np.int64), "calls": (nn * mm * k).astype(np.int64), "cost": cost,
                         "max_cost": max_cost, **{f"c_{name}": c[name] for name in _COMP}})


def _weighted_designs(n: np.ndarray, shares: np.ndarray, price: np.ndarray, rho: np.ndarray, point: np.ndarray,
                      budget: float | None, target_v: float | None, m_cap: int) -> pd.DataFrame | None:
    """Designs of the cost-weighted strategy: n scenarios x m generations, one judge per generation.

    Judge l gets b_l = :func:`cjstats.decisions.schedules._largest_remainder` (n m, shares)_l calls, exactly the counts that
    ``cyclic_schedule(..., shares=)`` realises, so the cost Σ_l b_l (c_l + c_gen) (``price``) is exact. Budget:
    the largest affordable m (since T s·price − Σ price < cost < T s·price + Σ price, only a short window of m
    is checked). Target: the first m that reaches it; floor(T s_l) <= b_l <= floor(T s_l) + 1 bound the variance
    from both sides, monotonically in m, and the window between the two bounds is searched exactly.
    """
    kt = shares.size
    s2a, s2b, s2e = point[:3]
    s2sj = float(point[4])
    call_var = s2b + rho * s2e                                 # σ²_β + σ²_ε,l: one call of judge l
    n_int = n.astype(np.int64)

    def counts(rows: np.ndarray, m: np.ndarray) -> np.ndarray:
        return _largest_remainder(n_int[rows] * m, shares)

    def variance(rows: np.ndarray, m: np.ndarray) -> np.ndarray:
        b = counts(rows, m)
        with np.errstate(divide="ignore"):
            v = s2a / n[rows] + np.where(b > 0, 1.0 / np.maximum(b, 1), np.inf) @ call_var / kt**2
        return v + s2sj * _weighted_sj(b, n[rows], kt) if s2sj > 0 else v

    def bound(rows: np.ndarray, m: np.ndarray, extra: int) -> np.ndarray:
        base = np.floor((n_int[rows] * m).astype(float)[:, None] * shares[None, :]) + extra
        with np.errstate(divide="ignore"):
            v = s2a / n[rows] + np.where(base > 0, 1.0 / np.maximum(base, 1), np.inf) @ call_var / kt**2
            if s2sj > 0:                                  # 1/(nK) <= c_sj <= 1/(nK) + Σ_l n/(4 K² b_l²)
                v = v + s2sj / (n[rows] * kt)
                if extra == 0:
                    v = v + s2sj * n[rows] * (np.where(base > 0, 1.0 / np.maximum(base, 1), np.inf) ** 2).sum(
                        axis=1) / (4 * kt**2)
        return v

    if target_v is None:
        sp, psum = float(shares @ price), float(price.sum())
        hi = np.minimum(_to_int((budget + psum) / (n * sp), m_cap), m_cap)
        lo = np.minimum(np.maximum(1, _to_int((budget - psum) / (n * sp), m_cap)), np.maximum(hi, 1))
        m = _last_true(lambda r, x: counts(r, x) @ price <= budget * (1 + _TOL), lo, hi)
    else:
        one = np.ones_like(n_int)
        lo = _bisect_first(lambda r, x: bound(r, x, 1) <= target_v, one, np.full_like(n_int, m_cap))
        hi = np.minimum(_bisect_first(lambda r, x: bound(r, x, 0) <= target_v, one, np.full_like(n_int, m_cap)),
                        m_cap)
        m = _first_true(lambda r, x: (variance(r, x) <= target_v) & (counts(r, x).min(axis=1) >= 1), lo, hi,
                        max_elements=2**16)
        m = np.where(m <= hi, m, 0)
    rows = np.flatnonzero(m >= 1)
    if rows.size == 0:
        return None
    b = counts(rows, m[rows])
    rows, b = rows[b.min(axis=1) >= 1], b[b.min(axis=1) >= 1]
    if rows.size == 0:
        return None
    inv = 1.0 / b
    cost = b @ price
    return pd.DataFrame({"strategy": "weighted", "judges_per_generation": 1, "n": n_int[rows], "m": m[rows],
                         "calls": n_int[rows] * m[rows], "cost": cost, "max_cost": cost,
                         "c_scenario": 1 / n[rows], "c_generation": inv.sum(axis=1) / kt**2,
                         "c_residual": inv @ rho / kt**2, "c_judge_panel": 0.0,
                         "c_scenario_judge": _weighted_sj(b, n[rows], kt)})


def _weighted_sj(b: np.ndarray, n: np.ndarray, kt: int) -> np.ndarray:
    """Coefficient of σ²_αγ of the post-stratified mean when judge l's b_l calls spread over the n scenarios as
    evenly as possible (floor or ceil of b_l/n per scenario, what the weighted round robin does to +-1).

    w_il = b_il/(K b_l), so Σ_il w_il² = Σ_l Σ_i b_il²/(K b_l)², and with b_il in {⌊x_l⌋, ⌊x_l⌋ + 1}, x_l = b_l/n,
    Σ_i b_il² = n (x_l² + f_l (1 − f_l)), f_l the fractional part of x_l: the coefficient is
    1/(nK) + Σ_l n f_l (1 − f_l)/(K² b_l²) (scenarios resampled; equal shares give the cyclic coefficient).
    """
    b = np.asarray(b, dtype=float)
    n = np.asarray(n, dtype=float)
    x = b / n[:, None]
    f = x - np.floor(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        extra = np.where(b > 0, n[:, None] * f * (1 - f) / np.maximum(b, 1) ** 2, 0.0).sum(axis=1) / kt**2
    return 1.0 / (n * kt) + extra


def optimise(fit: Any, *, budget: float | None = None, k_total: int | None = None, n_max: int | None = None,
             judge_costs: Mapping[str, float] | None = None, generation_cost: float = 0.0,
             target_se: float | None = None, model: str | None = None, criterion: str | None = None,
             m_max: int | None = None, residual_by_judge: Mapping[str, float] | None = None,
             strategies: Sequence[str] | None = None, n_draws: int = 4000, seed: int | None = 0,
             target: Literal["mean", "difference"] = "mean", models: tuple[str, str] | None = None,
             progress: bool | None = None) -> Allocation:
    """Find the design with the smallest predicted variance for a budget (or the cheapest that reaches a SE).

    Parameters
    ----------
    fit : VarianceComponents or mapping
        Components from :func:`cjstats.estimate` (one model/criterion is used: ``model=``, ``criterion=``), or
        a mapping ``{scenario, generation, residual, judge_panel}`` of point values (no uncertainty then). An
        ordinal fit (``method="bayes", likelihood="ordinal"``) is planned by simulation (see Notes).
    budget : float, optional
        Total budget: judge calls when no prices are given, else money (calls x price + generations x
        ``generation_cost``). A design is within budget when its MAXIMUM cost is (see Notes).
    k_total : int, optional
        Panel size (default: the fit's judges, or the priced judges).
    n_max : int, optional
        Scenarios available (default: the fit's n; required for a mapping).
    judge_costs : mapping, optional
        Price per call of each panel judge. Unequal prices add the ``weighted`` strategy. A money budget needs
        a positive cost per generation (some positive price, or a ``generation_cost``).
    generation_cost : float
        Price of producing one generation (one model output).
    target_se : float, optional
        Rank designs by cost to reach this standard error instead (within ``budget`` if also given).
    m_max : int, optional
        Most generations per scenario you can produce (1 is forced when the fit had m = 1).
    residual_by_judge : mapping, optional
        σ²_ε,l per judge as ABSOLUTE residual variances (e.g. :func:`judge_residual_variances`; the same meaning
        as in :func:`cost_weighted_allocation` and :func:`cjstats.decisions.schedules.realised_variance`). They replace the
        fit's residual: the ``weighted`` strategy uses each σ²_ε,l, the others their mean (what an equal share
        of calls per judge averages to), and the residual's interval is scaled by mean/estimate. Unequal values
        add ``weighted``.
    strategies : sequence, optional
        Subset of :data:`OPTIMISE_STRATEGIES`.
    target : {"mean", "difference"}
        ``"difference"``: minimise the variance of the difference of two models' panel means instead, from a
        joint fit (:func:`cjstats.fit_joint`; ``models=(a, b)``, default the two best), over strategies A/B/C
        and shared or independent judge schedules (:func:`cjstats.decisions.differences.difference_allocation`).
    n_draws, seed
        Draws used for intervals and probabilities (posterior draws are used as given when the fit has them;
        otherwise approximate draws matched to the component intervals).

    Returns
    -------
    Allocation

    Notes
    -----
    One optimiser, in steps: validate the targets; the problem (components, panel and prices, limits on n and
    m, strategies); enumerate the candidate designs; evaluate each candidate's variance; rank; intervals and
    P(best); notes; one :class:`Allocation`. Only the variance evaluation depends on the fit: the closed forms
    below for score-scale components, or, for a latent-scale fit (``likelihood="ordinal"``), posterior-predictive
    simulation on the score scale (:class:`cjstats.decisions.predictive.PosteriorPredictive`: equal-cost calls
    only, so ``judge_costs``, ``generation_cost``, ``residual_by_judge``, ``target_se`` and ``weighted`` are
    refused; candidates spend the budget on as many scenarios as possible; the table gains ``mc_se``).

    Variances are the closed forms of :mod:`cjstats.decisions.formulas` (Proposition 1 and Eqs. 3-5 with the leftover
    judge term; :func:`~cjstats.decisions.formulas.poststratified_variance` for ``weighted``), including the scenario
    term σ²_α/n because n is a design choice. For each (strategy, judges per generation k) and each n the
    search is exact: with a budget, the largest m whose maximum cost fits; with a target, the smallest m that
    reaches it (the leftover and rounding terms are not monotone in m, so the window in which the answer must
    lie is bounded in closed form and searched in full), and every row is checked against the target again.

    ``cost`` is the expected cost and ``max_cost`` the most a design can cost: ``cyclic`` gives every judge
    q = calls // K_tot calls and the r = calls mod K_tot extra calls to a random r-subset of the judges, so at
    most q Σ c_l plus the r largest prices; ``random`` at most every call on the dearest judges; ``all`` and
    ``weighted`` (whose counts :func:`cjstats.decisions.schedules.cyclic_schedule` realises exactly) cost exactly ``cost``.
    An ordinal fit's calls all cost 1, so ``cost`` = ``max_cost`` = calls. Its simulation counts the designs on stderr
    when ``progress`` is True (None, the default: only when stderr is a terminal).

    Examples
    --------
    >>> import cjstats as cj
    >>> fit = cj.estimate(cj.datasets.load("hanna", composite=True), method="reml")
    >>> cj.optimise(fit, budget=480, model="GPT").recommendation["strategy"]  # doctest: +SKIP
    'cyclic'
    """
    caller = "optimise"
    # --- target="difference": the variance of a paired difference of two models (cjstats.estimators.joint) --------
    if target == "difference":
        from cjstats.decisions.differences import difference_allocation

        return difference_allocation(fit, budget=budget, models=models, k_total=k_total, n_max=n_max)
    check_choice("target", target, ("mean", "difference"), caller=caller)
    latent = getattr(fit, "scale", "score") == "latent"        # ordinal fit: posterior-predictive simulation
    if latent:
        budget, target_se, cg = _check_ordinal_targets(budget, target_se, generation_cost, judge_costs,
                                                       residual_by_judge, caller)
        rng = None
        pb = _ordinal_problem(fit, model=model, criterion=criterion, budget=budget, k_total=k_total, n_max=n_max,
                              m_max=m_max, strategies=strategies, seed=seed, caller=caller, progress=progress)
    else:
        budget, target_se, cg, n_draws = _check_targets(budget, target_se, generation_cost, n_draws, caller)
        rng = _rng(seed, caller)
        pb = _problem(fit, model=model, criterion=criterion, budget=budget, target_se=target_se, cg=cg,
                      judge_costs=judge_costs, k_total=k_total, n_max=n_max, m_max=m_max,
                      residual_by_judge=residual_by_judge, strategies=strategies, caller=caller, n_draws=n_draws,
                      rng=rng)
    designs = _enumerate_designs(pb, caller)
    designs, table = _rank_designs(designs, pb.target_v)
    table, strat, uncertainty = _with_uncertainty(table, pb)
    designs = designs[["strategy", "judges_per_generation", "n", "m", "budget_per_scenario", "calls", "cost",
                       "max_cost", "variance", "se"]]
    rec = {k: (v.item() if hasattr(v, "item") else v) for k, v in table.iloc[0].to_dict().items()}
    notes = pb.notes + _closing_notes(uncertainty, pb)
    return Allocation(table=table, strategies=strat, designs=designs, recommendation=rec, budget=budget,
                      budget_unit=pb.unit, target_se=target_se, k_total=pb.kt, n_max=pb.nmax,
                      components=pb.components, judge_costs=dict(zip(pb.names, map(float, pb.prices))),
                      generation_cost=cg,
                      frequencies=None if pb.shares is None else dict(zip(pb.names, map(float, pb.shares))),
                      uncertainty=uncertainty, ci_level=pb.ci_level, model=pb.model, criterion=pb.criterion,
                      notes=tuple(notes))


# ------------------------------------------------------------------------------ the optimiser's steps
def _check_targets(budget: float | None, target_se: float | None, generation_cost: float, n_draws: int,
                   caller: str) -> tuple[float | None, float | None, float, int]:
    """Step 1: the budget and/or target SE, the generation cost and the number of draws, validated."""
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
    return budget, target_se, cg, n_draws


def _check_ordinal_targets(budget: float | None, target_se: float | None, generation_cost: float,
                           judge_costs: Mapping[str, float] | None, residual_by_judge: Mapping[str, float] | None,
                           caller: str) -> tuple[float, None, float]:
    """Step 1 for a latent-scale (ordinal) fit: a budget in equal-cost judge calls, nothing else.

    The simulation prices every call alike and its residual is the fixed logistic unit of the latent scale, so
    prices, a generation cost, per-judge residuals and a target SE are refused, each in one sentence.
    """
    if judge_costs is not None:
        raise CjstatsError(f"{caller} plans ordinal fits for equal-cost judge calls only, so judge_costs cannot be "
                           f"given with a likelihood='ordinal' fit; leave judge_costs out to count calls.")
    if generation_cost:
        raise CjstatsError(f"{caller} plans ordinal fits in judge calls only, so generation_cost must be 0 with a "
                           f"likelihood='ordinal' fit.")
    if residual_by_judge is not None:
        raise CjstatsError(f"{caller} cannot take residual_by_judge with a likelihood='ordinal' fit, whose "
                           f"residual is the fixed logistic unit of the latent scale.")
    if target_se is not None:
        raise CjstatsError(f"{caller} ranks ordinal fits by a call budget only; give budget instead of target_se "
                           f"for a likelihood='ordinal' fit.")
    if budget is None:
        raise CjstatsError(f"{caller} needs a budget (judge calls) for a likelihood='ordinal' fit.")
    budget = check_number("budget", budget, caller=caller, minimum=0.0)
    if budget < 1:
        raise CjstatsError(f"The 'budget' argument of {caller} must be at least one judge call. Got {budget!r} "
                           f"instead.")
    return float(budget), None, 0.0


class _ClosedForms:
    """The variance evaluation of a score-scale fit: the closed forms of :mod:`cjstats.decisions.formulas`.

    Every candidate carries its coefficients ``c_<component>`` (Proposition 1 and Eqs. 3-5 with the leftover
    judge term from :func:`~cjstats.decisions.formulas.design_coefficients`; the post-stratified mean's for
    ``weighted``), and its variance is V = Σ_c coef_c σ²_c over :attr:`_Inputs.names`. Uncertainty: V at each
    posterior draw of the components when the fit has draws, else at approximate draws matched to the
    components' intervals (:func:`_interval_draws`; the interval on V is then V at the interval bounds, since V
    increases in every component), else none. The candidates are searched exactly per n (:func:`_candidates`).
    """

    extra_columns: tuple[str, ...] = ()

    def __init__(self, inp: _Inputs, n_draws: int, rng: np.random.Generator | None) -> None:
        self.inp, self.n_draws, self.rng = inp, n_draws, rng
        self.kind = "none"
        self._draws = inp.point[None, :]

    def candidates(self, pb: _Problem) -> pd.DataFrame:
        return _candidates(pb)

    def _coef(self, frame: pd.DataFrame) -> np.ndarray:
        return frame[[f"c_{c}" for c in self.inp.names]].to_numpy()

    def evaluate(self, designs: pd.DataFrame) -> pd.DataFrame:
        designs = designs.copy()
        designs["variance"] = self._coef(designs) @ self.inp.point[:len(self.inp.names)]
        return designs

    def uncertainty(self) -> str:
        inp = self.inp
        if inp.draws is not None:
            self._draws, self.kind = inp.draws, "posterior draws"
        elif inp.lower is not None:
            self._draws, self.kind = _interval_draws(inp, self.n_draws, self.rng), "interval bounds"
        else:
            self._draws, self.kind = inp.point[None, :], "none"
        return self.kind

    def row_draws(self, frame: pd.DataFrame) -> np.ndarray:
        return self._coef(frame) @ self._draws[:, :len(self.inp.names)].T          # (rows, S)

    def bounds(self, frame: pd.DataFrame, vd: np.ndarray, a: float) -> tuple[np.ndarray, np.ndarray]:
        if self.kind == "posterior draws":
            return np.quantile(vd, a, axis=1), np.quantile(vd, 1 - a, axis=1)
        if self.kind == "interval bounds":
            k = len(self.inp.names)
            return self._coef(frame) @ self.inp.lower[:k], self._coef(frame) @ self.inp.upper[:k]
        nan = np.full(len(frame), np.nan)
        return nan, nan.copy()


@dataclass(frozen=True)
class _Problem:
    """What the optimiser searches over: the panel and its prices, the limits and strategies, the targets, and
    the variance evaluation (``variance``: :class:`_ClosedForms` or
    :class:`cjstats.decisions.predictive.PosteriorPredictive`) with the components it reports."""

    inp: _Inputs | None               # the closed forms' components (None for a latent-scale fit)
    names: list[str]
    prices: np.ndarray
    kt: int
    nmax: int
    m_cap: int
    rho: np.ndarray
    unit: str
    strategies: list[str]
    shares: np.ndarray | None
    budget: float | None
    target_se: float | None
    target_v: float | None
    cg: float
    notes: list[str]
    variance: Any
    components: dict[str, float]
    ci_level: float
    model: str | None
    criterion: str | None
    generation_identifiable: bool


def _problem(fit: Any, *, model: str | None, criterion: str | None, budget: float | None, target_se: float | None,
             cg: float, judge_costs: Mapping[str, float] | None, k_total: int | None, n_max: int | None,
             m_max: int | None, residual_by_judge: Mapping[str, float] | None, strategies: Sequence[str] | None,
             caller: str, n_draws: int = 4000, rng: np.random.Generator | None = None) -> _Problem:
    """Step 2: the components of the fit, the panel and prices, limits on n and m, and the strategies to compare."""
    inp = _inputs(fit, model, criterion, caller)
    names, prices = _costs(judge_costs, inp.judges, k_total, caller)
    kt = len(names)
    notes: list[str] = []
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
        notes.append(_GENERATION_NOTE)
    s2e_l = _residual_by_judge(residual_by_judge, names, caller)
    if s2e_l is None:
        rho = np.ones(kt)
    else:
        mean = float(s2e_l.mean())
        rho = s2e_l / mean if mean > 0 else np.ones(kt)
        notes.append(f"residual_by_judge: the per-judge residual variances (mean {mean:.4g}) replace the fit's "
                     f"residual ({inp.point[2]:.4g})" + ("; its interval is scaled in proportion."
                                                         if inp.lower is not None or inp.draws is not None else "."))
        inp = _with_residual(inp, mean)
    s2b, s2e = inp.point[1], inp.point[2]
    if inp.point[4] > 0:
        notes.append(f"scenario x judge interaction (sigma2 {inp.point[4]:.4g}) included: a judge's deviation on a "
                     f"scenario is shared by every generation it scores there, so only more distinct judges per "
                     f"scenario shrink it. cyclic (k judges per generation, one rotation) splits a scenario's m k "
                     f"calls evenly over the panel and adds r (K_tot - r)/(n K_tot (m k)^2) + 1/(n K_tot) times it "
                     f"(r = m k mod K_tot); random adds (1 - k/K_tot)/(n m k) + 1/(n K_tot); weighted assumes each "
                     f"judge's calls spread evenly over the scenarios (realised_variance gives a schedule's exact "
                     f"value).")
    unit = "calls" if judge_costs is None and cg == 0 else "money"
    if cg + prices.mean() <= 0:
        raise CjstatsError(f"Every judge price given to {caller} is 0 and generation_cost is 0, so designs cost "
                           f"nothing; give the judges positive prices or a generation_cost (or leave judge_costs "
                           f"out to count calls).")
    unequal = bool(np.ptp(prices) > 0 or np.ptp(rho) > 0)
    explicit = strategies is not None
    if strategies is None:
        strategies = [s for s in OPTIMISE_STRATEGIES if s != "weighted" or unequal]
    strategies = [check_choice("strategies", s, OPTIMISE_STRATEGIES, caller=caller) for s in strategies]
    if not strategies:
        raise CjstatsError(f"The 'strategies' argument of {caller} is empty: give at least one strategy.")
    free = [names[i] for i in np.flatnonzero(prices + cg <= 0)]
    if "weighted" in strategies and free:
        if explicit:
            raise CjstatsError(_free_judge_sentence(free[0], caller, "the weighted strategy"))
        strategies = [s for s in strategies if s != "weighted"]
        notes.append(f"weighted left out: judge '{free[0]}' costs 0 per call (and generation_cost is 0), so the "
                     f"Neyman/Cochran rule would give it every call.")
    sd = np.sqrt(s2b + rho * s2e)
    shares = neyman_shares(np.where(sd > 0, sd, 1.0), prices, generation_cost=cg) \
        if "weighted" in strategies else None
    return _Problem(inp=inp, names=names, prices=prices, kt=kt, nmax=nmax, m_cap=m_cap, rho=rho, unit=unit,
                    strategies=strategies, shares=shares, budget=budget, target_se=target_se,
                    target_v=None if target_se is None else target_se ** 2, cg=cg, notes=notes,
                    variance=_ClosedForms(inp, n_draws, rng), components=dict(zip(_COMP, map(float, inp.point))),
                    ci_level=inp.ci_level, model=inp.model, criterion=inp.criterion,
                    generation_identifiable=inp.generation_identifiable)


_GENERATION_NOTE = ("generation is not identifiable (m = 1 in the data): designs use one generation per scenario, "
                    "and the scenario component holds scenario + generation.")


def _ordinal_problem(fit: Any, *, model: str | None, criterion: str | None, budget: float, k_total: int | None,
                     n_max: int | None, m_max: int | None, strategies: Sequence[str] | None, seed: int | None,
                     caller: str, progress: bool | None = None) -> _Problem:
    """Step 2 for a latent-scale (ordinal) fit: the posterior draws the simulation needs
    (:func:`cjstats.decisions.predictive.ordinal_draws`), the fit's panel at one price per call, and the
    strategies ``cyclic``, ``random`` and ``all`` (``weighted`` needs unequal prices or residuals: refused)."""
    params = ordinal_draws(fit, model=model, criterion=criterion, n_draws=OPTIMISE_DRAWS, caller=caller)
    kt = len(params["judges"])
    if k_total is not None and check_positive_int("k_total", k_total, caller=caller) != kt:
        raise CjstatsError(f"The 'k_total' argument of {caller} must equal the fit's {kt} judges for a "
                           f"likelihood='ordinal' fit (the simulation uses their posterior offsets).")
    nmax = check_positive_int("n_max", n_max if n_max is not None else params["n_scenarios"], caller=caller)
    m_cap = 10**7 if m_max is None else check_positive_int("m_max", m_max, caller=caller)
    source = "posterior" if getattr(fit, "posterior", None) else "asymptotic-normal (ML)"
    notes = [("ordinal fit: variances are on the score scale, from predictive simulation of the cumulative-"
              f"{params.get('link', 'logit')} model ({OPTIMISE_DRAWS} {source} draws x {OPTIMISE_SIMS} simulated studies per "
              "design); intervals and P(best) include Monte Carlo noise; 'components' are the fit's latent-scale "
              "estimates.")]
    if not params["generation_identifiable"]:
        m_cap = 1
        notes.append(_GENERATION_NOTE)
    if strategies is None:
        strategies = [s for s in OPTIMISE_STRATEGIES if s != "weighted"]
    strategies = [check_choice("strategies", s, OPTIMISE_STRATEGIES, caller=caller) for s in strategies]
    if "weighted" in strategies:
        raise CjstatsError(f"The weighted strategy of {caller} needs unequal prices or residuals, which a "
                           f"likelihood='ordinal' fit does not support; choose among cyclic, random and all.")
    if not strategies:
        raise CjstatsError(f"The 'strategies' argument of {caller} is empty: give at least one strategy.")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**32)
    comps = fit.estimates(model=params["model"], criterion=params["criterion"])
    comp_map = {c: float(comps[c]) for c in _COMP[:4] if c in comps and comps[c] is not None}
    judges = list(params["judges"])
    return _Problem(inp=None, names=judges, prices=np.ones(kt), kt=kt, nmax=nmax, m_cap=m_cap, rho=np.ones(kt),
                    unit="calls", strategies=strategies, shares=None, budget=budget, target_se=None,
                    target_v=None, cg=0.0, notes=notes,
                    variance=PosteriorPredictive(params, int(seed), caller, progress),
                    components=comp_map, ci_level=float(fit.ci_level), model=params["model"],
                    criterion=params["criterion"], generation_identifiable=bool(params["generation_identifiable"]))


def _candidates(pb: _Problem) -> pd.DataFrame:
    """The closed forms' candidates: for every strategy x k and every n, the best m (exact search)."""
    inp, budget, target_v = pb.inp, pb.budget, pb.target_v
    n = np.arange(1, pb.nmax + 1, dtype=float)
    frames = []
    for s in pb.strategies:
        if s == "weighted":
            frames.append(_weighted_designs(n, pb.shares, pb.prices + pb.cg, pb.rho, inp.point, budget, target_v,
                                            pb.m_cap))
            continue
        for k in ({"all": [pb.kt]}.get(s) or range(1, max(pb.kt, 2))):
            frames.append(_uniform_designs(s, k, n, inp, pb.kt, pb.prices, pb.cg, budget, target_v, pb.m_cap))
    frames = [f for f in frames if f is not None and not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _enumerate_designs(pb: _Problem, caller: str) -> pd.DataFrame:
    """Steps 3 and 4: the candidate designs of every strategy (``pb.variance.candidates``), each with its
    predicted variance (``pb.variance.evaluate``), kept when within budget and reaching the target."""
    budget, target_v, target_se, unit, nmax = pb.budget, pb.target_v, pb.target_se, pb.unit, pb.nmax
    designs = pb.variance.candidates(pb)
    if not designs.empty:
        designs = pb.variance.evaluate(designs)
        if target_v is not None:                                      # re-check every row against the target
            designs = designs[designs["variance"] <= target_v * (1 + _TOL)]
    if target_v is not None and budget is not None and not designs.empty:
        within = designs[designs["max_cost"] <= budget * (1 + _TOL)]
        if within.empty:
            best = designs.sort_values(["max_cost", "cost", "variance"], kind="stable").iloc[0]
            raise CjstatsError(
                f"No design reaches target_se={target_se:g} within budget {budget:g} {unit}: the cheapest that "
                f"does ({best['strategy']}, n = {best['n']} scenarios x m = {best['m']} generation"
                f"{'s' if best['m'] != 1 else ''} each) costs up to "
                f"{best['max_cost']:g} {unit}; raise the budget to at least that.")
        designs = within
    if designs.empty:
        if target_v is not None:
            s2a = pb.inp.point[0]
            if s2a / nmax >= target_v:
                raise CjstatsError(f"No design reaches target_se={target_se:g} with at most {nmax} scenarios: the "
                                   f"scenario term alone gives SE {math.sqrt(s2a / nmax):.4g} at n = {nmax}.")
            raise CjstatsError(f"No design reaches target_se={target_se:g} with at most {nmax} scenarios and "
                               f"{pb.m_cap} generation(s) each" + (" (generation is not identifiable)"
                                                                   if not pb.generation_identifiable else "")
                               + "; allow more generations per scenario (m_max) or aim for a larger SE.")
        raise CjstatsError(f"The budget {budget:g} {unit} of {caller} does not pay for one generation of one "
                           f"scenario with the chosen strategies; raise it.")
    return designs


def _rank_designs(designs: pd.DataFrame, target_v: float | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Step 5: designs ranked (lowest variance, or cheapest reaching the target); the best of each strategy x k."""
    designs = designs.copy()
    designs["se"] = np.sqrt(designs["variance"])
    designs["budget_per_scenario"] = designs["m"] * designs["judges_per_generation"]
    if target_v is None:
        designs = designs.sort_values(["variance", "max_cost", "cost", "n"], ascending=[True, True, True, False],
                                      kind="stable")
    else:
        designs = designs.sort_values(["cost", "max_cost", "variance"], kind="stable")
    designs = designs.reset_index(drop=True)
    table = designs.drop_duplicates(["strategy", "judges_per_generation"], keep="first").reset_index(drop=True)
    return designs, table


def _with_uncertainty(table: pd.DataFrame, pb: _Problem) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Step 6: intervals on each row's variance and P(best), from the evaluation's draws of the variance
    (``pb.variance.row_draws``: (rows, S)); P(best) among the rows (:func:`cjstats.results.allocation.p_best`)."""
    target_v, ev = pb.target_v, pb.variance
    uncertainty = ev.uncertainty()
    vd = ev.row_draws(table)
    table["variance_lower"], table["variance_upper"] = ev.bounds(table, vd, (1 - pb.ci_level) / 2)
    table["p_best"] = _p_best(vd, table["cost"].to_numpy(), target_v)
    if target_v is not None:
        table["p_reaches_target"] = (vd <= target_v).mean(axis=1)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    strat = table.drop_duplicates("strategy", keep="first").reset_index(drop=True)
    strat["p_best"] = _p_best(ev.row_draws(strat), strat["cost"].to_numpy(), target_v)
    keep = ["rank", "strategy", "judges_per_generation", "n", "m", "budget_per_scenario", "calls", "cost",
            "max_cost", "variance", "se", "variance_lower", "variance_upper", "p_best"] + \
        (["p_reaches_target"] if target_v is not None else []) + list(ev.extra_columns)
    return table[keep], strat[keep], uncertainty


def _closing_notes(uncertainty: str, pb: _Problem) -> list[str]:
    """Step 7: what the reader of the table needs to know about intervals, costs and the weighted strategy."""
    notes = []
    if uncertainty == "interval bounds":
        notes.append("Intervals: the predicted variance at the components' interval bounds (it increases in "
                     "every component); P(best): approximate draws, one scaled chi-square law per component "
                     "matched to its interval, drawn independently.")
    if pb.unit == "money":
        notes.append("cost is the expected cost and max_cost the most a design can cost (cyclic: the calls mod "
                     "K_tot extra calls of the rotation on the dearest judges; random: every call on the dearest "
                     "judges); a design is within budget only when its max_cost is.")
    if "weighted" in pb.strategies:
        notes.append("weighted: one judge per generation at Neyman/Cochran frequencies, analysed with the "
                     "post-stratified mean (cjstats.decisions.optimise.poststratified_mean); realise it with "
                     "cyclic_schedule(..., shares=allocation.frequencies). Its scenario term sigma2_alpha/n assumes "
                     "each judge's calls spread over the scenarios in proportion (the weighted round robin does, "
                     "+-1 call); realised_variance gives the exact value of a concrete schedule.")
    return notes


# -------------------------------------------------------------------------------- cost-weighted allocation
@dataclass(frozen=True, slots=True)
class WeightedAllocation:
    """Neyman/Cochran judge frequencies for a money budget, against equal cycling at the same budget.

    ``variance`` is that of the post-stratified mean with ``counts`` calls per judge (conditional on the
    scenarios unless ``s2_scenario`` was given) and ``cost`` their exact price. ``equal_*`` describe equal
    cycling (CyclicJudge) with the most calls T whose worst-case cost fits the budget: every judge gets
    T // K_tot calls and the T mod K_tot extra calls are costed on the dearest judges (``equal_counts``,
    ``equal_cost``). ``saving`` = 1 - (variance x cost)/(equal_variance x equal_cost), the reduction in variance
    per unit cost.
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

    b_l ∝ s_l / sqrt(c_l + c_gen) with s_l² = σ²_β + σ²_ε,l (:func:`cjstats.decisions.formulas.neyman_shares`), rounded by
    largest remainders (:func:`cjstats.decisions.schedules.apportion`, the counts ``cyclic_schedule(..., shares=)`` realises)
    for the most calls T whose exact cost Σ_l b_l (c_l + c_gen) fits the budget; variance from
    :func:`cjstats.decisions.formulas.poststratified_variance`.

    ``residual_by_judge`` gives σ²_ε,l per judge as ABSOLUTE residual variances (e.g.
    :func:`judge_residual_variances`), the same meaning as in :func:`optimise` and
    :func:`cjstats.decisions.schedules.realised_variance`: when given they replace the common ``s2_residual`` for every judge;
    otherwise every judge has ``s2_residual``. A judge whose call and generation are both free is refused (the
    rule would give it every call).
    """
    caller = "cost_weighted_allocation"
    names, prices = _costs(judge_costs, None, None, caller)
    cg = check_number("generation_cost", generation_cost, caller=caller, minimum=0.0)
    budget = check_number("budget", budget, caller=caller, minimum=0.0)
    s2b = check_number("s2_generation", s2_generation, caller=caller, minimum=0.0)
    s2e = check_number("s2_residual", s2_residual, caller=caller, minimum=0.0)
    s2e_abs = _residual_by_judge(residual_by_judge, names, caller)
    s2e_l = np.full(len(names), s2e) if s2e_abs is None else s2e_abs
    price = prices + cg
    if (price <= 0).any():
        raise CjstatsError(_free_judge_sentence(names[int(np.argmax(price <= 0))], caller, "the Neyman/Cochran rule"))
    sd = np.sqrt(s2b + s2e_l)
    shares = neyman_shares(np.where(sd > 0, sd, 1.0), prices, generation_cost=cg)
    sp, psum = float(shares @ price), float(price.sum())
    hi = int(_to_int((budget + psum) / sp, 10**15))
    t = int(_last_true(lambda _, x: _largest_remainder(x, shares) @ price <= budget * (1 + _TOL),
                       max(1, min(hi, int(_to_int((budget - psum) / sp, 10**15)))), hi)[0])
    b = _largest_remainder(max(t, 0), shares)[0]
    if t < len(names) or (b < 1).any():
        raise CjstatsError(f"The budget {budget:g} of {caller} does not buy one call of every judge at the "
                           f"cost-weighted frequencies; raise it.")
    kw = dict(s2_scenario=s2_scenario, n=n) if s2_scenario else {}
    var_w = poststratified_variance(s2b, s2e_l, b, **kw)
    kt = len(names)
    dear = np.argsort(-price, kind="stable")                    # the extra calls of equal cycling, worst case
    top = np.concatenate([[0.0], np.cumsum(price[dear])])
    te = int(_last_true(lambda _, x: (x // kt) * psum + top[x % kt] <= budget * (1 + _TOL), 0,
                        int(_to_int(budget / float(price.mean()), 10**15)))[0])
    be = np.full(kt, te // kt)
    be[dear[:te % kt]] += 1
    if (be < 1).any():
        raise CjstatsError(f"The budget {budget:g} of {caller} does not buy one call of every judge; raise it.")
    var_e = poststratified_variance(s2b, s2e_l, be, **kw)
    cost_w, cost_e = float(b @ price), float(be @ price)
    return WeightedAllocation(judges=tuple(names), shares=tuple(map(float, shares)), counts=tuple(map(int, b)),
                              cost=cost_w, variance=var_w, equal_counts=tuple(map(int, be)), equal_cost=cost_e,
                              equal_variance=var_e, saving=1 - (var_w * cost_w) / (var_e * cost_e))


def poststratified_mean(scores: Any, *, judges: Sequence[str] | None = None) -> float | pd.DataFrame:
    """The post-stratified panel mean (1/K_tot) Σ_l mean(scores of judge l): unbiased for any judge frequencies.

    ``scores`` is a DataFrame with columns ``judge, score`` (or a :class:`~cjstats.io.scores.Scores`). With
    ``model`` (and ``criterion``) columns the result is a DataFrame with one ``poststratified_mean`` per
    group; otherwise a float. ``judges`` is the panel: every panel judge must have at least one score, since
    the panel mean cannot be recovered without it.
    """
    from cjstats.io.scores import Scores

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
    from cjstats.decisions.subsample import pool_array

    y = pool_array(scores, model=model, criterion=criterion)
    n, m, k = y.shape
    c = n * m
    if c < 2 or k < 2:
        raise CjstatsError("judge_residual_variances needs at least 2 (scenario, generation) cells and 2 judges.")
    r = y - y.mean(axis=2, keepdims=True) - y.mean(axis=(0, 1), keepdims=True) + y.mean()
    s = (r ** 2).sum(axis=(0, 1)) / (c - 1)
    mean_s2 = k / (k - 1) * s.mean()
    per = np.full(k, mean_s2) if k == 2 else np.maximum((s - mean_s2 / k) / (1 - 2 / k), 0.0)
    from cjstats.io.scores import Scores

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
    fixed judge (Proposition 1 at K = 1, Eq. 2 ``eq:variance``), a random judge per scenario (Eq. 4
    ``eq:strat_rand``) and CyclicJudge (Eq. 5 ``eq:strat_cycle`` with the leftover term of
    :func:`cjstats.decisions.formulas.leftover_judge_variance`), against all K_tot judges at K_tot times the calls (Eq. 3
    ``eq:strat_all``), each with the scenario term σ²_α/n. With m = 1 in the data the scenario component holds
    σ²_α + σ²_β.
    """
    from cjstats.decisions.formulas import design_variance

    t = fit.components
    keys = ["model", "criterion"] if "criterion" in t.columns else ["model"]
    rows = []
    for key in t[keys].drop_duplicates().itertuples(index=False):
        sel = dict(zip(keys, key))
        g = group_components(fit, sel["model"], sel.get("criterion"), "allocation_section")
        est = g.estimates
        n, kt = g.n_scenarios, g.n_judges
        s2a = est["scenario"] + (est["generation"] if g.generation_identifiable else 0.0)
        args = (s2a, 0.0, est["residual"], est["judge_panel"])
        se = {a: math.sqrt(design_variance(*args, n=n, m=1, k=1, k_total=kt, assignment=a))
              for a in ("fixed", "random", "cyclic")}
        se_all = math.sqrt(design_variance(*args, n=n, m=1, k=kt, k_total=kt, assignment="cyclic"))
        judge_share = est["judge_panel"] / (se["fixed"] ** 2)
        rows.append({**sel, "one judge": se["fixed"], "random judge": se["random"],
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


# ---------------------------------------------------------------------------------- scenario x judge verdict
def scenario_judge_verdict(fit: Any, *, model: str | None = None, criterion: str | None = None,
                           budget: float | None = None, judge_costs: Mapping[str, float] | None = None,
                           generation_cost: float = 0.0) -> str | None:
    """Whether the fitted scenario x judge interaction changes the recommended design, in one sentence.

    Runs :func:`optimise` twice on the group's point estimates, once with ``scenario_judge`` as fitted and once
    with it set to 0 (the paper's model, whose residual would hold it), at ``budget`` (default: the calls of the
    data, n m K) and the given prices, and compares the recommended strategy, judges per generation and
    generations. Returns None when the term was not fitted (absent, not identifiable, or estimated as 0).
    """
    g = group_components(fit, model, criterion, "scenario_judge_verdict")
    s2sj = float(g.estimates.get("scenario_judge", 0.0))
    if not s2sj > 0:
        return None
    point = {c: float(g.estimates[c]) if np.isfinite(g.estimates[c]) else 0.0 for c in _COMP}
    if budget is None:
        sel = fit.design
        row = sel[sel["model"] == g.model] if "model" in sel.columns else sel
        if g.criterion is not None and "criterion" in row.columns:
            row = row[row["criterion"] == g.criterion]
        budget = float(row["n_rows"].iloc[0])
    k_total = len(g.judges) if g.judges else None
    common = {"budget": budget, "k_total": k_total, "n_max": g.n_scenarios, "judge_costs": judge_costs,
              "generation_cost": generation_cost}
    with_term = optimise(point, **common)
    without = optimise({**point, "scenario_judge": 0.0}, **common)

    def design(a: Allocation) -> tuple[str, int, int, int]:
        r = a.table.iloc[0]
        return str(r["strategy"]), int(r["judges_per_generation"]), int(r["n"]), int(r["m"])

    def say(d: tuple[str, int, int, int]) -> str:
        return f"{d[0]}, {d[1]} judge(s) per generation, n = {d[2]} x m = {d[3]}"

    dw, d0 = design(with_term), design(without)
    se_w = float(with_term.table.iloc[0]["se"])
    if dw != d0:
        return (f"it changes the recommended design at {budget:g} calls: {say(dw)} (SE {se_w:.3g}) instead of "
                f"{say(d0)}, which the paper's model would choose")
    return (f"it does not change the recommended design at {budget:g} calls ({say(dw)}); it is part of that "
            f"design's predicted SE {se_w:.3g}")
