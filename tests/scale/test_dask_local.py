"""The Dask engine without a cluster (dask's local threads): same statistics, read_scores' sentences, the extra.

Kept apart from ``test_dask_engine.py`` so that no LocalCluster client is active here.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from _scale_helpers import TABLES, assert_stats_equal

from cjstats.exceptions import CjstatsError
from cjstats.stats import build_stats

dd = pytest.importorskip("dask.dataframe")


def test_without_a_client_the_local_scheduler_gives_the_same_statistics():
    distributed = pytest.importorskip("distributed")
    with pytest.raises(ValueError):
        distributed.default_client()  # no active client: the threaded scheduler runs the partitions
    frame = TABLES["criteria"]()
    assert_stats_equal(build_stats(frame), build_stats(frame, engine="dask", npartitions=3))


def test_partitions_not_split_by_scenario_are_refused_without_shuffle():
    frame = TABLES["balanced"]()
    with pytest.raises(CjstatsError, match="is in two chunks; split the table by scenario"):
        build_stats(dd.from_pandas(frame, npartitions=3, sort=False), engine="dask", shuffle=False)


def test_bad_rows_raise_the_read_scores_sentence():
    frame = TABLES["balanced"]()
    frame.loc[5, "score"] = np.nan
    with pytest.raises(CjstatsError, match=r"Column 'score' has 1 missing \(NaN\) values \(first in row 5\)"):
        build_stats(dd.from_pandas(frame, npartitions=2), engine="dask")
    with pytest.raises(CjstatsError, match="scores has no column 'judge'"):
        build_stats(frame.drop(columns="judge"), engine="dask")


def test_dask_not_installed_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)
    with pytest.raises(CjstatsError) as info:
        build_stats(TABLES["balanced"](), engine="dask")
    assert str(info.value) == ("engine='dask' needs the dask package, which is not installed: pip install "
                               "'cjstats[scale]'.")
