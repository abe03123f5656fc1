"""The closed forms of cjstats.decisions.formulas against the paper's numbers, exact enumeration and Monte Carlo.

Monte Carlo tolerances: a variance estimated from R replicates is compared with the formula within 4 Monte
Carlo standard errors, SE = sqrt((m4 - m2^2)/R) from the sample's own fourth moment (for normal data this is
sqrt(2/(R-1)) times the variance: 0.71% at R = 40,000, so the band is +-2.8%). Seeds are fixed. Where a test
claims that a term is NEEDED, it also shows that the formula without it falls outside the same band.
"""

from __future__ import annotations

import itertools
import math
import time
import tracemalloc

import numpy as np
import pytest

from cjstats.exceptions import CjstatsError
from cjstats.decisions.schedules import all_judges_schedule, cyclic_schedule
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_array
from cjstats.decisions.subsample import variance_with_se
from cjstats.decisions.formulas import (
    STRATEGIES, ab_threshold, best_generations_per_scenario, budget_for_target_se, design_coefficients,
    design_variance, fpc,
    grand_mean_variance, judge_weight_variance, leftover_judge_variance, minimum_detectable_difference,
    neyman_shares, pool_constants, pool_variance, poststratified_variance, power_to_detect, preferred_baseline,
    scenario_generation_variance, scenarios_for_target_se, strategy_coefficients, strategy_gaps, strategy_variance,
    variance_contributions,
)

QWEN = TABLE3_MTBENCH["Qwen"]
K_TOT = 5
R = 40_000


def assert_within_mc(x: np.ndarray, predicted: float, bands: float = 4.0) -> float:
    v, se = variance_with_se(x)
    assert abs(v - predicted) <= bands * se, f"empirical {v:.6g} vs predicted {predicted:.6g} (SE {se:.3g})"
    return se


def simulate_schedule(scen, cell, judge, *, comps, offsets, reps, rng, scenario_term=False, random_judges=False):
    """Grand means of `reps` replicates of a concrete schedule (arrays of scenario/cell/judge indices).

    Judge labels are relabelled at random in every replicate (what the seeded judge shuffle does), or drawn
    uniformly per call when random_judges.
    """
    scen, cell, judge = map(np.asarray, (scen, cell, judge))
    t = scen.size
    k = offsets.size
    y = rng.standard_normal((reps, t)) * math.sqrt(comps["residual"])
    y += (rng.standard_normal((reps, cell.max() + 1)) * math.sqrt(comps["generation"]))[:, cell]
    if scenario_term:
        y += (rng.standard_normal((reps, scen.max() + 1)) * math.sqrt(comps["scenario"]))[:, scen]
    if random_judges:
        y += offsets[rng.integers(0, k, size=(reps, t))]
    else:
        perm = np.argsort(rng.random((reps, k)), axis=1)
        y += offsets[perm][:, judge]
    return y.mean(axis=1)


def schedule_arrays(schedule):
    scen = schedule["scenario"].to_numpy()
    cell = np.unique(np.stack([scen, schedule["generation"].to_numpy()], 1), axis=0, return_inverse=True)[1].ravel()
    names = sorted(schedule["judge"].unique())
    judge = np.searchsorted(names, schedule["judge"].to_numpy())
    return np.unique(scen, return_inverse=True)[1], cell, judge


# ------------------------------------------------------------------------------------------- Proposition 1
# Table 5 (tab:components), contribution to Var(X̄) in units of 1e-3 at n = 80 (a) / 50 (b), m = 1, K = 1.
TABLE5 = {
    "mtbench": (80, {
        "scenario": ([1.530, 0.882, 0.634, 0.408, 0.393], [19.13, 11.03, 7.92, 5.11, 4.92]),
        "generation": ([0.266, 0.238, 0.076, 0.000, 0.000], [3.33, 2.97, 0.94, 0.00, 0.00]),
        "judge_panel": ([0.947, 0.503, 0.339, 0.435, 0.427], [946.50, 502.50, 339.00, 435.40, 426.60]),
        "residual": ([1.486, 1.130, 0.564, 0.661, 0.830], [18.57, 14.12, 7.05, 8.27, 10.38]),
    }),
    "mindeval": (50, {
        "scenario": ([0.034, 0.014, 0.021, 0.015, 0.005], [0.67, 0.28, 0.43, 0.29, 0.09]),
        "generation": ([0.100, 0.019, 0.047, 0.016, 0.002], [2.01, 0.38, 0.93, 0.31, 0.04]),
        "judge_panel": ([0.523, 0.280, 0.132, 0.150, 0.155], [522.50, 280.20, 132.00, 150.20, 154.80]),
        "residual": ([0.159, 0.069, 0.207, 0.103, 0.061], [3.18, 1.37, 4.14, 2.05, 1.23]),
    }),
}


