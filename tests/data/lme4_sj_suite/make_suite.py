"""Write the tables of the scenario x judge lme4 reference suite (run once; the CSVs and suite.json are checked in).

    python tests/data/lme4_sj_suite/make_suite.py && Rscript tests/data/lme4_sj_suite/fit_lme4.R

Small and boundary tables from the per-model model with a scenario x judge interaction (issue 21)

    X_ijl = mu + alpha_i + beta_ij + gamma_l + (alpha gamma)_il + eps_ijl

(i scenario, j generation nested in scenario, l judge), written out here without importing cjstats so that the
suite does not move when cjstats does. ``scenario_judge`` is the variance of (alpha gamma)_il; it is
identifiable only when some scenario x judge pair has several calls, so every table keeps scenarios with two or
more generations. With two models the scenario effects alpha_i and the judge offsets gamma_l are shared and
everything else is drawn per model (each model is fitted on its own). ``missing`` removes that share of judge
calls at random; ``ragged`` gives scenario i a number of generations m_i drawn from 1..m (``one_gen`` scenarios
get exactly one); ``likert`` rounds the scores to the integers 1..5. Every table has its own fixed seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
MAX_ROWS = 2000

# variances: scenario, generation, scenario_judge, residual, and the judge offsets' spread (random-judge fit)
BASE = {"s2_scenario": 0.3, "s2_generation": 0.1, "s2_scenario_judge": 0.15, "s2_residual": 0.4, "s2_judge": 0.1}
ZERO_SJ = {**BASE, "s2_scenario_judge": 0.0}
ZERO_GEN = {**BASE, "s2_generation": 0.0}
TINY_SCEN = {**BASE, "s2_scenario": 0.001}
ZERO_SCEN = {**BASE, "s2_scenario": 0.0}
BIG_SJ = {**BASE, "s2_scenario_judge": 2.0, "s2_residual": 0.3}
UNEQ_A = {"s2_scenario": 5.0, "s2_generation": 0.01, "s2_scenario_judge": 0.5, "s2_residual": 0.05, "s2_judge": 2.0}
UNEQ_B = {"s2_scenario": 0.02, "s2_generation": 1.5, "s2_scenario_judge": 0.05, "s2_residual": 2.0, "s2_judge": 0.01}
ZERO_ALL = {"s2_scenario": 0.0, "s2_generation": 0.0, "s2_scenario_judge": 0.0, "s2_residual": 0.5, "s2_judge": 0.1}
LIKERT = {"s2_scenario": 0.3, "s2_generation": 0.1, "s2_scenario_judge": 0.2, "s2_residual": 0.6, "s2_judge": 0.1}


def design(family: str, p: int, n: int, k: int, m: int, seed: int, var: dict, missing: float = 0.0,
           ragged: bool = False, one_gen: int = 0, likert: bool = False) -> dict:
    name = (f"{family}_p{p}_n{n}_k{k}_m{m}" + (f"_miss{round(missing * 100)}" if missing else "")
            + ("_ragged" if ragged else "") + f"_s{seed}")
    return {"name": name, "family": family, "p": p, "n": n, "k": k, "m": m, "seed": seed, "missing": missing,
            "ragged": ragged, "one_gen": one_gen, "likert": likert, **var}


DESIGNS = [
    # balanced, every variance inside the parameter space: m = 2, 3, 5; n = 5..60; K = 3..6
    design("bal", 1, 5, 3, 2, 101, BASE),
    design("bal", 1, 10, 4, 3, 102, BASE),
    design("bal", 1, 20, 5, 2, 103, BASE),
    design("bal", 1, 30, 3, 5, 104, BASE),
    design("bal", 1, 60, 6, 2, 105, BASE),
    design("bal", 1, 40, 6, 5, 106, BASE),
    design("bal", 1, 8, 4, 5, 107, BASE),
    design("bal", 2, 15, 4, 3, 108, BASE),
    design("bal", 2, 50, 3, 2, 109, BASE),
    # scenario_judge exactly 0 in the DGP
    design("zsj", 1, 10, 4, 2, 201, ZERO_SJ),
    design("zsj", 1, 25, 5, 3, 202, ZERO_SJ),
    design("zsj", 1, 40, 3, 2, 203, ZERO_SJ, missing=0.15),
    design("zsj", 1, 12, 6, 5, 204, ZERO_SJ),
    design("zsj", 1, 30, 4, 3, 205, ZERO_SJ, ragged=True, one_gen=3),
    # generation exactly 0
    design("zgen", 1, 20, 4, 2, 301, ZERO_GEN),
    design("zgen", 1, 15, 5, 3, 302, ZERO_GEN, missing=0.10),
    # scenario tiny or exactly 0
    design("tscen", 1, 10, 3, 3, 401, TINY_SCEN),
    design("zscen", 1, 30, 4, 2, 402, ZERO_SCEN),
    # every random effect 0
    design("zall", 1, 10, 4, 2, 403, ZERO_ALL),
    # a large scenario_judge
    design("bigsj", 1, 10, 4, 2, 501, BIG_SJ),
    design("bigsj", 1, 25, 6, 3, 502, BIG_SJ, missing=0.20),
    # unequal magnitudes (scenario 100 times the residual; or the generation and residual dominating)
    design("uneq", 1, 20, 4, 3, 601, UNEQ_A),
    design("uneq", 1, 30, 5, 2, 602, UNEQ_B),
    # missing judge calls at random (5-30%)
    design("miss", 1, 20, 4, 3, 701, BASE, missing=0.05),
    design("miss", 1, 50, 5, 2, 702, BASE, missing=0.30),
    design("miss", 2, 30, 4, 3, 703, BASE, missing=0.20),
    # scenarios with different numbers of generations, a few with one
    design("ragged", 1, 20, 4, 3, 801, BASE, ragged=True, one_gen=2),
    design("ragged", 1, 40, 3, 5, 802, BASE, ragged=True, one_gen=5, missing=0.10),
    design("ragged", 1, 12, 5, 2, 803, BASE, ragged=True, one_gen=4),
    # integer 1..5 scores (ties, discreteness)
    design("likert", 1, 30, 4, 3, 901, LIKERT, likert=True),
    design("likert", 1, 20, 5, 2, 902, LIKERT, missing=0.10, likert=True),
    design("likert", 2, 15, 3, 5, 903, LIKERT, likert=True),
]


def _generations(d: dict, rng: np.random.Generator) -> np.ndarray:
    """Generations per scenario: m everywhere, or (ragged) 1..m at random with ``one_gen`` scenarios at 1."""
    n, m = d["n"], d["m"]
    if not d["ragged"]:
        return np.full(n, m)
    mi = rng.integers(2, m + 1, n)
    mi[rng.choice(n, d["one_gen"], replace=False)] = 1
    return mi


def simulate(d: dict) -> pd.DataFrame:
    rng = np.random.default_rng(d["seed"])
    p, n, k, m = d["p"], d["n"], d["k"], d["m"]
    alpha = rng.normal(0, np.sqrt(d["s2_scenario"]), n)                 # shared by the models
    gamma = rng.normal(0, np.sqrt(d["s2_judge"]), k)
    gens = _generations(d, rng)
    frames = []
    for q in range(p):
        mu = 3.0 + rng.normal(0, 0.2)
        beta = rng.normal(0, np.sqrt(d["s2_generation"]), (n, m))
        ag = rng.normal(0, np.sqrt(d["s2_scenario_judge"]), (n, k))
        eps = rng.normal(0, np.sqrt(d["s2_residual"]), (n, m, k))
        y = mu + alpha[:, None, None] + beta[..., None] + gamma[None, None, :] + ag[:, None, :] + eps
        if d["likert"]:
            y = np.clip(np.rint(y), 1, 5)
        i, j, l = np.indices(y.shape).reshape(3, -1)
        df = pd.DataFrame({"model": f"m{q}", "scenario": i, "generation": j, "judge": np.char.add("j", l.astype(str)),
                           "score": y.reshape(-1)})
        df = df[df.generation < gens[df.scenario]]
        if d["missing"] > 0:
            df = df[rng.random(len(df)) >= d["missing"]]
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    # every model keeps every judge, and some scenario x judge pair has several calls (identifiability)
    for q, g in df.groupby("model"):
        assert g.judge.nunique() == k, (d["name"], q)
        assert g.groupby(["scenario", "judge"]).size().max() >= 2, (d["name"], q)
    assert len(df) <= MAX_ROWS, (d["name"], len(df))
    return df


if __name__ == "__main__":
    (HERE / "tables").mkdir(exist_ok=True)
    names = [d["name"] for d in DESIGNS]
    assert len(set(names)) == len(names)
    suite = {}
    for d in DESIGNS:
        df = simulate(d)
        df.to_csv(HERE / "tables" / f"{d['name']}.csv", index=False, float_format="%.6g")
        cells = df.groupby(["model", "scenario", "generation", "judge"]).size()
        balanced = bool(d["missing"] == 0 and not d["ragged"] and (cells == 1).all())
        suite[d["name"]] = {**d, "n_rows": len(df), "balanced": balanced}
    (HERE / "suite.json").write_text(json.dumps(suite, indent=1) + "\n")
    print(f"{len(DESIGNS)} tables, {sum(v['n_rows'] for v in suite.values())} rows, "
          f"{sum(v['balanced'] for v in suite.values())} balanced")
