r"""Covariate statistics: what the judges' slopes on item covariates need, per unit, as sums over cells.

An item covariate x^(c) (answer length, say) is one value per (model, scenario, generation) cell: every judge's
row of an answer has the same value (:func:`cell_values` checks it, with the sentences of the covariate fit). The
joint REML fit with covariates (:mod:`cjstats.estimators.joint.covariates`) adds to its fixed effects, per judge l
and covariate c, the column (x^(c) - xbar_c) on judge l's rows; its nested criterion needs of those columns only
their row-level cross-products and their cell sums E_c = (x_c - xbar) (x) D_c (D_c the judge counts of cell c).
All of them are linear or quadratic in x_c, so a unit's :class:`CovariateStats` keeps, with x0 = x - ``xshift``
(a per-unit centring, the unit's mean) and y0 = y - shift[judge] (the :class:`~cjstats.stats.CellStats`
centring):

- per judge: sum x0, sum x0 x0', sum x0 y0 over its rows (``xd``, ``xxd``, ``xy``);
- per size class: sum_c x0_c (x) D_c D_c', sum_c x0_c x0_c' (x) D_c D_c', sum_c x0_c (x) D_c Y_c
  (``dxd``, ``dxxd``, ``dxy``);
- per scenario and size class: sum_c x0_c (x) D_c (``sxd``);
- the smallest and largest value of each covariate.

Changing either centring is exact algebra (:meth:`CovariateStats.recentre_y`, :meth:`CovariateStats.recentre_x`),
so chunks split by scenario merge (:func:`merge_covariate_stats`) and the joint view
(:meth:`cjstats.stats.JointStats.for_joint_slopes`) centres every model at the mean over all score rows, xbar.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError

__all__ = ["CovariateStats", "SlopeStats", "cell_values", "check_covariate_names", "unit_covariate_stats",
           "merge_covariate_stats", "KEY_COLUMNS"]

#: Columns that cannot be covariates (the keys and the score).
KEY_COLUMNS: tuple[str, ...] = ("model", "scenario", "generation", "judge", "score", "criterion")


def check_covariate_names(covariates: Any) -> tuple[str, ...]:
    """The covariate names as a tuple of str; one sentence for a bare string, an empty list or a repeated name."""
    if isinstance(covariates, str) or not len(covariates):
        raise CjstatsError("The 'covariates' argument takes a list of column names, such as ['length'].")
    names = tuple(str(c) for c in covariates)
    if len(set(names)) != len(names):
        raise CjstatsError(f"The 'covariates' argument names a column twice ({list(names)!r}); name each once.")
    return names


def check_source_has_columns(table: Any, covariates: Sequence[str]) -> None:
    """One sentence for a covariate that is not a column of ``table`` (anything with ``columns``), or a key column."""
    cols = [str(c) for c in table.columns]
    for c in covariates:
        if c not in cols:
            raise CjstatsError(f"The covariate column '{c}' is not in the score table (columns: {', '.join(cols)}).")
        if c in KEY_COLUMNS:
            raise CjstatsError(f"The covariate '{c}' is a key column of the score table; name a numeric item "
                               f"column such as 'length'.")


def cell_values(table: Any, covariates: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """The value of every covariate in each (model, scenario[, generation]) cell of the raw table ``table``, and the
    key columns: numeric columns, no missing values, constant within each cell (one sentence otherwise). The frame is
    indexed by the key labels as strings."""
    if not isinstance(table, pd.DataFrame):
        raise CjstatsError(f"covariates={list(covariates)!r} are read from the columns of the score table, but "
                           f"scores is a {type(table).__name__} (read_scores keeps only the score columns); pass "
                           f"the DataFrame that has the covariate columns.")
    covariates = list(check_covariate_names(covariates))
    keys = ["model", "scenario"] + (["generation"] if "generation" in table.columns else [])
    check_source_has_columns(table, covariates)
    for c in covariates:
        if not pd.api.types.is_numeric_dtype(table[c]) or pd.api.types.is_bool_dtype(table[c]):
            raise CjstatsError(f"The covariate column '{c}' is not numeric (dtype {table[c].dtype}); convert it "
                               f"with pd.to_numeric or code it as numbers.")
        bad = ~np.isfinite(table[c].to_numpy(np.float64))
        if bad.any():
            raise CjstatsError(f"The covariate column '{c}' has {int(bad.sum())} missing or infinite value(s) "
                               f"(first in row {int(np.flatnonzero(bad)[0])}); fill them or drop those rows.")
    raw_key = pd.MultiIndex.from_frame(table[keys].astype(str))
    per_cell = table[covariates].set_axis(raw_key).groupby(level=list(range(len(keys))))
    spread = per_cell.max() - per_cell.min()
    for c in covariates:
        varies = spread[c] > 1e-12 * max(1.0, float(np.abs(table[c]).max()))
        if varies.any():
            first = dict(zip(keys, varies[varies].index[0]))
            where = ", ".join(f"{k} '{v}'" for k, v in first.items())
            raise CjstatsError(f"The covariate column '{c}' varies within one {' x '.join(keys)} cell ({where}): "
                               f"an item covariate must be one value per answer; give every judge's row of an "
                               f"answer the same '{c}'.")
    return per_cell.first(), keys


def lookup(values: pd.DataFrame, keys: list[str], frame: pd.DataFrame) -> np.ndarray:
    """The covariates of every row of ``frame`` (a table with the key columns), (rows, C), from :func:`cell_values`."""
    key = pd.MultiIndex.from_frame(frame[keys].astype(str))
    out = values.reindex(key)
    if out.isna().to_numpy().any():
        raise CjstatsError("The covariates could not be matched to the validated score rows (the model, scenario "
                           "or generation labels changed when the table was read); pass a table whose key "
                           "columns are plain strings or integers.")
    return out.to_numpy(np.float64)


@dataclass(frozen=True, slots=True, eq=False)
class CovariateStats:
    """The covariate statistics of one unit (module docstring); K its judges, S its cell sizes, n its scenarios,
    C covariates. x0 = x - ``xshift``, y0 = y - the unit's ``shift``[judge]."""

    names: tuple[str, ...]
    xshift: np.ndarray     # (C,)
    x_min: np.ndarray      # (C,)
    x_max: np.ndarray      # (C,)
    xd: np.ndarray         # (C, K)       sum over judge l's rows of x0
    xxd: np.ndarray        # (C, C, K)    sum over judge l's rows of x0 x0'
    xy: np.ndarray         # (C, K)       sum over judge l's rows of x0 y0
    dxd: np.ndarray        # (S, C, K, K) sum_c x0_c D_c D_c'
    dxxd: np.ndarray       # (S, C, C, K, K) sum_c x0_c x0_c' D_c D_c'
    dxy: np.ndarray        # (S, C, K)    sum_c x0_c D_c Y_c
    sxd: np.ndarray        # (n, S, C, K) sum_c x0_c D_c per scenario

    def recentre_y(self, delta: np.ndarray) -> CovariateStats:
        """y0 -> y0 - delta[judge] (delta = new shift - old): Y_c -> Y_c - D_c'delta."""
        if not np.any(delta):
            return self
        return dataclasses.replace(self, xy=self.xy - self.xd * delta, dxy=self.dxy - self.dxd @ delta)

    def recentre_x(self, xshift: np.ndarray, cs: Any) -> CovariateStats:
        """x0 -> x - ``xshift`` (exact algebra), with ``cs`` the unit's :class:`~cjstats.stats.CellStats` at the same
        y centring (its ``dd``, ``dy``, ``s_isk``, ``judge_n``, ``judge_sum``)."""
        new = np.asarray(xshift, dtype=np.float64)
        d = new - self.xshift
        if not np.any(d):
            return self
        xd = self.xd - d[:, None] * cs.judge_n
        xxd = (self.xxd - d[:, None, None] * self.xd[None, :, :] - d[None, :, None] * self.xd[:, None, :]
               + np.multiply.outer(np.outer(d, d), cs.judge_n))
        dxd = self.dxd - np.einsum("c,skl->sckl", d, cs.dd)
        dxxd = (self.dxxd - np.einsum("a,sbkl->sabkl", d, self.dxd) - np.einsum("b,sakl->sabkl", d, self.dxd)
                + np.einsum("a,b,skl->sabkl", d, d, cs.dd))
        return dataclasses.replace(
            self, xshift=new, xd=xd, xxd=xxd, xy=self.xy - d[:, None] * cs.judge_sum, dxd=dxd, dxxd=dxxd,
            dxy=self.dxy - np.einsum("c,sk->sck", d, cs.dy), sxd=self.sxd - np.einsum("c,isk->isck", d, cs.s_isk))


