"""The paper's subsampling experiment (§4 "Strategy Comparison", App. F ``app:pool_pred``), vectorised.

From a complete pool of scores ``y`` of shape (n scenarios, m_max generations, K_tot judges), each repetition
builds one benchmark score per strategy and per-scenario budget B by drawing generations uniformly WITH
replacement from the pool, independently for every draw:

* ``"all"`` (A): B // K_tot generations scored by every judge (plus, when K_tot does not divide B, one more
  generation scored by the r = B mod K_tot judges of a rotation across a random scenario order and judge order);
* ``"random"`` (B): B calls, each a (generation, judge) cell drawn uniformly;
* ``"cyclic"`` (C): each judge gets B // K_tot draws from its own column, and the r extra calls of a scenario
  go to the next r judges of one rotation across a random scenario order and judge order.

The variance of the score across repetitions is predicted exactly by
:func:`cjstats.decisions.formulas.pool_variance` (C/(nB) of Eqs. 36-38 when K_tot divides B), whatever the pool's
meaning: with HANNA's 4 judge-prompt variants as the "generations" (``cjstats.datasets.load("hanna",
eval_prompt="as_generation")``) the experiment is a real-data check of App. F.

Speed: a sum of t draws from a unit's pool of P values is drawn as t/j uniform indices into a table of all
j-tuple sums (P^j entries, so j draws cost one index), with indices cut from raw 64-bit random words. Indices
into tables whose size is a power of two are exact; other sizes use the 32-bit multiply-shift map, whose
probabilities differ from uniform by less than P^j / 2^32 < 2e-5 relative (far below Monte Carlo error).
5,000 repetitions x 10 budgets x 3 strategies on HANNA (n = 96, m_max = 4, K_tot = 5) take about a second
(``benchmarks/bench_subsample.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cjstats._validate import check_choice, check_positive_int
from cjstats.exceptions import CjstatsError
from cjstats.decisions.schedules import _rng
from cjstats.decisions.formulas import STRATEGIES, pool_variance

__all__ = ["subsample_strategies", "subsample_means", "pool_array", "variance_with_se"]

_TABLE_ENTRIES = 2**18      # cap on a tuple-sum table (2 MB of float64: stays in cache)
_CHUNK = 2**18              # elements per vectorised chunk (small chunks stay in cache)


# ---------------------------------------------------------------------------------------- random indices
def _uniform(rng: np.random.Generator, size: int, bound: int) -> np.ndarray:
    """``size`` uniform integers in [0, bound) as intp, cut from raw 64-bit words."""
    if bound & (bound - 1) == 0 and bound <= 256:
        raw = rng.bit_generator.random_raw(-(-size // 8)).view(np.uint8)[:size]
        out = raw.astype(np.intp)
        if bound < 256:
            out &= bound - 1
        return out
    if bound & (bound - 1) == 0 and bound <= 65536:
        raw = rng.bit_generator.random_raw(-(-size // 4)).view(np.uint16)[:size]
        out = raw.astype(np.intp)
        if bound < 65536:
            out &= bound - 1
        return out
    raw = rng.bit_generator.random_raw(-(-size // 2)).view(np.uint32)[:size]
    wide = np.multiply(raw, np.uint64(bound), dtype=np.uint64)
    wide >>= np.uint64(32)
    return wide.astype(np.intp)


class _TupleSums:
    """Sums of t iid uniform draws from each unit's pool of P values, summed over the units."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = np.ascontiguousarray(values, dtype=float)       # (U, P)
        self.units, self.p = self.values.shape
        j = 1
        while self.p > 1 and self.p ** (j + 1) <= 65536 and self.units * self.p ** (j + 1) <= _TABLE_ENTRIES:
            j += 1
        self.jmax = j
        tables = [self.values]
        for _ in range(1, j):
            prev = tables[-1]
            tables.append((prev[:, :, None] + self.values[:, None, :]).reshape(self.units, -1))
        self.tables = [t.ravel() for t in tables]

    def total(self, t: int, reps: int, rng: np.random.Generator) -> np.ndarray:
        out = np.zeros(reps)
        if self.p == 1:                         # a pool of one value: no randomness
            return out + t * float(self.values.sum())
        a, b = divmod(t, self.jmax)
        if a:
            out += self._draw(self.jmax, a, reps, rng)
        if b:
            out += self._draw(b, 1, reps, rng)
        return out

    def _draw(self, j: int, count: int, reps: int, rng: np.random.Generator) -> np.ndarray:
        bound = self.p ** j
        table = self.tables[j - 1]
        offsets = (np.arange(self.units, dtype=np.intp) * bound)[:, None]
        per_rep = self.units * count
        step = max(1, _CHUNK // per_rep)
        out = np.empty(reps)
        for lo in range(0, reps, step):
            c = min(step, reps - lo)
            idx = _uniform(rng, c * per_rep, bound).reshape(c, self.units, count)
            idx += offsets
            out[lo:lo + c] = np.take(table, idx).reshape(c, -1).sum(axis=1)
        return out


def _rotation_extras(rng: np.random.Generator, reps: int, n: int, k: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Scenario (reps, n, 1) and judge (reps, n, r) indices of the r extra calls per scenario.

    One rotation runs across a random scenario order; the scenario at position p gets the judges at rotation
    slots pr, ..., pr + r - 1 (mod K) of a random judge order.
    """
    order = np.argsort(rng.random((reps, n)), axis=1)
    jperm = np.argsort(rng.random((reps, k)), axis=1)
    slot = (np.arange(n)[:, None] * r + np.arange(r)[None, :]) % k
    judges = jperm[np.arange(reps)[:, None, None], slot[None, :, :]]
    return order[:, :, None], judges


# -------------------------------------------------------------------------------------------------- core
def pool_array(data: Any, *, model: str | None = None, criterion: str | None = None) -> np.ndarray:
    """The complete (n, m_max, K_tot) score array of one group of a :class:`~cjstats.io.scores.Scores` table.

    Arrays pass through (checked). The group must be balanced: every judge scores every generation.
    """
    from cjstats.io.scores import Scores

    caller = "pool_array"
    if isinstance(data, Scores):
        groups = list(data.groups())
        if model is None and len({g.model for g in groups}) > 1:
            raise CjstatsError(f"The table has {len({g.model for g in groups})} models; name one with model= "
                               f"(one of {', '.join(data.models)}).")
        g = data.group(model if model is not None else groups[0].model, criterion)
        if criterion is None and data.has_criterion and len(data.criteria) > 1:
            raise CjstatsError(f"The table has {len(data.criteria)} criteria; name one with criterion= (one of "
                               f"{', '.join(data.criteria)}) or use scores.composite().")
        y = g.dense()
        if y is None:
            raise CjstatsError(f"The pool of {g.label()} is not balanced (every judge must score every "
                               f"generation of every scenario, with the same m): subsampling needs a complete pool.")
        return np.array(y, dtype=float)
    a = np.asarray(data, dtype=float)
    if a.ndim != 3 or min(a.shape) < 1 or not np.isfinite(a).all():
        raise CjstatsError(f"{caller} takes a Scores table or a complete finite array of shape (n, m_max, K_tot). "
                           f"Got shape {a.shape} instead.")
    return a


def subsample_means(y: np.ndarray, *, strategy: str, budget: int, reps: int = 5000,
                    seed: int | np.random.Generator | None = None) -> np.ndarray:
    """The benchmark score of ``reps`` subsampling repetitions of one strategy at one per-scenario budget.

    ``y`` is the complete pool (n, m_max, K_tot). Returns an array of ``reps`` scores (grand means); their
    variance is predicted by :func:`cjstats.decisions.formulas.pool_variance`.
    """
    caller = "subsample_means"
    strategy = check_choice("strategy", strategy, STRATEGIES, caller=caller)
    a = pool_array(y)
    b = check_positive_int("budget", budget, caller=caller)
    reps = check_positive_int("reps", reps, caller=caller, minimum=2)
    rng = _rng(seed, caller)
    return _means(a, strategy, b, reps, rng, {})


def _means(y: np.ndarray, strategy: str, b: int, reps: int, rng: np.random.Generator,
           cache: dict[str, _TupleSums]) -> np.ndarray:
    n, m, k = y.shape
    centre = y.mean(axis=(1, 2), keepdims=True)
    yc = y - centre
    level = float(centre.mean())
    q, r = divmod(b, k)
    if strategy == "random":
        pool = cache.setdefault("random", _TupleSums(yc.reshape(n, m * k)))
        total = pool.total(b, reps, rng)
    elif strategy == "cyclic":
        pool = cache.setdefault("cyclic", _TupleSums(yc.transpose(0, 2, 1).reshape(n * k, m)))
        total = pool.total(q, reps, rng) if q else np.zeros(reps)
        if r:
            scen, judges = _rotation_extras(rng, reps, n, k, r)
            g = _uniform(rng, reps * n * r, m).reshape(reps, n, r) if m > 1 else np.zeros((reps, n, r), np.intp)
            flat = (scen * m + g) * k + judges
            total += np.take(yc.ravel(), flat).reshape(reps, -1).sum(axis=1)
    else:
        pool = cache.setdefault("all", _TupleSums(yc.sum(axis=2)))
        total = pool.total(q, reps, rng) if q else np.zeros(reps)
        if r:
            scen, judges = _rotation_extras(rng, reps, n, k, r)
            g = _uniform(rng, reps * n, m).reshape(reps, n, 1) if m > 1 else np.zeros((reps, n, 1), np.intp)
            flat = (scen * m + g) * k + judges
            total += np.take(yc.ravel(), flat).reshape(reps, -1).sum(axis=1)
    return level + total / (n * b)


def variance_with_se(x: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Sample variance (ddof 1) of Monte Carlo replicates and its standard error sqrt((m4 − m2²)/R).

    m2 and m4 are the second and fourth central sample moments of the R replicates (delta method; for normal
    replicates this is about sqrt(2/(R − 1)) times the variance). This is the Monte Carlo error behind every
    "within k standard errors" comparison of a simulated variance with a formula, in this module and in the
    test suite.

    Examples
    --------
    >>> v, se = variance_with_se(np.random.default_rng(0).standard_normal(40_000))
    >>> abs(v - 1) < 4 * se
    True
    """
    a = np.asarray(x, dtype=float).ravel()
    if a.size < 2 or not np.isfinite(a).all():
        raise CjstatsError(f"variance_with_se needs at least 2 finite replicates. Got {a.size} values"
                           f"{'' if np.isfinite(a).all() else ' with missing or infinite ones'}.")
    d = a - a.mean()
    m2 = float(np.mean(d * d))
    m4 = float(np.mean(d ** 4))
    return float(np.var(a, ddof=1)), math.sqrt(max(m4 - m2 * m2, 0.0) / a.size)


def _z_score(variance: float, predicted: float, mc_se: float, *, scale: float) -> float:
    """``(variance - predicted) / mc_se``, with rounding noise treated as agreement.

    A mean of scores of size ``scale`` carries a rounding error of about ``eps * scale``, so a variance below
    ``(64 * eps * scale)**2`` is indistinguishable from 0. When the difference is that small the two agree
    (z = 0), even if the Monte Carlo error is itself 0; a real difference with zero Monte Carlo error is inf.
    """
    floor = (64.0 * np.finfo(np.float64).eps * scale) ** 2
    if abs(variance - predicted) <= floor:
        return 0.0
    return (variance - predicted) / mc_se if mc_se > 0 else math.inf


def subsample_strategies(data: Any, *, budgets: Sequence[int] | None = None, reps: int = 5000,
                         strategies: Sequence[str] = STRATEGIES, model: str | None = None,
                         criterion: str | None = None,
                         seed: int | np.random.Generator | None = None) -> pd.DataFrame:
    """Run the subsampling experiment and set each empirical variance beside its exact App. F prediction.

    Parameters
    ----------
    data : Scores or array
        A balanced table (one model and criterion are picked with ``model=``/``criterion=``) or a complete
        array (n, m_max, K_tot). Its generations are the pool.
    budgets : sequence of int, optional
        Per-scenario budgets B (default K_tot x 1..10, the paper's grid). Any B >= 1 works for every strategy.
    reps : int
        Repetitions per (strategy, budget) (5,000 in the paper).
    seed : int or Generator, optional

    Returns
    -------
    DataFrame
        ``strategy, budget, reps, variance, mc_se, predicted, z`` where ``variance`` is the empirical variance of
        the benchmark score over the repetitions, ``mc_se`` its Monte Carlo standard error
        (:func:`variance_with_se`), ``predicted`` the exact :func:`cjstats.decisions.formulas.pool_variance` and
        ``z = (variance - predicted) / mc_se``.

    Examples
    --------
    >>> import cjstats as cj
    >>> pool = cj.datasets.load("hanna", eval_prompt="as_generation", keep_sentinels=True)
    >>> t = subsample_strategies(pool, model="GPT", criterion="Coherence", reps=500, seed=0)
    >>> sorted(t["strategy"].unique())
    ['all', 'cyclic', 'random']
    """
    caller = "subsample_strategies"
    y = pool_array(data, model=model, criterion=criterion)
    k = y.shape[2]
    grid = [k * j for j in range(1, 11)] if budgets is None else list(budgets)
    if not grid:
        raise CjstatsError(f"The 'budgets' argument of {caller} is empty: give at least one budget.")
    grid = [check_positive_int("budgets", b, caller=caller) for b in grid]
    reps = check_positive_int("reps", reps, caller=caller, minimum=2)
    strategies = [check_choice("strategies", s, STRATEGIES, caller=caller) for s in strategies]
    rng = _rng(seed, caller)
    cache: dict[str, _TupleSums] = {}
    scale = float(np.max(np.abs(y))) if y.size else 0.0
    rows = []
    for s in strategies:
        for b in grid:
            v, se = variance_with_se(_means(y, s, b, reps, rng, cache))
            pred = pool_variance(y, strategy=s, budget=b)
            rows.append({"strategy": s, "budget": b, "reps": reps, "variance": v, "mc_se": se, "predicted": pred,
                         "z": _z_score(v, pred, se, scale=scale)})
    return pd.DataFrame(rows)