class TestProposition1:
    @pytest.mark.parametrize("bench", sorted(TABLE5))
    def test_contributions_reproduce_table5(self, bench):
        """Components are printed to 3 decimals (+-0.0005) and contributions to 2 (+-0.005e-3): the tolerance."""
        n, table = TABLE5[bench]
        coef = {"scenario": 1 / n, "generation": 1 / n, "judge_panel": 1.0, "residual": 1 / n}
        for j in range(5):
            comps = {c: table[c][0][j] for c in table}
            got = variance_contributions(comps["scenario"], comps["generation"], comps["residual"],
                                         comps["judge_panel"], n=n, m=1, k=1, k_total=K_TOT)
            for c in table:
                tol = 0.0005 * coef[c] + 0.005e-3 + 1e-12
                assert abs(got[c] - table[c][1][j] * 1e-3) <= tol, (bench, j, c)

    @pytest.mark.parametrize("n, m, k, kt", [(80, 10, 5, 5), (80, 1, 1, 5), (7, 3, 2, 5), (12, 2, 3, 8),
                                             (1, 1, 1, 1), (30, 4, 1, 2)])
    def test_total_and_terms_equal_proposition_1_written_out(self, n, m, k, kt):
        """Eq. 2 typed in from the paper, independently of the library's coefficients."""
        a, b, e, g = QWEN["scenario"], QWEN["generation"], QWEN["residual"], QWEN["judge_panel"]
        bias = 0.0 if kt == 1 else g / k * (kt - k) / (kt - 1)
        want = {"scenario": a / n, "generation": b / (n * m), "residual": e / (n * m * k), "judge_panel": bias}
        got = variance_contributions(a, b, e, g, n=n, m=m, k=k, k_total=kt)
        assert got == pytest.approx(want, rel=1e-14, abs=0.0)
        assert grand_mean_variance(a, b, e, g, n=n, m=m, k=k, k_total=kt) == pytest.approx(
            a / n + b / (n * m) + e / (n * m * k) + bias, rel=1e-14)
        if k == kt:
            assert got["judge_panel"] == 0.0
        assert fpc(1, 5) == 1.0 and fpc(5, 5) == 0.0 and fpc(2, 5) == pytest.approx(0.75)

    @pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
    def test_monte_carlo_with_finite_population_correction(self, k):
        """The same random k-subset of a fixed 5-judge panel scores every cell (the design of Prop. 1)."""
        n, m = 6, 2
        g = panel_offsets(K_TOT, QWEN["judge_panel"])
        rng = np.random.default_rng(100 + k)
        y = simulate_array(n=n, m=m, k=K_TOT, s2_scenario=QWEN["scenario"], s2_generation=QWEN["generation"],
                           s2_residual=QWEN["residual"], judge_offsets=g, reps=R, seed=rng)
        subset = np.argsort(rng.random((R, K_TOT)), axis=1)[:, :k]
        sel = np.take_along_axis(y, subset[:, None, None, :], axis=3)
        xbar = sel.mean(axis=(1, 2, 3))
        pred = grand_mean_variance(QWEN["scenario"], QWEN["generation"], QWEN["residual"], QWEN["judge_panel"],
                                   n=n, m=m, k=k, k_total=K_TOT)
        se = assert_within_mc(xbar, pred)
        if 1 < k < K_TOT:   # the FPC is needed: sigma2_gamma/K without it is rejected
            naive = pred + QWEN["judge_panel"] / k * (1 - fpc(k, K_TOT))
            assert abs(np.var(xbar, ddof=1) - naive) > 4 * se


# --------------------------------------------------------------------------------------- strategies A/B/C
class TestStrategiesAtMultiples:
    @pytest.mark.parametrize("budget", [5, 10, 25, 50])
    def test_equal_the_paper_equations(self, budget):
        n, kt = 80, K_TOT
        b, g, e = QWEN["generation"], QWEN["judge_panel"], QWEN["residual"]
        kw = dict(s2_generation=b, s2_residual=e, s2_judge_panel=g, budget=budget, n=n, k_total=kt)
        assert strategy_variance("all", **kw) == pytest.approx((kt * b + e) / (n * budget), rel=1e-13)
        assert strategy_variance("random", **kw) == pytest.approx((b + g + e) / (n * budget), rel=1e-13)
        assert strategy_variance("cyclic", **kw) == pytest.approx((b + e) / (n * budget), rel=1e-13)

    def test_gaps_equal_appendix_d(self):
        n, budget, kt = 80, 10, K_TOT
        b, g = QWEN["generation"], QWEN["judge_panel"]
        gaps = strategy_gaps(s2_generation=b, s2_residual=QWEN["residual"], s2_judge_panel=g, budget=budget, n=n,
                             k_total=kt)
        assert gaps["all-cyclic"] == pytest.approx((kt - 1) * b / (n * budget), rel=1e-12)
        assert gaps["random-cyclic"] == pytest.approx(g / (n * budget), rel=1e-12)
        assert gaps["all-random"] == pytest.approx(((kt - 1) * b - g) / (n * budget), rel=1e-12)


