"""simulation_study with latent-scale methods (method="ordinal") on ordinal designs: the latent truth
(cjstats.studies.latent) - its formulas, that a large fit recovers it, and that the study scores against it."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import cjstats as cj
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io.scores import Scores
from cjstats.studies.data import _simulate_replicate
from cjstats.studies.latent import expected_ordinal_score, latent_truth

COMP = {"mu": 3.4, "scenario": 0.8, "generation": 0.3, "residual": 0.5, "judge_panel": 0.2, "scenario_judge": 0.0}


def test_expected_score_equals_a_monte_carlo_of_the_clipped_rounded_score():
    rng = np.random.default_rng(3)
    for loc, sd, j in [(3.4, 1.3, 5), (4.6, 0.7, 5), (7.1, 2.0, 10), (1.2, 0.9, 5)]:
        z = rng.normal(loc, sd, 400_000)
        y = np.clip(np.rint(z), 1, j)
        se = y.std() / math.sqrt(y.size)
        assert abs(float(expected_ordinal_score(loc, sd, j)) - y.mean()) < 4 * se


def test_latent_truth_formulas():
    gamma = np.array([-0.5, 0.1, 0.4])
    t = latent_truth(COMP, gamma, m=3, n_points=5, judge_population=0.25)
    assert t["scenario"] == pytest.approx(0.8 / 0.5)
    assert t["generation"] == pytest.approx(0.3 / 0.5)
    assert t["residual"] == 1.0
    assert t["judge_panel"] == pytest.approx(np.mean(gamma**2) / 0.5)
    assert t["judge_population"] == pytest.approx(0.5)
    assert math.isnan(t["scenario_judge"])
    sd = math.sqrt(0.8 + 0.3 + 0.5)
    assert t["mu"] == pytest.approx(np.mean(expected_ordinal_score(3.4 + gamma, sd, 5)))
    t1 = latent_truth(COMP, gamma, m=1, n_points=5)
    assert t1["scenario"] == pytest.approx((0.8 + 0.3) / 0.5)
    assert math.isnan(t1["generation"]) and math.isnan(t1["judge_population"])
    assert t1["mu"] == pytest.approx(t["mu"])        # mu integrates over scenario and generation either way
    tl = latent_truth(COMP, gamma, m=3, n_points=5, link="logit")
    assert tl["mu"] == pytest.approx(t["mu"]) and math.isnan(tl["scenario"]) and math.isnan(tl["judge_panel"])
    with pytest.raises(CjstatsError, match="scenario x judge"):
        latent_truth({**COMP, "scenario_judge": 0.3}, gamma, m=3, n_points=5)


def test_a_large_ordinal_fit_recovers_the_latent_truth():
    """A 6,000-row table (m = 1, 1..5 with a ceiling) fit by method='ordinal': every latent component within
    4 of its standard errors of latent_truth (a mapping off by the residual, 1/0.5 = 2, would fail)."""
    truth = cj.Truth({"x": COMP})
    design = cj.Design(n=1500, m=1, k=4, misspec={"ordinal": 5})
    frame, records, offsets = _simulate_replicate(truth, design, np.random.default_rng(11))
    assert frame["score"].eq(5).mean() > 0.05                     # the ceiling is hit
    lt = latent_truth(COMP, offsets[("x", None)], m=1, n_points=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = cj.estimate(Scores(frame), "ordinal", link="probit", seed=1)
    c = fit.components.set_index("component")
    assert fit.scale == "latent"
    for comp in ("mu", "scenario", "judge_panel"):
        se = (c.loc[comp, "upper"] - c.loc[comp, "lower"]) / (2 * 1.96)
        assert abs(c.loc[comp, "estimate"] - lt[comp]) < 4 * se, (comp, c.loc[comp, "estimate"], lt[comp], se)
    # the score-scale truth is far off the latent estimate: the test can tell the two apart
    assert abs(c.loc["scenario", "estimate"] - dict(records)[("x", None, "scenario")]) > \
        8 * (c.loc["scenario", "upper"] - c.loc["scenario", "lower"]) / (2 * 1.96)


def test_study_scores_latent_methods_on_the_latent_truth_and_skips_them_elsewhere():
    truth = cj.Truth({"x": COMP})
    designs = [cj.Design(n=30, m=1, k=3, misspec={"ordinal": 5}, label="ord"),
               cj.Design(n=30, m=1, k=3, label="gauss"),
               cj.Design(n=30, m=2, k=3, misspec={"ordinal": 5, "scenario_judge": 0.4}, label="ord+sj")]
    with pytest.warns(CjstatsWarning, match="skipped"):
        res = cj.simulation_study(truth, designs, ["ordinal", "reml"], 3, seed=5)
    rep = res.replicates
    ordr = rep[rep["method"] == "ordinal"]
    assert set(ordr["design"]) == {"ord"}                        # skipped on the other two, with the reasons:
    assert {(s["design"], s["method"]) for s in res.settings["skipped"]} == {("gauss", "ordinal"),
                                                                             ("ord+sj", "ordinal")}
    assert (ordr["error"] == "").all()
    # the same replicate's truth, recomputed: latent for ordinal, the score scale for reml
    frame, records, offsets = _simulate_replicate(
        truth, designs[0], np.random.default_rng(np.random.SeedSequence(5, spawn_key=(0, 1)).spawn(2)[0]))
    lt = latent_truth(COMP, offsets[("x", None)], m=1, n_points=5,
                      judge_population=dict(records)[("x", None, "judge_population")])
    got = ordr[ordr["replicate"] == 1].set_index("component")["truth"]
    for comp in ("mu", "scenario", "residual", "judge_panel", "judge_population"):
        assert got[comp] == pytest.approx(lt[comp])
    assert got["residual"] == 1.0 and got["scenario"] == pytest.approx(2.2)
    reml = rep[(rep["method"] == "reml") & (rep["design"] == "ord") & (rep["replicate"] == 1)].set_index("component")
    assert reml.loc["residual", "truth"] == pytest.approx(0.5)   # score scale, unchanged
    assert reml.loc["mu", "truth"] == pytest.approx(3.4)
    m = res.measures
    assert set(m[m["method"] == "ordinal"]["design"]) == {"ord"}


def test_logit_fit_scores_only_mu():
    truth = cj.Truth({"x": COMP})
    d = cj.Design(n=30, m=1, k=3, misspec={"ordinal": 5})
    res = cj.simulation_study(truth, [d], [("ordinal", {"link": "logit"})], 2, seed=2)
    m = res.measures.set_index("component")
    assert m.loc["mu", "replicates"] == 2 and np.isfinite(m.loc["mu", "coverage"])
    assert m.loc["scenario", "replicates"] == 0 and math.isnan(m.loc["scenario", "truth"])
