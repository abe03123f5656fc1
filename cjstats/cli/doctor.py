"""``cjstats doctor FILE...``: what a score file (or several eval-tool files, a glob, a folder) holds and the
commands that analyse it (mirrors
:func:`cjstats.results.diagnosis.diagnose`)."""

from __future__ import annotations

import shlex

import click

from cjstats.cli._app import DataOptions, data_options, emit_frame, format_option, load_scores

__all__ = ["doctor"]


def _flags(data: DataOptions) -> str:
    """The data options given, as the printed commands must repeat them (FILE's readers need the same)."""
    out = []
    for name in ("columns", "judge_columns", "judges", "exclude_judges", "criteria", "incomplete", "max_drop"):
        value = getattr(data, name)
        if value is not None:
            out.append(f"--{name.replace('_', '-')} {shlex.quote(str(value))}")
    out += [f"--where {shlex.quote(w)}" for w in data.where]
    out += ["--composite"] if data.composite else []
    out += [f"--duplicates {data.duplicates}"] if data.duplicates != "error" else []
    return " ".join(out)


@click.command(short_help="Look at any score file or eval log: what it holds and the commands to run.")
@click.argument("files", nargs=-1)
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="Also write the scores as a long CSV table every command reads (needed for promptfoo, "
                   "DeepEval, lm-eval, FastChat and Inspect files).")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
@data_options
@format_option
def doctor(files: tuple[str, ...], output: str | None, force: bool, data: DataOptions, fmt: str) -> None:
    """Detect FILES' format (long or wide table, Inspect log, FastChat judgments, promptfoo results, DeepEval test
    run, lm-eval samples), read it and report models, scenarios, generations, judges, criteria, reference raters,
    covariate columns, the kind of score, errored results and deterministic checks, then print the cjstats
    commands that analyse it.

    Eval-tool files may be several, a glob pattern or a folder (one DeepEval run per model, an lm-eval output
    folder of model folders, a folder of Inspect logs): they are read as one table, and the first printed command
    writes that table (-o) for the others to read. A score table is one file.

    The data options (--columns, --judge-columns, --where, ...) apply to tables, as in every data subcommand,
    and the printed commands repeat them.
    """
    from pathlib import Path

    from cjstats.exceptions import CjstatsError
    from cjstats.io.doctor import detect_format, read_any
    from cjstats.results.diagnosis import diagnose

    source: str | list[str] | None = files[0] if len(files) == 1 else (list(files) or None)
    file = files[0] if len(files) == 1 else None
    if output is not None and Path(output).exists() and not force:
        raise CjstatsError(f"`{output}` exists; pass --force to overwrite it, or choose another file.")
    kind = detect_format(source) if data.dataset is None and source is not None else "long"
    if kind == "wide" and data.judge_columns is None and data.columns is None:
        # the score_* columns, found as read_any finds them; without them read_scores' own advice is shown
        from dataclasses import replace

        try:
            data = replace(data, judge_columns=read_any(file)[2].split(":", 1)[1])
        except CjstatsError:
            pass
    flags = _flags(data)
    if kind in ("long", "wide"):
        # a table: read as every data subcommand reads it (renames, wide columns, filters), raw kept for covariates
        scores = load_scores(file, data)
        raw = _raw(file, data)
        diag = diagnose(scores, output=output, raw=raw, flags=flags)
        label = f"--dataset {data.dataset}" if data.dataset is not None else file
        diag = type(diag)(source=label, format=diag.format if data.judge_columns is None else "wide",
                          facts=diag.facts, commands=[c.replace("<table>", label) for c in diag.commands],
                          notes=[n.replace("<table>", label) for n in diag.notes], score_counts=diag.score_counts)
    else:
        if flags:
            raise CjstatsError(f"The data options ({flags}) apply to score tables; {' '.join(files)} "
                               f"{'is an eval-tool file' if file else 'are eval-tool files'}, so leave them out "
                               f"(give them to the commands that read the table -o writes).")
        scores, _, _ = read_any(source)
        diag = diagnose(source, output=output)
    if output is not None:
        frame = scores.to_frame()
        if scores.has_reference:
            import pandas as pd

            frame = pd.concat([frame.assign(judge_type="llm"), scores.reference_frame().assign(judge_type="human")],
                              ignore_index=True)
        frame.to_csv(output, index=False)
        click.echo(f"Wrote the {len(frame)} scores of {' '.join(files) or data.dataset} to {output}.", err=True)
    emit_frame(diag.to_frame(), fmt, text=diag.as_text())


def _raw(file: str | None, data: DataOptions):
    """The table as read (for covariate columns), with the --columns renames."""
    from pathlib import Path

    from cjstats.cli._app import parse_mapping
    from cjstats.io.read import read_file

    if data.dataset is not None:
        from cjstats.datasets import table

        raw = table(data.dataset)
    else:
        raw, _ = read_file(Path(file))
    mapping = parse_mapping(data.columns, option="--columns") or None
    return raw.rename(columns=mapping) if mapping else raw
