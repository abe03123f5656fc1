"""``cjstats compare FILE``: paired model differences, rank intervals and judge self-preference.

Mirrors :func:`cjstats.compare_models` (and :func:`cjstats.self_preference` with ``--families``).
"""

from __future__ import annotations

from typing import Any

import click

from cjstats.cli._app import (
    METHODS, DataOptions, anova_options, data_options, engine_options, format_option, load_source, method_option, parse_list,
    parse_mapping, parse_pairs, resolve_method,
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
@method_option(choices=(*METHODS, "ordinal"))
@click.option("--link", type=click.Choice(["probit", "logit"]), default=None,
              help="--method ordinal (verdicts and ratings: the joint cumulative-link model, latent scale plus pass "
                   "rates; --method auto chooses it for verdicts and short scales): the link, probit (default) or "
                   "logit.")
@click.option("--population", is_flag=True,
              help="Treat the judges as a sample of a population (judge x model variance enters the SEs).")
@click.option("--model-scenario", "model_scenario", type=click.Choice(["pooled", "per-model"]), default="pooled",
              show_default=True,
              help="One model x scenario variance for all models, or one per model (REML) so that each pair's SE "
                   "reflects its two models; the summary tests one against the other.")
@click.option("--families", multiple=True, metavar="JUDGE=MODEL,...",
              help="Each judge's own model family, e.g. gpt-4o=gpt-4o,gpt-4o=gpt-4o-mini (repeat a judge for "
                   "several models; the option may be repeated too); adds the self-preference table. A name "
                   "holding a comma or '=' goes in double quotes: '\"org/m,v2\"=judge'.")
@click.option("--covariates", default=None, metavar="COL,...",
              help="Item covariate columns of FILE (e.g. length): differences at equal covariate values, each "
                   "judge's slope, and a test that the slopes differ (REML; docs/covariates.md).")
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--adjust", type=click.Choice(["holm", "bonferroni", "none"]), default="holm", show_default=True,
              help="Multiplicity adjustment of the pairwise p-values.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the Monte Carlo behind p_best.")
@engine_options
@data_options
@format_option
def compare(file: str | None, method: str, link: str | None, population: bool, model_scenario: str, families: tuple[str, ...],
            covariates: str | None, ci_level: float | None, adjust: str, seed: int, engine: str,
            memory_limit: str | None, data: DataOptions, fmt: str) -> None:
    """Compare the models of FILE on one joint fit: every paired difference, simultaneous ranks, p_best.

    A table with criteria is compared per criterion (add --composite for one comparison of their mean). The
    joint fit is the ANOVA when every model is complete and balanced on the same scenarios and judges, and
    REML otherwise (--method auto, the default; reml keeps every call, bayes samples); for pass/fail verdicts or
    a short rating scale (at most 5 values, one generation per scenario) auto fits the joint ordinal model
    (latent-scale differences and pass rates), and says in its first line which it chose and why.
    """
    from cjstats.estimators.joint import compare_models, self_preference

    from cjstats.exceptions import CjstatsError

    per_model = check_joint_options(method, link, model_scenario, engine)
    covs = parse_list(covariates, option="--covariates") if covariates is not None else None
    if covs is not None:
        if engine != "numpy":
            raise CjstatsError(f"--covariates are fitted in memory; use --engine numpy (got --engine {engine}).")
        if method in ("anova", "bayes", "ordinal"):
            raise CjstatsError(f"--covariates are fitted by REML only; use --method reml or auto (got --method "
                               f"{method}).")
    scores = load_source(file, data, engine, memory_limit)
    fam = _families(families)
    runs = []
    for criterion, part in criterion_parts(scores):
        if covs is not None:
            part = _with_covariates(part, file, data, covs)
        chosen, note, options = joint_method(part, "reml" if covs is not None else method, data,
                                             per_model=per_model, link=link)
        if covs is not None:
            note = "method: reml (--covariates are fitted by REML)"
            options["covariates"] = covs
        res = compare_models(part, chosen, ci_level=ci_level, adjust=adjust,
                             view="population" if population else "panel", seed=seed, **options)
        sp = self_preference(part, fam, ci_level=ci_level, adjust=adjust, fit=res.fit) if fam else None
        runs.append((criterion, note, res, sp))
    _emit(runs, fmt)


