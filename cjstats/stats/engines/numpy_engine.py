"""The numpy engine: one O(rows) pass over one unit's rows gives its :class:`~cjstats.stats.CellStats`.

The arithmetic follows the structured REML's reduction step for step (judge means as the centring, cell sums
by ``bincount``, per-class products by matrix products), so the REML view of these statistics is the same
numbers, bit for bit, as reducing the rows inside the backend.

A complete unit (every cell scored once by every judge: ``design.complete``) is read as the (cells x K) matrix
of its scores, since its rows are sorted by cell and then judge. Its counts are known without counting
(D_c = 1 for every cell, one size class h = K), and its sums are taken over the matrix's axes in the order
``bincount`` adds the rows (row by row for the per-judge sums, judge by judge for the cell sums), so the
statistics are the same floating-point numbers as the general route's, without gathering per-row codes.
"""

from __future__ import annotations

import numpy as np

from cjstats.io.scores import GroupData
from cjstats.stats.cellstats import CellStats, class_order, size_class_products, sumprod
from cjstats.stats.scenario_judge import build_sj_stats, scenario_judge_pairs

__all__ = ["unit_stats", "unit_patterns"]


def unit_patterns(g: GroupData):
    """The per-pattern counts of one unit with one generation per scenario (:mod:`cjstats.stats.ordinal`: the
    sufficient statistics of the cumulative link model), or None when some scenario has several generations."""
    from cjstats.stats.ordinal import patterns_from_rows

    if int(g.design.generations_max) != 1:
        return None
    return patterns_from_rows(g.y, g.scenario, g.judge, g.design.n_scenarios, g.design.n_judges)


def unit_stats(g: GroupData, *, scenario_judge: bool = True, chunk: bool = False) -> CellStats:
    """Reduce the rows of one unit to its sufficient statistics (see :mod:`cjstats.stats.cellstats`).

    ``scenario_judge`` builds the scenario x judge statistics (``CellStats.sj``) where the term is identifiable
    (some judge scored two generations of a scenario). ``chunk=True`` builds them whatever the rows identify: the
    rows are a chunk of the unit (split by scenario, :func:`cjstats.stats.merge_stats`) and another chunk may
    identify the term.
    """
    y = np.asarray(g.y, dtype=np.float64)
    cell_scen = np.asarray(g.cell_scenario, dtype=np.int64)
    k = g.design.n_judges
    n_cells = int(cell_scen.shape[0])
    if g.design.complete and k >= 1 and y.shape[0] == n_cells * k:
        return _complete_unit(g, y, cell_scen, k, scenario_judge, chunk)
    return _general_unit(g, y, cell_scen, k, scenario_judge, chunk)


