"""Write the tables of the joint-REML lme4 reference suite (run once; the CSVs and suite.json are checked in).

    python tests/data/lme4_joint_suite/make_suite.py && Rscript tests/data/lme4_joint_suite/fit_lme4.R

Small and boundary tables from the joint model (DESIGN.md section 4)

    X_pijl = mu_p + alpha_i + (alpha p)_pi + beta_pij + gamma_l + (gamma p)_pl + eps_pijl

with the same draw order as :func:`cjstats.studies.simulate_joint.simulate_joint_array`, but written out here (no
cjstats import) so that the suite does not move when cjstats does, and so that ``(alpha p)_pi`` may have a
variance of its own per model (``s2_model_scenario`` a list). ``missing`` removes that share of judge calls at
random; ``likert`` rounds the scores to the integers 1..5. Every table has its own fixed seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent

FAIL = {"s2_scenario": 0.0126, "s2_model_scenario": 0.0438, "s2_generation": 0.02, "s2_residual": 0.2613}
ZERO_SCEN = {"s2_scenario": 0.0, "s2_model_scenario": 0.1, "s2_generation": 0.05, "s2_residual": 0.3}
ZERO_MS = {"s2_scenario": 0.2, "s2_model_scenario": 0.0, "s2_generation": 0.05, "s2_residual": 0.3}
ZERO_ALL = {"s2_scenario": 0.0, "s2_model_scenario": 0.0, "s2_generation": 0.0, "s2_residual": 0.3}
LARGE = {"s2_scenario": 1.0, "s2_model_scenario": 0.5, "s2_generation": 0.3, "s2_residual": 0.5}
LIKERT = {"s2_scenario": 0.3, "s2_model_scenario": 0.2, "s2_generation": 0.1, "s2_residual": 0.8}


def design(family: str, p: int, n: int, k: int, m: int, seed: int, var: dict, missing: float = 0.0,
           likert: bool = False, **extra: object) -> dict:
    name = f"{family}_p{p}_n{n}_k{k}_m{m}" + (f"_miss{round(missing * 100)}" if missing else "") + f"_s{seed}"
    return {"name": name, "family": family, "p": p, "n": n, "k": k, "m": m, "seed": seed, "missing": missing,
            "likert": likert, **var, **extra}


DESIGNS = [
    # the known failing design (cjstats collapsed scenario and model_scenario to 0 on it): small n, few models
    design("fail", 2, 5, 3, 1, 101, FAIL),
    design("fail", 2, 10, 4, 1, 102, FAIL),
    design("fail", 3, 10, 4, 1, 103, FAIL),
    design("fail", 3, 10, 4, 1, 104, FAIL),
    design("fail", 3, 15, 4, 2, 105, FAIL),
    design("fail", 4, 8, 5, 1, 106, FAIL),
    design("fail", 4, 20, 3, 1, 107, FAIL),
    design("fail", 5, 12, 4, 2, 108, FAIL),
    design("fail", 6, 10, 3, 1, 109, FAIL),
    design("fail", 3, 20, 4, 1, 110, FAIL, missing=0.15),
    design("fail", 4, 10, 4, 2, 111, FAIL, missing=0.10),
    design("fail", 2, 40, 5, 1, 112, FAIL),
    design("fail", 6, 30, 5, 2, 113, FAIL, missing=0.20),
    # scenario variance exactly 0 in truth
    design("zscen", 2, 8, 3, 1, 201, ZERO_SCEN),
    design("zscen", 3, 12, 4, 2, 202, ZERO_SCEN),
    design("zscen", 4, 20, 5, 1, 203, ZERO_SCEN, missing=0.10),
    design("zscen", 5, 6, 4, 1, 204, ZERO_SCEN),
    design("zscen", 3, 30, 3, 2, 205, ZERO_SCEN, missing=0.20),
    # model x scenario variance exactly 0 in truth
    design("zms", 2, 10, 4, 1, 301, ZERO_MS),
    design("zms", 3, 8, 3, 2, 302, ZERO_MS),
    design("zms", 4, 15, 4, 1, 303, ZERO_MS, missing=0.15),
    design("zms", 6, 12, 5, 1, 304, ZERO_MS),
    design("zms", 3, 25, 5, 2, 305, ZERO_MS),
    # every random effect 0 in truth
    design("zall", 3, 10, 4, 1, 401, ZERO_ALL),
    design("zall", 4, 6, 3, 2, 402, ZERO_ALL),
    # large variances, well inside the parameter space
    design("large", 3, 40, 4, 2, 501, LARGE),
    design("large", 5, 20, 5, 1, 502, LARGE, missing=0.10),
    design("large", 2, 5, 3, 2, 503, LARGE),
    design("large", 6, 15, 4, 1, 504, LARGE),
    # a model x scenario variance of its own per model (per-model form; the pooled fit is misspecified)
    design("unequal", 3, 20, 4, 1, 601, {**FAIL, "s2_scenario": 0.1, "s2_model_scenario": [0.0, 0.05, 0.3]}),
    design("unequal", 4, 15, 4, 2, 602, {**FAIL, "s2_scenario": 0.2, "s2_model_scenario": [0.02, 0.02, 0.2, 0.5]}),
    design("unequal", 5, 30, 3, 1, 603, {**FAIL, "s2_scenario": 0.1, "s2_model_scenario": [0.0, 0.0, 0.0, 0.3, 0.3]},
           missing=0.15),
    design("unequal", 2, 25, 4, 1, 604, {**FAIL, "s2_scenario": 0.3, "s2_model_scenario": [0.01, 0.4]}),
    design("unequal", 6, 12, 5, 2, 605, {**FAIL, "s2_scenario": 0.1,
                                         "s2_model_scenario": [0.0, 0.08, 0.16, 0.24, 0.32, 0.4]}, missing=0.10),
    design("unequal", 3, 10, 3, 1, 606, {**FAIL, "s2_model_scenario": [0.0126, 0.0438, 0.2]}),
    # two models, complete, interior truth: the per-model pair SE is the paired t SE
    design("pair", 2, 20, 4, 1, 701, {**FAIL, "s2_scenario": 0.3, "s2_model_scenario": [0.1, 0.2], "s2_residual": 0.4}),
    design("pair", 2, 12, 3, 2, 702, {"s2_scenario": 0.3, "s2_model_scenario": [0.15, 0.05], "s2_generation": 0.1,
                                      "s2_residual": 0.4}),
    design("pair", 2, 40, 5, 1, 703, {**FAIL, "s2_scenario": 0.5, "s2_model_scenario": [0.2, 0.2], "s2_residual": 0.5}),
    design("pair", 2, 8, 3, 1, 704, {**FAIL, "s2_scenario": 0.4, "s2_model_scenario": [0.05, 0.3], "s2_residual": 0.3}),
    # integer 1..5 scores (ties, discreteness), as many judges give
    design("likert", 3, 15, 4, 1, 801, LIKERT, likert=True),
    design("likert", 4, 10, 3, 2, 802, LIKERT, missing=0.10, likert=True),
]


def simulate(d: dict) -> pd.DataFrame:
    rng = np.random.default_rng(d["seed"])
    p, n, k, m = d["p"], d["n"], d["k"], d["m"]
    mu = 3.0 + rng.normal(0, 0.2, p)
    gamma = rng.normal(0, 0.2, k)
    gp = rng.normal(0, 0.1, (p, k))                                   # judge x model interaction
    s2_ms = np.broadcast_to(np.asarray(d["s2_model_scenario"], dtype=float), (p,))
    a = rng.normal(0, np.sqrt(d["s2_scenario"]), n)
    ap = rng.normal(0, 1.0, (p, n)) * np.sqrt(s2_ms)[:, None]
    b = rng.normal(0, np.sqrt(d["s2_generation"]), (p, n, m))
    e = rng.normal(0, np.sqrt(d["s2_residual"]), (p, n, m, k))
    y = (mu[:, None, None, None] + a[None, :, None, None] + ap[:, :, None, None] + b[..., None]
         + gamma[None, None, None, :] + gp[:, None, None, :] + e)
    if d["likert"]:
        y = np.clip(np.rint(y + 0.5), 1, 5)
    idx = np.indices(y.shape).reshape(4, -1)
    df = pd.DataFrame({"model": np.char.add("m", idx[0].astype(str)), "scenario": idx[1], "generation": idx[2],
                       "judge": np.char.add("j", idx[3].astype(str)), "score": y.reshape(-1)})
    if d["missing"] > 0:
        df = df[rng.random(len(df)) >= d["missing"]].reset_index(drop=True)
    # every (model, judge) cell must keep a score and every pair of models a shared scenario
    cells = df.groupby(["model", "judge"]).size()
    assert len(cells) == p * k, d["name"]
    return df


if __name__ == "__main__":
    (HERE / "tables").mkdir(exist_ok=True)
    names = [d["name"] for d in DESIGNS]
    assert len(set(names)) == len(names)
    suite = {}
    for d in DESIGNS:
        df = simulate(d)
        df.to_csv(HERE / "tables" / f"{d['name']}.csv", index=False, float_format="%.6g")
        suite[d["name"]] = {**d, "n_rows": len(df)}
    (HERE / "suite.json").write_text(json.dumps(suite, indent=1) + "\n")
    print(f"{len(DESIGNS)} tables, {sum(v['n_rows'] for v in suite.values())} rows")
