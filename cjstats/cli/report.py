"""``cjstats report FILE -o report.html`` (or ``.pdf``): a self-contained report (mirrors :func:`cjstats.report`)."""

from __future__ import annotations

import click

from cjstats.cli._app import (
    METHODS, DataOptions, bayes_kwargs, bayes_options, data_options, load_scores, refuse_drop_options, resolve_method,
)

__all__ = ["report"]


@click.command(short_help="Write a self-contained HTML (or PDF) report (figures embedded, opens offline).")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write (.html or .htm; its folder must exist); a name ending in .pdf writes a PDF, "
                   "printed by headless Chromium; other extensions are refused.")
@click.option("--method", "methods", type=click.Choice(list(METHODS)), multiple=True,
              default=("auto",), show_default=True, help="Backend(s); repeat for several, e.g. --method anova "
              "--method reml. auto = anova when every group is complete and balanced, else reml.")
@click.option("--budget", type=float, default=None, help="Judge-call budget of the allocation (default: the data's).")
@click.option("--model", default=None, help="Model drawn in the strategy and allocation sections (default: the first in sorted "
              "order; the report says which).")
@click.option("--criterion", default=None, help="Criterion of those sections (default: first).")
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the backends and subsampling.")
@click.option("--title", default=None, help="Title of the report.")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
@bayes_options
@data_options
def report(file: str, output: str, methods: tuple[str, ...], budget: float | None, model: str | None,
           criterion: str | None, ci_level: float | None, seed: int, title: str | None, force: bool,
           draws: int | None, chains: int | None, tune: int | None, data: DataOptions) -> None:
    """Design, components, judge tables and heatmap, F tests, strategy curves and allocation of FILE as HTML."""
    from cjstats.reporting import check_output, report as make_report

    refuse_drop_options(data, "report", "its backends keep every call with --method reml (or drop incomplete rows "
                        "yourself with --where)")
    sampling = bayes_kwargs("bayes" in methods, draws=draws, chains=chains, tune=tune)
    check_output(output, force)          # before reading and fitting: nothing is written on a bad path
    scores = load_scores(file, data)
    if "auto" in methods:
        click.echo(resolve_method(scores, "auto", None)[1], err=True)
    make_report(scores, output=output, method=list(methods), budget=budget, model=model, criterion=criterion,
                ci_level=ci_level, seed=seed, title=title, force=force,
                backend_options={"bayes": sampling} if sampling else None)
    click.echo(f"Wrote {output}", err=True)
