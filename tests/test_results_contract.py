"""One contrast for every fit: the string, mapping and array forms agree with each other and with hand formulas,
and a string that cannot be read is one sentence."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import cjstats as cj
from cjstats.results.contrast import CONTRAST_COLUMNS, ContrastResult, parse_contrast
from sim_helpers import table3_frame as _sim


@pytest.fixture(scope="module")
def scores():
    return cj.read_scores(pd.concat([_sim(8, 2, 3, 11, "Qwen"), _sim(8, 2, 3, 12, "GPT"),
                                     _sim(8, 2, 3, 13, "Qwen", as_model="Q2")], ignore_index=True))


@pytest.fixture(scope="module")
def fit(scores):
    return cj.estimate(scores, "anova", scenario_judge=False)


@pytest.fixture(scope="module")
def joint(scores):
    return cj.fit_joint(scores, "anova")


def test_parse_reads_weights_names_and_labels():
    assert parse_contrast("gamma[a b] - 0.5*mu[x-1] + mu + 2 eta[x, a]") == [
        (1.0, "gamma", ("a b",)), (-0.5, "mu", ("x-1",)), (1.0, "mu", ()), (2.0, "eta", ("x", "a"))]


@pytest.mark.parametrize("bad", ["gamma[a] gamma[b]", "gamma[a] -- gamma[b]", "gamma[a", "3 *", "", "gamma[] - mu"])
def test_a_bad_string_is_one_sentence(fit, bad):
    with pytest.raises(cj.CjstatsError) as e:
        fit.contrast(bad, model="Qwen")
    msg = str(e.value)
    assert msg.count(". ") == 0 and msg.endswith(".") and "\n" not in msg


def test_unknown_names_say_what_exists(fit, joint):
    with pytest.raises(cj.CjstatsError, match=r"^The contrast 'beta\[a\]' names 'beta\[a\]', which a per-model"):
        fit.contrast("beta[a]", model="Qwen")
    with pytest.raises(cj.CjstatsError, match=r"which this fit does not have \(models: Q2, GPT, Qwen\)|models: "):
        joint.contrast("mu[nobody] - mu[GPT]")


class TestPerModelFit:
    def test_string_equals_mapping_and_array(self, fit, scores):
        a, b = scores.judges[0], scores.judges[2]
        s = fit.contrast(f"gamma[{a}] - gamma[{b}]", model="GPT")
        m = fit.contrast({f"gamma[{a}]": 1, f"gamma[{b}]": -1}, model="GPT")
        arr = np.zeros(1 + len(scores.judges))
        arr[1], arr[3] = 1, -1
        x = fit.contrast(arr, model="GPT")
        for r in (m, x):
            assert (r.estimate, r.std_error, r.df, r.p_value, r.lower, r.upper) == (
                s.estimate, s.std_error, s.df, s.p_value, s.lower, s.upper)
        assert isinstance(s, ContrastResult) and s.label == f"gamma[{a}] - gamma[{b}]"
        assert fit.t_test(f"gamma[{a}] - gamma[{b}]", model="GPT") == s

    def test_string_equals_the_hand_formula(self, fit, scores):
        # gamma_a - gamma_b = J_a - J_b: variance 2 MS_W/(nm) on the residual df (paper App. C)
        d = fit.diagnostics["GPT"]
        a, b = scores.judges[0], scores.judges[1]
        y = scores.to_frame()
        y = y[y["model"] == "GPT"]
        est = y.loc[y["judge"] == a, "score"].mean() - y.loc[y["judge"] == b, "score"].mean()
        se = math.sqrt(2 * d["ms_residual"] / (d["n"] * d["m"]))
        r = fit.contrast(f"gamma[{a}] - gamma[{b}]", model="GPT", level=0.9)
        t = stats.t.ppf(0.95, d["df_residual"])
        assert r.estimate == pytest.approx(est, rel=1e-12)
        assert r.std_error == pytest.approx(se, rel=1e-12)
        assert r.df == pytest.approx(d["df_residual"], rel=1e-12)
        assert (r.lower, r.upper) == pytest.approx((est - t * se, est + t * se), rel=1e-12)
        assert r.statistic == pytest.approx(est / se, rel=1e-12) and r.level == 0.9

    def test_across_models_string_equals_the_tuple_mapping(self, fit):
        s = fit.contrast("mu[Qwen] - mu[GPT]")
        m = fit.contrast({("Qwen", "mu"): 1, ("GPT", "mu"): -1})
        assert (s.estimate, s.std_error, s.df) == pytest.approx((m.estimate, m.std_error, m.df), rel=1e-15)
        va, vb = (fit.contrast("mu", model=x).std_error ** 2 for x in ("Qwen", "GPT"))
        assert s.std_error == pytest.approx(math.sqrt(va + vb), rel=1e-12)

    def test_to_frame_is_one_row_with_the_columns(self, fit):
        f = fit.contrast("mu", model="Qwen").to_frame()
        assert list(f.columns) == list(CONTRAST_COLUMNS) and len(f) == 1
        mu = fit.components.query("model == 'Qwen' and component == 'mu'").iloc[0]
        assert (f["estimate"].iloc[0], f["lower"].iloc[0]) == pytest.approx((mu["estimate"], mu["lower"]), rel=1e-12)


class TestJointFit:
    def test_mu_difference_string_equals_array_and_hand_formula(self, joint, scores):
        p, k = joint.cell_means.shape
        a, b = joint.models.index("Qwen"), joint.models.index("GPT")
        c = np.zeros((p, k))
        c[a], c[b] = 1 / k, -1 / k
        s, x = joint.contrast("mu[Qwen] - mu[GPT]"), joint.contrast(c)
        assert (s.estimate, s.std_error, s.df) == (x.estimate, x.std_error, x.df)
        y = scores.to_frame()
        est = y.loc[y["model"] == "Qwen", "score"].mean() - y.loc[y["model"] == "GPT", "score"].mean()
        d = joint.diagnostics
        se = math.sqrt(2 * d["ms"]["MS"] / (d["n"] * d["m"] * k))     # Var = 2 MS_MS/(nmk), df of MS_MS
        assert s.estimate == pytest.approx(est, rel=1e-12)
        assert s.std_error == pytest.approx(se, rel=1e-12)
        assert s.df == d["df"]["MS"]

    def test_gamma_and_interaction_names_are_their_contrasts(self, joint):
        p, k = joint.cell_means.shape
        eta = joint.cell_means
        j0, j1 = joint.judges[0], joint.judges[1]
        g = eta.mean(axis=0) - eta.mean()
        assert joint.contrast(f"gamma[{j0}] - gamma[{j1}]").estimate == pytest.approx(g[0] - g[1], abs=1e-12)
        gp = eta - eta.mean(axis=1, keepdims=True) - eta.mean(axis=0, keepdims=True) + eta.mean()
        assert joint.contrast(f"gp[GPT, {j0}]").estimate == pytest.approx(gp[joint.models.index("GPT"), 0], abs=1e-12)
        m = joint.contrast({f"gamma[{j0}]": 1, f"gamma[{j1}]": -1}, "population")
        assert m == joint.contrast(f"gamma[{j0}] - gamma[{j1}]", "population")

    @pytest.mark.parametrize("view", ["panel", "population"])
    def test_model_mean_covariance_equals_the_pairwise_contrasts(self, joint, view):
        cov, df = joint.model_mean_covariance(view)
        names = joint.models
        dfs = []
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                r = joint.contrast(f"mu[{names[i]}] - mu[{names[j]}]", view)
                assert r.std_error**2 == pytest.approx(cov[i, i] + cov[j, j] - 2 * cov[i, j], rel=1e-12)
                dfs.append(r.df)
        assert df == min(dfs)

    def test_a_bad_view_is_one_sentence(self, joint):
        with pytest.raises(cj.CjstatsError, match="view"):
            joint.contrast("mu[Qwen] - mu[GPT]", "fixed")
