"""``cjstats demo``: the whole pipeline on the bundled HANNA slice (mirrors :func:`cjstats.reporting.text.demo_report`)."""

from __future__ import annotations

import click


@click.command(short_help="Run the whole pipeline on bundled real data and print a report.")
@click.option("--dataset", default="hanna", show_default=True, help="Bundled dataset.")
@click.option("--method", type=click.Choice(["anova", "reml", "bayes"]), default="anova", show_default=True)
def demo(dataset: str, method: str) -> None:
    """Design, components with intervals, judge offsets, F-tests and per-judge rankings on bundled data."""
    from cjstats.reporting.text import demo_report

    click.echo(demo_report(dataset, method=method))
