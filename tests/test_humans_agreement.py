"""judge_agreement: bias and calibration intervals that respect the crossed design, alpha, bad inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import cjstats as cj
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.estimators.humans.agreement import cluster_mean, cluster_ols, interval_alpha_two

R = 400          # replicates of each coverage study
LEVEL = 0.95
# A coverage estimated from R replicates has MC standard error sqrt(p(1-p)/R) (0.0109 at R = 400);
# we accept 3 MC standard errors either side of the nominal level.
TOL = 3 * np.sqrt(LEVEL * (1 - LEVEL) / R)


def _crossed(rng: np.random.Generator, *, g: int = 60, p: int = 5, bias: float = 0.4, sd_js: float = 0.3):
    """Models x scenarios items: human = truth + noise; judge = truth + bias + judge-x-scenario + noise.

    The judge-x-scenario term u_s is shared by all models' items of scenario s: that is what makes the items
    of a scenario correlated, and what an iid standard error ignores.
    """
    a = rng.normal(0, 0.8, g)
    truth = 3 + np.linspace(-0.5, 0.5, p)[:, None] + a[None, :] + rng.normal(0, 0.3, (p, g))
    human = truth + rng.normal(0, 0.5, (p, g))
    judge = truth + bias + rng.normal(0, sd_js, g)[None, :] + rng.normal(0, 0.4, (p, g))
    scen = np.broadcast_to(np.arange(g), (p, g))
    return judge.ravel(), human.ravel(), scen.ravel()


class TestBiasInterval:
    def test_cluster_robust_bias_interval_covers_at_nominal_level(self):
        rng = np.random.default_rng(11)
        hits = 0
        for _ in range(R):
            x, h, s = _crossed(rng)
            b = cluster_mean(x - h, s, ci_level=LEVEL)
            hits += b["lower"] <= 0.4 <= b["upper"]
        assert abs(hits / R - LEVEL) <= TOL

    def test_iid_interval_would_undercover_on_the_same_design(self):
        # the reason for clustering: design effect 1 + (5-1) * 0.09/0.5 = 1.72, iid coverage about 0.87
        rng = np.random.default_rng(11)
        hits = 0
        for _ in range(R):
            x, h, _ = _crossed(rng)
            d = x - h
            se = d.std(ddof=1) / np.sqrt(len(d))
            hits += abs(d.mean() - 0.4) <= stats.t.ppf(0.975, len(d) - 1) * se
        assert hits / R < LEVEL - TOL

    def test_cluster_ols_equals_statsmodels_cluster_covariance(self):
        sm = pytest.importorskip("statsmodels.api")
        x, h, s = _crossed(np.random.default_rng(3))
        beta, cov, g = cluster_ols(x, h, s)
        ref = sm.OLS(h, sm.add_constant(x)).fit(cov_type="cluster", cov_kwds={"groups": s})
        np.testing.assert_allclose(beta, ref.params, rtol=0, atol=1e-10)
        np.testing.assert_allclose(cov, ref.cov_params(), rtol=0, atol=1e-10)
        assert g == 60


class TestCalibration:
    def test_calibration_slope_interval_covers_at_nominal_level(self):
        rng = np.random.default_rng(12)
        hits, g, p = 0, 60, 5
        q = stats.t.ppf(0.5 + LEVEL / 2, g - 1)
        for _ in range(R):
            s = np.broadcast_to(np.arange(g), (p, g)).ravel()
            x = 3 + rng.normal(0, 0.8, g)[s] + rng.normal(0, 0.6, p * g)
            h = 0.5 + 0.7 * x + rng.normal(0, 0.4, g)[s] + rng.normal(0, 0.5, p * g)
            beta, cov, _ = cluster_ols(x, h, s)
            hits += abs(beta[1] - 0.7) <= q * np.sqrt(cov[1, 1])
        assert abs(hits / R - LEVEL) <= TOL


def _scores(seed: int = 0, *, bias: float = 0.4, human_scale: float = 1.0) -> cj.Scores:
    rng = np.random.default_rng(seed)
    rows = []
    g, models = 40, ["m1", "m2", "m3"]
    a = rng.normal(0, 0.8, g)
    offsets = {"j1": bias - 0.2, "j2": bias, "j3": bias + 0.2}
    for mi, model in enumerate(models):
        for s in range(g):
            t = 3 + 0.3 * mi + a[s]
            for j, off in offsets.items():
                rows.append((model, s, j, t + off + rng.normal(0, 0.4), "llm"))
            for r in range(2):
                rows.append((model, s, f"h{r}", human_scale * (t + rng.normal(0, 0.5)), "human"))
    df = pd.DataFrame(rows, columns=["model", "scenario", "judge", "score", "judge_type"])
    return cj.read_scores(df)


class TestJudgeAgreement:
    def test_rows_per_judge_and_panel_with_bias_near_truth(self):
        agr = cj.judge_agreement(_scores())
        t = agr.table.set_index("judge")
        assert list(t.index) == ["j1", "j2", "j3", "panel"]
        assert t.loc["panel", "bias_lower"] <= 0.4 <= t.loc["panel", "bias_upper"]
        assert t.loc["j3", "bias"] - t.loc["j1", "bias"] == pytest.approx(0.4, abs=0.1)

    def test_judge_agreement_bias_interval_covers_known_bias(self):
        reps = 100                       # each replicate runs the public call on a new table
        tol = 3 * np.sqrt(LEVEL * (1 - LEVEL) / reps)
        hits = {"j1": 0, "panel": 0}
        for rep in range(reps):
            t = cj.judge_agreement(_scores(500 + rep)).table.set_index("judge")
            hits["j1"] += t.loc["j1", "bias_lower"] <= 0.2 <= t.loc["j1", "bias_upper"]
            hits["panel"] += t.loc["panel", "bias_lower"] <= 0.4 <= t.loc["panel", "bias_upper"]
        assert abs(hits["j1"] / reps - LEVEL) <= tol
        assert abs(hits["panel"] / reps - LEVEL) <= tol

    def test_bias_row_is_the_cluster_mean_of_the_same_items(self):
        s = _scores(1)
        agr = cj.judge_agreement(s)
        ref = s.reference_frame().groupby(["model", "scenario"])["score"].mean()
        j2 = s.to_frame().query("judge == 'j2'").set_index(["model", "scenario"])["score"]
        d = (j2 - ref.reindex(j2.index)).to_numpy()
        b = cluster_mean(d, j2.index.get_level_values("scenario").to_numpy(), ci_level=0.95)
        row = agr.table.set_index("judge").loc["j2"]
        assert row["bias"] == pytest.approx(b["estimate"], abs=1e-12)
        assert row["bias_upper"] == pytest.approx(b["upper"], abs=1e-12)

    def test_by_model_splits_rows_and_pooled_bias_is_their_item_weighted_mean(self):
        s = _scores(2)
        pooled = cj.judge_agreement(s).table.set_index("judge")
        split = cj.judge_agreement(s, by_model=True).table
        assert len(split) == 3 * 4 and set(split["model"]) == {"m1", "m2", "m3"}
        j2 = split[split["judge"] == "j2"]
        weighted = float((j2["bias"] * j2["n_items"]).sum() / j2["n_items"].sum())
        assert weighted == pytest.approx(pooled.loc["j2", "bias"], abs=1e-12)

    def test_human_ceiling_reported_when_items_have_several_raters(self):
        agr = cj.judge_agreement(_scores())
        assert len(agr.humans) == 1 and agr.humans.loc[0, "n_raters_max"] == 2
        # two human ratings with noise sd 0.5 around a truth with sd ~0.83: r = 0.69/(0.69+0.25) ~ 0.73
        assert 0.55 < agr.humans.loc[0, "human_r"] < 0.9

    def test_interval_alpha_closed_form_equals_krippendorff(self):
        kr = pytest.importorskip("krippendorff")
        rng = np.random.default_rng(5)
        a = rng.normal(size=200).round(2)
        b = (a + rng.normal(size=200)).round(2)
        ref = kr.alpha(reliability_data=np.vstack([a, b]), level_of_measurement="interval")
        assert interval_alpha_two(a, b) == pytest.approx(ref, abs=1e-12)

    def test_per_criterion_rows_on_hanna(self):
        agr = cj.judge_agreement(cj.datasets.load("hanna", humans=True))
        assert agr.table["criterion"].nunique() == 6
        assert len(agr.table) == 6 * 6 and len(agr.humans) == 6
        assert agr.table["n_scenarios"].eq(96).all()


class TestBadInput:
    def test_no_reference_is_one_sentence(self):
        s = cj.datasets.load("hanna")
        with pytest.raises(CjstatsError, match=r"^scores has no reference raters: .*\(judges: Beluga-13B"):
            cj.judge_agreement(s)

    def test_reference_that_rates_no_judged_item(self):
        df = _scores().to_frame()
        ref = _scores().reference_frame().assign(scenario=lambda d: d["scenario"] + 1000)
        s = cj.read_scores(pd.concat([df, ref], ignore_index=True), reference=["h0", "h1"])
        with pytest.raises(CjstatsError, match=r"reference raters \(h0, h1\) rate no item that the judges rated"):
            cj.judge_agreement(s)

    def test_single_human_label(self):
        df = _scores().to_frame()
        one = _scores().reference_frame().iloc[:1]
        s = cj.read_scores(pd.concat([df, one], ignore_index=True), reference="h0")
        with pytest.raises(CjstatsError, match="rate a single judged item"):
            cj.judge_agreement(s)

    def test_reference_on_another_scale_warns_with_both_ranges(self):
        with pytest.warns(CjstatsWarning, match=r"reference ratings range over \[.*\] but the judges' scores over"):
            cj.judge_agreement(_scores(human_scale=20.0))

    def test_same_scale_does_not_warn(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error", CjstatsWarning)
            cj.judge_agreement(_scores())

    def test_llm_judge_named_as_reference_moves_to_the_reference_side(self):
        agr = cj.judge_agreement(_scores(), reference="j1")
        assert agr.reference == ("j1",) and "j1" not in set(agr.table["judge"])

    def test_unknown_reference_name(self):
        with pytest.raises(CjstatsError, match=r"reference rater 'nobody' is not in scores"):
            cj.judge_agreement(_scores(), reference="nobody")
