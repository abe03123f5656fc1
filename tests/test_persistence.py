"""Every public result survives pickle and deepcopy (and a fit survives save/load) with equal frames and contrasts.

A result that held a read-only mapping view or a local closure could not be cached, sent to a worker process or
deep-copied (issue 20); these tests build one of each result on small fixed-seed tables and round-trip it.
"""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from sim_helpers import table3_frame as _sim


@pytest.fixture(scope="module")
def scores():
    return cj.read_scores(pd.concat([_sim(10, 2, 4, 1, "Qwen"), _sim(10, 2, 4, 2, "GPT"),
                                     _sim(10, 2, 4, 3, "Qwen", as_model="Q2")], ignore_index=True))


def _frames(r):
    """Every DataFrame attribute of a result (and of the fit it carries), by name."""
    out = {}
    names = getattr(type(r), "__dataclass_fields__", None) or vars(r)
    for name in names:
        v = getattr(r, name, None)
        if isinstance(v, pd.DataFrame):
            out[name] = v
        elif isinstance(v, np.ndarray):
            out[name] = pd.DataFrame(v.reshape(v.shape[0], -1)) if v.ndim else pd.DataFrame([v])
    if hasattr(r, "to_frame"):
        out["to_frame()"] = r.to_frame()
    return out


def _assert_same(a, b):
    assert type(a) is type(b)
    fa, fb = _frames(a), _frames(b)
    assert fa.keys() == fb.keys() and fa
    for name in fa:
        pd.testing.assert_frame_equal(fa[name], fb[name], check_exact=True, obj=name)


RESULTS = ["anova", "reml", "joint_anova", "joint_reml", "comparison", "self_preference", "judge_table",
           "allocation", "study", "agreement", "ppi"]


@pytest.fixture(scope="module")
def results(scores):
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["anova"] = cj.estimate(scores, "anova")
        out["reml"] = cj.estimate(scores, "reml")
        out["joint_anova"] = cj.fit_joint(scores, "anova")
        out["joint_reml"] = cj.fit_joint(scores, "reml")
        out["comparison"] = cj.compare_models(scores, fit=out["joint_anova"], seed=1)
        out["self_preference"] = cj.self_preference(scores, {scores.judges[0]: ["Qwen"]}, fit=out["joint_anova"])
        out["judge_table"] = cj.judge_table(scores)
        out["allocation"] = cj.optimise(out["anova"], budget=400, model="Qwen", n_draws=200, seed=0)
        out["study"] = cj.simulation_study(cj.Truth.table3(["GPT"]), [cj.Design(n=8, m=2, k=3)], ["anova"], 3,
                                           seed=1)
        humans = cj.datasets.load("hanna", humans=True)
        out["agreement"] = cj.judge_agreement(humans)
        out["ppi"] = cj.ppi_means(cj.datasets.load("mentalalign", humans=True), n_labels=100, seed=0)
    return out


@pytest.mark.parametrize("name", RESULTS)
def test_pickle_round_trip(results, name):
    r = results[name]
    _assert_same(r, pickle.loads(pickle.dumps(r)))


@pytest.mark.parametrize("name", RESULTS)
def test_deepcopy(results, name):
    r = results[name]
    _assert_same(r, copy.deepcopy(r))


@pytest.mark.parametrize("name", ["joint_anova", "joint_reml"])
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_joint_contrasts_survive(results, name, how):
    fit = results[name]
    back = pickle.loads(pickle.dumps(fit)) if how == "pickle" else copy.deepcopy(fit)
    for view in ("panel", "population"):
        assert back.contrast("mu[Qwen] - mu[GPT]", view) == fit.contrast("mu[Qwen] - mu[GPT]", view)
        a, b = fit.model_mean_covariance(view), back.model_mean_covariance(view)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1] == b[1]


@pytest.mark.parametrize("name", ["anova", "reml"])
def test_per_model_contrasts_survive_pickle(results, name, scores):
    fit = results[name]
    back = pickle.loads(pickle.dumps(fit))
    j = scores.judges
    spec = f"gamma[{j[0]}] - gamma[{j[1]}]"
    assert back.contrast(spec, model="GPT") == fit.contrast(spec, model="GPT")


@pytest.mark.parametrize("name", RESULTS)
def test_save_load_round_trip(results, name, tmp_path):
    r = results[name]
    out = r.save(tmp_path / name)
    assert (out / "result.json").exists() and not list(out.rglob("*.pkl"))
    back = type(r).load(out)
    _assert_same(r, back)


@pytest.mark.parametrize("name", ["anova", "reml"])
def test_saved_fits_give_the_same_contrasts(results, name, scores, tmp_path):
    fit = results[name]
    back = type(fit).load(fit.save(tmp_path / name))
    spec = f"gamma[{scores.judges[0]}] - gamma[{scores.judges[1]}]"
    assert back.contrast(spec, model="GPT") == fit.contrast(spec, model="GPT")
    assert back.contrast("mu[Qwen] - mu[GPT]") == fit.contrast("mu[Qwen] - mu[GPT]")


@pytest.mark.parametrize("name", ["joint_anova", "joint_reml"])
def test_saved_joint_fits_give_the_same_contrasts(results, name, tmp_path):
    fit = results[name]
    back = type(fit).load(fit.save(tmp_path / name))
    for view in ("panel", "population"):
        assert back.contrast("mu[Qwen] - mu[GPT]", view) == fit.contrast("mu[Qwen] - mu[GPT]", view)
        np.testing.assert_array_equal(back.model_mean_covariance(view)[0], fit.model_mean_covariance(view)[0])


def test_load_refuses_a_directory_that_is_not_a_result(tmp_path):
    with pytest.raises(cj.CjstatsError, match="holds no saved result"):
        cj.VarianceComponents.load(tmp_path)


def test_save_refuses_to_overwrite_other_files(results, tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(cj.CjstatsError, match="exists and is not a saved result"):
        results["anova"].save(tmp_path)
    assert (tmp_path / "keep.txt").exists()


def test_every_result_class_uses_the_base():
    from cjstats.estimators.judges import JudgeTable
    from cjstats.results.base import Result

    for cls in (cj.VarianceComponents, cj.JointFit, cj.ModelComparison, cj.SelfPreference, cj.Agreement,
                cj.PPIMeans, cj.StudyResult, cj.Allocation, JudgeTable):
        assert issubclass(cls, Result), cls


@pytest.mark.parametrize("name", RESULTS)
def test_every_result_summarises_in_four_formats(results, name):
    s = results[name].summary()
    for render in (s.as_text, s.as_markdown, s.as_latex, s.as_html):
        out = render()
        assert isinstance(out, str) and out.strip()
    assert str(s) == s.as_text()
    assert isinstance(results[name]._repr_html_(), str)
    assert isinstance(results[name].to_frame(), pd.DataFrame)
