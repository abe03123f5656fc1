"""``cjstats decompose FILE``: variance components with intervals (mirrors :func:`cjstats.estimate`)."""

from __future__ import annotations

import click

from cjstats.cli._app import emit_frame, format_option, load_scores, parse_mapping, scores_options


@click.command(short_help="Variance components with intervals, per model.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--method", type=click.Choice(["anova", "reml", "bayes"]), default="anova", show_default=True,
              help="Estimator backend.")
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--incomplete", type=click.Choice(["error", "drop"]), default=None,
              help="anova only: fail on missing judge calls, or drop incomplete cells.")
@click.option("--seed", type=int, default=None, help="Seed for backends that use randomness.")
@click.option("--offsets", is_flag=True, help="Print the judge offsets gamma[l] instead of the components.")
@click.option("--engine", type=click.Choice(["numpy", "duckdb", "dask"]), default="numpy", show_default=True,
              help="Who reduces the rows: numpy (in memory), duckdb (files larger than memory; FILE may be a "
                   "quoted glob such as 'scores/*.parquet') or dask (the active cluster, or local threads).")
@click.option("--memory-limit", default=None, metavar="SIZE", help="duckdb only: its memory limit, e.g. 2GB.")
@scores_options
@format_option
def decompose(file: str, method: str, ci_level: float | None, incomplete: str | None, seed: int | None,
              offsets: bool, engine: str, memory_limit: str | None, columns: str | None, duplicates: str,
              composite: bool, fmt: str) -> None:
    """Split the score variance of FILE into scenario, generation, judge and residual components."""
    from cjstats.estimators import estimate

    if engine != "numpy":
        scores = load_stats(file, engine, columns, duplicates, composite, memory_limit)
    else:
        scores = load_scores(file, columns, duplicates, composite)
    options = {"incomplete": incomplete} if incomplete else {}
    fit = estimate(scores, method, ci_level=ci_level, seed=seed, **options)
    if offsets:
        emit_frame(fit.judge_offsets, fmt)
    else:
        emit_frame(fit.components, fmt, text=fit.summary().as_text())


def load_stats(file: str, engine: str, columns: str | None, duplicates: str, composite: bool,
               memory_limit: str | None):
    """The statistics of FILE (a path or a quoted glob) computed by an out-of-core engine; the rows stay out."""
    from cjstats.exceptions import CjstatsError
    from cjstats.stats import build_stats

    if duplicates != "error" or composite:
        raise CjstatsError(f"--duplicates mean and --composite change rows, which --engine {engine} does not load; "
                           f"use --engine numpy for them.")
    if memory_limit is not None and engine != "duckdb":
        raise CjstatsError(f"--memory-limit is a DuckDB setting, but --engine is {engine}; use --engine duckdb.")
    opts = {"memory_limit": memory_limit} if memory_limit else {}
    return build_stats(file, engine=engine, columns=parse_mapping(columns, option="--columns") or None, **opts)
