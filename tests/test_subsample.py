"""The App. F subsampling experiment on the real HANNA table lands on the exact pool predictions.

HANNA's 4 judge-prompt variants per (story, judge) serve as the generation pool (m_max = 4, K_tot = 5, n = 96;
``cjstats.datasets.load("hanna", eval_prompt="as_generation")``); its judge offsets are large. Each empirical
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
from cjstats.subsample import _TupleSums, _uniform, pool_array, subsample_means, subsample_strategies
from cjstats.variance import pool_constants, pool_variance


@pytest.fixture(scope="module")
def hanna_pool():
    return cj.datasets.load("hanna", eval_prompt="as_generation")


class TestHannaLandsOnAppendixF:
    @pytest.mark.parametrize("model, criterion, seed", [("GPT", "Coherence", 1), ("Human", "Engagement", 2)])
    def test_paper_budget_grid(self, hanna_pool, model, criterion, seed):
        t = subsample_strategies(hanna_pool, model=model, criterion=criterion, reps=5000, seed=seed)
        assert len(t) == 30 and sorted(t["budget"].unique()) == list(range(5, 55, 5))
        assert (t["z"].abs() <= 4).all(), t.loc[t["z"].abs() > 4]
        y = pool_array(hanna_pool, model=model, criterion=criterion)
        consts = pool_constants(y)
        for row in t.itertuples():      # at multiples of K_tot the predictions are the paper's C/(nB)
            assert row.predicted == pytest.approx(consts[row.strategy] / (96 * row.budget), rel=1e-12)

    def test_budgets_that_are_not_multiples_of_the_panel(self, hanna_pool):
        t = subsample_strategies(hanna_pool, model="GPT", criterion="Relevance", budgets=[1, 2, 3, 4, 7, 11, 13],
                                 reps=5000, seed=3)
        assert (t["z"].abs() <= 4).all(), t.loc[t["z"].abs() > 4]

    def test_leftover_part_of_the_prediction_is_needed(self, hanna_pool):
        """At B = 2 the leftover term is a large part of V_C: C_C/(nB) alone is rejected."""
        y = pool_array(hanna_pool, model="GPT", criterion="Coherence")
        x = subsample_means(y, strategy="cyclic", budget=2, reps=20000, seed=4)
        v = np.var(x, ddof=1)
        se = np.sqrt((np.mean((x - x.mean()) ** 4) - np.mean((x - x.mean()) ** 2) ** 2) / x.size)
        assert abs(v - pool_variance(y, strategy="cyclic", budget=2)) <= 4 * se
        assert abs(v - pool_constants(y)["cyclic"] / (96 * 2)) > 4 * se

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

    def test_bad_strategy(self):
        with pytest.raises(CjstatsError, match="'strategies' argument of subsample_strategies must be one of"):
            subsample_strategies(np.zeros((2, 2, 2)), strategies=["best"], reps=10)
