"""The numpy engine: one O(rows) pass over one unit's rows gives its :class:`~cjstats.stats.CellStats`.

The arithmetic follows the structured REML's reduction step for step (judge means as the centring, cell sums
by ``bincount``, per-class products by matrix products), so the REML view of these statistics is the same
numbers, bit for bit, as reducing the rows inside the backend.
"""

from __future__ import annotations

import numpy as np

from cjstats.io.scores import GroupData
from cjstats.stats.cellstats import CellStats
from cjstats.stats.scenario_judge import build_sj_stats, scenario_judge_pairs

__all__ = ["unit_stats"]


def _add_rows(out: np.ndarray, key: np.ndarray, vals: np.ndarray) -> None:
    """out[key[i]] += vals[i] for every row i (one bincount per column: faster than np.add.at)."""
    for j in range(vals.shape[1]):
        out[:, j] += np.bincount(key, weights=vals[:, j], minlength=out.shape[0])


def unit_stats(g: GroupData) -> CellStats:
    """Reduce the rows of one unit to its sufficient statistics (see :mod:`cjstats.stats.cellstats`)."""
    y = np.asarray(g.y, dtype=np.float64)
    cell = np.asarray(g.cell, dtype=np.int64)
    judge = np.asarray(g.judge, dtype=np.int64)
    cell_scen = np.asarray(g.cell_scenario, dtype=np.int64)
    k = g.design.n_judges
    n_cells = int(cell_scen.shape[0])
    n_scen = int(cell_scen.max()) + 1
    cell_n = np.bincount(cell, minlength=n_cells)
    present = np.bincount(cell_n)                       # O(cells), no sort: sizes are small integers
    sizes = np.flatnonzero(present)
    n_s = sizes.shape[0]
    if n_s == 1:
        cell_size_idx = np.zeros(n_cells, dtype=np.int64)
    else:
        lookup = np.zeros(present.shape[0], dtype=np.int64)
        lookup[sizes] = np.arange(n_s)
        cell_size_idx = lookup[cell_n]
    d_cell = np.bincount(cell * k + judge, minlength=n_cells * k).reshape(n_cells, k).astype(np.float64)
    dd = np.empty((n_s, k, k))
    for s in range(n_s):
        sel = d_cell if n_s == 1 else d_cell[cell_size_idx == s]
        dd[s] = sel.T @ sel
    key = cell_scen * n_s + cell_size_idx
    s_isk = np.zeros((n_scen * n_s, k))
    _add_rows(s_isk, key, d_cell)
    cnt = np.bincount(key, minlength=n_scen * n_s).astype(np.float64)
    judge_n = np.bincount(judge, minlength=k).astype(np.float64)
    shift = np.bincount(judge, weights=y, minlength=k) / judge_n
    y0 = y - shift[judge]
    ysum = np.bincount(cell, weights=y0, minlength=n_cells)
    dy = np.empty((n_s, k))
    yyc = np.empty(n_s)
    for s in range(n_s):
        if n_s == 1:
            dy[s], yyc[s] = ysum @ d_cell, ysum @ ysum
            continue
        sel = cell_size_idx == s
        dy[s] = ysum[sel] @ d_cell[sel]
        yyc[s] = ysum[sel] @ ysum[sel]
    ys = np.bincount(key, weights=ysum, minlength=n_scen * n_s)
    judge_sum = np.bincount(judge, weights=y0, minlength=k)
    yy = float(y0 @ y0)
    yw = y0 - (ysum / cell_n)[cell]
    if n_s == 1:                                       # one size class (every balanced table): no per-row keys
        judge_n_s, judge_sum_s = judge_n[None, :].copy(), judge_sum[None, :].copy()
        yy_s, ssw_s = np.array([yy]), np.array([float(yw @ yw)])
    else:
        row_size = cell_size_idx[cell]
        rk = row_size * k + judge
        judge_n_s = np.bincount(rk, minlength=n_s * k).reshape(n_s, k).astype(np.float64)
        judge_sum_s = np.bincount(rk, weights=y0, minlength=n_s * k).reshape(n_s, k)
        yy_s = np.bincount(row_size, weights=y0 * y0, minlength=n_s)
        ssw_s = np.bincount(row_size, weights=yw * yw, minlength=n_s)
    sizes_f = sizes.astype(np.float64)
    first_missing = None
    if not g.design.complete:
        present = np.zeros((n_cells, k), dtype=bool)
        present[cell, judge] = True
        c = int(np.flatnonzero(~present.all(axis=1))[0])
        first_missing = (g.scenario_labels[cell_scen[c]], g.cell_generation_labels[c],
                         tuple(g.judge_labels[j] for j in np.flatnonzero(~present[c])))
    s_isk = s_isk.reshape(n_scen, n_s, k)
    sj = None
    if scenario_judge_pairs(s_isk) >= 2:   # some judge scored two generations of a scenario
        sj = build_sj_stats(y0, cell, judge, cell_scen, k, shift, d_cell=d_cell, ysum=ysum)
    return CellStats(
        model=g.model, criterion=g.criterion, scenario_labels=np.asarray(g.scenario_labels),
        judge_labels=tuple(g.judge_labels), design=g.design, shift=shift, n_obs=int(y.shape[0]), n_cells=n_cells,
        sizes=sizes_f, size_cells=np.bincount(cell_size_idx, minlength=n_s).astype(np.float64), dd=dd, dy=dy,
        yyc=yyc, judge_n_s=judge_n_s, judge_sum_s=judge_sum_s, yy_s=yy_s, ssw_s=ssw_s,
        s_isk=s_isk, cnt_is=cnt.reshape(n_scen, n_s), ys=ys.reshape(n_scen, n_s),
        judge_n=judge_n, judge_sum=judge_sum, yy=yy,
        y_min=float(y.min()), y_max=float(y.max()),
        first_cell=(g.scenario_labels[cell_scen[0]], g.cell_generation_labels[0]),
        first_missing=first_missing, sj=sj,
    )


# ------------------------------------------------------------------ the engine protocol (cjstats.stats.engines)
__all__ += ["build"]


def build(source: object, *, unit: tuple[str, ...] = ("model", "criterion")) -> object:
    """The engine protocol's ``build``: :func:`unit_stats` of every analysis unit of a table in memory.

    ``source`` is a :class:`~cjstats.io.scores.Scores` or a DataFrame (validated by
    :func:`cjstats.read_scores`); ``unit`` is ``("model", "criterion")`` (the criterion ignored when the table has
    none) or ``("model",)`` (refused for a table with a criterion column: pooling criteria would mix scales).
    Returns the :class:`~cjstats.stats.ScoreStats` of the units, in the table's order.
    """
    import pandas as pd

    from cjstats.exceptions import CjstatsError
    from cjstats.io.read import read_scores
    from cjstats.io.scores import Scores
    from cjstats.stats import ScoreStats

    if isinstance(source, pd.DataFrame):
        source = read_scores(source)
    if not isinstance(source, Scores):
        raise CjstatsError(f"build_stats takes a Scores table (from read_scores) or a DataFrame. "
                           f"Got {type(source).__name__} instead.")
    unit = tuple(unit)
    if unit == ("model",) and source.has_criterion:
        raise CjstatsError("The 'unit' argument of build_stats is ('model',) but the table has a 'criterion' "
                           "column; pass unit=('model', 'criterion') or drop the column.")
    units = tuple(unit_stats(g) for g in source.groups())
    return ScoreStats(units=units, has_criterion=source.has_criterion, design=source.design, unit=unit,
                      engine="numpy")
