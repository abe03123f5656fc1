"""Engines that reduce score rows to :class:`~cjstats.stats.CellStats`.

``ENGINES`` maps an engine name to the module that implements ``unit_stats(group) -> CellStats`` for one
analysis unit's rows (a :class:`~cjstats.io.scores.GroupData`). numpy is the only engine today; out-of-core
engines (DuckDB, Dask) produce the same statistics chunk by chunk and combine them with
:func:`cjstats.stats.merge_stats`.
"""

from __future__ import annotations

__all__ = ["ENGINES"]

#: The registry: engine name -> module implementing ``unit_stats``.
ENGINES: dict[str, str] = {"numpy": "cjstats.stats.engines.numpy_engine"}
ENGINES["duckdb"] = "cjstats.stats.engines.duckdb_engine"  # reads files itself: build(source, unit=...)
ENGINES["dask"] = "cjstats.stats.engines.dask_engine"  # partitions reduced on workers, then merge_stats
