"""The joint ordinal backend (``method="ordinal"``): entry points, identification and the nested quadrature."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import cjstats as cj
from cjstats.estimators.joint.ordinal import _code, nested_agq_neg_loglik
from cjstats.estimators.ordinal_ml.nested import laplace_neg_loglik

sys.path.insert(0, str(Path(__file__).parent.parent / "data" / "joint_ordinal"))
from make_tables import simulate  # noqa: E402


@pytest.fixture(scope="module")
def verdicts():
    return simulate(n=30, P=3, K=3, J=2, seed=21)


def test_entry_points(verdicts):
    fit = cj.fit_joint(verdicts, method="ordinal", link="logit")
    assert fit.method == "ordinal" and fit.diagnostics["link"] == "logit" and fit.diagnostics["converged"]
    assert "link = \"logit\"" in fit.formula and "(1|scenario:model)" in fit.formula
    res = cj.compare_models(verdicts, method="ordinal")
    assert len(res.differences) == 3 and res.score_differences is not None and len(res.score_differences) == 3
    assert (res.score_means["quantity"] == "pass_rate").all()
    assert ((res.score_means["lower"] > 0) & (res.score_means["upper"] < 1)).all()
    sp = cj.self_preference(verdicts, {"j0": ["m0"]}, method="ordinal")
    assert np.isfinite(sp.contrasts["std_error"]).all() and sp.fit.method == "ordinal"
    # the Gaussian comparisons keep their frames as they were
    g = cj.compare_models(verdicts.assign(score=verdicts["score"] + np.arange(len(verdicts)) % 3), method="anova")
    assert g.score_means is None and g.score_differences is None


def test_model_that_passes_everything_is_not_identified(verdicts):
    d = verdicts.copy()
    d.loc[d["model"] == "m0", "score"] = 1.0
    with pytest.warns(cj.IdentificationWarning, match="model 'm0' gets 1"):
        fit = cj.fit_joint(d, method="ordinal")
    assert np.isinf(fit.cell_means[0]).all() and np.isfinite(fit.cell_means[1:]).all()
    c = fit.components
    mu0 = c[(c["component"] == "mu") & (c["model"] == "m0")].iloc[0]
    assert not mu0["identifiable"] and np.isnan(mu0["lower"]) and np.isnan(mu0["upper"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(cj.CjstatsError, match="'m0' has no finite mean"):
            cj.compare_models(d, method="ordinal")


def test_a_separated_cell_is_never_a_finite_interval(verdicts):
    """A model that fails everything, or one judge that passes one model on every call: every contrast that weighs a
    separated cell is not identified (the signed limit, no SE, interval or p-value), the others are as without it."""
    d = verdicts.copy()
    d.loc[d["model"] == "m1", "score"] = 0.0                   # m1 fails everything
    with pytest.warns(cj.IdentificationWarning, match="model 'm1' gets 0"):
        fit = cj.fit_joint(d, method="ordinal")
    assert np.isneginf(fit.cell_means[1]).all()
    r = fit.contrast("mu[m0] - mu[m1]")
    assert r.estimate == np.inf and np.isnan([r.std_error, r.lower, r.upper, r.p_value]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(cj.CjstatsError, match="'m1' has no finite mean"):
            cj.compare_models(d, method="ordinal")
    d = verdicts.copy()
    d.loc[(d["model"] == "m1") & (d["judge"] == "j2"), "score"] = 1.0    # one cell
    with pytest.warns(cj.IdentificationWarning, match="model 'm1' gets 1 .* from judge 'j2'"):
        fit = cj.fit_joint(d, method="ordinal")
    assert np.isposinf(fit.cell_means[1, 2]) and np.isfinite(np.delete(fit.cell_means.ravel(), 5)).all()
    est, se, _ = fit.contrasts(np.stack([np.array([[1, 1, 1], [0, 0, 0], [-1, -1, -1]]) / 3,     # m0 - m2
                                         np.array([[1, 1, 1], [-1, -1, -1], [0, 0, 0]]) / 3]))   # m0 - m1
    assert np.isfinite(est[0]) and np.isfinite(se[0]) and se[0] > 0
    assert est[0] == pytest.approx(fit.cell_means[0].mean() - fit.cell_means[2].mean(), abs=1e-12)
    assert est[1] == -np.inf and np.isnan(se[1])
    one = fit.contrast("eta[m1, j0] - eta[m1, j1]")               # the finite cells of the model: identified
    assert np.isfinite([one.estimate, one.std_error, one.lower, one.upper]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sp = cj.self_preference(d, {"j2": ["m1"], "j0": ["m0"]}, method="ordinal")
        with pytest.raises(cj.CjstatsError, match="'m1' has no finite mean"):
            cj.compare_models(d, method="ordinal")
    c = sp.contrasts                                             # each is double-centred: weighs the separated cell
    assert np.isinf(c["estimate"]).all() and c[["std_error", "lower", "upper", "p_value"]].isna().all().all()
    mu1 = fit.components[(fit.components["component"] == "mu") & (fit.components["model"] == "m1")].iloc[0]
    assert not mu1["identifiable"] and np.isnan(mu1["lower"])


def test_refusals(verdicts):
    with pytest.raises(cj.CjstatsError, match="score rows"):
        cj.fit_joint(cj.stats.build_stats(cj.read_scores(verdicts), unit=("criterion",)), method="ordinal")
    cont = verdicts.assign(score=np.random.default_rng(0).normal(size=len(verdicts)))
    with pytest.raises(cj.CjstatsError, match="distinct values"):
        cj.fit_joint(cont, method="ordinal")
    with pytest.raises(cj.CjstatsError, match="model_scenario='per_model'"):
        cj.fit_joint(verdicts, method="ordinal", model_scenario="per_model")


def test_nested_agq_one_node_is_laplace_and_converges(verdicts):
    c = _code(cj.read_scores(verdicts), "probit", 1)
    q = c["q"]
    fit = cj.fit_joint(verdicts, method="ordinal")
    x = np.asarray(fit.diagnostics["x"])
    lap = laplace_neg_loglik(q, x)[0]
    assert nested_agq_neg_loglik(q, x, 1) == pytest.approx(lap, abs=1e-8)
    v = [nested_agq_neg_loglik(q, x, n) for n in (5, 10, 20)]
    assert abs(v[1] - v[2]) < 1e-4 and abs(v[0] - v[2]) < 1e-2


def test_ratings_and_nagq(verdicts):
    d = simulate(n=20, P=3, K=3, J=5, seed=5)
    lap = cj.compare_models(d, method="ordinal")
    agq = cj.compare_models(d, method="ordinal", nagq=5)
    assert (lap.score_means["quantity"] == "expected_score").all()
    assert agq.fit.diagnostics["integration"] == "nested AGQ 5"
    gap = np.abs(lap.differences["difference"].to_numpy() - agq.differences["difference"].to_numpy())
    assert np.max(gap / agq.differences["std_error"].to_numpy()) < 0.05
