"""Coverage of the joint REML intervals and level of its LR test on simulated unbalanced tables (about 40-80 s).

    PYTHONPATH=. .venv/bin/python benchmarks/coverage_compare_reml.py

200 tables of 3 models x 30 scenarios x 2 generations x 4 judges with 15% of judge calls missing at random.
Each replicate fits one table with a planted self-preference (judge j0 for model m1) and one without any
judge x model interaction (for the level of the LR test). Monte Carlo SE of a 95% coverage: 1.5 points.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import cjstats as cj
from cjstats.estimators.joint.self_preference import self_preference_contrast
from cjstats.studies.simulate_joint import simulate_joint

TRUE = {"scenario": 0.4, "model_scenario": 0.2, "generation": 0.15, "residual": 0.5}


def main(replicates: int = 200, seed: int = 7) -> None:
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(seed)
    gp = np.zeros((3, 4))
    gp[1, 0] = 0.4
    gp = gp - gp.mean(0) - gp.mean(1, keepdims=True) + gp.mean()
    c = self_preference_contrast(3, 4, 0, 1, [0, 2])
    truth = float((c * gp).sum())
    kw = dict(n=30, m=2, mu=[0, .2, .4], gamma=[-.3, 0, .1, .2], s2_scenario=TRUE["scenario"],
              s2_model_scenario=TRUE["model_scenario"], s2_generation=TRUE["generation"],
              s2_residual=TRUE["residual"], missing=0.15)
    hits = dict.fromkeys(TRUE, 0)
    sp_hit = lr_rej = 0
    t0 = time.time()
    for _ in range(replicates):
        f = simulate_joint(judge_model=gp, rng=rng, **kw)
        fit = cj.fit_joint(f, "reml")
        t = fit.components.set_index(["component", "view"])
        for name, v in TRUE.items():
            lo, hi = t.loc[(name, "panel"), ["lower", "upper"]]
            hits[name] += bool(lo <= v <= hi)
        s = cj.self_preference(f, {"j0": "m1"}, fit=fit).contrasts.iloc[0]
        sp_hit += bool(s.lower <= truth <= s.upper)
        null = cj.fit_joint(simulate_joint(rng=rng, **kw), "reml")
        lr_rej += null.tests["judge_model"]["p_value"] < 0.05
    print({k: v / replicates for k, v in hits.items()}, "self_preference", sp_hit / replicates,
          "LR level", lr_rej / replicates, f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
