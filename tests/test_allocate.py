"""The optimiser (brute force agreement, costs, uncertainty) and the cost-weighted allocation (simulation).

Monte Carlo tolerances: means and variances from R = 40,000 replicates are compared within 4 standard errors
(sd/sqrt(R) for a mean; sqrt((m4 - m2^2)/R) for a variance, cjstats.decisions.subsample.variance_with_se). Seeds are
fixed. The brute forces below compute variances and costs from the paper's formulas typed in here, not from
the library's coefficient functions.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from cjstats.results.format import format_prob
import pytest

import cjstats as cj
from cjstats.decisions.optimise import (
    _inputs, _interval_draws, allocation_section, cost_weighted_allocation, judge_residual_variances, optimise,
    poststratified_mean,
)
from cjstats.exceptions import CjstatsError
from cjstats.decisions.schedules import apportion, cyclic_schedule, realised_variance
from cjstats.io.read import read_scores
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores
from cjstats.decisions.subsample import variance_with_se
from cjstats.decisions.formulas import neyman_shares, poststratified_variance

QWEN = TABLE3_MTBENCH["Qwen"]
COMPS = {c: QWEN[c] for c in ("scenario", "generation", "residual", "judge_panel")}
R = 40_000


@pytest.fixture(scope="module")
def qwen_fit():
    df = simulate_scores(n=30, m=3, k=5, s2_scenario=QWEN["scenario"], s2_generation=QWEN["generation"],
                         s2_residual=QWEN["residual"], judge_offsets=panel_offsets(5, QWEN["judge_panel"]),
                         mu=QWEN["mu"], model="Qwen", seed=12)
    return cj.estimate(read_scores(df))


def formula_variance(strategy, k, n, m, comps=COMPS, kt=5):
    """Proposition 1 (Eq. 2) with the judge term of each assignment, typed in from the paper.

    cyclic: the leftover r (K - r) s2_gamma / ((K - 1) T^2) of one rotation over T = nmk calls (Eqs. 3, 5);
    random: a fresh k-subset per generation, (s2_gamma / k) FPC(k) / (nm) (Eq. 4 at k = 1); all: k = K_tot.
    """
    n, m = np.asarray(n, dtype=float), np.asarray(m, dtype=float)
    a, b, e, g = (comps[c] for c in ("scenario", "generation", "residual", "judge_panel"))
    v = a / n + b / (n * m) + e / (n * m * k)
    if strategy == "random":
        return v + (g / k * (kt - k) / (kt - 1) / (n * m) if kt > 1 else 0.0)
    t = n * m * k
    r = np.mod(t, kt)
    return v + (r * (kt - r) * g / ((kt - 1) * t * t) if kt > 1 else 0.0)


def worst_cost(strategy, k, n, m, prices, cg=0.0):
    """The most a design can cost: the rotation's calls mod K_tot extra calls (or, for random, every call) on
    the dearest judges."""
    p = np.sort(np.asarray(prices, dtype=float))[::-1]
    gens = np.asarray(n, dtype=np.int64) * np.asarray(m, dtype=np.int64)
    if strategy == "all":
        return gens * (p.sum() + cg)
    if strategy == "random":
        return gens * (p[:k].sum() + cg)
    q, r = np.divmod(gens * k, p.size)
    top = np.concatenate([[0.0], np.cumsum(p)])
    return q * p.sum() + top[r] + gens * cg


PAIRS = [("cyclic", k) for k in range(1, 5)] + [("random", k) for k in range(1, 5)] + [("all", 5)]


def brute_force(budget, n_max, kt=5, m_cap=200, prices=None):
    """Every (variance, strategy, k, n, m, max cost) design within the budget, on a full grid."""
    prices = np.ones(kt) if prices is None else np.asarray(prices, dtype=float)
    out = []
    n, m = (a.ravel() for a in np.meshgrid(np.arange(1, n_max + 1), np.arange(1, m_cap + 1)))
    for s, k in [(s, k) for s, k in PAIRS if k <= kt]:
        cost = worst_cost(s, k, n, m, prices)
        ok = cost <= budget
        v = formula_variance(s, k, n[ok], m[ok], kt=kt)
        out += [(float(vi), s, k, int(ni), int(mi), float(ci)) for vi, ni, mi, ci in zip(v, n[ok], m[ok], cost[ok])]
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
        # every table row is one of the enumerated designs, with the paper's variance
        for row in res.table.itertuples():
            assert row.variance == pytest.approx(float(formula_variance(row.strategy, row.judges_per_generation,
                                                                         row.n, row.m)), rel=1e-12)
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


class TestTargetSearchIsExact:
    def test_a_large_leftover_term_is_searched_through(self):
        """A huge judge offset and a 100-judge panel: only m = 100 (a full rotation) reaches the target."""
        comps = {"scenario": 0.0, "generation": 0.0, "residual": 1e-4, "judge_panel": 1000.0}
        res = optimise(comps, target_se=0.0316, k_total=100, n_max=1, strategies=["cyclic"])
        rec = res.recommendation
        assert rec["se"] <= 0.0316 and rec["m"] * rec["judges_per_generation"] == 100
        assert res.table["variance"].max() <= 0.0316**2

    @pytest.mark.parametrize("seed", range(6))
    def test_every_design_is_the_first_m_that_reaches_the_target(self, seed):
        rng = np.random.default_rng(seed)
        comps = dict(zip(COMPS, rng.gamma(0.6, 1.0, 4) * np.array([0.05, 1, 1, 30])))
        kt, n_max = int(rng.integers(2, 13)), int(rng.integers(1, 15))
        v1 = formula_variance("cyclic", 1, n_max, 1, comps=comps, kt=kt)
        target = math.sqrt(float(v1) * rng.uniform(0.02, 0.5))
        try:
            res = optimise(comps, target_se=target, k_total=kt, n_max=n_max, m_max=5000)
        except CjstatsError as exc:
            assert "scenario term alone" in str(exc)
            return
        d = res.designs
        assert len(d) > 0
        for row in d.itertuples():
            v = formula_variance(row.strategy, row.judges_per_generation, row.n, np.arange(1, row.m + 1), comps, kt)
            assert v[-1] <= target**2 * (1 + 1e-12) and (v[:-1] > target**2).all(), row

    def test_designs_in_a_money_budget_spend_as_much_as_they_can(self):
        prices = [1.0, 1.0, 4.0, 16.0]
        res = optimise(COMPS, budget=1000, judge_costs=dict(zip("abcd", prices)), n_max=60,
                       strategies=["cyclic", "random", "all"])
        for row in res.designs.itertuples():
            k = row.judges_per_generation
            assert worst_cost(row.strategy, k, row.n, row.m, prices) <= 1000
            assert worst_cost(row.strategy, k, row.n, row.m + 1, prices) > 1000


class TestMoneyBudgets:
    PRICES = {"a": 1.0, "b": 1.0, "c": 4.0, "d": 16.0}

    def test_no_design_can_exceed_the_budget(self):
        """Costed at the mean price a 1000 budget bought designs that cost up to 1006; now the worst case fits."""
        prices = list(self.PRICES.values())
        res = optimise(COMPS, budget=1000, judge_costs=self.PRICES, n_max=60, strategies=["cyclic", "random", "all"])
        for row in res.designs.itertuples():
            mx = float(worst_cost(row.strategy, row.judges_per_generation, row.n, row.m, prices))
            assert row.max_cost == pytest.approx(mx, rel=1e-12) and mx <= 1000
            assert row.cost == pytest.approx(row.n * row.m * row.judges_per_generation * 5.5 if row.strategy != "all"
                                             else row.n * row.m * 22, rel=1e-12)
        best = brute_force(1000, 60, kt=4, m_cap=200, prices=prices)
        assert res.recommendation["variance"] == pytest.approx(min(d[0] for d in best), rel=1e-12)
        # the seeded rotation of the recommended design never costs more than max_cost
        rec = res.recommendation
        price = pd.Series(self.PRICES)
        for seed in range(30):
            plan = cyclic_schedule(rec["n"], list(self.PRICES), generations=rec["m"],
                                   judges_per_generation=rec["judges_per_generation"], seed=seed)
            assert price[plan["judge"]].sum() <= rec["max_cost"] <= 1000

    def test_the_weighted_schedule_realises_exactly_the_costed_counts(self):
        """One apportioning function: cyclic_schedule(shares=) gives the counts optimise costed, for every seed."""
        res = optimise(COMPS, budget=1000, judge_costs=self.PRICES, n_max=60, generation_cost=0.5,
                       strategies=["weighted"])
        price = pd.Series(self.PRICES) + 0.5
        rows = res.designs.iloc[np.linspace(0, len(res.designs) - 1, 8).astype(int)]
        shares = np.array(list(res.frequencies.values()))
        for row in rows.itertuples():
            counts = apportion(row.n * row.m, shares)
            assert row.cost == row.max_cost == pytest.approx(float(counts @ price.to_numpy()), rel=1e-12)
            assert row.max_cost <= 1000
            assert row.variance == pytest.approx(poststratified_variance(
                COMPS["generation"], COMPS["residual"], counts, s2_scenario=COMPS["scenario"], n=row.n), rel=1e-12)
            for seed in (0, 1, 2):
                plan = cyclic_schedule(row.n, list(self.PRICES), generations=row.m, seed=seed,
                                       shares=res.frequencies)
                realised = plan["judge"].value_counts().reindex(list(self.PRICES), fill_value=0).to_numpy()
                assert realised.tolist() == counts.tolist()

    def test_all_free_judges_are_one_sentence(self):
        with pytest.raises(CjstatsError, match=r"Every judge price given to optimise is 0 and generation_cost is 0, "
                                               r"so designs cost nothing"):
            optimise(COMPS, budget=1000, judge_costs={"a": 0.0, "b": 0.0}, n_max=10)

    def test_a_free_judge_drops_the_weighted_strategy_with_a_note(self):
        res = optimise(COMPS, budget=1000, judge_costs={"a": 0.0, "b": 1.0}, n_max=10)
        assert "weighted" not in set(res.designs["strategy"])
        assert any("weighted left out: judge 'a' costs 0 per call" in n for n in res.notes)
        assert res.recommendation["max_cost"] <= 1000
        with pytest.raises(CjstatsError, match=r"Judge 'a' costs 0 per call and generation_cost is 0, so the "
                                               r"weighted strategy of optimise would give it every call"):
            optimise(COMPS, budget=1000, judge_costs={"a": 0.0, "b": 1.0}, n_max=10, strategies=["weighted"])
        # a generation cost makes every call cost something: weighted is back
        res = optimise(COMPS, budget=1000, judge_costs={"a": 0.0, "b": 1.0}, generation_cost=0.1, n_max=10)
        assert "weighted" in set(res.designs["strategy"])
        with pytest.raises(CjstatsError, match=r"Judge 'a' costs 0 per call .* cost_weighted_allocation"):
            cost_weighted_allocation(0.3, 1.5, judge_costs={"a": 0.0, "b": 1.0}, budget=100)

    def test_a_budget_too_small_for_the_target_names_the_budget(self):
        """The budget, not the scenario term, is the limit: say so, with what the cheapest design costs."""
        cheapest = optimise(COMPS, target_se=0.3, k_total=5, n_max=80).recommendation
        with pytest.raises(CjstatsError) as err:
            optimise(COMPS, budget=10, target_se=0.3, k_total=5, n_max=80)
        msg = str(err.value)
        assert msg.startswith("No design reaches target_se=0.3 within budget 10 calls: the cheapest that does")
        assert f"costs up to {cheapest['max_cost']:g} calls; raise the budget to at least that." in msg
        assert "scenario term" not in msg


class TestResidualByJudge:
    """One meaning everywhere: absolute residual variances per judge, replacing the common residual."""

    JUDGES = ["a", "b", "c", "d"]
    PRICES = {"a": 1.0, "b": 1.0, "c": 4.0, "d": 16.0}
    NOISE = {"a": 0.5, "b": 1.0, "c": 2.0, "d": 3.0}

    def test_optimise_uses_absolute_values(self):
        res = optimise(COMPS, budget=600, judge_costs=self.PRICES, n_max=60, residual_by_judge=self.NOISE)
        s2e = np.array(list(self.NOISE.values()))
        assert res.components["residual"] == pytest.approx(s2e.mean())
        w = res.designs[res.designs["strategy"] == "weighted"].iloc[0]
        counts = apportion(int(w["n"] * w["m"]), np.array(list(res.frequencies.values())))
        assert w["variance"] == pytest.approx(poststratified_variance(
            COMPS["generation"], s2e, counts, s2_scenario=COMPS["scenario"], n=int(w["n"])), rel=1e-12)
        c = res.designs[res.designs["strategy"] == "cyclic"].iloc[0]
        assert c["variance"] == pytest.approx(float(formula_variance(
            "cyclic", int(c["judges_per_generation"]), c["n"], c["m"], {**COMPS, "residual": s2e.mean()}, kt=4)))
        # doubling every value doubles the residual: absolute, not relative
        twice = optimise(COMPS, budget=600, judge_costs=self.PRICES, n_max=60,
                         residual_by_judge={j: 2 * v for j, v in self.NOISE.items()})
        assert twice.components["residual"] == pytest.approx(2 * s2e.mean())
        assert twice.recommendation["variance"] > res.recommendation["variance"]

    def test_cost_weighted_allocation_agrees_with_optimise(self):
        wa = cost_weighted_allocation(COMPS["generation"], COMPS["residual"], judge_costs=self.PRICES, budget=400,
                                      residual_by_judge=self.NOISE)
        res = optimise(COMPS, budget=600, judge_costs=self.PRICES, n_max=60, residual_by_judge=self.NOISE)
        assert wa.shares == pytest.approx(tuple(res.frequencies.values()), rel=1e-12)
        sd = np.sqrt(COMPS["generation"] + np.array(list(self.NOISE.values())))
        assert wa.shares == pytest.approx(tuple(neyman_shares(sd, list(self.PRICES.values()))), rel=1e-12)
        assert wa.variance == pytest.approx(poststratified_variance(
            COMPS["generation"], list(self.NOISE.values()), wa.counts), rel=1e-12)

    def test_unknown_or_missing_judges(self):
        with pytest.raises(CjstatsError, match="names judge 'z', which is not in the panel"):
            optimise(COMPS, budget=600, judge_costs=self.PRICES, n_max=60, residual_by_judge={**self.NOISE, "z": 1})
        with pytest.raises(CjstatsError, match="has no value for judge 'd'"):
            cost_weighted_allocation(0.3, 1.5, judge_costs=self.PRICES, budget=400,
                                     residual_by_judge={"a": 1, "b": 1, "c": 1})


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
        """P(draw <= lower) = a and P(draw <= upper) = 1 - a (median = estimate when lower = 0), each within 4
        binomial standard errors sqrt(p (1 - p) / S) of the empirical CDF over S draws."""
        inp = _inputs(qwen_fit, None, None, "test")
        size = 200_000
        draws = _interval_draws(inp, size, np.random.default_rng(0))
        a = (1 - inp.ci_level) / 2
        checked = 0
        for j in range(4):
            if inp.upper[j] <= 0:
                continue
            pairs = [(inp.upper[j], 1 - a)] + ([(inp.lower[j], a)] if inp.lower[j] > 0 else
                                                [(inp.point[j], 0.5)] if inp.point[j] > 0 else [])
            for x, p in pairs:
                assert abs(np.mean(draws[:, j] <= x) - p) <= 4 * math.sqrt(p * (1 - p) / size), (j, x, p)
                checked += 1
        assert checked >= 6

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
            return np.array([float(formula_variance(row.strategy, row.judges_per_generation, row.n, row.m,
                                                    dict(zip(COMPS, x)))) for x in d])

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
        (vw, sw), (ve, se) = variance_with_se(post_w), variance_with_se(post_e)
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
        fit = cj.estimate(cj.datasets.load("hanna", composite=True, keep_sentinels=True))
        text = allocation_section(fit)
        assert "at 96 judge calls" in text and "Human" in text

    @pytest.mark.parametrize("kwargs, match", [
        (dict(), "needs a budget"),
        (dict(budget=-1), "'budget' argument of optimise must be a finite number >= 0"),
        (dict(budget=100, judge_costs={"x": 1.0}), "must price exactly the panel's judges"),
        (dict(budget=100, strategies=["best"]), "'strategies' argument of optimise must be one of"),
        (dict(budget=0.5), "does not pay for one generation"),
        (dict(budget=100, seed=-1), "'seed' argument of optimise must be None, an integer >= 0"),
        (dict(budget=100, residual_by_judge={"judge_0": "x"}), "has no value for judge|must be a finite number"),
    ])
    def test_one_sentence_errors(self, qwen_fit, kwargs, match):
        with pytest.raises(CjstatsError, match=match):
            optimise(qwen_fit, **kwargs)

    def test_text_summary(self, qwen_fit):
        text = str(optimise(qwen_fit, budget=450))
        assert text.startswith("Allocation for model 'Qwen': budget 450 calls; K_tot = 5 judges; up to 30 scenarios")
        assert "Recommended: cyclic" in text
        # two P(best)s with different reference sets: the header's among every ranked design, the strategies
        # table's among the best design of each strategy; the text names each
        a = optimise(qwen_fit, budget=450)
        assert f"P(best) = {format_prob(a.recommendation['p_best'])} among the {len(a.table)} ranked designs" in text
        assert f"p_best among these {len(a.strategies)})" in text


def test_the_decision_layer_reads_fits_through_decisions_inputs():
    """GroupComponents lives in decisions/inputs.py, with no alias left in the schedules module; the optimiser's
    components are the five DECISION_COMPONENTS in order, read through group_components."""
    import cjstats.decisions.schedules as schedules
    from cjstats.decisions.inputs import DECISION_COMPONENTS, GroupComponents, group_components

    for name in ("GroupComponents", "group_components", "DECISION_COMPONENTS"):
        assert not hasattr(schedules, name) and name not in schedules.__all__
    comps = {"scenario": 1.0, "generation": 0.3, "residual": 0.6, "judge_panel": 0.5}
    g = group_components(comps)
    assert isinstance(g, GroupComponents) and tuple(g.estimates) == DECISION_COMPONENTS
    alloc = cj.optimise(comps, budget=200, k_total=4, n_max=30)
    assert tuple(alloc.components) == DECISION_COMPONENTS
    assert alloc.components == g.estimates