@dataclass(frozen=True, slots=True, eq=False)
class SlopeStats:
    r"""The joint view of the covariate statistics (:meth:`cjstats.stats.JointStats.for_joint_slopes`): the slope
    columns X_e (column (c, l): x^(c) - xbar_c on judge l's rows, covariate-major, E = C K) laid out beside the
    :class:`~cjstats.stats.NestedStats` they go with (its models, judges, sizes, groups and centring of y):

    - ``gram`` (P K + E + 1)^2: [cell indicators, X_e, y]'[cell indicators, X_e, y] over the rows;
    - ``cell_aug`` (P, S, K+E+1, K+E+1): per model and cell size, sum_c [D_c; E_c; Y_c][D_c; E_c; Y_c]';
    - ``group_aug`` (G, S, K+E+1): per group and cell size, sum_c [D_c; E_c; Y_c].
    """

    names: tuple[str, ...]
    means: np.ndarray      # (C,) xbar: the means over the score rows
    x_min: np.ndarray      # (C,)
    x_max: np.ndarray      # (C,)
    n: int                 # E = C K
    gram: np.ndarray
    cell_aug: np.ndarray
    group_aug: np.ndarray


def unit_covariate_stats(names: Sequence[str], x_cell: np.ndarray, cell: np.ndarray, judge: np.ndarray,
                         y0: np.ndarray, cell_scen: np.ndarray, sizes: np.ndarray, k: int) -> CovariateStats:
    """The :class:`CovariateStats` of one unit from its rows: ``x_cell`` (cells, C) the covariates of each cell,
    ``cell``, ``judge`` and ``y0`` per row (y0 centred as the unit's CellStats), ``cell_scen`` the scenario of each
    cell and ``sizes`` the unit's cell sizes (so the size classes are the CellStats')."""
    n_cells, nc = x_cell.shape
    n_rows = cell.shape[0]
    n_scen = int(cell_scen.max()) + 1
    x_row = x_cell[cell]
    xshift = x_row.sum(axis=0) / n_rows
    x0 = x_cell - xshift
    x0r = x0[cell]
    d_t = np.bincount(judge * n_cells + cell, minlength=n_cells * k).reshape(k, n_cells).astype(np.float64)
    ysum = np.bincount(cell, weights=y0, minlength=n_cells)
    cell_n = d_t.sum(axis=0)
    s_idx = np.searchsorted(sizes, cell_n)
    n_s = sizes.shape[0]
    xd = np.stack([np.bincount(judge, weights=x0r[:, c], minlength=k) for c in range(nc)])
    xxd = np.stack([np.stack([np.bincount(judge, weights=x0r[:, a] * x0r[:, b], minlength=k) for b in range(nc)])
                    for a in range(nc)])
    xy = np.stack([np.bincount(judge, weights=x0r[:, c] * y0, minlength=k) for c in range(nc)])
    dxd = np.zeros((n_s, nc, k, k))
    dxxd = np.zeros((n_s, nc, nc, k, k))
    dxy = np.zeros((n_s, nc, k))
    for s in range(n_s):
        m = s_idx == s
        dm, xm, ym = d_t[:, m], x0[m], ysum[m]
        dxd[s] = np.einsum("na,kn,ln->akl", xm, dm, dm)
        dxxd[s] = np.einsum("na,nb,kn,ln->abkl", xm, xm, dm, dm)
        dxy[s] = np.einsum("na,kn,n->ak", xm, dm, ym)
    key = cell_scen * n_s + s_idx
    sxd = np.stack([np.stack([np.bincount(key, weights=x0[:, c] * d_t[j], minlength=n_scen * n_s) for j in range(k)],
                             axis=-1) for c in range(nc)], axis=1)                      # (n S, C, K)
    return CovariateStats(names=tuple(names), xshift=xshift, x_min=x_cell.min(axis=0), x_max=x_cell.max(axis=0),
                          xd=xd, xxd=xxd, xy=xy, dxd=dxd, dxxd=dxxd, dxy=dxy, sxd=sxd.reshape(n_scen, n_s, nc, k))


