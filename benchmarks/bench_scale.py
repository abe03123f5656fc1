"""Benchmark: read, statistics, anova and REML at 1e5 .. 1e8 rows, per engine, with time and peak memory.

Each (rows, engine) runs in a fresh Python process (so its peak resident memory, which includes DuckDB's and
Dask's allocations in that process, is its own) on Parquet written by ``make_scale_data.py``:

- numpy:  ``read_scores(file)`` (read), ``build_stats(scores)`` (statistics);
- duckdb: ``build_stats(glob, engine="duckdb", memory_limit=...)`` (read and statistics in one, rows stay in
  DuckDB);
- dask:   ``build_stats(glob, engine="dask")`` on dask's local threads (read, shuffle and statistics);

then ``estimate(stats, "anova")`` and ``estimate(stats, "reml")`` from the statistics. Times are wall seconds.

With ``--groupby`` the duckdb child first times one plain DuckDB ``GROUP BY (model, scenario, generation)`` pass
(count and sum of the score, read to the end) over the same files under the same memory limit, a floor for any
engine that must read every row once; the line then also gives (statistics + fits) / that pass (issue 34's
ratio, goal <= 2). The pass runs before the statistics in the same process, so the peak memory is the larger
of the two (the pass alone stays near DuckDB's limit plus the interpreter).

Run:  .venv/bin/python benchmarks/bench_scale.py --rows 100000 1000000 10000000 --engines numpy duckdb dask
      [--data /tmp/cj_scale] [--memory-limit 1GB] [--files 4] [--groupby] [--scenarios auto|each|patterns]
      [--integer]   (scores rounded to integers: make_scale_data.py --integer)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
import cjstats as cj
from cjstats.stats import build_stats
glob, engine, limit, methods, scen = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(","), sys.argv[6]
out = {}
if engine == "duckdb" and sys.argv[5] == "1":
    from cjstats.stats.engines.duckdb_engine import connect
    con = connect(memory_limit=limit)
    t = time.perf_counter()
    con.execute(f"SELECT count(*), sum(s) FROM (SELECT model, scenario, generation, count(*) AS n, sum(score) AS s "
                f"FROM read_parquet('{glob}') GROUP BY model, scenario, generation)").fetchall()
    out["groupby"] = time.perf_counter() - t
    con.close()
    out["groupby_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
if engine == "numpy":
    import pandas as pd
    from pathlib import Path
    files = sorted(Path(glob).parent.glob(Path(glob).name))
    scores = cj.read_scores(files[0]) if len(files) == 1 else cj.read_scores(pd.concat(map(pd.read_parquet, files)))
    out["read"] = time.perf_counter() - t
    t = time.perf_counter()
    st = build_stats(scores)
elif engine == "duckdb":
    st = build_stats(glob, engine="duckdb", memory_limit=limit, scenarios=scen)
else:
    st = build_stats(glob, engine="dask")
out["stats"] = time.perf_counter() - t
out["stats_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
for method in methods:
    t = time.perf_counter()
    cj.estimate(st, method)
    out[method] = time.perf_counter() - t
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from make_scale_data import write

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--engines", nargs="+", default=["numpy", "duckdb", "dask"])
    ap.add_argument("--data", type=Path, default=Path("/tmp/cj_scale"))
    ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--files", type=int, default=1)
    ap.add_argument("--methods", default="anova,reml", help="comma-separated backends to fit (anova,reml)")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--groupby", action="store_true",
                    help="duckdb: also time one plain GROUP BY pass over the files and print the ratio")
    ap.add_argument("--scenarios", default="auto", choices=("auto", "each", "patterns"),
                    help="duckdb: per-scenario arrays or their pattern form (build_stats(..., scenarios=))")
    ap.add_argument("--integer", action="store_true", help="integer scores (make_scale_data.py --integer)")
    args = ap.parse_args()
    print(f"{'rows':>11} {'engine':>7} {'read':>7} {'stats':>7} {'anova':>7} {'reml':>7} {'total':>7} "
          f"{'peak MB (stats)':>16} {'peak MB (all)':>14}")
    for rows in args.rows:
        stem = f"scores-{'int-' if args.integer else ''}{rows}"
        if not list(args.data.glob(f"{stem}-*.parquet")):
            write(rows, args.data, args.files, args.integer)
        glob = str(args.data / f"{stem}-*.parquet")
        for engine in args.engines:
            t = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", _CHILD, glob, engine, args.memory_limit, args.methods,
                                "1" if args.groupby else "0", args.scenarios], capture_output=True,
                               text=True, timeout=args.timeout)
            wall = time.perf_counter() - t
            found = [line for line in r.stdout.splitlines() if line.startswith("{")]
            if r.returncode != 0 or not found:
                last = (r.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"{rows:>11,} {engine:>7} failed (exit {r.returncode}): {last}")
                continue
            o = json.loads(found[-1])
            read = f"{o['read']:7.2f}" if "read" in o else f"{'-':>7}"
            fits = [f"{o[m]:7.3f}" if m in o else f"{'-':>7}" for m in ("anova", "reml")]
            total = o.get("read", 0.0) + o["stats"] + o.get("anova", 0.0) + o.get("reml", 0.0)
            print(f"{rows:>11,} {engine:>7} {read} {o['stats']:7.2f} {' '.join(fits)} {total:7.2f} "
                  f"{o['stats_peak_rss_mb']:16.0f} {o['peak_rss_mb']:14.0f}   (process {wall:.1f} s)", flush=True)
            if "groupby" in o:
                work = o["stats"] + o.get("anova", 0.0) + o.get("reml", 0.0)
                print(f"{'':>11} {'':>7} one GROUP BY pass {o['groupby']:.2f} s (peak {o['groupby_peak_rss_mb']:.0f} MB); "
                      f"statistics + fits {work:.2f} s = {work / o['groupby']:.1f}x the pass (goal <= 2x), "
                      f"peak {o['peak_rss_mb']:.0f} MB (goal <= 1024)", flush=True)


if __name__ == "__main__":
    main()
