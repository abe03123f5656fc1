"""Time ``read_scores`` on Parquet, CSV and a loaded DataFrame against the raw pyarrow reads (issue 13, item 1).

The data (2 models x rows/20 scenarios x 2 generations x 5 judges) are written by make_scale_data.py under
``--out`` (generated, never committed); the CSV is the same table. Each figure is the median of ``--repeat``
runs after one warm-up run. The goal: read_scores within 2x of the pyarrow floor of the same file.
read_scores builds the sorted long frame on first use (analyses read the groups), so the last rows time
``read_scores(...).to_frame()`` too.

Run:  .venv/bin/python benchmarks/bench_read.py [--rows 1000000] [--out /tmp/cj_read] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path


def _median_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--out", type=Path, default=Path("/tmp/cj_read"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import pandas as pd
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    import cjstats as cj

    sys.path.insert(0, str(Path(__file__).parent))
    from make_scale_data import write

    parquet = args.out / f"scores-{args.rows}-000.parquet"
    if not parquet.exists():
        write(args.rows, args.out)
    csv = args.out / f"scores-{args.rows}.csv"
    if not csv.exists():
        pd.read_parquet(parquet).to_csv(csv, index=False)
    frame = pd.read_parquet(parquet)

    rows = [
        ("Parquet", lambda: cj.read_scores(parquet), "pyarrow.parquet.read_table", lambda: pq.read_table(parquet)),
        ("CSV", lambda: cj.read_scores(csv), "pyarrow.csv.read_csv", lambda: pcsv.read_csv(csv)),
        ("DataFrame", lambda: cj.read_scores(frame), "-", None),
        ("Parquet + to_frame()", lambda: cj.read_scores(parquet).to_frame(), "pyarrow.parquet.read_table",
         lambda: pq.read_table(parquet)),
        ("DataFrame + to_frame()", lambda: cj.read_scores(frame).to_frame(), "-", None),
    ]
    print(f"{len(frame):,} rows, median of {args.repeat} runs (s)\n")
    print("| source | read_scores | floor | floor (s) | ratio |")
    print("|---|---|---|---|---|")
    for name, ours, floor_name, floor in rows:
        t = _median_time(ours, args.repeat)
        if floor is None:
            print(f"| {name} | {t:.3f} | - | - | - |")
            continue
        f = _median_time(floor, args.repeat)
        print(f"| {name} | {t:.3f} | {floor_name} | {f:.3f} | {t / f:.1f}x |")


if __name__ == "__main__":
    main()
