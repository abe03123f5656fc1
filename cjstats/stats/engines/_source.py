"""Where the out-of-core engines read from, and the bad-input sentences they share with :func:`read_scores`.

A source is a DataFrame, one score file, a folder (every score file under it), a glob such as
``"scores/*.parquet"`` or a list of paths. :func:`resolve` turns it into a :class:`Source` (the files, sorted,
all of one kind) or raises one sentence naming the path. The message builders below reproduce the wording of
:func:`cjstats.read_scores` word for word, so a table refused in memory is refused the same way out of core;
with several files, a row is named as ``row 12 of `b.parquet```. As in read_scores, a row of a text file (CSV,
TSV, JSONL) is named by its line in the file (``line 14``, the header being line 1), and a row of a DataFrame
or Parquet file by its row (see :func:`position`).
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cjstats._validate import bool_score_message, nonnumeric_score_message
from cjstats.exceptions import CjstatsError

__all__ = ["Source", "resolve", "row_ref", "position", "NA_STRINGS", "TEXT_KINDS", "SYNONYMS",
           "msg_missing_column", "msg_empty", "msg_missing_ids",
           "msg_bool_score", "msg_nonnumeric", "msg_nan", "msg_inf", "msg_duplicates", "msg_not_installed",
           "suggest_mapping", "type_family", "KINDS"]

#: File suffix -> reader kind (the suffixes :func:`cjstats.read_scores` reads).
KINDS: dict[str, str] = {".csv": "csv", ".csv.gz": "csv", ".tsv": "tsv", ".tsv.gz": "tsv", ".parquet": "parquet",
                         ".pq": "parquet", ".jsonl": "jsonl", ".jsonl.gz": "jsonl", ".ndjson": "jsonl"}

#: Kinds read as text: every column a string, as :func:`cjstats.read_scores` reads them.
TEXT_KINDS = ("csv", "tsv")

#: Strings pandas.read_csv reads as missing (its default ``na_values``), so text files agree with read_scores.
NA_STRINGS: tuple[str, ...] = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                               "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")

#: Column-name synonyms used to suggest a ``columns=`` mapping (as read_scores does).
SYNONYMS: dict[str, tuple[str, ...]] = {
    "judge": ("rater", "annotator", "evaluator", "grader", "judge_model", "judge_name"),
    "scenario": ("item", "question_id", "question", "prompt", "prompt_id", "scenario_id", "item_id", "task"),
    "generation": ("sample", "sample_id", "seed", "run", "replicate", "generation_id", "draw"),
    "score": ("rating", "value", "grade", "label", "points"),
    "model": ("system", "candidate", "model_name", "policy"),
}


@dataclass(frozen=True, slots=True)
class Source:
    """A resolved source: a DataFrame, or files of one kind (sorted, so "first" in a message is reproducible)."""

    kind: str                       # "frame", "parquet", "csv", "tsv" or "jsonl"
    files: tuple[str, ...] = ()
    frame: pd.DataFrame | None = None
    sep: str | None = None          # field separator of CSV/TSV files, read from the first file's header

    @property
    def several(self) -> bool:
        return len(self.files) > 1


def _kind(path: str) -> str:
    name = Path(path).name.lower()
    for suffix in sorted(KINDS, key=len, reverse=True):
        if name.endswith(suffix):
            return KINDS[suffix]
    raise CjstatsError(f"Unknown file type of `{path}`: the out-of-core engines read "
                       f"{', '.join(sorted(KINDS))} files (or pass a DataFrame).")


def _is_glob(s: str) -> bool:
    return any(ch in s for ch in "*?[")


def _expand(item: str | Path) -> list[str]:
    s = str(item)
    if _is_glob(s):
        found = sorted(p for p in glob.glob(s, recursive=True) if Path(p).is_file())
        if not found:
            raise CjstatsError(f"No file matches `{s}`: check the folder and the pattern.")
        return found
    p = Path(s)
    if not p.exists():
        raise CjstatsError(f"The score file `{p}` does not exist.")
    if p.is_dir():
        found = sorted(str(f) for f in p.rglob("*") if f.is_file() and any(f.name.lower().endswith(x) for x in KINDS))
        if not found:
            raise CjstatsError(f"The folder `{p}` holds no score file ({', '.join(sorted(KINDS))}).")
        return found
    if p.stat().st_size == 0:
        raise CjstatsError(f"The score file `{p}` is empty: it has no header and no rows.")
    return [str(p)]


def resolve(source: Any) -> Source:
    """A :class:`Source` from a DataFrame, a path, a folder, a glob or a list of paths (one sentence if not)."""
    if isinstance(source, pd.DataFrame):
        return Source(kind="frame", frame=source)
    if isinstance(source, (str, Path)):
        files = _expand(source)
    elif isinstance(source, Sequence) and source and all(isinstance(x, (str, Path)) for x in source):
        files = sorted(dict.fromkeys(f for item in source for f in _expand(item)))
    else:
        raise CjstatsError(f"The source must be a DataFrame, a file path, a folder, a glob such as "
                           f"'scores/*.parquet' or a list of paths. Got {type(source).__name__} instead.")
    kinds = {f: _kind(f) for f in files}
    first = files[0]
    for f, k in kinds.items():
        if k != kinds[first]:
            raise CjstatsError(f"The score files mix file types (`{first}` is {kinds[first].upper()}, `{f}` is "
                               f"{k.upper()}): pass files of one type.")
    kind = kinds[first]
    return Source(kind=kind, files=tuple(files), sep=_separator(first, kind) if kind in TEXT_KINDS else None)


def _separator(path: str, kind: str) -> str:
    """The separator read_scores would use (``,`` ``;`` tab or ``|``, sniffed from the header line)."""
    from cjstats.io.scores import _sniff_separator

    try:
        return _sniff_separator(Path(path), kind)
    except Exception:  # unreadable header: the reader raises its own sentence
        return "," if kind == "csv" else "\t"


def _count_lines(path: str) -> list[int]:
    """The line numbers (1-based) of the non-blank lines of a text file, and its number of lines last."""
    from cjstats.io.scores import _open_text

    numbers, n = [], 0
    with _open_text(Path(path)) as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                numbers.append(n)
    numbers.append(n)
    return numbers


def position(src: Source, file: str | None, row: int, n_rows: Any = None) -> tuple[str, Any]:
    """How read_scores names the 0-based row ``row`` of ``file``: ``("line", n)`` or ``("row", n)``.

    A CSV/TSV row is named by its line (the header is line 1) when the file's rows and lines match one to one
    (no blank lines, no quoted line breaks), else by its 0-based row, as read_scores does; ``n_rows()`` gives
    the number of rows the reader found in the file. A JSONL row is named by its line (blank lines counted).
    """
    if src.kind in TEXT_KINDS and file:
        lines = _count_lines(file)
        if lines[-1] == int(n_rows()) + 1:
            return "line", row + 2
        return "row", row
    if src.kind == "jsonl" and file:
        lines = _count_lines(file)
        return ("line", lines[row]) if row < len(lines) - 1 else ("row", row)
    return "row", row


def row_ref(src: Source, file: str | None, row: Any, unit: str = "row") -> str:
    """How a message names a row: ``row 12`` (one file or a DataFrame) or ``line 12 of `b.csv``` (several files)."""
    return f"{unit} {row} of `{file}`" if src.several and file else f"{unit} {row}"


def type_family(sql_type: str) -> str:
    """The family of a DuckDB type: numeric, string, boolean or the type itself (dates, lists, ...)."""
    t = sql_type.upper()
    if t in ("VARCHAR", "TEXT", "STRING") or t.startswith("VARCHAR") or t == "JSON":
        return "string"
    if t == "BOOLEAN":
        return "boolean"
    if t in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
             "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "REAL") or t.startswith("DECIMAL"):
        return "numeric"
    return t


# ---------------------------------------------------------------------------------------------- messages
def suggest_mapping(missing: list[str], found: list[str]) -> dict[str, str]:
    lower = {c.lower(): c for c in found}
    out = {}
    for col in missing:
        for syn in SYNONYMS.get(col, ()):
            if syn in lower:
                out[lower[syn]] = col
                break
    return out


def msg_missing_column(missing: list[str], found: list[str]) -> str:
    guess = suggest_mapping(missing, found) or {"<your column>": missing[0]}
    return (f"scores has no column '{missing[0]}' (found: {', '.join(found) or 'no columns'}). "
            f"Map yours with read_scores(path, columns={guess!r}).")


def msg_empty() -> str:
    return "scores is empty: it has the columns but no rows to analyse."


def msg_missing_ids(col: str, count: int, where: str) -> str:
    return (f"Column '{col}' has {count} missing values (first in {where}). "
            f"Fill or drop them before read_scores().")


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


def msg_duplicates(n_cells: int, key: dict[str, Any], rows: str) -> str:
    where = ", ".join(f"{c} {v!r}" for c, v in key.items())
    return (f"scores has {n_cells} duplicate cells, several rows for one judge call (first: {where} in {rows}). "
            f"Average them with read_scores(..., duplicates='mean') or keep one row per cell.")


def msg_not_installed(engine: str, package: str) -> str:
    return (f"engine='{engine}' needs the {package} package, which is not installed: "
            f"pip install 'cjstats[scale]'.")
