"""cj.tables: the wide table and booktabs LaTeX carry the fit's numbers, standard deviations beside variances."""

from __future__ import annotations

import numpy as np
import pytest

import cjstats as cj
from cjstats import tables
from cjstats.exceptions import CjstatsError


@pytest.fixture(scope="module")
def fit():
    return cj.estimate(cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT", "XLNet"]))


def test_wide_has_sd_equal_to_sqrt_of_each_variance(fit):
    w = tables.wide(fit, stats=("estimate", "sd", "lower", "upper"))
    t = fit.components.set_index(["model", "component"])
    for model in ("GPT", "XLNet"):
        for comp in ("scenario", "residual", "judge_panel", "judge_population"):
            est = t.at[(model, comp), "estimate"]
            assert w.at[model, (comp, "estimate")] == est
            assert w.at[model, (comp, "sd")] == pytest.approx(np.sqrt(est), rel=1e-15)
            assert w.at[model, (comp, "upper")] == t.at[(model, comp), "upper"]
    assert ("mu", "sd") not in w.columns                 # mu is a mean, not a variance
    assert np.isnan(w.at["GPT", ("generation", "estimate")])     # m = 1: not identifiable stays NaN


def test_latex_is_booktabs_with_variance_interval_and_sd(fit):
    tex = tables.as_latex(fit, label="tab:vc")
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex and "\\label{tab:vc}" in tex
    row = fit.components.set_index(["model", "component"]).loc[("GPT", "judge_panel")]
    assert f"{row.estimate:.3f} [{row.lower:.3f}, {row.upper:.3f}] & {np.sqrt(row.estimate):.3f}" in tex
    assert "judge\\_panel" in tex and "generation" not in tex
    assert fit.summary().as_latex(label="tab:vc") == tex          # the fit summary renders the same table


def test_latex_of_any_frame_keeps_p_values_visible(fit):
    tex = tables.as_latex(cj.judge_f_test(cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT"])))
    assert "p\\_value" in tex and "0.000" not in tex.split("\\midrule")[1]


def test_bad_input_is_one_sentence(fit):
    with pytest.raises(CjstatsError, match="must name some of"):
        tables.wide(fit, stats=("mean",))
    with pytest.raises(CjstatsError, match="as_latex takes a VarianceComponents or a DataFrame"):
        tables.as_latex([1, 2])
