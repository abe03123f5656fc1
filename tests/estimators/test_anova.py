"""The method-of-moments backend: hand-computed mean squares, known truth, interval coverage.

Tolerances come from Monte Carlo error: with R replicates, a mean is checked within 4 standard errors
(sd / sqrt(R)), and a 95% interval's coverage must fall in [0.93, 0.97]; with R = 2000 the binomial SE of
the coverage is sqrt(0.95 * 0.05 / 2000) = 0.49 points, so the band is about +-4 SE.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import cjstats as cj
from cjstats.estimators.anova import (
    _group_rows, chi2_interval, mean_squares, mls_interval, noncentral_f_interval, satterthwaite_interval,
)
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_array

def estimate_paper(*args, **kwargs):
    """``cj.estimate`` of the paper's model (Eq. 1, no scenario x judge term): the lme4 fixtures and hand
    computations of this module are of that model; the model with the interaction is tested in
    test_scenario_judge.py and test_reml_scenario_judge_lme4.py."""
    kwargs.setdefault("scenario_judge", False)
    return cj.estimate(*args, **kwargs)


QWEN = TABLE3_MTBENCH["Qwen"]
N, M, K = 80, 10, 5  # the paper's MT-Bench design


# --------------------------------------------------------------------------------- hand-computed design
# 2 scenarios x 2 generations x 3 judges. Means computed by hand:
# cells C_ij: (1,2,3)->2, (2,4,3)->3, (5,6,7)->6, (4,8,6)->6 ; scenario S_1 = 2.5, S_2 = 6 ; G = 4.25
# judges J: (1+2+5+4)/4 = 3, (2+4+6+8)/4 = 5, (3+3+7+6)/4 = 4.75
Y = np.array([[[1.0, 2.0, 3.0], [2.0, 4.0, 3.0]], [[5.0, 6.0, 7.0], [4.0, 8.0, 6.0]]])


def _by_hand():
    n, m, k = Y.shape
    g = 4.25
    s = [2.5, 6.0]
    c = [[2.0, 3.0], [6.0, 6.0]]
    j = [3.0, 5.0, 4.75]
    ss_s = m * k * sum((si - g) ** 2 for si in s)                                  # 6 * 2 * 3.0625 = 36.75
    ss_g = k * sum((c[i][jj] - s[i]) ** 2 for i in range(n) for jj in range(m))    # 3 * (0.25+0.25+0+0) = 1.5
    ss_j = n * m * sum((x - g) ** 2 for x in j)                                    # 4 * (1.5625+0.5625+0.25) = 9.5
    ss_w = sum((Y[i, jj, l] - c[i][jj] - j[l] + g) ** 2 for i in range(n) for jj in range(m) for l in range(k))
    return ss_s, ss_g, ss_j, ss_w


class TestHandComputedDesign:
    def test_sums_of_squares_match_hand_computation(self):
        ss_s, ss_g, ss_j, ss_w = _by_hand()
        assert (ss_s, ss_g, ss_j) == (36.75, 1.5, 9.5)
        ms = mean_squares(Y)
        assert ms.ss_scenario == pytest.approx(ss_s, abs=1e-12)
        assert ms.ss_generation == pytest.approx(ss_g, abs=1e-12)
        assert ms.ss_judge == pytest.approx(ss_j, abs=1e-12)
        assert ms.ss_residual == pytest.approx(ss_w, abs=1e-12)
        # total sum of squares splits exactly
        assert ss_s + ss_g + ss_j + ss_w == pytest.approx(((Y - Y.mean()) ** 2).sum(), abs=1e-12)

    def test_mean_squares_and_degrees_of_freedom(self):
        ss_s, ss_g, ss_j, ss_w = _by_hand()
        ms = mean_squares(Y)
        assert (ms.df_scenario, ms.df_generation, ms.df_judge, ms.df_residual) == (1, 2, 2, 6)
        assert ms.ms_scenario == pytest.approx(ss_s / 1, abs=1e-12)
        assert ms.ms_generation == pytest.approx(ss_g / 2, abs=1e-12)
        assert ms.ms_judge == pytest.approx(ss_j / 2, abs=1e-12)
        assert ms.ms_residual == pytest.approx(ss_w / 6, abs=1e-12)

    def test_estimates_through_the_public_api(self):
        ss_s, ss_g, ss_j, ss_w = _by_hand()
        ms_s, ms_g, ms_j, ms_w = ss_s / 1, ss_g / 2, ss_j / 2, ss_w / 6
        i, j, l = np.meshgrid(range(2), range(2), range(3), indexing="ij")
        df = pd.DataFrame({"model": "m", "scenario": i.ravel(), "generation": j.ravel(),
                           "judge": [f"J{x}" for x in l.ravel()], "score": Y.ravel()})
        fit = estimate_paper(df, "anova")
        est = fit.estimates()
        raw = dict(zip(fit.components["component"], fit.components["raw_estimate"]))
        assert est["mu"] == pytest.approx(4.25, abs=1e-12)
        assert est["residual"] == pytest.approx(ms_w, abs=1e-12)
        assert raw["generation"] == pytest.approx((ms_g - ms_w) / 3, abs=1e-12)
        assert raw["scenario"] == pytest.approx((ms_s - ms_g) / (2 * 3), abs=1e-12)
        gammas = np.array([3.0, 5.0, 4.75]) - 4.25
        paper = (gammas**2).mean() - ms_w / 4 * (3 - 1) / 3            # App. C corrected sigma2_gamma
        assert raw["judge_panel"] == pytest.approx(paper, abs=1e-12)
        assert raw["judge_population"] == pytest.approx((ms_j - ms_w) / 4, abs=1e-12)
        assert fit.judge_offsets["estimate"].to_numpy() == pytest.approx(gammas, abs=1e-12)
        # here MS_G = MS_W = 0.75 exactly: the generation estimate is 0 without truncation
        gen = fit.components.set_index("component").loc["generation"]
        assert gen["estimate"] == 0.0 and not gen["at_boundary"] and gen["raw_estimate"] == pytest.approx(0, abs=1e-12)

    def test_negative_estimate_is_truncated_flagged_and_kept_raw(self):
        # generations mirror each other, so every cell mean equals its scenario mean: MS_G = 0 < MS_W
        y2 = np.array([[[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], [[5.0, 6.0, 7.0], [7.0, 6.0, 5.0]]])
        i, j, l = np.meshgrid(range(2), range(2), range(3), indexing="ij")
        df = pd.DataFrame({"model": "m", "scenario": i.ravel(), "generation": j.ravel(),
                           "judge": [f"J{x}" for x in l.ravel()], "score": y2.ravel()})
        gen = estimate_paper(df).components.set_index("component").loc["generation"]
        ms_w = mean_squares(y2).ms_residual
        assert gen["estimate"] == 0.0 and gen["at_boundary"]
        assert gen["raw_estimate"] == pytest.approx((0.0 - ms_w) / 3, abs=1e-12)
        assert gen["lower"] == 0.0

    def test_f_test_matches_scipy(self):
        ms = mean_squares(Y)
        f = ms.ms_judge / ms.ms_residual
        test = cj.estimators.anova.judge_f_test(ms)
        assert test["F"] == pytest.approx(f, abs=1e-12)
        assert test["p_value"] == pytest.approx(stats.f.sf(f, 2, 6), abs=1e-15)


# ---------------------------------------------------------------------------------- interval formulas
class TestIntervalFormulas:
    def test_mls_reduces_to_exact_chi_square_when_second_term_vanishes(self):
        lo, hi = mls_interval(0.5, 2.0, 7, 0.0, 1.0, 30, 0.95)
        ex_lo, ex_hi = chi2_interval(0.5 * 2.0 * 7, 7, 0.95)
        assert (lo, hi) == pytest.approx((ex_lo, ex_hi), rel=1e-12)

    def test_satterthwaite_is_undefined_for_nonpositive_estimates(self):
        assert all(math.isnan(x) for x in satterthwaite_interval(1, 1.0, 5, 1, 2.0, 5, 0.95))

    def test_noncentral_f_interval_inverts_the_cdf(self):
        lo, hi = noncentral_f_interval(5.0, 4, 200, 0.95)
        assert stats.ncf.cdf(5.0, 4, 200, lo) == pytest.approx(0.975, abs=1e-8)
        assert stats.ncf.cdf(5.0, 4, 200, hi) == pytest.approx(0.025, abs=1e-8)

    def test_noncentral_chi2_interval_inverts_the_cdf(self):
        from cjstats.estimators.intervals import noncentral_chi2_interval

        lo, hi = noncentral_chi2_interval(30.0, 4, 0.95)
        assert stats.ncx2.cdf(30.0, 4, lo) == pytest.approx(0.975, abs=1e-8)
        assert stats.ncx2.cdf(30.0, 4, hi) == pytest.approx(0.025, abs=1e-8)

    def test_noncentral_f_lower_bound_is_zero_for_small_f(self):
        lo, hi = noncentral_f_interval(0.5, 4, 200, 0.95)
        assert lo == 0.0 and hi > 0


# ------------------------------------------------------------------------------------ known truth
def _replicate_rows(reps, seed, *, fixed=True, interval="mls", n=N, m=M, k=K):
    kw = dict(judge_offsets=panel_offsets(k, QWEN["judge_panel"])) if fixed else \
        dict(s2_judge_population=QWEN["judge_panel"])
    y = simulate_array(n=n, m=m, k=k, s2_scenario=QWEN["scenario"], s2_generation=QWEN["generation"],
                       s2_residual=QWEN["residual"], mu=QWEN["mu"], reps=reps, seed=seed, **kw)
    out = []
    for r in range(reps):
        rows, offsets = _group_rows(mean_squares(y[r]), 0.95, interval)
        out.append(({row.component: row for row in rows}, offsets))
    return out


@pytest.fixture(scope="module")
def fixed_panel_reps():
    return _replicate_rows(2000, seed=20261122, fixed=True)


@pytest.fixture(scope="module")
def random_judge_reps():
    return _replicate_rows(2000, seed=20261123, fixed=False)


TRUTH = {"mu": QWEN["mu"], "scenario": QWEN["scenario"], "generation": QWEN["generation"],
         "residual": QWEN["residual"], "judge_panel": QWEN["judge_panel"]}


class TestKnownTruth:
    @pytest.mark.parametrize("component", sorted(TRUTH))
    def test_mean_estimate_within_monte_carlo_error(self, fixed_panel_reps, component):
        x = np.array([reps[0][component].raw_estimate for reps in fixed_panel_reps])
        se = x.std(ddof=1) / math.sqrt(len(x))
        assert abs(x.mean() - TRUTH[component]) < 4 * se, (component, x.mean(), TRUTH[component], se)

    def test_judge_population_mean_within_monte_carlo_error(self, random_judge_reps):
        x = np.array([reps[0]["judge_population"].raw_estimate for reps in random_judge_reps])
        se = x.std(ddof=1) / math.sqrt(len(x))
        assert abs(x.mean() - QWEN["judge_panel"]) < 4 * se

    def test_judge_offsets_are_unbiased(self, fixed_panel_reps):
        g = np.array([[o["estimate"] for o in reps[1]] for reps in fixed_panel_reps])
        truth = panel_offsets(K, QWEN["judge_panel"])
        se = g.std(axis=0, ddof=1) / math.sqrt(len(g))
        assert (np.abs(g.mean(axis=0) - truth) < 4 * se).all()


def _coverage(reps, component, truth):
    return float(np.mean([r[0][component].lower <= truth <= r[0][component].upper for r in reps]))


class TestCoverage:
    @pytest.mark.parametrize("component", sorted(TRUTH))
    def test_fixed_view_intervals_cover_95_percent(self, fixed_panel_reps, component):
        cov = _coverage(fixed_panel_reps, component, TRUTH[component])
        assert 0.93 <= cov <= 0.97, f"{component}: coverage {cov:.3f}"

    def test_judge_population_interval_covers_95_percent_with_judges_redrawn(self, random_judge_reps):
        cov = _coverage(random_judge_reps, "judge_population", QWEN["judge_panel"])
        assert 0.93 <= cov <= 0.97, f"judge_population: coverage {cov:.3f}"

    def test_judge_offset_intervals_cover_95_percent(self, fixed_panel_reps):
        truth = panel_offsets(K, QWEN["judge_panel"])
        hits = np.array([[o["lower"] <= t <= o["upper"] for o, t in zip(reps[1], truth)] for reps in fixed_panel_reps])
        for j, cov in enumerate(hits.mean(axis=0)):
            assert 0.93 <= cov <= 0.97, f"gamma[{j}]: coverage {cov:.3f}"

    def test_small_design_intervals_cover_95_percent(self):
        # n = 10, m = 2, K = 3: df_W = 38, so the plug-in of MS_W in judge_panel's interval is tested too
        reps = _replicate_rows(2000, seed=9, n=10, m=2, k=3)
        truth = {**TRUTH, "judge_panel": QWEN["judge_panel"]}
        for component, t in truth.items():
            cov = _coverage(reps, component, t)
            assert 0.93 <= cov <= 0.97, f"{component}: coverage {cov:.3f}"

    def test_satterthwaite_option_covers_scenario(self):
        reps = _replicate_rows(1000, seed=7, interval="satterthwaite")
        cov = _coverage(reps, "scenario", QWEN["scenario"])
        # binomial SE at R = 1000 is 0.69 points: the same [0.93, 0.97] band is about +-3 SE
        assert 0.93 <= cov <= 0.97

    def test_one_generation_scenario_interval_covers_scenario_plus_generation(self):
        reps = _replicate_rows(2000, seed=8, m=1)
        cov = _coverage(reps, "scenario", QWEN["scenario"] + QWEN["generation"])
        assert 0.93 <= cov <= 0.97, f"m = 1 scenario: coverage {cov:.3f}"


# --------------------------------------------------------------------------------- incomplete designs
class TestIncompleteDesigns:
    @pytest.fixture
    def holey(self, small_balanced_frame):
        return small_balanced_frame.drop(index=[0, 5]).reset_index(drop=True)

    def test_missing_cells_raise_by_default_naming_the_first(self, holey):
        with pytest.raises(cj.CjstatsError, match=r"^Model 'Qwen' is incomplete: 2 judge calls are missing .*\(first: scenario 0, generation 0, judge 'judge_0'\)\. Pass incomplete='drop'"):
            estimate_paper(holey, "anova")

    def test_drop_keeps_complete_cells_only_and_reports_it(self, holey):
        s = cj.read_scores(holey)
        # drop one whole generation per affected scenario keeps balance only if every scenario loses the same;
        # here two cells of one scenario are hit, so the remaining design is unbalanced: a clear error
        with pytest.raises(cj.CjstatsError, match="same number"):
            estimate_paper(s, "anova", incomplete="drop")

    def test_drop_on_a_design_that_stays_balanced(self, small_balanced_frame):
        f = small_balanced_frame
        holey = f[~((f["generation"] == 2) & (f["judge"] == "judge_1"))].reset_index(drop=True)
        with pytest.warns(cj.CjstatsWarning, match="36 of 132 rows and 0 of 12 scenarios"):
            fit = estimate_paper(holey, "anova", incomplete="drop")
        diag = fit.diagnostics["Qwen"]
        assert diag["dropped_cells"] == 12 and diag["m"] == 2
        full = estimate_paper(f[f["generation"] < 2], "anova")
        pd.testing.assert_frame_equal(fit.components, full.components)

    def test_unequal_generations_point_to_reml(self):
        df = pd.DataFrame({"model": "a", "scenario": [0] * 4 + [1] * 2, "generation": [0, 0, 1, 1, 0, 0],
                           "judge": ["x", "y"] * 3, "score": [1.0, 2, 3, 4, 5, 7]})
        with pytest.raises(cj.CjstatsError, match="method='reml'"):
            estimate_paper(df, "anova")


def _one_generation_with_gaps(n_missing: int, n: int = 20, seed: int = 0) -> pd.DataFrame:
    """Models a and b, n scenarios x 1 generation x 3 judges; judge j0 misses model a's first n_missing scenarios."""
    rng = np.random.default_rng(seed)
    rows = [(model, i, f"j{j}", float(rng.normal(i % 5, 1))) for model in ("a", "b") for i in range(n)
            for j in range(3) if not (model == "a" and j == 0 and i < n_missing)]
    return pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])


