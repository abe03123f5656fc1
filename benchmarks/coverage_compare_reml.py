"""Coverage of the joint REML intervals and level of its LR test on simulated unbalanced tables (about 80 s).

    PYTHONPATH=. .venv/bin/python benchmarks/coverage_compare_reml.py
"""
import numpy as np, cjstats as cj, warnings, time
from cjstats.comparisons.simulate import simulate_joint
from cjstats.comparisons.self_preference import self_preference_contrast
warnings.simplefilter("ignore")
rng = np.random.default_rng(7)
gp = np.zeros((3,4)); gp[1,0]=0.4; gp = gp - gp.mean(0) - gp.mean(1, keepdims=True) + gp.mean()
c = self_preference_contrast(3,4,0,1,[0,2]); truth=float((c*gp).sum())
true = dict(scenario=.4, model_scenario=.2, generation=.15, residual=.5)
R=200; hits={k:0 for k in true}; sp_hit=0; lr_rej=0; t0=time.time()
for r in range(R):
    f = simulate_joint(n=30, m=2, mu=[0,.2,.4], gamma=[-.3,0,.1,.2], s2_scenario=.4, s2_model_scenario=.2, s2_generation=.15, s2_residual=.5, judge_model=gp, missing=0.15, rng=rng)
    fit = cj.fit_joint(f, "reml")
    t = fit.components.set_index(["component","view"])
    for k,v in true.items():
        lo, hi = t.loc[(k,"fixed"),["lower","upper"]]
        hits[k] += (lo <= v <= hi)
    s = cj.self_preference(f, {"j0":"m1"}, fit=fit).contrasts.iloc[0]
    sp_hit += s.lower <= truth <= s.upper
    f0 = simulate_joint(n=30, m=2, mu=[0,.2,.4], gamma=[-.3,0,.1,.2], s2_scenario=.4, s2_model_scenario=.2, s2_generation=.15, s2_residual=.5, missing=0.15, rng=rng)
    lr_rej += cj.fit_joint(f0, "reml").tests["judge_model"]["p_value"] < 0.05
print({k: v/R for k,v in hits.items()}, "sp", sp_hit/R, "LR level", lr_rej/R, "time", time.time()-t0)
