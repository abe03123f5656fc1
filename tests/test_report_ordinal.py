"""cj.report on a latent-scale (ordinal ML) fit: the components say which scale they are on, the ordinal plot is
drawn, and the strategies come from simulation of the fitted model (not Eqs. 3-5, which hold for the linear model
only), with the allocation of the one optimiser."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

import cjstats as cj  # noqa: E402
from ordinal_sim import simulate_latent  # noqa: E402


def _section(html: str, key: str) -> str:
    start = html.index(f'<section id="{key}">')
    return html[start:html.index("</section>", start)]


@pytest.fixture(scope="module")
def html():
    df = simulate_latent(40, [-0.3, 0.0, 0.3], [-1.0, -0.3, 0.4, 1.0], 0.8, seed=3)
    return cj.report(cj.read_scores(df), method="ordinal", comparisons=None, subsample_reps=20)


def test_components_are_labelled_latent_with_the_ordinal_plot(html):
    sec = _section(html, "components")
    assert "Variances on the latent scale of the cumulative-link model" in sec
    assert 'alt="ordinal fit"' in sec
    assert "Variances in score points squared" not in sec


def test_strategies_are_simulated_from_the_latent_model(html):
    sec = _section(html, "strategies")
    assert "simulates new studies of the table" in sec and "size from the fitted model" in sec
    assert 'alt="strategy curves"' not in sec
    rows = re.findall(r"<td[^>]*>(all|random|cyclic)</td>", sec)
    assert rows.count("all") == 1 and rows.count("random") == 2 and rows.count("cyclic") == 2   # k = 1, 2 of K = 3


def test_allocation_uses_the_simulation(html):
    sec = _section(html, "allocation")
    assert "predictive simulation of the cumulative-probit model" in sec
    assert "Recommended for m at budget" in sec
