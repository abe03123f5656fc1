"""Simulated score tables from the paper's Table 3 components (shared by conftest.py and the test files)."""

from __future__ import annotations

import pandas as pd

from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores


def table3_frame(n: int, m: int, k: int, seed: int, model: str = "Qwen", *, missing: float = 0.0,
                 as_model: str | None = None) -> pd.DataFrame:
    """n scenarios x m generations x k judges of ``model``'s Table 3 (a) components (labelled ``as_model``)."""
    c = TABLE3_MTBENCH[model]
    f = simulate_scores(n=n, m=m, k=k, s2_scenario=c["scenario"], s2_generation=c["generation"],
                        s2_residual=c["residual"], judge_offsets=panel_offsets(k, c["judge_panel"]),
                        mu=c["mu"], model=model, missing=missing, seed=seed)
    return f.assign(model=as_model) if as_model else f
