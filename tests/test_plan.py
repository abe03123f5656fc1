"""Schedules: balance, determinism, the single-judge trap, weighted round robin, and the realised variance.

Monte Carlo checks of realised_variance compare a variance from R = 40,000 replicates with the formula within
4 standard errors, SE = sqrt((m4 - m2^2)/R) from the sample's fourth moment (about 0.7% of the variance).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cjstats.exceptions import CjstatsError
from cjstats.decisions.schedules import (
    all_judges_schedule, apportion, cyclic_schedule, random_schedule, realised_variance, schedule_audit,
)
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets
from cjstats.decisions.subsample import variance_with_se
from cjstats.decisions.formulas import grand_mean_variance, leftover_judge_variance, strategy_variance

QWEN = TABLE3_MTBENCH["Qwen"]
COMPS = {c: QWEN[c] for c in ("scenario", "generation", "residual", "judge_panel")}
JUDGES = ["a", "b", "c", "d", "e"]
R = 40_000


def simulate(schedule: pd.DataFrame, *, weights: np.ndarray, offsets: np.ndarray, reps: int, rng,
             relabel: bool = True, resid_sd: np.ndarray | None = None) -> np.ndarray:
    """Replicates of sum_c w_c X_c on a concrete schedule under Eq. 1 (scenarios resampled)."""
    s = pd.factorize(schedule["scenario"])[0]
    c = pd.MultiIndex.from_arrays([schedule["scenario"], schedule["generation"]]).factorize()[0]
    j = pd.Index(JUDGES).get_indexer(schedule["judge"].astype(str))
    sd = np.full(len(JUDGES), math.sqrt(QWEN["residual"])) if resid_sd is None else resid_sd
    y = rng.standard_normal((reps, len(schedule))) * sd[j]
    y += (rng.standard_normal((reps, c.max() + 1)) * math.sqrt(QWEN["generation"]))[:, c]
    y += (rng.standard_normal((reps, s.max() + 1)) * math.sqrt(QWEN["scenario"]))[:, s]
    g = offsets[np.argsort(rng.random((reps, offsets.size)), axis=1)] if relabel else offsets[None, :]
    y += g[:, j] if relabel else g[0, j]
    return y @ weights


class TestCyclicBalance:
    @pytest.mark.parametrize("n, m", [(7, 3), (10, 1), (1, 13), (12, 5)])
    def test_every_judge_gets_an_equal_share_plus_minus_one(self, n, m):
        plan = cyclic_schedule(n, JUDGES, generations=m, seed=0)
        audit = schedule_audit(plan, judges=JUDGES)
        assert len(plan) == n * m and audit.imbalance <= 1 and audit.balanced
        assert audit.repeated_judge_generations == 0
        assert (plan.groupby(["scenario", "generation"]).size() == 1).all()

    def test_exactly_equal_within_a_scenario_when_its_budget_is_a_multiple(self):
        plan = cyclic_schedule(9, JUDGES, generations=10, seed=1)
        audit = schedule_audit(plan)
        assert audit.within_scenario_imbalance == 0 and audit.imbalance == 0
        assert (audit.per_scenario.to_numpy() == 2).all()

    def test_no_single_judge_trap_with_one_generation(self):
        plan = cyclic_schedule(20, JUDGES, generations=1, seed=2)
        audit = schedule_audit(plan, judges=JUDGES)
        assert audit.judges_used == 5 and not audit.single_judge
        assert audit.per_judge["calls"].tolist() == [4] * 5

    def test_the_trap_is_detected(self):
        """Restarting the rotation at judge 0 in every scenario with m = 1: every call goes to one judge."""
        n = 20
        trap = pd.DataFrame({"scenario": range(n), "generation": 0, "judge": [JUDGES[0 % 5] for _ in range(n)]})
        audit = schedule_audit(trap, judges=JUDGES)
        assert audit.single_judge and not audit.balanced and "WARNING: a single judge" in audit.as_text()
        # and its variance carries the whole judge term of Proposition 1 with K = 1
        rv = realised_variance(trap, COMPS, judges=JUDGES)
        assert rv.total == pytest.approx(grand_mean_variance(*COMPS.values(), n=n, m=1, k=1, k_total=5), rel=1e-12)

    def test_rotation_unit_scenario(self):
        plan = cyclic_schedule(10, JUDGES, generations=3, seed=3, unit="scenario")
        per = plan.groupby("scenario")["judge"].nunique()
        assert (per == 1).all()
        assert schedule_audit(plan).imbalance == 0      # 10 scenarios x 3 calls over 5 judges: 6 each

    def test_judges_per_generation(self):
        plan = cyclic_schedule(7, JUDGES, generations=2, judges_per_generation=3, seed=4)
        assert (plan.groupby(["scenario", "generation"])["judge"].nunique() == 3).all()
        assert schedule_audit(plan).imbalance <= 1
        full = cyclic_schedule(4, JUDGES, generations=2, judges_per_generation=5, seed=4)
        assert (full.groupby(["scenario", "generation"])["judge"].nunique() == 5).all()


class TestDeterminism:
    def test_same_seed_same_schedule(self):
        a = cyclic_schedule(30, JUDGES, generations=2, seed=42)
        b = cyclic_schedule(30, JUDGES, generations=2, seed=42)
        pd.testing.assert_frame_equal(a, b)
        c = cyclic_schedule(30, JUDGES, generations=2, seed=43)
        assert not a.equals(c)
        pd.testing.assert_frame_equal(random_schedule(8, JUDGES, seed=5), random_schedule(8, JUDGES, seed=5))

    def test_seed_shuffles_scenarios_and_judges(self):
        orders = {tuple(cyclic_schedule(6, JUDGES, seed=s)["scenario"]) for s in range(20)}
        firsts = {cyclic_schedule(6, JUDGES, seed=s)["judge"].iloc[0] for s in range(20)}
        assert len(orders) > 10 and firsts == set(JUDGES)

    def test_labels_are_kept(self):
        plan = cyclic_schedule(["q1", "q2", "q3"], JUDGES, generations=2, seed=0)
        assert set(plan["scenario"]) == {"q1", "q2", "q3"} and list(plan.columns) == ["scenario", "generation", "judge"]


class TestModels:
    def test_same_assignment_for_every_model(self):
        plan = cyclic_schedule(6, JUDGES, generations=2, seed=1, models=["gpt", "llama"])
        assert list(plan.columns) == ["model", "scenario", "generation", "judge"]
        a = plan[plan["model"] == "gpt"].drop(columns="model").reset_index(drop=True)
        b = plan[plan["model"] == "llama"].drop(columns="model").reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)
        assert schedule_audit(plan).same_assignment_across_models is True

    def test_audit_flags_different_assignments(self):
        a = cyclic_schedule(6, JUDGES, seed=1).assign(model="x")
        b = cyclic_schedule(6, JUDGES, seed=2).assign(model="y")
        audit = schedule_audit(pd.concat([a, b]))
        assert audit.same_assignment_across_models is False and "confounded" in audit.as_text()


class TestWeightedRoundRobin:
    def test_apportion_is_within_one_of_the_quota(self):
        shares = np.array([0.5, 0.3, 0.15, 0.05])
        for total in (1, 7, 20, 101):
            b = apportion(total, shares)
            assert b.sum() == total and (np.abs(b - total * shares) < 1).all()

    def test_counts_follow_shares_and_spread_evenly(self):
        shares = {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.07, "e": 0.03}
        plan = cyclic_schedule(50, JUDGES, generations=4, seed=3, shares=shares)
        counts = plan["judge"].value_counts().reindex(JUDGES)
        assert (np.abs(counts.to_numpy() - 200 * np.array(list(shares.values()))) < 1).all()
        # every prefix of the rotation holds each judge within +-1 of its quota
        seq = plan["judge"].to_numpy()
        for j in shares:
            running = np.cumsum(seq == j)
            quota = np.arange(1, len(seq) + 1) * counts[j] / len(seq)
            assert np.abs(running - quota).max() <= 1.0 + 1e-9

    def test_equal_shares_give_the_plain_rotation(self):
        a = cyclic_schedule(10, JUDGES, generations=2, seed=8)
        b = cyclic_schedule(10, JUDGES, generations=2, seed=8, shares=[1, 1, 1, 1, 1])
        pd.testing.assert_frame_equal(a, b)

    def test_apportion_ties_go_to_the_order_then_the_index(self):
        assert apportion(1, [1, 1, 1]).tolist() == [1, 0, 0]
        assert apportion(1, [1, 1, 1], order=[2, 0, 1]).tolist() == [0, 0, 1]
        assert apportion(5, [0.5, 0.5, 0.0]).tolist() == [3, 2, 0]
        assert apportion(0, [1, 2]).tolist() == [0, 0]

    @pytest.mark.parametrize("shares, match", [
        ([0, 0], "finite numbers >= 0 with a positive sum"),
        ([-1, 2], "finite numbers >= 0 with a positive sum"),
        ([1.0, float("nan")], "finite numbers >= 0 with a positive sum"),
        ([1.0, "x"], "must hold numbers. Got 'x' instead"),
    ])
    def test_apportion_refuses_bad_shares(self, shares, match):
        with pytest.raises(CjstatsError, match=match):
            apportion(5, shares)

    def test_apportion_refuses_an_order_that_is_not_a_permutation(self):
        with pytest.raises(CjstatsError, match="'order' argument of apportion must be a permutation"):
            apportion(5, [1, 1], order=[0, 0])

    @pytest.mark.parametrize("seed", [0, 1, 2, 3])
    def test_weighted_counts_do_not_depend_on_the_seed(self, seed):
        """Tied remainders (a and b have equal shares) go to the judge listed first, whatever the seed."""
        shares = [2.0, 2.0, 1.0, 1.0, 1.0]
        plan = cyclic_schedule(8, JUDGES, seed=seed, shares=shares)   # quotas 16/7, 16/7, 8/7 x 3: a and b tie
        assert plan["judge"].value_counts().reindex(JUDGES, fill_value=0).tolist() == \
            apportion(8, shares).tolist() == [3, 2, 1, 1, 1]

    def test_a_judge_without_a_call_is_an_error(self):
        with pytest.raises(CjstatsError, match="leaves judge 'e' without a call"):
            cyclic_schedule(20, JUDGES, seed=0, shares=[10, 10, 10, 10, 0.01])


class TestBaselines:
    def test_all_judges_with_a_non_multiple_budget(self):
        plan = all_judges_schedule(8, JUDGES, budget=7, seed=1)
        assert (plan.groupby("scenario").size() == 7).all()
        partial = plan[plan["generation"] == 1]
        assert (partial.groupby("scenario")["judge"].nunique() == 2).all()
        assert schedule_audit(plan).imbalance <= 1

    def test_random_schedule_draws_distinct_judges_per_generation(self):
        plan = random_schedule(200, JUDGES, generations=3, judges_per_generation=2, seed=1)
        assert (plan.groupby(["scenario", "generation"])["judge"].nunique() == 2).all()
        counts = plan["judge"].value_counts()
        expected = len(plan) / 5
        assert (np.abs(counts - expected) < 4 * math.sqrt(expected)).all()


class TestRealisedVariance:
    def test_balanced_schedules_reproduce_the_closed_forms(self):
        n = 6
        for budget in (5, 7, 12):
            cyc = realised_variance(cyclic_schedule(n, JUDGES, generations=budget, seed=0), COMPS)
            pred = strategy_variance("cyclic", s2_generation=QWEN["generation"], s2_residual=QWEN["residual"],
                                     s2_judge_panel=QWEN["judge_panel"], budget=budget, n=n, k_total=5,
                                     s2_scenario=QWEN["scenario"])
            assert cyc.total == pytest.approx(pred, rel=1e-12)
            assert cyc.judge == pytest.approx(leftover_judge_variance(QWEN["judge_panel"], calls=n * budget,
                                                                      k_total=5), abs=1e-15)
            alls = realised_variance(all_judges_schedule(n, JUDGES, budget=budget, seed=0), COMPS,
                                     scenario_term=False)
            assert alls.total == pytest.approx(strategy_variance(
                "all", s2_generation=QWEN["generation"], s2_residual=QWEN["residual"],
                s2_judge_panel=QWEN["judge_panel"], budget=budget, n=n, k_total=5), rel=1e-12)

    @pytest.mark.parametrize("estimator", ["mean", "poststratified"])
    def test_after_random_call_failures(self, estimator):
        plan = cyclic_schedule(8, JUDGES, generations=4, seed=5)
        failed = np.random.default_rng(6).random(len(plan)) < 0.3
        plan = plan.assign(ok=~failed)
        rv = realised_variance(plan, COMPS, completed="ok", estimator=estimator, judges=JUDGES)
        kept = plan[plan["ok"]].reset_index(drop=True)
        assert rv.calls == len(kept) and rv.calls_dropped == int(failed.sum())
        b = kept["judge"].value_counts().reindex(JUDGES).to_numpy()
        j = pd.Index(JUDGES).get_indexer(kept["judge"])
        w = np.full(len(kept), 1 / len(kept)) if estimator == "mean" else 1 / (5 * b[j])
        x = simulate(kept, weights=w, offsets=panel_offsets(5, QWEN["judge_panel"]), reps=R,
                     rng=np.random.default_rng(7))
        v, se = variance_with_se(x)
        assert abs(v - rv.total) <= 4 * se
        # ignoring the failures (the balanced formula) would be wrong here
        naive = realised_variance(plan.drop(columns="ok"), COMPS, estimator=estimator).total
        assert abs(v - naive) > 4 * se

    def test_fixed_offsets_give_a_mean_squared_error(self):
        """With the panel's actual offsets (no relabelling) the judge term is a squared bias."""
        plan = cyclic_schedule(3, JUDGES, generations=3, seed=2)      # 9 calls: 4 judges x2, 1 judge x1
        g = panel_offsets(5, QWEN["judge_panel"])
        offsets = dict(zip(JUDGES, g))
        rv = realised_variance(plan, COMPS, judge_view="fixed", judge_offsets=offsets)
        x = simulate(plan, weights=np.full(len(plan), 1 / len(plan)), offsets=g, reps=R,
                     rng=np.random.default_rng(3), relabel=False)
        mse = np.mean(x**2)
        se = math.sqrt(np.var(x**2) / R)
        assert abs(mse - rv.total) <= 4 * se
        assert rv.judge_bias == pytest.approx(np.mean(x), abs=4 * math.sqrt(np.var(x) / R))

    def test_judge_specific_residuals(self):
        plan = cyclic_schedule(6, JUDGES, generations=5, seed=9)
        sd = np.sqrt(np.array([0.5, 1.0, 1.5, 2.0, 3.0]))
        rv = realised_variance(plan, COMPS, residual_by_judge=dict(zip(JUDGES, sd**2)))
        x = simulate(plan, weights=np.full(len(plan), 1 / len(plan)), offsets=panel_offsets(5, QWEN["judge_panel"]),
                     reps=R, rng=np.random.default_rng(10), resid_sd=sd)
        v, se = variance_with_se(x)
        assert abs(v - rv.total) <= 4 * se

    def test_from_a_fit_uses_its_judges(self, small_balanced_scores):
        import cjstats as cj

        fit = cj.estimate(small_balanced_scores)
        judges = sorted(small_balanced_scores.judges)
        plan = cyclic_schedule(12, judges, generations=3, seed=0)
        rv = realised_variance(plan, fit, model="Qwen")
        est = fit.estimates("Qwen")
        s2sj = est.get("scenario_judge", 0.0)              # fitted: m = 3 generations scored by the same judges
        assert rv.total == pytest.approx(strategy_variance(
            "cyclic", s2_generation=est["generation"], s2_residual=est["residual"], s2_judge_panel=est["judge_panel"],
            budget=3, n=12, k_total=4, s2_scenario=est["scenario"],
            s2_scenario_judge=0.0 if s2sj != s2sj else s2sj), rel=1e-12)

    def test_completed_as_zero_one(self):
        plan = cyclic_schedule(8, JUDGES, generations=2, seed=5)
        mask = np.random.default_rng(1).random(len(plan)) < 0.7
        a = realised_variance(plan.assign(ok=mask.astype(int)), COMPS, completed="ok")
        b = realised_variance(plan.assign(ok=mask), COMPS, completed="ok")
        assert a.as_dict() == pytest.approx(b.as_dict(), nan_ok=True) and a.calls == int(mask.sum())

    @pytest.mark.parametrize("values, bad", [(["ok", "failed"], "'ok'"), ([1, 2], "2"), ([True, None], "None"),
                                             ([1.0, float("nan")], "nan")])
    def test_completed_must_be_booleans_or_zero_one(self, values, bad):
        plan = cyclic_schedule(4, JUDGES, seed=0)
        status = (values * len(plan))[:len(plan)]
        with pytest.raises(CjstatsError, match=r"'completed' argument of realised_variance must hold booleans "
                                               r"\(True for a call that returned a score\) or 0/1. Got " + bad):
            realised_variance(plan.assign(status=status), COMPS, completed="status")
        with pytest.raises(CjstatsError, match="must hold booleans"):
            realised_variance(plan, COMPS, completed=np.array(status, dtype=object))

    @pytest.mark.parametrize("value", ["x", "1.5", None, True, float("inf"), -0.1])
    def test_a_component_that_is_not_a_variance_is_one_sentence(self, value):
        plan = cyclic_schedule(4, JUDGES, seed=0)
        with pytest.raises(CjstatsError, match=r"The 'residual' component passed to realised_variance must be a "
                                               r"finite variance >= 0. Got "):
            realised_variance(plan, {**COMPS, "residual": value})

    def test_bad_residual_by_judge_value(self):
        plan = cyclic_schedule(4, JUDGES, seed=0)
        with pytest.raises(CjstatsError, match=r"The 'residual_by_judge\['\w'\]' argument of realised_variance "
                                               r"must be a finite number"):
            realised_variance(plan, COMPS, residual_by_judge=dict.fromkeys(JUDGES, "big"))

    def test_errors(self):
        plan = cyclic_schedule(4, JUDGES, seed=0)
        with pytest.raises(CjstatsError, match="Every call of the schedule failed"):
            realised_variance(plan, COMPS, completed=np.zeros(len(plan), bool))
        with pytest.raises(CjstatsError, match="has no 'judge_panel'"):
            realised_variance(plan, {"scenario": 1.0, "generation": 1.0, "residual": 1.0})
        with pytest.raises(CjstatsError, match="not in the panel"):
            realised_variance(plan, COMPS, judges=["a", "b"])
        with pytest.raises(CjstatsError, match="needs the judge offsets"):
            realised_variance(plan, COMPS, judge_view="fixed")
        with pytest.raises(CjstatsError, match="has no column 'judge'"):
            realised_variance(plan.drop(columns="judge"), COMPS)


