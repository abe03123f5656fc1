"""The one REML engine behind the joint fits: no false boundary, no false 'converged', honest population intervals.

The issue this answers: on small tables the joint REML stopped at scenario = model_scenario = 0 after two
evaluations and said it had converged (an optimiser on sqrt(theta), whose gradient is exactly 0 at the bound,
and a KKT check whose failure was ignored). Here the engine works on theta, decides convergence by the KKT
conditions, and the joint fit must equal the joint ANOVA on balanced tables wherever the ANOVA is not truncated
(a closed-form identity), and reach the lowest criterion anywhere else. lme4 agreement on 41 tables is in
``test_joint_reml_lme4_suite.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cjstats as cj
from cjstats.estimators.joint import reml
from cjstats.estimators.joint._joint import joint_stats
from cjstats.studies.simulate_joint import simulate_joint
from cjstats.estimators.reml import engine
from cjstats.exceptions import CjstatsWarning

COLLAPSE = dict(n=20, m=1, mu=[0.0, 0.1, 0.2], gamma=[0.1, -0.1, 0.05, -0.05], s2_scenario=0.0126,
                s2_model_scenario=0.0438, s2_generation=0.0, s2_residual=0.2613)
VARIANCES = ("scenario", "model_scenario", "generation", "residual")


def _fixed(fit, comp):
    t = fit.components
    return t[(t.component == comp) & (t.view == "panel")].iloc[0]


@pytest.mark.parametrize("seed", range(24))
def test_the_collapse_design_reaches_the_optimum_and_says_so(seed):
    """3 models x 20 scenarios x 4 judges with the issue's variances collapsed in about two of three tables. On a
    balanced table REML = ANOVA whenever no ANOVA estimate is truncated; otherwise the REML criterion at the fit
    is no higher than anywhere else we look (the truncated ANOVA point, a grid, and every boundary face)."""
    df = simulate_joint(rng=seed, **COLLAPSE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CjstatsWarning)       # a converged fit warns about nothing
        fit = cj.fit_joint(df, method="reml")
    anova = cj.fit_joint(df, method="anova")
    assert fit.diagnostics["converged"] and fit.diagnostics["kkt"]["stationary"]
    raw = {c: float(_fixed(anova, c)["raw_estimate"]) for c in ("scenario", "model_scenario", "residual")}
    if min(raw.values()) > 0:
        for c, v in raw.items():
            assert float(_fixed(fit, c)["estimate"]) == pytest.approx(v, rel=1e-7), c
    js, _ = joint_stats(df, "test")
    ns = js.for_joint_reml()
    t = np.eye(ns.n_models * ns.n_judges)
    dev = fit.diagnostics["reml_deviance"]
    grid = [np.array([a, b, 0.0]) for a in (0, 0.01, 0.05, 0.2, 1.0) for b in (0, 0.01, 0.05, 0.2, 1.0)]
    s2e = raw["residual"]
    grid.append(np.array([max(raw["scenario"], 0) / s2e, max(raw["model_scenario"], 0) / s2e, 0.0]))
    assert all(reml.reml_deviance(th, ns, t)[0] >= dev - 1e-7 for th in grid)


def test_a_fit_that_fails_the_kkt_check_is_never_reported_as_converged(monkeypatch):
    """An optimiser that stops at once (as the sqrt-scale L-BFGS-B did) leaves a point whose KKT check fails: the
    fit says converged=False, warns with what failed, and the comparison summary shows it."""
    df = simulate_joint(rng=3, **COLLAPSE)

    def stop_at_start(fun, x0, lower, **kw):
        x = np.maximum(np.asarray(x0, float), lower)
        fx, g = fun(x)
        return x, fx, {"success": True, "message": "stopped", "nit": 0, "nfev": 1, "grad": g, "hess": None}

    monkeypatch.setattr(engine, "minimize_bounded", stop_at_start)
    with pytest.warns(CjstatsWarning, match="did not reach a minimum"):
        fit = cj.fit_joint(df, method="reml")
    assert fit.diagnostics["converged"] is False
    assert not fit.diagnostics["kkt"]["stationary"]
    assert "can still fall" in fit.diagnostics["message"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = str(cj.compare_models(df, method="reml", fit=fit))
    assert "WARNING: the joint reml fit did not converge" in text


def test_kkt_check_sees_the_false_boundary_that_sqrt_theta_hid():
    """At scenario = model_scenario = 0 the gradient in sqrt(theta) is exactly 0, but the one in theta points
    inward: the engine's check says so, and the fit moves off the boundary."""
    df = simulate_joint(rng=0, **COLLAPSE)
    js, _ = joint_stats(df, "test")
    ns = js.for_joint_reml()
    crit = reml.NestedCriterion(ns, np.eye(ns.n_models * ns.n_judges))
    k = engine.kkt_check(crit, np.zeros(2))
    assert not k["stationary"] and k["inward"] > 1.0 and "pointing inward" in k["message"]
    fit = engine.fit(crit, [np.zeros(2)], exact_hessian=True)
    assert fit.converged and np.all(fit.theta > 0)


