"""rank_plot and coverage_plot on the real result types (compare_models, simulation_study), not stand-ins."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cjstats as cj

pytest.importorskip("matplotlib")


def _by_gid(fig, gid):
    return [a for ax in fig.axes for a in ax.get_children() if a.get_gid() == gid]


def test_rank_plot_draws_the_rank_intervals_of_a_real_comparison():
    scores = cj.datasets.load("mentalalign", composite=True)
    comparison = cj.compare_models(scores, method="anova", incomplete="drop")
    fig = cj.plots.rank_plot(comparison)
    seg = _by_gid(fig, "rank_interval")[0].get_segments()
    drawn = sorted((s[0, 0], s[1, 0]) for s in seg)
    r = comparison.ranks
    assert drawn == sorted(zip(r["rank_lower"].astype(float), r["rank_upper"].astype(float)))


def test_coverage_plot_band_ignores_a_method_that_failed_in_every_replicate():
    # anova refuses incomplete data by default, so under MCAR it fails in every replicate and has no coverage;
    # the Monte Carlo band must come from the replicates that were counted (20), not from the failed rows (0)
    truth = cj.Truth.table3(["GPT"])
    study = cj.simulation_study(truth, [cj.Design(n=10, m=2, k=4, misspec={"mcar": 0.1})], ["anova", "reml"], 20,
                                seed=2)
    s = study.measures
    assert (s.loc[s["method"] == "anova", "failure_rate"] == 1).all()
    fig = cj.plots.coverage_plot(study)
    band = _by_gid(fig, "mc_band")[0]
    half = 2 * math.sqrt(0.95 * 0.05 / 20)
    assert band.get_x() == pytest.approx(0.95 - half) and band.get_width() == pytest.approx(2 * half)
    (pts,) = _by_gid(fig, "cov:residual:reml")
    assert np.allclose(pts.get_xdata(), s.query("method == 'reml' and component == 'residual'")["coverage"])
