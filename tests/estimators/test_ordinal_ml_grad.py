"""The analytic gradient of the ML ordinal backend's adaptive-quadrature likelihood equals central finite
differences of the likelihood itself (ordinal and binary, probit and logit, shared and per-judge thresholds,
nagq 1 and 10), and the third-order link partials equal differences of the second-order ones.

Tolerance: a central difference with step 1e-5 on a likelihood whose modes are solved to 1e-10 is accurate to
~1e-8 here (measured: largest error 1.1e-8 over the grid, gradients of size 3-70); 1e-6 leaves a margin of 100
and is still 1e-5 of the gradient's size, far below any error in a derivative term (a dropped node-movement
term changes the gradient by 1e-2 or more)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cjstats.estimators.ordinal_ml.likelihood import make_problem, neg_loglik, neg_loglik_grad
from cjstats.estimators.ordinal_ml.links import log_prob_partials
from cjstats.estimators.ordinal_ml.optimise import start_values

DATA = Path(__file__).parent.parent / "data" / "ordinal_ml"


def _problem(name, link, nagq, thresholds):
    d = pd.read_csv(DATA / f"{name}.csv")
    cat = np.unique(d["score"], return_inverse=True)[1]
    sc = np.unique(d["scenario"], return_inverse=True)[1]
    jd = np.unique(d["judge"], return_inverse=True)[1]
    return make_problem(cat, sc, jd, n_scenarios=sc.max() + 1, n_judges=jd.max() + 1, n_categories=cat.max() + 1,
                        link=link, thresholds=thresholds, nagq=nagq)


@pytest.mark.parametrize("name", ["ord_small", "ord_b", "bin_small"])
@pytest.mark.parametrize("link", ["probit", "logit"])
@pytest.mark.parametrize("nagq", [1, 10])
@pytest.mark.parametrize("thresholds", ["shared", "judge"])
def test_gradient_equals_finite_difference(name, link, nagq, thresholds):
    p = _problem(name, link, nagq, thresholds)
    rng = np.random.default_rng(7)
    x = start_values(p) + rng.normal(0.0, 0.2, p.n_params)     # away from the optimum: a non-zero gradient
    x[0] = np.log(0.8)
    f, g = neg_loglik_grad(p, x)
    assert f == pytest.approx(neg_loglik(p, x), abs=1e-10)
    step = 1e-5
    num = np.array([(neg_loglik(p, x + e) - neg_loglik(p, x - e)) / (2 * step) for e in np.eye(x.size) * step])
    assert np.max(np.abs(num)) > 0.5
    np.testing.assert_allclose(g, num, atol=1e-6)


@pytest.mark.parametrize("link", ["probit", "logit"])
def test_link_partials_are_derivatives_of_each_other(link):
    u = np.array([0.7, 1.3, np.inf, -3.0, 2.0, 4.0])
    lo = np.array([-0.4, -np.inf, 0.2, -5.0, 1.9, -np.inf])
    d = log_prob_partials(u, lo, link)
    h = 1e-5

    def cd(key, du, dl):
        return (log_prob_partials(u + du, lo + dl, link)[key] - log_prob_partials(u - du, lo - dl, link)[key]) / (2 * h)

    def both(k1, k2):
        return lambda du, dl: (cd(k1, du, dl) + cd(k2, du, dl))

    np.testing.assert_allclose(d["u"], cd("lp", h, 0.0), atol=1e-7)
    np.testing.assert_allclose(d["l"], cd("lp", 0.0, h), atol=1e-7)
    np.testing.assert_allclose(d["uD"], cd("u", h, 0.0) + cd("l", h, 0.0), atol=1e-8)
    np.testing.assert_allclose(d["lD"], cd("u", 0.0, h) + cd("l", 0.0, h), atol=1e-8)
    np.testing.assert_allclose(d["uDD"], both("uD", "lD")(h, 0.0), atol=1e-8)
    np.testing.assert_allclose(d["lDD"], both("uD", "lD")(0.0, h), atol=1e-8)


@pytest.mark.parametrize("name,link,nagq", [("ord_a", "probit", 10), ("bin_a", "logit", 1), ("bin_a", "probit", 10)])
def test_pattern_compression_is_exact(name, link, nagq):
    from cjstats.estimators.ordinal_ml.likelihood import compress
    from cjstats.estimators.ordinal_ml.optimise import fit_problem

    p = _problem(name, link, nagq, "shared")
    pc, inverse = compress(p)
    assert pc.n_scenarios < p.n_scenarios and pc.scenario_weight.sum() == p.n_scenarios
    x = start_values(p) + 0.1
    f, g = neg_loglik_grad(p, x)
    fc, gc = neg_loglik_grad(pc, x)
    assert fc == pytest.approx(f, abs=1e-9)
    np.testing.assert_allclose(gc, g, atol=1e-8)
    fit = fit_problem(p)
    assert fit.modes.shape == (p.n_scenarios,)
    # every scenario's mode is its pattern's mode: re-solve on the full problem at the optimum
    from cjstats.estimators.ordinal_ml.likelihood import scenario_modes
    np.testing.assert_allclose(fit.modes, scenario_modes(p, fit.x)[0], atol=1e-8)
