"""Simulated verdict (0/1) and 1-5 tables for the joint ordinal model's R fixtures (fit_r.R reads them).

Run from the repository root: python tests/data/joint_ordinal/make_tables.py
"""
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent


def simulate(n, P, K, J, seed, *, s2a=0.5, s2b=0.3, link="probit"):
    rng = np.random.default_rng(seed)
    mu = np.linspace(0.6, -0.3, P)
    judge = np.linspace(-0.3, 0.3, K)
    gp = rng.normal(0, 0.15, (P, K))
    a = rng.normal(0, np.sqrt(s2a), n)
    b = rng.normal(0, np.sqrt(s2b), (P, n))
    lat = mu[:, None, None] + judge[None, None, :] + gp[:, None, :] + a[None, :, None] + b[:, :, None]
    e = rng.standard_normal(lat.shape) if link == "probit" else rng.logistic(size=lat.shape)
    cuts = [0.0] if J == 2 else np.linspace(-1.2, 1.2, J - 1)
    y = np.searchsorted(cuts, lat + e) + (0 if J == 2 else 1)
    pp, ii, ll = np.meshgrid(range(P), range(n), range(K), indexing="ij")
    return pd.DataFrame({"model": [f"m{x}" for x in pp.ravel()], "scenario": ii.ravel(), "generation": 0,
                         "judge": [f"j{x}" for x in ll.ravel()], "score": y.ravel().astype(float)})


TABLES = {
    "verdict_n20_p3_k3": dict(n=20, P=3, K=3, J=2, seed=1),
    "verdict_n20_p4_k4": dict(n=20, P=4, K=4, J=2, seed=2),
    "verdict_n80_p3_k4": dict(n=80, P=3, K=4, J=2, seed=3),
    "verdict_n80_p4_k3": dict(n=80, P=4, K=3, J=2, seed=4),
    "rating_n20_p3_k3": dict(n=20, P=3, K=3, J=5, seed=5),
    "rating_n80_p4_k4": dict(n=80, P=4, K=4, J=5, seed=6),
}

if __name__ == "__main__":
    for name, kw in TABLES.items():
        simulate(**kw).to_csv(HERE / f"{name}.csv", index=False)
