"""A new process's first fit imports no scipy.stats (issue 34): ``import scipy.stats`` costs 0.4-0.5 s, which a
one-off ``estimate``/``compare_models``/``cjstats decompose`` paid for a t quantile or an F tail until those went
through :mod:`cjstats._dist`. Runs in a subprocess (a fresh ``sys.modules``) and names the step that imported it;
``benchmarks/bench_first_call.py`` times the same paths."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import sys, tempfile, os
    import numpy as np, pandas as pd
    import cjstats as cj
    from cjstats.cli import cli

    rng = np.random.default_rng(0)
    rows = [(m, s, g, f"j{j}", 5 + rng.normal()) for m in ("A", "B") for s in range(8) for g in range(2)
            for j in range(3)]
    df = pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])
    path = os.path.join(tempfile.mkdtemp(), "scores.csv")
    df.to_csv(path, index=False)
    steps = [("estimate(method='anova')", lambda: cj.estimate(df, method="anova")),
             ("estimate(method='reml')", lambda: cj.estimate(df, method="reml")),
             ("compare_models(method='reml')", lambda: cj.compare_models(df, method="reml")),
             ("cjstats decompose --method reml",
              lambda: cli.main(["decompose", path, "--method", "reml"], standalone_mode=False))]
    for name, step in steps:
        step()
        heavy = [m for m in ("scipy.stats", "statsmodels", "pymc", "arviz", "matplotlib", "cjstats.studies")
                 if m in sys.modules]
        if heavy:
            print("IMPORTED", heavy, "in", name)
            raise SystemExit(1)
    print("ok")
""")


def test_first_fits_import_no_scipy_stats():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), (r.stdout[-2000:], r.stderr[-2000:])
