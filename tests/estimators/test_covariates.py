"""Covariates in the joint REML fit (cjstats.estimators.joint.covariates): equal to lme4 on nine simulated
tables (balanced, unbalanced, models missing from scenarios, two generations, two covariates, a covariate in a
large unit), known-truth recovery of the judges' length slopes and of the model difference at equal length, and
the input refusals.

References: tests/data/lme4_covariates (make_inputs.py, fit_lme4_covariates.R: lme4 + emmeans)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.estimators.joint.covariates import CovariateFit
from cjstats.studies.simulate_covariates import simulate_length_bias

DATA = Path(__file__).parent.parent / "data" / "lme4_covariates"
REF = json.loads((DATA / "lme4_covariates_reference.json").read_text())
NAMES = sorted(REF)


@pytest.fixture(scope="module")
def fits() -> dict[str, CovariateFit]:
    tables = {name: pd.read_csv(DATA / f"{name}.csv") for name in NAMES}
    return {name: cj.fit_joint(d, "reml", covariates=[c for c in ("length", "fluency") if c in d.columns])
            for name, d in tables.items()}


@pytest.mark.parametrize("name", NAMES)
class TestAgainstLme4:
    def test_variances(self, fits, name):
        f, r = fits[name], REF[name]
        comp = f.components.set_index("component")["estimate"]
        for c in ("scenario", "model_scenario", "residual") + (("generation",) if r["variances"]["generation"]
                                                              is not None else ()):
            assert comp[c] == pytest.approx(r["variances"][c], rel=2e-6, abs=1e-9), c

    def test_judge_slopes(self, fits, name):
        f, r = fits[name], REF[name]
        assert list(f.judges) == r["judges"]
        np.testing.assert_allclose(f.slope_values[:, 0], r["slopes"], rtol=1e-6, atol=1e-9)
        k, pk = len(f.judges), f.cell_means.size
        np.testing.assert_allclose(f.beta_cov[pk:pk + k, pk:pk + k], np.array(r["slope_cov"]), rtol=1e-5)
        if "fluency" in f.covariates:
            np.testing.assert_allclose(f.slope_values[:, 1], r["slopes_fluency"], rtol=1e-5, atol=1e-9)
            assert f.covariate_means[1] == pytest.approx(r["fluency_mean"], rel=1e-12)
            assert "and fluency = " in f.at_mean_text()
        panel = f.contrast("slope[length]")
        assert panel.estimate == pytest.approx(np.mean(r["slopes"]), rel=1e-6)
        assert panel.std_error == pytest.approx(np.sqrt(np.mean(r["slope_cov"])), rel=1e-5)

    def test_model_means_and_differences_at_mean_length(self, fits, name):
        f, r = fits[name], REF[name]
        assert f.covariate_means[0] == pytest.approx(r["length_mean"], rel=1e-12)
        np.testing.assert_allclose(f.cell_means.ravel(), r["cell_means"], rtol=1e-6)
        np.testing.assert_allclose(f.model_means(), r["emmeans"]["mean"], rtol=1e-6)
        for c, est, se in zip(r["pairs"]["contrast"], r["pairs"]["estimate"], r["pairs"]["se"]):
            a, b = (x.strip() for x in c.split(" - "))
            got = f.contrast(f"mu[{a}] - mu[{b}]")
            assert got.estimate == pytest.approx(est, rel=1e-5, abs=1e-7), c
            assert got.std_error == pytest.approx(se, rel=1e-5), c


def test_differs_from_fit_without_covariate():
    """The adjustment matters on these tables (so the lme4 comparison can fail)."""
    d = pd.read_csv(DATA / "unbalanced.csv")
    plain = cj.fit_joint(d, "reml")
    adj = cj.fit_joint(d, "reml", covariates=["length"])
    assert abs(plain.contrast("mu[m0] - mu[m2]").estimate - adj.contrast("mu[m0] - mu[m2]").estimate) > 0.05


SLOPES = np.array([0.0, 0.0, 0.006])


@pytest.fixture(scope="module")
def runs():
    out = []
    for seed in range(8):
        d = simulate_length_bias(seed=seed, slopes=SLOPES)
        f = cj.fit_joint(d, "reml", covariates=["length"])
        u = cj.fit_joint(d, "reml")
        out.append((f.slope_values[:, 0], f.contrast("mu[m0] - mu[m1]").estimate,
                    u.contrast("mu[m0] - mu[m1]").estimate, f.tests["slopes[length]"]["p_value"]))
    return out


@pytest.fixture(scope="module")
def fit():
    return cj.fit_joint(pd.read_csv(DATA / "balanced.csv"), "reml", covariates=["length"])


@pytest.fixture(scope="module")
def d():
    return pd.read_csv(DATA / "balanced.csv")


class TestKnownTruth:
    """Model m0 writes 150 tokens more than m1 at equal quality; judge j2 gives 0.006 per token (j0, j1: 0).
    Unadjusted, m0 leads by 0.006/3 x 150 = 0.3; at equal length the lead is 0."""

    SLOPES = SLOPES

    def test_slopes_recovered_within_mc_error(self, runs):
        s = np.array([r[0] for r in runs])
        mc = s.std(axis=0, ddof=1) / np.sqrt(len(s))
        assert np.all(np.abs(s.mean(axis=0) - self.SLOPES) < 4 * mc + 1e-12)
        assert np.all(s[:, 2] > 0.004)         # j2 is found rewarding length in every run

    def test_unadjusted_lead_shrinks_to_truth(self, runs):
        adj = np.array([r[1] for r in runs])
        raw = np.array([r[2] for r in runs])
        mc = lambda x: x.std(ddof=1) / np.sqrt(len(x))  # noqa: E731
        assert abs(adj.mean()) < 4 * mc(adj)                                   # truth at equal length: 0
        assert abs((raw - adj).mean() - 0.3) < 4 * mc(raw - adj)               # the bias removed: 0.3
        assert raw.mean() > 0.3 - 4 * mc(raw)

    def test_equal_slopes_rejected(self, runs):
        assert max(r[3] for r in runs) < 1e-3


@pytest.mark.slow
def test_interval_coverage_known_truth():
    """95% intervals of each judge's slope and of the adjusted difference cover the truth at the nominal rate
    (200 runs: binomial SE 1.5%)."""
    slopes = np.array([0.0, 0.002, 0.006])
    hit_s, hit_d = [], []
    for seed in range(200):
        f = cj.fit_joint(simulate_length_bias(seed=1000 + seed, slopes=slopes), "reml", covariates=["length"])
        s = f.slopes[f.slopes["judge"] != "(panel)"]
        hit_s.append(((s["lower"] <= slopes) & (slopes <= s["upper"])).to_numpy())
        c = f.contrast("mu[m0] - mu[m1]")
        hit_d.append(c.lower <= 0 <= c.upper)
    assert np.all(np.abs(np.mean(hit_s, axis=0) - 0.95) < 0.05)
    assert abs(np.mean(hit_d) - 0.95) < 0.05


class TestResult:
    def test_states_the_mean(self, fit):
        at = f"at length = {fit.covariate_means[0]:.4g}, the mean"
        assert at in fit.summary().as_text()
        mu = fit.to_frame().query("component == 'mu'")
        assert all(at in n for n in mu["note"])

    def test_slope_contrasts(self, fit):
        one = fit.contrast("slope[length, j2] - slope[length, j0]")
        assert one.estimate == pytest.approx(fit.slope_values[2, 0] - fit.slope_values[0, 0])
        assert one.df == fit.slope_df[1]
        assert fit.contrast({"slope[length, j1]": 1}).estimate == pytest.approx(fit.slope_values[1, 0])
        with pytest.raises(cj.CjstatsError, match="covariate 'nope'"):
            fit.contrast("slope[nope, j1]")
        with pytest.raises(cj.CjstatsError, match="judge 'zz'"):
            fit.contrast("slope[length, zz]")
        assert fit.contrast("mu[m0] - mu[m1]").estimate == pytest.approx(fit.model_means()[0] - fit.model_means()[1])

    def test_slopes_table_and_test(self, fit):
        assert list(fit.slopes.columns) == ["covariate", "judge", "slope", "std_error", "df", "lower", "upper",
                                            "p_value", "ci_level"]
        assert list(fit.slopes["judge"]) == [*fit.judges, "(panel)"]
        t = fit.tests["slopes[length]"]
        assert (t["df1"], t["df2"]) == (len(fit.judges) - 1, fit.slope_df[1])

    def test_pickles_and_saves(self, fit, tmp_path):
        again = pickle.loads(pickle.dumps(fit))
        np.testing.assert_array_equal(again.slope_values, fit.slope_values)
        fit.save(tmp_path / "f")
        back = CovariateFit.load(tmp_path / "f")
        assert back.contrast("slope[length, j1]").std_error == fit.contrast("slope[length, j1]").std_error

    def test_compare_models_says_equal_length(self):
        d = pd.read_csv(DATA / "balanced.csv")
        cmp = cj.compare_models(d, "reml", covariates=["length"], n_draws=2000)
        assert "at equal covariate values" in cmp.as_text()
        fit = cj.fit_joint(d, "reml", covariates=["length"])
        row = cmp.differences.iloc[0]
        assert row["difference"] == pytest.approx(fit.contrast(f"mu[{row['model_a']}] - mu[{row['model_b']}]").estimate)


class TestRefusals:
    @pytest.mark.parametrize("change, kw, match", [
        (None, dict(method="anova"), "method='reml' only"),
        (None, dict(covariates=["nope"]), "'nope' is not in the score table"),
        (None, dict(covariates="length"), "list of column names"),
        ("vary", {}, "varies within one model x scenario x generation cell"),
        ("missing", {}, "missing or infinite"),
        ("text", {}, "not numeric"),
        ("constant", {}, "is constant"),
    ])
    def test_one_sentence(self, d, change, kw, match):
        d = d.copy()
        if change == "vary":
            d.loc[0, "length"] += 1
        elif change == "missing":
            d.loc[3, "length"] = np.nan
        elif change == "text":
            d["length"] = d["length"].astype(str)
        elif change == "constant":
            d["length"] = 400
        args = {"method": "reml", "covariates": ["length"], **kw}
        with pytest.raises(cj.CjstatsError, match=match):
            cj.fit_joint(d, **args)

    def test_scores_table_has_no_covariates(self, d):
        with pytest.raises(cj.CjstatsError, match="pass the DataFrame"):
            cj.fit_joint(cj.read_scores(d), "reml", covariates=["length"])


def test_slopes_plot_marks_rewarding_judges(fit):
    import matplotlib

    matplotlib.use("Agg")
    fig = cj.plots.slopes_plot(fit, per=100)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(fit.judges)
    pts = {ln.get_gid(): ln.get_xdata() for ln in ax.get_lines() if ln.get_marker() == "o"}
    s = fit.slopes.set_index("judge")
    off = [j for j in fit.judges if s.loc[j, "lower"] > 0 or s.loc[j, "upper"] < 0]
    assert len(pts.get("rewarded", [])) == len(off)
    panel = [ln for ln in ax.get_lines() if ln.get_gid() == "panel"][0]
    assert panel.get_xdata()[0] == pytest.approx(100 * s.loc["(panel)", "slope"])
    assert "per 100 units of length" in ax.get_xlabel()
    with pytest.raises(cj.CjstatsError, match="slopes_plot"):
        cj.plots.slopes_plot(object())
    with pytest.raises(cj.CjstatsError, match="no covariate 'zz'"):
        cj.plots.slopes_plot(fit, covariate="zz")
    import matplotlib.pyplot as plt

    plt.close("all")


def test_variance_intervals_contain_estimate_and_residual_se_is_chi2(fits):
    """Wald (log scale) intervals: lower < estimate < upper, and the residual's SE ~ v sqrt(2/df_within)."""
    for f in fits.values():
        c = f.components.set_index("component")
        for comp in ("scenario", "model_scenario", "residual"):
            assert c.loc[comp, "lower"] < c.loc[comp, "estimate"] < c.loc[comp, "upper"]
        v = c.loc["residual", "estimate"]
        assert c.loc["residual", "std_error"] == pytest.approx(v * np.sqrt(2 / f.diagnostics["df_within"]), rel=0.1)