def _with_covariates(scores, file: str | None, data: DataOptions, covs: list[str]):
    """The validated rows of ``scores`` (after every data option) with the covariate columns of FILE joined on
    (model, scenario[, generation]): the DataFrame :func:`cjstats.compare_models` reads covariates from. One
    sentence when a column is missing or a covariate varies within one item."""
    import pandas as pd

    from cjstats.cli._app import _source
    from cjstats.exceptions import CjstatsError
    from cjstats.io.read import read_file

    source = _source(file, data)
    if isinstance(source, pd.DataFrame):
        raw = source
    else:
        from pathlib import Path

        raw, _ = read_file(Path(source))
    mapping = parse_mapping(data.columns, option="--columns") or None
    raw = raw.rename(columns=mapping) if mapping else raw
    missing = [c for c in covs if c not in raw.columns]
    if missing:
        raise CjstatsError(f"The option --covariates names '{missing[0]}', which is not a column of FILE (columns: "
                           f"{', '.join(map(str, raw.columns))}).")
    for c in covs:                      # text files are read as text: a covariate column becomes numbers here
        if not pd.api.types.is_numeric_dtype(raw[c]):
            num = pd.to_numeric(raw[c], errors="coerce")
            bad = num.isna() & raw[c].notna() & (raw[c].astype(str).str.strip() != "")
            if bad.any():
                raise CjstatsError(f"The covariate column '{c}' of FILE holds {raw[c][bad].iloc[0]!r}, which is not a "
                                   f"number; --covariates takes numeric item columns such as length.")
            raw = raw.assign(**{c: num})
    frame = scores.to_frame()
    keys = ["model", "scenario"] + (["generation"] if "generation" in raw.columns and "generation" in frame.columns
                                    else [])
    values = raw[keys + covs].copy()
    for k in keys:
        values[k] = values[k].astype(str)
    values = values.drop_duplicates()
    varies = values.duplicated(keys, keep=False)
    if varies.any():
        first = values[varies].iloc[0]
        raise CjstatsError(f"A covariate of --covariates varies within one item (model '{first['model']}', scenario "
                           f"'{first['scenario']}'): an item covariate such as length has one value per model, "
                           f"scenario and generation; check the column.")
    left = frame.assign(**{f"__{k}": frame[k].astype(str) for k in keys})
    merged = left.merge(values.rename(columns={k: f"__{k}" for k in keys}), on=[f"__{k}" for k in keys],
                        how="left")
    return merged.drop(columns=[f"__{k}" for k in keys])


def _echo_slopes(fit) -> None:
    """Each judge's slope on each covariate (and the panel's), and the test that the judges' slopes are equal."""
    from cjstats.results.format import format_frame, format_interval, format_p, column_decimals

    sl = fit.slopes.copy()
    dec = column_decimals(sl["std_error"]) or 3
    pct = f"{100 * float(sl['ci_level'].iloc[0]):g}%"
    sl[f"{pct} interval"] = [format_interval(lo, hi, dec, na="-") for lo, hi in zip(sl["lower"], sl["upper"])]
    sl = format_frame(sl[["covariate", "judge", "slope", "std_error", "df", f"{pct} interval", "p_value"]],
                      se_column="std_error", value_columns=("slope", "std_error"), na="-")
    click.echo("")
    click.echo("Judges' slopes (score points per covariate unit; '(panel)' is their mean)")
    click.echo(sl.to_string(index=False))
    for name, t in fit.tests.items():
        if name.startswith("slopes["):
            click.echo(f"{t['hypothesis']}: {t['test']} {t['statistic']:.3g} on ({t['df1']:g}, {t['df2']:g}) df, "
                       f"p = {format_p(t['p_value'])}")


def _families(texts: tuple[str, ...]) -> dict[str, list[str]]:
    """``--families`` (repeatable): judge=model pairs; a judge given twice has several models; a name holding a
    comma or '=' is written in double quotes."""
    out: dict[str, list[str]] = {}
    for text in texts:
        for judge, model in parse_pairs(text, option="--families", example="gpt-4o=gpt-4o,gpt-4o=gpt-4o-mini"):
            out.setdefault(judge, []).append(model)
    return out


def check_joint_options(method: str, link: str | None, model_scenario: str, engine: str) -> bool:
    """The checks every joint-fit command (``compare``, ``gstudy``) makes of its options before reading data, one
    sentence each; returns whether ``--model-scenario per-model`` was asked for."""
    from cjstats.exceptions import CjstatsError

    if engine != "numpy" and method in ("bayes", "ordinal"):
        raise CjstatsError(f"--engine {engine} fits --method anova or reml; use --engine numpy for {method}.")
    if link is not None and method not in ("ordinal", "auto"):
        raise CjstatsError(f"The option --link applies to --method ordinal only (got --method {method}); add "
                           f"--method ordinal or leave --link {link} out.")
    per_model = model_scenario == "per-model"
    if per_model and method in ("anova", "bayes", "ordinal"):
        raise CjstatsError(f"--model-scenario per-model is fitted by REML only; use --method reml or auto (got "
                           f"--method {method}).")
    return per_model


