"""The Dask engine on a two-worker LocalCluster: the numpy engine's statistics and fits, to 1e-12 relative.

Partitions are reduced on the workers by the numpy engine and merged by ``merge_stats`` (exact algebra on
sums), so only rounding separates the results (RTOL = 1e-12, see ``_scale_helpers``).
"""

from __future__ import annotations

import numpy as np
import pytest
from _scale_helpers import TABLES, assert_stats_equal, rel_close

import cjstats as cj
from cjstats.stats import build_stats

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """A LocalCluster with two single-threaded worker processes, active as the default client."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            distributed.Client(lc) as c:
        yield c


@pytest.mark.parametrize("name", sorted(TABLES))
def test_statistics_on_a_local_cluster_equal_the_numpy_engine(name, client):
    frame = TABLES[name]().reset_index(drop=True)
    got = build_stats(dd.from_pandas(frame.sample(frac=1.0, random_state=1), npartitions=4), engine="dask")
    assert_stats_equal(build_stats(frame), got)
    assert got.engine == "dask"
    if name == "balanced":  # every column of the ANOVA fit, every group and component
        a = cj.estimate(frame, "anova", scenario_judge=False).components
        b = cj.estimate(got, "anova", scenario_judge=False).components
        assert a[["model", "component"]].equals(b[["model", "component"]])
        for col in ("estimate", "std_error", "lower", "upper"):
            assert rel_close(a[col].to_numpy(float), b[col].to_numpy(float)), col


def test_a_parquet_dataset_read_by_dask_gives_the_same_fit(client, tmp_path):
    frame = TABLES["unbalanced"]()
    for i, idx in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[idx].to_parquet(tmp_path / f"part-{i}.parquet", index=False)
    a = cj.estimate(frame, "reml", scenario_judge=False).components
    b = cj.estimate(str(tmp_path / "*.parquet"), "reml", engine="dask", scenario_judge=False).components
    assert a[["model", "component"]].equals(b[["model", "component"]])
    # every column at 1e-12: REML standard errors come from the analytic Hessian (see test_duckdb_engine)
    for col in ("estimate", "std_error", "lower", "upper"):
        assert rel_close(a[col].to_numpy(float), b[col].to_numpy(float)), col
