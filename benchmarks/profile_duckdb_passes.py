"""Where the DuckDB engine's time and memory go: every query of ``build_stats(engine="duckdb")`` timed, with the
peak resident memory after it, then the REML fit; and one plain ``GROUP BY (model, scenario, generation)`` pass
over the same files first, the floor issue 34 compares against.

The connection is wrapped so that each ``execute`` is timed (queries under 50 ms are not listed); the time
between the listed queries is Python (the per-scenario arrays of ``CellStats``).

Run:  .venv/bin/python benchmarks/profile_duckdb_passes.py "/tmp/cj_scale/scores-10000000-*.parquet"
      [--memory-limit 400MB] [--no-sj] [--scenarios auto|each|patterns]
"""

from __future__ import annotations

import argparse
import resource
import time
from typing import Any


def _rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Timed:
    """A DuckDB connection whose ``execute`` records (seconds, peak MB, query head)."""

    def __init__(self, con: Any, log: list[tuple[float, float, str]]) -> None:
        self._con, self._log = con, log

    def execute(self, query: str, *args: Any) -> Any:
        t = time.perf_counter()
        out = self._con.execute(query, *args)
        self._log.append((time.perf_counter() - t, _rss(), " ".join(query.split())[:90]))
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def main() -> None:
    import cjstats as cj
    from cjstats.stats import build_stats
    from cjstats.stats.engines.duckdb_engine import connect

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("glob")
    ap.add_argument("--memory-limit", default="400MB")
    ap.add_argument("--scenarios", default="auto", choices=("auto", "each", "patterns"))
    ap.add_argument("--no-sj", action="store_true", help="terms=('scenario', 'generation'): no scenario x judge")
    args = ap.parse_args()
    con = connect(memory_limit=args.memory_limit)
    t = time.perf_counter()
    con.execute(f"SELECT count(*), sum(s) FROM (SELECT model, scenario, generation, count(*) AS n, sum(score) AS s "
                f"FROM read_parquet('{args.glob}') GROUP BY model, scenario, generation)").fetchall()
    floor = time.perf_counter() - t
    print(f"{floor:7.2f} s  peak {_rss():6.0f} MB  one plain GROUP BY pass (the floor)")
    log: list[tuple[float, float, str]] = []
    kw = {"terms": ("scenario", "generation")} if args.no_sj else {}
    kw["scenarios"] = args.scenarios
    t = time.perf_counter()
    stats = build_stats(args.glob, engine="duckdb", connection=_Timed(con, log), **kw)
    total = time.perf_counter() - t
    for sec, mb, head in log:
        if sec >= 0.05:
            print(f"{sec:7.2f} s  peak {mb:6.0f} MB  {head}")
    print(f"{total - sum(s for s, _, _ in log):7.2f} s  outside the queries (Python)")
    print(f"{total:7.2f} s  peak {_rss():6.0f} MB  statistics in all")
    t = time.perf_counter()
    cj.estimate(stats, "reml")
    reml = time.perf_counter() - t
    print(f"{reml:7.2f} s  peak {_rss():6.0f} MB  REML")
    print(f"(statistics + REML) / pass = {(total + reml) / floor:.1f}x (issue 34's goal: <= 2x, <= 1 GB)")


if __name__ == "__main__":
    main()
