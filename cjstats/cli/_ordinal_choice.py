"""``--method ordinal`` where a command does not offer it: the refusal, and ``--method auto``'s advice.

Kept apart from :mod:`cjstats.cli._ordinal` because :func:`cjstats.cli._app.resolve_method` uses
:func:`ordinal_advice`, and ``_ordinal`` imports ``_app`` (no import circle).
"""

from __future__ import annotations

from typing import Any

import click

__all__ = ["refuse_ordinal", "ordinal_advice"]

#: How :func:`cjstats.estimators.auto_method` names the ordinal backend in its reason (a Python call).
_LIBRARY_CALL = 'cj.estimate(scores, method="ordinal")'


def ordinal_advice(note: str) -> str:
    """``--method auto``'s reason in the CLI's words: the library names ``cj.estimate(scores, method="ordinal")``;
    a command offering ``--method ordinal`` says that, any other names the command that fits it."""
    if _LIBRARY_CALL not in note:
        return note
    ctx = click.get_current_context(silent=True)
    params = ctx.command.params if ctx is not None else []
    offered = any(p.name in ("method", "methods") and isinstance(p.type, click.Choice)
                  and not isinstance(p.type, _NotOrdinal) and "ordinal" in p.type.choices for p in params)
    return note.replace(_LIBRARY_CALL, "--method ordinal" if offered else "cjstats decompose --method ordinal")


def refuse_ordinal(cmd: click.Command, why: str) -> click.Command:
    """Make ``--method ordinal`` on ``cmd`` fail with one sentence (``why``: the reason and what to use instead),
    rather than click's list of choices; the choices offered stay as they are."""
    for p in cmd.params:
        if p.name == "method" and isinstance(p.type, click.Choice):
            p.type = _NotOrdinal(list(p.type.choices), why)
    return cmd


class _NotOrdinal(click.Choice):
    """A ``--method`` choice that answers ``ordinal`` with a sentence saying why not and what instead."""

    def __init__(self, choices: list[str], why: str) -> None:
        super().__init__(choices)
        self.why = why

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.strip().lower() == "ordinal":
            self.fail(f"ordinal is not offered by this command: {self.why}", param, ctx)
        return super().convert(value, param, ctx)
