"""The fits whose stated formula R refits (tests/test_formula_r.py; fixtures by tests/data/formula_r/make_fixtures.py).

Each case is a table and a fit; the fit states ``fit.formula`` (lme4 / ordinal syntax), and R, given that formula
and the same rows, must return the same variance components. One definition shared by the fixture script and the
test, so they cannot drift apart.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

import cjstats as cj


def _sim(n: int, m: int, k: int, seed: int, models: int = 1) -> pd.DataFrame:
    s = cj.simulate_scores(cj.Truth.table3(), n=n, m=m, k=k, seed=seed).to_frame()
    keep = sorted(s["model"].unique())[:models]
    return s[s["model"].isin(keep)].reset_index(drop=True)


def _ordinal(n: int, m: int, seed: int, link: str = "probit") -> pd.DataFrame:
    """A 1-5 rating table from a latent model with scenario and generation effects (judges shift the latent)."""
    rng = np.random.default_rng(seed)
    gamma = np.array([-0.4, 0.0, 0.3, 0.5])
    cuts = np.array([-1.2, -0.3, 0.5, 1.3])
    a = rng.normal(0, math.sqrt(0.6), n)
    b = rng.normal(0, math.sqrt(0.3), (n, m))
    e = rng.standard_normal((n, m, gamma.size)) if link == "probit" else rng.logistic(size=(n, m, gamma.size))
    lat = a[:, None, None] + b[:, :, None] + gamma[None, None, :] + e
    q = (lat[..., None] > cuts).sum(-1) + 1
    idx = np.indices(q.shape).reshape(3, -1)
    return pd.DataFrame({"model": "m", "scenario": [f"s{i:03d}" for i in idx[0]], "generation": idx[1],
                         "judge": [f"j{l}" for l in idx[2]], "score": q.ravel().astype(float)})


_JOINT_ORDINAL = __import__("pathlib").Path(__file__).parent / "data" / "joint_ordinal" / "rating_n20_p3_k3.csv"


def _drop(df: pd.DataFrame, share: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return df[rng.random(len(df)) >= share].reset_index(drop=True)


#: name -> (kind, table builder, fit options); kind "lmer" (per-model), "joint" (fit_joint), "clmm" (ordinal)
CASES: dict[str, tuple[str, object, dict]] = {
    "reml_scenario_judge": ("lmer", lambda: _sim(25, 3, 4, seed=11), {"method": "reml"}),
    "reml_no_scenario_judge": ("lmer", lambda: _sim(25, 3, 4, seed=11), {"method": "reml", "scenario_judge": False}),
    "reml_unbalanced": ("lmer", lambda: _drop(_sim(30, 2, 4, seed=12), 0.15, 3), {"method": "reml"}),
    "reml_m1": ("lmer", lambda: _sim(40, 1, 5, seed=13), {"method": "reml"}),
    "reml_formula": ("lmer", lambda: _sim(25, 3, 4, seed=14),
                     {"method": "reml", "model": "score ~ judge + (1|scenario) + (1|scenario:generation)"}),
    "joint_pooled": ("joint", lambda: _sim(25, 2, 4, seed=16, models=3), {"method": "reml"}),
    "joint_per_model": ("joint", lambda: _sim(25, 2, 4, seed=16, models=3),
                        {"method": "reml", "model_scenario": "per_model"}),
    "joint_per_model_m1": ("joint", lambda: _sim(30, 1, 4, seed=17, models=3),
                           {"method": "reml", "model_scenario": "per_model"}),
    "ordinal_probit": ("clmm", lambda: _ordinal(60, 1, seed=18), {"method": "ordinal"}),
    "ordinal_logit": ("clmm", lambda: _ordinal(60, 1, seed=19, link="logit"), {"method": "ordinal", "link": "logit"}),
    "ordinal_generation": ("clmm", lambda: _ordinal(50, 2, seed=20), {"method": "ordinal"}),
    "joint_ordinal": ("clmm_joint", lambda: pd.read_csv(_JOINT_ORDINAL), {"method": "ordinal"}),
}


def run_case(name: str) -> tuple[pd.DataFrame, object]:
    """The rows and the fit of one case."""
    kind, build, opts = CASES[name]
    table = build()
    opts = dict(opts)
    method = opts.pop("method")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind in ("joint", "clmm_joint"):
            fit = cj.fit_joint(table, method, **opts)
        else:
            fit = cj.estimate(table, method, **opts)
    return table, fit


def variances(name: str, fit: object) -> dict[str, float]:
    """The variance components of a case's fit, keyed as the R side keys them."""
    kind = CASES[name][0]
    t = fit.components
    t = t[t["identifiable"].astype(bool)]
    out = {}
    for _, r in t.iterrows():
        c = r["component"]
        if kind == "clmm_joint":
            if c in ("scenario", "model_scenario") and r["model"] == "(joint)":
                out[c] = float(r["estimate"])
        elif kind == "joint":
            if c in ("scenario", "generation", "residual") and r["model"] == "(joint)":
                out[c] = float(r["estimate"])
            elif c == "model_scenario":
                out[c if r["model"] == "(joint)" else f"model_scenario[{r['model']}]"] = float(r["estimate"])
        elif c in ("scenario", "generation", "scenario_judge", "residual"):
            if kind == "clmm" and c == "residual":
                continue
            out[c] = float(r["estimate"])
    return out