class TestCyclicNeverWorse:
    def test_on_a_grid_including_non_multiple_budgets(self):
        rng = np.random.default_rng(7)
        comps = rng.gamma(0.7, 1.0, size=(40, 3))
        comps[::5, 0] = 0.0            # sigma2_beta = 0 (A ties C at multiples)
        comps[1::7, 2] = 0.0           # sigma2_gamma = 0 (B ties C)
        budgets = np.arange(1, 61)
        checked = 0
        for kt, n in itertools.product((2, 3, 5, 8), (1, 2, 7, 20)):
            coef = {s: strategy_coefficients(s, budget=budgets, n=n, k_total=kt) for s in STRATEGIES}
            v = {s: np.outer(comps[:, 0], c["generation"]) + np.outer(comps[:, 1], c["residual"])
                 + np.outer(comps[:, 2], c["judge_panel"]) for s, c in coef.items()}
            assert (v["cyclic"] <= np.minimum(v["all"], v["random"]) * (1 + 1e-12) + 1e-15).all()
            checked += v["cyclic"].size
        assert checked == 40 * 60 * 16
        # the vectorised coefficients agree with the scalar function
        b, e, g = comps[3]
        assert strategy_variance("all", s2_generation=b, s2_residual=e, s2_judge_panel=g, budget=7, n=2,
                                 k_total=5) == pytest.approx(
            float(np.dot([b, e, g], [strategy_coefficients("all", budget=7, n=2, k_total=5)[c]
                                     for c in ("generation", "residual", "judge_panel")])), rel=1e-14)


class TestABCrossover:
    @pytest.mark.parametrize("kt", [3, 5, 8])
    def test_tie_at_threshold_and_sides(self, kt):
        b, e, n = 0.2, 1.0, 30
        g_cross = (kt - 1) * b
        for budget in (kt, 3 * kt):
            kw = dict(s2_generation=b, s2_residual=e, budget=budget, n=n, k_total=kt)
            assert strategy_variance("all", s2_judge_panel=g_cross, **kw) == pytest.approx(
                strategy_variance("random", s2_judge_panel=g_cross, **kw), rel=1e-12)
            lo, hi = 0.9 * g_cross, 1.1 * g_cross
            for g, better, worse in ((lo, "random", "all"), (hi, "all", "random")):
                v = {s: strategy_variance(s, s2_judge_panel=g, **kw) for s in (better, worse)}
                assert v[better] < v[worse]
        assert ab_threshold(b, g_cross, k_total=kt) == pytest.approx(0.0, abs=1e-15)
        assert preferred_baseline(b, g_cross, k_total=kt) == "tie"
        assert preferred_baseline(b, 0.9 * g_cross, k_total=kt) == "random"
        assert preferred_baseline(b, 1.1 * g_cross, k_total=kt) == "all"

    def test_paper_ratios_for_mtbench(self):
        """§4: sigma2_gamma/sigma2_beta is below K_tot - 1 = 4 for Qwen (3.6) and Llama (2.1): random wins."""
        for name, side in (("Qwen", "random"), ("Llama", "random"), ("GPT", "all"), ("Gemini", "all")):
            c = TABLE3_MTBENCH[name]
            assert preferred_baseline(c["generation"], c["judge_panel"], k_total=5) == side


