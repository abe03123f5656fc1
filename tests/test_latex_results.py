"""Every result a paper quotes renders as a booktabs LaTeX table carrying its numbers."""

from __future__ import annotations

import pytest

import cjstats as cj


def _booktabs(tex: str) -> None:
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex


@pytest.fixture(scope="module")
def hanna():
    return cj.datasets.load("hanna", composite=True, keep_sentinels=True)


def test_model_comparison_and_self_preference_as_latex(hanna):
    res = cj.compare_models(hanna, method="anova")
    tex = res.as_latex()
    _booktabs(tex)
    top = res.ranks.iloc[0]
    assert top["model"] in tex and f"{top['mean']:.3f}" in tex and tex.count("\\begin{tabular}") == 2
    sp = cj.self_preference(hanna, {"ChatGPT": "GPT"}, fit=res.fit)
    tex = sp.as_latex()
    _booktabs(tex)
    assert f"{sp.contrasts['estimate'].iloc[0]:.3f}" in tex


def test_agreement_and_ppi_as_latex():
    scores = cj.datasets.load("hanna", composite=True, humans=True, keep_sentinels=True).subset(models=["GPT", "GPT-2", "Human"])
    agree = cj.judge_agreement(scores)
    tex = agree.as_latex()
    _booktabs(tex)
    panel = agree.table[agree.table["judge"] == "panel"].iloc[0]
    assert f"{panel['bias']:.3f}" in tex
    ppi = cj.ppi_means(scores, n_labels=40, seed=0)
    tex = ppi.as_latex()
    _booktabs(tex)
    assert f"{ppi.means['estimate'].iloc[0]:.3f}" in tex and tex.count("\\begin{tabular}") == 2
