"""Figures of the human-reference and self-preference results carry the numbers of the result they draw."""

from __future__ import annotations

import numpy as np
import pytest

import cjstats as cj

pytest.importorskip("matplotlib")


def _errorbar_x(fig, gid):
    (line,) = [a for ax in fig.axes for a in ax.get_lines() if a.get_gid() == gid and a.get_marker() == "o"]
    return np.asarray(line.get_xdata(), dtype=float)


def _segments(fig, gid):
    cols = [c for ax in fig.axes for c in ax.collections if c.get_gid() == gid]
    return [(s[0, 0], s[1, 0]) for s in cols[0].get_segments()]


@pytest.fixture(scope="module")
def hanna_humans():
    return cj.datasets.load("hanna", composite=True, humans=True, keep_sentinels=True).subset(models=["GPT", "GPT-2", "Human"])


def test_agreement_plot_draws_each_judges_bias_and_interval(hanna_humans):
    a = cj.judge_agreement(hanna_humans)
    fig = cj.plots.agreement_plot(a)
    assert np.allclose(_errorbar_x(fig, "bias"), a.table["bias"])
    assert np.allclose(sorted(_segments(fig, "bias")), sorted(zip(a.table["bias_lower"], a.table["bias_upper"])))


def test_ppi_plot_draws_ppi_human_only_and_judge_only_means(hanna_humans):
    p = cj.ppi_means(hanna_humans, n_labels=40, seed=0, differences=False)
    fig = cj.plots.ppi_plot(p)
    for col in ("estimate", "human_only", "judge_only"):
        assert np.allclose(_errorbar_x(fig, f"ppi:{col}"), p.means[col])


def test_self_preference_plot_draws_the_contrasts():
    scores = cj.datasets.load("hanna", composite=True, keep_sentinels=True)
    sp = cj.self_preference(scores, {"ChatGPT": "GPT", "Llama-13B": "GPT-2"})
    fig = cj.plots.self_preference_plot(sp)
    assert np.allclose(_errorbar_x(fig, "self_preference"), sp.contrasts["estimate"])


def test_a_result_without_the_table_is_one_sentence():
    with pytest.raises(cj.CjstatsError, match="agreement_plot draws an agreement's .table"):
        cj.plots.agreement_plot(object())
