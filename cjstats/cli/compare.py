"""``cjstats compare FILE``: paired model differences, rank intervals and judge self-preference.

Mirrors :func:`cjstats.compare_models` (and :func:`cjstats.self_preference` with ``--families``).
"""

from __future__ import annotations

import click

from cjstats.cli._app import (
    DataOptions, anova_options, data_options, engine_options, format_option, load_source, method_option, resolve_method,
)

__all__ = ["compare"]


def _plain(v):
    """A JSON value: numbers as float (NaN as null), text as is."""
    import numbers

    if isinstance(v, bool) or isinstance(v, str) or v is None:
        return v
    if isinstance(v, numbers.Number):
        x = float(v)
        return None if x != x else x
    return str(v)


@click.command(short_help="Which model is better: paired differences, rank intervals, self-preference.")
@click.argument("file", type=click.Path(dir_okay=False))
@method_option
@click.option("--population", is_flag=True,
              help="Treat the judges as a sample of a population (judge x model variance enters the SEs).")
@click.option("--model-scenario", "model_scenario", type=click.Choice(["pooled", "per-model"]), default="pooled",
              show_default=True,
              help="One model x scenario variance for all models, or one per model (REML) so that each pair's SE "
                   "reflects its two models; the summary tests one against the other.")
@click.option("--families", default=None, metavar="JUDGE=MODEL,...",
              help="Each judge's own model family, e.g. gpt-4o=gpt-4o,gpt-4o=gpt-4o-mini (repeat a judge for "
                   "several models); adds the self-preference table.")
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--adjust", type=click.Choice(["holm", "bonferroni", "none"]), default="holm", show_default=True,
              help="Multiplicity adjustment of the pairwise p-values.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the Monte Carlo behind p_best.")
@engine_options
@data_options
@format_option
def compare(file: str, method: str, population: bool, model_scenario: str, families: str | None,
            ci_level: float | None, adjust: str, seed: int, engine: str, memory_limit: str | None, data: DataOptions,
            fmt: str) -> None:
    """Compare the models of FILE on one joint fit: every paired difference, simultaneous ranks, p_best.

    The joint fit is the ANOVA when every model is complete and balanced on the same scenarios and judges, and
    REML otherwise (--method auto, the default; reml keeps every call, bayes samples).
    """
    import json

    import pandas as pd

    from cjstats.cli._app import frame_to_json
    from cjstats.comparisons import compare_models, parse_families, self_preference

    from cjstats.exceptions import CjstatsError

    if engine != "numpy" and method == "bayes":
        raise CjstatsError(f"--engine {engine} fits --method anova or reml; use --engine numpy for bayes.")
    per_model = model_scenario == "per-model"
    if per_model and method in ("anova", "bayes"):
        raise CjstatsError(f"--model-scenario per-model is fitted by REML only; use --method reml or auto (got "
                           f"--method {method}).")
    scores = load_source(file, data, engine, memory_limit)
    if per_model:
        chosen, note = "reml", "method: reml (--model-scenario per-model is fitted by REML)"
    else:
        chosen, note = resolve_method(scores, method, data.incomplete, joint=True)
    options = anova_options(chosen, data.incomplete, data.max_drop)
    if chosen == "reml":
        options["model_scenario"] = "per_model" if per_model else "pooled"
    res = compare_models(scores, chosen, ci_level=ci_level, adjust=adjust,
                         view="population" if population else "panel", seed=seed, **options)
    sp = None
    if families:
        sp = self_preference(scores, parse_families(families), ci_level=ci_level, adjust=adjust, fit=res.fit)
    if fmt == "json":
        out = {"differences": json.loads(frame_to_json(res.differences)),
               "ranks": json.loads(frame_to_json(res.ranks)),
               "self_preference": json.loads(frame_to_json(sp.contrasts)) if sp is not None else [],
               "tests": {name: {key: _plain(v) for key, v in t.items()} for name, t in res.fit.tests.items()}}
        click.echo(json.dumps(out, indent=2))
    elif fmt == "csv":
        parts = [res.differences.assign(table="differences"), res.ranks.assign(table="ranks")]
        if sp is not None:
            parts.append(sp.contrasts.assign(table="self_preference"))
        click.echo(pd.concat(parts, ignore_index=True).to_csv(index=False), nl=False)
    else:
        if note:
            click.echo(note)
        click.echo(res.as_text())
        if sp is not None:
            click.echo("")
            click.echo(sp.as_text())
