"""Simulated multi-model score tables from the joint model (docs/estimands.md, "Several models"), for tests, docs and designs.

    X_pijl = mu_p + alpha_i + (alpha p)_pi + beta_pij + gamma_l + (gamma p)_pl + eps_pijl
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["simulate_joint_array", "simulate_joint"]


def simulate_joint_array(*, n: int, m: int, mu: Sequence[float], gamma: Sequence[float],
                         s2_scenario: float, s2_model_scenario: float, s2_generation: float, s2_residual: float,
                         judge_model: np.ndarray | None = None,
                         rng: np.random.Generator | int | None = None) -> np.ndarray:
    """A (P, n, m, K) array from the joint model; ``judge_model`` is the (P, K) table of (gamma p)_pl (default 0)."""
    rng = np.random.default_rng(rng)
    mu = np.asarray(mu, dtype=float)
    gamma = np.asarray(gamma, dtype=float)
    p, k = len(mu), len(gamma)
    gp = np.zeros((p, k)) if judge_model is None else np.asarray(judge_model, dtype=float)
    a = rng.normal(0, np.sqrt(s2_scenario), n)
    ap = rng.normal(0, np.sqrt(s2_model_scenario), (p, n))
    b = rng.normal(0, np.sqrt(s2_generation), (p, n, m))
    e = rng.normal(0, np.sqrt(s2_residual), (p, n, m, k))
    return (mu[:, None, None, None] + a[None, :, None, None] + ap[:, :, None, None] + b[..., None]
            + gamma[None, None, None, :] + gp[:, None, None, :] + e)


def simulate_joint(*, n: int, m: int, mu: Sequence[float], gamma: Sequence[float], s2_scenario: float,
                   s2_model_scenario: float, s2_generation: float, s2_residual: float,
                   judge_model: np.ndarray | None = None, missing: float = 0.0,
                   rng: np.random.Generator | int | None = None) -> pd.DataFrame:
    """The long table (model, scenario, generation, judge, score) of :func:`simulate_joint_array`.

    Models are named ``m0, m1, ...`` and judges ``j0, j1, ...``; ``missing`` drops that share of rows at random.
    """
    rng = np.random.default_rng(rng)
    y = simulate_joint_array(n=n, m=m, mu=mu, gamma=gamma, s2_scenario=s2_scenario,
                             s2_model_scenario=s2_model_scenario, s2_generation=s2_generation,
                             s2_residual=s2_residual, judge_model=judge_model, rng=rng)
    p, n_, m_, k = y.shape
    idx = np.indices(y.shape).reshape(4, -1)
    df = pd.DataFrame({"model": np.char.add("m", idx[0].astype(str)), "scenario": idx[1],
                       "generation": idx[2], "judge": np.char.add("j", idx[3].astype(str)), "score": y.reshape(-1)})
    if missing > 0:
        df = df[rng.random(len(df)) >= missing].reset_index(drop=True)
    return df