class TestDropIsNeverSilent:
    """incomplete="drop" says what it removed (result and warning) and refuses to remove most of a model."""

    def test_the_result_and_one_warning_give_rows_and_scenarios_per_group(self):
        df = _one_generation_with_gaps(4)
        with pytest.warns(cj.CjstatsWarning, match=r"^incomplete='drop' removed incomplete cells from 1 of 2 groups: "
                                                  r"model 'a': 8 of 56 rows and 4 of 20 scenarios\.$"):
            fit = estimate_paper(df, "anova", incomplete="drop")
        d = fit.dropped.set_index("model")
        assert d.loc["a", ["dropped_rows", "n_rows", "dropped_cells", "n_cells", "dropped_scenarios",
                           "n_scenarios"]].tolist() == [8, 56, 4, 20, 4, 20]
        assert d.loc["a", "share_scenarios"] == pytest.approx(0.2) and d.loc["b", "dropped_rows"] == 0
        assert fit.diagnostics["a"]["dropped_scenarios"] == 4 and fit.diagnostics["a"]["n"] == 16

    def test_criteria_are_named_in_the_table(self):
        df = pd.concat([_one_generation_with_gaps(3).assign(criterion="x"),
                        _one_generation_with_gaps(0).assign(criterion="y")], ignore_index=True)
        with pytest.warns(cj.CjstatsWarning, match="model 'a', criterion 'x': 6 of 57 rows and 3 of 20 scenarios"):
            fit = estimate_paper(df, "anova", incomplete="drop")
        assert list(fit.dropped.columns[:2]) == ["model", "criterion"] and len(fit.dropped) == 4

    def test_more_than_half_of_a_models_scenarios_is_refused_with_the_counts_and_the_fix(self):
        # the issue: 16 of 20 scenarios lost one call; dropping them kept 4 and reversed the ranking
        df = _one_generation_with_gaps(16)
        with pytest.raises(cj.CjstatsError, match=r"^incomplete='drop' would remove 16 of 20 scenarios \(80%\) and "
                                                 r"32 of 44 rows of model 'a', more than max_drop=0.5 allows; use "
                                                 r"method='reml', which keeps every call, or pass max_drop=0.8"):
            estimate_paper(df, "anova", incomplete="drop")

    def test_judge_f_test_uses_the_same_drop_and_limit(self):
        df = _one_generation_with_gaps(16)
        with pytest.raises(cj.CjstatsError, match="would remove 16 of 20 scenarios"):
            cj.judge_f_test(cj.read_scores(df), incomplete="drop")
        with pytest.warns(cj.CjstatsWarning, match="16 of 20 scenarios"):
            t = cj.judge_f_test(cj.read_scores(df), incomplete="drop", max_drop=0.8)
        assert t.set_index("model").loc["a", "df2"] == (4 - 1) * (3 - 1)

    def test_raising_the_limit_allows_the_loss_and_one_allows_all(self):
        df = _one_generation_with_gaps(16)
        for limit in (0.8, 1.0):
            with pytest.warns(cj.CjstatsWarning, match="16 of 20 scenarios"):
                fit = estimate_paper(df, "anova", incomplete="drop", max_drop=limit)
            assert fit.diagnostics["a"]["n"] == 4 and fit.provenance["options"]["max_drop"] == limit

    def test_exactly_the_limit_is_allowed(self):
        with pytest.warns(cj.CjstatsWarning, match="10 of 20 scenarios"):
            estimate_paper(_one_generation_with_gaps(10), "anova", incomplete="drop")

    def test_nothing_dropped_means_no_warning_and_a_table_of_zeros(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fit = estimate_paper(_one_generation_with_gaps(0), "anova", incomplete="drop")
        assert (fit.dropped["dropped_rows"] == 0).all()
        assert estimate_paper(_one_generation_with_gaps(0), "anova").dropped is None

    @pytest.mark.parametrize("option", [{"incomplete": "drop"}, {"max_drop": 0.8}])
    def test_drop_options_belong_to_a_backend_that_drops(self, option):
        with pytest.raises(cj.CjstatsError, match=r"argument of estimate applies to a backend that needs complete "
                                                 r"data, such as method='anova'; method='reml' keeps every call"):
            estimate_paper(_one_generation_with_gaps(2), "reml", **option)

    @pytest.mark.parametrize("bad", [-0.1, 1.5, "half", True])
    def test_a_bad_limit_is_one_sentence(self, bad):
        with pytest.raises(cj.CjstatsError, match=r"The 'max_drop' argument of estimate must be a share of "
                                                 r"scenarios between 0 and 1"):
            estimate_paper(_one_generation_with_gaps(2), "anova", incomplete="drop", max_drop=bad)


class TestOptions:
    def test_ci_level_changes_interval_width(self, small_balanced_scores):
        w90 = estimate_paper(small_balanced_scores, ci_level=0.9).components
        w99 = estimate_paper(small_balanced_scores, ci_level=0.99).components
        ok = w90["identifiable"].to_numpy()       # rows without a number (not identifiable) have no interval
        assert ((w99["upper"] - w99["lower"]) >= (w90["upper"] - w90["lower"]) - 1e-12)[ok].all()

    def test_bad_ci_level_is_one_sentence(self, small_balanced_scores):
        with pytest.raises(cj.CjstatsError, match=r"ci_level should be in the interval \(0, 1\) but got 95"):
            estimate_paper(small_balanced_scores, ci_level=95)

    def test_unknown_method_is_one_sentence(self, small_balanced_scores):
        with pytest.raises(cj.CjstatsError, match="must be one of 'anova', 'bayes', 'ordinal', 'reml'. Got 'lmer' instead."):
            estimate_paper(small_balanced_scores, "lmer")

    def test_unknown_interval_is_one_sentence(self, small_balanced_scores):
        with pytest.raises(cj.CjstatsError, match="'interval' argument"):
            estimate_paper(small_balanced_scores, interval="wald")


class TestRealData:
    def test_reproduces_the_data_curators_independent_two_way_anova_on_hanna(self):
        # ../shared/data/hanna/SOURCE.md (computed separately when the data was converted): GPT-2, Coherence,
        # prompt 1, 96 scenarios x 5 judges: offsets ChatGPT -0.98, Llama-13B +0.61, OrcaPlatypus +0.43,
        # Beluga 0.00, Mistral -0.06; scenario variance ~0.11, residual ~0.29 (quoted to 2 decimals).
        s = cj.datasets.load("hanna").subset(models=["GPT-2"], criteria=["Coherence"])
        fit = estimate_paper(s)
        off = dict(zip(fit.judge_offsets["judge"], fit.judge_offsets["estimate"]))
        expected = {"ChatGPT": -0.98, "Llama-13B": 0.61, "OrcaPlatypus": 0.43, "Beluga-13B": 0.00, "Mistral-7B": -0.06}
        for judge, value in expected.items():
            assert off[judge] == pytest.approx(value, abs=0.005), judge
        est = fit.estimates()
        assert est["scenario"] == pytest.approx(0.11, abs=0.005)
        assert est["residual"] == pytest.approx(0.29, abs=0.01)
