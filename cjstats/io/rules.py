"""The input rules of a score table, in one place: the canonical columns, the names they go by, the file kinds,
the strings read as missing, and the sentences that refuse a table.

Every route that reads scores applies these rules: :func:`cjstats.read_scores` (the pandas and Arrow routes,
:mod:`cjstats.io.read`) and the out-of-core engines (DuckDB and Dask, :mod:`cjstats.stats.engines`), which
build their SQL from the same tables (``NA_STRINGS`` becomes DuckDB's ``nullstr`` list, ``INT_TEXT`` its
``regexp_full_match`` pattern). So a table refused in memory is refused out of core with the same sentence,
and ``tests/test_input_rules.py`` fails when the routes drift apart.

Each message is one sentence naming the column, the first offending value and where it is (``row 12``,
``line 14`` or ``line 14 of `b.csv```), and the fix. Everything here is a pure function of names and values:
no file is opened (the readers live in :mod:`cjstats.io.read`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cjstats._validate import bool_score_message, nonnumeric_score_message
from cjstats.exceptions import CjstatsError

__all__ = ["ID_COLUMNS", "LABEL_COLUMNS", "REQUIRED", "SYNONYMS", "KINDS", "TEXT_KINDS", "NA_STRINGS", "INT_TEXT",
           "file_kind", "suggest_mapping", "check_mapping", "missing_columns", "wide_pattern",
           "msg_missing_column", "msg_empty", "msg_no_file", "msg_empty_file", "msg_missing_ids", "msg_nested_ids",
           "msg_bool_score", "msg_nonnumeric", "msg_nan", "msg_inf", "msg_huge", "msg_sentinel", "msg_duplicates",
           "other_separator", "json_cut_short", "msg_cut_short_json", "msg_no_model"]

#: The id columns of a judge call; with ``score`` (and optionally ``criterion``) they make a long table.
ID_COLUMNS: tuple[str, ...] = ("model", "scenario", "generation", "judge")

#: The columns read as labels (ids), never as numbers.
LABEL_COLUMNS: tuple[str, ...] = (*ID_COLUMNS, "criterion")

#: The columns a table must have (``generation`` defaults to one per scenario, m = 1).
REQUIRED: tuple[str, ...] = ("model", "scenario", "judge", "score")

#: Column-name synonyms, used to suggest a ``columns=`` mapping when a canonical column is missing.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "judge": ("rater", "annotator", "evaluator", "grader", "judge_model", "judge_name"),
    "scenario": ("item", "question_id", "question", "prompt", "prompt_id", "scenario_id", "item_id", "task"),
    "generation": ("sample", "sample_id", "seed", "run", "replicate", "generation_id", "draw"),
    "score": ("rating", "value", "grade", "label", "points"),
    "model": ("system", "candidate", "model_name", "policy"),
}

#: File suffix -> reader kind (the files every route reads).
KINDS: dict[str, str] = {".csv": "csv", ".csv.gz": "csv", ".tsv": "tsv", ".tsv.gz": "tsv", ".parquet": "parquet",
                         ".pq": "parquet", ".jsonl": "jsonl", ".jsonl.gz": "jsonl", ".ndjson": "jsonl"}

#: Kinds read as text: every column a string.
TEXT_KINDS: tuple[str, ...] = ("csv", "tsv")

#: Strings read as missing in a text file (pandas.read_csv's default ``na_values``).
NA_STRINGS: tuple[str, ...] = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                               "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")

#: A plain integer label (``12``, ``-3``; not ``007``, ``+5`` or ``1.0``): a text id column whose every value
#: matches becomes integers, losslessly; any other stays text.
INT_TEXT = r"-?(?:0|[1-9][0-9]*)"


# ----------------------------------------------------------------------------------------------- columns
def file_kind(path: Any, *, reader: str = "read_scores reads") -> str:
    """The reader kind of a file name (``csv``, ``tsv``, ``parquet`` or ``jsonl``), by its longest known suffix.

    ``reader`` names who refuses an unknown suffix in the sentence (``read_scores reads`` or ``the out-of-core
    engines read``). Only the name is looked at.
    """
    name = str(getattr(path, "name", path)).lower()
    for suffix in sorted(KINDS, key=len, reverse=True):
        if name.endswith(suffix):
            return KINDS[suffix]
    raise CjstatsError(f"Unknown file type of `{path}`: {reader} {', '.join(sorted(KINDS))} files "
                       f"(or pass a DataFrame).")


def suggest_mapping(missing: Sequence[str], found: Sequence[str]) -> dict[str, str]:
    """A ``columns=`` mapping ``{yours: ours}`` for the missing canonical columns whose synonym is among ``found``
    (case-insensitive; the first synonym in :data:`SYNONYMS` order wins)."""
    lower = {c.lower(): c for c in found}
    out = {}
    for col in missing:
        for syn in SYNONYMS.get(col, ()):
            if syn in lower:
                out[lower[syn]] = col
                break
    return out


def check_mapping(columns: Any, names: Sequence[Any]) -> None:
    """Raise the sentence for a ``columns=`` mapping that does not fit the column ``names`` of the table: not a
    mapping, a name the table lacks, a target the table already has, or two columns mapped to one name."""
    if not isinstance(columns, Mapping):
        raise CjstatsError("The 'columns' argument of read_scores must be a mapping such as "
                           "{'rater': 'judge'}.")
    names = list(names)
    absent = [c for c in columns if c not in names]
    if absent:
        raise CjstatsError(f"columns maps '{absent[0]}', but scores has no column '{absent[0]}' "
                           f"(found: {', '.join(map(str, names))}).")
    taken = [(theirs, ours) for theirs, ours in columns.items()
             if ours in names and ours != theirs and ours not in columns]
    if taken:
        theirs, ours = taken[0]
        raise CjstatsError(f"columns maps '{theirs}' to '{ours}', but scores already has a column '{ours}'; "
                           f"drop one of the two columns, or map '{ours}' to another name as well.")
    targets = list(columns.values())
    twice = next((t for t in targets if targets.count(t) > 1), None)
    if twice is not None:
        both = [k for k, v in columns.items() if v == twice]
        raise CjstatsError(f"columns maps both '{both[0]}' and '{both[1]}' to '{twice}'; map one column to "
                           f"each name.")


def missing_columns(found: Sequence[Any]) -> list[str]:
    """The required columns (:data:`REQUIRED`, in that order) that ``found`` lacks."""
    have = set(found)
    return [c for c in REQUIRED if c not in have]


def wide_pattern(numeric: Mapping[str, bool]) -> str | None:
    """``'score_*'`` when two or more number columns share a prefix such as ``score_`` (a wide table), else None.

    ``numeric`` maps each column name to whether its first values are numbers (each route decides that on its
    own data). A prefix ends at the first ``_ - . :`` followed by another character; canonical column names never
    count; among prefixes with >= 2 columns, one starting with ``score`` wins, then the most columns.
    """
    prefixes: dict[str, int] = {}
    for col, is_number in numeric.items():
        m = re.match(r"^(.*?[_\-.:])[^_\-.:]", col)
        if m and is_number and col.lower() not in REQUIRED + ("generation", "criterion"):
            prefixes[m.group(1)] = prefixes.get(m.group(1), 0) + 1
    best = max(((p.lower().startswith("score"), n, p) for p, n in prefixes.items() if n >= 2), default=None)
    return f"{best[2]}*" if best else None


# ---------------------------------------------------------------------------------------------- messages
def msg_missing_column(missing: Sequence[str], found: Sequence[str],
                       numeric: Callable[[], Mapping[str, bool]] | None = None) -> str:
    """The sentence for a table that lacks ``missing[0]``: a header split at the wrong separator (a column name
    that is several names joined by ``;``, tab or ``|``: :func:`other_separator`) is named as such; a wide table
    (no ``judge`` and no ``score`` but one number column per judge, asked of ``numeric()`` only then) is told
    to use ``judge_columns=``; otherwise a ``columns=`` mapping is suggested from the synonyms of ``found``."""
    found = [str(c) for c in found]
    split = other_separator(found)
    if split is not None:
        sep, name, parts = split
        shown = "tab" if sep == "\t" else sep
        return (f"scores has no column '{missing[0]}', but the file looks `{shown}`-separated: its column name "
                f"`{name}` splits at `{shown}` into {', '.join(parts)}; save it with one separator throughout (a "
                f"`,` in a column name makes a .csv read as comma-separated).")
    if numeric is not None and {"judge", "score"} <= set(missing):
        wide = wide_pattern(numeric())
        if wide is not None:
            return (f"scores has no column 'judge' or 'score' but one score column per judge (found: "
                    f"{', '.join(found)}); read the wide table with read_scores(path, judge_columns={wide!r}).")
    guess = suggest_mapping(missing, found) or {"<your column>": missing[0]}
    return (f"scores has no column '{missing[0]}' (found: {', '.join(found) or 'no columns'}). "
            f"Map yours with read_scores(path, columns={guess!r}).")


def other_separator(found: Sequence[Any]) -> tuple[str, str, list[str]] | None:
    """``(separator, column name, its parts)`` when a column name is a whole header joined by another separator
    (``;``, tab or ``|``): the file was split at the wrong character. A name counts when splitting it gives at
    least two of the required columns (:data:`REQUIRED`) or their synonyms; None otherwise."""
    known = set(REQUIRED) | {"generation", "criterion"} | {s for syns in SYNONYMS.values() for s in syns}
    for name in map(str, found):
        for sep in (";", "\t", "|"):
            parts = [p.strip().strip('"') for p in name.split(sep)]
            if len(parts) > 1 and sum(p.lower() in known for p in parts) >= 2:
                return sep, name, parts
    return None


def json_cut_short(text: str, pos: int, msg: str) -> bool:
    """Whether a JSON decoding error (``json.JSONDecodeError``'s ``pos`` and ``msg``) means the text ends inside
    a value: the error is at the end of the text (trailing spaces left out), a string runs to the end (the
    decoder reports an unterminated string, or an escape, at its start) or the text ends inside a word or a
    number (``tru``, ``4.``, ``1e``). A file broken anywhere else is not cut short."""
    rest = text[pos:].rstrip()
    return (pos >= len(text.rstrip()) or msg.startswith("Unterminated string")
            or any(word.startswith(rest) and word != rest for word in _JSON_WORDS)
            or re.fullmatch(r"-|\.|[eE][+-]?", rest) is not None
            or (msg.startswith("Invalid \\uXXXX escape") and '"' not in rest))


#: The JSON words (and Python's extensions) that a file cut short can end inside (``tru``, ``-``).
_JSON_WORDS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")


def msg_cut_short_json(path: Any, line: int) -> str:
    return (f"`{path}` is cut short at line {line} (the file ends inside a JSON value): rewrite it or re-run the "
            f"eval.")


def msg_no_model(path: Any, reader: str) -> str:
    return (f"The model of `{path}` is unknown: the file names none and neither does its folder; give it with "
            f"{reader}(path, model='<model name>').")


def msg_empty() -> str:
    return "scores is empty: it has the columns but no rows to analyse."


def msg_no_file(path: Any) -> str:
    return f"The score file `{path}` does not exist."


def msg_empty_file(path: Any, what: str = "score", holds: str = "no header and no rows") -> str:
    return f"The {what} file `{path}` is empty: it has {holds}."


def msg_missing_ids(col: str, count: int, where: str) -> str:
    return (f"Column '{col}' has {count} missing values (first in {where}). "
            f"Fill or drop them before read_scores().")


def msg_nested_ids(col: str, kind: str, where: str) -> str:
    return (f"Column '{col}' holds {kind} values (first in {where}), "
            f"but ids must be text or numbers; flatten that field before read_scores().")


def msg_bool_score() -> str:
    return bool_score_message()


def msg_nonnumeric(count: int, raw: Any, where: str) -> str:
    return nonnumeric_score_message(count, raw, where)     # True/False text gets the True/False sentence


def msg_nan(count: int, where: str) -> str:
    return (f"Column 'score' has {count} missing (NaN) values (first in {where}). Drop those rows: a failed "
            f"judge call is a missing cell, not a score.")


def msg_inf(count: int, where: str) -> str:
    return (f"Column 'score' has {count} infinite values (first in {where}). "
            f"Drop or recode them before read_scores().")


def msg_huge(count: int, value: float, where: str) -> str:
    """Scores too large to analyse: every |score| must stay below sqrt(max_float / (16 n)) so that a sum of
    n squares (with a factor 16 spare for the mean-square decomposition) stays finite."""
    return (f"Column 'score' has {count} values too large to analyse (first: {value:g} in {where}): their squares "
            f"overflow floating point, so rescale or drop them before read_scores().")


def msg_sentinel(count: int, where: str) -> str:
    """The warning for scores of -1 on a scale whose other scores are all >= 0 (FastChat's failed-parse code)."""
    return (f"Column 'score' has {count} value{'s' if count > 1 else ''} of -1 (first in {where}) on a scale "
            f"whose other scores are all >= 0: -1 is FastChat's code for a judgment it could not parse, so drop "
            f"those rows if they are failed calls (read_mtbench_judgments does).")


def msg_duplicates(n_cells: int, key: Mapping[str, Any], rows: str) -> str:
    where = ", ".join(f"{c} {v!r}" for c, v in key.items())
    return (f"scores has {n_cells} duplicate cells, several rows for one judge call (first: {where} in {rows}). "
            f"Average them with read_scores(..., duplicates='mean') or keep one row per cell.")
