"""Simulated inputs for the lme4 covariate references (run once; CSVs are checked in):
    python tests/data/lme4_covariates/make_inputs.py && Rscript tests/data/lme4_covariates/fit_lme4_covariates.R

Each table: P models x n scenarios x K judges (one generation, or two in 'generations'), an answer length per
(model, scenario, generation) that depends on the model (longer writers), judges with different length slopes;
'unbalanced' and 'missing' drop rows (whole judge calls) so the design is unbalanced with empty cells.
Added for the covariate fit on the joint REML engine (issue 32/31): 'unbalanced_b' (4 models, 30% of the rows
dropped), 'missing_block' (two models each missing a block of scenarios), 'two_covariates_b' (two generations and
a second covariate that one judge rewards) and 'length_1e6' (the 'unbalanced' table with length in a unit 1e6
times smaller, e.g. tokens x 1e6: the slopes are 1e6 times smaller, nothing else changes).
"""
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent


def simulate(seed: int, p: int = 3, n: int = 30, k: int = 3, m: int = 1, drop: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = [f"m{q}" for q in range(p)]
    judges = [f"j{l}" for l in range(k)]
    mu = rng.normal(5, 0.5, p)
    gam = rng.normal(0, 0.3, k)
    slope = np.linspace(0.0, 0.004, k)          # score per token
    a = rng.normal(0, 0.6, n)
    rows = []
    for q in range(p):
        ms = rng.normal(0, 0.4, n)
        for i in range(n):
            for g in range(m):
                length = float(np.round(rng.normal(300 + 100 * q, 80)))
                b = rng.normal(0, 0.3) if m > 1 else 0.0
                for l in range(k):
                    y = mu[q] + gam[l] + slope[l] * (length - 400) + a[i] + ms[i] + b + rng.normal(0, 0.5)
                    rows.append((models[q], f"s{i:02d}", g, judges[l], round(y, 6), length))
    d = pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score", "length"])
    if drop:
        d = d[rng.random(len(d)) >= drop].reset_index(drop=True)
    return d


if __name__ == "__main__":
    simulate(1).to_csv(HERE / "balanced.csv", index=False)
    simulate(2, drop=0.15).to_csv(HERE / "unbalanced.csv", index=False)
    d = simulate(3, p=4, k=4, drop=0.05)
    d = d[~((d.model == "m1") & (d.scenario < "s10"))]          # model m1 missing from 10 scenarios
    d.to_csv(HERE / "missing.csv", index=False)
    simulate(4, m=2, drop=0.1).to_csv(HERE / "generations.csv", index=False)
    d = simulate(2, drop=0.15)                      # a second covariate per answer (no effect)
    cell = d.groupby(["model", "scenario", "generation"]).ngroup()
    d["fluency"] = np.round(np.random.default_rng(5).normal(0, 1, cell.max() + 1)[cell], 4)
    d.to_csv(HERE / "two_covariates.csv", index=False)
    simulate(11, p=4, n=40, drop=0.3).to_csv(HERE / "unbalanced_b.csv", index=False)
    d = simulate(12, p=4, drop=0.1)
    d = d[~((d.model == "m2") & (d.scenario < "s15")) & ~((d.model == "m3") & (d.scenario >= "s20"))]
    d.to_csv(HERE / "missing_block.csv", index=False)
    d = simulate(13, k=4, m=2, drop=0.1)
    cell = d.groupby(["model", "scenario", "generation"]).ngroup()
    d["fluency"] = np.round(np.random.default_rng(14).normal(0, 1, cell.max() + 1)[cell], 4)
    d["score"] = (d["score"] + 0.3 * d["fluency"] * (d["judge"] == "j1")).round(6)
    d.to_csv(HERE / "two_covariates_b.csv", index=False)
    d = simulate(2, drop=0.15)
    d["length"] = d["length"] * 1e6
    d.to_csv(HERE / "length_1e6.csv", index=False)
