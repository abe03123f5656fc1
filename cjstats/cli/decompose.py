"""``cjstats decompose FILE``: variance components with intervals (mirrors :func:`cjstats.estimate`)."""

from __future__ import annotations

import click

from cjstats.cli._app import emit_frame, format_option, load_scores, scores_options


@click.command(short_help="Variance components with intervals, per model.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--method", type=click.Choice(["anova", "reml", "bayes"]), default="anova", show_default=True,
              help="Estimator backend.")
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--incomplete", type=click.Choice(["error", "drop"]), default=None,
              help="anova only: fail on missing judge calls, or drop incomplete cells.")
@click.option("--seed", type=int, default=None, help="Seed for backends that use randomness.")
@click.option("--offsets", is_flag=True, help="Print the judge offsets gamma[l] instead of the components.")
@scores_options
@format_option
def decompose(file: str, method: str, ci_level: float | None, incomplete: str | None, seed: int | None,
              offsets: bool, columns: str | None, duplicates: str, composite: bool, fmt: str) -> None:
    """Split the score variance of FILE into scenario, generation, judge and residual components."""
    from cjstats.estimators import estimate

    scores = load_scores(file, columns, duplicates, composite)
    options = {"incomplete": incomplete} if incomplete else {}
    fit = estimate(scores, method, ci_level=ci_level, seed=seed, **options)
    if offsets:
        emit_frame(fit.judge_offsets, fmt)
    else:
        emit_frame(fit.components, fmt, text=fit.summary().as_text())