class TestInputErrors:
    @pytest.mark.parametrize("kwargs, match", [
        (dict(judges=["a", "a"]), "lists judge 'a' more than once"),
        (dict(judges_per_generation=6), "at most the panel size 5"),
        (dict(scenarios=0), "'scenarios' argument of cyclic_schedule must be an integer >= 1"),
        (dict(scenarios=["x", "x"]), "lists scenario 'x' more than once"),
        (dict(unit="call"), "'unit' argument of cyclic_schedule must be one of"),
        (dict(shares={"a": 1.0}), "gives no share for judge 'b'"),
    ])
    def test_one_sentence_errors(self, kwargs, match):
        args = {"scenarios": 5, "judges": JUDGES, **kwargs}
        with pytest.raises(CjstatsError, match=match):
            cyclic_schedule(args.pop("scenarios"), args.pop("judges"), **args)

    @pytest.mark.parametrize("seed", [-1, "x", 1.5, True])
    @pytest.mark.parametrize("make", [cyclic_schedule, random_schedule,
                                      lambda *a, **k: all_judges_schedule(*a, budget=7, **k)])
    def test_bad_seed_is_one_sentence(self, make, seed):
        with pytest.raises(CjstatsError, match=r"'seed' argument of \w+ must be None, an integer >= 0 or a numpy "
                                               r"Generator. Got "):
            make(5, JUDGES, seed=seed)

    def test_a_generator_is_a_seed(self):
        a = cyclic_schedule(6, JUDGES, seed=np.random.default_rng(3))
        pd.testing.assert_frame_equal(a, cyclic_schedule(6, JUDGES, seed=np.random.default_rng(3)))

    @pytest.mark.parametrize("column", ["judge", "scenario", "generation"])
    def test_a_missing_value_in_a_schedule_is_one_sentence(self, column):
        plan = cyclic_schedule(6, JUDGES, seed=0)
        plan[column] = plan[column].astype(object)
        plan.loc[2, column] = np.nan
        for check in (lambda p: schedule_audit(p), lambda p: realised_variance(p, COMPS)):
            with pytest.raises(CjstatsError, match=rf"has no {column} in row 2 \(a missing value\); every call "
                                                   r"needs a scenario, a generation and a judge"):
                check(plan)
