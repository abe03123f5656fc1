"""Small-n levels (issue 31): the threshold test's bootstrap reference and warnings, the model_scenario LR test's
bootstrap reference. The CI part checks the mechanisms on fixed seeds (a rejection rate at 5% needs hundreds of
replicates, each refitting bootstrap tables: too slow for CI); ``slow`` runs the level study of
``benchmarks/bench_small_n_levels.py`` and asserts its rates within 3 Monte Carlo SE.

Mechanisms:
- the bootstrap tables of the model_scenario test are the statistics of a row-level table (REML deviance equal
  to 1e-9 at two thetas, complete, 10% missing and m = 1); a null table's bootstrap p-value is not small and a
  table with per-model variances 0.02 / 0.02 / 1.5 gets the smallest p-value 1 / (1 + n_boot);
- the threshold test's bootstrap tables have the shared-threshold model's category frequencies (4 SE);
  a null table's bootstrap p-value is not small, a judge that squeezes the scale is rejected at 1 / (1 + n_boot);
- the table that overflowed exp in a threshold gap now fits without a RuntimeWarning; rows keep their unit key;
  the chi2 reference warns below 80 scenarios.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ordinal_sim import simulate_latent
from scipy.stats import norm

import cjstats as cj
from cjstats.estimators.joint._joint import joint_stats
from cjstats.estimators.joint.reml import _row_design, _simulate_nested, model_scenario_test, reml_deviance
from cjstats.estimators.ordinal_ml import threshold_test
from cjstats.estimators.ordinal_ml.likelihood import make_problem
from cjstats.estimators.ordinal_ml.threshold_test import bootstrap_null_categories
from cjstats.studies.simulate_joint import simulate_joint

GAMMA = (-0.3, 0.0, 0.1, 0.2)
CUTS = (-1.2, -0.4, 0.4, 1.2)
JOINT = dict(mu=[0.0, 0.3, 0.1], gamma=[-0.2, 0.0, 0.1, 0.2], s2_scenario=0.5, s2_generation=0.1, s2_residual=1.0)


@pytest.mark.parametrize("missing, m", [(0.0, 2), (0.1, 2), (0.0, 1)])
def test_bootstrap_statistics_are_those_of_a_row_table(missing, m):
    """_simulate_nested's statistics = build_stats of the same draw written as rows (REML deviance to 1e-9)."""
    f = simulate_joint(n=12, m=m, s2_model_scenario=0.2, missing=missing, rng=1, **JOINT)
    js, _ = joint_stats(f, "test")
    ns = js.for_joint_reml()
    design, _ = _row_design(ns)
    th = np.array([0.5, 0.2, 0.1 if m > 1 else 0.0])
    sim = _simulate_nested(ns, design, th, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    ta, tm, tb = np.sqrt(th)
    y = (ta * rng.standard_normal(ns.n_scenarios)[design["scenario"]]
         + tm * rng.standard_normal(ns.n_groups)[design["group"]]
         + tb * rng.standard_normal(design["n_cells"])[design["cell"]] + rng.standard_normal(design["cell"].size))
    rows = pd.DataFrame({"model": np.array(js.models)[design["model"]],
                         "scenario": np.array(js.scenario_labels)[design["scenario"]], "generation": design["cell"],
                         "judge": np.array(js.judge_labels)[design["judge"]], "score": y})
    ns_rows = joint_stats(rows, "test")[0].for_joint_reml()
    t = np.eye(ns.n_models * ns.n_judges)
    for theta in ([0.3, 0.1, 0.2], [1.0, 0.5, 0.05]):
        a, b = reml_deviance(np.array(theta), sim, t)[0], reml_deviance(np.array(theta), ns_rows, t)[0]
        assert a == pytest.approx(b, rel=1e-9, abs=1e-9)


def test_model_scenario_bootstrap_null_and_alternative():
    """Null table (pooled 0.2): bootstrap p not small (0.25 measured; chi2 p 0.29). Per-model variances
    0.02 / 0.02 / 1.5: p = 1/20, the smallest possible with 19 tables."""
    null = simulate_joint(n=20, m=2, s2_model_scenario=0.2, rng=1, **JOINT)
    r = model_scenario_test(null, n_boot=19, seed=3)
    assert r["p_value"] > 0.1 and r["test"].startswith("LR (REML), parametric bootstrap"), r
    rng = np.random.default_rng(2)
    alt = simulate_joint(n=20, m=2, s2_model_scenario=0.0, rng=rng, **JOINT)
    sd = np.sqrt([0.02, 0.02, 1.5])
    shift = rng.standard_normal((3, 20)) * sd[:, None]
    alt["score"] += shift[alt.model.str[1:].astype(int), alt.scenario]
    r = model_scenario_test(alt, n_boot=19, seed=3)
    assert r["p_value"] == pytest.approx(1 / 20), r
    assert model_scenario_test(alt, reference="chi2")["p_value"] < 1e-3
    # the default fit_joint row says what its reference is
    assert "conservative" in cj.fit_joint(null, "reml").tests["model_scenario"]["test"]


def test_bootstrap_categories_follow_the_model():
    """Category frequencies of the threshold bootstrap's draws = the model's marginal probabilities
    P(Y = k | judge l) = E_a[F(c_k - g_l - a) - F(c_{k-1} - g_l - a)] (Gauss-Hermite) within 4 binomial SE."""
    n = 4000
    rng = np.random.default_rng(0)
    scen, judge = np.repeat(np.arange(n), 4), np.tile(np.arange(4), n)
    p = make_problem(np.zeros(4 * n), scen, judge, n_scenarios=n, n_judges=4, n_categories=5, link="probit",
                     thresholds="shared", nagq=10)
    gaps = np.diff(CUTS)
    x = np.r_[0.5 * math.log(0.8), np.array(GAMMA[1:]) - GAMMA[0], CUTS[0] - GAMMA[0], np.log(gaps)]
    cat = bootstrap_null_categories(p, x, rng)
    z, w = np.polynomial.hermite_e.hermegauss(60)
    w = w / w.sum()
    a = math.sqrt(0.8) * z
    ext = np.r_[-np.inf, CUTS, np.inf]
    for j, g in enumerate(GAMMA):
        prob = np.array([w @ (norm.cdf(ext[k + 1] - g - a) - norm.cdf(ext[k] - g - a)) for k in range(5)])
        freq = np.bincount(cat[judge == j], minlength=5) / n
        assert np.all(np.abs(freq - prob) < 4 * np.sqrt(prob * (1 - prob) / n)), (j, freq, prob)


def test_threshold_bootstrap_null_and_alternative():
    """Null table (40 scenarios x 3 judges): bootstrap p not small. One judge that squeezes 2-3 and stretches 4
    (the power example of test_ordinal_ml_decisions): p = 1/20, the smallest with 19 tables."""
    null = simulate_latent(40, (-0.2, 0.0, 0.2), [-0.5, 0.5], 0.8, seed=101)
    r = threshold_test(null, nagq=1, reference="bootstrap", n_boot=19, seed=1)[0]
    assert r["p_value"] > 0.1 and r["reference"].startswith("parametric bootstrap"), r
    cuts = np.array([[-1.0, -0.3, 0.3, 1.0], [-1.0, -0.3, 0.3, 1.0], [-0.5, -0.4, -0.3, 1.5]])
    alt = simulate_latent(40, (0.0, 0.0, 0.0), cuts, 0.8, seed=7)
    r = threshold_test(alt, nagq=1, reference="bootstrap", n_boot=19, seed=1)[0]
    assert r["p_value"] == pytest.approx(1 / 20), r


def test_threshold_test_no_overflow_labels_and_small_n_warning():
    """The table (seed 10111, 20 scenarios) whose per-judge fit sent a threshold gap's exp past 1e308 fits
    without a RuntimeWarning; its row keeps the unit key ('model' is the model's name, the model form is in
    'random_effects') and the chi2 reference warns at 20 < 80 scenarios."""
    d = simulate_latent(20, GAMMA, CUTS, 0.8, link="probit", seed=10_111, model="gpt")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = threshold_test(d, link="probit")[0]
    assert not [x for x in w if issubclass(x.category, RuntimeWarning)], [str(x.message) for x in w]
    assert any(issubclass(x.category, cj.CjstatsWarning) and "liberal below 80" in str(x.message) for x in w)
    assert r["model"] == "gpt" and r["random_effects"] == "scenario (AGQ 10)" and r["df"] == 9
    assert r["reference"].startswith("chi2_9")


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_n_boot_must_be_a_positive_integer(bad):
    d = simulate_latent(20, GAMMA, CUTS, 0.8, seed=1)
    with pytest.raises(cj.CjstatsError, match="'n_boot' argument of threshold_test"):
        threshold_test(d, reference="bootstrap", n_boot=bad)
    with pytest.raises(cj.CjstatsError, match="'n_boot' argument of model_scenario_test"):
        model_scenario_test(simulate_joint(n=5, m=1, s2_model_scenario=0.2, rng=1, **JOINT), n_boot=bad)


@pytest.mark.slow
def test_levels_full_run(tmp_path):
    """The level study (benchmarks/bench_small_n_levels.py; numbers in docs/ordinal.md and docs/comparisons.md):
    bootstrap references and the n = 80 chi2 threshold test within 3 MC SE of 5%; ordinal mu coverage in 93-97%."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_small_n_levels import main

    out = main(["--reps", "400", "--boot-reps", "150", "--n-boot", "19", "--jobs", "2",
                "--out", str(tmp_path / "levels.json")])
    for r in out["rows"]:
        if r["part"] == "mu coverage":
            assert 0.93 <= r["level"] <= 0.97, r
        elif r["reference"] != "chi2" or (r["part"] == "threshold" and r["n"] == 80):
            assert abs(r["level"] - 0.05) <= 3 * r["mc_se"], r