def _complete_unit(g: GroupData, y: np.ndarray, cell_scen: np.ndarray, k: int,
                   scenario_judge: bool = True, chunk: bool = False) -> CellStats:
    """:func:`unit_stats` of a complete unit: its rows are the (cells x K) matrix Y (module docstring).

    With Y0 = Y - shift (shift_l = the judge means, sum_c Y_cl / C): the cell sums Y_c are Y0 1 (added judge by
    judge, as ``bincount`` adds a cell's rows), D_c = 1, DD = C 1 1', DY = (sum_c Y_c) 1, one size class h = K,
    S_isk = m_i 1 (m_i the cells of scenario i) and the within-cell deviations Y0 - (Y_c / K) 1'.
    """
    judge = np.asarray(g.judge, dtype=np.int64)
    n_cells = int(cell_scen.shape[0])
    n_scen = int(cell_scen.max()) + 1
    judge_n = np.full(k, float(n_cells))
    shift = np.bincount(judge, weights=y, minlength=k) / judge_n
    y0c = y.reshape(n_cells, k) - shift                    # = y - shift[judge]: row c*K + l is judge l of cell c
    y0 = y0c.reshape(-1)
    ysum = y0c[:, 0].copy()
    for j in range(1, k):                                  # the cell's rows in judge order, as bincount adds them
        ysum += y0c[:, j]
    dy, yyc = size_class_products(ysum, None, None, 1, k)
    per = np.bincount(cell_scen, minlength=n_scen).astype(np.float64)   # cells of each scenario
    judge_sum = np.bincount(judge, weights=y0, minlength=k)
    yy = sumprod(y0, y0)
    yw = (y0c - (ysum / k)[:, None]).reshape(-1)
    sj = None
    if scenario_judge and (chunk or n_cells > n_scen):   # two generations of a scenario: every judge scored both
        m = n_cells // n_scen
        if n_cells == n_scen * m and bool((per == m).all()):   # balanced: sum the (n, m, K) cube over generations
            scen_judge = np.einsum("imk->ik", y0c.reshape(n_scen, m, k))
        else:
            scen_judge = np.stack([np.bincount(cell_scen, weights=y0c[:, j], minlength=n_scen) for j in range(k)],
                                  axis=1)
        sj = build_sj_stats(y0, None, None, cell_scen, k, shift, ysum=ysum, scen_judge=scen_judge, complete=True)
    return CellStats(
        model=g.model, criterion=g.criterion, scenario_labels=np.asarray(g.scenario_labels),
        judge_labels=tuple(g.judge_labels), design=g.design, shift=shift, n_obs=int(y.shape[0]), n_cells=n_cells,
        sizes=np.array([float(k)]), size_cells=np.array([float(n_cells)]), dd=np.full((1, k, k), float(n_cells)),
        dy=dy, yyc=yyc, judge_n_s=judge_n[None, :].copy(), judge_sum_s=judge_sum[None, :].copy(),
        yy_s=np.array([yy]), ssw_s=np.array([sumprod(yw, yw)]),
        s_isk=np.repeat(per[:, None], k, axis=1)[:, None, :], cnt_is=per[:, None].copy(), ys=np.bincount(
            cell_scen, weights=ysum, minlength=n_scen)[:, None],
        judge_n=judge_n, judge_sum=judge_sum, yy=yy,
        y_min=float(y.min()), y_max=float(y.max()),
        first_cell=(g.scenario_labels[cell_scen[0]], g.cell_generation_labels[0]),
        first_missing=None, sj=sj,
    )


