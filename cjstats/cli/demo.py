"""``cjstats demo``: the whole pipeline on a bundled dataset (mirrors :func:`cjstats.reporting.text.demo_report`)."""

from __future__ import annotations

import click

from cjstats.cli._app import bayes_kwargs, bayes_options, method_option
from cjstats.cli._ordinal_choice import refuse_ordinal


@click.command(short_help="Run the whole pipeline on bundled real data and print a report.")
@click.option("--dataset", default="hanna", show_default=True, help="Bundled dataset: hanna or mentalalign.")
@method_option
@bayes_options
def demo(dataset: str, method: str, draws: int | None, chains: int | None, tune: int | None) -> None:
    """Design, components with intervals, judge offsets, F-tests and per-judge rankings on bundled data.

    --method auto (the default) fits the ANOVA on a complete balanced dataset (hanna) and REML on one with
    missing judge calls (mentalalign), and says so.
    """
    from cjstats.reporting.text import demo_report

    sampling = bayes_kwargs(method == "bayes", draws=draws, chains=chains, tune=tune)
    click.echo(demo_report(dataset, method=method, **sampling))


# --method ordinal: one sentence saying why not here and what to use instead (issue 22)
refuse_ordinal(demo,
               'demo runs the Gaussian pipeline on a bundled table; fit the ordinal model to one with cjstats '
               'decompose --dataset mentalalign --method ordinal')
