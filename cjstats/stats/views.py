r"""What each backend reads, computed from :class:`~cjstats.stats.CellStats` alone (no score rows).

Three views, one per family of backends, hold the same sufficient statistics scaled and centred differently:

- :class:`MeanSquares` (``for_anova``): sums of squares of a balanced (n, m, K) table (paper App. C and G);
- :class:`Design` and :class:`YStats` (``for_reml``): counts and judge-centred sums per cell-size class, what
  the structured REML evaluator needs (:mod:`cjstats.estimators.reml`);
- :class:`GaussianStats` (``for_gaussian``): the same numbers centred by the grand mean and divided by cell
  size, what the collapsed Gaussian likelihood of the Bayesian backend needs.

Notation (one analysis unit): cell c = (scenario, generation) with n_c judge calls, D_c its judge-count vector,
y0 = y - shift[judge] the judge-centred scores, Y_c = sum of y0 over the cell. The statistics are grouped by
cell size h (at most K classes): DD_h = sum D_c D_c', DY_h = sum D_c Y_c, YY_h = sum Y_c^2; per scenario i
and class h the cell count, sum_c D_c, sum_c Y_c and sum_c Y_c^2; per judge the counts and sums of y0; and
SSW_h, the within-cell sum of squares of y0 (summed directly, so it keeps its relative precision).

Changing the centring from ``shift`` to ``shift + delta`` is linear algebra on these arrays
(:func:`recentre_arrays`): Y_c -> Y_c - D_c'delta, so DY_h -> DY_h - DD_h delta,
YY_h -> YY_h - 2 DY_h'delta + delta'DD_h delta and so on; merging chunks and the Gaussian view use it.
Only numpy is needed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MeanSquares", "Design", "YStats", "GaussianStats", "pattern_blocks", "ScenarioPatternForm",
           "pattern_codes"]

_NAN = float("nan")


# ------------------------------------------------------------------------------------- pattern form
@dataclass(frozen=True, slots=True, eq=False)
class ScenarioPatternForm:
    r"""The per-scenario statistics of one unit grouped by design pattern (the *pattern form* of ``CellStats``).

    Two scenarios share a pattern p when they have the same cell counts per size class (cnt_is) and the same judge
    counts per size class (S_is = s_isk[i]). Every scenario-level quantity of the ANOVA, REML and the collapsed
    Gaussian likelihood is a sum over scenarios of pattern-only weights times Y_is or Y_is Y_ir (Y_is the sum of
    the judge-centred cell sums of scenario i in class s), so per pattern it suffices to keep

        N_p = #{i in p},  cnt_p (S,),  S_p (S, K),
        Y1_p = sum_{i in p} Y_is (S,),  Y2_p = sum_{i in p} Y_is Y_ir (S, S).

    Re-centring by delta (Y_is -> Y_is - S_p[s]'delta = Y_is - a_s) transforms them exactly:
    Y1 -> Y1 - N a, Y2 -> Y2 - Y1 a' - a Y1' + N a a' (:meth:`recentre`). Scenario labels are not kept (10^7
    strings are the memory this form saves): only their number and a few ``examples`` for messages.
    """

    n: np.ndarray          # (P,) scenarios per pattern
    cnt: np.ndarray        # (P, S) cells per size class
    s: np.ndarray          # (P, S, K) judge counts per size class
    y1: np.ndarray         # (P, S) sums of Y_is
    y2: np.ndarray         # (P, S, S) sums of Y_is Y_ir
    n_scenarios: int
    examples: tuple = ()   # a few scenario labels, for messages

    def recentre(self, delta: np.ndarray) -> ScenarioPatternForm:
        """Y_is -> Y_is - S_is'delta (exact; see the class docstring)."""
        a = self.s @ delta                                               # (P, S)
        y1a = self.y1[:, :, None] * a[:, None, :]
        return ScenarioPatternForm(
            n=self.n, cnt=self.cnt, s=self.s, y1=self.y1 - self.n[:, None] * a,
            y2=self.y2 - y1a - y1a.transpose(0, 2, 1) + self.n[:, None, None] * a[:, :, None] * a[:, None, :],
            n_scenarios=self.n_scenarios, examples=self.examples)

    @property
    def generations(self) -> np.ndarray:
        """(P,) cells (generations) per scenario of each pattern."""
        return self.cnt.sum(axis=1)

    @staticmethod
    def from_scenarios(cnt_is: np.ndarray, s_isk: np.ndarray, ys: np.ndarray, labels: np.ndarray | None = None,
                       *, n_examples: int = 5) -> ScenarioPatternForm:
        """The pattern form of per-scenario arrays (one grouping, :func:`pattern_codes`)."""
        n, n_s = cnt_is.shape
        codes, first = pattern_codes(cnt_is, s_isk)
        n_p = first.shape[0]
        y1, y2 = pattern_moments(codes, n_p, ys)
        ex = () if labels is None else tuple(np.asarray(labels, dtype=object)[:n_examples].tolist())
        return ScenarioPatternForm(n=np.bincount(codes, minlength=n_p).astype(np.float64), cnt=cnt_is[first],
                                   s=s_isk[first], y1=y1, y2=y2, n_scenarios=int(n), examples=ex)


