"""``cjstats judges FILE``: the judge F-test and the per-judge score table (paper App. G and Table 1)."""

from __future__ import annotations

import click

from cjstats.cli._app import DataOptions, data_options, emit_tables, format_option, load_scores

__all__ = ["judges"]


@click.command(short_help="Judge F-tests and each model's score under each single judge.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@data_options
@format_option
def judges(file: str, ci_level: float | None, data: DataOptions, fmt: str) -> None:
    """Test the judge main effect per model and tabulate each model's mean under each judge.

    JSON output is one object with two tables: ``f_test`` and ``per_judge``.
    """
    from cjstats.judges import judge_f_test, judge_table
    from cjstats.reporting.text import render_judges

    scores = load_scores(file, data)
    tests = judge_f_test(scores, incomplete=data.incomplete or "error")
    table = judge_table(scores, ci_level=ci_level)
    emit_tables({"f_test": tests, "per_judge": table.table}, fmt, text=render_judges(tests, table))