def _general_unit(g: GroupData, y: np.ndarray, cell_scen: np.ndarray, k: int,
                  scenario_judge: bool = True, chunk: bool = False) -> CellStats:
    """:func:`unit_stats` of any unit, by ``bincount`` over the rows' cell and judge codes."""
    cell = np.asarray(g.cell, dtype=np.int64)
    judge = np.asarray(g.judge, dtype=np.int64)
    n_cells = int(cell_scen.shape[0])
    n_scen = int(cell_scen.max()) + 1
    d_int = np.bincount(judge * n_cells + cell, minlength=n_cells * k).reshape(k, n_cells)   # D' (K x cells)
    cell_n = d_int.sum(axis=0)                          # calls per cell (exact integers)
    present = np.bincount(cell_n)                       # O(cells), no sort: sizes are small integers
    sizes = np.flatnonzero(present)
    n_s = sizes.shape[0]
    if n_s == 1:
        cell_size_idx = np.zeros(n_cells, dtype=np.int64)
    else:
        lookup = np.zeros(present.shape[0], dtype=np.int64)
        lookup[sizes] = np.arange(n_s)
        cell_size_idx = lookup[cell_n]
    d_t = d_int.astype(np.float64)
    by_class = class_order(cell_size_idx, n_s)
    order, bounds = by_class
    d_sorted = d_t if order is None else d_t[:, order]  # one block of cells per size class
    dd = np.empty((n_s, k, k))
    judge_n_s = np.empty((n_s, k))
    for s in range(n_s):
        blk = d_sorted[:, bounds[s]:bounds[s + 1]]
        dd[s] = blk @ blk.T
        judge_n_s[s] = blk.sum(axis=1)
    key = cell_scen * n_s + cell_size_idx
    s_isk = np.stack([np.bincount(key, weights=d_t[j], minlength=n_scen * n_s) for j in range(k)], axis=1)
    cnt = np.bincount(key, minlength=n_scen * n_s).astype(np.float64)
    judge_n = judge_n_s.sum(axis=0)
    shift = np.bincount(judge, weights=y, minlength=k) / judge_n
    y0 = y - shift[judge]
    ysum = np.bincount(cell, weights=y0, minlength=n_cells)
    dy, yyc = size_class_products(ysum if order is None else ysum[order], d_sorted, None, n_s, k,
                                  by_class=(None, bounds))   # the cells already sorted by class
    ys = np.bincount(key, weights=ysum, minlength=n_scen * n_s)
    judge_sum = np.bincount(judge, weights=y0, minlength=k)
    yy = sumprod(y0, y0)
    yw = y0 - (ysum / cell_n)[cell]
    if n_s == 1:                                       # one size class: no per-row keys
        judge_sum_s = judge_sum[None, :].copy()
        yy_s, ssw_s = np.array([yy]), np.array([sumprod(yw, yw)])
    else:
        row_size = cell_size_idx[cell]
        judge_sum_s = np.bincount(row_size * k + judge, weights=y0, minlength=n_s * k).reshape(n_s, k)
        yy_s = np.bincount(row_size, weights=y0 * y0, minlength=n_s)
        ssw_s = np.bincount(row_size, weights=yw * yw, minlength=n_s)
    first_missing = None
    if not g.design.complete:
        c = int(np.argmax((d_int == 0).any(axis=0)))
        first_missing = (g.scenario_labels[cell_scen[c]], g.cell_generation_labels[c],
                         tuple(g.judge_labels[j] for j in np.flatnonzero(d_int[:, c] == 0)))
    s_isk = s_isk.reshape(n_scen, n_s, k)
    sj = None
    if scenario_judge and (chunk or scenario_judge_pairs(s_isk) >= 2):   # a judge scored two generations of one
        sj = build_sj_stats(y0, cell, judge, cell_scen, k, shift, d_cell=d_t.T, ysum=ysum)
    return CellStats(
        model=g.model, criterion=g.criterion, scenario_labels=np.asarray(g.scenario_labels),
        judge_labels=tuple(g.judge_labels), design=g.design, shift=shift, n_obs=int(y.shape[0]), n_cells=n_cells,
        sizes=sizes.astype(np.float64), size_cells=np.bincount(cell_size_idx, minlength=n_s).astype(np.float64),
        dd=dd, dy=dy, yyc=yyc, judge_n_s=judge_n_s, judge_sum_s=judge_sum_s, yy_s=yy_s, ssw_s=ssw_s,
        s_isk=s_isk, cnt_is=cnt.reshape(n_scen, n_s), ys=ys.reshape(n_scen, n_s),
        judge_n=judge_n, judge_sum=judge_sum, yy=yy,
        y_min=float(y.min()), y_max=float(y.max()),
        first_cell=(g.scenario_labels[cell_scen[0]], g.cell_generation_labels[0]),
        first_missing=first_missing, sj=sj,
    )


# ------------------------------------------------------------------ the engine protocol (cjstats.stats.engines)
__all__ += ["build", "chunk_stats"]


def build(source: object, *, unit: tuple[str, ...] = ("model", "criterion"),
          terms: tuple[str, ...] | None = None, covariates: tuple[str, ...] | list[str] | None = None,
          likelihood: str = "gaussian") -> object:
    """The engine protocol's ``build``: :func:`unit_stats` of every analysis unit of a table in memory.

    ``source`` is a :class:`~cjstats.io.scores.Scores` or a DataFrame (validated by
    :func:`cjstats.read_scores`); ``unit`` is ``("model", "criterion")`` (the criterion ignored when the table has
    none) or ``("model",)`` (refused for a table with a criterion column: pooling criteria would mix scales).
    ``terms`` (the model's terms, ``cjstats.results.model.TERMS`` names; None: every term it can) leaves out the
    statistics of a term the model does not have (the scenario x judge sums). ``covariates`` (numeric item columns
    of the DataFrame, one value per model x scenario x generation) add each unit's covariate statistics
    (``CellStats.cov``, :mod:`cjstats.stats.covariates`). ``likelihood="cumulative"`` adds the per-pattern counts
    of each unit with one generation per scenario (``CellStats.patterns``, :func:`unit_patterns`). Returns the
    :class:`~cjstats.stats.ScoreStats` of the units, in the table's order.
    """
    return _build(source, unit=unit, terms=terms, covariates=covariates, chunk=False, likelihood=likelihood)


