"""Coverage of the joint ordinal model's intervals (``method="ordinal"``, probit verdicts) in a known-truth simulation.

Truth: P(pass) = Phi(mu_p + g_l + gp_pl + a_i + b_pi), a ~ N(0, 0.5), b ~ N(0, 0.3), 3 models x 3 judges. The
latent difference of two models is mu_a - mu_b + mean_l (gp_al - gp_bl) (the fit's cell means are the
linear predictor); the pass-rate difference is that of mean_l Phi(eta_pl / sqrt(1 + 0.5 + 0.3)), a new scenario's
pass rate by the panel (marginal over the scenario effects). Every pair's 95% interval is checked.

The default run is a small deterministic subset: coverage 0.8-1.0 and the mean of z^2 = ((estimate - truth) / SE)^2
in 0.5-2 (a standard error off by a factor of two covers ~0.66 or ~1.0, and gives a mean z^2 of ~4 or ~1/4:
``test_subset_catches_a_wrong_se`` checks that the subset fails then); ``-m slow`` runs 300 replicates per size
and asks for coverage 0.93-0.97 and a mean z^2 of 0.8-1.25.
Measured coverage: docs/comparisons.md, "Verdicts and ratings".
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import cjstats as cj
from cjstats.estimators.joint.ordinal import score_scale

MU = np.array([0.4, 0.1, -0.2])
G = np.array([-0.3, 0.0, 0.3])
GP = np.array([[0.1, -0.1, 0.0], [-0.05, 0.1, -0.05], [-0.05, 0.0, 0.05]])
S2A, S2B = 0.5, 0.3


def _table(n: int, rng: np.random.Generator) -> pd.DataFrame:
    P, K = MU.size, G.size
    a = rng.normal(0, np.sqrt(S2A), n)
    b = rng.normal(0, np.sqrt(S2B), (P, n))
    lat = MU[:, None, None] + G[None, None, :] + GP[:, None, :] + a[None, :, None] + b[:, :, None]
    y = (lat + rng.standard_normal(lat.shape) > 0).astype(float)
    pp, ii, ll = np.meshgrid(range(P), range(n), range(K), indexing="ij")
    return pd.DataFrame({"model": [f"m{x}" for x in pp.ravel()], "scenario": ii.ravel(), "generation": 0,
                         "judge": [f"j{x}" for x in ll.ravel()], "score": y.ravel()})


def coverage(n: int, reps: int, seed: int, level: float = 0.95, se_scale: float = 1.0) -> dict[str, float]:
    """Share of the pairwise intervals (latent, pass-rate) that cover the truth over ``reps`` tables, and the mean
    of z^2 = ((estimate - truth) / SE)^2 of each (about 1 when the SEs are right; 1/4 or 4 when they are off by a
    factor of 2). ``se_scale`` multiplies every SE (the test that the CI subset would catch a wrong SE)."""
    rng = np.random.default_rng(seed)
    eta = MU[:, None] + G[None, :] + GP
    true_lat = eta.mean(axis=1)
    true_rate = norm.cdf(eta / np.sqrt(1 + S2A + S2B)).mean(axis=1)
    hit_l, hit_r, n_int, z2_l, z2_r = 0, 0, 0, 0.0, 0.0
    q = norm.ppf(0.5 + level / 2)
    for _ in range(reps):
        d = _table(n, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                fit = cj.fit_joint(d, method="ordinal", ci_level=level)
            except cj.CjstatsError:
                continue
        if fit.diagnostics["identification"]:    # a separated cell (rare at these rates): no interval is reported
            continue
        _, sd = score_scale(fit, level)
        for a, b in [(0, 1), (0, 2), (1, 2)]:
            c = np.zeros((3, 3))
            c[a], c[b] = 1 / 3, -1 / 3
            r = fit.contrast(c, level=level)
            se_l = se_scale * r.std_error
            hit_l += abs(r.estimate - (true_lat[a] - true_lat[b])) <= q * se_l
            z2_l += ((r.estimate - (true_lat[a] - true_lat[b])) / se_l) ** 2
            row = sd[(sd["model_a"] == fit.models[a]) & (sd["model_b"] == fit.models[b])]
            sign = 1.0
            if row.empty:
                row = sd[(sd["model_a"] == fit.models[b]) & (sd["model_b"] == fit.models[a])]
                sign = -1.0
            est_r, se_r = sign * float(row["difference"].iloc[0]), se_scale * float(row["std_error"].iloc[0])
            if se_scale == 1.0:     # the reported interval itself (Wald: estimate +- q SE)
                lo, hi = sorted((sign * float(row["lower"].iloc[0]), sign * float(row["upper"].iloc[0])))
                assert (lo, hi) == pytest.approx((est_r - q * se_r, est_r + q * se_r), abs=1e-9)
            hit_r += abs(est_r - (true_rate[a] - true_rate[b])) <= q * se_r
            z2_r += ((est_r - (true_rate[a] - true_rate[b])) / se_r) ** 2
            n_int += 1
    return {"latent": hit_l / n_int, "pass_rate": hit_r / n_int, "z2_latent": z2_l / n_int,
            "z2_pass_rate": z2_r / n_int, "intervals": n_int}


@pytest.mark.parametrize("n", [20, 80])
def test_coverage_subset(n):
    """Coverage alone cannot fail an SE that is too large (it covers ~1.0); the mean z^2 can: 0.5-2 here, where
    an SE off by a factor of 2 gives about 1/4 or 4 (checked on these seeds by test_subset_catches_a_wrong_se)."""
    cov = coverage(n, reps=16, seed=2024 + n)
    assert 0.8 <= cov["latent"] <= 1.0 and 0.8 <= cov["pass_rate"] <= 1.0, cov
    assert 0.5 <= cov["z2_latent"] <= 2.0 and 0.5 <= cov["z2_pass_rate"] <= 2.0, cov


@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_subset_catches_a_wrong_se(scale):
    """The CI subset's bounds on the mean z^2 fail when every SE is halved or doubled (n = 20, the same seed)."""
    cov = coverage(20, reps=16, seed=2044, se_scale=scale)
    assert not (0.5 <= cov["z2_latent"] <= 2.0) and not (0.5 <= cov["z2_pass_rate"] <= 2.0), cov


@pytest.mark.slow
@pytest.mark.parametrize("n", [20, 80])
def test_coverage_full(n):
    cov = coverage(n, reps=300, seed=7 + n)
    assert 0.93 <= cov["latent"] <= 0.97 and 0.93 <= cov["pass_rate"] <= 0.97, cov
    assert 0.8 <= cov["z2_latent"] <= 1.25 and 0.8 <= cov["z2_pass_rate"] <= 1.25, cov
