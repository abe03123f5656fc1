"""``cjstats decompose FILE``: variance components with intervals (mirrors :func:`cjstats.estimate`)."""

from __future__ import annotations

import click

from cjstats.cli._app import (
    DataOptions, bayes_options, data_options, emit_frame, engine_options, fit_scores, fit_format_option, load_source, method_option,
    formula_option, scenario_judge_option, scenario_judge_text,
)
from cjstats.cli._ordinal import ORDINAL_METHODS, fit_ordinal, latent_note, ordinal_kwargs, ordinal_options

__all__ = ["decompose"]


@click.command(short_help="Variance components with intervals, per model.")
@click.argument("file", type=click.Path(dir_okay=False))
@method_option(choices=ORDINAL_METHODS)
@ordinal_options
@scenario_judge_option
@formula_option
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--seed", type=int, default=None, help="Seed (an integer >= 0) for backends that use randomness.")
@bayes_options
@click.option("--offsets", is_flag=True, help="Print the judge offsets gamma[l] instead of the components.")
@engine_options
@data_options
@fit_format_option
def decompose(file: str, method: str, link: str | None, thresholds: str | None, scenario_judge: str,
              formula: str | None, ci_level: float | None, seed: int | None, draws: int | None,
              chains: int | None, tune: int | None, offsets: bool, engine: str, memory_limit: str | None,
              data: DataOptions, fmt: str) -> None:
    """Split the score variance of FILE into scenario, generation, judge and residual components.

    --method ordinal fits the cumulative-link model of ordinal or pass/fail scores instead: its components are
    variances of a latent score (the residual is fixed by --link), printed with a line saying so.
    """
    from cjstats.exceptions import CjstatsError

    if seed is not None and seed < 0:
        raise CjstatsError(f"The option --seed must be an integer >= 0. Got {seed}.")
    if engine != "numpy" and method == "bayes":
        raise CjstatsError(f"--engine {engine} fits --method anova, reml or ordinal (or auto); use --engine numpy "
                           f"for {method}.")
    ordinal_kwargs(method, link, thresholds)       # --link / --thresholds without --method ordinal: one sentence
    # --method ordinal out of core fits from the per-pattern counts (one generation per scenario)
    source = load_source(file, data, engine, memory_limit,
                         likelihood="cumulative" if method == "ordinal" else "gaussian")
    if method == "ordinal":
        fit = fit_ordinal(source, link=link, thresholds=thresholds, incomplete=data.incomplete, max_drop=data.max_drop,
                          ci_level=ci_level, seed=seed, draws=draws, chains=chains, tune=tune,
                          scenario_judge=scenario_judge, model=formula)
        note = latent_note(link)
    else:
        fit, note = fit_scores(source, method, incomplete=data.incomplete, max_drop=data.max_drop, ci_level=ci_level,
                               seed=seed, draws=draws, chains=chains, tune=tune, scenario_judge=scenario_judge,
                               model=formula)
    if offsets:
        text = (note + "\n" if note else "") + fit.judge_offsets.to_string(index=False)
        emit_frame(fit.judge_offsets, fmt, text=text)
    else:
        extra = scenario_judge_text(fit) if fmt in ("table", "long") else ""
        head, tail = (note + "\n" if note else ""), ("\n" + extra if extra else "")
        summary = fit.summary()
        emit_frame(fit.components, fmt, text=head + summary.as_text() + tail,
                   long_text=head + summary.as_long_text() + tail)