def criterion_parts(scores) -> list[tuple[str | None, Any]]:
    """One (criterion, table) per criterion of a table with criteria (each without its criterion column, what a
    joint fit takes), else ``[(None, scores)]``."""
    from cjstats.io.scores import Scores

    if isinstance(scores, Scores) and scores.has_criterion:
        return [(c, _without_criterion(scores, c)) for c in scores.criteria]
    return [(None, scores)]


def joint_method(part, method: str, data: DataOptions, *, per_model: bool,
                 link: str | None) -> tuple[str, str, dict[str, Any]]:
    """The joint backend a command fits ``part`` with, the line saying why, and its options: REML where
    per-model model x scenario variances ask for it, else what ``--method`` (auto:
    :func:`cjstats.cli._app.resolve_method`) chooses; ``--link`` only where the choice is ordinal (one sentence
    otherwise); the ANOVA's ``--incomplete`` options."""
    from cjstats.exceptions import CjstatsError

    if per_model:
        chosen, note = "reml", "method: reml (--model-scenario per-model is fitted by REML)"
    else:
        chosen, note = resolve_method(part, method, data.incomplete, joint=True)
    if link is not None and chosen != "ordinal":
        raise CjstatsError(f"The option --link applies to --method ordinal only, and this comparison is fitted by "
                           f"{chosen} (without --link the first line says why); add --method ordinal or leave "
                           f"--link {link} out.")
    options = anova_options(chosen, data.incomplete, data.max_drop)
    if chosen == "ordinal" and link is not None:
        options["link"] = link
    if chosen == "reml":
        options["model_scenario"] = "per_model" if per_model else "pooled"
    return chosen, note, options


def _without_criterion(scores, criterion: str):
    """The rows of one criterion as a table without the criterion column (what compare_models compares)."""
    from cjstats.io.read import read_scores

    df = scores.subset(criteria=[criterion]).to_frame().drop(columns="criterion")
    return read_scores(df)


def _emit(runs, fmt: str) -> None:
    """Write the comparisons: one per criterion (a ``criterion`` column / key when the table has criteria)."""
    import json

    import pandas as pd

    from cjstats.cli._app import frame_to_json

    by_criterion = runs[0][0] is not None

    def tag(df, criterion):
        return df.assign(criterion=criterion)[["criterion", *df.columns]] if by_criterion else df

    if fmt == "json":
        def rows(name):
            frames = [tag(getattr(res, name), c) for c, _, res, _ in runs]
            return json.loads(frame_to_json(pd.concat(frames, ignore_index=True)))

        sps = [tag(sp.contrasts, c) for c, _, _, sp in runs if sp is not None]
        tests = {c: {name: {key: _plain(v) for key, v in t.items()} for name, t in res.fit.tests.items()}
                 for c, _, res, _ in runs}
        slope_frames = [tag(res.fit.slopes, c) for c, _, res, _ in runs if len(getattr(res.fit, "slopes", ()))]
        out = {"differences": rows("differences"), "ranks": rows("ranks"),
               **({"slopes": json.loads(frame_to_json(pd.concat(slope_frames, ignore_index=True)))}
                  if slope_frames else {}),
               "self_preference": json.loads(frame_to_json(pd.concat(sps, ignore_index=True))) if sps else [],
               "tests": tests if by_criterion else tests[None]}
        click.echo(json.dumps(out, indent=2))
    elif fmt == "csv":
        parts = []
        for c, _, res, sp in runs:
            parts += [tag(res.differences, c).assign(table="differences"), tag(res.ranks, c).assign(table="ranks")]
            if sp is not None:
                parts.append(tag(sp.contrasts, c).assign(table="self_preference"))
        click.echo(pd.concat(parts, ignore_index=True).to_csv(index=False), nl=False)
    else:
        for i, (c, note, res, sp) in enumerate(runs):
            if i:
                click.echo("")
            if by_criterion:
                click.echo(f"Criterion '{c}'")
            if note:
                click.echo(note)
            slopes = getattr(res.fit, "slopes", None)
            text = res.as_text()
            if slopes is not None and len(slopes):
                text = text.replace("each judge's slope is in fit.slopes", "each judge's slope is below")
            click.echo(text)
            if slopes is not None and len(slopes):
                _echo_slopes(res.fit)
            if sp is not None:
                click.echo("")
                click.echo(sp.as_text())


