"""Score tables simulated from the paper's model with known components (paper Eq. 1, ``eq:model``).

    X_ijl = mu + alpha_i + beta_ij + gamma_l + eps_ijl,
    alpha_i ~ N(0, s2_scenario), beta_ij ~ N(0, s2_generation), eps_ijl ~ N(0, s2_residual)

and gamma_l either given (a fixed panel, centred so that sum gamma_l = 0) or drawn afresh as
u_l ~ N(0, s2_judge_population) and centred (the random-judge view). Used by the known-truth tests,
by the examples and by users who want to check an estimator on their own design.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError

__all__ = ["TABLE3_MTBENCH", "panel_offsets", "simulate_array", "simulate_ordinal_scores", "simulate_scores"]

#: Per-observation components of the paper's Table 3 (a), MT-Bench, n = 80, m = 10, K = 5:
#: (scenario, generation, judge_panel, residual) for each evaluated model.
TABLE3_MTBENCH: dict[str, dict[str, float]] = {
    "Qwen": {"scenario": 1.530, "generation": 0.266, "judge_panel": 0.947, "residual": 1.486, "mu": 7.13},
    "Llama": {"scenario": 0.882, "generation": 0.238, "judge_panel": 0.503, "residual": 1.130, "mu": 7.87},
    "GPT": {"scenario": 0.634, "generation": 0.076, "judge_panel": 0.339, "residual": 0.564, "mu": 8.72},
    "Gemini": {"scenario": 0.408, "generation": 0.000, "judge_panel": 0.435, "residual": 0.661, "mu": 8.75},
    "Claude": {"scenario": 0.393, "generation": 0.000, "judge_panel": 0.427, "residual": 0.830, "mu": 8.61},
}


def panel_offsets(k: int, s2_judge_panel: float) -> np.ndarray:
    """A fixed panel of K offsets with sum 0 and mean(gamma^2) = s2_judge_panel (evenly spread, deterministic)."""
    if k < 2:
        raise CjstatsError(f"A judge panel needs at least 2 judges. Got k={k} instead.")
    base = np.linspace(-1.0, 1.0, k)
    base -= base.mean()
    return base * np.sqrt(s2_judge_panel / np.mean(base**2))


def simulate_array(*, n: int, m: int, k: int, s2_scenario: float, s2_generation: float, s2_residual: float,
                   judge_offsets: Sequence[float] | None = None, s2_judge_population: float | None = None,
                   mu: float = 0.0, reps: int | None = None, seed: int | np.random.Generator | None = None) -> np.ndarray:
    """Balanced scores as an array of shape (n, m, K), or (reps, n, m, K) when ``reps`` is given.

    Give either ``judge_offsets`` (a fixed panel, used as given in every replicate) or
    ``s2_judge_population`` (offsets u_l ~ N(0, s2) drawn afresh per replicate and centred over the panel).
    """
    if (judge_offsets is None) == (s2_judge_population is None):
        raise CjstatsError("Give exactly one of judge_offsets (fixed panel) or s2_judge_population (random judges).")
    rng = np.random.default_rng(seed)
    r = 1 if reps is None else int(reps)
    y = rng.standard_normal((r, n, m, k)) * np.sqrt(s2_residual)
    y += (rng.standard_normal((r, n, 1, 1)) * np.sqrt(s2_scenario))
    y += (rng.standard_normal((r, n, m, 1)) * np.sqrt(s2_generation))
    if judge_offsets is not None:
        g = np.asarray(judge_offsets, dtype=float)
        if g.shape != (k,):
            raise CjstatsError(f"judge_offsets must have k={k} values. Got {g.shape[0]} instead.")
        y += g - g.mean()
    else:
        u = rng.standard_normal((r, 1, 1, k)) * np.sqrt(s2_judge_population)
        y += u - u.mean(axis=-1, keepdims=True)
    y += mu
    return y[0] if reps is None else y


def simulate_scores(*, n: int, m: int, k: int, s2_scenario: float, s2_generation: float, s2_residual: float,
                    judge_offsets: Sequence[float] | None = None, s2_judge_population: float | None = None,
                    mu: float = 0.0, model: str = "model", missing: float = 0.0,
                    seed: int | np.random.Generator | None = None) -> pd.DataFrame:
    """A long score table (``model, scenario, generation, judge, score``) from known components.

    ``missing`` is the probability that each judge call is lost at random (an unbalanced design).
    Judges are named ``judge_0 .. judge_{K-1}``.
    """
    rng = np.random.default_rng(seed)
    y = simulate_array(n=n, m=m, k=k, s2_scenario=s2_scenario, s2_generation=s2_generation,
                       s2_residual=s2_residual, judge_offsets=judge_offsets,
                       s2_judge_population=s2_judge_population, mu=mu, seed=rng)
    i, j, l = np.meshgrid(np.arange(n), np.arange(m), np.arange(k), indexing="ij")
    df = pd.DataFrame({"model": model, "scenario": i.ravel(), "generation": j.ravel(),
                       "judge": np.char.add("judge_", l.ravel().astype(str)), "score": y.ravel()})
    if missing > 0:
        df = df[rng.random(len(df)) >= missing].reset_index(drop=True)
    return df


def simulate_ordinal_scores(n: int, m: int, k: int, *, s2a: float, s2b: float, gamma: np.ndarray,
                            cuts: np.ndarray, seed: int | np.random.Generator | None = None,
                            model: str = "x", link: str = "logit") -> pd.DataFrame:
    """Ordinal scores 1..J from the cumulative-link model with known latent effects.

    eta_ijl = alpha_i + beta_ij + gamma_l with alpha_i ~ N(0, s2a), beta_ij ~ N(0, s2b); the score is
    1 + #{c : eta_ijl + noise > cuts[c]}, the noise standard logistic (``link="logit"``) or standard normal
    (``"probit"``): the generative model of ``likelihood="ordinal"`` (and ``method="ordinal"``) with that link.
    Judges are named ``j0 .. j{K-1}``.
    """
    if link not in ("logit", "probit"):
        raise CjstatsError(f"The 'link' argument of simulate_ordinal_scores must be 'logit' or 'probit'. Got "
                           f"{link!r} instead.")
    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, np.sqrt(s2a), n)
    b = rng.normal(0.0, np.sqrt(s2b), (n, m))
    i, j, l = np.meshgrid(np.arange(n), np.arange(m), np.arange(k), indexing="ij")
    eta = a[i] + b[i, j] + np.asarray(gamma)[l]
    noisy = rng.logistic(eta) if link == "logit" else eta + rng.standard_normal(eta.shape)
    score = 1 + (noisy[..., None] > np.asarray(cuts)).sum(axis=-1)
    return pd.DataFrame({"model": model, "scenario": i.ravel(), "generation": j.ravel(),
                         "judge": np.char.add("j", l.ravel().astype(str)), "score": score.ravel()})
