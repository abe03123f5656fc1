"""Simulated inputs for the R reference fits of the ordinal ML backend (fit_clmm.R reads them).

Latent truth: eta = alpha_i + gamma_l + e, alpha ~ N(0, s_a^2), e standard normal; ordinal 1-5 with a ceiling
(thresholds pushed down so ~half the rows are 5) or binary (one threshold). Deterministic seeds.
Run: python tests/data/ordinal_ml/make_inputs.py
"""
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
CASES = {  # name: (seed, n scenarios, judges, cutpoints, s_a)
    "ord_a": (11, 120, 4, [-1.6, -0.9, -0.3, 0.1], 0.8),
    "ord_b": (12, 60, 3, [-1.2, -0.5, 0.0, 0.4], 1.0),
    "ord_small": (13, 25, 3, [-1.0, -0.3, 0.2, 0.7], 0.7),
    "bin_a": (21, 150, 4, [0.2], 0.9),
    "bin_small": (22, 30, 3, [0.0], 0.8),
}
if __name__ == "__main__":
    for name, (seed, n, k, cut, s) in CASES.items():
        rng = np.random.default_rng(seed)
        gamma = np.linspace(-0.4, 0.4, k)
        sc = np.repeat(np.arange(n), k)
        jd = np.tile(np.arange(k), n)
        lat = rng.normal(0, s, n)[sc] + gamma[jd] + rng.normal(size=n * k)
        y = np.searchsorted(np.asarray(cut), lat)
        y = y + 1 if len(cut) > 1 else y
        pd.DataFrame({"scenario": [f"s{i:03d}" for i in sc], "judge": [f"j{j}" for j in jd],
                      "score": y}).to_csv(HERE / f"{name}.csv", index=False)
