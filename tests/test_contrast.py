"""Covariance-carrying results: any linear contrast of the location estimates through one generic method,
checked against the hand formulas of the balanced ANOVA (paper App. C), and the estimand registry."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import cjstats as cj
from cjstats.results.components import ESTIMANDS, ComponentRow, register_estimand


@pytest.fixture(scope="module")
def balanced():
    from cjstats.studies.simulate import panel_offsets, simulate_scores

    return cj.read_scores(simulate_scores(n=12, m=3, k=4, s2_scenario=1.5, s2_generation=0.3, s2_residual=1.2,
                                          judge_offsets=panel_offsets(4, 0.4), mu=6.0, model="Qwen", seed=1))


@pytest.fixture(scope="module")
def anova_fit(balanced):
    # the hand formulas below are the paper's model (MS_W as the error of the judge offsets)
    return cj.estimate(balanced, "anova", scenario_judge=False)


class TestAnovaContrastsEqualTheHandFormulas:
    def test_difference_of_two_judge_offsets(self, balanced, anova_fit):
        d = anova_fit.diagnostics["Qwen"]
        n, m = d["n"], d["m"]
        j = balanced.judges
        off = anova_fit.judge_offsets.set_index("judge")["estimate"]
        row = anova_fit.contrast({f"gamma[{j[0]}]": 1.0, f"gamma[{j[2]}]": -1.0}).to_frame().iloc[0]
        # gamma_a - gamma_b = J_a - J_b: variance 2 MS_W/(nm), df_W
        se = math.sqrt(2.0 * d["ms_residual"] / (n * m))
        t = stats.t.ppf(0.975, d["df_residual"])
        est = off[j[0]] - off[j[2]]
        assert row["estimate"] == pytest.approx(est, rel=1e-12)
        assert row["std_error"] == pytest.approx(se, rel=1e-12)
        assert row["df"] == pytest.approx(d["df_residual"], rel=1e-12)
        assert (row["lower"], row["upper"]) == pytest.approx((est - t * se, est + t * se), rel=1e-12)
        assert row["p_value"] == pytest.approx(2 * stats.t.sf(abs(est / se), d["df_residual"]), rel=1e-10)

    def test_one_judges_mean_combines_two_mean_squares_with_welch_satterthwaite_df(self, balanced, anova_fit):
        d = anova_fit.diagnostics["Qwen"]
        n, m, k = d["n"], d["m"], d["k"]
        j = balanced.judges[1]
        row = anova_fit.contrast({"mu": 1.0, f"gamma[{j}]": 1.0}, level=0.9).to_frame().iloc[0]
        v1 = d["ms_scenario"] / (n * m * k)                   # Var(G)
        v2 = d["ms_residual"] * (k - 1) / (k * n * m)         # Var(gamma_l)
        df = (v1 + v2) ** 2 / (v1**2 / d["df_scenario"] + v2**2 / d["df_residual"])
        y = balanced.to_frame()
        est = y.loc[y["judge"] == j, "score"].mean()          # G + gamma_l = J_l
        t = stats.t.ppf(0.95, df)
        assert row["estimate"] == pytest.approx(est, rel=1e-12)
        assert row["std_error"] == pytest.approx(math.sqrt(v1 + v2), rel=1e-12)
        assert row["df"] == pytest.approx(df, rel=1e-12)
        assert row["upper"] - row["lower"] == pytest.approx(2 * t * math.sqrt(v1 + v2), rel=1e-12)

    def test_mu_alone_reproduces_the_components_row(self, anova_fit):
        row = anova_fit.contrast({"mu": 1}).to_frame().iloc[0]
        mu = anova_fit.components.set_index("component").loc["mu"]
        assert (row["estimate"], row["std_error"], row["lower"], row["upper"]) == pytest.approx(
            (mu["estimate"], mu["std_error"], mu["lower"], mu["upper"]), rel=1e-12)

    def test_difference_of_two_models_adds_independent_variances(self, small_balanced_scores):
        fit = cj.estimate(small_balanced_scores, "anova")
        row = fit.contrast({("Qwen", "mu"): 1, ("GPT", "mu"): -1}).to_frame().iloc[0]
        a, b = (fit.contrast({"mu": 1}, model=mm).to_frame().iloc[0] for mm in ("Qwen", "GPT"))
        va, vb = a["std_error"] ** 2, b["std_error"] ** 2
        assert row["estimate"] == pytest.approx(a["estimate"] - b["estimate"], rel=1e-12)
        assert row["std_error"] == pytest.approx(math.sqrt(va + vb), rel=1e-12)
        assert row["df"] == pytest.approx((va + vb) ** 2 / (va**2 / a["df"] + vb**2 / b["df"]), rel=1e-12)


def test_reml_contrasts_match_its_own_rows_on_unbalanced_data():
    from cjstats.studies.simulate import simulate_scores

    frame = cj.read_scores(simulate_scores(n=15, m=2, k=4, s2_scenario=1.0, s2_generation=0.3,
                                                       s2_residual=1.0, judge_offsets=np.array([-.5, 0, .2, .3]),
                                                       missing=0.2, seed=4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = cj.estimate(frame, "reml", interval="none")
    off = fit.judge_offsets.set_index("judge")
    diag = next(iter(fit.diagnostics.values()))
    for i, j in enumerate(frame.judges):
        row = fit.contrast({f"gamma[{j}]": 1}).to_frame().iloc[0]
        assert row["std_error"] == pytest.approx(off.loc[j, "std_error"], rel=1e-12)
        assert row["df"] == pytest.approx(diag["df_gamma"][i], rel=1e-9)
        assert (row["lower"], row["upper"]) == pytest.approx((off.loc[j, "lower"], off.loc[j, "upper"]), rel=1e-9)
    cov = fit.parameter_covariance()
    assert list(cov.index) == ["mu", *(f"gamma[{j}]" for j in frame.judges)]
    assert np.allclose(cov.to_numpy(), cov.to_numpy().T)


def test_unknown_parameter_is_one_sentence(anova_fit):
    with pytest.raises(cj.CjstatsError, match=r"^Group 'Qwen' has no parameter 'gamma\[nobody\]'"):
        anova_fit.contrast({"gamma[nobody]": 1})


class TestEstimandRegistry:
    def test_new_names_register_with_their_meaning(self):
        assert {"judge_model", "model_scenario"} <= set(ESTIMANDS)
        est = register_estimand("judge_family_bias", "mean offset of a judge on its own family's models")
        assert ESTIMANDS["judge_family_bias"] is est
        assert ComponentRow("judge_family_bias", 0.1).component == "judge_family_bias"
        del ESTIMANDS["judge_family_bias"]

    def test_unregistered_names_are_refused(self):
        with pytest.raises(cj.CjstatsError, match="register it with"):
            ComponentRow("judge_modle", 0.1)
