"""Time the first fit of a new process: ``import cjstats``, read a table, first fit (issue 34, "fast at every size").

A one-off call (the ``cjstats`` command line, a script, a notebook's first cell) pays every import its fit pulls in.
Each case runs ``--runs`` times in a fresh interpreter, which times ``import cjstats``, ``read_scores`` of a CSV
(4,000 rows by default: the paper's Table 3 truth, 100 scenarios x 2 generations x 4 judges x 5 models, written
once by this script) and the first call, then reports which heavy modules the process imported. The cases:
``estimate(method="anova")``, ``estimate(method="reml")``, ``compare_models(method="reml")`` and the command line's
``cjstats decompose FILE --method reml``. ``--baseline DIR`` runs the same cases with ``PYTHONPATH=DIR`` (a
checkout of another commit, e.g. ``git clone -q /work/main /tmp/lazy_base``) interleaved with this checkout's
runs, so both see the same machine load; the ratio of medians is the figure to compare.

Run:  .venv/bin/python benchmarks/bench_first_call.py [--runs 7] [--baseline /tmp/lazy_base]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("scipy.stats", "scipy.optimize", "scipy.sparse", "statsmodels", "pymc", "arviz", "pytensor", "numba",
         "matplotlib", "cjstats.studies.data")

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import cjstats as cj
t1 = time.perf_counter()
case, path = sys.argv[1], sys.argv[2]
if case == "cli":
    from cjstats.cli import cli
    t2 = t1
    try:
        cli.main(["decompose", path, "--method", "reml"], standalone_mode=False)
    finally:
        sys.stdout.flush()
else:
    scores = cj.read_scores(path)
    t2 = time.perf_counter()
    if case == "compare_reml":
        cj.compare_models(scores, method="reml")
    else:
        cj.estimate(scores, method=case.split("_")[1])
t3 = time.perf_counter()
heavy = [m for m in HEAVY if m in sys.modules]
sys.stderr.write("\nRESULT " + json.dumps({"import": t1 - t0, "read": t2 - t1, "fit": t3 - t2, "total": t3 - t0,
                                          "heavy": heavy}) + "\n")
""".replace("HEAVY", repr(HEAVY))

CASES = ("estimate_anova", "estimate_reml", "compare_reml", "cli")


def _data(path: Path) -> None:
    import cjstats as cj

    cj.simulate_scores(cj.Truth.table3(), n=100, m=2, k=4, seed=1).to_frame().to_csv(path, index=False)


def _run(case: str, data: Path, pythonpath: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    r = subprocess.run([sys.executable, "-c", CHILD, case, str(data)], capture_output=True, text=True, env=env,
                       cwd=tempfile.gettempdir(), check=False)
    line = [x for x in r.stderr.splitlines() if x.startswith("RESULT ")]
    if r.returncode != 0 or not line:
        raise SystemExit(f"{case} failed under {pythonpath}:\n{r.stderr[-2000:]}")
    return json.loads(line[-1][len("RESULT "):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--baseline", type=Path, default=None, help="a checkout of the code to compare against")
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    trees = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "scores.csv"
        _data(data)
        for case in args.cases.split(","):
            res: dict[str, list[dict]] = {name: [] for name in trees}
            for _ in range(args.runs):                       # interleaved: both trees see the same load
                for name, tree in trees.items():
                    res[name].append(_run(case, data, tree))
            med = {name: {k: statistics.median(r[k] for r in rs) for k in ("import", "read", "fit", "total")}
                   for name, rs in res.items()}
            for name, m in med.items():
                heavy = sorted({h for r in res[name] for h in r["heavy"]})
                print(f"{case:15s} {name:8s} total {m['total']:6.3f} s  (import {m['import']:.3f}, read "
                      f"{m['read']:.3f}, fit {m['fit']:.3f})  imported: {', '.join(heavy) or '-'}")
            if "baseline" in med:
                print(f"{case:15s} ratio this/baseline of median totals: "
                      f"{med['this']['total'] / med['baseline']['total']:.2f}")


if __name__ == "__main__":
    main()
