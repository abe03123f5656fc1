"""``cjstats report FILE -o report.html`` (or ``.pdf``): a self-contained report (mirrors :func:`cjstats.report`)."""

from __future__ import annotations

import click

from cjstats.cli._app import (
    DataOptions, bayes_kwargs, bayes_options, data_options, load_scores, refuse_drop_options, resolve_method,
)
from cjstats.cli._ordinal import ORDINAL_METHODS, ordinal_kwargs, ordinal_options

__all__ = ["report"]


@click.command(short_help="Write a self-contained HTML (or PDF) report (figures embedded, opens offline).")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write (.html or .htm; its folder must exist); a name ending in .pdf writes a PDF, "
                   "printed by headless Chromium; other extensions are refused.")
@click.option("--method", "methods", type=click.Choice(list(ORDINAL_METHODS)), multiple=True,
              default=("auto",), show_default=True, help="Backend(s); repeat for several, e.g. --method anova "
              "--method reml. auto = anova when every group is complete and balanced, else reml; ordinal = the "
              "cumulative-link model of ordinal or pass/fail scores (latent scale).")
@ordinal_options
@click.option("--budget", type=float, default=None, help="Judge-call budget of the allocation (default: the data's).")
@click.option("--model", default=None, help="Model drawn in the strategy and allocation sections (default: the model with the "
              "highest panel mean, the leader; the report says which and why).")
@click.option("--criterion", default=None, help="Criterion of those sections (default: the one with the highest panel "
              "mean).")
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the backends and subsampling.")
@click.option("--title", default=None, help="Title of the report.")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
@click.option("--doctor", "doctor", is_flag=True, help="Add what cjstats doctor finds in FILE, with its figure.")
@click.option("--drift-before", "drift_before", default=None, type=click.Path(dir_okay=False),
              help="Add the judge drift of FILE against this earlier run of the same anchor items.")
@click.option("--sequence", "sequence", default=None, metavar="A,B",
              help="Add the anytime-valid confidence sequence of mean(A) - mean(B) over FILE's scenarios.")
@click.option("--bounds", default=None, metavar="LO,HI",
              help="With --sequence: the score scale (empirical Bernstein); without it the normal mixture is used.")
@bayes_options
@data_options
def report(file: str, output: str, methods: tuple[str, ...], link: str | None, thresholds: str | None, budget: float | None, model: str | None,
           criterion: str | None, ci_level: float | None, seed: int, title: str | None, force: bool,
           doctor: bool, drift_before: str | None, sequence: str | None, bounds: str | None, draws: int | None, chains: int | None, tune: int | None, data: DataOptions) -> None:
    """Data, design, components, judge tables and heatmap, F tests, strategy curves and allocation of FILE as HTML."""
    from cjstats.exceptions import CjstatsError
    from cjstats.reporting import check_output, report as make_report

    refuse_drop_options(data, "report", "its backends keep every call with --method reml (or drop incomplete rows "
                        "yourself with --where)")
    sampling = bayes_kwargs("bayes" in methods, draws=draws, chains=chains, tune=tune)
    cumulative = ordinal_kwargs("ordinal" if "ordinal" in methods else methods[0], link, thresholds)
    check_output(output, force)          # before reading and fitting: nothing is written on a bad path
    if bounds is not None and sequence is None:
        raise CjstatsError("The option --bounds sets the scale of --sequence A,B; add --sequence or leave it out.")
    scores = load_scores(file, data)
    if "auto" in methods:
        click.echo(resolve_method(scores, "auto", None)[1], err=True)
    audit = _audit(file, scores, data, doctor=doctor, drift_before=drift_before, sequence=sequence, bounds=bounds,
                   ci_level=ci_level)
    make_report(scores, output=output, method=list(methods), budget=budget, model=model, criterion=criterion,
                ci_level=ci_level, seed=seed, title=title, force=force,
                backend_options={k: v for k, v in (("bayes", sampling), ("ordinal", cumulative)) if v} or None,
                **audit)
    click.echo(f"Wrote {output}", err=True)


def _audit(file: str | None, scores, data: DataOptions, *, doctor: bool, drift_before: str | None,
           sequence: str | None, bounds: str | None, ci_level: float | None) -> dict:
    """The audit results the options ask for (cj.report's diagnosis=, drift=, sequences=)."""
    from dataclasses import replace

    from cjstats.exceptions import CjstatsError

    out: dict = {}
    label = file if file is not None else f"--dataset {data.dataset}"     # the data's own name, never a placeholder
    if doctor:
        from cjstats.results.diagnosis import diagnose

        d = diagnose(scores)
        out["diagnosis"] = replace(d, source=label, commands=[c.replace("<table>", label) for c in d.commands])
    if drift_before is not None:
        from cjstats.estimators.drift import judge_drift

        earlier = load_scores(drift_before, replace(data, dataset=None))
        try:
            out["drift"] = judge_drift(earlier, scores, ci_level=ci_level, labels=(drift_before, label))
        except CjstatsError as exc:
            text = str(exc).replace("unshared='drop'", "--unshared drop")
            if "--unshared" in text:
                text = text.split("; drift compares")[0] + "; the report compares the same anchor items, so " \
                    "judge the same items in both runs (cjstats drift BEFORE AFTER --unshared drop keeps the shared " \
                    "ones)."
            raise CjstatsError(f"--drift-before: {text}") from None
    if sequence is not None:
        from cjstats.decisions.sequential import confidence_sequence

        names = [m.strip() for m in sequence.split(",") if m.strip()]
        if len(names) != 2:
            raise CjstatsError(f"The option --sequence takes two model names separated by a comma, e.g. gpt-4o,llama. "
                               f"Got `{sequence}`.")
        pair = None
        if bounds is not None:
            try:
                pair = tuple(float(v) for v in bounds.split(","))
            except ValueError:
                pair = ()
            if len(pair) != 2:
                raise CjstatsError(f"The option --bounds takes two numbers LO,HI, e.g. 1,5. Got `{bounds}`.")
        for name in names:
            if name not in scores.models:
                raise CjstatsError(f"The option --sequence names '{name}', which FILE does not have (models: "
                                   f"{', '.join(map(str, scores.models))}).")
        res = confidence_sequence(scores, names[0], names[1], bounds=pair,
                                  method="empirical_bernstein" if pair else "normal_mixture")
        out["sequences"] = {f"{names[0]} vs {names[1]}": res}
    return out
