"""Variance of a paired difference under strategies A/B/C and shared vs independent schedules."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import cjstats as cj
from cjstats.decisions.differences import (
    difference_coefficients, difference_variance, optimise_difference, simulate_difference,
)
from cjstats.exceptions import CjstatsError

GAMMA = np.array([-1.5, -0.5, 0.5, 1.5])          # large judge offsets: s2_judge_panel of the offsets = 1.25
GP0 = np.array([0.2, -0.2, 0.1, -0.1])
GP = np.vstack([GP0, -GP0])                        # judge x model interaction, rows and columns sum to 0
V = dict(s2_model_scenario=0.2, s2_generation=0.1, s2_residual=0.4)
G = GAMMA[None, :] + GP                            # per-model offsets g_pl
S2_PANEL = float((G**2).mean())                    # mean of the two models' judge_panel
S2_DIFF = float(((G[0] - G[1]) ** 2).mean())


def _formula(strategy, schedule, n, budget):
    return difference_variance(strategy, schedule=schedule, n=n, budget=budget, k_total=4, s2_judge_panel=S2_PANEL,
                               s2_judge_difference=S2_DIFF, **V)


class TestSharedScheduleCancelsJudges:
    def test_by_formula_the_judge_offsets_never_enter_a_shared_schedule(self):
        for strategy in ("all", "random", "cyclic"):
            for budget in (1, 2, 3, 5):
                c = difference_coefficients(strategy, schedule="shared", budget=budget, n=30, k_total=4)
                assert c["judge_panel"] == 0.0
        # complete CyclicJudge rotation: nothing judge-related is left at all
        c = difference_coefficients("cyclic", schedule="shared", budget=2, n=30, k_total=4)
        assert c["judge_difference"] == 0.0
        assert _formula("random", "independent", 30, 2) > _formula("random", "shared", 30, 2)

    @pytest.mark.parametrize("strategy,schedule,budget", [
        ("cyclic", "shared", 2), ("cyclic", "independent", 3), ("cyclic", "shared", 3),
        ("random", "shared", 2), ("random", "independent", 2), ("all", "independent", 6),
    ])
    def test_by_simulation(self, strategy, schedule, budget):
        # 2,000 replicates: the sample variance of a normal d has relative SE sqrt(2/1999) = 3.2%; accept 4 SE.
        d = simulate_difference(strategy, schedule=schedule, n=30, budget=budget, gamma=GAMMA, judge_model=GP,
                                replicates=2000, seed=zlib.crc32(f"{strategy}{schedule}{budget}".encode()), **V)
        assert d.var(ddof=1) == pytest.approx(_formula(strategy, schedule, 30, budget), rel=4 * np.sqrt(2 / 1999))

    def test_simulated_shared_cyclic_ignores_huge_judge_offsets(self):
        small = simulate_difference("cyclic", schedule="shared", n=30, budget=2, gamma=GAMMA * 0, judge_model=GP,
                                    replicates=2000, seed=1, **V)
        huge = simulate_difference("cyclic", schedule="shared", n=30, budget=2, gamma=GAMMA * 10, judge_model=GP,
                                   replicates=2000, seed=1, **V)
        np.testing.assert_allclose(small, huge, atol=1e-9)  # same draws: gamma_l cancels exactly, call by call


class TestOptimiseDifference:
    def test_prefers_a_shared_schedule_when_judges_differ(self):
        best = optimise_difference(budget=240, k_total=4, n_max=60, s2_judge_panel=S2_PANEL,
                                   s2_judge_difference=S2_DIFF, **V).iloc[0]
        assert best["schedule"] == "shared" and best["strategy"] in ("cyclic", "all")
        assert best["calls"] <= 240

    def test_too_small_a_budget_is_refused(self):
        with pytest.raises(CjstatsError):
            optimise_difference(budget=1, k_total=4, n_max=10, s2_judge_panel=1, s2_judge_difference=1, **V)


class TestPairedPower:
    def test_paired_variance_shrinks_the_minimum_detectable_difference(self):
        v_ind = _formula("random", "independent", 50, 1)
        v_sh = _formula("cyclic", "shared", 50, 4)
        assert cj.minimum_detectable_difference(var_difference=v_sh) < cj.minimum_detectable_difference(
            var_difference=v_ind)
        mdd = cj.minimum_detectable_difference(var_difference=v_sh, power=0.8)
        assert cj.power_to_detect(mdd, var_difference=v_sh) == pytest.approx(0.8, abs=1e-3)

    def test_var_difference_matches_var_a_plus_var_b(self):
        assert cj.minimum_detectable_difference(var_difference=0.02) == pytest.approx(
            cj.minimum_detectable_difference(0.01, 0.01), rel=1e-12)

    def test_both_forms_at_once_are_refused(self):
        with pytest.raises(CjstatsError, match="not both"):
            cj.power_to_detect(0.1, 0.01, var_difference=0.02)


class TestFromAJointFit:
    def test_difference_components_recover_the_planted_judge_terms(self):
        from cjstats.decisions.differences import difference_components
        from cjstats.studies.simulate_joint import simulate_joint

        f = simulate_joint(n=200, m=2, mu=[0, 0.1], gamma=GAMMA, judge_model=GP, rng=4, **V, s2_scenario=0.3)
        comps = difference_components(cj.fit_joint(f), "m0", "m1")
        # estimation error of mean_l (g_a - g_b)^2 here is about 2 sqrt(2 s2_eps/(nm)) |g_a - g_b| ~ 0.02
        assert comps["s2_judge_difference"] == pytest.approx(S2_DIFF, abs=0.05)
        assert comps["s2_judge_panel"] == pytest.approx(S2_PANEL, abs=0.1)
        assert comps["s2_residual"] == pytest.approx(V["s2_residual"], rel=0.1)
        v = cj.difference_variance("cyclic", budget=4, n=50, k_total=4, **comps)
        assert v > 0


class TestOptimiseTargetDifference:
    def test_optimise_dispatches_to_the_paired_design(self):
        from cjstats.studies.simulate_joint import simulate_joint

        f = simulate_joint(n=40, m=2, mu=[0, 0.1, 0.3], gamma=[-1, 0, 0.5, 0.5], rng=2, s2_scenario=0.3, **V)
        fit = cj.fit_joint(f)
        alloc = cj.optimise(fit, budget=400, target="difference", models=("m2", "m1"))
        rec = alloc.recommendation
        assert rec["schedule"] == "shared" and rec["strategy"].endswith("(shared)") and rec["calls"] <= 400
        assert rec["variance"] == alloc.designs["variance"].min()
        assert "Recommended" in alloc.as_text()

    def test_optimise_still_refuses_an_unknown_target(self):
        with pytest.raises(CjstatsError, match="'target'"):
            cj.optimise({"scenario": 1, "generation": 0, "residual": 1, "judge_panel": 1}, budget=10, n_max=5,
                        k_total=2, target="median")


@pytest.fixture(scope="module")
def table():
    from cjstats.studies.simulate_joint import simulate_joint

    return simulate_joint(n=40, m=2, mu=[0, 0.1], gamma=GAMMA, judge_model=GP, rng=7, s2_scenario=0.3, **V)


class TestDifferenceIntervals:
    """optimise(target="difference") carries the components' uncertainty: the predicted variance at their
    interval bounds, the judge terms' bounds from the noncentral chi-square of the pair's judge offsets."""

    @pytest.mark.parametrize("method", ["anova", "reml"])
    def test_the_bounds_bracket_every_design_and_are_the_formula_at_the_bounds(self, table, method):
        from cjstats.decisions.differences import difference_component_bounds

        fit = cj.fit_joint(table, method)
        alloc = cj.optimise(fit, budget=480, target="difference", models=("m0", "m1"))
        assert alloc.uncertainty == "interval bounds"
        d = alloc.designs
        assert (d["variance_lower"] <= d["variance"] + 1e-15).all() and (d["variance"] <= d["variance_upper"]).all()
        lower, upper = difference_component_bounds(fit, "m0", "m1")
        for _, row in d.sample(8, random_state=0).iterrows():
            kw = dict(budget=int(row["calls_per_scenario"]), n=int(row["n"]), k_total=4, schedule=row["schedule"])
            assert row["variance_lower"] == pytest.approx(difference_variance(row["strategy"], **kw, **lower), rel=1e-12)
            assert row["variance_upper"] == pytest.approx(difference_variance(row["strategy"], **kw, **upper), rel=1e-12)

    def test_the_judge_term_intervals_cover_the_planted_values(self):
        """300 tables (P = 2, K = 4, n = 30, m = 2) with a planted judge x model interaction: each judge term's
        interval covers its true value in 95% +- 3 MC SE (0.038) of the replicates."""
        from cjstats.decisions.differences import difference_component_bounds
        from cjstats.studies.simulate_joint import simulate_joint

        reps, hits = 300, np.zeros(2)
        for r in range(reps):
            f = simulate_joint(n=30, m=2, mu=[0, 0.1], gamma=GAMMA, judge_model=GP, rng=1000 + r, s2_scenario=0.3,
                               **V)
            lower, upper = difference_component_bounds(cj.fit_joint(f, "anova"), "m0", "m1")
            hits += [lower["s2_judge_difference"] <= S2_DIFF <= upper["s2_judge_difference"],
                     lower["s2_judge_panel"] <= S2_PANEL <= upper["s2_judge_panel"]]
        cover = hits / reps          # measured: 0.93 and 0.94
        assert np.all(np.abs(cover - 0.95) <= 3 * np.sqrt(0.95 * 0.05 / reps)), cover

    def test_a_mapping_of_point_values_has_no_bounds(self):
        comps = dict(s2_judge_panel=S2_PANEL, s2_judge_difference=S2_DIFF, **V)
        alloc = cj.optimise(comps, budget=200, target="difference", k_total=4, n_max=20)
        assert alloc.uncertainty == "none" and alloc.designs["variance_upper"].isna().all()
