"""``cjstats doctor FILE``: what a score file holds and the commands that analyse it (mirrors
:func:`cjstats.results.diagnosis.diagnose`)."""

from __future__ import annotations

import click

from cjstats.cli._app import emit_frame, format_option

__all__ = ["doctor"]


@click.command(short_help="Look at any score file or eval log: what it holds and the commands to run.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="Also write the scores as a long CSV table every command reads (needed for promptfoo, "
                   "DeepEval, lm-eval, FastChat and Inspect files).")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
@format_option
def doctor(file: str, output: str | None, force: bool, fmt: str) -> None:
    """Detect FILE's format (long or wide table, Inspect log, FastChat judgments, promptfoo results, DeepEval test
    run, lm-eval samples), read it and report models, scenarios, generations, judges, criteria, reference raters,
    covariate columns and the kind of score, then print the cjstats commands that analyse it.
    """
    from pathlib import Path

    from cjstats.exceptions import CjstatsError
    from cjstats.io.doctor import read_any
    from cjstats.results.diagnosis import diagnose

    if output is not None and Path(output).exists() and not force:
        raise CjstatsError(f"`{output}` exists; pass --force to overwrite it, or choose another file.")
    diag = diagnose(file, output=output)
    if output is not None:
        scores, _, _ = read_any(file)
        frame = scores.to_frame()
        ref = scores.reference_frame() if scores.has_reference else None
        if ref is not None and len(ref):
            import pandas as pd

            frame = pd.concat([frame.assign(judge_type="llm"), ref.assign(judge_type="human")], ignore_index=True)
        frame.to_csv(output, index=False)
        click.echo(f"Wrote the {len(frame)} scores of {file} to {output}.", err=True)
    emit_frame(diag.to_frame(), fmt, text=diag.as_text())
