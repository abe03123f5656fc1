"""``cjstats drift BEFORE AFTER``: has a judge changed between two runs on the same anchor items?

Mirrors :func:`cjstats.judge_drift`. BEFORE and AFTER are any file ``cjstats doctor`` reads (long or wide tables,
Inspect logs, FastChat, promptfoo, DeepEval or lm-eval files); the output is each judge's change of offset with
its interval and multiplicity-adjusted test, the global tests, and a one-line verdict.
"""

from __future__ import annotations

import click

from cjstats.cli._app import DataOptions, emit_tables, format_option, load_scores, parse_list

__all__ = ["drift"]

#: Library advice of judge_drift in the command line's words.
_ADVICE = (("unshared='drop'", "--unshared drop"), ("(or pass scores.composite() for both)", "(or pass --composite)"),
           ("Pass judge_drift(before, after) with a score table for each run", "Give BEFORE and AFTER"),
           ("subset both tables to the same judges", "keep the shared ones with --judges A,B"))


def _read(path: str, which: str, data: DataOptions):
    """One run: a table read as every data subcommand reads it (--columns, --duplicates, --judges, --composite), or
    an eval-tool file read as ``cjstats doctor`` reads it; one sentence naming BEFORE or AFTER when it cannot be."""
    from dataclasses import replace
    from pathlib import Path

    from cjstats.exceptions import CjstatsError
    from cjstats.io.doctor import detect_format, read_any

    if not Path(path).is_file():
        raise CjstatsError(f"{which} `{path}` is not an existing file; give a score table or an eval log "
                           f"(cjstats doctor FILE says whether cjstats reads it).")
    try:
        kind = detect_format(path)
        if kind == "wide" and data.columns is None:      # the score_* columns, found as doctor finds them
            data = replace(data, judge_columns=read_any(path)[2].split(":", 1)[1])
        if kind in ("long", "wide"):
            return load_scores(path, data)
        if data.columns is not None or data.duplicates != "error":
            raise CjstatsError(f"--columns and --duplicates apply to score tables, and it is a {kind} file; leave "
                               f"them out.")
        scores, _, _ = read_any(path)
        names = parse_list(data.judges, option="--judges")
        if names is not None:
            missing = [j for j in names if j not in scores.judges]
            if missing:
                raise CjstatsError(f"The option --judges names '{missing[0]}', which is not in it (judges: "
                                   f"{', '.join(map(str, scores.judges))}).")
            scores = scores.subset(judges=names)
        if data.composite:
            if not scores.has_criterion:
                raise CjstatsError("The option --composite averages criteria, and it has no 'criterion' column; "
                                   "leave it out.")
            scores = scores.composite()
        return scores
    except CjstatsError as exc:
        text = str(exc).replace("FILE", "it")
        raise CjstatsError(f"{which} `{path}`: {text[0].lower() + text[1:] if text[:4] != 'The ' else text}") \
            from None


def verdict(result) -> str:
    """The one-line verdict: the judges that drifted (adjusted), or none, with the global test's p-value."""
    from cjstats.estimators.drift import EXACT, PANEL
    from cjstats.results.format import format_p

    alpha = 1.0 - result.ci_level
    exact = result.drift[(result.drift["verdict"] == EXACT) & (result.drift["judge"] != PANEL)]
    if len(exact) == len(result.drift[result.drift["judge"] != PANEL]):
        moved = [f"{j} {e:+.4g}" for j, e in zip(exact["judge"], exact["estimate"]) if e != 0]
        return (f"EXACT DRIFT: the differences have no spread, so each judge's change is exact and no test applies "
                f"({', '.join(moved) if moved else 'no judge moved'}).")
    flagged = result.flagged()
    p_all = result.tests.loc[result.tests["test"] == "no_drift", "p_value"]
    p_text = ", ".join(format_p(p) for p in p_all)
    if flagged:
        return (f"DRIFT: {', '.join(flagged)} changed at level {alpha:g} ({result.adjust}-adjusted); test that no "
                f"judge moved: p = {p_text}.")
    return f"NO DRIFT DETECTED at level {alpha:g} ({result.adjust}-adjusted); test that no judge moved: p = {p_text}."