class TestLeftoverJudgeTerm:
    """Budgets that are not multiples of K_tot: the r extra calls go to a random r-subset of the panel."""

    @pytest.mark.parametrize("schedule_kind, n, budget", [("cyclic", 2, 3), ("cyclic", 3, 4), ("cyclic", 1, 7),
                                                          ("all", 2, 7), ("all", 3, 2)])
    def test_exact_by_enumerating_every_judge_order(self, schedule_kind, n, budget):
        """Average the squared judge part over all 5! judge orders: equals V_left exactly."""
        if schedule_kind == "cyclic":
            sched = cyclic_schedule(n, K_TOT, generations=budget, seed=3)
        else:
            sched = all_judges_schedule(n, K_TOT, budget=budget, seed=3)
        counts = sched["judge"].value_counts().reindex([f"judge_{i}" for i in range(K_TOT)], fill_value=0)
        w = counts.to_numpy(float) / len(sched)
        g = panel_offsets(K_TOT, QWEN["judge_panel"])
        sq = [float(w @ g[list(p)]) ** 2 for p in itertools.permutations(range(K_TOT))]
        exact = float(np.mean(sq))
        assert exact == pytest.approx(leftover_judge_variance(QWEN["judge_panel"], calls=n * budget, k_total=K_TOT),
                                      rel=1e-12, abs=1e-15)
        assert exact == pytest.approx(judge_weight_variance(QWEN["judge_panel"], w), rel=1e-12, abs=1e-15)

    def test_closed_form_values(self):
        assert leftover_judge_variance(1.0, calls=10, k_total=5) == 0.0
        assert leftover_judge_variance(1.0, calls=7, k_total=5) == pytest.approx(2 * 3 / (4 * 49))
        assert leftover_judge_variance(1.0, calls=3, k_total=1) == 0.0

    @pytest.mark.parametrize("strategy, n, budget", [
        ("cyclic", 1, 2), ("cyclic", 2, 3), ("cyclic", 3, 7), ("cyclic", 4, 5),
        ("all", 1, 2), ("all", 2, 7), ("all", 3, 8), ("all", 2, 10),
        ("random", 2, 3), ("random", 3, 7),
    ])
    def test_strategy_variance_matches_simulated_schedules(self, strategy, n, budget):
        """Simulate the model on the schedule that plan.py builds (conditional on scenarios, as the paper)."""
        g = panel_offsets(K_TOT, QWEN["judge_panel"])
        rng = np.random.default_rng(1000 + 10 * n + budget)
        if strategy == "all":
            sched = all_judges_schedule(n, K_TOT, budget=budget, seed=1)
        else:
            sched = cyclic_schedule(n, K_TOT, generations=budget, seed=1)
        scen, cell, judge = schedule_arrays(sched)
        xbar = simulate_schedule(scen, cell, judge, comps=QWEN, offsets=g, reps=R, rng=rng,
                                 random_judges=strategy == "random")
        pred = strategy_variance(strategy, s2_generation=QWEN["generation"], s2_residual=QWEN["residual"],
                                 s2_judge_panel=QWEN["judge_panel"], budget=budget, n=n, k_total=K_TOT)
        assert_within_mc(xbar, pred)

    @pytest.mark.parametrize("strategy, n, budget", [("cyclic", 1, 2), ("cyclic", 2, 3), ("all", 1, 7)])
    def test_leftover_term_is_needed(self, strategy, n, budget):
        """Without V_left (the paper's Eqs. 3/5 applied to a non-multiple budget) the simulation rejects it."""
        g = panel_offsets(K_TOT, QWEN["judge_panel"])
        rng = np.random.default_rng(77 + budget)
        sched = (all_judges_schedule(n, K_TOT, budget=budget, seed=2) if strategy == "all"
                 else cyclic_schedule(n, K_TOT, generations=budget, seed=2))
        xbar = simulate_schedule(*schedule_arrays(sched), comps=QWEN, offsets=g, reps=R, rng=rng)
        pred = strategy_variance(strategy, s2_generation=QWEN["generation"], s2_residual=QWEN["residual"],
                                 s2_judge_panel=QWEN["judge_panel"], budget=budget, n=n, k_total=K_TOT)
        se = assert_within_mc(xbar, pred)
        without = pred - leftover_judge_variance(QWEN["judge_panel"], calls=n * budget, k_total=K_TOT)
        assert abs(np.var(xbar, ddof=1) - without) > 4 * se

    def test_scenario_term_when_scenarios_are_resampled(self):
        n, budget = 3, 7
        g = panel_offsets(K_TOT, QWEN["judge_panel"])
        sched = cyclic_schedule(n, K_TOT, generations=budget, seed=4)
        xbar = simulate_schedule(*schedule_arrays(sched), comps=QWEN, offsets=g, reps=R,
                                 rng=np.random.default_rng(5), scenario_term=True)
        pred = strategy_variance("cyclic", s2_generation=QWEN["generation"], s2_residual=QWEN["residual"],
                                 s2_judge_panel=QWEN["judge_panel"], budget=budget, n=n, k_total=K_TOT,
                                 s2_scenario=QWEN["scenario"])
        assert_within_mc(xbar, pred)


