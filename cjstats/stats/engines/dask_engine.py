r"""The Dask engine: :class:`~cjstats.stats.CellStats` from a dask DataFrame or a Parquet/CSV dataset, on a cluster.

The rows are shuffled so that every scenario of a unit lands in one partition (``DataFrame.shuffle`` on
model, [criterion] and scenario; skip it with ``shuffle=False`` when the partitions are already split by
scenario). Each partition is then validated by :func:`cjstats.read_scores` and reduced by the numpy engine on
the worker that holds it, and only the partitions' statistics travel back: O(scenarios x size classes x judges)
numbers, never rows. :func:`cjstats.stats.merge_stats` adds them up (every entry is a sum over cells, and cells
never straddle scenarios), after re-centring each chunk to the pooled judge means:

    S(whole) = sum over partitions p of S(p) re-centred, e.g. DD_h = sum_p DD_h^(p),
    DY_h = sum_p (DY_h^(p) - DD_h^(p) delta_p), delta_p = pooled judge means - shift of p,

so the statistics equal the in-memory ones to rounding (about 1e-13 relative).

The work runs on the active ``dask.distributed`` client when there is one (``Client(...)`` or
``Client("tcp://scheduler:8786")`` for a real cluster), else on dask's local threads. Bad input raises the
sentence :func:`cjstats.read_scores` raises, with the row named by the partition's index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.io import rules as R
from cjstats.stats.engines import _source as S

__all__ = ["build"]


def _import_dask() -> Any:
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as exc:
        raise CjstatsError(S.msg_not_installed("dask", "dask")) from exc
    return dask, dd


def _partition_stats(part: pd.DataFrame, unit: tuple[str, ...], covariates: tuple[str, ...] | None = None,
                     terms: tuple[str, ...] | None = None, likelihood: str = "gaussian") -> tuple[Any, ...]:
    """The numpy engine's statistics of one partition (empty tuple for an empty partition), with its covariate
    statistics when ``covariates`` are given and its scenario x judge statistics when ``terms`` has the term
    (built in every partition, since another partition may be the one that identifies it); runs on a worker."""
    from cjstats.io.read import read_scores
    from cjstats.stats.engines.numpy_engine import chunk_stats

    if len(part) == 0:
        return ()
    if covariates is not None:   # read from the partition's columns (a cell never straddles partitions)
        return tuple(chunk_stats(part.reset_index(drop=True), unit=tuple(unit), terms=terms, covariates=covariates,
                                 likelihood=likelihood))
    return tuple(chunk_stats(read_scores(part), unit=tuple(unit), terms=terms, likelihood=likelihood))


def _as_dask(source: Any, dd: Any, npartitions: int | None) -> Any:
    if hasattr(source, "dask") and hasattr(source, "map_partitions"):  # a dask DataFrame already
        return source
    src = S.resolve(source)
    if src.kind == "frame":
        return dd.from_pandas(src.frame, npartitions=npartitions or 2, sort=False)
    files = list(src.files)
    if src.kind == "parquet":
        return dd.read_parquet(files)
    if src.kind in ("csv", "tsv"):
        return dd.read_csv(files, sep="," if src.kind == "csv" else "\t")
    return dd.read_json(files, lines=True)


def build(source: Any, *, unit: tuple[str, ...] = ("model", "criterion"), columns: Mapping[str, str] | None = None,
          shuffle: bool = True, npartitions: int | None = None, client: Any = None,
          covariates: tuple[str, ...] | None = None, terms: tuple[str, ...] | None = None,
          likelihood: str = "gaussian") -> Any:
    """Reduce a dask DataFrame (or files read by Dask) to :class:`~cjstats.stats.ScoreStats`, one partition per task.

    Parameters
    ----------
    source : dask DataFrame, pandas DataFrame, path, glob or list of paths
        The long score table (the columns of :func:`cjstats.read_scores`). Files are read with
        ``dask.dataframe.read_parquet`` / ``read_csv`` / ``read_json``; a pandas DataFrame is split into
        ``npartitions`` (default 2).
    unit : tuple of str
        ``("model", "criterion")`` or ``("model",)``, as in :func:`cjstats.stats.build_stats`.
    columns : mapping, optional
        Renames your columns to ours, as in :func:`cjstats.read_scores`.
    shuffle : bool
        Shuffle rows so that each scenario of a unit is in one partition (default). With ``False`` the
        partitions must already be split by scenario; a scenario found in two partitions raises.
    client : distributed.Client, optional
        Where to compute; by default the active client if there is one, else dask's local threads.
    covariates : tuple of str, optional
        Item covariate columns: each partition also gets its covariate statistics (checked there: numeric, one
        value per model x scenario x generation), merged by :func:`cjstats.stats.merge_stats`.
    terms : tuple of str, optional
        The model's terms (None: every term). With ``"scenario_judge"`` every partition builds its scenario x
        judge statistics and ``merge_stats`` adds them pattern by pattern (chunks split by scenario add up
        exactly); they are kept for the units that identify the term, as the numpy engine keeps them.
    likelihood : {"gaussian", "cumulative"}
        ``"cumulative"``: every partition also builds the per-pattern counts of its units with one generation per
        scenario and ``merge_stats`` adds them pattern by pattern (``CellStats.patterns``).

    Returns
    -------
    ScoreStats
        The statistics of every unit, as the numpy engine computes them on the whole table.
    """
    from cjstats.stats.cellstats import merge_stats
    from cjstats.stats.scorestats import ScoreStats

    dask, dd = _import_dask()
    ddf = _as_dask(source, dd, npartitions)
    if columns:
        R.check_mapping(columns, list(ddf.columns))
        ddf = ddf.rename(columns=dict(columns))
    found = [str(c) for c in ddf.columns]
    missing = R.missing_columns(found)
    if missing:  # a wide table (one score column per judge) is told to use judge_columns= (told by the dtypes)
        raise CjstatsError(R.msg_missing_column(missing, found, lambda: {
            str(c): pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t) for c, t in ddf.dtypes.items()}))
    has_criterion = "criterion" in found
    if tuple(unit) == ("model",) and has_criterion:
        raise CjstatsError("The 'unit' argument of build_stats is ('model',) but the table has a 'criterion' "
                           "column; pass unit=('model', 'criterion') or drop the column.")
    keep = [c for c in ("model", "criterion", "scenario", "generation", "judge", "score") if c in found]
    if covariates is not None:
        from cjstats.stats.covariates import check_source_has_columns

        check_source_has_columns(ddf, covariates)
        keep += list(covariates)
    ddf = ddf[keep]
    if shuffle and ddf.npartitions > 1:
        ddf = ddf.shuffle(on=["model"] + (["criterion"] if has_criterion else []) + ["scenario"])
    tasks = [dask.delayed(_partition_stats)(part, tuple(unit), covariates, terms, likelihood)
             for part in ddf.to_delayed()]
    if client is None:
        try:
            from distributed import default_client

            client = default_client()
        except (ImportError, ValueError):  # no distributed, or no active client: dask's local scheduler
            client = None
    parts = client.gather(client.compute(tasks)) if client is not None else dask.compute(*tasks)
    by_unit: dict[tuple[str, str | None], list[Any]] = {}
    for chunk in parts:
        for cs in chunk:
            by_unit.setdefault((cs.model, cs.criterion), []).append(cs)
    if not by_unit:
        raise CjstatsError(R.msg_empty())
    order = sorted(by_unit, key=lambda k: k[0] + ("" if k[1] is None else "\x1f" + k[1]))
    units = tuple(merge_stats(*by_unit[k]) for k in order)
    # one partition's statistics are not merged: its scenario x judge sums go where the unit does not identify them
    units = tuple(dataclasses.replace(u, sj=None) if u.sj is not None and u.max_pair_calls < 2 else u for u in units)
    design = pd.DataFrame([u.design.as_dict() for u in units])
    design["generations"] = design["generations"].astype("Int64")
    if not has_criterion:
        design = design.drop(columns="criterion")
    return ScoreStats(units=units, has_criterion=has_criterion, design=design, unit=tuple(unit), engine="dask")
