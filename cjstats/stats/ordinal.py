r"""Per-pattern counts: the sufficient statistics of the cumulative link model of one unit with m = 1.

With one generation per scenario the ordinal model of one unit (model, or model x criterion) is
(:mod:`cjstats.estimators.ordinal_ml`)

    P(Y_il <= k | alpha_i) = F(theta_k - gamma_l - alpha_i),   alpha_i ~ N(0, s_a^2),

and the likelihood of scenario i, int prod_l P(Y_il | a) phi(a; 0, s_a^2) da, depends on its rows only through
its *pattern*: the vector (c_i1, ..., c_iK) of the category each judge gave it (absent where the judge did not
score it). So

    log L = sum_p n_p log L_p,

a sum over the distinct patterns p weighted by n_p, their numbers of scenarios: the patterns and their counts are
the whole of what the fit reads (the exact compression of :func:`cjstats.estimators.ordinal_ml.likelihood.compress`).
For few judges and categories the patterns are few (4 judges x 5 categories: at most 6^4 = 1,296, whatever the
number of scenarios).

:class:`OrdinalPatterns` holds them in a canonical order (the order of ``compress``: the patterns' (judge,
category) indicator rows sorted lexicographically), with, for each pattern, the position of its first scenario
among the unit's sorted scenario labels, so that the problem built from them (:meth:`OrdinalPatterns.problem_rows`)
is the one the fit builds from rows, number for number. Statistics of chunks split by scenario add up pattern by
pattern (:func:`merge_patterns`). The numpy engine builds them from rows (:func:`patterns_from_rows`), the DuckDB
engine with a ``GROUP BY`` of the pattern, the Dask engine by merging its partitions' (``docs/scale.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["OrdinalPatterns", "patterns_from_rows", "patterns_from_scores", "merge_patterns"]


@dataclass(frozen=True, slots=True, eq=False)
class OrdinalPatterns:
    """The distinct response patterns of one unit with one generation per scenario, and their counts.

    Shapes: P patterns, K judges, J categories.
    """

    values: np.ndarray   # (J,) the distinct scores of the unit, ascending (category j is values[j])
    codes: np.ndarray    # (P, K) int64 category of judge l in the pattern, -1 where the judge did not score it
    count: np.ndarray    # (P,) int64 scenarios with the pattern
    first: np.ndarray    # (P,) int64 position of the pattern's first scenario among the unit's sorted scenarios

    @property
    def k(self) -> int:
        return int(self.codes.shape[1])

    @property
    def n_categories(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_scenarios(self) -> int:
        return int(self.count.sum())

    def judge_category_counts(self) -> np.ndarray:
        """(K, J) number of calls of judge l in category j."""
        out = np.zeros((self.k, self.n_categories), dtype=np.int64)
        p, l = np.nonzero(self.codes >= 0)
        np.add.at(out, (l, self.codes[p, l]), self.count[p])
        return out

    def mean_score(self) -> float:
        """The mean of the unit's scores (over every call)."""
        n = self.judge_category_counts()
        return float((n.sum(axis=0) @ self.values) / n.sum())

    def problem_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        r"""(category, scenario, judge, weight) of one representative scenario per pattern: the rows of the
        compressed problem, as ``compress`` makes it from the unit's sorted rows. The rows come patterns by their
        first scenario, then judges; scenario p is pattern p with weight n_p, except when every pattern is one
        scenario (nothing to compress): then the scenarios keep their order and the weight is None."""
        order = np.argsort(self.first, kind="stable")
        c = self.codes[order]
        p_idx, l_idx = np.nonzero(c >= 0)                  # row-major: pattern by pattern, judges in order
        distinct = bool(np.all(self.count == 1))
        scen = p_idx if distinct else order[p_idx]
        return (c[p_idx, l_idx].astype(np.int64), scen.astype(np.int64), l_idx.astype(np.int64),
                None if distinct else self.count.astype(np.float64))

    def without_judges(self, keep: Sequence[int]) -> OrdinalPatterns:
        """The patterns of the judges ``keep`` only (the others' calls removed), re-coded to the categories they
        use; scenarios left with no call are dropped and patterns that became equal are merged."""
        keep = np.asarray(keep, dtype=np.int64)
        codes = self.codes[:, keep]
        has = (codes >= 0).any(axis=1)
        codes, count, first = codes[has], self.count[has], self.first[has]
        used = np.unique(codes[codes >= 0])
        remap = np.full(self.n_categories, -1, dtype=np.int64)
        remap[used] = np.arange(used.size)
        codes = np.where(codes >= 0, remap[np.maximum(codes, 0)], -1)
        return _canonical(self.values[used], codes, count, first)

    def with_judges(self, judges: np.ndarray, k: int) -> OrdinalPatterns:
        """The same patterns over ``k`` judges, this one's judge l being judge ``judges[l]`` (the others absent)."""
        judges = np.asarray(judges, dtype=np.int64)
        if self.k == k and np.array_equal(judges, np.arange(k)):
            return self
        codes = np.full((self.codes.shape[0], k), -1, dtype=np.int64)
        codes[:, judges] = self.codes
        return _canonical(self.values, codes, self.count, self.first)

    def with_values(self, values: np.ndarray) -> OrdinalPatterns:
        """The same patterns coded in the categories ``values`` (a superset of this one's, ascending)."""
        values = np.asarray(values, dtype=np.float64)
        if np.array_equal(values, self.values):
            return self
        pos = np.searchsorted(values, self.values)
        codes = np.where(self.codes >= 0, pos[np.maximum(self.codes, 0)], -1)
        return _canonical(values, codes, self.count, self.first)


