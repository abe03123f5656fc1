"""Regenerates docs/covariates_plot.png and the numbers of docs/covariates.md (run from the repository root)."""
import matplotlib; matplotlib.use("Agg")
import cjstats as cj

d = cj.simulate_length_bias(n=80, slopes=(0.0, 0.002, 0.006), seed=3)   # m0 writes 150 tokens more than m1
fit = cj.fit_joint(d, "reml", covariates=["length"])
print(fit.slopes.to_string(index=False))
print(fit.tests["slopes[length]"])
print(fit.contrast("slope[length, j2] - slope[length, j0]"))
print(cj.compare_models(d, "reml").differences[["model_a", "model_b", "difference", "std_error", "lower", "upper"]].to_string(index=False))
cmp = cj.compare_models(d, "reml", covariates=["length"])
print(cmp.differences[["model_a", "model_b", "difference", "std_error", "lower", "upper"]].to_string(index=False))
print(cmp.fit_notes())
print(fit)
cj.plots.slopes_plot(fit, per=100).savefig("docs/covariates_plot.png", dpi=110, bbox_inches="tight")
