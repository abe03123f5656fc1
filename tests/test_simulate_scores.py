"""The data-generating layer of simulation studies: cj.simulate_scores, cj.Truth, cj.Design.

Tolerances are Monte Carlo bands: a share p estimated from N independent draws is checked within 4 binomial
standard errors sqrt(p (1 - p) / N); a variance s2 estimated from N normal draws within 5 SE, s2 sqrt(2 / N)
(or the kurtosis-adjusted SE where the draws are t). Seeds are fixed, so each test is deterministic.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import cjstats as cj
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets


def _noise_only(residual: float = 1.0, **extra: float) -> cj.Truth:
    """A truth whose scores are pure residual noise around 0 (every other component 0)."""
    comp = {"mu": 0.0, "scenario": 0.0, "generation": 0.0, "residual": residual, "judge_panel": 0.0, **extra}
    return cj.Truth({"x": comp})


def _frame(scores: cj.Scores) -> pd.DataFrame:
    return scores.to_frame()


def _dense(scores: cj.Scores, n: int, m: int, k: int) -> np.ndarray:
    f = _frame(scores)
    y = np.full((n, m, k), np.nan)
    y[f["scenario"].to_numpy(int), f["generation"].to_numpy(int),
      f["judge"].str.slice(6).astype(int).to_numpy()] = f["score"].to_numpy()
    return y


class TestBasics:
    def test_returns_scores_with_every_call_of_every_group(self):
        s = cj.simulate_scores(cj.Truth.table3(), n=12, m=3, k=4, seed=1)
        assert isinstance(s, cj.Scores)
        assert len(s) == 5 * 12 * 3 * 4
        assert set(s.models) == set(TABLE3_MTBENCH)
        assert s.judges == [f"judge_{i}" for i in range(4)]
        assert s.design["balanced"].all()

    def test_same_seed_same_table_other_seed_other_table(self):
        t = cj.Truth.table3(["GPT"])
        a = _frame(cj.simulate_scores(t, n=10, m=2, k=3, seed=7))
        b = _frame(cj.simulate_scores(t, n=10, m=2, k=3, seed=7))
        c = _frame(cj.simulate_scores(t, n=10, m=2, k=3, seed=8))
        pd.testing.assert_frame_equal(a, b)
        assert not np.allclose(a["score"], c["score"])

    def test_criteria_give_one_group_per_model_and_criterion(self):
        t = cj.Truth.table3(["GPT", "Qwen"], criteria=["helpful", "safe"])
        s = cj.simulate_scores(t, n=5, m=1, k=3, seed=1)
        assert s.has_criterion and len(s.design) == 4

    def test_truth_travels_in_provenance(self):
        s = cj.simulate_scores(cj.Truth.table3(["GPT"]), n=10, m=2, k=4, seed=1)
        tr = s.provenance["truth"].set_index("component")["truth"]
        assert tr["residual"] == TABLE3_MTBENCH["GPT"]["residual"]
        assert tr["judge_panel"] == pytest.approx(TABLE3_MTBENCH["GPT"]["judge_panel"])
        assert tr["judge_population"] == pytest.approx(TABLE3_MTBENCH["GPT"]["judge_panel"] * 4 / 3)

    def test_one_generation_scenario_truth_holds_generation_and_generation_has_none(self):
        s = cj.simulate_scores(cj.Truth.table3(["Qwen"]), n=10, m=1, k=4, seed=1)
        tr = s.provenance["truth"].set_index("component")["truth"]
        c = TABLE3_MTBENCH["Qwen"]
        assert tr["scenario"] == pytest.approx(c["scenario"] + c["generation"])
        assert math.isnan(tr["generation"])

    def test_old_keyword_simulator_still_returns_a_frame(self):
        from cjstats.studies.simulate import simulate_scores

        df = simulate_scores(n=4, m=2, k=3, s2_scenario=1, s2_generation=0.5, s2_residual=1,
                             judge_offsets=panel_offsets(3, 0.5), seed=1)
        assert isinstance(df, pd.DataFrame) and len(df) == 24


class TestJudges:
    def test_panel_offsets_are_the_same_in_every_replicate(self):
        t = _noise_only(residual=1e-6, judge_panel=0.8)
        means = [_frame(cj.simulate_scores(t, n=50, m=1, k=4, seed=s)).groupby("judge")["score"].mean()
                 for s in (1, 2)]
        np.testing.assert_allclose(means[0], panel_offsets(4, 0.8), atol=1e-3)
        np.testing.assert_allclose(means[0], means[1], atol=1e-3)

    def test_population_offsets_are_redrawn_and_the_truth_is_the_replicates_own(self):
        comp = {"mu": 0.0, "scenario": 0.0, "generation": 0.0, "residual": 1e-6, "judge_population": 1.0}
        t = cj.Truth({"x": comp}, judges="population")
        panels = []
        for seed in (1, 2):
            s = cj.simulate_scores(t, n=50, m=1, k=6, seed=seed)
            g = _frame(s).groupby("judge")["score"].mean().to_numpy()
            tr = s.provenance["truth"].set_index("component")["truth"]
            assert tr["judge_panel"] == pytest.approx(np.mean(g**2), rel=1e-3)
            assert tr["judge_population"] == 1.0
            panels.append(tr["judge_panel"])
        assert panels[0] != pytest.approx(panels[1])


class TestStrategies:
    def test_cyclic_gives_each_generation_k_judges_and_each_judge_an_equal_share(self):
        s = cj.simulate_scores(cj.Truth.table3(["GPT"]), n=20, m=2, k=5, k_per_item=2, strategy="cyclic", seed=1)
        f = _frame(s)
        assert (f.groupby(["scenario", "generation"]).size() == 2).all()
        assert (f["judge"].value_counts() == 20 * 2 * 2 / 5).all()

    def test_random_gives_each_generation_k_distinct_judges(self):
        f = _frame(cj.simulate_scores(cj.Truth.table3(["GPT"]), n=30, m=1, k=5, k_per_item=3,
                                      strategy="random", seed=1))
        assert (f.groupby(["scenario", "generation"])["judge"].nunique() == 3).all()

    def test_an_explicit_schedule_is_used_as_given(self):
        plan = cj.cyclic_schedule(12, 4, generations=2, seed=3)
        f = _frame(cj.simulate_scores(cj.Truth.table3(["GPT"]), schedule=plan, seed=1))
        got = set(zip(f["scenario"], f["generation"], f["judge"]))
        assert got == set(zip(plan["scenario"], plan["generation"], plan["judge"]))


class TestMisspecifications:
    @pytest.mark.parametrize("levels", [5, 10])
    def test_ordinal_yields_only_the_scales_integers(self, levels):
        t = cj.Truth({"x": {"mu": levels / 2, "scenario": 4.0, "generation": 1.0, "residual": 2.0, "judge_panel": 1}})
        y = _frame(cj.simulate_scores(t, n=200, m=2, k=4, misspec={"ordinal": levels}, seed=1))["score"]
        assert set(np.unique(y)) == set(range(1, levels + 1))

    def test_mcar_drops_the_stated_share_at_random(self):
        q, n, m, k = 0.2, 500, 2, 5
        t = cj.Truth.table3(["GPT"])
        full = _frame(cj.simulate_scores(t, n=n, m=m, k=k, seed=4))
        kept = _frame(cj.simulate_scores(t, n=n, m=m, k=k, misspec={"mcar": q}, seed=4))
        share = 1 - len(kept) / len(full)
        assert abs(share - q) < 4 * math.sqrt(q * (1 - q) / len(full))
        merged = kept.merge(full, on=["scenario", "generation", "judge"], suffixes=("", "_full"))
        assert len(merged) == len(kept) and np.allclose(merged["score"], merged["score_full"])

    def test_mnar_drops_the_stated_share_and_low_scores_more_often(self):
        q, n, m, k = 0.2, 500, 2, 5
        t = cj.Truth.table3(["GPT"])
        full = _frame(cj.simulate_scores(t, n=n, m=m, k=k, seed=5))
        kept = _frame(cj.simulate_scores(t, n=n, m=m, k=k, misspec={"mnar": q}, seed=5))
        share = 1 - len(kept) / len(full)
        # each call is lost with probability 2 q Phi(-z): the count is a sum of independent Bernoullis, whose
        # variance is at most the binomial one at q
        assert abs(share - q) < 4 * math.sqrt(q * (1 - q) / len(full))
        lost = full.merge(kept, on=["scenario", "generation", "judge"], how="left", indicator=True)
        lost = lost[lost["_merge"] == "left_only"]
        assert lost["score_x"].mean() < kept["score"].mean() - 0.5

    def test_t_residuals_keep_the_variance_and_fatten_the_tails(self):
        nu, n = 5.0, 10_000
        y = _frame(cj.simulate_scores(_noise_only(), n=n, m=1, k=5, misspec={"t_df": nu}, seed=2))["score"].to_numpy()
        big_n = y.size
        # Var(s^2) = s^4 (kurtosis - 1) with kurtosis 3 + 6/(nu - 4) = 9 for nu = 5
        assert abs(y.var() - 1.0) < 5 * math.sqrt(8 / big_n)
        p_t = 2 * stats.t.sf(3 / math.sqrt((nu - 2) / nu), nu)
        tail = np.mean(np.abs(y) > 3)
        assert abs(tail - p_t) < 4 * math.sqrt(p_t * (1 - p_t) / big_n)
        assert tail > 3 * 2 * stats.norm.sf(3)

    def test_judge_residual_ratio_spreads_the_judge_variances_around_the_residual(self):
        r, k, n = 4.0, 4, 5000
        y = _frame(cj.simulate_scores(_noise_only(), n=n, m=1, k=k, misspec={"judge_residual_ratio": r}, seed=3))
        v = y.groupby("judge")["score"].var().to_numpy()
        w = np.exp(np.linspace(-0.5, 0.5, k) * math.log(r))
        expected = w / w.mean()
        np.testing.assert_allclose(v, expected, atol=float(5 * expected.max() * math.sqrt(2 / n)))
        assert expected.max() / expected.min() == pytest.approx(r)

    def test_scenario_judge_interaction_is_shared_by_a_scenarios_generations(self):
        s2, n, k = 0.7, 2000, 5
        s = cj.simulate_scores(_noise_only(), n=n, m=2, k=k, misspec={"scenario_judge": s2}, seed=6)
        y = _dense(s, n, 2, k)
        cov = float(np.mean(y[:, 0, :] * y[:, 1, :]))
        # product of two N(0, s2 + 1) with covariance s2: variance (s2 + 1)^2 + s2^2
        assert abs(cov - s2) < 5 * math.sqrt(((s2 + 1) ** 2 + s2**2) / (n * k))

    def test_judge_model_interaction_gives_each_model_its_own_offsets(self):
        comp = {"mu": 0.0, "scenario": 0.0, "generation": 0.0, "residual": 1e-6, "judge_panel": 0.5}
        t = cj.Truth({"a": comp, "b": comp})
        s = cj.simulate_scores(t, n=40, m=1, k=6, misspec={"judge_model": 1.0}, seed=7)
        f = _frame(s)
        g = f.groupby(["model", "judge"])["score"].mean().unstack()
        assert np.abs(g.loc["a"] - g.loc["b"]).max() > 0.3
        tr = s.provenance["truth"].query("component == 'judge_panel'").set_index("model")["truth"]
        for model in ("a", "b"):
            assert tr[model] == pytest.approx(np.mean(g.loc[model].to_numpy() ** 2), rel=1e-3)

    def test_unequal_generations_keep_between_the_minimum_and_m_per_scenario(self):
        s = cj.simulate_scores(cj.Truth.table3(["GPT"]), n=400, m=4, k=3, misspec={"unequal_generations": 1},
                               seed=8)
        m_i = _frame(s).groupby("scenario")["generation"].nunique()
        assert set(m_i.unique()) == {1, 2, 3, 4}
        # m_i uniform on 1..4: mean 2.5, sd sqrt(15/12)
        assert abs(m_i.mean() - 2.5) < 4 * math.sqrt(15 / 12 / 400)
        assert not s.design["balanced"].any()


class TestTruth:
    def test_from_components_simulates_more_data_like_a_fit(self):
        fit = cj.estimate(cj.simulate_scores(cj.Truth.table3(["GPT", "Qwen"]), n=30, m=2, k=4, seed=1))
        t = cj.Truth.from_components(fit)
        est = fit.estimates(model="Qwen")
        assert t.groups["Qwen"]["scenario"] == pytest.approx(est["scenario"])
        assert t.groups["Qwen"]["judge_panel"] == pytest.approx(est["judge_panel"])

    def test_from_components_warns_and_uses_zero_for_an_unidentified_generation(self):
        fit = cj.estimate(cj.simulate_scores(cj.Truth.table3(["GPT"]), n=30, m=1, k=4, seed=1))
        with pytest.warns(CjstatsWarning, match="generation"):
            t = cj.Truth.from_components(fit)
        assert t.groups["GPT"]["generation"] == 0.0

    def test_population_view_from_table3_scales_the_panel_variance(self):
        t = cj.Truth.table3(["GPT"], judges="population")
        assert t.groups["GPT"]["judge_population"] == pytest.approx(TABLE3_MTBENCH["GPT"]["judge_panel"] * 5 / 4)


class TestBadInput:
    def test_a_truth_missing_a_component_is_named(self):
        with pytest.raises(CjstatsError, match="no component 'residual'"):
            cj.Truth({"x": {"mu": 0, "scenario": 1, "generation": 0, "judge_panel": 1}})

    def test_a_negative_variance_is_named(self):
        with pytest.raises(CjstatsError, match="negative variance 'scenario'"):
            cj.Truth({"x": {"mu": 0, "scenario": -1, "generation": 0, "residual": 1, "judge_panel": 1}})

    def test_fewer_than_two_judges_is_refused(self):
        with pytest.raises(CjstatsError, match="'k' argument of Design must be an integer >= 2"):
            cj.simulate_scores(cj.Truth.table3(["GPT"]), n=10, m=1, k=1)

    def test_an_unknown_misspecification_is_named(self):
        with pytest.raises(CjstatsError, match="names 'heavy_tails', which is not a misspecification"):
            cj.simulate_scores(cj.Truth.table3(["GPT"]), n=10, m=1, k=3, misspec={"heavy_tails": 3})

    @pytest.mark.parametrize("name,value", [("t_df", 2), ("ordinal", 7), ("mcar", 1.0), ("mnar", 0.6),
                                            ("unequal_generations", 3)])
    def test_a_misspecification_parameter_out_of_range_is_named(self, name, value):
        with pytest.raises(CjstatsError, match=f"misspecification '{name}'"):
            cj.simulate_scores(cj.Truth.table3(["GPT"]), n=10, m=3, k=3, misspec={name: value})

    def test_strategy_all_with_fewer_judges_per_item_is_refused(self):
        with pytest.raises(CjstatsError, match="k_per_item must equal k=5"):
            cj.Design(n=10, m=1, k=5, k_per_item=2)

    def test_no_warning_on_a_plain_draw(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cj.simulate_scores(cj.Truth.table3(), n=5, m=1, k=3, seed=1)
