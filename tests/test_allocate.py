"""The optimiser (brute force agreement, uncertainty) and the cost-weighted allocation (simulation).

Monte Carlo tolerances: means and variances from R = 40,000 replicates are compared within 4 standard errors
(sd/sqrt(R) for a mean; sqrt((m4 - m2^2)/R) for a variance). Seeds are fixed.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.allocate import (
    _inputs, _interval_draws, allocation_section, cost_weighted_allocation, judge_residual_variances, optimise,
    poststratified_mean,
)
from cjstats.exceptions import CjstatsError
from cjstats.plan import cyclic_schedule, realised_variance
from cjstats.scores import read_scores
from cjstats.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores
from cjstats.variance import design_coefficients, design_variance, neyman_shares

QWEN = TABLE3_MTBENCH["Qwen"]
COMPS = {c: QWEN[c] for c in ("scenario", "generation", "residual", "judge_panel")}
R = 40_000


def var_and_se(x: np.ndarray) -> tuple[float, float]:
    d = x - x.mean()
    m2, m4 = np.mean(d**2), np.mean(d**4)
    return float(np.var(x, ddof=1)), float(math.sqrt((m4 - m2 * m2) / x.size))


@pytest.fixture(scope="module")
def qwen_fit():
    df = simulate_scores(n=30, m=3, k=5, s2_scenario=QWEN["scenario"], s2_generation=QWEN["generation"],
                         s2_residual=QWEN["residual"], judge_offsets=panel_offsets(5, QWEN["judge_panel"]),
                         mu=QWEN["mu"], model="Qwen", seed=12)
    return cj.estimate(read_scores(df))


def brute_force(budget, n_max, kt=5, m_cap=200):
    """Every (variance, strategy, k, n, m) design within the call budget, on a full grid."""
    out = []
    n, m = (a.ravel() for a in np.meshgrid(np.arange(1, n_max + 1), np.arange(1, m_cap + 1)))
    for s, k in [("cyclic", k) for k in range(1, kt)] + [("random", k) for k in range(1, kt)] + [("all", kt)]:
        ok = n * m * k <= budget
        c = design_coefficients(n=n[ok], m=m[ok], k=k, k_total=kt, assignment="random" if s == "random" else "cyclic")
        v = sum(c[x] * COMPS[x] for x in COMPS)
        out += [(float(vi), s, k, int(ni), int(mi)) for vi, ni, mi in zip(v, n[ok], m[ok])]
    return out


class TestOptimiseInCalls:
    @pytest.mark.parametrize("budget, n_max", [(40, 80), (200, 80), (500, 30), (97, 12)])
    def test_recommendation_is_the_brute_force_minimum(self, budget, n_max):
        res = optimise(COMPS, budget=budget, k_total=5, n_max=n_max)
        designs = brute_force(budget, n_max)
        vmin = min(d[0] for d in designs)
        rec = res.recommendation
        assert rec["variance"] == pytest.approx(vmin, rel=1e-12)
        assert rec["calls"] <= budget and rec["n"] <= n_max
        assert res.uncertainty == "none" and rec["p_best"] == 1.0
        # every table row is one of the enumerated designs, with the same variance
        for row in res.table.itertuples():
            assignment = "random" if row.strategy == "random" else "cyclic"
            assert row.variance == pytest.approx(design_variance(*COMPS.values(), n=row.n, m=row.m,
                                                                 k=row.judges_per_generation, k_total=5,
                                                                 assignment=assignment), rel=1e-12)
        assert list(res.table["variance"]) == sorted(res.table["variance"])
        assert list(res.table["rank"]) == list(range(1, len(res.table) + 1))

    def test_cyclic_wins_with_equal_prices(self):
        res = optimise(COMPS, budget=800, k_total=5, n_max=80)
        assert res.recommendation["strategy"] == "cyclic"
        assert res.recommendation["judges_per_generation"] == 1
        assert res.recommendation["n"] == 80 and res.recommendation["m"] == 10
        assert set(res.strategies["strategy"]) == {"cyclic", "random", "all"}

    def test_target_se_gives_the_cheapest_design_that_reaches_it(self):
        target = 0.16
        res = optimise(COMPS, target_se=target, k_total=5, n_max=80)
        rec = res.recommendation
        assert rec["se"] <= target
        reaching = [d for d in brute_force(10_000, 80, m_cap=60) if d[0] <= target**2]
        cheapest = min(d[3] * d[4] * d[2] for d in reaching)
        assert rec["calls"] == cheapest

    def test_unreachable_target_is_one_sentence(self):
        with pytest.raises(CjstatsError, match=r"No design reaches target_se=0.1 with at most 80 scenarios: the "
                                               r"scenario term alone gives SE 0.1383 at n = 80."):
            optimise(COMPS, target_se=0.1, k_total=5, n_max=80)

    def test_m1_fit_restricts_to_one_generation(self):
        comps = {**COMPS, "generation": float("nan")}
        res = optimise(comps, budget=400, k_total=5, n_max=60)
        assert (res.designs["m"] == 1).all() and any("not identifiable" in n for n in res.notes)


class TestUncertainty:
    def test_interval_bounds_bracket_the_estimate(self, qwen_fit):
        res = optimise(qwen_fit, budget=450)
        t = res.table
        assert res.uncertainty == "interval bounds"
        assert (t["variance_lower"] <= t["variance"] + 1e-15).all() and (t["variance"] <= t["variance_upper"]).all()
        assert t["p_best"].sum() == pytest.approx(1.0) and res.strategies["p_best"].sum() == pytest.approx(1.0)
        again = optimise(qwen_fit, budget=450)
        pd.testing.assert_frame_equal(res.table, again.table)

    def test_approximate_draws_reproduce_each_interval(self, qwen_fit):
        inp = _inputs(qwen_fit, None, None, "test")
        draws = _interval_draws(inp, 200_000, np.random.default_rng(0))
        a = (1 - inp.ci_level) / 2
        for j in range(4):
            if inp.lower[j] > 0:
                lo, hi = np.quantile(draws[:, j], [a, 1 - a])
                assert lo == pytest.approx(inp.lower[j], rel=0.02) and hi == pytest.approx(inp.upper[j], rel=0.02)

    def test_posterior_draws_are_used_when_the_backend_has_them(self, qwen_fit):
        rng = np.random.default_rng(3)
        est = qwen_fit.estimates()
        s = 2000
        draws = pd.DataFrame({"model": "Qwen", "chain": np.repeat([0, 1], s // 2),
                              "draw": np.tile(np.arange(s // 2), 2),
                              **{c: est[c] * rng.gamma(20, 1 / 20, size=s) for c in
                                 ("mu", "scenario", "generation", "residual", "judge_panel", "judge_population")}})
        fit = dataclasses.replace(qwen_fit, draws=draws)
        res = optimise(fit, budget=450)
        assert res.uncertainty == "posterior draws"
        d = draws[["scenario", "generation", "residual", "judge_panel"]].to_numpy()

        def vdraws(row):
            c = design_coefficients(n=row.n, m=row.m, k=row.judges_per_generation, k_total=5,
                                    assignment="random" if row.strategy == "random" else "cyclic")
            return d @ np.array([c[x] for x in ("scenario", "generation", "residual", "judge_panel")])

        rows = list(res.strategies.itertuples())
        v = np.array([vdraws(r) for r in rows])
        assert rows[0].variance_lower == pytest.approx(np.quantile(v[0], 0.025), rel=1e-12)
        assert rows[0].variance_upper == pytest.approx(np.quantile(v[0], 0.975), rel=1e-12)
        wins = (v == v.min(axis=0)).astype(float)
        assert res.strategies["p_best"].to_numpy() == pytest.approx((wins / wins.sum(axis=0)).mean(axis=1))


class TestCostWeighted:
    JUDGES = ["a", "b", "c", "d"]
    PRICES = {"a": 1.0, "b": 1.0, "c": 4.0, "d": 16.0}

    def test_equal_prices_and_noise_reduce_to_cyclic_judge(self):
        wa = cost_weighted_allocation(QWEN["generation"], QWEN["residual"], judge_costs=dict.fromkeys(self.JUDGES, 2.0),
                                      budget=80)
        assert wa.shares == pytest.approx((0.25,) * 4) and wa.counts == wa.equal_counts == (10, 10, 10, 10)
        assert wa.saving == pytest.approx(0.0, abs=1e-12)
        res = optimise(COMPS, budget=400, judge_costs=dict.fromkeys(self.JUDGES, 1.0), n_max=100,
                       strategies=["weighted", "cyclic"])
        w = res.table[res.table["strategy"] == "weighted"].iloc[0]
        c = res.table[(res.table["strategy"] == "cyclic") & (res.table["judges_per_generation"] == 1)].iloc[0]
        assert w["variance"] == pytest.approx(c["variance"], rel=1e-12)
        assert "weighted" not in set(optimise(COMPS, budget=400, judge_costs=dict.fromkeys(self.JUDGES, 1.0),
                                              n_max=100).table["strategy"])

    def test_unbiased_and_cheaper_per_unit_of_variance_by_simulation(self):
        """Prices 1, 1, 4, 16: Neyman frequencies with the post-stratified mean against equal cycling."""
        wa = cost_weighted_allocation(QWEN["generation"], QWEN["residual"], judge_costs=self.PRICES, budget=400)
        assert wa.counts == (50, 50, 25, 12) and wa.equal_counts == (18, 18, 18, 18)
        g = panel_offsets(4, QWEN["judge_panel"])                 # the FIXED panel: judge a has g[0], ...
        mu = QWEN["mu"]
        rng = np.random.default_rng(2024)

        def run(counts, seed):
            plan = cyclic_schedule(sum(counts), self.JUDGES, seed=seed, shares=list(counts))
            assert plan["judge"].value_counts().reindex(self.JUDGES).tolist() == list(counts)
            j = pd.Index(self.JUDGES).get_indexer(plan["judge"])
            t = len(plan)   # one generation per scenario: alpha, beta and eps are all per call
            per_call = QWEN["scenario"] + QWEN["generation"] + QWEN["residual"]
            y = mu + g[j] + rng.standard_normal((R, t)) * math.sqrt(per_call)
            b = np.bincount(j, minlength=4)
            post = y @ (1 / (4 * b[j]))
            plain = y.mean(axis=1)
            return plan, post, plain

        plan_w, post_w, plain_w = run(wa.counts, 1)
        plan_e, post_e, _ = run(wa.equal_counts, 2)
        # unbiased for the panel mean, whatever the frequencies
        for x in (post_w, post_e):
            assert abs(x.mean() - mu) <= 4 * x.std() / math.sqrt(R)
        # the plain mean is biased under unequal frequencies, by sum_l (b_l/T) gamma_l
        bias = float(np.array(wa.counts) @ g / sum(wa.counts))
        assert abs(plain_w.mean() - mu) > 4 * plain_w.std() / math.sqrt(R)
        assert plain_w.mean() - mu == pytest.approx(bias, abs=4 * plain_w.std() / math.sqrt(R))
        # variances match the exact realised variance of each schedule
        comps = {**COMPS, "scenario": QWEN["scenario"]}
        offsets = dict(zip(self.JUDGES, g))
        rv_w = realised_variance(plan_w, comps, estimator="poststratified", judge_view="fixed", judge_offsets=offsets)
        rv_e = realised_variance(plan_e, comps, estimator="poststratified", judge_view="fixed", judge_offsets=offsets)
        (vw, sw), (ve, se) = var_and_se(post_w), var_and_se(post_e)
        assert abs(vw - rv_w.total) <= 4 * sw and abs(ve - rv_e.total) <= 4 * se
        assert rv_w.judge_bias == pytest.approx(0.0, abs=1e-12)
        # lower variance per unit cost: variance x cost, weighted against equal cycling
        cw, ce = wa.cost, wa.equal_cost
        gap = ve * ce - vw * cw
        assert gap > 4 * math.hypot(se * ce, sw * cw)
        assert 1 - (vw * cw) / (ve * ce) == pytest.approx(wa.saving, abs=4 * math.hypot(se * ce, sw * cw) / (ve * ce))

    def test_optimiser_adds_the_weighted_strategy_with_unequal_prices(self):
        res = optimise(COMPS, budget=2000, judge_costs=self.PRICES, n_max=200)
        assert "weighted" in set(res.table["strategy"])
        assert res.frequencies == pytest.approx(dict(zip(self.JUDGES, neyman_shares([1.0] * 4, [1, 1, 4, 16]))))
        assert res.recommendation["strategy"] == "weighted" and res.recommendation["cost"] <= 2000
        assert res.budget_unit == "money"


class TestJudgeResidualVariances:
    def test_recovers_unequal_noise(self):
        sd = np.array([0.5, 1.0, 1.5, 2.0])
        rng = np.random.default_rng(5)
        est = []
        for _ in range(300):
            y = (rng.normal(size=(40, 1, 1)) + rng.normal(size=(40, 3, 1)) * 0.5 + np.array([0.3, -0.1, 0.2, -0.4])
                 + rng.standard_normal((40, 3, 4)) * sd)
            est.append(list(judge_residual_variances(y).values()))
        est = np.array(est)
        m, s = est.mean(axis=0), est.std(axis=0, ddof=1) / math.sqrt(len(est))
        assert (np.abs(m - sd**2) <= 4 * s).all()

    def test_names_from_a_table(self, small_balanced_scores):
        out = judge_residual_variances(small_balanced_scores, model="Qwen")
        assert list(out) == ["judge_0", "judge_1", "judge_2", "judge_3"] and all(v >= 0 for v in out.values())


class TestPoststratifiedMean:
    def test_by_hand(self):
        df = pd.DataFrame({"judge": ["a", "a", "a", "b"], "score": [1.0, 2.0, 3.0, 10.0]})
        assert poststratified_mean(df) == pytest.approx((2.0 + 10.0) / 2)
        grouped = poststratified_mean(df.assign(model=["x", "x", "y", "y"]))
        assert grouped["poststratified_mean"].tolist() == pytest.approx([1.5, 6.5])

    def test_a_silent_judge_is_an_error(self):
        df = pd.DataFrame({"judge": ["a", "b"], "score": [1.0, 2.0]})
        with pytest.raises(CjstatsError, match="Judge 'c' has no score"):
            poststratified_mean(df, judges=["a", "b", "c"])


class TestSectionAndErrors:
    def test_allocation_section(self, small_balanced_scores):
        text = allocation_section(cj.estimate(small_balanced_scores))
        assert text.startswith("Allocation: standard error of the benchmark score at 12 judge calls")
        assert "Qwen" in text and "GPT" in text and "CyclicJudge" in text

    def test_allocation_section_on_the_demo_data(self):
        fit = cj.estimate(cj.datasets.load("hanna", composite=True))
        text = allocation_section(fit)
        assert "at 96 judge calls" in text and "Human" in text

    @pytest.mark.parametrize("kwargs, match", [
        (dict(), "needs a budget"),
        (dict(budget=-1), "'budget' argument of optimise must be a finite number >= 0"),
        (dict(budget=100, judge_costs={"x": 1.0}), "must price exactly the panel's judges"),
        (dict(budget=100, strategies=["best"]), "'strategies' argument of optimise must be one of"),
        (dict(budget=0.5), "does not pay for one generation"),
    ])
    def test_one_sentence_errors(self, qwen_fit, kwargs, match):
        with pytest.raises(CjstatsError, match=match):
            optimise(qwen_fit, **kwargs)

    def test_text_summary(self, qwen_fit):
        text = str(optimise(qwen_fit, budget=450))
        assert text.startswith("Allocation for model 'Qwen': budget 450 calls; K_tot = 5 judges; up to 30 scenarios")
        assert "Recommended: cyclic" in text
