"""Where the out-of-core engines read from.

A source is a DataFrame, one score file, a folder (every score file under it), a glob such as
``"scores/*.parquet"`` or a list of paths. :func:`resolve` turns it into a :class:`Source` (the files, sorted,
all of one kind) or raises one sentence naming the path. The input rules (canonical columns, synonyms, file
kinds, missing-value strings) and the sentences that refuse a table are not here: the engines take them from
:mod:`cjstats.io.rules`, the one copy :func:`cjstats.read_scores` uses too, so a table refused in memory is
refused the same way out of core. With several files, a row is named as ``row 12 of `b.parquet```. As in
read_scores, a row of a text file (CSV, TSV, JSONL) is named by its line in the file (``line 14``, the header
being line 1), and a row of a DataFrame or Parquet file by its row (see :func:`position`).
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.io import rules
from cjstats.io.read import open_text, sniff_separator

__all__ = ["Source", "resolve", "row_ref", "position", "msg_not_installed", "type_family"]

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
    return rules.file_kind(Path(path), reader="the out-of-core engines read")


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
        raise CjstatsError(rules.msg_no_file(p))
    if p.is_dir():
        found = sorted(str(f) for f in p.rglob("*") if f.is_file() and any(f.name.lower().endswith(x) for x in rules.KINDS))
        if not found:
            raise CjstatsError(f"The folder `{p}` holds no score file ({', '.join(sorted(rules.KINDS))}).")
        return found
    if p.stat().st_size == 0:
        raise CjstatsError(rules.msg_empty_file(p))
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
    return Source(kind=kind, files=tuple(files), sep=_separator(first, kind) if kind in rules.TEXT_KINDS else None)


def _separator(path: str, kind: str) -> str:
    """The separator read_scores would use (``,`` ``;`` tab or ``|``, sniffed from the header line)."""
    try:
        return sniff_separator(Path(path), kind)
    except Exception:  # unreadable header: the reader raises its own sentence
        return "," if kind == "csv" else "\t"


def _count_lines(path: str) -> list[int]:
    """The line numbers (1-based) of the non-blank lines of a text file, and its number of lines last."""
    numbers, n = [], 0
    with open_text(Path(path)) as fh:
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
    if src.kind in rules.TEXT_KINDS and file:
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


def msg_not_installed(engine: str, package: str) -> str:
    return (f"engine='{engine}' needs the {package} package, which is not installed: "
            f"pip install 'cjstats[scale]'.")