def _sort_key(codes: np.ndarray, n_cat: int) -> np.ndarray:
    """Per judge, the key whose lexicographic order is that of the (judge, category) indicator rows
    (``compress``'s order): an absent judge (all-zero block) first, then categories from the top down."""
    return np.where(codes >= 0, n_cat - codes, 0)


def _canonical(values: np.ndarray, codes: np.ndarray, count: np.ndarray, first: np.ndarray) -> OrdinalPatterns:
    """Equal patterns merged (counts added, the earliest first scenario kept) and sorted canonically."""
    codes = np.asarray(codes, dtype=np.int64).reshape(len(count), -1)
    count = np.asarray(count, dtype=np.int64)
    first = np.asarray(first, dtype=np.int64)
    key = _sort_key(codes, int(len(values)))
    if key.shape[0] == 0:
        uniq, inv = key, np.zeros(0, dtype=np.int64)
    else:
        uniq, inv = np.unique(key, axis=0, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    n_p = uniq.shape[0]
    cnt = np.bincount(inv, weights=count, minlength=n_p).astype(np.int64) if n_p else np.zeros(0, np.int64)
    fst = np.full(n_p, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(fst, inv, first)
    out_codes = np.full((n_p, codes.shape[1]), -1, dtype=np.int64)
    out_codes[inv] = codes
    return OrdinalPatterns(values=np.asarray(values, dtype=np.float64), codes=out_codes, count=cnt, first=fst)


def patterns_from_scores(scores: np.ndarray, count: np.ndarray, first: np.ndarray) -> OrdinalPatterns:
    """The statistics from patterns given as scores, (P, K) with NaN where a judge did not score (what the DuckDB
    engine's ``GROUP BY`` returns), their counts and first scenarios; equal patterns are merged."""
    scores = np.asarray(scores, dtype=np.float64)
    ok = ~np.isnan(scores)
    values = np.unique(scores[ok])
    codes = np.where(ok, np.searchsorted(values, np.where(ok, scores, values[0] if values.size else 0.0)), -1)
    return _canonical(values, codes, count, first)


def patterns_from_rows(y: np.ndarray, scenario: np.ndarray, judge: np.ndarray, n_scenarios: int,
                       k: int) -> OrdinalPatterns:
    """The statistics of one unit's rows with one generation per scenario (``scenario``, ``judge`` 0-based codes,
    scenarios numbered in their sorted order): each scenario's pattern, then the distinct patterns, their counts
    and first scenarios."""
    values, cat = np.unique(np.asarray(y, dtype=np.float64), return_inverse=True)
    codes = np.full((int(n_scenarios), int(k)), -1, dtype=np.int64)
    codes[np.asarray(scenario, dtype=np.int64), np.asarray(judge, dtype=np.int64)] = np.asarray(cat).reshape(-1)
    # one int64 code per scenario when it fits (the sort key in base J + 1, judge 0 most significant): its
    # numeric order is the canonical one, and a 1-d unique is fast
    base = values.size + 1
    key = _sort_key(codes, int(values.size))
    if base ** k < 2 ** 62:
        code = np.zeros(codes.shape[0], dtype=np.int64)
        for j in range(k):
            code = code * base + key[:, j]
        _, idx, inv = np.unique(code, return_index=True, return_inverse=True)
    else:
        _, idx, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    cnt = np.bincount(inv, minlength=idx.size).astype(np.int64)
    return OrdinalPatterns(values=values, codes=codes[idx], count=cnt, first=np.asarray(idx, dtype=np.int64))


def merge_patterns(parts: Sequence[OrdinalPatterns], judges: Sequence[np.ndarray], k: int,
                   positions: Sequence[np.ndarray]) -> OrdinalPatterns:
    """The statistics of a unit split by scenario from its chunks': each chunk's judges placed among the unit's
    ``k`` (``judges``), its categories among the union of the chunks' scores, and its scenario positions mapped to
    the unit's (``positions[c][i]``: the unit position of chunk c's i-th scenario); equal patterns are added."""
    values = np.unique(np.concatenate([p.values for p in parts]))
    codes, count, first = [], [], []
    for p, jidx, pos in zip(parts, judges, positions):
        q = p.with_judges(jidx, k).with_values(values)
        codes.append(q.codes)
        count.append(q.count)
        first.append(np.asarray(pos, dtype=np.int64)[q.first])
    return _canonical(values, np.concatenate(codes, axis=0), np.concatenate(count), np.concatenate(first))
