"""``cjstats datasets``: list the bundled tables and export one as a score file (mirrors :mod:`cjstats.datasets`).

``cjstats datasets export hanna -o hanna.csv`` writes :func:`cjstats.datasets.table`: one row per judge call and
the human ratings marked ``judge_type == human``, so every data subcommand reads the file with its defaults
(``humans`` finds the human raters). Every data subcommand also reads a bundled table directly with
``--dataset NAME``.
"""

from __future__ import annotations

import click

from cjstats.cli._app import DATASETS, emit_frame, format_option

__all__ = ["datasets"]


@click.group("datasets", short_help="The bundled tables: list them, or export one as a score file.")
def datasets() -> None:
    """The bundled real tables (hanna, mentalalign).

    Every data subcommand reads one with --dataset NAME instead of FILE, e.g. `cjstats decompose --dataset
    hanna`; `cjstats datasets export NAME -o FILE` writes the same table to a file.
    """


@datasets.command("list", short_help="Name, size and description of each bundled table.")
@format_option
def list_(fmt: str) -> None:
    """Each bundled table with its description."""
    import pandas as pd

    from cjstats.datasets import DESCRIPTIONS, NAMES

    df = pd.DataFrame([{"name": n, "description": DESCRIPTIONS[n]} for n in sorted(NAMES)])
    text = "\n".join(f"{n}: {DESCRIPTIONS[n]}" for n in sorted(NAMES))
    emit_frame(df, fmt, text=text + "\nUse one with --dataset NAME, or write it with `cjstats datasets export NAME "
                                    "-o FILE`.")


@datasets.command("export", short_help="Write a bundled table as a score file every subcommand reads.")
@click.argument("name", type=click.Choice(DATASETS))
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="File to write: .csv, .csv.gz, .tsv, .parquet or .jsonl (default: CSV on stdout).")
@click.option("--eval-prompt", "eval_prompt", type=click.IntRange(1, 4), default=1, show_default=True,
              help="hanna only: the judge-prompt variant to keep (each LLM score exists under 4 variants).")
@click.option("--keep-sentinels", "keep_sentinels", is_flag=True,
              help="hanna: keep the parse-failure scores below 1 (the authors coded unparsed answers 0 or -1), "
                   "which are left out by default.")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
def export(name: str, output: str | None, eval_prompt: int, keep_sentinels: bool, force: bool) -> None:
    """Write NAME with one row per judge call and the human ratings marked judge_type=human.

    The file is read by every data subcommand with its defaults, e.g. `cjstats decompose FILE` or
    `cjstats humans FILE` (which finds the human raters); `cjstats.read_scores(FILE)` gives
    `cjstats.datasets.load(NAME, humans=True)`. HANNA's parse-failure sentinels (LLM scores below the 1-5
    rubric) are left out, as `cjstats.datasets.load` leaves them out, unless --keep-sentinels.
    """
    from pathlib import Path

    from cjstats.datasets import export as write, table
    from cjstats.exceptions import CjstatsError

    if eval_prompt != 1 and name != "hanna":
        raise CjstatsError(f"The option --eval-prompt applies to hanna only; {name} has one judge prompt. Leave it "
                           f"out.")
    if output is None:
        click.echo(table(name, eval_prompt=eval_prompt, keep_sentinels=keep_sentinels).to_csv(index=False), nl=False)
        return
    if Path(output).exists() and not force:
        raise CjstatsError(f"`{output}` exists; pass --force to overwrite it, or choose another file.")
    path = write(name, output, eval_prompt=eval_prompt, keep_sentinels=keep_sentinels)
    click.echo(f"Wrote {name} to {path}.", err=True)
