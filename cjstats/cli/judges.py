"""``cjstats judges FILE``: the judge F-test and the per-judge score table (paper App. G and Table 1)."""

from __future__ import annotations

import click

from cjstats.cli._app import emit_frame, format_option, load_scores, scores_options


@click.command(short_help="Judge F-tests and each model's score under each single judge.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--incomplete", type=click.Choice(["error", "drop"]), default="error", show_default=True,
              help="For the F-test: fail on missing judge calls, or drop incomplete cells.")
@scores_options
@format_option
def judges(file: str, ci_level: float | None, incomplete: str, columns: str | None, duplicates: str,
           composite: bool, fmt: str) -> None:
    """Test the judge main effect per model and tabulate each model's mean under each judge."""
    import pandas as pd

    from cjstats.judges import judge_f_test, judge_table
    from cjstats.report import render_judges

    scores = load_scores(file, columns, duplicates, composite)
    tests = judge_f_test(scores, incomplete=incomplete)
    table = judge_table(scores, ci_level=ci_level)
    if fmt == "table":
        emit_frame(tests, fmt, text=render_judges(tests, table))
    else:
        both = pd.concat([tests.assign(table="f_test"), table.table.assign(table="per_judge")], ignore_index=True)
        emit_frame(both, fmt)
