"""Joint ANOVA fit, compare_models and self_preference on complete balanced tables."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import cjstats as cj
from cjstats.estimators.joint.anova import JointMeanSquares
from cjstats.estimators.joint.self_preference import self_preference_contrast
from cjstats.studies.simulate_joint import simulate_joint, simulate_joint_array
from cjstats.exceptions import CjstatsError

BASE = dict(s2_scenario=0.5, s2_model_scenario=0.2, s2_generation=0.1, s2_residual=0.4)


def _frame(p=3, n=20, m=2, k=4, seed=0, mu=None, judge_model=None, **kw):
    mu = np.linspace(0, 0.3, p) if mu is None else mu
    gamma = np.linspace(-0.3, 0.3, k)
    return simulate_joint(n=n, m=m, mu=mu, gamma=gamma, judge_model=judge_model, rng=seed, **{**BASE, **kw})


class TestPairedTIdentity:
    def test_two_models_reproduce_paired_t_on_scenario_means(self):
        f = _frame(p=2, n=25, m=3, k=4, seed=11)
        res = cj.compare_models(f, method="anova")
        row = res.differences.iloc[0]
        sm = f.groupby(["model", "scenario"])["score"].mean().unstack()
        d = (sm.loc[row.model_a] - sm.loc[row.model_b]).to_numpy()
        t = stats.ttest_rel(sm.loc[row.model_a], sm.loc[row.model_b])
        assert abs(row.difference - d.mean()) < 1e-10
        assert abs(row.std_error - d.std(ddof=1) / np.sqrt(len(d))) < 1e-10
        assert row.df == len(d) - 1
        assert abs(row.p_value - t.pvalue) < 1e-10

    def test_population_view_widens_the_standard_error(self):
        gp = np.array([[0.3, -0.3, 0.2, -0.2], [-0.3, 0.3, -0.2, 0.2]])
        f = _frame(p=2, n=25, seed=3, judge_model=gp)
        panel = cj.compare_models(f, view="panel").differences.iloc[0]
        pop = cj.compare_models(f, view="population").differences.iloc[0]
        assert pop.std_error > panel.std_error
        assert pop.difference == panel.difference


class TestJointAgreesWithPerModel:
    """Exact identities between the joint ANOVA and the per-model ANOVA of the paper's model (scenario_judge=False: the
    joint model has no scenario x judge term; module docstring of anova.py)."""

    @pytest.fixture
    def fits(self):
        f = _frame(p=3, n=15, m=2, k=4, seed=5, judge_model=np.outer([1, 0, -1], [0.2, -0.2, 0.1, -0.1]))
        return cj.fit_joint(f, method="anova").components, cj.estimate(f, method="anova", scenario_judge=False).components

    @staticmethod
    def _joint(t, comp, view="panel"):
        r = t[(t["component"] == comp) & (t["view"] == view)]
        return float(r["raw_estimate"].iloc[0])

    def test_mu_rows_equal_per_model_rows(self, fits):
        joint, per = fits
        for col in ("estimate", "lower", "upper", "std_error"):
            a = joint[joint.component == "mu"].set_index("model")[col].sort_index()
            b = per[per.component == "mu"].set_index("model")[col].sort_index()
            np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-12)

    def test_residual_is_pooled_per_model_residual(self, fits):
        joint, per = fits
        assert abs(self._joint(joint, "residual") - per[per.component == "residual"]["estimate"].mean()) < 1e-12

    def test_judge_panel_plus_judge_model_is_mean_per_model_judge_panel(self, fits):
        joint, per = fits
        lhs = per[per.component == "judge_panel"]["raw_estimate"].mean()
        assert abs(lhs - self._joint(joint, "judge_panel") - self._joint(joint, "judge_model")) < 1e-12

    def test_scenario_plus_model_scenario_is_mean_per_model_scenario(self, fits):
        joint, per = fits
        lhs = per[per.component == "scenario"]["raw_estimate"].mean()
        assert abs(lhs - self._joint(joint, "scenario") - self._joint(joint, "model_scenario")) < 1e-12

    def test_components_table_has_the_per_model_columns(self, fits):
        joint, per = fits
        assert list(joint.columns) == list(per.columns)
        assert {"model_scenario", "judge_model"} <= set(joint["component"])


class TestRanks:
    def test_well_separated_models_get_single_ranks(self):
        f = _frame(p=4, n=40, mu=[0, 3, 6, 9], seed=2)
        r = cj.compare_models(f).ranks
        assert (r["rank_lower"] == r["rank"]).all() and (r["rank_upper"] == r["rank"]).all()
        assert list(r["model"]) == ["m3", "m2", "m1", "m0"]
        assert r["p_best"].iloc[0] == 1.0

    def test_identical_models_have_overlapping_rank_intervals(self):
        f = _frame(p=3, n=30, mu=[0, 0, 5], seed=4)
        r = cj.compare_models(f).ranks.set_index("model")
        assert r.loc["m2", "rank_lower"] == r.loc["m2", "rank_upper"] == 1
        for m in ("m0", "m1"):
            assert (r.loc[m, "rank_lower"], r.loc[m, "rank_upper"]) == (2, 3)

    def test_p_best_sums_to_one(self):
        r = cj.compare_models(_frame(p=5, mu=[0, 0.05, 0.1, 0.1, 0.2], seed=7)).ranks
        assert abs(r["p_best"].sum() - 1.0) < 1e-12

    def test_differences_have_the_issue_columns(self):
        res = cj.compare_models(_frame(p=3))
        assert list(res.differences.columns) == ["model_a", "model_b", "difference", "std_error", "df", "lower",
                                                 "upper", "p_value", "p_adjusted", "ci_level", "method", "view"]
        assert list(res.ranks.columns) == ["model", "mean", "rank", "rank_lower", "rank_upper", "p_best"]
        assert len(res.differences) == 3
        assert (res.differences["p_adjusted"] >= res.differences["p_value"]).all()
        text = str(res)
        assert "Significance matrix" in text and "letters" in text
        assert res.as_markdown().startswith("**Model comparison")


class TestSelfPreference:
    K, P, N, M = 4, 4, 30, 2

    def _planted(self, size, seed):
        gp = np.zeros((self.P, self.K))
        # judge j1 favours model m2 by `size`; centre so that rows and columns sum to zero
        gp[2, 1] = size
        gp = gp - gp.mean(axis=0) - gp.mean(axis=1, keepdims=True) + gp.mean()
        return gp

    def test_contrast_is_an_interaction_contrast(self):
        c = self_preference_contrast(4, 5, 1, 2, [0, 1, 3])
        assert np.allclose(c.sum(axis=0), 0) and np.allclose(c.sum(axis=1), 0)

    def test_planted_self_preference_is_covered_and_detected(self):
        gp = self._planted(0.5, 0)
        c = self_preference_contrast(self.P, self.K, 1, 2, [0, 1, 3])
        truth = float((c * gp).sum())
        f = _frame(p=self.P, n=self.N, m=self.M, k=self.K, seed=21, judge_model=gp)
        sp = cj.self_preference(f, {"j1": "m2"})
        row = sp.contrasts.iloc[0]
        assert row.lower <= truth <= row.upper
        assert row.p_value < 1e-6
        assert sp.test["p_value"] < 0.01 and sp.test["test"] == "F"

    def test_level_and_coverage_over_repeated_simulations(self):
        # 400 replicates: the Monte Carlo SE of a 5% rate is sqrt(.05 .95/400) = 0.011, of a 95% coverage the
        # same; we accept within 3 MC SEs. Computed from the mean-square core for speed (same formulas).
        rng = np.random.default_rng(123)
        R, level = 400, 0.95
        c = self_preference_contrast(self.P, self.K, 1, 2, [0, 1, 3])
        gp = self._planted(0.3, 0)
        truth = float((c * gp).sum())
        rej_null = cover = rej_f = 0
        for _ in range(R):
            for planted in (False, True):
                y = simulate_joint_array(n=self.N, m=self.M, mu=np.zeros(self.P), gamma=np.linspace(-.3, .3, self.K),
                                         judge_model=gp if planted else None, rng=rng, **BASE)
                t = JointMeanSquares.from_array(y)
                est = float((c * t.cell_means).sum())
                se = np.sqrt(t.ms["W"] / (self.N * self.M) * (c**2).sum())
                q = stats.t.ppf(0.975, t.df["W"])
                if planted:
                    cover += abs(est - truth) <= q * se
                else:
                    rej_null += abs(est) > q * se
                    rej_f += stats.f.sf(t.ms["JM"] / t.ms["W"], t.df["JM"], t.df["W"]) < 0.05
        tol = 3 * np.sqrt(0.05 * 0.95 / R)
        assert abs(rej_null / R - 0.05) < tol
        assert abs(rej_f / R - 0.05) < tol  # the F test of no judge x model interaction holds its level too
        assert abs(cover / R - level) < tol

    def test_library_matches_the_core_formula(self):
        f = _frame(p=self.P, n=self.N, m=self.M, k=self.K, seed=3)
        sp = cj.self_preference(f, {"j1": ["m2", "m3"]}).contrasts
        assert list(sp["model"]) == ["m2", "m3"]
        # the comparison group of m2 is the models outside the family: m0, m1
        fit = cj.fit_joint(f)
        c = self_preference_contrast(self.P, self.K, 1, 2, [0, 1])
        r = fit.contrast(c)
        est, se, df = r.estimate, r.std_error, r.df
        assert abs(sp["estimate"].iloc[0] - est) < 1e-12 and df == self.P * (self.N * self.M - 1) * (self.K - 1)
        assert abs(sp["std_error"].iloc[0] - se) < 1e-12


class TestBadInput:
    def test_one_model(self):
        f = _frame(p=1)
        with pytest.raises(CjstatsError, match="only one model"):
            cj.compare_models(f)

    def test_pair_sharing_no_scenario(self):
        f = _frame(p=2)
        f.loc[f.model == "m1", "scenario"] += 1000
        with pytest.raises(CjstatsError, match="share no scenario"):
            cj.compare_models(f, method="anova")

    def test_anova_on_unshared_scenarios_suggests_reml(self):
        f = _frame(p=3)
        f = f[~((f.model == "m1") & (f.scenario == 0))]
        with pytest.raises(CjstatsError, match="method='reml'"):
            cj.compare_models(f, method="anova")

    def test_family_judge_not_in_data(self):
        with pytest.raises(CjstatsError, match="judge 'gpt'"):
            cj.self_preference(_frame(), {"gpt": "m0"})

    def test_family_model_not_in_data(self):
        with pytest.raises(CjstatsError, match="model 'gpt-4o'"):
            cj.self_preference(_frame(), {"j0": "gpt-4o"})

    def test_judge_never_scored_own_model(self):
        f = _frame()
        f = f[~((f.judge == "j0") & (f.model == "m0"))]
        with pytest.raises(CjstatsError, match="never scored"):
            cj.self_preference(f, {"j0": "m0"}, method="reml")

    def test_criterion_column_is_refused(self):
        f = _frame().assign(criterion="a")
        with pytest.raises(CjstatsError, match="composite"):
            cj.compare_models(f)

    def test_incomplete_drop_drops_scenarios(self):
        f = _frame(p=3, n=20)
        f = f[~((f.model == "m1") & (f.scenario == 0) & (f.judge == "j0"))]
        with pytest.warns(cj.CjstatsWarning, match="1 of 20 scenarios"):
            fit = cj.fit_joint(f, incomplete="drop")
        assert fit.diagnostics["dropped_scenarios"] == 1 and fit.diagnostics["n"] == 19


class TestJointDropIsNeverSilent:
    """The joint ANOVA's incomplete="drop" removes whole scenarios of every model; it says so, per model."""

    @staticmethod
    def _holey(n_bad: int, n: int = 20):
        f = _frame(p=3, n=n, m=2, k=4, seed=3)
        # model m1 misses judge j0 on its first generation in the first n_bad scenarios
        return f[~((f.model == "m1") & (f.scenario < n_bad) & (f.judge == "j0") & (f.generation == 0))]

    def test_every_model_loses_the_scenarios_and_the_table_and_warning_say_how_much(self):
        f = self._holey(3)
        with pytest.warns(cj.CjstatsWarning, match=r"^incomplete='drop' removed the scenarios not complete for "
                                                  r"every model and judge from 3 of 3 models: model 'm0': 24 of 160 "
                                                  r"rows and 3 of 20 scenarios;"):
            res = cj.compare_models(f, incomplete="drop")
        d = res.dropped.set_index("model")
        assert list(d.index) == ["m0", "m1", "m2"] and "criterion" not in d.columns
        assert d.loc["m1", ["dropped_rows", "n_rows", "dropped_cells", "n_cells", "dropped_scenarios",
                            "n_scenarios"]].tolist() == [21, 157, 6, 40, 3, 20]
        assert d.loc["m0", "dropped_rows"] == 24 and res.fit.diagnostics["n"] == 17

    def test_self_preference_reports_the_same_drop(self):
        f = self._holey(3)
        with pytest.warns(cj.CjstatsWarning, match="3 of 20 scenarios"):
            sp = cj.self_preference(f, {"j0": "m0"}, incomplete="drop")
        assert sp.dropped["dropped_scenarios"].tolist() == [3, 3, 3]

    def test_more_than_half_is_refused_naming_the_model_counts_and_fix(self):
        f = self._holey(11)
        with pytest.raises(cj.CjstatsError, match=r"^incomplete='drop' would remove 11 of 20 scenarios \(55%\) and "
                                                 r"88 of 160 rows of model 'm0' \(and 2 more\), more than "
                                                 r"max_drop=0.5 allows; use method='reml'.*max_drop=0.55"):
            cj.compare_models(f, incomplete="drop")
        with pytest.warns(cj.CjstatsWarning, match="11 of 20 scenarios"):
            res = cj.compare_models(f, incomplete="drop", max_drop=0.55)
        assert res.fit.diagnostics["n"] == 9

    def test_a_complete_table_drops_nothing_and_says_nothing(self):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = cj.compare_models(_frame(p=3, n=10), incomplete="drop")
        assert (res.dropped["dropped_rows"] == 0).all()
        assert cj.compare_models(_frame(p=3, n=10)).dropped is None

    @pytest.mark.parametrize("method", ["reml"])
    def test_drop_options_belong_to_the_anova(self, method):
        with pytest.raises(cj.CjstatsError, match="The 'max_drop' argument of fit_joint applies to method='anova'"):
            cj.compare_models(_frame(p=2, n=10), method, max_drop=1.0)
