"""P(best) of the joint comparisons when the covariance of the model means is singular or zero: no Cholesky error,
ties shared equally, and the usual draws (hence the numbers) unchanged when the covariance is positive definite."""

from __future__ import annotations

import numpy as np
import pytest

from cjstats.estimators.joint.models import _p_best


def test_zero_covariance_equal_means_share_p_best():
    p = _p_best(np.array([0.5, 0.5, 0.5]), np.zeros((3, 3)), np.inf, np.random.default_rng(0), 1000)
    assert p == pytest.approx([1 / 3] * 3, abs=1e-12)


def test_zero_covariance_a_clear_leader_is_best_always():
    p = _p_best(np.array([0.5, 0.6, 0.5]), np.zeros((3, 3)), 5.0, np.random.default_rng(0), 1000)
    assert list(p) == [0.0, 1.0, 0.0]


def test_singular_covariance_moves_the_tied_pair_together():
    cov = 0.01 * np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])   # models 0 and 1 move as one
    p = _p_best(np.array([0.5, 0.6, 0.5]), cov, np.inf, np.random.default_rng(0), 4000)
    assert p[0] == 0.0 and p.sum() == pytest.approx(1.0)
    # P(model 1 beats model 2) = P(0.1 + N(0, 0.02) > 0) = Phi(0.1 / sqrt(0.02))
    from scipy.stats import norm

    assert p[1] == pytest.approx(norm.cdf(0.1 / np.sqrt(0.02)), abs=4 * np.sqrt(0.25 / 4000))


def test_positive_definite_covariance_gives_the_cholesky_draws():
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    means, cov = np.array([0.1, 0.2, 0.15]), np.array([[0.02, 0.005, 0.0], [0.005, 0.03, 0.01], [0.0, 0.01, 0.02]])
    chol = np.linalg.cholesky(cov + 1e-12 * np.trace(cov) / 3 * np.eye(3))
    z = rng_b.standard_normal((500, 3)) @ chol.T
    expected = np.bincount(np.argmax(means + z, axis=1), minlength=3) / 500
    assert np.array_equal(_p_best(means, cov, np.inf, rng_a, 500), expected)