def chunk_stats(source: object, *, unit: tuple[str, ...] = ("model", "criterion"),
                terms: tuple[str, ...] | None = None, covariates: tuple[str, ...] | list[str] | None = None,
                likelihood: str = "gaussian") -> object:
    """:func:`build` of a chunk of a table split by scenario, to be added up by :func:`cjstats.stats.merge_stats`
    (the Dask engine's partitions): the scenario x judge statistics are built for every unit when ``terms`` has the
    term, identifiable in the chunk or not, since the whole unit may identify it (``merge_stats`` drops them
    where the merged unit does not)."""
    return _build(source, unit=unit, terms=terms, covariates=covariates, chunk=True, likelihood=likelihood)


def _build(source: object, *, unit: tuple[str, ...], terms: tuple[str, ...] | None,
           covariates: tuple[str, ...] | list[str] | None, chunk: bool, likelihood: str = "gaussian") -> object:
    import dataclasses

    import pandas as pd

    from cjstats.exceptions import CjstatsError
    from cjstats.io.read import read_scores
    from cjstats.io.scores import Scores
    from cjstats.stats.covariates import cell_values
    from cjstats.stats.scorestats import ScoreStats

    values = None
    if covariates is not None:   # read from the raw table (read_scores keeps only the score columns)
        values, keys = cell_values(source, covariates)
    if isinstance(source, pd.DataFrame):
        source = read_scores(source)
    if not isinstance(source, Scores):
        raise CjstatsError(f"build_stats takes a Scores table (from read_scores) or a DataFrame. "
                           f"Got {type(source).__name__} instead.")
    unit = tuple(unit)
    if unit == ("model",) and source.has_criterion:
        raise CjstatsError("The 'unit' argument of build_stats is ('model',) but the table has a 'criterion' "
                           "column; pass unit=('model', 'criterion') or drop the column.")
    sj = terms is None or "scenario_judge" in terms
    units = tuple(unit_stats(g, scenario_judge=sj, chunk=chunk) for g in source.groups())
    if likelihood == "cumulative":
        units = tuple(dataclasses.replace(u, patterns=unit_patterns(g)) for g, u in zip(source.groups(), units))
    if values is not None:
        units = tuple(dataclasses.replace(u, cov=_unit_covariates(g, u, values, keys))
                      for g, u in zip(source.groups(), units))
    return ScoreStats(units=units, has_criterion=source.has_criterion, design=source.design, unit=unit,
                      engine="numpy")


def _unit_covariates(g: GroupData, u: CellStats, values: object, keys: list[str]) -> object:
    """The covariate statistics of one unit: each of its cells' covariates looked up by (model, scenario[,
    generation]) label, then :func:`cjstats.stats.covariates.unit_covariate_stats`."""
    import pandas as pd

    from cjstats.stats.covariates import lookup, unit_covariate_stats

    cell_scen = np.asarray(g.cell_scenario, dtype=np.int64)
    cells = pd.DataFrame({"model": g.model, "scenario": np.asarray(g.scenario_labels)[cell_scen],
                          "generation": np.asarray(g.cell_generation_labels)})
    x_cell = lookup(values, keys, cells)
    judge = np.asarray(g.judge, dtype=np.int64)
    y0 = np.asarray(g.y, dtype=np.float64) - u.shift[judge]
    return unit_covariate_stats(tuple(values.columns), x_cell, np.asarray(g.cell, dtype=np.int64), judge, y0,
                                cell_scen, u.sizes, len(u.judge_labels))