def pattern_codes(cnt_is: np.ndarray, s_isk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each scenario's pattern code (0..P-1) and the first scenario of each pattern, from its counts (cnt_is, s_isk).

    The counts are non-negative integers (as floats); a radix key when it fits 62 bits (a dense lookup table, O(n),
    when the possible keys are few), else ``np.unique`` over the count columns.
    """
    n, n_s = cnt_is.shape
    k = s_isk.shape[2]
    cols = [cnt_is[:, h] for h in range(n_s)] + [s_isk[:, h, j] for h in range(n_s) for j in range(k)]
    span = np.empty(len(cols), dtype=np.int64)
    exact = True
    for i, c in enumerate(cols):   # column by column: no (n, S(K+1)) copy of the design
        hi = float(c.max()) if n else 0.0
        span[i] = int(min(hi, 2.0**40)) + 1
        exact = exact and hi <= 2.0**40
    n_keys = float(np.prod(span.astype(np.float64)))
    if exact and n_keys < 2.0**62:
        radix = np.cumprod(np.r_[1, span[:-1]]).astype(np.int64)
        key = np.zeros(n, dtype=np.int64)
        for c, r in zip(cols, radix):
            key += c.astype(np.int64) * r
        if n_keys <= 4 * n:   # few possible keys: a dense lookup table, O(n), no sort
            seen = np.zeros(int(n_keys), dtype=bool)
            seen[key] = True
            uniq = np.flatnonzero(seen)
            lookup = np.zeros(int(n_keys), dtype=np.int64)
            lookup[uniq] = np.arange(uniq.shape[0])
            codes = lookup[key]
            first = np.empty(uniq.shape[0], dtype=np.int64)
            first[codes[::-1]] = np.arange(n - 1, -1, -1)     # the last write of each code is its first row
        else:
            _, first, codes = np.unique(key, return_index=True, return_inverse=True)
    else:
        _, first, codes = np.unique(np.column_stack(cols), axis=0, return_index=True, return_inverse=True)
    return codes.ravel(), first


def pattern_moments(codes: np.ndarray, n_p: int, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pattern, sum_i Y_is (P, S) and sum_i Y_is Y_ir (P, S, S) of the scenarios' class sums ``ys`` (n, S)."""
    n_s = ys.shape[1]
    y1 = np.stack([np.bincount(codes, weights=ys[:, h], minlength=n_p) for h in range(n_s)], axis=1)
    y2 = np.empty((n_p, n_s, n_s))
    for h in range(n_s):
        for r in range(h, n_s):
            y2[:, h, r] = y2[:, r, h] = np.bincount(codes, weights=ys[:, h] * ys[:, r], minlength=n_p)
    return y1, y2


# ----------------------------------------------------------------------------------------------- ANOVA
@dataclass(frozen=True, slots=True)
class MeanSquares:
    """Sums of squares, degrees of freedom and means of a balanced (n, m, K) table (paper App. C and G)."""

    n: int
    m: int
    k: int
    grand_mean: float
    judge_means: np.ndarray
    ss_scenario: float
    ss_generation: float
    ss_judge: float
    ss_residual: float

    @property
    def df_scenario(self) -> int:
        return self.n - 1

    @property
    def df_generation(self) -> int:
        return self.n * (self.m - 1)

    @property
    def df_judge(self) -> int:
        return self.k - 1

    @property
    def df_residual(self) -> int:
        return (self.n * self.m - 1) * (self.k - 1)

    @property
    def ms_scenario(self) -> float:
        return self.ss_scenario / self.df_scenario

    @property
    def ms_generation(self) -> float:
        return self.ss_generation / self.df_generation if self.df_generation > 0 else _NAN

    @property
    def ms_judge(self) -> float:
        return self.ss_judge / self.df_judge

    @property
    def ms_residual(self) -> float:
        return self.ss_residual / self.df_residual

    @property
    def offsets(self) -> np.ndarray:
        """gamma_l = J_l - G (paper App. C)."""
        return self.judge_means - self.grand_mean

    def as_dict(self) -> dict[str, float]:
        return {
            "ms_scenario": self.ms_scenario, "ms_generation": self.ms_generation, "ms_judge": self.ms_judge,
            "ms_residual": self.ms_residual, "df_scenario": self.df_scenario, "df_generation": self.df_generation,
            "df_judge": self.df_judge, "df_residual": self.df_residual,
        }


# ------------------------------------------------------------------------------------------------ REML
@dataclass(frozen=True, slots=True)
class Design:
    """What the REML fit needs from the layout of one unit (no scores): counts per size class, scenario, judge.

    Cells are grouped by their size (number of judge calls), at most K classes, so that an evaluation sums
    K x K matrices over size classes and K-vectors over scenarios instead of touching every row. The per-cell
    and per-row arrays are present only when the design was built from rows
    (:func:`cjstats.estimators.reml_core.build_design`); the statistics layer leaves them ``None``.
    """

    n_obs: int
    n_scen: int
    n_cells: int
    k: int
    sizes: np.ndarray          # (S,) distinct cell sizes
    size_cells: np.ndarray     # (S,) number of cells of each size
    dd: np.ndarray             # (S, K, K) sum over cells of that size of D_c D_c'
    judge_n: np.ndarray        # (K,) rows per judge
    s_isk: np.ndarray | None   # (n, S, K) judge counts per scenario and size class (None: pattern form only)
    cnt_is: np.ndarray | None  # (n, S) cells per scenario and size class (None: pattern form only)
    has_generation: bool       # some scenario has at least two cells
    n_linked: int              # connected components of the cell-judge graph (1 when judges share cells)
    #: the scenarios grouped by design pattern, with the moments of Y_is (a pattern-form CellStats), else None
    pat: ScenarioPatternForm | None = None
    cell_size_idx: np.ndarray | None = None  # (C,) size class of each cell
    cell_scen: np.ndarray | None = None      # (C,)
    d_cell: np.ndarray | None = None         # (C, K) judge counts per cell
    row_cell: np.ndarray | None = None       # (N,)
    row_judge: np.ndarray | None = None      # (N,)

    @property
    def df_residual(self) -> int:
        """Rows minus rank[Z_cell | J] = N - (cells + K - n_linked): the within-cell degrees of freedom.

        The rank of the cell and judge indicators together is cells + K minus the number of connected
        components of the bipartite graph "judge l scored cell c" (one when every judge shares a cell with
        another, directly or through a chain): balanced, (nm - 1)(K - 1).
        """
        return int(self.n_obs - self.n_cells - self.k + self.n_linked)


@dataclass(frozen=True, slots=True)
class YStats:
    """The score-dependent sufficient statistics of one unit (scores centred by judge, which REML ignores)."""

    shift: np.ndarray      # (K,) judge means subtracted from y (X spans the judge indicators)
    dy: np.ndarray         # (S, K) sum over cells of a size class of D_c * ysum_c
    yyc: np.ndarray        # (S,) sum over cells of a size class of ysum_c^2
    ys: np.ndarray | None  # (n, S) sum of ysum_c per scenario and size class (None: pattern form, Design.pat)
    judge_sum: np.ndarray  # (K,)
    yy: float
    cell_sum: np.ndarray | None = None   # (C,) only when built from rows
    ssw: float = _NAN                    # within-cell sum of squares of the judge-centred scores


# -------------------------------------------------------------------------------------------- Gaussian
@dataclass(frozen=True, slots=True)
class GaussianStats:
    """Sufficient statistics of one unit for the collapsed Gaussian likelihood of the Bayesian backend.

    With x_c = (S_c/n_c, 1, D_c/n_c) (S_c the cell sum of y - ybar): m_h = sum over cells of size h of x_c x_c',
    v[i, h] = sum over the cells of size h in scenario i of x_c, ssw0 the within-cell sum of squares,
    b_w = J'y_w and g_w = J_w'J_w (J_w the judge indicators centred within cells).
    """

    n_obs: int
    n_cells: int
    n_scenarios: int
    k: int
    ybar: float
    sd: float
    has_generation: bool
    sizes: np.ndarray        # (H,) distinct cell sizes h
    cells_per_size: np.ndarray  # (H,) number of cells of each size
    ssw0: float
    b_w: np.ndarray          # (K,)
    g_w: np.ndarray          # (K, K)
    m_h: np.ndarray          # (H, D, D), D = K + 2
    v: np.ndarray            # (n, H, D)
    m_count: np.ndarray      # (n, H)
    judge_offsets0: np.ndarray  # (K,) raw judge means minus their mean (starting values only)
    # scenarios grouped by pattern (their cell-size counts m_i.): blocks share u_i, so their contribution
    # depends only on T_p[h, h'] = sum_{i in p} V_ih V_ih'^T; the rest stay one by one.
    blk_t: np.ndarray        # (P, H, H, D, D)
    blk_m: np.ndarray        # (P, H)
    blk_n: np.ndarray        # (P,)
    single_v: np.ndarray     # (n_single, H, D)
    single_m: np.ndarray     # (n_single, H)


def pattern_blocks(v: np.ndarray, m_count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group scenarios with the same cell-size counts; keep a group as a block when that is cheaper.

    A block of n_p scenarios using H_p cell sizes costs H_p^2 D^2 per evaluation instead of
    n_p (H_p D + D^2) one by one. A balanced design is one block whatever its size.
    """
    _n, h, d = v.shape
    _, inverse, counts = np.unique(m_count, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    blocks, single = [], []
    for p in range(len(counts)):
        idx = np.flatnonzero(inverse == p)
        h_p = int((m_count[idx[0]] > 0).sum())
        if len(idx) * (h_p * d + d * d) > h_p * h_p * d * d:
            blocks.append(idx)
        else:
            single.extend(idx.tolist())
    blk_t = np.zeros((len(blocks), h, h, d, d))
    for b, idx in enumerate(blocks):
        blk_t[b] = np.einsum("iha,igb->hgab", v[idx], v[idx])
    blk_m = np.array([m_count[idx[0]] for idx in blocks]).reshape(len(blocks), h)
    blk_n = np.array([len(idx) for idx in blocks], dtype=np.float64)
    return blk_t, blk_m, blk_n, np.array(sorted(single), dtype=np.int64)

