"""The DuckDB path reduces a Parquet file larger than the memory it is allowed, so rows are never materialised.

The file (3.6 million rows, about 166 MB as an Arrow table) is written by DuckDB itself, so this process never
holds the rows either. DuckDB gets ``memory_limit='96MB'`` (DuckDB 2.0 needs more than 1.x's 64 MB for the same
aggregate; it raises "Out of Memory" rather than exceed it,
spilling its hash aggregates to ``temp_directory``), and tracemalloc bounds what Python allocates (numpy
reports its buffers to tracemalloc) to a quarter of the table: with 40 rows per scenario, what is left in Python
is O(scenarios) (about 240 bytes per scenario), not O(rows).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from cjstats.stats import build_stats

duckdb = pytest.importorskip("duckdb")
pq = pytest.importorskip("pyarrow.parquet")

N_MODELS, N_SCEN, N_GEN, N_JUDGES = 2, 45_000, 8, 5
LIMIT_MB = 96


def _write(path) -> None:
    con = duckdb.connect()
    # score = judge offset + scenario effect + noise, all from hashes: deterministic, no rows in Python
    con.execute(f"""COPY (SELECT 'model_' || m AS model, s AS scenario, g AS generation, 'judge_' || j AS judge,
        j * 0.5 + (hash(m, s) % 1000) / 250.0 + (hash(m, s, g, j) % 1000) / 500.0 AS score
        FROM range({N_MODELS}) a(m), range({N_SCEN}) b(s), range({N_GEN}) c(g), range({N_JUDGES}) d(j))
        TO '{path}' (FORMAT parquet)""")
    con.close()


def test_a_file_larger_than_the_memory_limit_is_reduced_without_materialising_rows(tmp_path):
    path = tmp_path / "big.parquet"
    _write(path)
    n_rows = N_MODELS * N_SCEN * N_GEN * N_JUDGES
    assert pq.read_metadata(path).num_rows == n_rows
    # in-memory size of the rows as Arrow: 3 x 8-byte numbers + two short strings (4-byte offset + 7 chars)
    arrow_bytes = n_rows * (3 * 8 + 2 * (4 + 7))
    assert arrow_bytes > 1.5 * LIMIT_MB * 2**20
    tracemalloc.start()
    try:
        st = build_stats(path, engine="duckdb", memory_limit=f"{LIMIT_MB}MB", temp_directory=tmp_path / "spill",
                         threads=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < arrow_bytes / 4, (peak, arrow_bytes)
    assert len(st) == N_MODELS
    for u in st:
        assert (u.n_obs, u.n_scenarios, u.design.generations, u.k) == (n_rows // N_MODELS, N_SCEN, N_GEN, N_JUDGES)
        assert u.design.balanced
        # the scenario x judge statistics are built too (by default), within the same limit: one pattern
        assert u.sj is not None and u.sj.count.tolist() == [float(N_SCEN)] and u.sj.m == N_GEN
        ms, _ = u.for_anova()
        # judge offsets are j * 0.5 by construction; their noise averages over 240k calls (sd 0.58/sqrt(240k))
        np.testing.assert_allclose(np.diff(ms.judge_means), 0.5, atol=0.01)
