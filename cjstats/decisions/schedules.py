"""Who judges what: the CyclicJudge schedule, the paper's two baselines, an audit and the realised variance.

:func:`cyclic_schedule` keeps ONE judge rotation running across a seeded shuffle of the scenarios (each
scenario's generations in turn), over a seeded shuffle of the judges. Every judge then gets an equal share of
the calls (+-1 overall; exactly equal within a scenario when the scenario's calls are a multiple of K_tot),
and the r judges that receive one call more are a uniformly random r-subset of the panel, which is what makes
the leftover term of :func:`cjstats.decisions.formulas.leftover_judge_variance` exact.

The trap it avoids: restarting the rotation at judge 0 in every scenario. With one generation per scenario
(m = 1) that gives every call to judge 0, a single-judge benchmark carrying the whole judge bias (Proposition 1
with K = 1). :func:`schedule_audit` flags it.

With ``shares`` the rotation becomes a weighted round robin (unequal judge frequencies, e.g. the Neyman/Cochran
frequencies of :func:`cjstats.decisions.optimise.optimise` when judges have different prices); analyse such a schedule
with the post-stratified mean (:func:`cjstats.decisions.optimise.poststratified_mean`).

:func:`realised_variance` gives the variance of the benchmark score for any concrete schedule, including one
in which some calls failed. Only numpy and pandas are needed here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats._validate import check_choice, check_number, check_positive_int
from cjstats.exceptions import CjstatsError
from cjstats.results.estimands import names as _estimand_names

__all__ = ["cyclic_schedule", "random_schedule", "all_judges_schedule", "apportion", "schedule_audit",
           "ScheduleAudit", "realised_variance", "RealisedVariance", "SCHEDULE_COLUMNS", "COMPONENTS",
           "scenario_judge_weight"]

#: Columns of every schedule (``model`` is inserted first when models are given).
SCHEDULE_COLUMNS: tuple[str, ...] = ("scenario", "generation", "judge")

Seed = int | np.random.Generator | None


# ------------------------------------------------------------------------------------------------ inputs
def _scenario_labels(scenarios: int | Sequence[Any] | np.ndarray | pd.Index, caller: str) -> np.ndarray:
    if isinstance(scenarios, (int, np.integer)) and not isinstance(scenarios, bool):
        n = check_positive_int("scenarios", int(scenarios), caller=caller)
        return np.arange(n)
    if isinstance(scenarios, (str, bytes)) or not hasattr(scenarios, "__len__"):
        raise CjstatsError(f"The 'scenarios' argument of {caller} must be a number of scenarios or a sequence of "
                           f"scenario labels. Got {type(scenarios).__name__} instead.")
    labels = pd.Index(list(scenarios))
    if len(labels) == 0:
        raise CjstatsError(f"The 'scenarios' argument of {caller} is empty: give at least one scenario.")
    if labels.has_duplicates:
        dup = labels[labels.duplicated()][0]
        raise CjstatsError(f"The 'scenarios' argument of {caller} lists scenario {dup!r} more than once.")
    return labels.to_numpy()


def _judge_names(judges: int | Sequence[str], caller: str) -> list[str]:
    if isinstance(judges, (int, np.integer)) and not isinstance(judges, bool):
        k = check_positive_int("judges", int(judges), caller=caller)
        return [f"judge_{i}" for i in range(k)]
    if isinstance(judges, (str, bytes)) or not hasattr(judges, "__len__"):
        raise CjstatsError(f"The 'judges' argument of {caller} must be a number of judges or a sequence of judge "
                           f"names. Got {judges!r} instead.")
    names = [str(j) for j in judges]
    if not names:
        raise CjstatsError(f"The 'judges' argument of {caller} is empty: give at least one judge.")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise CjstatsError(f"The 'judges' argument of {caller} lists judge '{name}' more than once.")
        seen.add(name)
    return names


def _rng(seed: Any, caller: str) -> np.random.Generator:
    """``np.random.default_rng(seed)`` for None, an integer >= 0 or a Generator; one sentence otherwise."""
    if seed is None or isinstance(seed, np.random.Generator):
        return np.random.default_rng(seed)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)) and int(seed) >= 0:
        return np.random.default_rng(int(seed))
    raise CjstatsError(f"The 'seed' argument of {caller} must be None, an integer >= 0 or a numpy Generator. "
                       f"Got {seed!r} instead.")


def _check_shares(vec: np.ndarray, caller: str, *, positive: bool) -> np.ndarray:
    """Shares as a normalised float vector: finite, >= 0 (> 0 when ``positive``), with a positive sum."""
    ok = vec.ndim == 1 and vec.size >= 1 and np.isfinite(vec).all() and (vec > 0 if positive else vec >= 0).all()
    if not ok or vec.sum() <= 0:
        what = "positive finite numbers" if positive else "finite numbers >= 0 with a positive sum"
        raise CjstatsError(f"The 'shares' argument of {caller} must hold {what}, one per judge. "
                           f"Got {vec.tolist()} instead.")
    return vec / vec.sum()


def _share_vector(shares: Mapping[str, float] | Sequence[float], judges: list[str], caller: str) -> np.ndarray:
    if isinstance(shares, Mapping):
        unknown = sorted(set(map(str, shares)) - set(judges))
        if unknown:
            raise CjstatsError(f"The 'shares' argument of {caller} names judge '{unknown[0]}', which is not in "
                               f"judges ({', '.join(judges)}).")
        missing = [j for j in judges if j not in {str(k) for k in shares}]
        if missing:
            raise CjstatsError(f"The 'shares' argument of {caller} gives no share for judge '{missing[0]}'; "
                               f"give one positive share per judge.")
        by_name = {str(k): v for k, v in shares.items()}
        vec = _float_vector([by_name[j] for j in judges], "shares", caller)
    else:
        vec = _float_vector(shares, "shares", caller)
        if vec.shape != (len(judges),):
            raise CjstatsError(f"The 'shares' argument of {caller} must give one share per judge ({len(judges)}). "
                               f"Got {vec.size} instead.")
    return _check_shares(vec, caller, positive=True)


def _float_vector(values: Any, name: str, caller: str) -> np.ndarray:
    """A 1-d float array of real numbers (strings and other objects are refused in one sentence)."""
    arr = np.asarray(values, dtype=object).ravel() if not isinstance(values, np.ndarray) else values.ravel()
    bad = [v for v in arr.tolist() if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number))]
    if bad:
        raise CjstatsError(f"The '{name}' argument of {caller} must hold numbers. Got {bad[0]!r} instead.")
    return np.asarray(values, dtype=float)


def _with_models(frame: pd.DataFrame, models: Sequence[str] | None, caller: str) -> pd.DataFrame:
    if models is None:
        return frame
    names = [models] if isinstance(models, str) else [str(m) for m in models]
    if not names:
        raise CjstatsError(f"The 'models' argument of {caller} is empty: give at least one model or None.")
    dup = [m for i, m in enumerate(names) if m in names[:i]]
    if dup:
        raise CjstatsError(f"The 'models' argument of {caller} lists model '{dup[0]}' more than once.")
    parts = [frame.assign(model=m) for m in names]
    out = pd.concat(parts, ignore_index=True)
    return out[["model", *SCHEDULE_COLUMNS]]


def _frame(scen: np.ndarray, gen: np.ndarray, judge: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"scenario": scen, "generation": gen.astype(np.int64), "judge": judge})


# ------------------------------------------------------------------------------------------ apportioning
def _largest_remainder(totals: np.ndarray | int, shares: np.ndarray, rank: np.ndarray | None = None) -> np.ndarray:
    """Largest-remainder counts: shape (len(totals), K), row i summing to totals[i] (the ONE implementation).

    ``shares`` must be normalised (sum 1). Every count is floor(t s_l) or floor(t s_l) + 1; the t − Σ floor
    extra calls go to the largest remainders, ties (remainders equal to 6 decimals) to the smallest ``rank``
    (default: the judge's index). :func:`apportion`, the weighted round robin of :func:`cyclic_schedule` and
    the costing of the ``weighted`` strategy in :func:`cjstats.decisions.optimise.optimise` all call this function, so the
    schedule realises exactly the counts that the optimiser costed.
    """
    t = np.atleast_1d(np.asarray(totals, dtype=np.int64))
    s = np.asarray(shares, dtype=float)
    raw = t[:, None].astype(float) * s[None, :]
    base = np.floor(raw).astype(np.int64)
    frac = np.round(raw - base, 6)
    left = t - base.sum(axis=1)
    rk = np.broadcast_to(np.arange(s.size) if rank is None else np.asarray(rank), frac.shape)
    order = np.lexsort((rk, -frac), axis=-1)                     # best remainder first, then rank
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.broadcast_to(np.arange(s.size), order.shape), axis=-1)
    return base + (pos < left[:, None])


def apportion(total: int, shares: Sequence[float] | np.ndarray, *, order: Sequence[int] | None = None) -> np.ndarray:
    """Integer counts summing to ``total`` closest to ``total * shares`` (largest-remainder method).

    Every count is floor(total s_l) or floor(total s_l) + 1. Ties in the remainders go to the judge that comes
    first in ``order`` (a permutation of the judges; default: their index order, the rule that
    :func:`cyclic_schedule` and :func:`cjstats.decisions.optimise.optimise` use). ``shares`` must be finite, >= 0 and have
    a positive sum; they are normalised.

    Examples
    --------
    >>> apportion(7, [0.5, 0.3, 0.2]).tolist()
    [4, 2, 1]
    """
    caller = "apportion"
    t = check_positive_int("total", total, caller=caller, minimum=0)
    s = _check_shares(_float_vector(shares, "shares", caller), caller, positive=False)
    rank = None
    if order is not None:
        o = np.asarray(order)
        if o.shape != s.shape or not np.array_equal(np.sort(o), np.arange(s.size)):
            raise CjstatsError(f"The 'order' argument of {caller} must be a permutation of 0..{s.size - 1} (one "
                               f"entry per share). Got {list(np.asarray(order).tolist())} instead.")
        rank = np.empty(s.size, dtype=np.int64)
        rank[o.astype(np.int64)] = np.arange(s.size)
    return _largest_remainder(t, s, rank)[0]


def _spread(counts: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """A sequence in which judge l appears counts[l] times, evenly spread (weighted round robin).

    Judge l's j-th call sits at position (j + 1/2)/b_l of the sequence; ties go by ``rank``. Any prefix of
    length t then holds each judge within +-1 of t b_l / T times. Equal counts give the plain rotation.
    """
    judge = np.repeat(np.arange(counts.size), counts)
    pos = np.concatenate([(np.arange(b) + 0.5) / b for b in counts if b > 0]) if counts.sum() else np.array([])
    return judge[np.lexsort((rank[judge], pos))]


# -------------------------------------------------------------------------------------------- schedules
def _schedule_args(scenarios: Any, judges: Any, generations: Any, judges_per_generation: Any, seed: Any,
                   caller: str) -> tuple[np.ndarray, list[str], int, int, int, np.random.Generator]:
    """Validate the arguments every schedule shares: (labels, judge names, m, k, K_tot, rng)."""
    scen = _scenario_labels(scenarios, caller)
    names = _judge_names(judges, caller)
    m = check_positive_int("generations", generations, caller=caller)
    k = check_positive_int("judges_per_generation", judges_per_generation, caller=caller)
    kt = len(names)
    if k > kt:
        raise CjstatsError(f"The 'judges_per_generation' argument of {caller} must be at most the panel size "
                           f"{kt}. Got {k} instead.")
    return scen, names, m, k, kt, _rng(seed, caller)


def cyclic_schedule(scenarios: int | Sequence[Any], judges: int | Sequence[str], *, generations: int = 1,
                    seed: Seed = None, unit: Literal["generation", "scenario"] = "generation",
                    judges_per_generation: int = 1, models: Sequence[str] | None = None,
                    shares: Mapping[str, float] | Sequence[float] | None = None) -> pd.DataFrame:
    """The CyclicJudge schedule: one rotation across a seeded shuffle of the scenarios (Strategy C, ``sec:allocation``).

    Eq. 5 (``eq:strat_cycle``) gives its variance when the calls are a multiple of K_tot, and
    :func:`cjstats.decisions.formulas.strategy_variance` (with the leftover term) for any number of calls; with m = 1 the
    rotation runs across scenarios, as the paper advises after Eq. 5, over a shuffled scenario order.

    Parameters
    ----------
    scenarios : int or sequence
        The number of scenarios (labelled 0..n-1) or their labels.
    judges : int or sequence of str
        The panel (K_tot judges), or its size (judges ``judge_0``..).
    generations : int
        m, generations per scenario, each a separate model output to be judged.
    seed : int or Generator, optional
        Shuffles the scenario order and the judge order. The same seed gives the same schedule.
    unit : {"generation", "scenario"}
        What the rotation advances over: every generation (default; the paper's Strategy C) or every scenario
        (all generations of a scenario go to the same judges, as in the paper's m = 1 remark). With m >= 2 and
        a scenario x judge interaction σ²_αγ, ``"generation"`` is the choice that minimises it: a scenario's
        B = mk calls are B consecutive positions of the rotation, so every judge gets q or q + 1 of them
        (B = qK_tot + r) and Σ_l w_il² is as small as B calls allow; its conditional variance is
        σ²_αγ r (K_tot − r)/(n K_tot B²) against σ²_αγ (1/k − 1/K_tot)/n for ``"scenario"`` (the same k
        judges on all m generations do not average the interaction). :func:`schedule_audit` reports both
        coefficients and the saving (``scenario_judge_saving``).
    judges_per_generation : int
        k consecutive judges of the rotation score each generation (1 = CyclicJudge, K_tot = all judges).
    models : sequence of str, optional
        Evaluated models; every model gets the same assignment (a ``model`` column is added), so judge identity
        is not confounded with the model in comparisons.
    shares : mapping or sequence, optional
        Judge frequencies for a weighted round robin (e.g. Neyman/Cochran frequencies under unequal prices):
        the calls are apportioned to the judges by largest remainders (:func:`apportion`, ties to the judge
        listed first, whatever the seed: the counts that :func:`cjstats.decisions.optimise.optimise` costs) and spread
        evenly along the rotation. Analyse the scores with the post-stratified mean. Equal shares and a number
        of slots that K_tot divides give the plain rotation. Requires ``judges_per_generation=1``.

    Returns
    -------
    DataFrame
        ``[model,] scenario, generation, judge``, one row per judge call, in rotation order.

    Examples
    --------
    >>> plan = cyclic_schedule(6, ["a", "b", "c"], seed=1)
    >>> plan["judge"].value_counts().tolist()
    [2, 2, 2]
    """
    caller = "cyclic_schedule"
    unit = check_choice("unit", unit, ("generation", "scenario"), caller=caller)
    scen, names, m, k, kt, rng = _schedule_args(scenarios, judges, generations, judges_per_generation, seed, caller)
    n = scen.size
    order = rng.permutation(n)
    jperm = rng.permutation(kt)
    slots = n * m if unit == "generation" else n
    if shares is None:
        idx = (np.arange(slots)[:, None] * k + np.arange(k)[None, :]) % kt
        judge_of = jperm[idx]                                       # (slots, k)
    else:
        if k != 1:
            raise CjstatsError(f"The 'shares' argument of {caller} needs judges_per_generation=1. Got {k} instead.")
        share = _share_vector(shares, names, caller)
        counts = _largest_remainder(slots, share)[0]
        if (counts == 0).any():
            j = names[int(np.flatnonzero(counts == 0)[0])]
            raise CjstatsError(f"The 'shares' argument of {caller} leaves judge '{j}' without a call among {slots} "
                               f"slots; raise its share or the number of slots.")
        rank = np.empty(kt, dtype=np.int64)
        rank[jperm] = np.arange(kt)
        judge_of = _spread(counts, rank)[:, None]
    if unit == "generation":
        s_idx = np.repeat(order, m)
        g_idx = np.tile(np.arange(m), n)
        rows_s, rows_g = np.repeat(s_idx, k), np.repeat(g_idx, k)
        rows_j = judge_of.ravel()
    else:
        rows_s = np.repeat(order, m * k)
        rows_g = np.tile(np.repeat(np.arange(m), k), n)
        rows_j = np.repeat(judge_of[:, None, :], m, axis=1).ravel()
    out = _frame(scen[rows_s], rows_g, np.asarray(names, dtype=object)[rows_j])
    return _with_models(out, models, caller)


def random_schedule(scenarios: int | Sequence[Any], judges: int | Sequence[str], *, generations: int = 1,
                    judges_per_generation: int = 1, seed: Seed = None,
                    models: Sequence[str] | None = None) -> pd.DataFrame:
    """The paper's Strategy B (Eq. 4, ``eq:strat_rand``): each generation scored by judges drawn at random.

    Each (scenario, generation) gets ``judges_per_generation`` distinct judges drawn uniformly from the panel,
    independently across generations. Returns ``[model,] scenario, generation, judge``.
    """
    caller = "random_schedule"
    scen, names, m, k, kt, rng = _schedule_args(scenarios, judges, generations, judges_per_generation, seed, caller)
    n = scen.size
    pick = np.argsort(rng.random((n * m, kt)), axis=1)[:, :k]
    rows_s = np.repeat(np.arange(n), m * k)
    rows_g = np.tile(np.repeat(np.arange(m), k), n)
    out = _frame(scen[rows_s], rows_g, np.asarray(names, dtype=object)[pick.ravel()])
    return _with_models(out, models, caller)


def all_judges_schedule(scenarios: int | Sequence[Any], judges: int | Sequence[str], *,
                        generations: int | None = None, budget: int | None = None, seed: Seed = None,
                        models: Sequence[str] | None = None) -> pd.DataFrame:
    """The paper's Strategy A (Eq. 3, ``eq:strat_all``): every judge scores every generation.

    Give ``generations`` (m, default 1; m K_tot calls per scenario) or a per-scenario ``budget`` B of calls.
    When K_tot does not divide B, each scenario gets B // K_tot full generations plus one generation scored by
    r = B mod K_tot judges taken from one rotation across a seeded shuffle of scenarios and judges (the design
    behind :func:`cjstats.decisions.formulas.strategy_variance` with ``strategy="all"``).
    """
    caller = "all_judges_schedule"
    scen = _scenario_labels(scenarios, caller)
    names = _judge_names(judges, caller)
    kt, n = len(names), scen.size
    if generations is not None and budget is not None:
        raise CjstatsError(f"{caller} takes generations or budget, not both.")
    if budget is None:
        m = check_positive_int("generations", 1 if generations is None else generations, caller=caller)
        q, r = m, 0
    else:
        q, r = divmod(check_positive_int("budget", budget, caller=caller), kt)
    rows_s = np.repeat(np.arange(n), q * kt)
    rows_g = np.tile(np.repeat(np.arange(q), kt), n)
    rows_j = np.tile(np.arange(kt), n * q)
    rng = _rng(seed, caller)
    if r:
        order = rng.permutation(n)
        jperm = rng.permutation(kt)
        idx = (np.arange(n)[:, None] * r + np.arange(r)[None, :]) % kt
        rows_s = np.concatenate([rows_s, np.repeat(order, r)])
        rows_g = np.concatenate([rows_g, np.full(n * r, q)])
        rows_j = np.concatenate([rows_j, jperm[idx].ravel()])
        sort = np.lexsort((rows_g, rows_s))
        rows_s, rows_g, rows_j = rows_s[sort], rows_g[sort], rows_j[sort]
    out = _frame(scen[rows_s], rows_g, np.asarray(names, dtype=object)[rows_j])
    return _with_models(out, models, caller)


# ------------------------------------------------------------------------------------------------- audit
@dataclass(frozen=True, slots=True)
class ScheduleAudit:
    """Calls per judge and per scenario of a schedule, and the checks a reviewer would make.

    Attributes
    ----------
    per_judge : DataFrame
        ``judge, calls, share`` over the whole panel (a judge without a call has 0).
    per_scenario : DataFrame
        Scenario x judge table of call counts.
    imbalance : int
        Most minus fewest calls of any panel judge (1 or 0 for CyclicJudge).
    within_scenario_imbalance : int
        The largest such difference within one scenario.
    repeated_judge_generations : int
        Generations that the same judge scores more than once.
    same_assignment_across_models : bool or None
        Whether every model has the same assignment (``None`` without a ``model`` column).
    scenario_judge_coefficient : float
        c with c σ²_αγ the variance that the scenario x judge interaction adds to the plain mean of the
        schedule, given its scenarios (and their interaction effects): Σ_il w_il² − 1/(n K_tot), w_il the
        share of the calls made by judge l on scenario i (:mod:`cjstats.decisions.formulas`, module docstring).
    scenario_judge_coefficient_unrotated : float
        The same coefficient if every generation of a scenario went to the same judges (the same calls per
        scenario and per generation, no rotation across generations): Σ_i (C_i/T)²/k_i − 1/(n K_tot), C_i the
        scenario's calls and k_i = C_i/m_i its calls per generation.
    scenario_judge_coefficient_best : float
        The smallest coefficient for the same calls per scenario: every judge gets q_i or q_i + 1 of scenario
        i's C_i = q_i K_tot + r_i calls (what the rotation of :func:`cyclic_schedule` does):
        Σ_i (C_i/T)² r_i (K_tot − r_i)/(K_tot C_i²).
    """

    per_judge: pd.DataFrame
    per_scenario: pd.DataFrame
    calls: int
    judges_total: int
    judges_used: int
    imbalance: int
    within_scenario_imbalance: int
    repeated_judge_generations: int
    same_assignment_across_models: bool | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    scenario_judge_coefficient: float = 0.0
    scenario_judge_coefficient_unrotated: float = 0.0
    scenario_judge_coefficient_best: float = 0.0

    @property
    def scenario_judge_saving(self) -> float:
        """What rotating judges across a scenario's generations saves, per unit of σ²_αγ (>= 0 for the rotation
        of :func:`cyclic_schedule`): multiply by ``scenario_judge`` to get the variance saved."""
        return self.scenario_judge_coefficient_unrotated - self.scenario_judge_coefficient

    @property
    def balanced(self) -> bool:
        """Every panel judge has the same number of calls, +-1."""
        return self.imbalance <= 1

    @property
    def single_judge(self) -> bool:
        """Only one judge of a larger panel scores anything: the single-judge trap."""
        return self.judges_used == 1 and self.judges_total > 1

    def as_text(self) -> str:
        lines = [f"{self.calls} calls; {self.judges_used} of {self.judges_total} judges used; calls per judge "
                 f"differ by at most {self.imbalance} overall and {self.within_scenario_imbalance} within a "
                 f"scenario; {self.repeated_judge_generations} generations with a repeated judge.",
                 self.per_judge.to_string(index=False)]
        if self.single_judge:
            lines.append("WARNING: a single judge scores every call (the judge bias does not average out).")
        if self.same_assignment_across_models is False:
            lines.append("WARNING: the models have different judge assignments (judge identity is confounded "
                         "with the model in comparisons).")
        if self.scenario_judge_coefficient_unrotated > self.scenario_judge_coefficient_best * (1 + 1e-9) + 1e-15:
            lines.append(f"Scenario x judge interaction: adds {self.scenario_judge_coefficient:.4g} x "
                         f"sigma2_scenario_judge to the variance (given the scenarios); the same judges on every "
                         f"generation of a scenario would add {self.scenario_judge_coefficient_unrotated:.4g} x "
                         f"(saving {self.scenario_judge_saving:.4g} x); the most even split of each scenario's "
                         f"calls over the judges adds {self.scenario_judge_coefficient_best:.4g} x.")
        return "\n".join([*lines, *self.notes])

    def __str__(self) -> str:
        return self.as_text()


def _check_schedule(schedule: pd.DataFrame, caller: str) -> None:
    if not isinstance(schedule, pd.DataFrame):
        raise CjstatsError(f"{caller} takes a schedule DataFrame with columns scenario, generation, judge. "
                           f"Got {type(schedule).__name__} instead.")
    missing = [c for c in SCHEDULE_COLUMNS if c not in schedule.columns]
    if missing:
        raise CjstatsError(f"The schedule passed to {caller} has no column '{missing[0]}' (found: "
                           f"{', '.join(map(str, schedule.columns))}).")
    if schedule.empty:
        raise CjstatsError(f"The schedule passed to {caller} has no rows.")
    for col in SCHEDULE_COLUMNS:
        miss = schedule[col].isna().to_numpy()
        if miss.any():
            row = schedule.index[int(np.argmax(miss))]
            raise CjstatsError(f"The schedule passed to {caller} has no {col} in row {row!r} (a missing value); "
                               f"every call needs a scenario, a generation and a judge.")


def _one_model(schedule: pd.DataFrame, model: str | None, caller: str,
               strict: bool = True) -> tuple[pd.DataFrame, bool | None]:
    """The rows of one model (all columns, fresh index) and whether all models share one assignment.

    Without ``model=`` and with differing assignments, ``strict`` raises; otherwise the first model is used.
    """
    if "model" not in schedule.columns:
        return schedule.reset_index(drop=True), None
    key = schedule["model"].astype(str)
    models = list(dict.fromkeys(key))
    parts = {m: schedule[key == m].reset_index(drop=True) for m in models}
    cols = list(SCHEDULE_COLUMNS)
    first = parts[models[0]][cols].astype(str)
    same = all(len(p) == len(first) and (p[cols].astype(str).to_numpy() == first.to_numpy()).all()
               for p in parts.values())
    if model is not None and str(model) in parts:
        return parts[str(model)], same
    if len(models) == 1 or same or not strict:
        return parts[models[0]], same
    raise CjstatsError(f"The schedule passed to {caller} has models with different assignments; name one with "
                       f"model= (one of {', '.join(models)}).")


def schedule_audit(schedule: pd.DataFrame, *, judges: Sequence[str] | None = None,
                   model: str | None = None) -> ScheduleAudit:
    """Audit a schedule: calls per judge and per scenario, balance, the single-judge trap, model consistency.

    ``judges`` is the full panel (default: the judges in the schedule); judges of the panel that get no call
    count as 0 and make the schedule unbalanced. With a ``model`` column the counts are those of ``model``
    (default: the first model) and ``same_assignment_across_models`` says whether every model matches it.
    """
    caller = "schedule_audit"
    _check_schedule(schedule, caller)
    rows, same = _one_model(schedule, model, caller, strict=False)
    panel = _judge_names(judges, caller) if judges is not None else sorted(set(rows["judge"].astype(str)))
    jcol = rows["judge"].astype(str)
    unknown = sorted(set(jcol) - set(panel))
    if unknown:
        raise CjstatsError(f"The schedule names judge '{unknown[0]}', which is not in judges ({', '.join(panel)}).")
    calls = jcol.value_counts().reindex(panel, fill_value=0)
    per_judge = pd.DataFrame({"judge": panel, "calls": calls.to_numpy(np.int64),
                              "share": calls.to_numpy(float) / len(rows)})
    per_scen = pd.crosstab(rows["scenario"], jcol).reindex(columns=panel, fill_value=0)
    per_scen.columns.name = "judge"
    within = int((per_scen.max(axis=1) - per_scen.min(axis=1)).max()) if len(panel) > 1 else 0
    rep = rows.assign(judge=jcol).duplicated(["scenario", "generation", "judge"], keep="first")
    reps = int(rows[rep.to_numpy()].groupby(["scenario", "generation"]).ngroups) if rep.any() else 0
    coef, unrot, best = scenario_judge_weight(rows, len(panel))
    return ScheduleAudit(per_judge=per_judge, per_scenario=per_scen, calls=len(rows), judges_total=len(panel),
                         judges_used=int((calls > 0).sum()), imbalance=int(calls.max() - calls.min()),
                         within_scenario_imbalance=within, repeated_judge_generations=reps,
                         same_assignment_across_models=same, scenario_judge_coefficient=coef,
                         scenario_judge_coefficient_unrotated=unrot, scenario_judge_coefficient_best=best)


def scenario_judge_weight(schedule: pd.DataFrame, k_total: int) -> tuple[float, float, float]:
    """(as scheduled, unrotated, best) coefficients of σ²_αγ, given the scenarios, for the plain mean of a schedule.

    As scheduled: Σ_il w_il² − 1/(n K_tot) with w_il = (calls of judge l on scenario i)/T. Unrotated: the same
    calls per scenario C_i and per generation k_i = C_i/m_i, every generation of a scenario scored by the same
    k_i judges: Σ_i (C_i/T)²/k_i − 1/(n K_tot). Best: each scenario's calls split as evenly as possible over the
    panel (see :class:`ScheduleAudit`). Multiply by σ²_αγ for the variance.
    """
    _check_schedule(schedule, "scenario_judge_weight")
    kt = check_positive_int("k_total", k_total, caller="scenario_judge_weight")
    t = len(schedule)
    cell = schedule.groupby(["scenario", schedule["judge"].astype(str)], sort=False).size().to_numpy(float) / t
    per = schedule.groupby("scenario", sort=False).agg(calls=("judge", "size"), gens=("generation", "nunique"))
    c_i = per["calls"].to_numpy(float)
    k_i = c_i / per["gens"].to_numpy(float)
    base = 1.0 / (len(per) * kt)
    rotated = max(float(np.sum(cell ** 2)) - base, 0.0)
    unrotated = max(float(np.sum((c_i / t) ** 2 / k_i)) - base, 0.0)
    r = np.mod(c_i, kt)
    best = float(np.sum((c_i / t) ** 2 * r * (kt - r) / (kt * c_i ** 2)))
    return rotated, unrotated, best


# -------------------------------------------------------------------------------------- realised variance
@dataclass(frozen=True, slots=True)
class RealisedVariance:
    """Variance of the benchmark score of one concrete schedule, term by term.

    ``total = scenario + generation + residual + judge + scenario_judge``. Under ``judge_view="exchangeable"`` the
    judge term is
    the variance over a random relabelling of the judges (what a seeded judge shuffle gives); under
    ``"fixed"`` it is the squared bias (Σ_l W_l γ_l)² from the panel's offsets and ``total`` is a mean squared
    error about the panel mean. ``judge_weights`` is W_l, each judge's total weight in the score.
    """

    total: float
    scenario: float
    generation: float
    residual: float
    judge: float
    judge_bias: float
    calls: int
    calls_dropped: int
    judges_used: int
    estimator: str
    judge_view: str
    judge_weights: Mapping[str, float]
    notes: tuple[str, ...] = ()
    scenario_judge: float = 0.0

    @property
    def se(self) -> float:
        """Standard error (root mean squared error under the fixed view)."""
        return math.sqrt(self.total)

    def as_dict(self) -> dict[str, Any]:
        return {"total": self.total, "se": self.se, "scenario": self.scenario, "generation": self.generation,
                "residual": self.residual, "judge": self.judge, "judge_bias": self.judge_bias,
                "calls": self.calls, "calls_dropped": self.calls_dropped, "judges_used": self.judges_used,
                "estimator": self.estimator, "judge_view": self.judge_view, "scenario_judge": self.scenario_judge}


#: The four variance components, in the order the decision layer uses (the ``decision`` names of the one
#: estimand registry, ``cjstats.results.estimands.ESTIMANDS``).
COMPONENTS: tuple[str, ...] = _estimand_names(decision=True)


def _completed_mask(values: Any, caller: str) -> np.ndarray:
    """Booleans (or 0/1) saying which calls returned a score; anything else is refused in one sentence."""
    arr = np.asarray(values)
    if arr.dtype == bool:
        return arr
    flat = arr.ravel().tolist()
    for i, v in enumerate(flat):
        if isinstance(v, (bool, np.bool_)):
            continue
        if isinstance(v, (int, float, np.number)) and not isinstance(v, complex) and v in (0, 1):
            continue
        raise CjstatsError(f"The 'completed' argument of {caller} must hold booleans (True for a call that "
                           f"returned a score) or 0/1. Got {v!r} at position {i} instead.")
    return np.array([bool(v) for v in flat], dtype=bool).reshape(arr.shape)


def realised_variance(schedule: pd.DataFrame, components: Any, *, model: str | None = None,
                      criterion: str | None = None, judges: Sequence[str] | None = None,
                      completed: str | Sequence[bool] | np.ndarray | None = None,
                      estimator: Literal["mean", "poststratified"] = "mean",
                      judge_view: Literal["exchangeable", "fixed"] = "exchangeable", scenario_term: bool = True,
                      residual_by_judge: Mapping[str, float] | None = None,
                      judge_offsets: Mapping[str, float] | None = None) -> RealisedVariance:
    """Variance of the benchmark score for a concrete schedule, including one with failed or missing calls.

    The score is a weighted mean Σ_c w_c X_c over the completed calls: the plain mean (w_c = 1/T, the paper's
    grand mean) or the post-stratified mean (w_c = 1/(K' b_l), K' judges with at least one call, b_l of them
    by judge l). Under the model of Eq. 1 (``eq:model``):

        Var = σ²_α Σ_i w_i² + σ²_β Σ_ij w_ij² + Σ_c σ²_ε,l(c) w_c² + J,

    with w_i and w_ij the total weights of scenario i and generation (i, j), and the judge term
    J = σ²_γ K_tot/(K_tot − 1) Σ_l (W_l − W̄)² (:func:`cjstats.decisions.formulas.judge_weight_variance`, exchangeable
    judges) or J = (Σ_l W_l γ_l)² (fixed offsets: a squared bias about the panel mean). For a balanced schedule
    this reproduces Proposition 1 (same K judges everywhere) and Eqs. 3-5 with the leftover term.

    With a scenario x judge interaction σ²_αγ (the components' ``scenario_judge``; 0 when absent) the term
    σ²_αγ Σ_il w_il² is added, w_il the total weight of judge l's calls on scenario i: the interaction of a
    scenario and a judge is shared by all its calls there, so it averages only over distinct (scenario, judge)
    pairs. With ``scenario_term=False`` the variance is conditional on the scenarios and on their interaction
    effects for every panel judge (the target is the full panel's mean on the n scenarios of the schedule,
    which holds (1/(nK_tot)) Σ_il (αγ)_il), and the term is σ²_αγ (Σ_il w_il² − 1/(nK_tot)) (Σ w = 1;
    :mod:`cjstats.decisions.formulas`, module docstring). It is the mean over the interaction effects, whichever
    ``judge_view``.

    Parameters
    ----------
    schedule : DataFrame
        ``[model,] scenario, generation, judge``: the calls planned (or made).
    components : VarianceComponents or mapping
        The components (``scenario, generation, residual, judge_panel``); a fit also supplies the panel's judges
        and offsets. When the fit had m = 1 (``generation`` not identifiable), the schedule must also have one
        generation per scenario and ``scenario`` then holds σ²_α + σ²_β.
    judges : sequence of str, optional
        The full panel of K_tot judges (default: the fit's judges, else the schedule's).
    completed : column name or boolean array, optional
        Which calls returned a score (booleans, or 0/1); the others are dropped (failed calls).
    estimator : {"mean", "poststratified"}
    judge_view : {"exchangeable", "fixed"}
    scenario_term : bool
        Include σ²_α Σ_i w_i² (scenarios resampled); False gives the paper's variance conditional on scenarios.
    residual_by_judge : mapping, optional
        σ²_ε,l per judge: absolute residual variances (e.g. from
        :func:`cjstats.decisions.optimise.judge_residual_variances`), which replace the common residual for those judges
        (the same meaning as in :func:`cjstats.decisions.optimise.optimise` and
        :func:`cjstats.decisions.optimise.cost_weighted_allocation`).
    judge_offsets : mapping, optional
        γ_l per judge for ``judge_view="fixed"`` (default: the fit's offsets).
    """
    from cjstats.decisions.inputs import group_components

    caller = "realised_variance"
    estimator = check_choice("estimator", estimator, ("mean", "poststratified"), caller=caller)
    judge_view = check_choice("judge_view", judge_view, ("exchangeable", "fixed"), caller=caller)
    _check_schedule(schedule, caller)
    group = group_components(components, model, criterion, caller)
    comps, fit_judges, fit_offsets = group.estimates, group.judges, group.offsets
    need = COMPONENTS
    rows, _ = _one_model(schedule, model, caller)
    n_all = len(rows)
    notes: list[str] = []
    if completed is not None:
        if isinstance(completed, str):
            if completed not in rows.columns:
                raise CjstatsError(f"The 'completed' argument of {caller} names column '{completed}', which the "
                                   f"schedule does not have.")
            ok = _completed_mask(rows[completed].to_numpy(), caller)
        else:
            ok = _completed_mask(completed, caller)
            if ok.shape != (n_all,):
                raise CjstatsError(f"The 'completed' argument of {caller} must have one entry per call "
                                   f"({n_all}). Got {ok.size} instead.")
        rows = rows[ok].reset_index(drop=True)
        if rows.empty:
            raise CjstatsError(f"Every call of the schedule failed: {caller} has no score to compute a variance of.")
    panel = _judge_names(judges, caller) if judges is not None else (
        fit_judges or sorted(set(rows["judge"].astype(str))))
    jcol = rows["judge"].astype(str).to_numpy()
    unknown = sorted(set(jcol) - set(panel))
    if unknown:
        raise CjstatsError(f"The schedule names judge '{unknown[0]}', which is not in the panel ({', '.join(panel)}).")
    s2a, s2b, s2e, s2g = (float(comps[c]) for c in need)
    m_per = rows.groupby("scenario", sort=False)["generation"].nunique()
    if math.isnan(s2b):
        if (m_per > 1).any():
            raise CjstatsError(f"The components have no generation variance (m = 1 in the data), but the schedule "
                               f"gives some scenarios {int(m_per.max())} generations; {caller} cannot split them.")
        s2b = 0.0
        notes.append("generation not identifiable (m = 1): the scenario term holds scenario + generation.")
    for name, v in zip(need, (s2a, s2b, s2e, s2g)):
        if not (math.isfinite(v) and v >= 0):
            raise CjstatsError(f"The '{name}' component passed to {caller} must be a finite variance >= 0. "
                               f"Got {v!r} instead.")
    jidx = pd.Index(panel).get_indexer(jcol)
    kt = len(panel)
    t = len(rows)
    b = np.bincount(jidx, minlength=kt)
    if estimator == "mean":
        w = np.full(t, 1.0 / t)
    else:
        used = int((b > 0).sum())
        w = 1.0 / (used * b[jidx])
        if used < kt:
            notes.append(f"{kt - used} panel judge(s) have no call: the post-stratified mean averages the "
                         f"{used} others.")
    s_code = pd.factorize(rows["scenario"])[0]
    c_code = pd.MultiIndex.from_arrays([rows["scenario"], rows["generation"]]).factorize()[0]
    w_i = np.bincount(s_code, weights=w)
    w_ij = np.bincount(c_code, weights=w)
    w_l = np.bincount(jidx, weights=w, minlength=kt)
    if residual_by_judge is not None:
        missing = [j for j in panel if j in set(jcol) and j not in residual_by_judge]
        if missing:
            raise CjstatsError(f"The 'residual_by_judge' argument of {caller} has no value for judge '{missing[0]}'.")
        s2e_l = np.array([check_number(f"residual_by_judge['{j}']", residual_by_judge[j], caller=caller, minimum=0.0)
                          if j in residual_by_judge else s2e for j in panel])
    else:
        s2e_l = np.full(kt, s2e)
    scen_part = s2a * float(np.sum(w_i ** 2)) if scenario_term else 0.0
    gen_part = s2b * float(np.sum(w_ij ** 2))
    res_part = float(np.sum(s2e_l[jidx] * w ** 2))
    if judge_view == "exchangeable":
        from cjstats.decisions.formulas import judge_weight_variance

        judge_part, bias = judge_weight_variance(s2g, w_l), float("nan")
    else:
        offs = judge_offsets if judge_offsets is not None else fit_offsets
        if offs is None:
            raise CjstatsError(f"judge_view='fixed' in {caller} needs the judge offsets: pass a fit from "
                               f"cjstats.estimate or judge_offsets={{judge: offset}}.")
        missing = [j for j in panel if j not in offs]
        if missing:
            raise CjstatsError(f"The judge offsets passed to {caller} have no value for judge '{missing[0]}'.")
        g = np.array([check_number(f"judge_offsets['{j}']", offs[j], caller=caller) for j in panel])
        g = g - g.mean()
        bias = float(w_l @ g)
        judge_part = bias * bias
    total = scen_part + gen_part + res_part + judge_part
    s2sj = group.scenario_judge
    sj_part = 0.0
    if s2sj > 0:
        w_il = np.bincount(s_code * kt + jidx, weights=w, minlength=w_i.size * kt)
        sq = float(np.sum(w_il ** 2))
        sj_part = s2sj * (sq if scenario_term else max(sq - 1.0 / (w_i.size * kt), 0.0))
        total += sj_part
    return RealisedVariance(total=total, scenario=scen_part, generation=gen_part, residual=res_part,
                            judge=judge_part, judge_bias=bias, calls=t, calls_dropped=n_all - t,
                            judges_used=int((b > 0).sum()), estimator=estimator, judge_view=judge_view,
                            judge_weights=dict(zip(panel, w_l.tolist())), notes=tuple(notes),
                            scenario_judge=sj_part)
