"""``cjstats decompose FILE``: variance components with intervals (mirrors :func:`cjstats.estimate`)."""

from __future__ import annotations

import click

from cjstats.cli._app import (
    DataOptions, bayes_options, data_options, emit_frame, fit_scores, format_option, load_scores, method_option,
    parse_mapping, report_dropped,
)

__all__ = ["decompose"]


@click.command(short_help="Variance components with intervals, per model.")
@click.argument("file", type=click.Path(dir_okay=False))
@method_option
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--seed", type=int, default=None, help="Seed (an integer >= 0) for backends that use randomness.")
@bayes_options
@click.option("--offsets", is_flag=True, help="Print the judge offsets gamma[l] instead of the components.")
@click.option("--engine", type=click.Choice(["numpy", "duckdb", "dask"]), default="numpy", show_default=True,
              help="Who reduces the rows: numpy (in memory), duckdb (files larger than memory; FILE may be a "
                   "quoted glob such as 'scores/*.parquet') or dask (the active cluster, or local threads).")
@click.option("--memory-limit", default=None, metavar="SIZE", help="duckdb only: its memory limit, e.g. 2GB.")
@data_options
@format_option
def decompose(file: str, method: str, ci_level: float | None, seed: int | None, draws: int | None,
              chains: int | None, tune: int | None, offsets: bool, engine: str, memory_limit: str | None,
              data: DataOptions, fmt: str) -> None:
    """Split the score variance of FILE into scenario, generation, judge and residual components."""
    from cjstats.exceptions import CjstatsError

    if seed is not None and seed < 0:
        raise CjstatsError(f"The option --seed must be an integer >= 0. Got {seed}.")
    if engine != "numpy":
        source = load_stats(file, engine, data, memory_limit)
        if method == "bayes":
            raise CjstatsError(f"--engine {engine} fits --method anova or reml (or auto); use --engine numpy for "
                               f"bayes.")
    else:
        if memory_limit is not None:
            raise CjstatsError("--memory-limit is a DuckDB setting, but --engine is numpy; use --engine duckdb.")
        source = load_scores(file, data)
    fit, note = fit_scores(source, method, incomplete=data.incomplete, ci_level=ci_level, seed=seed, draws=draws,
                           chains=chains, tune=tune)
    report_dropped(fit)
    if offsets:
        text = (note + "\n" if note else "") + fit.judge_offsets.to_string(index=False)
        emit_frame(fit.judge_offsets, fmt, text=text)
    else:
        emit_frame(fit.components, fmt, text=(note + "\n" if note else "") + fit.summary().as_text())


def load_stats(file: str, engine: str, data: DataOptions, memory_limit: str | None):
    """The statistics of FILE (a path or a quoted glob) computed by an out-of-core engine; the rows stay out."""
    from cjstats.exceptions import CjstatsError
    from cjstats.stats import build_stats

    row_options = [flag for flag, used in (
        ("--duplicates mean", data.duplicates != "error"), ("--composite", data.composite),
        ("--judge-columns", bool(data.judge_columns)), ("--judges", bool(data.judges)),
        ("--exclude-judges", bool(data.exclude_judges)), ("--criteria", bool(data.criteria)),
        ("--where", bool(data.where)), ("--incomplete drop", data.incomplete == "drop")) if used]
    if row_options:
        raise CjstatsError(f"{row_options[0]} changes rows, which --engine {engine} never loads; use --engine numpy "
                           f"for it, or filter the files first.")
    if memory_limit is not None and engine != "duckdb":
        raise CjstatsError(f"--memory-limit is a DuckDB setting, but --engine is {engine}; use --engine duckdb.")
    opts = {"memory_limit": memory_limit} if memory_limit else {}
    return build_stats(file, engine=engine, columns=parse_mapping(data.columns, option="--columns") or None, **opts)
