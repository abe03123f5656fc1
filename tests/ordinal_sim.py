"""Latent-truth simulation of ordinal and binary judge scores for the ML ordinal tests (one shared helper).

Model: Y = v_q, q = #{cutpoints c_{l,k} < alpha_i + gamma_l + e}, alpha_i ~ N(0, s2a), e standard normal (probit)
or logistic (logit); every judge scores every scenario once (m = 1). ``cuts`` is (J-1,) shared or (K, J-1).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd


def simulate_latent(n, gamma, cuts, s2a, *, link="probit", seed=0, values=None, model="m"):
    rng = np.random.default_rng(seed)
    gamma = np.asarray(gamma, float)
    k = gamma.size
    cuts = np.asarray(cuts, float)
    per_judge = cuts if cuts.ndim == 2 else np.broadcast_to(cuts, (k, cuts.size))
    values = np.arange(1, cuts.shape[-1] + 2) if values is None else np.asarray(values)
    alpha = rng.normal(0.0, math.sqrt(s2a), n)
    e = rng.standard_normal((n, k)) if link == "probit" else rng.logistic(size=(n, k))
    latent = alpha[:, None] + gamma[None, :] + e
    q = (latent[:, :, None] > per_judge[None, :, :]).sum(axis=2)
    return pd.DataFrame({"model": model, "scenario": np.repeat([f"s{i:03d}" for i in range(n)], k),
                         "judge": np.tile([f"j{l}" for l in range(k)], n), "score": values[q].ravel()})
