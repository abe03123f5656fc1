r"""``CellStats``: the sufficient statistics of one analysis unit, from which every backend fits.

One unit is one model (or model x criterion) by default. Its statistics are grouped by cell-size class
h (a cell is a (scenario, generation) pair, its size the number of judge calls in it), with y0 = y - shift[l]
the scores centred by a per-judge constant ``shift`` (the judge means when built from a whole table):

- per size class: the judge co-occurrence DD_h = sum_c D_c D_c' (D_c the judge counts of cell c), the
  judge x cell-sum products DY_h = sum_c D_c Y_c (Y_c the cell sum of y0), YY_h = sum_c Y_c^2, the number of
  cells, and per judge the counts and sums of y0, sum y0^2 and the within-cell sum of squares SSW_h;
- per scenario x size class: cell counts, sum_c D_c and sum_c Y_c;
- per judge: counts and sums of y0; totals: sum y0^2, min and max of y, and the centring constant;
- labels (scenarios, judges) and the design summary (:class:`~cjstats.io.scores.GroupDesign`).

The per-scenario part may instead be held in its *pattern form* (``pat``,
:class:`~cjstats.stats.views.ScenarioPatternForm`: per design pattern the scenario count, cnt, S, sum Y_is and
sum Y_is Y_ir), which every scenario-level sum of the ANOVA and REML needs and which the DuckDB engine builds for
millions of scenarios; the scenario labels and per-scenario arrays are then None, and what needs them
(:meth:`CellStats.require_scenarios`) refuses in one sentence.

Every entry is a sum over cells, and cells never straddle scenarios, so the statistics of chunks of a unit
split by scenario add up to those of the whole (:func:`merge_stats`) once they share one centring
(:meth:`CellStats.recentre`, exact linear algebra). The views (:meth:`CellStats.for_anova`,
:meth:`CellStats.for_reml`, :meth:`CellStats.for_gaussian`) give each backend its scaling
(:mod:`cjstats.stats.views`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from cjstats.exceptions import CjstatsError
from cjstats.io.scores import GroupDesign
from cjstats.stats.covariates import CovariateStats, merge_covariate_stats
from cjstats.stats.ordinal import OrdinalPatterns, merge_patterns
from cjstats.stats.scenario_judge import ScenarioJudgeStats, merge_sj_stats, scenario_judge_pairs
from cjstats.stats.views import (Design, GaussianStats, MeanSquares, ScenarioPatternForm, YStats, pattern_blocks,
                                 pattern_codes)

__all__ = ["CellStats", "merge_stats", "sumprod", "size_class_products", "class_order"]


def sumprod(a: np.ndarray, b: np.ndarray) -> float:
    """sum_i a_i b_i of two 1-d float64 arrays, in one thread and in a fixed order (``np.einsum``).

    The engines and the REML reduction take their long dot products (over rows or cells) here rather than from
    BLAS (``a @ b``): a BLAS level-1 call over a long vector starts threads, whose wake-up dominates its time on a
    busy machine (10-20 ms for 10^6 rows instead of 0.5 ms) and whose partial sums depend on the thread count.
    """
    return float(np.einsum("i,i->", a, b))


def class_order(cell_size_idx: np.ndarray, n_s: int) -> tuple[np.ndarray | None, np.ndarray]:
    """The cells sorted by size class (stable: each class keeps the cells' order; ``None`` when ``n_s == 1``) and
    the bounds of each class's block in that order."""
    if n_s == 1:
        return None, np.array([0, cell_size_idx.shape[0]])
    idx = cell_size_idx.astype(np.int16) if n_s < 2 ** 15 else cell_size_idx   # 16-bit keys: a radix sort
    order = np.argsort(idx, kind="stable")
    return order, np.searchsorted(idx[order], np.arange(n_s + 1))


def size_class_products(ysum: np.ndarray, d_t: np.ndarray | None, cell_size_idx: np.ndarray | None,
                        n_s: int, k: int, *, by_class: tuple[np.ndarray | None, np.ndarray] | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """DY_h = sum_c D_c Y_c and YY_h = sum_c Y_c^2 over the cells c of each size class h (:func:`sumprod`).

    ``ysum`` (C,) are the cell sums Y_c, ``d_t`` (K, C) the judge calls D' (``None``: every cell has one call
    of every judge, D_c = 1) and ``cell_size_idx`` (C,) the class of each cell; ``by_class`` is
    :func:`class_order` when the caller has it. Every product is of two contiguous vectors (a class's block of
    cells and of one judge's row of D'), so a unit with D_c = 1 gives the same numbers whether ``d_t`` is
    ``None`` or ones.
    """
    if by_class is not None:
        order, bounds = by_class
    elif n_s == 1:
        order, bounds = None, np.array([0, ysum.shape[0]])
    else:
        order, bounds = class_order(cell_size_idx, n_s)
    ys_p = ysum if order is None else ysum[order]
    d_p = None if d_t is None else np.ascontiguousarray(d_t if order is None else d_t[:, order], dtype=np.float64)
    dy = np.empty((n_s, k))
    yyc = np.empty(n_s)
    for s in range(n_s):
        a, b = bounds[s], bounds[s + 1]
        ys_s = ys_p[a:b]
        yyc[s] = sumprod(ys_s, ys_s)
        if d_p is None:
            dy[s] = sumprod(ys_s, np.ones(b - a))
        else:
            dy[s] = [sumprod(ys_s, d_p[j, a:b]) for j in range(k)]
    return dy, yyc


@dataclass(frozen=True, slots=True, eq=False)
class CellStats:
    """Sufficient statistics of one analysis unit (see the module docstring for every array).

    Shapes: n scenarios, S cell-size classes, K judges. Build it with :func:`cjstats.stats.build_stats`;
    combine chunks split by scenario with :func:`merge_stats`.
    """

    model: str
    criterion: str | None
    scenario_labels: np.ndarray   # (n,)
    judge_labels: tuple[str, ...]  # (K,)
    design: GroupDesign
    shift: np.ndarray             # (K,) centring constant per judge
    n_obs: int
    n_cells: int
    sizes: np.ndarray             # (S,) distinct cell sizes (float)
    size_cells: np.ndarray        # (S,) cells per size class
    dd: np.ndarray                # (S, K, K)
    dy: np.ndarray                # (S, K)
    yyc: np.ndarray               # (S,)
    judge_n_s: np.ndarray         # (S, K) judge calls per size class
    judge_sum_s: np.ndarray       # (S, K) sums of y0 per size class and judge
    yy_s: np.ndarray              # (S,) sum of y0^2 per size class
    ssw_s: np.ndarray             # (S,) within-cell sum of squares of y0 per size class
    s_isk: np.ndarray | None      # (n, S, K); None in the pattern form (``pat``)
    cnt_is: np.ndarray | None     # (n, S); None in the pattern form
    ys: np.ndarray | None         # (n, S); None in the pattern form
    judge_n: np.ndarray           # (K,)
    judge_sum: np.ndarray         # (K,)
    yy: float
    y_min: float
    y_max: float
    first_cell: tuple[str, str]   # (scenario, generation) labels of the first cell
    first_missing: tuple[Any, Any, tuple[str, ...]] | None = None  # first incomplete cell and its absent judges
    #: per-pattern statistics of the scenario x judge model (:mod:`cjstats.stats.scenario_judge`); built by the
    #: numpy engine when some judge scored several generations of a scenario, else None
    sj: ScenarioJudgeStats | None = None
    #: the covariate statistics of the unit (:mod:`cjstats.stats.covariates`), built when ``build_stats`` is given
    #: ``covariates=``, else None
    cov: CovariateStats | None = None
    #: the per-pattern counts of the cumulative link model (:mod:`cjstats.stats.ordinal`), built when
    #: ``build_stats`` is given ``likelihood="cumulative"`` and the unit has one generation per scenario, else None
    patterns: OrdinalPatterns | None = None
    #: the *pattern form* of the per-scenario arrays (:class:`~cjstats.stats.views.ScenarioPatternForm`: per design
    #: pattern the scenario count, cnt, S, sum Y_is and sum Y_is Y_ir), set when the engine kept no per-scenario
    #: arrays (``scenario_labels``, ``s_isk``, ``cnt_is`` and ``ys`` are then None), e.g. the DuckDB engine on
    #: millions of scenarios; None otherwise
    pat: ScenarioPatternForm | None = None

    # -- identity ------------------------------------------------------------------------------------
    @property
    def k(self) -> int:
        return len(self.judge_labels)

    @property
    def n_scenarios(self) -> int:
        return int(self.pat.n_scenarios) if self.pat is not None else int(self.cnt_is.shape[0])

    @property
    def pattern_form(self) -> ScenarioPatternForm:
        """The scenarios grouped by design pattern (:class:`~cjstats.stats.views.ScenarioPatternForm`): kept as it
        is in a pattern-form unit, grouped from the per-scenario arrays otherwise."""
        if self.pat is not None:
            return self.pat
        return ScenarioPatternForm.from_scenarios(self.cnt_is, self.s_isk, self.ys, self.scenario_labels)

    def to_pattern_form(self) -> CellStats:
        """The same statistics with the per-scenario arrays replaced by their pattern form (what the DuckDB engine
        builds for millions of scenarios); the scenario x judge, covariate and ordinal statistics are kept."""
        if self.pat is not None:
            return self
        if self.cov is not None:
            raise CjstatsError(f"{self.label(capital=True)} has covariate statistics, which are per scenario; "
                               f"the pattern form does not hold them.")
        return dataclasses.replace(self, pat=self.pattern_form, scenario_labels=None, s_isk=None, cnt_is=None,
                                   ys=None)

    def require_scenarios(self, what: str) -> None:
        """Raise one sentence when this unit is in the pattern form (no per-scenario values) and ``what`` needs them."""
        if self.pat is not None:
            ex = ", ".join(map(repr, self.pat.examples[:3]))
            raise CjstatsError(
                f"{what} needs per-scenario statistics, but {self.label()} holds its {self.pat.n_scenarios:,} "
                f"scenarios (e.g. {ex}) grouped by design pattern, as the DuckDB engine keeps them for large "
                f"tables; rebuild the statistics with build_stats(..., engine='duckdb', scenarios='each').")

    @property
    def key(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model}
        if self.criterion is not None:
            out["criterion"] = self.criterion
        return out

    def label(self, *, capital: bool = False) -> str:
        """Human name of the unit for messages: ``model 'x'`` or ``model 'x', criterion 'y'``."""
        s = f"{'Model' if capital else 'model'} '{self.model}'"
        return s if self.criterion is None else f"{s}, criterion '{self.criterion}'"

    @property
    def generations_per_scenario(self) -> np.ndarray:
        """(n,) number of cells (generations) of each scenario (per-scenario units only)."""
        self.require_scenarios("The number of generations of each scenario")
        return self.cnt_is.sum(axis=1)

    @property
    def generations_range(self) -> tuple[int, int]:
        """Fewest and most cells (generations) of a scenario (either form)."""
        g = self.pat.generations if self.pat is not None else self.cnt_is.sum(axis=1)
        return int(g.min()), int(g.max())

    @property
    def has_generation(self) -> bool:
        """Some scenario has at least two generations."""
        return self.generations_range[1] >= 2

    @property
    def max_pair_calls(self) -> int:
        """Largest number of calls of one judge on one scenario (>= 2: ``scenario_judge`` is identifiable)."""
        return scenario_judge_pairs(self.pat.s if self.pat is not None else self.s_isk)

    @property
    def n_linked(self) -> int:
        """Connected components of the bipartite graph "judge l scored cell c" (1 when judges share cells).

        Every cell has a judge, so they are the components of the judge co-occurrence graph sum_h DD_h > 0.
        """
        from scipy.sparse import csgraph, csr_matrix

        adj = self.dd.sum(axis=0) > 0
        return int(csgraph.connected_components(csr_matrix(adj), directed=False, return_labels=False))

    # -- re-centring ---------------------------------------------------------------------------------
    def recentre(self, shift: np.ndarray) -> CellStats:
        """The same statistics with y0 = y - ``shift``[judge] (exact algebra; no rows needed).

        With delta = shift_new - shift_old, Y_c -> Y_c - D_c'delta, so DY_h -> DY_h - DD_h delta,
        YY_h -> YY_h - 2 DY_h'delta + delta'DD_h delta, per-judge sums -> sums - n_l delta_l, and
        SSW_h -> SSW_h - 2 delta'JY_h + delta'(diag(n_h) - DD_h/h) delta with JY_h = judge_sum_h - DY_h/h.
        """
        new = np.asarray(shift, dtype=np.float64)
        delta = new - self.shift
        if not np.any(delta):
            return self
        dd_delta = self.dd @ delta                                     # (S, K)
        return dataclasses.replace(
            self, shift=new,
            dy=self.dy - dd_delta,
            yyc=self.yyc - 2.0 * self.dy @ delta + dd_delta @ delta,
            judge_sum_s=self.judge_sum_s - self.judge_n_s * delta,
            yy_s=self.yy_s - 2.0 * self.judge_sum_s @ delta + self.judge_n_s @ (delta * delta),
            ssw_s=self._ssw_recentred(delta, dd_delta),
            ys=None if self.ys is None else self.ys - self.s_isk @ delta,
            pat=None if self.pat is None else self.pat.recentre(delta),
            judge_sum=self.judge_sum - self.judge_n * delta,
            yy=float(self.yy - 2.0 * self.judge_sum @ delta + self.judge_n @ (delta * delta)),
            sj=None if self.sj is None else self.sj.recentre(new),
            cov=None if self.cov is None else self.cov.recentre_y(delta),
        )

    def _ssw_recentred(self, delta: np.ndarray, dd_delta: np.ndarray | None = None) -> np.ndarray:
        """SSW_h of the scores re-centred by ``delta`` (:meth:`recentre`'s formula, alone: what
        :meth:`within_cell_rss` needs, without re-centring the scenario x judge, pattern and covariate parts)."""
        h = self.sizes
        if dd_delta is None:
            dd_delta = self.dd @ delta
        jy = self.judge_sum_s - self.dy / h[:, None]
        jj_quad = (self.judge_n_s * delta * delta).sum(axis=1) - np.einsum("sk,k->s", dd_delta, delta) / h
        return self.ssw_s - 2.0 * jy @ delta + jj_quad

    # -- views ---------------------------------------------------------------------------------------
    def for_reml(self) -> tuple[Design, YStats]:
        """The structured REML evaluator's :class:`Design` and :class:`YStats` (scores centred by ``shift``)."""
        design = Design(
            n_obs=int(self.n_obs), n_scen=self.n_scenarios, n_cells=int(self.n_cells), k=self.k,
            sizes=self.sizes, size_cells=self.size_cells, dd=self.dd, judge_n=self.judge_n, s_isk=self.s_isk,
            cnt_is=self.cnt_is, has_generation=self.has_generation, n_linked=self.n_linked, pat=self.pat,
        )
        ys = YStats(shift=self.shift, dy=self.dy, yyc=self.yyc, ys=self.ys, judge_sum=self.judge_sum,
                    yy=float(self.yy), ssw=float(self.ssw_s.sum()))
        return design, ys

    def within_cell_rss(self) -> tuple[float, float]:
        """Residual sum of squares of the fixed-effects fit y ~ cell + judge, and the within-cell sum of squares of y.

        RSS = SSW - JY'(J_w'J_w)^+ JY with J_w'J_w = diag(n_l) - sum_h DD_h/h and JY = judge_sum - sum_h DY_h/h
        (the judge sums of the within-cell deviations); both are of the judge-centred scores, so when the
        centring is the judge means JY is near zero and RSS keeps the relative precision of SSW.
        """
        jj = np.diag(self.judge_n) - np.tensordot(1.0 / self.sizes, self.dd, axes=1)
        jy = self.judge_sum - (self.dy / self.sizes[:, None]).sum(axis=0)
        # J_w'J_w is singular by construction (its judge columns sum to zero within every cell, so the ones
        # vector, and one vector per further linked judge set, span its null space); those eigenvalues come out
        # as rounding noise near 1e-16 max|J_w'J_w|, which the default cut-off of pinv (1e-15) may keep and
        # invert. A cut-off of 1e-10 drops the noise and keeps every real eigenvalue of a usable design.
        rss = float(self.ssw_s.sum()) - float(jy @ np.linalg.pinv(jj, rtol=1e-10, hermitian=True) @ jy)
        delta = np.zeros(self.k) - self.shift                      # recentre(0)'s delta; its SSW alone
        within = float((self._ssw_recentred(delta) if np.any(delta) else self.ssw_s).sum())   # the scale
        return max(rss, 0.0), within

    def for_gaussian(self) -> GaussianStats:
        """The collapsed Gaussian likelihood's :class:`GaussianStats` (scores centred by their grand mean)."""
        self.require_scenarios("The collapsed Gaussian likelihood (method='bayes')")
        n_obs = int(self.n_obs)
        ybar = float((self.shift @ self.judge_n + self.judge_sum.sum()) / n_obs)
        c = self.recentre(np.full(self.k, ybar))
        k = self.k
        h = self.sizes
        n_h = len(h)
        d = k + 2
        a_sum = self.s_isk.sum(axis=0)                         # (S, K) sum of D_c per class
        s_sum = c.ys.sum(axis=0)                               # (S,) sum of S_c per class
        m_h = np.zeros((n_h, d, d))
        m_h[:, 0, 0] = c.yyc / h**2
        m_h[:, 0, 1] = m_h[:, 1, 0] = s_sum / h
        m_h[:, 0, 2:] = c.dy / (h**2)[:, None]
        m_h[:, 2:, 0] = m_h[:, 0, 2:]
        m_h[:, 1, 1] = self.size_cells
        m_h[:, 1, 2:] = a_sum / h[:, None]
        m_h[:, 2:, 1] = m_h[:, 1, 2:]
        m_h[:, 2:, 2:] = self.dd / (h**2)[:, None, None]
        v = np.concatenate((c.ys[:, :, None] / h[None, :, None], self.cnt_is[:, :, None],
                            self.s_isk / h[None, :, None]), axis=2)
        m_count = np.ascontiguousarray(self.cnt_is)
        n_l = self.judge_n
        y_l = c.judge_sum
        b_w = y_l - (c.dy / h[:, None]).sum(axis=0)
        g_w = np.diag(n_l) - np.tensordot(1.0 / h, self.dd, axes=1)
        judge_means = np.where(n_l > 0, y_l / np.maximum(n_l, 1.0), 0.0)
        blk_t, blk_m, blk_n, single = pattern_blocks(v, m_count)
        gens = self.generations_per_scenario
        return GaussianStats(
            n_obs=n_obs, n_cells=int(self.n_cells), n_scenarios=self.n_scenarios, k=k, ybar=ybar,
            sd=float(np.sqrt(max(c.yy, 0.0) / n_obs)),
            has_generation=bool(gens.max() > 1 and n_obs > self.n_cells), sizes=h,
            cells_per_size=self.size_cells, ssw0=float(c.ssw_s.sum()), b_w=b_w, g_w=g_w, m_h=m_h, v=v,
            m_count=m_count, judge_offsets0=judge_means - judge_means.mean(),
            blk_t=blk_t, blk_m=blk_m, blk_n=blk_n, single_v=np.ascontiguousarray(v[single]),
            single_m=np.ascontiguousarray(m_count[single]),
        )

    def _class_scenario_sums(self, s: int) -> tuple[int, int, float, float]:
        """(n, m, sum_i Y_is, sum_i Y_is^2) over the scenarios with cells of class ``s`` (m: their cells in it, the
        first one's), scenario by scenario (:func:`sumprod`: n can be long, no BLAS threads) or per pattern."""
        if self.pat is None:
            keep = self.cnt_is[:, s] > 0
            ysc = self.ys[keep, s]
            return int(keep.sum()), int(self.cnt_is[keep, s][0]), float(ysc.sum()), sumprod(ysc, ysc)
        pf = self.pat
        keep = pf.cnt[:, s] > 0
        return (int(pf.n[keep].sum()), int(pf.cnt[keep, s][0]), float(pf.y1[keep, s].sum()),
                float(pf.y2[keep, s, s].sum()))

    def for_anova(self, incomplete: Literal["error", "drop"] = "error") -> tuple[MeanSquares, dict[str, int]]:
        r"""Mean squares of the balanced crossed table (paper App. C), and what was dropped to get it.

        This is the one place that decides which cells ``incomplete="drop"`` keeps (the complete ones: every
        judge scored them once). The counts come back as ``dropped_rows``/``n_rows``, ``dropped_cells``/``n_cells``
        and ``dropped_scenarios``/``n_scenarios`` (a scenario is dropped when none of its cells is kept), for
        :func:`cjstats._drop.account_for_drop`.

        Uses the size class of complete cells (size K, every judge once). With a_l = (judge sum of y0)/(nm) and
        t = mean(a): SS_S = mK sum_i (Y_i/(mK) - t)^2, SS_G = YY_h/K - sum_i Y_i^2/(mK),
        SS_J = nm sum_l (J_l - G)^2 (J_l = shift_l + a_l) and SS_W = SSW - 2 (a - t)'JY + nm |a - t|^2, with SSW the within-cell sum
        of squares of y0 and JY the judge sums of the within-cell deviations (both zero-centred sums: when
        ``shift`` is the judge means, a, t and JY vanish and SS_W is SSW, summed directly). Raises one sentence
        when the unit is not balanced (``incomplete="error"``) or stays unbalanced after dropping incomplete
        cells (``"drop"``).
        """
        k = self.k
        d = self.design
        totals = {"n_rows": int(self.n_obs), "n_cells": int(self.n_cells), "n_scenarios": self.n_scenarios}
        dropped = {"dropped_rows": 0, "dropped_cells": 0, "dropped_scenarios": 0, **totals}
        full = np.flatnonzero((self.sizes == k) & np.all(self.judge_n_s == self.size_cells[:, None], axis=1))
        if d.balanced:
            s = int(full[0])
        else:
            if d.complete:  # complete but m differs across scenarios
                m_lo, m_hi = self.generations_range
                raise CjstatsError(f"{self.label(capital=True)} has {m_lo} to {m_hi} "
                                   f"generations per scenario: the method-of-moments ANOVA needs the same number in "
                                   f"every scenario. Use method='reml', which handles unbalanced designs.")
            n_bad = int(self.n_cells - (self.size_cells[full].sum() if full.size else 0))
            if incomplete == "error":
                fm = self.first_missing
                first = ("" if fm is None else
                         f" (first: scenario {fm[0]!r}, generation {fm[1]!r}, judge {', '.join(map(repr, fm[2]))})")
                raise CjstatsError(
                    f"{self.label(capital=True)} is incomplete: {d.n_missing} judge calls are missing in {n_bad} "
                    f"(scenario, generation) cells{first}. Pass incomplete='drop' to keep only complete cells, or use "
                    f"method='reml' (what method='auto', the command line's default, chooses for an incomplete "
                    f"table).")
            if full.size == 0:
                raise CjstatsError(f"{self.label(capital=True)} has no (scenario, generation) cell that every judge "
                                   f"scored, so incomplete='drop' leaves nothing. Use method='reml'.")
            s = int(full[0])
            pf = self.pat
            m_per = self.cnt_is[:, s] if pf is None else pf.cnt[:, s]
            kept = m_per[m_per > 0]
            if not (kept == kept[0]).all():
                raise CjstatsError(f"After dropping incomplete cells, {self.label()} has {int(kept.min())} to "
                                   f"{int(kept.max())} complete generations per scenario: the ANOVA needs the same "
                                   f"number in every scenario. Use method='reml'.")
            n_drop = int((m_per == 0).sum()) if pf is None else int(pf.n[m_per == 0].sum())
            dropped = {"dropped_rows": int(self.n_obs - self.size_cells[s] * k), "dropped_cells": n_bad,
                       "dropped_scenarios": n_drop, **totals}
        n, m, sum_y, sum_y2 = self._class_scenario_sums(s)
        nm = n * m
        a = self.judge_sum_s[s] / nm
        t = float(a.mean())
        da = a - t
        jy = self.judge_sum_s[s] - self.dy[s] / k
        ss_w = float(self.ssw_s[s] - 2.0 * da @ jy + nm * (da @ da))
        # sum over kept scenarios of sum_c Y_c^2 is the whole class's YY_h: every cell of the class is kept
        ss_g = float(self.yyc[s] / k - sum_y2 / (m * k))
        # SS_S = mK sum_i (Y_i/(mK) - t)^2 from the sums of Y_i and Y_i^2 over the kept scenarios
        judge_means = self.shift + a
        dj = judge_means - judge_means.mean()
        ms = MeanSquares(
            n=n, m=m, k=k, grand_mean=float(self.shift.mean() + t), judge_means=judge_means,
            ss_scenario=float(m * k * (sum_y2 / (m * k) ** 2 - 2.0 * t * sum_y / (m * k) + n * t * t)),
            ss_generation=max(ss_g, 0.0), ss_judge=float(nm * (dj @ dj)),
            ss_residual=ss_w,
        )
        return ms, dropped


def merge_stats(*parts: CellStats) -> CellStats:
    """Statistics of the union of chunks of one unit split by scenario (no scenario in two chunks).

    Judges are aligned by label (a chunk without some judge contributes zero counts for it), size classes by
    size, and every chunk is re-centred to the pooled judge means before the sums are added, so the result
    equals :func:`~cjstats.stats.build_stats` on the whole table up to rounding (about 1e-12 relative).

    When some chunk is in the pattern form (``pat``), the result is too: every chunk's patterns (a per-scenario
    chunk grouped first) are placed on the merged size classes and judges and grouped again, counts and moments
    added. Such chunks keep no scenario labels, so that no scenario is in two chunks is then the caller's promise
    (it is not checked), and the first cells are the smallest labels.
    """
    if not parts:
        raise CjstatsError("merge_stats needs at least one CellStats.")
    key = parts[0].key
    for p in parts[1:]:
        if p.key != key:
            raise CjstatsError(f"merge_stats merges chunks of one unit; got {parts[0].label()} and {p.label()}.")
    if len(parts) == 1:
        return parts[0]
    labels = sorted(set().union(*(p.judge_labels for p in parts)))
    k = len(labels)
    sizes = np.unique(np.concatenate([p.sizes for p in parts]))
    n_s = len(sizes)
    pattern = any(p.pat is not None for p in parts)
    if pattern and any(p.cov is not None for p in parts):
        raise CjstatsError("merge_stats cannot merge covariate statistics (per scenario) into the pattern form; "
                           "build every chunk with per-scenario arrays.")
    scen = np.concatenate([np.asarray(p.scenario_labels, dtype=object) for p in parts if p.pat is None])
    if not pattern and len(set(scen.tolist())) != len(scen):
        dup = next(x for x in scen.tolist() if scen.tolist().count(x) > 1)
        raise CjstatsError(f"merge_stats merges chunks split by scenario, but scenario {dup!r} is in two chunks; "
                           f"split the table by scenario.")
    # pooled judge means as the common centring
    tot_n = np.zeros(k)
    tot_s = np.zeros(k)
    expanded = []
    for p in parts:
        jidx = np.array([labels.index(lab) for lab in p.judge_labels], dtype=np.int64)
        sidx = np.searchsorted(sizes, p.sizes)
        expanded.append((p, jidx, sidx))
        tot_n[jidx] += p.judge_n
        tot_s[jidx] += p.judge_n * p.shift + p.judge_sum
    shift = tot_s / np.where(tot_n > 0, tot_n, 1.0)
    acc = {name: np.zeros(shape) for name, shape in (
        ("dd", (n_s, k, k)), ("dy", (n_s, k)), ("yyc", (n_s,)), ("judge_n_s", (n_s, k)), ("judge_sum_s", (n_s, k)),
        ("yy_s", (n_s,)), ("ssw_s", (n_s,)), ("size_cells", (n_s,)), ("judge_n", (k,)), ("judge_sum", (k,)))}
    per_scen = {"s_isk": [], "cnt_is": [], "ys": []}
    per_pat: dict[str, list[np.ndarray]] = {}
    yy = 0.0
    recentred = []
    for p, jidx, sidx in expanded:
        q = p.recentre(shift[jidx])
        recentred.append((q, jidx, sidx))
        acc["dd"][np.ix_(sidx, jidx, jidx)] += q.dd
        acc["dy"][np.ix_(sidx, jidx)] += q.dy
        acc["yyc"][sidx] += q.yyc
        acc["judge_n_s"][np.ix_(sidx, jidx)] += q.judge_n_s
        acc["judge_sum_s"][np.ix_(sidx, jidx)] += q.judge_sum_s
        acc["yy_s"][sidx] += q.yy_s
        acc["ssw_s"][sidx] += q.ssw_s
        acc["size_cells"][sidx] += q.size_cells
        acc["judge_n"][jidx] += q.judge_n
        acc["judge_sum"][jidx] += q.judge_sum
        yy += q.yy
        if pattern:   # the chunk's patterns on the merged classes and judges
            pf = q.pattern_form
            n_p = pf.n.shape[0]
            cnt, s_pk, y1, y2 = (np.zeros((n_p, n_s)), np.zeros((n_p, n_s, k)), np.zeros((n_p, n_s)),
                                 np.zeros((n_p, n_s, n_s)))
            cnt[:, sidx] = pf.cnt
            s_pk[np.ix_(np.arange(n_p), sidx, jidx)] = pf.s
            y1[:, sidx] = pf.y1
            y2[np.ix_(np.arange(n_p), sidx, sidx)] = pf.y2
            for name, arr in (("n", pf.n), ("cnt", cnt), ("s", s_pk), ("y1", y1), ("y2", y2)):
                per_pat.setdefault(name, []).append(arr)
            continue
        n_p = q.n_scenarios
        s_isk = np.zeros((n_p, n_s, k))
        s_isk[np.ix_(np.arange(n_p), sidx, jidx)] = q.s_isk
        for name, arr in (("cnt_is", q.cnt_is), ("ys", q.ys)):
            out = np.zeros((n_p, n_s))
            out[:, sidx] = arr
            per_scen[name].append(out)
        per_scen["s_isk"].append(s_isk)
    if pattern:
        pat = {name: np.concatenate(v, axis=0) for name, v in per_pat.items()}
        codes, first_p = pattern_codes(pat["cnt"], pat["s"])
        n_u = first_p.shape[0]

        def add(a: np.ndarray) -> np.ndarray:
            out = np.zeros((n_u,) + a.shape[1:])
            np.add.at(out, codes, a)
            return out

        examples = [x for p in parts for x in p.pattern_form.examples]
        try:
            examples = sorted(examples)
        except TypeError:
            pass
        pf = ScenarioPatternForm(n=add(pat["n"]), cnt=pat["cnt"][first_p], s=pat["s"][first_p], y1=add(pat["y1"]),
                                 y2=add(pat["y2"]), n_scenarios=sum(p.n_scenarios for p in parts),
                                 examples=tuple(examples[:5]))
        cat = {"s_isk": None, "cnt_is": None, "ys": None}
        order = None
        scen = None
        m_per = pf.generations.astype(np.int64)
        s_all = pf.s
    else:
        pf = None
        cat = {name: np.concatenate(v, axis=0) for name, v in per_scen.items()}
        try:
            order = np.argsort(scen, kind="stable")
        except TypeError:  # unorderable labels: keep the chunks' order
            order = np.arange(len(scen))
        cat = {name: v[order] for name, v in cat.items()}
        scen = scen[order]
        m_per = cat["cnt_is"].sum(axis=1).astype(np.int64)
        s_all = cat["s_isk"]
    n_obs = sum(int(p.n_obs) for p in parts)
    n_cells = sum(int(p.n_cells) for p in parts)
    complete = bool(np.all(sizes == k))
    d0 = parts[0].design
    design = GroupDesign.from_counts(
        model=d0.model, criterion=d0.criterion, n_rows=n_obs, n_scenarios=sum(p.n_scenarios for p in parts),
        m_per=m_per, judges=tuple(labels), n_cells=n_cells, complete=complete,
        n_duplicates=sum(int(p.design.n_duplicates) for p in parts),
    )
    first_missing = None
    if pattern:   # no merged order of the scenarios: the smallest label comes first
        pos = _LabelOrder()
    else:
        pos = {lab: i for i, lab in enumerate(scen.tolist())}
    if not complete:
        cands = []
        for p in parts:
            absent = tuple(lab for lab in labels if lab not in p.judge_labels)
            if absent:
                fm = p.first_missing
                cell = p.first_cell if fm is None or pos[fm[0]] > pos[p.first_cell[0]] else (fm[0], fm[1])
                extra = () if fm is None or (fm[0], fm[1]) != cell else fm[2]
                cands.append((pos[cell[0]], (cell[0], cell[1], tuple(sorted(set(absent) | set(extra))))))
            elif p.first_missing is not None:
                cands.append((pos[p.first_missing[0]], p.first_missing))
        first_missing = min(cands, key=lambda c: c[0])[1] if cands else None
    first = min(parts, key=lambda p: pos[p.first_cell[0]])
    # the scenario x judge statistics merge when every chunk has them (a chunk's judges placed among the unit's),
    # and are kept where the merged unit identifies the term, as the numpy engine keeps them
    sj = None
    if all(p.sj is not None for p in parts) and scenario_judge_pairs(s_all) >= 2:
        sj = merge_sj_stats([p.sj for p in parts], shift, judges=[jidx for _, jidx, _ in expanded])
    # the covariate statistics merge when every chunk has the same covariates (re-centred to their pooled means)
    cov = None if pattern else merge_covariate_stats(recentred, k, n_s, order)
    # the per-pattern counts merge when every chunk has them (each chunk has one generation per scenario, so the
    # unit has too): patterns added, each chunk's scenarios placed at their positions in the merged order
    patterns = None
    if not pattern and all(p.patterns is not None for p in parts):
        where = np.empty(len(order), dtype=np.int64)
        where[order] = np.arange(len(order))
        bounds = np.cumsum([0] + [p.n_scenarios for p in parts])
        patterns = merge_patterns([p.patterns for p in parts], [jidx for _, jidx, _ in expanded], k,
                                  [where[bounds[i]:bounds[i + 1]] for i in range(len(parts))])
    return CellStats(
        model=parts[0].model, criterion=parts[0].criterion, scenario_labels=scen, judge_labels=tuple(labels),
        design=design, shift=shift, n_obs=n_obs, n_cells=n_cells, sizes=sizes, yy=float(yy),
        y_min=min(p.y_min for p in parts), y_max=max(p.y_max for p in parts), first_cell=first.first_cell,
        first_missing=first_missing, sj=sj, cov=cov, patterns=patterns, pat=pf, **acc, **cat,
    )


class _LabelOrder:
    """``pos[label]`` is the label itself: orders the first cells of pattern-form chunks by their labels."""

    def __getitem__(self, label: Any) -> Any:
        return label
