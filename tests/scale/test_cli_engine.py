"""``cjstats decompose --engine duckdb|dask``: the same components as the in-memory command, from files."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from _scale_helpers import TABLES, rel_close

from cjstats.cli import cli

pytest.importorskip("duckdb")


def _csv(result) -> pd.DataFrame:
    assert result.exit_code == 0, result.output
    return pd.read_csv(io.StringIO(result.output))


@pytest.mark.parametrize("engine", ["duckdb", "dask"])
def test_decompose_with_an_engine_prints_the_in_memory_components(runner, tmp_path, engine):
    frame = TABLES["unbalanced"]()
    for i, idx in enumerate(np.array_split(np.arange(len(frame)), 2)):
        frame.iloc[idx].to_parquet(tmp_path / f"part-{i}.parquet", index=False)
    frame.to_parquet(tmp_path / "whole.pq", index=False)
    # the paper's model: the out-of-core engines do not collect the scenario x judge statistics
    ref = _csv(runner.invoke(cli, ["decompose", str(tmp_path / "whole.pq"), "--method", "reml", "--scenario-judge",
                                   "off", "--format", "csv"]))
    args = ["decompose", str(tmp_path / "*.parquet"), "--method", "reml", "--scenario-judge", "off", "--engine", engine,
            "--format", "csv"]
    got = _csv(runner.invoke(cli, args + (["--memory-limit", "256MB"] if engine == "duckdb" else [])))
    assert ref[["model", "component"]].equals(got[["model", "component"]])
    assert rel_close(ref["estimate"].to_numpy(float), got["estimate"].to_numpy(float))


@pytest.mark.parametrize("engine", ["duckdb", "dask"])
def test_decompose_ordinal_with_an_engine_prints_the_in_memory_components(runner, tmp_path, engine):
    """One generation per scenario: --method ordinal out of core fits from the per-pattern counts, to the in-memory
    numbers."""
    from cjstats.studies.simulate import simulate_ordinal_scores

    frame = simulate_ordinal_scores(80, 1, 4, s2a=0.8, s2b=0.0, gamma=np.array([-0.3, 0.0, 0.1, 0.2]),
                                    cuts=np.array([-1.0, 0.0, 1.0]), seed=3, model="a", link="probit")
    frame = frame.drop(columns="generation").iloc[np.random.default_rng(4).random(len(frame)) > 0.1]
    for i, idx in enumerate(np.array_split(np.arange(len(frame)), 2)):
        frame.iloc[idx].to_parquet(tmp_path / f"part-{i}.parquet", index=False)
    frame.to_parquet(tmp_path / "whole.pq", index=False)
    ref = _csv(runner.invoke(cli, ["decompose", str(tmp_path / "whole.pq"), "--method", "ordinal", "--format", "csv"]))
    got = _csv(runner.invoke(cli, ["decompose", str(tmp_path / "*.parquet"), "--method", "ordinal", "--engine", engine,
                                   "--format", "csv"]))
    assert ref[["model", "component"]].equals(got[["model", "component"]])
    for col in ("estimate", "lower", "upper"):
        assert rel_close(ref[col].to_numpy(float), got[col].to_numpy(float)), col


def test_options_that_change_rows_are_one_sentence_with_an_engine(tmp_path):
    import subprocess
    import sys

    TABLES["balanced"]().to_parquet(tmp_path / "s.parquet", index=False)
    r = subprocess.run([sys.executable, "-c", "from cjstats.cli import main; main()", "decompose",
                        str(tmp_path / "s.parquet"), "--engine", "duckdb", "--duplicates", "mean"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1
    assert r.stderr == ("--duplicates mean changes rows, which --engine duckdb never loads; use --engine numpy for "
                        "it, or filter the files first.\n")
