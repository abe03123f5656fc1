"""Benchmark: the maximum-likelihood ordinal fit (``method="ordinal"``) out of core vs in memory (issue 34).

With one generation per scenario the ordinal fit reads only the per-pattern counts of each unit
(``CellStats.patterns``, ``cjstats/stats/ordinal.py``): the DuckDB engine builds them with a ``GROUP BY`` of the
pattern (only the patterns reach Python), the Dask engine by merging its partitions' counts. This times, on the
same Parquet files of about ``--rows`` rows:

- in memory: ``cj.read_scores(files)`` (the rows into Python), then ``cj.estimate(scores, "ordinal")`` (the numpy
  engine's statistics with the counts, and the fit);
- DuckDB: ``cj.estimate(glob, "ordinal", engine="duckdb")`` (statistics in DuckDB, then the fit), and its
  statistics alone (``build_stats(glob, engine="duckdb", likelihood="cumulative")``);
- Dask (``--dask``): ``cj.estimate(glob, "ordinal", engine="dask")`` on dask's local threads;

and checks that every fit's components equal the in-memory ones exactly. Each route is timed ``--repeat`` times,
alternating, and the median is reported with its ratio to the in-memory route (ratios are the figures to compare:
absolute times move with the machine's load).

Data: ``--models`` models, 4 judges, rows / (4 models) scenarios each, scores 1-5 from the probit cumulative model
(scenario variance 0.8, offsets -0.3..0.3), 5% of the judge calls left out at random; written with pandas/pyarrow
in ``--files`` files split by rows (never committed).

Run:  .venv/bin/python benchmarks/bench_ordinal_out_of_core.py [--rows 1000000] [--repeat 3] [--files 4] [--dask]
          [--out /tmp/cj_ordinal_ooc]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

import cjstats as cj
from cjstats.stats import build_stats
from cjstats.studies.simulate import simulate_ordinal_scores

JUDGES = 4


def write(rows: int, models: int, files: int, out: Path) -> str:
    """``files`` Parquet files of about ``rows`` rows; the same arguments give the same files."""
    folder = out / f"ord-{rows}-{models}-{files}"
    if not folder.exists():
        folder.mkdir(parents=True)
        n = max(rows // (models * JUDGES), 2)
        parts = [simulate_ordinal_scores(n, 1, JUDGES, s2a=0.8, s2b=0.0, gamma=np.linspace(-0.3, 0.3, JUDGES),
                                         cuts=np.array([-1.2, -0.3, 0.5, 1.3]), seed=100 + i, model=f"model_{i}",
                                         link="probit").drop(columns="generation") for i in range(models)]
        df = pd.concat(parts, ignore_index=True)
        df = df[np.random.default_rng(1).random(len(df)) > 0.05].reset_index(drop=True)
        for i, idx in enumerate(np.array_split(np.arange(len(df)), files)):
            df.iloc[idx].to_parquet(folder / f"part-{i}.parquet", index=False)
    return str(folder / "*.parquet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=2)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dask", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("/tmp/cj_ordinal_ooc"))
    args = ap.parse_args()
    glob = write(args.rows, args.models, args.files, args.out)
    files = sorted(Path(glob).parent.glob("*.parquet"))

    def in_memory():
        t = time.perf_counter()
        scores = cj.read_scores(pd.concat([pd.read_parquet(f) for f in files], ignore_index=True))
        t_read = time.perf_counter() - t
        fit = cj.estimate(scores, "ordinal")
        return {"read": t_read, "total": time.perf_counter() - t}, fit, scores

    def duckdb_route():
        t = time.perf_counter()
        fit = cj.estimate(glob, "ordinal", engine="duckdb")
        return {"total": time.perf_counter() - t}, fit, None

    def duckdb_stats():
        t = time.perf_counter()
        st = build_stats(glob, engine="duckdb", likelihood="cumulative")
        return {"total": time.perf_counter() - t}, None, st

    def dask_route():
        t = time.perf_counter()
        fit = cj.estimate(glob, "ordinal", engine="dask")
        return {"total": time.perf_counter() - t}, fit, None

    routes = {"in memory (read_scores + estimate)": in_memory, "duckdb (estimate from the glob)": duckdb_route,
              "duckdb statistics only": duckdb_stats}
    if args.dask:
        routes["dask local threads (estimate from the glob)"] = dask_route
    times: dict[str, list[dict[str, float]]] = {k: [] for k in routes}
    fits: dict[str, object] = {}
    extra: dict[str, object] = {}
    for _ in range(args.repeat):
        for name, fn in routes.items():
            t, fit, other = fn()
            times[name].append(t)
            if fit is not None:
                fits[name] = fit
            if other is not None:
                extra[name] = other
    scores = extra["in memory (read_scores + estimate)"]
    st = extra["duckdb statistics only"]
    n_rows = int(scores.design["n_rows"].sum())
    n_pat = [int(u.patterns.codes.shape[0]) for u in st.units]
    n_scen = [int(u.patterns.n_scenarios) for u in st.units]
    print(f"{n_rows:,} rows on disk in {len(files)} Parquet files; units {len(st.units)}, scenarios per unit "
          f"{n_scen}, distinct patterns per unit {n_pat} (what reaches Python out of core)")
    ref = fits["in memory (read_scores + estimate)"].components
    base = statistics.median(t["total"] for t in times["in memory (read_scores + estimate)"])
    for name, ts in times.items():
        med = statistics.median(t["total"] for t in ts)
        note = ""
        if "read" in ts[0]:
            note = f"  (of which read_scores {statistics.median(t['read'] for t in ts):.2f} s)"
        same = ""
        if name in fits and name != "in memory (read_scores + estimate)":
            c = fits[name].components
            cols = ["estimate", "std_error", "lower", "upper"]
            same = "  components identical" if np.array_equal(np.nan_to_num(c[cols].to_numpy(float)),
                                                              np.nan_to_num(ref[cols].to_numpy(float))) else \
                "  COMPONENTS DIFFER"
        print(f"{name:48s} median {med:7.2f} s  ratio to in memory {med / base:5.2f}{note}{same}")


if __name__ == "__main__":
    main()