class TestGeneralDesigns:
    @pytest.mark.parametrize("assignment, n, m, k, seed", [("cyclic", 3, 2, 2, 31), ("cyclic", 2, 3, 3, 32),
                                                           ("random", 3, 2, 2, 33), ("fixed", 3, 2, 2, 34)])
    def test_design_variance_matches_simulation(self, assignment, n, m, k, seed):
        g = panel_offsets(K_TOT, QWEN["judge_panel"])
        rng = np.random.default_rng(seed)
        scen = np.repeat(np.arange(n), m * k)
        cell = np.repeat(np.arange(n * m), k)
        if assignment == "cyclic":
            sched = cyclic_schedule(n, K_TOT, generations=m, judges_per_generation=k, seed=9)
            s, c, j = schedule_arrays(sched)
            xbar = simulate_schedule(s, c, j, comps=QWEN, offsets=g, reps=R, rng=rng, scenario_term=True)
        else:
            y = rng.standard_normal((R, n * m * k)) * math.sqrt(QWEN["residual"])
            y += (rng.standard_normal((R, n * m)) * math.sqrt(QWEN["generation"]))[:, cell]
            y += (rng.standard_normal((R, n)) * math.sqrt(QWEN["scenario"]))[:, scen]
            if assignment == "random":   # a fresh k-subset for every generation
                pick = np.argsort(rng.random((R, n * m, K_TOT)), axis=2)[:, :, :k].reshape(R, -1)
            else:                        # one k-subset for the whole benchmark
                pick = np.repeat(np.argsort(rng.random((R, K_TOT)), axis=1)[:, :k][:, None, :], n * m, 1).reshape(R, -1)
            y += g[pick]
            xbar = y.mean(axis=1)
        pred = design_variance(QWEN["scenario"], QWEN["generation"], QWEN["residual"], QWEN["judge_panel"],
                               n=n, m=m, k=k, k_total=K_TOT, assignment=assignment)
        assert_within_mc(xbar, pred)

    def test_reduces_to_proposition_1_and_strategies(self):
        args = (QWEN["scenario"], QWEN["generation"], QWEN["residual"], QWEN["judge_panel"])
        assert design_variance(*args, n=80, m=3, k=2, k_total=5, assignment="fixed") == pytest.approx(
            grand_mean_variance(*args, n=80, m=3, k=2, k_total=5), rel=1e-14)
        for s, kk in (("cyclic", 1), ("random", 1), ("all", 5)):
            assignment = "random" if s == "random" else "cyclic"
            m = 10 if kk == 1 else 2
            assert design_variance(*args, n=80, m=m, k=kk, k_total=5, assignment=assignment) == pytest.approx(
                strategy_variance(s, s2_generation=args[1], s2_residual=args[2], s2_judge_panel=args[3], budget=10,
                                  n=80, k_total=5, s2_scenario=args[0]), rel=1e-14)


