"""Write the input tables of the joint lme4 reference fits (run once; the CSVs are checked in).

    python tests/data/lme4_joint/make_inputs.py && Rscript tests/data/lme4_joint/fit_lme4_joint.R
"""

from pathlib import Path

import numpy as np

from cjstats.studies.simulate_joint import simulate_joint

HERE = Path(__file__).parent


def unbalanced(seed: int, s2_ms: float) -> "pd.DataFrame":  # noqa: F821
    rng = np.random.default_rng(seed)
    gp = rng.normal(0, 0.15, (3, 4))
    f = simulate_joint(n=24, m=3, mu=[3.0, 3.3, 3.1], gamma=[-0.3, 0.0, 0.1, 0.2], s2_scenario=0.4,
                       s2_model_scenario=s2_ms, s2_generation=0.15, s2_residual=0.5, judge_model=gp, rng=rng)
    keep = rng.random(len(f)) > 0.15                               # 15% of judge calls missing
    keep &= ~((f.model == "m2") & (f.scenario < 4))                # m2 skips 4 scenarios entirely
    keep &= ~((f.generation == 2) & (f.scenario % 3 == 0))         # unequal generations per scenario
    keep &= ~((f.generation >= 1) & (f.scenario % 5 == 0))
    return f[keep].reset_index(drop=True)


def real_mentalalign(n_scenarios: int = 100) -> "pd.DataFrame":  # noqa: F821
    """MentalAlign composite (mean of the 7 criteria), all 10 models and 4 judges, the first contexts (m = 1)."""
    import cjstats as cj

    f = cj.datasets.load("mentalalign", composite=True).to_frame()
    keep = sorted(f["scenario"].unique())[:n_scenarios]
    return f[f["scenario"].isin(keep)].reset_index(drop=True)


if __name__ == "__main__":
    unbalanced(1, 0.2).to_csv(HERE / "unbalanced.csv", index=False)
    unbalanced(2, 0.0).to_csv(HERE / "boundary.csv", index=False)
    real_mentalalign().to_csv(HERE / "real_mentalalign.csv", index=False, float_format="%.10g")
