"""The App. F subsampling experiment on the real HANNA table lands on the exact pool predictions.

HANNA's 4 judge-prompt variants per (story, judge) serve as the generation pool (m_max = 4, K_tot = 5, n = 96;
``cjstats.datasets.load("hanna", eval_prompt="as_generation", keep_sentinels=True)``); its judge offsets are large. Each empirical
variance comes from 5,000 repetitions, as in the paper, and is compared with the prediction within 4 Monte
Carlo standard errors (about 2% of the variance each; with 30-40 comparisons per test the chance that a
correct formula leaves the band somewhere is below 1%, and the seeds are fixed).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import cjstats as cj
from cjstats.exceptions import CjstatsError
from cjstats.decisions.subsample import (
    _TupleSums, _uniform, pool_array, subsample_means, subsample_strategies, variance_with_se,
)
from cjstats.decisions.formulas import pool_variance


def appendix_f_constants(y: np.ndarray) -> dict[str, float]:
    """C_A, C_B, C_C typed in from App. F (Eqs. 36-38), with explicit sums, independently of the library."""
    n, mm, k = y.shape
    c_a = c_b = c_c = 0.0
    for i in range(n):
        grand = y[i].sum() / (mm * k)
        gen_means = [y[i, g].sum() / k for g in range(mm)]
        c_a += k * sum((x - grand) ** 2 for x in gen_means) / mm / n
        c_b += sum((y[i, g, l] - grand) ** 2 for g in range(mm) for l in range(k)) / (mm * k) / n
        for l in range(k):
            col = y[i, :, l].sum() / mm
            c_c += sum((y[i, g, l] - col) ** 2 for g in range(mm)) / mm / (n * k)
    return {"all": c_a, "random": c_b, "cyclic": c_c}


@pytest.fixture(scope="module")
def hanna_pool():
    return cj.datasets.load("hanna", eval_prompt="as_generation", keep_sentinels=True)


class TestHannaLandsOnAppendixF:
    @pytest.mark.parametrize("model, criterion, seed", [("GPT", "Coherence", 1), ("Human", "Engagement", 2)])
    def test_paper_budget_grid(self, hanna_pool, model, criterion, seed):
        t = subsample_strategies(hanna_pool, model=model, criterion=criterion, reps=5000, seed=seed)
        assert len(t) == 30 and sorted(t["budget"].unique()) == list(range(5, 55, 5))
        assert (t["z"].abs() <= 4).all(), t.loc[t["z"].abs() > 4]
        y = pool_array(hanna_pool, model=model, criterion=criterion)
        consts = appendix_f_constants(y)
        for row in t.itertuples():      # at multiples of K_tot the predictions are the paper's C/(nB)
            assert row.predicted == pytest.approx(consts[row.strategy] / (96 * row.budget), rel=1e-10)

    def test_budgets_that_are_not_multiples_of_the_panel(self, hanna_pool):
        t = subsample_strategies(hanna_pool, model="GPT", criterion="Relevance", budgets=[1, 2, 3, 4, 7, 11, 13],
                                 reps=5000, seed=3)
        assert (t["z"].abs() <= 4).all(), t.loc[t["z"].abs() > 4]

    def test_leftover_part_of_the_prediction_is_needed(self, hanna_pool):
        """At B = 2 the leftover term is a large part of V_C: C_C/(nB) alone is rejected."""
        y = pool_array(hanna_pool, model="GPT", criterion="Coherence")
        x = subsample_means(y, strategy="cyclic", budget=2, reps=20000, seed=4)
        v, se = variance_with_se(x)
        assert abs(v - pool_variance(y, strategy="cyclic", budget=2)) <= 4 * se
        assert abs(v - appendix_f_constants(y)["cyclic"] / (96 * 2)) > 4 * se

    @pytest.mark.parametrize("budget, seed", [(2, 5), (7, 6)])
    def test_leftover_part_of_the_all_judges_prediction_is_needed(self, hanna_pool, budget, seed):
        """Strategy A with r = B mod K_tot > 0: q full generations plus one generation scored by r rotation judges.

        The prediction without the leftover term E_r (the judge part of the rotation across scenarios), written
        out here as [sum_i (q K^2 v_i + P_i)]/(nB)^2, is rejected; the full App. F prediction is not.
        """
        y = pool_array(hanna_pool, model="GPT", criterion="Coherence")
        n, _, k = y.shape
        q, r = divmod(budget, k)
        v_i = y.mean(axis=2).var(axis=1)                       # variance of a generation's judge-mean
        tr = y.var(axis=1).sum(axis=1)                          # trace of the judge-column covariance
        p_i = r / k * tr + r * (r - 1) / (k * (k - 1)) * (k * k * v_i - tr)
        without = float(np.sum(q * k * k * v_i + p_i)) / (n * budget) ** 2
        x = subsample_means(y, strategy="all", budget=budget, reps=20000, seed=seed)
        v, se = variance_with_se(x)
        assert abs(v - pool_variance(y, strategy="all", budget=budget)) <= 4 * se
        assert abs(v - without) > 4 * se

    def test_same_seed_same_numbers(self, hanna_pool):
        a = subsample_strategies(hanna_pool, model="GPT", criterion="Coherence", budgets=[5, 7], reps=300, seed=9)
        b = subsample_strategies(hanna_pool, model="GPT", criterion="Coherence", budgets=[5, 7], reps=300, seed=9)
        assert a.equals(b)


class TestSampler:
    @pytest.mark.parametrize("bound", [4, 20, 256, 400, 1024, 8000])
    def test_indices_are_uniform(self, bound):
        rng = np.random.default_rng(bound)
        idx = _uniform(rng, 200 * bound, bound)
        assert idx.min() >= 0 and idx.max() < bound
        counts = np.bincount(idx, minlength=bound)
        assert stats.chisquare(counts).pvalue > 1e-4

    def test_tuple_sums_have_the_right_mean_and_variance(self):
        rng = np.random.default_rng(0)
        pool = rng.normal(size=(3, 5))                  # 3 units, pools of 5 values
        s = _TupleSums(pool)
        assert s.jmax >= 2
        t, reps = 7, 40000
        tot = s.total(t, reps, rng)
        mean = t * pool.mean(axis=1).sum()
        var = t * pool.var(axis=1).sum()
        assert abs(tot.mean() - mean) <= 4 * np.sqrt(var / reps)
        assert abs(tot.var(ddof=1) - var) <= 4 * var * np.sqrt(2 / (reps - 1))

    def test_a_pool_of_one_generation_has_nothing_to_resample(self):
        y = np.random.default_rng(1).normal(size=(10, 1, 5))
        t = subsample_strategies(y, budgets=[5, 10], reps=200, seed=0)
        assert (t.loc[t["strategy"] != "random", "variance"].abs() < 1e-24).all()
        assert (t.loc[t["strategy"] != "random", "predicted"] == 0).all()


class TestInputs:
    def test_unbalanced_pool(self, small_balanced_frame):
        df = small_balanced_frame.drop(index=[0])
        with pytest.raises(CjstatsError, match="not balanced"):
            pool_array(cj.read_scores(df), model="Qwen")

    def test_several_models_need_a_name(self, small_balanced_scores):
        with pytest.raises(CjstatsError, match="name one with model="):
            pool_array(small_balanced_scores)

    def test_bad_seed_is_one_sentence(self):
        with pytest.raises(CjstatsError, match="'seed' argument of subsample_strategies must be None, an integer"):
            subsample_strategies(np.zeros((2, 2, 2)), reps=10, seed=-1)

    def test_variance_with_se_matches_the_normal_theory(self):
        """For normal replicates the delta-method SE is close to sqrt(2/(R-1)) sigma^2.

        Its own relative error is half that of m4 - m2^2, whose influence function x^4 - 2x^2 - 1 has variance 56
        (unit normal): sqrt(56/R)/2/2 ~ 0.84% at R = 50,000, so 5% is about 6 of its standard errors.
        """
        x = np.random.default_rng(3).standard_normal(50_000) * 2.0
        v, se = variance_with_se(x)
        assert v == pytest.approx(4.0, abs=4 * se)
        assert se == pytest.approx(4.0 * np.sqrt(2 / (x.size - 1)), rel=0.05)
        with pytest.raises(CjstatsError, match="at least 2 finite replicates"):
            variance_with_se([1.0])

    def test_bad_strategy(self):
        with pytest.raises(CjstatsError, match="'strategies' argument of subsample_strategies must be one of"):
            subsample_strategies(np.zeros((2, 2, 2)), strategies=["best"], reps=10)