@click.command(short_help="Judge drift between two runs on the same anchor items: which judges changed.")
@click.argument("before", type=click.Path(dir_okay=False))
@click.argument("after", type=click.Path(dir_okay=False))
@click.option("--method", type=click.Choice(["reml", "anova"]), default="reml", show_default=True,
              help="Fit of the paired differences (anova needs every judge on every anchor item).")
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95); tests at 1 - level.")
@click.option("--adjust", type=click.Choice(["holm", "bonferroni", "bh", "none"]), default="holm", show_default=True,
              help="Adjustment of the per-judge p-values across judges.")
@click.option("--labels", default="before,after", show_default=True, metavar="A,B", help="Names of the two runs.")
@click.option("--unshared", type=click.Choice(["error", "drop"]), default="error", show_default=True,
              help="Anchor items judged in one run only: refuse, or keep the shared ones.")
@click.option("--by-model", is_flag=True, help="One drift per anchor model instead of the models pooled.")
@click.option("--judges", default=None, metavar="A,B", help="Keep only these judges in both runs.")
@click.option("--columns", default=None, metavar="THEIRS=OURS,...",
              help="Rename columns of both tables, e.g. rater=judge,item=scenario.")
@click.option("--duplicates", type=click.Choice(["error", "mean"]), default="error", show_default=True,
              help="Several rows for one judge call: fail, or average them.")
@click.option("--incomplete", type=click.Choice(["error", "drop"]), default=None,
              help="Missing judge calls, for --method anova: fail, or drop incomplete anchor items.")
@click.option("--max-drop", "max_drop", type=click.FloatRange(0.0, 1.0), default=None, metavar="SHARE",
              help="With --incomplete drop: the largest share of anchor items it may drop (default 0.5).")
@click.option("--composite", is_flag=True, help="Average the criteria of each cell into one score (both runs).")
@click.option("--plot", "plot", default=None, type=click.Path(dir_okay=False),
              help="Also draw the drift figure to this file (.png, .pdf, .svg).")
@format_option
def drift(before: str, after: str, method: str, ci_level: float | None, adjust: str, labels: str, unshared: str,
          by_model: bool, judges: str | None, columns: str | None, duplicates: str, incomplete: str | None,
          max_drop: float | None, composite: bool, plot: str | None, fmt: str) -> None:
    """Per judge, the change of its offset between BEFORE and AFTER (the same anchor items judged twice), with
    intervals, Holm-adjusted tests, the global tests and a one-line verdict."""
    from pathlib import Path

    from cjstats.estimators.drift import judge_drift
    from cjstats.exceptions import CjstatsError

    names = [x.strip() for x in labels.split(",")]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise CjstatsError(f"The option --labels takes two names separated by a comma, different from each other, "
                           f"e.g. may,june. Got `{labels}`.")
    if plot is not None and Path(plot).suffix.lower() not in (".png", ".pdf", ".svg"):
        raise CjstatsError(f"The option --plot takes a .png, .pdf or .svg file name; got `{plot}`.")
    if plot is not None and not Path(plot).resolve().parent.is_dir():
        raise CjstatsError(f"The folder of --plot `{plot}` does not exist; create it first.")
    data = DataOptions(columns=columns, judge_columns=None, composite=composite, incomplete=None,
                       duplicates=duplicates, judges=judges, exclude_judges=None, criteria=None, where=())
    b, a = _read(before, "BEFORE", data), _read(after, "AFTER", data)
    options = {k: v for k, v in (("incomplete", incomplete), ("max_drop", max_drop)) if v is not None}
    try:
        res = judge_drift(b, a, method=method, ci_level=ci_level, adjust=adjust, labels=(names[0], names[1]),
                          unshared=unshared, by_model=by_model, **options)
    except CjstatsError as exc:
        text = str(exc)
        for lib, cli in _ADVICE:
            text = text.replace(lib, cli)
        raise CjstatsError(text) from None
    if plot is not None:
        from cjstats.plots import drift_plot

        fig = drift_plot(res)
        fig.savefig(plot, dpi=130, bbox_inches="tight")
        click.echo(f"Wrote {plot}", err=True)
    line = verdict(res)
    emit_tables({"drift": res.drift, "tests": res.tests, "verdict": line}, fmt, text=f"{res.as_text()}\n\n{line}")
