"""cjstats.plots on the bundled real data: each figure's artists carry the numbers of the result it drew."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

import cjstats as cj  # noqa: E402
from cjstats import plots as cp  # noqa: E402
from cjstats.exceptions import CjstatsError  # noqa: E402


@pytest.fixture(scope="module")
def hanna():
    return cj.datasets.load("hanna", composite=True, keep_sentinels=True)


@pytest.fixture(scope="module")
def anova_fit(hanna):
    return cj.estimate(hanna, method="anova")


def _by_gid(fig, prefix):
    return [a for ax in fig.axes for a in ax.get_children() if (a.get_gid() or "").startswith(prefix)]


class TestJudgeBiasHeatmap:
    def test_cells_equal_judge_table_deviations_from_the_panel(self, hanna):
        fig = cp.judge_bias_heatmap(hanna)
        t = cj.judge_table(hanna).table
        panel = t[t["judge"] == "panel"].set_index("model")["mean"]
        expected = (t[t["judge"] != "panel"].assign(dev=lambda d: d["mean"] - d["model"].map(panel))
                    .pivot(index="model", columns="judge", values="dev"))
        ax = fig.axes[0]
        models = [tick.get_text() for tick in ax.get_yticklabels()]
        judges = [tick.get_text() for tick in ax.get_xticklabels()]
        cells = np.asarray(ax.images[0].get_array())
        np.testing.assert_allclose(cells, expected.loc[models, judges].to_numpy(), rtol=0, atol=1e-12)
        # every cell annotated with its value, and the colour map centred at 0
        assert len(ax.texts) == cells.size
        assert ax.images[0].norm.vcenter == 0.0

    def test_the_judge_table_result_draws_the_same_cells_as_its_table(self, hanna):
        from_table = np.asarray(cp.judge_bias_heatmap(hanna).axes[0].images[0].get_array())
        from_result = np.asarray(cp.judge_bias_heatmap(cj.judge_table(hanna)).axes[0].images[0].get_array())
        np.testing.assert_array_equal(from_result, from_table)

    def test_fit_cells_equal_judge_offsets(self, anova_fit):
        fig = cp.judge_bias_heatmap(anova_fit)
        ax = fig.axes[0]
        models = [tick.get_text() for tick in ax.get_yticklabels()]
        judges = [tick.get_text() for tick in ax.get_xticklabels()]
        off = anova_fit.judge_offsets.pivot(index="model", columns="judge", values="estimate")
        np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), off.loc[models, judges].to_numpy(),
                                   atol=1e-12)
        assert "judge" in ax.get_xlabel() and "score points" in fig.axes[1].get_ylabel()

    def test_several_criteria_without_choice_is_one_sentence(self):
        scores = cj.datasets.load("hanna", keep_sentinels=True)
        with pytest.raises(CjstatsError, match="criterion="):
            cp.judge_bias_heatmap(scores)


class TestStrategyCurves:
    def test_line_heights_equal_strategy_variance_sd(self, anova_fit):
        fig = cp.strategy_curves(anova_fit, model="GPT")
        est = anova_fit.estimates(model="GPT")
        kt, n = 5, 96
        for s in ("all", "random", "cyclic"):
            (line,) = _by_gid(fig, f"line:{s}")
            x, y = line.get_data()
            want = [math.sqrt(cj.strategy_variance(s, s2_generation=0.0, s2_residual=est["residual"],
                                                   s2_judge_panel=est["judge_panel"], budget=int(b), n=n,
                                                   k_total=kt)) for b in x]
            np.testing.assert_allclose(y, want, rtol=1e-12)
            # budgets below K_tot (fewer calls than judges, where CyclicJudge matters most) are drawn too
            assert list(x) == [1, 2, 3, 4, *(kt * j for j in range(1, 11))]
        assert "not identifiable" in fig.axes[0].get_title()      # m = 1 lower bound is said, not hidden

    def test_subsampling_points_and_exact_lines(self):
        pool = cj.datasets.load("hanna", eval_prompt="as_generation", keep_sentinels=True)
        sub = cj.subsample_strategies(pool, model="GPT", criterion="Coherence", reps=400, seed=0)
        fig = cp.strategy_curves(sub)
        for s, part in sub.groupby("strategy"):
            (line,) = _by_gid(fig, f"line:{s}")
            np.testing.assert_allclose(line.get_ydata(), np.sqrt(part.sort_values("budget")["predicted"]))
            (points,) = _by_gid(fig, f"points:{s}")
            np.testing.assert_allclose(points.get_ydata(), np.sqrt(part.sort_values("budget")["variance"]))

    def test_single_judge_design_is_refused_in_one_sentence(self, anova_fit):
        one = dataclasses.replace(anova_fit, design=anova_fit.design.assign(n_judges=1))
        with pytest.raises(CjstatsError, match="at least 2 judges") as e:
            cp.strategy_curves(one, model="GPT")
        assert str(e.value).count(". ") == 0


def test_forest_points_are_the_estimates_of_every_fit(hanna, anova_fit):
    reml = cj.estimate(hanna, method="reml")
    fig = cp.components_forest({"anova": anova_fit, "reml": reml}, components=["scenario", "judge_panel"])
    for label, fit in (("anova", anova_fit), ("reml", reml)):
        for comp in ("scenario", "judge_panel"):
            xs = np.concatenate([np.asarray(a.get_xdata()) for a in _by_gid(fig, f"estimate:{comp}:{label}")
                                 + _by_gid(fig, f"boundary:{comp}:{label}")])
            t = fit.components[fit.components["component"] == comp]
            np.testing.assert_allclose(np.sort(xs), np.sort(t["estimate"].to_numpy()))
    assert fig.axes[0].get_xlabel() == "score points²"


def test_latent_fits_are_labelled_in_latent_units():
    """An ordinal fit's variances are on the latent scale (residual fixed by the link), not in score points:
    the forest and the posterior plot say which scale, and a forest mixing the two scales says both."""
    from cjstats.studies.simulate import panel_offsets, simulate_ordinal_scores

    df = simulate_ordinal_scores(30, 1, 3, s2a=0.5, s2b=0.0, gamma=panel_offsets(3, 0.3),
                                 cuts=np.array([-1.0, 0.0, 1.0]), seed=4, link="probit")
    ml = cj.estimate(df, method="ordinal")
    fig = cp.components_forest(ml, components=["scenario"])
    assert fig.axes[0].get_xlabel() == "latent units² (probit)"
    gauss = cj.estimate(df, method="anova")
    fig = cp.components_forest({"ordinal": ml, "anova": gauss}, components=["scenario"])
    assert fig.axes[0].get_xlabel() == "latent units² (probit) / score points²"
    pytest.importorskip("nutpie")
    pytest.importorskip("arviz_plots")
    bayes = cj.estimate(df, method="bayes", likelihood="ordinal", draws=100, tune=100, chains=2, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = cp.posterior(bayes, components=["scenario"])
    assert {a.get_xlabel() for a in fig.axes if a.get_xlabel()} == {"latent units² (logit)"}


def test_frontier_marks_the_recommendation_and_its_interval(anova_fit):
    alloc = cj.optimise(anova_fit, budget=480, model="GPT")
    fig = cp.allocation_frontier(alloc)
    (star,) = _by_gid(fig, "recommended")
    assert star.get_ydata()[0] == pytest.approx(alloc.recommendation["se"])
    band = _by_gid(fig, "band:0")[0].get_segments()[0]
    np.testing.assert_allclose(band[:, 1], np.sqrt([alloc.table["variance_lower"].iloc[0],
                                                   alloc.table["variance_upper"].iloc[0]]))


def test_the_paired_frontier_draws_each_schedule_and_the_interval_of_the_difference():
    from cjstats.studies.simulate_joint import simulate_joint

    f = simulate_joint(n=30, m=2, mu=[0, 0.2], gamma=[-0.5, 0, 0.5], s2_scenario=0.3, s2_model_scenario=0.2,
                       s2_generation=0.1, s2_residual=0.4, rng=5)
    alloc = cj.optimise(cj.fit_joint(f), budget=240, target="difference")
    fig = cp.allocation_frontier(alloc)
    for strategy in ("cyclic", "all", "random"):
        for schedule in ("shared", "independent"):
            (line,) = _by_gid(fig, f"frontier:{strategy}:{schedule}")
            part = alloc.designs[(alloc.designs["strategy"] == strategy) & (alloc.designs["schedule"] == schedule)]
            assert np.asarray(line.get_ydata()).min() == pytest.approx(part["se"].min())
            assert line.get_linestyle() == ("--" if schedule == "independent" else "-")
    band = _by_gid(fig, "band:0")[0].get_segments()[0]
    np.testing.assert_allclose(band[:, 1], np.sqrt([alloc.table["variance_lower"].iloc[0],
                                                   alloc.table["variance_upper"].iloc[0]]))
    assert fig.axes[0].get_ylabel() == "predicted SE of the difference (score points)"


class TestPosterior:
    def test_anova_fit_is_refused_in_one_sentence(self, anova_fit):
        with pytest.raises(CjstatsError, match="'anova' backend does not have"):
            cp.posterior(anova_fit, model="GPT")

    def test_densities_and_interval_match_the_fit(self, hanna):
        pytest.importorskip("arviz_plots")
        pytest.importorskip("pymc")
        fit = cj.estimate(hanna.subset(models=["GPT"]), method="bayes", draws=300, tune=300, chains=2, seed=1)
        fig = cp.posterior(fit)
        titles = [ax.get_title().split("\n")[0] for ax in fig.axes]
        assert titles == ["scenario", "residual", "judge_panel", "judge_population"]
        t = fit.components.set_index("component")
        for ax in fig.axes:
            c = ax.get_title().split("\n")[0]
            xs = [np.asarray(ln.get_xdata(), dtype=float) for ln in ax.get_lines()]
            ci = min(xs, key=len)                       # the interval is the 2-point line
            # both are the fit's equal-tailed quantiles of the same draws; arviz and cjstats may use a
            # different quantile rule, a difference below 1/300 of the posterior range
            span = max(x.max() for x in xs) - min(x.min() for x in xs)
            np.testing.assert_allclose(np.sort(ci), [t.at[c, "lower"], t.at[c, "upper"]], atol=span / 300)


def test_rank_plot_draws_rank_intervals():
    ranks = pd.DataFrame({"model": ["a", "b", "c"], "mean": [3.1, 2.9, 2.0], "rank": [1, 2, 3],
                          "rank_lower": [1, 1, 3], "rank_upper": [2, 2, 3], "p_best": [0.7, 0.3, 0.0]})
    comparison = SimpleNamespace(ranks=ranks, differences=pd.DataFrame())
    fig = cp.rank_plot(comparison)
    seg = _by_gid(fig, "rank_interval")[0].get_segments()
    assert [(s[0, 0], s[1, 0]) for s in seg] == [(1, 2), (1, 2), (3, 3)]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["a", "b", "c"]
    with pytest.raises(CjstatsError, match="rank_plot needs"):
        cp.rank_plot(SimpleNamespace(ranks=ranks.drop(columns="p_best")))


def test_coverage_plot_draws_coverage_with_mc_band():
    rows = [{"design": d, "method": m, "component": c, "coverage": cov, "coverage_mcse": 0.005,
             "replicates": 2000} for d, cov in (("n=20", 0.93), ("n=80", 0.95)) for m in ("anova", "reml")
            for c in ("scenario", "judge_panel")]
    study = SimpleNamespace(measures=pd.DataFrame(rows))
    fig = cp.coverage_plot(study)
    (pts,) = _by_gid(fig, "cov:scenario:anova")
    assert sorted(pts.get_xdata()) == [0.93, 0.95]
    band = _by_gid(fig, "mc_band")[0]
    half = 2 * math.sqrt(0.95 * 0.05 / 2000)
    lo, hi = band.get_x(), band.get_x() + band.get_width()
    assert lo == pytest.approx(0.95 - half) and hi == pytest.approx(0.95 + half)


def test_without_matplotlib_a_plot_names_the_extra_to_install():
    import subprocess
    import sys

    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "import cjstats as cj\n"
            "try:\n    cj.plots.judge_bias_heatmap(cj.datasets.load('hanna', composite=True))\n"
            "except cj.CjstatsError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout == ("judge_bias_heatmap requires package(s): matplotlib. Install them with "
                        "pip install 'cjstats[plots]'.\n"), r.stderr