def merge_covariate_stats(parts: Sequence[tuple[Any, np.ndarray, np.ndarray]], k: int, n_s: int,
                          scen_order: np.ndarray) -> CovariateStats | None:
    """The covariate statistics of chunks of one unit (each ``(cs, jidx, sidx)``: its CellStats, already re-centred
    to the merged judge means, and where its judges and sizes sit in the merged ones), re-centred to the pooled
    covariate means and added; ``scen_order`` sorts the concatenated scenarios. None when a chunk has none."""
    covs = [cs.cov for cs, _, _ in parts]
    if any(c is None for c in covs) or len({c.names for c in covs}) != 1:
        return None
    names = covs[0].names
    nc = len(names)
    n_tot = sum(float(cs.judge_n.sum()) for cs, _, _ in parts)
    xshift = sum(c.xshift * float(cs.judge_n.sum()) + c.xd.sum(axis=1) for c, (cs, _, _) in zip(covs, parts)) / n_tot
    acc = {"xd": np.zeros((nc, k)), "xxd": np.zeros((nc, nc, k)), "xy": np.zeros((nc, k)),
           "dxd": np.zeros((n_s, nc, k, k)), "dxxd": np.zeros((n_s, nc, nc, k, k)), "dxy": np.zeros((n_s, nc, k))}
    sxd = []
    for c, (cs, jidx, sidx) in zip(covs, parts):
        q = c.recentre_x(xshift, cs)
        acc["xd"][:, jidx] += q.xd
        acc["xxd"][:, :, jidx] += q.xxd
        acc["xy"][:, jidx] += q.xy
        acc["dxd"][np.ix_(sidx, np.arange(nc), jidx, jidx)] += q.dxd
        acc["dxxd"][np.ix_(sidx, np.arange(nc), np.arange(nc), jidx, jidx)] += q.dxxd
        acc["dxy"][np.ix_(sidx, np.arange(nc), jidx)] += q.dxy
        out = np.zeros((q.sxd.shape[0], n_s, nc, k))
        out[np.ix_(np.arange(q.sxd.shape[0]), sidx, np.arange(nc), jidx)] = q.sxd
        sxd.append(out)
    return CovariateStats(names=names, xshift=xshift, x_min=np.min([c.x_min for c in covs], axis=0),
                          x_max=np.max([c.x_max for c in covs], axis=0), sxd=np.concatenate(sxd)[scen_order], **acc)