def test_per_model_derivatives_equal_differences_of_the_criterion():
    """The jets with one model x scenario direction per model: gradient and Hessian of the profiled criterion
    against central differences (unbalanced table, m = 2)."""
    df = simulate_joint(n=12, m=2, mu=[0, .2, .4], gamma=[-.2, 0, .2], s2_scenario=.3, s2_model_scenario=.2,
                        s2_generation=.1, s2_residual=.5, missing=0.2, rng=5)
    js, _ = joint_stats(df, "test")
    ns = js.for_joint_reml()
    crit = reml.NestedCriterion(ns, np.eye(ns.n_models * ns.n_judges), per_model=True)
    x = np.array([0.4, 0.3, 0.6, 0.2, 0.25])
    _, g = crit.profiled(x, grad=True)
    h = engine.profiled_hessian(crit, x)
    eps = 1e-5
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = eps
        gd = (crit.profiled(x + e)[0] - crit.profiled(x - e)[0]) / (2 * eps)
        assert g[i] == pytest.approx(gd, rel=1e-6, abs=1e-7)
        hd = (crit.profiled(x + e, grad=True)[1] - crit.profiled(x - e, grad=True)[1]) / (2 * eps)
        np.testing.assert_allclose(h[i], hd, rtol=1e-5, atol=1e-6)


def test_per_model_form_with_equal_variances_is_the_pooled_form():
    """The per-model criterion at theta_ms[p] = theta_ms for every p is the pooled criterion."""
    df = simulate_joint(n=10, m=2, mu=[0, .2, .4], gamma=[-.2, 0, .2], s2_scenario=.3, s2_model_scenario=.2,
                        s2_generation=.1, s2_residual=.5, missing=0.1, rng=2)
    js, _ = joint_stats(df, "test")
    ns = js.for_joint_reml()
    t = np.eye(ns.n_models * ns.n_judges)
    pooled = reml.NestedCriterion(ns, t)
    per = reml.NestedCriterion(ns, t, per_model=True)
    for a, b, c in [(0.3, 0.2, 0.1), (0.0, 0.5, 0.0), (1.0, 0.0, 0.3)]:
        assert per.profiled(np.array([a, b, b, b, c]))[0] == pytest.approx(pooled.profiled(np.array([a, b, c]))[0],
                                                                           rel=1e-12)


def test_population_rows_equal_the_joint_anova_on_balanced_data():
    """judge_model (random) and judge_population: the REML rows are the ANOVA's MLS rows on a balanced table
    (estimate, bounds and standard error), so the population view has an honest interval."""
    rng = np.random.default_rng(11)
    df = simulate_joint(n=20, m=2, mu=[0, .1, .2], gamma=[.1, -.1, .05, -.05], s2_scenario=.0126,
                        s2_model_scenario=.0438, s2_generation=.02, s2_residual=.2613,
                        judge_model=rng.normal(0, .1, (3, 4)), rng=3)
    a, r = cj.fit_joint(df, method="anova").components, cj.fit_joint(df, method="reml").components
    for comp, view in (("judge_model", "population"), ("judge_population", "population")):
        ra = a[(a.component == comp) & (a.view == view)].iloc[0]
        rr = r[(r.component == comp) & (r.view == view)].iloc[0]
        for col in ("estimate", "lower", "upper", "std_error", "raw_estimate"):
            assert float(rr[col]) == pytest.approx(float(ra[col]), rel=1e-8, abs=1e-12), (comp, col)
        assert rr["ci_method"].startswith("MLS")


def test_mentalalign_population_interval_is_no_longer_the_fixed_view_rescaled():
    """On MentalAlign the REML random-view judge_model interval was [0.00603, 0.00697] (the fixed-view interval
    rescaled); the ANOVA MLS interval of the same quantity is [0.0040, 0.0121]. judge_population had none."""
    s = cj.datasets.load("mentalalign", composite=True)
    t = cj.fit_joint(s, method="reml").components
    jm = t[(t.component == "judge_model") & (t.view == "population")].iloc[0]
    assert jm["lower"] == pytest.approx(0.0040, abs=2e-4) and jm["upper"] == pytest.approx(0.0121, abs=5e-4)
    jp = t[t.component == "judge_population"].iloc[0]
    assert 0 < jp["lower"] < jp["estimate"] < jp["upper"]


def test_a_tiny_variance_gets_an_interval_not_an_overflow():
    """One fit in 2,000 of the issue's simulation ended in OverflowError (the log-scale Wald interval of a tiny
    variance), aborting compare_models. Profile intervals have no such exponent."""
    df = simulate_joint(n=15, m=2, mu=[0, .1, .2], gamma=[.1, -.1, 0], s2_scenario=1e-9, s2_model_scenario=1e-9,
                        s2_generation=1e-9, s2_residual=1.0, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = cj.fit_joint(df, method="reml")
        cmp = cj.compare_models(df, method="reml", fit=fit)
    for c in VARIANCES:
        row = _fixed(fit, c)
        assert row["lower"] >= 0 and np.isfinite(row["upper"]), c
    assert np.isfinite(cmp.differences["std_error"]).all()
