"""Benchmark: what the scenario x judge statistics cost the DuckDB engine (``build_stats(..., engine="duckdb")``).

The DuckDB engine builds ``CellStats.sj`` (the per-pattern sums and scatter of z_i = (scenario sum, cell sums,
scenario x judge sums)) whenever the term is identifiable, which needs each cell's place in its scenario: the cells
are kept in a temp table, ranked in their scenario (``row_number() OVER``), summed to one z_i per scenario and then
per pattern (``cjstats/stats/engines/duckdb_engine.py``). A model without the term (``terms=("scenario",
"generation")``) skips all of it and keeps the one streaming aggregate. This times both on the same Parquet file
and prints the ratio.

Data: ``make_scale_data.py``'s layout (2 models, 2 generations, 5 judges, rows / 20 scenarios), written by DuckDB
(never committed); ``--missing 0.1`` leaves out about 10% of the judge calls (by hash), which makes many design
patterns (the unbalanced case). Each (file, terms) pair is timed ``--repeat`` times, alternating, and the median
is reported.

Run:  .venv/bin/python benchmarks/bench_duckdb_scenario_judge.py [--rows 4000000] [--repeat 3] [--threads 2]
          [--memory-limit 1GB] [--out /tmp/cj_sj_bench]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from cjstats.stats import build_stats

MODELS, GENERATIONS, JUDGES = 2, 2, 5
WITHOUT = ("scenario", "generation")


def write(rows: int, out: Path, missing: float) -> Path:
    """One Parquet file of about ``rows`` rows (fewer with ``missing``); the same arguments give the same file."""
    import duckdb

    out.mkdir(parents=True, exist_ok=True)
    path = out / f"scores-{rows}-{int(round(missing * 100))}.parquet"
    if path.exists():
        return path
    n_scen = max(rows // (MODELS * GENERATIONS * JUDGES), 2)
    keep = f"WHERE hash(j, s, g, m, 7) % 1000 >= {int(round(missing * 1000))}" if missing > 0 else ""
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT 'model_' || m AS model, s AS scenario, g AS generation, 'judge_' || j AS judge,
        7.0 + 0.3 * j + (hash(m, s) % 2000) / 1000.0 + (hash(m, s, g) % 1000) / 1000.0
            + (hash(m, s, j) % 1000) / 2000.0
            + ((hash(m, s, g, j) % 1000) + (hash(j, g, s, m) % 1000)) / 1000.0 AS score
        FROM range({MODELS}) a(m), range({n_scen}) b(s), range({GENERATIONS}) c(g), range({JUDGES}) d(j) {keep})
        TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)""")
    con.close()
    return path


def time_build(path: Path, terms, options: dict) -> tuple[float, object]:
    t = time.perf_counter()
    st = build_stats(str(path), engine="duckdb", terms=terms, **options)
    return time.perf_counter() - t, st


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory-limit", default=None)
    ap.add_argument("--out", type=Path, default=Path("/tmp/cj_sj_bench"))
    ap.add_argument("--missing", type=float, nargs="+", default=[0.0, 0.1])
    args = ap.parse_args()
    options = {"threads": args.threads, **({"memory_limit": args.memory_limit} if args.memory_limit else {})}
    print(f"build_stats(..., engine='duckdb'), threads={args.threads}"
          f"{', memory_limit=' + args.memory_limit if args.memory_limit else ''}; median of {args.repeat}")
    print(f"{'file':<34} {'rows':>10} {'patterns':>9} {'without sj':>11} {'with sj':>9} {'ratio':>6}")
    for missing in args.missing:
        path = write(args.rows, args.out, missing)
        time_build(path, WITHOUT, options)                 # warm the file cache and the imports
        times: dict[str, list[float]] = {"without": [], "with": []}
        st = None
        for _ in range(args.repeat):
            times["without"].append(time_build(path, WITHOUT, options)[0])
            t, st = time_build(path, None, options)
            times["with"].append(t)
        assert all(u.sj is not None for u in st), "the term is identifiable: every unit has its statistics"
        rows = sum(u.n_obs for u in st)
        patterns = sum(int(u.sj.count.shape[0]) for u in st)
        a, b = statistics.median(times["without"]), statistics.median(times["with"])
        print(f"{path.name:<34} {rows:>10,} {patterns:>9,} {a:>10.2f}s {b:>8.2f}s {b / a:>5.2f}x")


if __name__ == "__main__":
    main()
