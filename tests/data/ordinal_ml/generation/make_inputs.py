"""Simulated inputs with several generations per scenario for the R reference fits of the nested generation
effect of the ordinal ML backend (fit_clmm_gen.R reads them).

Latent truth: eta = alpha_i + beta_ij + gamma_l + e, alpha ~ N(0, s_a^2), beta ~ N(0, s_b^2) (scenario x
generation), e standard normal; ordinal 1-5 with a ceiling, or binary (one threshold). Deterministic seeds.
Run: python tests/data/ordinal_ml/generation/make_inputs.py
"""
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
CASES = {  # name: (seed, n scenarios, generations m, judges, cutpoints, s_a, s_b)
    "gen_a": (31, 80, 3, 3, [-1.4, -0.7, -0.1, 0.4], 0.8, 0.6),
    "gen_b": (32, 60, 2, 4, [-1.2, -0.5, 0.0, 0.5], 0.7, 0.8),
    "gen_bin": (33, 90, 2, 3, [0.1], 0.9, 0.7),
}
if __name__ == "__main__":
    for name, (seed, n, m, k, cut, s_a, s_b) in CASES.items():
        rng = np.random.default_rng(seed)
        gamma = np.linspace(-0.4, 0.4, k)
        sc = np.repeat(np.arange(n), m * k)
        gen = np.tile(np.repeat(np.arange(m), k), n)
        jd = np.tile(np.arange(k), n * m)
        lat = (rng.normal(0, s_a, n)[sc] + rng.normal(0, s_b, n * m)[sc * m + gen] + gamma[jd]
               + rng.normal(size=n * m * k))
        y = np.searchsorted(np.asarray(cut), lat)
        y = y + 1 if len(cut) > 1 else y
        pd.DataFrame({"scenario": [f"s{i:03d}" for i in sc], "generation": gen, "judge": [f"j{j}" for j in jd],
                      "score": y}).to_csv(HERE / f"{name}.csv", index=False)