class TestScenarioCoverage:
    def test_equation_35_and_its_monotonicity(self):
        a, b, e = QWEN["scenario"], QWEN["generation"], QWEN["residual"]
        values = [scenario_generation_variance(a, b, e, generation_budget=240, m=m) for m in (1, 2, 3, 4, 6, 12)]
        for m, v in zip((1, 2, 3, 4, 6, 12), values):
            assert v == pytest.approx((m * a + b + e) / 240, rel=1e-13)
        assert values == sorted(values)

    def test_best_split_exhausts_scenarios_first(self):
        a, b, e = QWEN["scenario"], QWEN["generation"], QWEN["residual"]
        assert best_generations_per_scenario(a, b, e, generation_budget=60, n_max=80) == 1
        assert best_generations_per_scenario(a, b, e, generation_budget=800, n_max=80) == 10
        assert best_generations_per_scenario(a, b, e, generation_budget=810, n_max=80) == 10

    def test_best_split_equals_a_full_scan_on_random_cases(self):
        """The search looks only near the optimum; an exhaustive scan over m = 1..B_gen agrees (ties: smallest m)."""
        rng = np.random.default_rng(22)
        for trial in range(1500):
            a, b, e = rng.gamma(0.5, 1.0, 3) * (rng.random(3) > 0.25)
            bg = int(rng.integers(1, 300))
            nmax = None if trial % 4 == 0 else int(rng.integers(1, 400))
            m = np.arange(1, bg + 1)
            n = np.minimum(bg if nmax is None else nmax, bg // m)
            v = a / n + (b + e) / (n * m)
            assert best_generations_per_scenario(a, b, e, generation_budget=bg, n_max=nmax) == int(m[np.argmin(v)])

    @pytest.mark.parametrize("n_max, want", [(None, 1), (80, 10**9 // 80), (7 * 10**8, 1)])
    def test_best_split_of_a_huge_budget_is_instant(self, n_max, want):
        a, b, e = QWEN["scenario"], QWEN["generation"], QWEN["residual"]
        tracemalloc.start()
        try:
            m = best_generations_per_scenario(a, b, e, generation_budget=10**9, n_max=n_max)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert m == want and peak < 5e6
        # with no scenario variance, the whole budget spent beats fewer calls: 5e8 x 2 over 7e8 x 1
        assert best_generations_per_scenario(0.0, b, e, generation_budget=10**9, n_max=7 * 10**8) == 2

    def test_split_matches_simulation(self):
        """B_gen = 12 generations as 12 x 1 or 4 x 3 (cycled judges), scenarios resampled."""
        g = panel_offsets(K_TOT, QWEN["judge_panel"])
        for n, m, seed in ((12, 1, 21), (4, 3, 22)):
            sched = cyclic_schedule(n, K_TOT, generations=m, seed=seed)
            xbar = simulate_schedule(*schedule_arrays(sched), comps=QWEN, offsets=g, reps=R,
                                     rng=np.random.default_rng(seed), scenario_term=True)
            pred = scenario_generation_variance(QWEN["scenario"], QWEN["generation"], QWEN["residual"],
                                                generation_budget=12, m=m, s2_judge_panel=QWEN["judge_panel"],
                                                k_total=K_TOT)
            assert_within_mc(xbar, pred)


# ------------------------------------------------------------------------------------------------ App. F
class TestPoolPredictions:
    Y = np.array([[[1.0, 2.0, 4.0], [3.0, 2.0, 1.0]], [[0.0, 5.0, 2.0], [2.0, 2.0, 2.0]]])   # n=2, m_max=2, K=3

    def test_constants_by_hand(self):
        y = self.Y
        n, mm, k = y.shape
        ca = k * np.mean([np.mean([(y[i, g].mean() - y[i].mean()) ** 2 for g in range(mm)]) for i in range(n)])
        cb = np.mean([np.mean([(y[i, g, l] - y[i].mean()) ** 2 for g in range(mm) for l in range(k)])
                      for i in range(n)])
        cc = np.mean([np.mean([(y[i, g, l] - y[i, :, l].mean()) ** 2 for g in range(mm)]) for i in range(n)
                      for l in range(k)])
        got = pool_constants(y)
        assert got == pytest.approx({"all": ca, "random": cb, "cyclic": cc}, rel=1e-14)

    @staticmethod
    def enumerate_scheme(y: np.ndarray, strategy: str, budget: int) -> float:
        """Exact variance of the grand mean of the subsampling scheme, by listing every outcome.

        The scheme as subsample.py's docstring states it: generations drawn uniformly with replacement; the
        r = B mod K extra calls of scenario position p go to the judges at rotation slots pr..pr+r-1 (mod K) of
        a random judge order, over a random scenario order. All (scenario order, judge order, draws)
        combinations are equally likely, so the variance is the plain variance over the full list.
        """
        n, _, k = y.shape
        q, r = divmod(budget, k)
        perms = [(None, None)] if strategy == "random" else list(itertools.product(
            itertools.permutations(range(n)), itertools.permutations(range(k))))
        outcomes = []
        for order, jperm in perms:
            slots = []                                      # each slot: equally likely values of one draw
            for pos in range(n):
                i = pos if order is None else order[pos]
                extra = [] if jperm is None else [jperm[(pos * r + t) % k] for t in range(r)]
                if strategy == "random":
                    slots += [y[i].ravel()] * budget
                elif strategy == "cyclic":
                    slots += [y[i, :, l] for l in range(k) for _ in range(q)] + [y[i, :, l] for l in extra]
                else:
                    slots += [y[i].sum(axis=1)] * q + ([y[i][:, extra].sum(axis=1)] if r else [])
            total = np.zeros(1)
            for values in slots:
                total = (total[:, None] + np.asarray(values)[None, :]).ravel()
            outcomes.append(total / (n * budget))
        return float(np.var(np.concatenate(outcomes)))

    @pytest.mark.parametrize("strategy, budgets", [("cyclic", (1, 2, 3, 4, 5, 6)), ("all", (1, 2, 3, 4, 5, 6)),
                                                   ("random", (1, 2, 3))])
    def test_pool_variance_equals_exhaustive_enumeration(self, strategy, budgets):
        consts = pool_constants(self.Y)
        for budget in budgets:
            exact = self.enumerate_scheme(self.Y, strategy, budget)
            assert pool_variance(self.Y, strategy=strategy, budget=budget) == pytest.approx(exact, rel=1e-11)
            if budget % 3 == 0:      # the paper's C/(nB) (Eqs. 36-38) holds at multiples of K_tot
                assert exact == pytest.approx(consts[strategy] / (2 * budget), rel=1e-11)

    @pytest.mark.parametrize("n, budget", [(1, 2), (3, 4), (7, 3), (10, 13)])
    def test_leftover_reduces_to_population_term_without_interactions(self, n, budget):
        """With X_igl = a_i + b_ig + gamma_l (no judge x scenario interaction) the pool's leftover term is V_left."""
        rng = np.random.default_rng(n * 100 + budget)
        g = panel_offsets(K_TOT, 0.7)
        y = rng.normal(size=(n, 1, 1)) + rng.normal(size=(n, 4, 1)) + g[None, None, :]
        cyc = pool_variance(y, strategy="cyclic", budget=budget)
        assert cyc - pool_constants(y)["cyclic"] / (n * budget) == pytest.approx(
            leftover_judge_variance(0.7, calls=n * budget, k_total=K_TOT), rel=1e-10, abs=1e-14)


# ----------------------------------------------------------------------------------------- prices and noise
class TestCostWeightedFormulas:
    def test_equal_costs_and_noise_give_cyclic_judge(self):
        assert neyman_shares([1.0] * 4, [2.0] * 4, generation_cost=1.0) == pytest.approx([0.25] * 4)
        b, e = QWEN["generation"], QWEN["residual"]
        v = poststratified_variance(b, e, [4, 4, 4, 4, 4], s2_scenario=QWEN["scenario"], n=4)
        assert v == pytest.approx(strategy_variance("cyclic", s2_generation=b, s2_residual=e, s2_judge_panel=1.0,
                                                    budget=5, n=4, k_total=5, s2_scenario=QWEN["scenario"]), rel=1e-13)

    def test_neyman_rule(self):
        s = np.array([1.0, 2.0, 1.0])
        c = np.array([1.0, 1.0, 4.0])
        sh = neyman_shares(s, c, generation_cost=0.0)
        assert sh == pytest.approx(np.array([1.0, 2.0, 0.5]) / 3.5)
        # it minimises variance at fixed cost: any perturbation that keeps the cost is worse
        cost = 100.0
        b = sh * cost / (sh @ c)
        v0 = np.sum(s**2 / b)
        for d in (np.array([1.0, -1.0, 0.0]), np.array([4.0, 0.0, -1.0])):
            assert np.sum(s**2 / (b + 0.5 * d)) > v0


# ------------------------------------------------------------------------------------------------ power
class TestPower:
    def test_mdd_and_power_are_inverse(self):
        mdd = minimum_detectable_difference(0.01, 0.02, alpha=0.05, power=0.8)
        assert mdd == pytest.approx((1.959963984540054 + 0.8416212335729143) * math.sqrt(0.03), rel=1e-12)
        assert power_to_detect(mdd, 0.01, 0.02) == pytest.approx(0.8, abs=1e-3)
        assert power_to_detect(0.0, 0.01) == pytest.approx(0.05, rel=1e-10)

    def test_power_by_simulation(self):
        """Two models scored by CyclicJudge designs: the z-test at the MDD rejects with the nominal power."""
        n, budget, reps = 20, 5, 4000
        comps = dict(s2_generation=QWEN["generation"], s2_residual=QWEN["residual"], s2_judge_panel=QWEN["judge_panel"],
                     budget=budget, n=n, k_total=K_TOT, s2_scenario=QWEN["scenario"])
        v = strategy_variance("cyclic", **comps)
        mdd = minimum_detectable_difference(v, v, power=0.8)
        rng = np.random.default_rng(11)
        g = panel_offsets(K_TOT, QWEN["judge_panel"])
        s, c, j = schedule_arrays(cyclic_schedule(n, K_TOT, generations=budget, seed=0))
        a = simulate_schedule(s, c, j, comps=QWEN, offsets=g, reps=reps, rng=rng, scenario_term=True)
        b = simulate_schedule(s, c, j, comps=QWEN, offsets=g, reps=reps, rng=rng, scenario_term=True) + mdd
        rate = np.mean(np.abs(b - a) / math.sqrt(2 * v) > 1.959963984540054)
        assert abs(rate - 0.8) <= 4 * math.sqrt(0.8 * 0.2 / reps)

    def test_scenarios_for_target_se_is_the_smallest(self):
        kw = dict(s2_scenario=QWEN["scenario"], s2_generation=QWEN["generation"], s2_residual=QWEN["residual"],
                  s2_judge_panel=QWEN["judge_panel"], m=1, k=1, k_total=5)
        n = scenarios_for_target_se(0.1, **kw)
        assert design_variance(*(kw[x] for x in ("s2_scenario", "s2_generation", "s2_residual", "s2_judge_panel")),
                               n=n, m=1, k=1, k_total=5) <= 0.01
        assert design_variance(*(kw[x] for x in ("s2_scenario", "s2_generation", "s2_residual", "s2_judge_panel")),
                               n=n - 1, m=1, k=1, k_total=5) > 0.01
        with pytest.raises(CjstatsError, match="judge term alone"):
            scenarios_for_target_se(0.1, **{**kw, "k": 1}, assignment="fixed")

    def test_scenarios_for_target_se_equals_a_full_scan_on_random_cases(self):
        """Every assignment, panels of 1-8, components with zeros: the first n of a brute-force scan."""
        rng = np.random.default_rng(20)
        ns = np.arange(1, 1501)
        for trial in range(150):
            comps = rng.gamma(0.5, 1.0, 4) * (rng.random(4) > 0.2)
            kt = int(rng.integers(1, 9))
            k, m = int(rng.integers(1, kt + 1)), int(rng.integers(1, 4))
            assignment = ("cyclic", "random", "fixed")[trial % 3]
            c = design_coefficients(n=ns, m=m, k=k, k_total=kt, assignment=assignment)   # checked by simulation
            v = c["scenario"] * comps[0] + c["generation"] * comps[1] + c["residual"] * comps[2] \
                + c["judge_panel"] * comps[3]
            if v.max() <= v.min():
                continue
            t = math.sqrt(rng.uniform(v.min(), v.max()))
            kw = dict(s2_scenario=comps[0], s2_generation=comps[1], s2_residual=comps[2], s2_judge_panel=comps[3],
                      m=m, k=k, k_total=kt, assignment=assignment, n_max=int(ns[-1]))
            assert scenarios_for_target_se(t, **kw) == int(ns[np.argmax(v <= t * t)]), (trial, comps, kt, k, m)

    @pytest.mark.parametrize("assignment", ["cyclic", "random", "fixed"])
    def test_scenarios_for_a_tiny_se_is_instant(self, assignment):
        """target 3e-4 needs ~3.6e7 scenarios: the answer comes from a closed-form start, not a scan from 1."""
        kw = dict(s2_scenario=QWEN["scenario"], s2_generation=QWEN["generation"], s2_residual=QWEN["residual"],
                  s2_judge_panel=QWEN["judge_panel"], m=1, k=5 if assignment == "fixed" else 1, k_total=5,
                  assignment=assignment)
        tracemalloc.start()
        t0 = time.perf_counter()
        try:
            n = scenarios_for_target_se(3e-4, **kw)
            elapsed, peak = time.perf_counter() - t0, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 5e6 and elapsed < 2.0, (peak, elapsed)
        comps = [kw[c] for c in ("s2_scenario", "s2_generation", "s2_residual", "s2_judge_panel")]
        v = [design_variance(*comps, n=x, m=1, k=kw["k"], k_total=5, assignment=assignment)
             for x in range(n - 6, n + 1)]
        assert v[-1] <= 9e-8 and all(x > 9e-8 for x in v[:-1])
        assert n > 2 * 10**7

    @pytest.mark.parametrize("strategy", STRATEGIES)
    def test_budget_for_target_se_is_the_smallest(self, strategy):
        kw = dict(s2_generation=QWEN["generation"], s2_residual=QWEN["residual"], s2_judge_panel=QWEN["judge_panel"],
                  n=40, k_total=5)
        b = budget_for_target_se(0.03, strategy=strategy, **kw)
        assert strategy_variance(strategy, budget=b, **kw) <= 0.03**2
        assert b == 1 or strategy_variance(strategy, budget=b - 1, **kw) > 0.03**2
        with pytest.raises(CjstatsError, match="scenario term alone"):
            budget_for_target_se(0.1, strategy=strategy, **kw, s2_scenario=1.0 * 40)

    def test_budget_for_target_se_equals_a_full_scan_on_random_cases(self):
        rng = np.random.default_rng(21)
        bs = np.arange(1, 2001)
        for trial in range(240):
            comps = rng.gamma(0.5, 1.0, 4) * (rng.random(4) > 0.2)
            kt, n = int(rng.integers(1, 9)), int(rng.integers(1, 6))
            strategy = STRATEGIES[trial % 3]
            scen = comps[0] if trial % 2 else None
            kw = dict(s2_generation=comps[1], s2_residual=comps[2], s2_judge_panel=comps[3], n=n, k_total=kt,
                      s2_scenario=scen)
            c = strategy_coefficients(strategy, budget=bs, n=n, k_total=kt)              # checked by simulation
            v = c["generation"] * comps[1] + c["residual"] * comps[2] + c["judge_panel"] * comps[3] \
                + (0.0 if scen is None else comps[0] / n)
            if v.max() <= v.min():
                continue
            t = math.sqrt(rng.uniform(v.min(), v.max()))
            got = budget_for_target_se(t, strategy=strategy, budget_max=int(bs[-1]), **kw)
            assert got == int(bs[np.argmax(v <= t * t)]), (trial, comps, kt, n, strategy)

    @pytest.mark.parametrize("strategy", STRATEGIES)
    def test_budget_for_a_tiny_se_is_instant(self, strategy):
        kw = dict(s2_generation=QWEN["generation"], s2_residual=QWEN["residual"], s2_judge_panel=QWEN["judge_panel"],
                  n=1, k_total=5)
        tracemalloc.start()
        try:
            b = budget_for_target_se(3e-4, strategy=strategy, **kw)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 5e6
        v = [strategy_variance(strategy, budget=x, **kw) for x in range(b - 6, b + 1)]
        assert v[-1] <= 9e-8 and all(x > 9e-8 for x in v[:-1])


class TestValidation:
    def test_unknown_strategy_names_the_argument_and_choices(self):
        with pytest.raises(CjstatsError, match=r"The 'strategy' argument of strategy_variance must be one of "
                                               r"'all', 'cyclic', 'random'. Got 'C' instead."):
            strategy_variance("C", s2_generation=1, s2_residual=1, s2_judge_panel=1, budget=5, n=3, k_total=5)

    @pytest.mark.parametrize("kwargs, match", [
        (dict(k=6), "at most k_total=5"),
        (dict(n=0), "'n' argument of variance_contributions must be an integer >= 1"),
        (dict(m=2.5), "'m' argument"),
    ])
    def test_bad_design(self, kwargs, match):
        base = dict(n=10, m=1, k=1, k_total=5)
        with pytest.raises(CjstatsError, match=match):
            variance_contributions(1.0, 1.0, 1.0, 1.0, **{**base, **kwargs})

    def test_negative_variance(self):
        with pytest.raises(CjstatsError, match="'s2_residual' argument of grand_mean_variance must be a finite number"):
            grand_mean_variance(1.0, 1.0, -0.1, 1.0, n=1, m=1, k=1, k_total=2)

    def test_pool_shape(self):
        with pytest.raises(CjstatsError, match=r"shape \(n scenarios, m_max generations, K_tot judges\)"):
            pool_constants(np.zeros((3, 4)))
