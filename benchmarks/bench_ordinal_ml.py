"""Benchmark the ML ordinal backend (``method="ordinal"``) against ``ordinal::clmm`` (a script, not a test).

    .venv/bin/python benchmarks/bench_ordinal_ml.py                  # cjstats and clmm, side by side
    .venv/bin/python benchmarks/bench_ordinal_ml.py --no-r           # cjstats only
    .venv/bin/python benchmarks/bench_ordinal_ml.py --r-models 10    # clmm on all 10 models of the 40k tables

Tables (score 1-5, one criterion; per-model fits, as ``cj.estimate`` does):
  sim_500     1 model x 100 scenarios x 5 judges, simulated: latent alpha_i + gamma_l + e (probit scale,
              s_a = 0.8, judge offsets -0.3..0.3), thresholds putting ~55% of scores at the ceiling 5;
  sim_4000    the same with 800 scenarios;
  sim_40000   10 models x 800 scenarios x 5 judges (model shifts -0.5..0.5);
  mentalalign the bundled MentalAlign-70k, criterion Empathy, the 4 LLM judges, 10 models x 1,000 contexts
              (39,990 rows; 78% of scores are 5).
Each table is fitted with link probit and logit, nAGQ 1 (Laplace) and 10.

cjstats: wall time of ``cj.estimate(table, method="ordinal", link=..., nagq=...)`` (fit, Hessian, Wald
intervals, the result), median of ``--repeats``. R: one ``Rscript`` per table and configuration; the clmm time is
``system.time(clmm(ordered(score) ~ judge + (1 | scenario), link = ..., nAGQ = ...))`` summed over the fitted
models (clmm computes its Hessian by default too), the wall time includes R's start, loading ``ordinal`` and
reading the CSV. For the 40k tables clmm fits the first ``--r-models`` models (default 2: it takes ~20 s per
model on this machine); the table then shows clmm's per-model median and, marked "x10", that median times the
number of models. The log-likelihoods of the models both fitted are compared (sum of ours - sum of clmm's).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import cjstats as cj

R_SCRIPT = r"""
suppressMessages(library(ordinal))
args <- commandArgs(TRUE)
d <- read.csv(args[1]); link <- args[2]; q <- as.integer(args[3]); nmod <- as.integer(args[4])
models <- unique(d$model)[seq_len(min(nmod, length(unique(d$model))))]
out <- list()
for (m in models) {
  dm <- d[d$model == m, ]
  dm$judge <- factor(dm$judge); dm$scenario <- factor(dm$scenario)
  tm <- system.time(fit <- clmm(ordered(score) ~ judge + (1 | scenario), data = dm, link = link, nAGQ = q))
  out[[length(out) + 1]] <- list(model = m, seconds = tm[["elapsed"]], loglik = as.numeric(logLik(fit)))
}
cat(jsonlite::toJSON(out, auto_unbox = TRUE, digits = NA))
"""


def simulate(n_models: int, n_scenarios: int, n_judges: int = 5, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    gamma = np.linspace(-0.3, 0.3, n_judges)
    shift = np.linspace(-0.5, 0.5, n_models) if n_models > 1 else np.zeros(1)
    cuts = np.array([-2.0, -1.5, -0.8, 0.1])             # with s_a = 0.8: ~55% at 5
    frames = []
    for mi in range(n_models):
        alpha = rng.normal(0.0, 0.8, n_scenarios)
        lat = shift[mi] + alpha[:, None] + gamma[None, :] + rng.normal(size=(n_scenarios, n_judges))
        score = 1 + (lat[..., None] > cuts).sum(axis=-1)
        frames.append(pd.DataFrame({"model": f"m{mi}", "scenario": np.repeat(np.arange(n_scenarios), n_judges),
                                    "judge": np.tile([f"j{j}" for j in range(n_judges)], n_scenarios),
                                    "score": score.ravel().astype(float)}))
    return pd.concat(frames, ignore_index=True)


def tables() -> dict[str, pd.DataFrame]:
    t = cj.datasets.table("mentalalign")
    ma = t[(t["criterion"] == "Empathy") & (t["judge_type"] == "llm")][["model", "scenario", "judge", "score"]]
    return {"sim_500": simulate(1, 100, seed=1), "sim_4000": simulate(1, 800, seed=2),
            "sim_40000": simulate(10, 800, seed=3), "mentalalign": ma.reset_index(drop=True)}


def time_ours(d: pd.DataFrame, link: str, q: int, repeats: int) -> tuple[float, dict[str, float]]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f = cj.estimate(d, method="ordinal", link=link, nagq=q)
        times.append(time.perf_counter() - t0)
    ll = {str(k).split("=")[-1]: v["loglik"] for k, v in f.diagnostics.items()}
    return statistics.median(times), ll


def time_r(csv: Path, link: str, q: int, n_models: int) -> tuple[float, list[dict]]:
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as fh:
        fh.write(R_SCRIPT)
    t0 = time.perf_counter()
    res = subprocess.run(["Rscript", fh.name, str(csv), link, str(q), str(n_models)], capture_output=True,
                         text=True, check=True)
    wall = time.perf_counter() - t0
    Path(fh.name).unlink()
    return wall, json.loads(res.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-r", action="store_true", help="time cjstats only")
    ap.add_argument("--r-models", type=int, default=2, help="models clmm fits in the 40k tables (default 2)")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of each cjstats fit (median)")
    ap.add_argument("--tables", default="sim_500,sim_4000,sim_40000,mentalalign")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    use_r = not args.no_r and shutil.which("Rscript") is not None
    print(f"machine: {platform.machine()}, {platform.processor() or platform.system()}, python "
          f"{platform.python_version()}, numpy {np.__version__}; R: {'yes' if use_r else 'no'}")
    cj.estimate(simulate(1, 50), method="ordinal")          # warm-up: imports
    rows = []
    tabs = tables()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.tables.split(","):
            d = tabs[name]
            csv = Path(tmp) / f"{name}.csv"
            d.to_csv(csv, index=False)
            n_mod = d["model"].nunique()
            for link in ("probit", "logit"):
                for q in (1, 10):
                    ours, ll = time_ours(d, link, q, args.repeats)
                    row = {"table": name, "rows": len(d), "models": n_mod, "link": link, "nagq": q,
                           "cjstats_s": ours}
                    if use_r:
                        nm = n_mod if n_mod == 1 else min(args.r_models, n_mod)
                        wall, fits = time_r(csv, link, q, nm)
                        per = [f["seconds"] for f in fits]
                        row.update({"clmm_models": nm, "clmm_s": sum(per), "clmm_per_model_s": statistics.median(per),
                                    "clmm_x_all_s": statistics.median(per) * n_mod, "r_wall_s": wall,
                                    "loglik_diff": sum(ll[f["model"]] - f["loglik"] for f in fits)})
                        row["speedup"] = row["clmm_x_all_s"] / ours
                    rows.append(row)
                    print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                          flush=True)
    df = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(df.round(4).to_string(index=False))
    if args.json:
        args.json.write_text(df.to_json(orient="records", indent=1))


if __name__ == "__main__":
    main()
