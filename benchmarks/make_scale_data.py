"""Write a synthetic score table as Parquet for the scale benchmark (generated, never committed).

The layout of issue 13's measurement: 2 models, 2 generations, 5 judges and rows / 20 scenarios. DuckDB
writes the rows straight from SQL (scores = judge offset + scenario effect + generation effect + noise,
from hashes, so the same arguments give the same file), so generating 1e8 rows needs no Python memory.

With ``--integer`` the scores are rounded to integers (7 .. 13), as an LLM judge's 1-10 scores are, which the
DuckDB engine's pattern form packs into small bit fields (files ``scores-int-{rows}-*.parquet``).

Run:  .venv/bin/python benchmarks/make_scale_data.py --rows 10000000 --out /tmp/cj_scale [--files 4] [--integer]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

MODELS, GENERATIONS, JUDGES = 2, 2, 5


def write(rows: int, out: Path, files: int = 1, integer: bool = False) -> list[Path]:
    """Write ``rows`` rows as ``files`` Parquet files split by scenario under ``out`` (scores rounded to integers
    with ``integer``); returns their paths."""
    import duckdb

    out.mkdir(parents=True, exist_ok=True)
    n_scen = max(rows // (MODELS * GENERATIONS * JUDGES), 2)
    per = -(-n_scen // files)
    paths = []
    con = duckdb.connect()
    for f in range(files):
        lo, hi = f * per, min((f + 1) * per, n_scen)
        path = out / f"scores-{'int-' if integer else ''}{rows}-{f:03d}.parquet"
        # noise: sum of two uniform hashes (sd about 0.41), scenario sd about 0.58, generation sd about 0.29
        score = ("7.0 + 0.3 * j + (hash(m, s) % 2000) / 1000.0 + (hash(m, s, g) % 1000) / 1000.0 "
                 "+ ((hash(m, s, g, j) % 1000) + (hash(j, g, s, m) % 1000)) / 1000.0")
        if integer:
            score = f"round({score})"
        con.execute(f"""COPY (SELECT 'model_' || m AS model, s AS scenario, g AS generation, 'judge_' || j AS judge,
            {score} AS score
            FROM range({MODELS}) a(m), range({lo}, {hi}) b(s), range({GENERATIONS}) c(g), range({JUDGES}) d(j))
            TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)""")
        paths.append(path)
    con.close()
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path, default=Path("/tmp/cj_scale"))
    ap.add_argument("--files", type=int, default=1)
    ap.add_argument("--integer", action="store_true", help="scores rounded to integers")
    args = ap.parse_args()
    t = time.perf_counter()
    paths = write(args.rows, args.out, args.files, args.integer)
    print(f"wrote {len(paths)} file(s) under {args.out} in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
