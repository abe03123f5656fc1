"""Verdicts as numbers: the pure rule that turns a text (or True/False) score column of pass/fail-style verdicts
into scores, and the sentences that state or refuse it. No file is opened (the readers live in
:mod:`cjstats.io.read` and :mod:`cjstats.io.inspect`).

The vocabularies, matched after trimming spaces and ignoring case:

- Inspect AI's letter grades, as :func:`inspect_ai.scorer.value_to_float` maps them (inspect_ai 0.3,
  ``scorer/_metric.py``: ``CORRECT = "C"``, ``INCORRECT = "I"``, ``PARTIAL = "P"``, ``NOANSWER = "N"``):
  C = 1, P = 0.5, I = 0, N = 0 (a refusal to answer counts as wrong);
- ``pass``/``fail`` (promptfoo and most "LLM-as-judge" accuracy numbers): pass = 1, fail = 0;
- ``true``/``false`` (and a boolean column) and ``yes``/``no`` (also in ``value_to_float``): 1 and 0.

A column is read as verdicts only when every value in it is one of these (a column mixing numbers and words keeps
the non-numeric sentence, naming the first word). The mapping is stated once, in a warning naming the column.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["VERDICTS", "VOCABULARY", "verdict_mapping", "all_words", "msg_verdicts", "msg_text_scores"]

#: Verdict (case-folded) -> score. C/I/P/N as Inspect's value_to_float (C = 1, P = 0.5, I = 0, N = 0).
VERDICTS: dict[str, float] = {"c": 1.0, "p": 0.5, "i": 0.0, "n": 0.0, "pass": 1.0, "fail": 0.0,
                              "true": 1.0, "false": 0.0, "yes": 1.0, "no": 0.0}
#: The vocabularies, as a message names them.
VOCABULARY = "C/I/P/N (Inspect), pass/fail, true/false, yes/no"


def _key(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        import numpy as np

        if isinstance(value, np.bool_):
            return "true" if bool(value) else "false"
    except ImportError:  # pragma: no cover - numpy is a core dependency
        pass
    return value.strip().casefold() if isinstance(value, str) else None


def verdict_mapping(values: Iterable[Any]) -> dict[Any, float] | None:
    """``{value: score}`` for the distinct values of a score column when every one of them is a verdict
    (:data:`VERDICTS`, case and surrounding spaces ignored; True/False booleans too), else None."""
    out: dict[Any, float] = {}
    for v in values:
        key = _key(v)
        if key is None or key not in VERDICTS:
            return None
        out[v] = VERDICTS[key]
    return out or None


_WORD = re.compile(r"[^\W\d_][^\W\d]*(?:[ -][^\W\d]+)*")
_NOT_WORDS = {"nan", "inf", "infinity"}


def all_words(values: Iterable[Any]) -> bool:
    """Whether every value is a word (letters, with spaces or hyphens inside: 'good', 'very good'), none of them a
    spelling of a number (nan, inf): a column of such values gets :func:`msg_text_scores`; any other non-numeric
    column keeps the sentence naming its first non-number (the same one the DuckDB engine words)."""
    seen = False
    for v in values:
        text = v.strip() if isinstance(v, str) else None
        if text is None or not _WORD.fullmatch(text) or text.casefold() in _NOT_WORDS:
            return False
        seen = True
    return seen


def _shown(value: Any) -> str:
    return str(value) if isinstance(value, bool) else str(value).strip()


def msg_verdicts(column: str, mapping: Mapping[Any, float]) -> str:
    """The one sentence stating how verdicts were read, e.g. "Column 'score' holds verdicts, read as C = 1,
    P = 0.5, I = 0 (as Inspect's value_to_float); recode the column as numbers to score them otherwise."."""
    first: dict[str | None, tuple[str, float]] = {}
    for k, v in mapping.items():            # one spelling per verdict ('pass', not 'pass, Pass, PASS')
        first.setdefault(_key(k), (_shown(k), v))
    pairs = sorted(first.values(), key=lambda kv: (-kv[1], kv[0].casefold()))
    shown = ", ".join(f"{k} = {v:g}" for k, v in pairs)
    inspect = any(_key(k) in ("c", "i", "p", "n") for k in mapping)
    source = " (as Inspect's value_to_float)" if inspect else ""
    return (f"Column '{column}' holds verdicts, read as {shown}{source}; recode the column as numbers to score "
            f"them otherwise.")


def msg_text_scores(column: str, values: Iterable[Any], count: int) -> str:
    """The sentence for a score column of words that are neither numbers nor verdicts, naming a few of them."""
    distinct = list(dict.fromkeys(_shown(v) for v in values))
    shown = ", ".join(repr(v) for v in distinct[:4]) + (", ..." if len(distinct) > 4 else "")
    return (f"Column '{column}' holds text ({count} values: {shown}) that is neither numbers nor verdicts "
            f"({VOCABULARY}); recode it as numbers before read_scores().")
