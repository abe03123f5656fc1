"""``cjstats judges FILE``: the judge F-test and the per-judge score table (paper App. G and Table 1)."""

from __future__ import annotations

import click

from cjstats.cli._app import (
    DataOptions, anova_options, data_options, emit_tables, format_option, load_scores, method_option, resolve_method,
)
from cjstats.cli._ordinal_choice import refuse_ordinal

__all__ = ["judges"]


@click.command(short_help="Judge F-tests and each model's score under each single judge.")
@click.argument("file", type=click.Path(dir_okay=False))
@method_option(choices=("auto", "anova", "reml"))
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@data_options
@format_option
def judges(file: str, method: str, ci_level: float | None, data: DataOptions, fmt: str) -> None:
    """Test the judge main effect per model and tabulate each model's mean under each judge.

    The test is the F test of paper App. G (anova) on complete balanced groups, and the Wald F of the judge
    offsets from REML, which keeps every call, otherwise (--method auto, the default).
    JSON output is one object with two tables: ``f_test`` and ``per_judge``.
    """
    from cjstats.estimators.judges import judge_f_test, judge_table
    from cjstats.reporting.text import render_judges

    scores = load_scores(file, data)
    chosen, note = resolve_method(scores, method, data.incomplete)
    tests = judge_f_test(scores, method=chosen, **anova_options(chosen, data.incomplete, data.max_drop))
    table = judge_table(scores, ci_level=ci_level)
    emit_tables({"f_test": tests, "per_judge": table.table}, fmt,
                text=(note + "\n" if note else "") + render_judges(tests, table))


# --method ordinal: one sentence saying why not here and what to use instead (issue 22)
refuse_ordinal(judges,
               "the judge F tests compare score-scale means (ANOVA or REML); the ordinal fit's judge offsets, with "
               'intervals, are printed by cjstats decompose FILE --method ordinal --offsets')
