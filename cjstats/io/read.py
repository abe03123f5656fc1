"""Reading score tables: :func:`read_scores` and every file reader behind it (CSV, TSV, Parquet, JSONL, gzip,
wide tables), by two routes that give the same table.

- **The Arrow route** (plain tables: no wide layout, no reference raters): pyarrow reads the file, every id
  column is coded once by dictionary encoding, the rows are sorted by one int64 key and the groups are built
  from the codes; the long frame is made only when asked for. It declines (returns ``None``) whenever the
  pandas route could say something: an error, a warning, duplicate cells, decimal commas.
- **The pandas route** reads the rest and words every error.

Both check the table against the input rules of :mod:`cjstats.io.rules` (one copy, shared with the DuckDB and
Dask engines) and hand it to :class:`cjstats.io.scores.Scores`. Validation errors are one sentence naming the
column, the first offending value and its row (or line of a text file), and how to fix it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats._defaults import SCORE_COLUMNS
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io import rules
from cjstats.io.rules import INT_TEXT, LABEL_COLUMNS, NA_STRINGS, REQUIRED
from cjstats.io.scores import Scores, _Codes, _groups_from_key, _key_codes, _RowCodes

__all__ = ["read_scores", "read_file", "open_text", "sniff_separator", "ids_as_labels"]


# ------------------------------------------------------------------------------------------------ reading
def open_text(path: Path):
    import gzip

    return gzip.open(path, "rt", encoding="utf-8") if path.name.lower().endswith(".gz") else \
        open(path, encoding="utf-8")


def _scan_lines(path: Path) -> tuple[int, bool]:
    """Lines of a (possibly gzip-compressed) text file, as iterating over it would count them, and whether it
    holds a ``"`` anywhere; read in 1 MB blocks."""
    import gzip

    n, last, quote = 0, b"\n", False
    with (gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")) as fh:
        while block := fh.read(1 << 20):
            n += block.count(b"\n")
            quote = quote or b'"' in block
            last = block[-1:]
    return n + (last != b"\n"), quote


def _has_quote(path: Path) -> bool:
    """Whether a text file holds a ``"`` anywhere (a memory-mapped search; gzip files are read through)."""
    import mmap

    if path.name.lower().endswith(".gz"):
        return _scan_lines(path)[1]
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return mm.find(b'"') != -1


def sniff_separator(path: Path, kind: str) -> str:
    """The field separator of a delimited file, read from its header line (``,`` ``;`` tab or ``|``).

    A ``.csv`` saved with ``;`` (spreadsheet locales that write decimal commas) or tabs, and a ``.tsv``
    saved with commas, are read with the separator their header uses.
    """
    expected = "," if kind == "csv" else "\t"
    with open_text(path) as fh:
        header = fh.readline()
    if expected in header:
        return expected
    counts = {sep: header.count(sep) for sep in (",", ";", "\t", "|")}
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] > 0 else expected


def _cut_short(path: Path) -> CjstatsError:
    return CjstatsError(f"The score file `{path}` is cut short: its compressed data ends before the end of the "
                        f"file, so copy or download it again.")


def json_lines(lines: Sequence[str], path: Any, *, not_json: Callable[[int, str], str]) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed line)`` of JSON Lines text, blank lines skipped: the one loop of every JSONL reader
    (``read_scores`` and the eval-tool readers). A last line that ends inside a value is named as cut short
    (:func:`cjstats.io.rules.json_cut_short`); any other bad line gets ``not_json(line number, decoder message)``."""
    last = max((i for i, line in enumerate(lines, start=1) if line.strip()), default=0)
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            if lineno == last and rules.json_cut_short(line, exc.pos, exc.msg):
                raise CjstatsError(rules.msg_cut_short_json(path, lineno)) from None
            raise CjstatsError(not_json(lineno, exc.msg)) from None
        yield lineno, rec


def _read_jsonl(path: Path) -> pd.DataFrame:
    """Read JSON Lines one line at a time, so an error names the line that is wrong."""
    records, numbers = [], []
    with open_text(path) as fh:
        lines = fh.read().splitlines()
    for lineno, rec in json_lines(lines, path, not_json=lambda n, msg: f"Line {n} of `{path}` is not valid JSON "
                                                                         f"({msg}); fix or remove that line."):
        if not isinstance(rec, dict):
            what = "a JSON array" if isinstance(rec, list) else f"a JSON {type(rec).__name__}"
            raise CjstatsError(f"Line {lineno} of `{path}` is {what}, not an object: JSON Lines holds one record per "
                               f"line, such as {{\"model\": ..., \"score\": ...}}.")
        records.append(rec)
        numbers.append(lineno)
    if not records:
        raise CjstatsError(rules.msg_empty_file(path))
    return pd.DataFrame.from_records(records, index=pd.Index(numbers, name="line"))


def _read_csv_arrow(path: Path, sep: str, *, quoted: bool = True, as_table: bool = False,
                    labels: Sequence[str] = (), numbers: Sequence[str] = ()) -> Any:
    """The table ``pd.read_csv(path, sep=sep, dtype=str, skipinitialspace=True)`` gives, read by pyarrow.csv.

    Every column is read as text. Returns ``None`` whenever pandas could read the file differently, so the
    caller reads it with pandas: pyarrow is missing or fails (ragged rows, bad UTF-8, cut-short gzip: pandas
    then words the error), the file starts with a byte-order mark, or a value is one of pandas' missing-value
    strings (``NA``, empty, ...), starts with a space or tab (pandas skips those) or holds a quote character.

    With ``as_table`` it returns ``(table, columns, floats)`` instead of the DataFrame: the Arrow table as
    read, ``columns`` its columns by name with the ``labels`` columns (names as in the header, stripped)
    dictionary-encoded, and ``floats`` the float64 values of every other column that holds only finite numbers.
    A label column is checked on its distinct values only. The ``numbers`` columns are parsed as float64 while
    reading (no text is kept for them); when one holds anything but finite numbers the file is read again
    all as text.
    """
    import io

    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    try:
        with open_text(path) as fh:
            first = fh.readline()
        if first.startswith("\ufeff"):
            return None
        # a file without any quote has no quoted line break, and parses faster knowing so
        parse = pcsv.ParseOptions(delimiter=sep, newlines_in_values=quoted)
        names = pcsv.read_csv(io.BytesIO(first.encode("utf-8")), parse_options=parse).column_names
        types = {n: pa.float64() if n.strip() in numbers else pa.string() for n in names}
        convert = pcsv.ConvertOptions(column_types=types, strings_can_be_null=False,
                                      quoted_strings_can_be_null=False)
        table = pcsv.read_csv(path, parse_options=parse, convert_options=convert)
    except (pa.ArrowException, OSError, UnicodeDecodeError, EOFError, ValueError):
        if numbers:  # perhaps a score that does not parse: the text read decides
            return _read_csv_arrow(path, sep, quoted=quoted, as_table=as_table, labels=labels)
        return None
    if table.column_names != names:
        return None
    na = pa.array(NA_STRINGS, type=pa.string())
    columns, floats = {}, {}
    for name, column in zip(names, table.columns):
        name = name.strip()
        columns[name] = column
        if name in numbers:
            values = column.to_numpy() if not column.null_count and len(column) else None
            if values is None or not np.isfinite(values).all():  # missing or not finite: the text read decides
                return _read_csv_arrow(path, sep, quoted=quoted, as_table=as_table, labels=labels)
            floats[name] = values
            continue
        if name not in labels:
            try:  # a column of finite numbers holds no missing-value string, space or quote: nothing to check
                if len(column) and np.isfinite(pc.cast(column.slice(0, 1), pa.float64()).to_numpy()).all():
                    values = pc.cast(column, pa.float64()).to_numpy()
                    if np.isfinite(values).all():
                        floats[name] = values
                        continue
            except pa.ArrowException:
                pass
            values = column.unique() if column.num_chunks else column
        else:  # label columns are coded by their distinct values anyway: encode once, check the dictionary
            if column.num_chunks:  # one chunk, one dictionary (chunks encoded apart would need unifying)
                column = pa.chunked_array([pc.dictionary_encode(column.combine_chunks())])
                columns[name] = column
            values = column.chunk(0).dictionary if column.num_chunks else column
        if len(values) and (pc.any(pc.is_in(values, value_set=na)).as_py()
                            or pc.any(pc.match_substring_regex(values, r'^[ \t]|"')).as_py()):
            return None
    return (table, columns, floats) if as_table else table.to_pandas()


@dataclass(frozen=True, slots=True)
class _ArrowRead:
    """A score file read by pyarrow: all its column names, the columns read by name (Arrow arrays; label columns
    of a text file dictionary-encoded) and the float64 values of the text columns that hold only finite
    numbers. When the Arrow route declines the table, ``frame()`` gives the DataFrame the pandas route starts
    from, or, when ``frame`` is None, the pandas route reads the file again."""

    names: list[str]
    columns: Mapping[str, Any]
    floats: Mapping[str, np.ndarray]
    frame: Any = None


def _read_parquet_arrow(path: Path, mapping: Mapping[str, str]) -> _ArrowRead | None:
    """The columns ``read_scores`` uses of a Parquet file, text columns read dictionary-encoded (no string is
    materialised), or ``None`` when ``pd.read_parquet`` could give something else than the plain conversion of
    those columns: pandas metadata that restores an index, a category, a nullable or a ``string`` dtype, or a
    type the fast route does not take (the pandas route then reads the file)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from cjstats.io._arrow import is_text_type

        schema = pq.read_schema(path)
        meta = schema.pandas_metadata or {}
        if any(not isinstance(i, dict) for i in meta.get("index_columns", [])) or \
                len(meta.get("column_indexes", [])) > 1 or len(set(schema.names)) != len(schema.names):
            return None
        stored = {c.get("name"): c.get("numpy_type") for c in meta.get("columns", [])}
        wanted, text = [], []
        for name in schema.names:
            ours = mapping.get(name, name)
            if ours == "judge_type":
                return None
            if ours not in (*LABEL_COLUMNS, "score"):
                continue
            t = schema.field(name).type
            if is_text_type(t):
                if stored.get(name) not in (None, "str", "object"):
                    return None
                text.append(name)
            elif pa.types.is_integer(t) or (ours == "score" and pa.types.is_floating(t)
                                             and not pa.types.is_float16(t)):
                if stored.get(name) not in (None, str(np.dtype(t.to_pandas_dtype()))):
                    return None
            else:
                return None
            wanted.append(name)
        with pq.ParquetFile(path, read_dictionary=text) as pf:  # one file: no dataset layer
            table = pf.read(columns=wanted)
    except Exception:  # noqa: BLE001 - no pyarrow, or a file it cannot read: the pandas route words the error
        return None
    if table.column_names != wanted:
        return None
    return _ArrowRead(list(schema.names), dict(zip(wanted, table.columns)), {})


def read_file(path: Path, *, arrow: Mapping[str, str] | None = None) -> tuple[Any, dict[str, Any]]:
    """Read one score file; id columns of text formats are read as text (see :func:`ids_as_labels`).

    Returns a DataFrame, or with ``arrow`` (the column mapping of read_scores) an :class:`_ArrowRead` when
    pyarrow reads the file as pandas would.
    """
    import zlib
    from gzip import BadGzipFile

    if not path.exists():
        raise CjstatsError(rules.msg_no_file(path))
    if path.is_dir():
        raise CjstatsError(f"`{path}` is a folder; give read_scores one score file, or fit every file in it "
                           f"without loading the rows: cj.estimate('{path}/*.parquet', engine='duckdb') (docs/scale.md).")
    kind = rules.file_kind(path)
    if path.stat().st_size == 0:
        raise CjstatsError(rules.msg_empty_file(path))
    info: dict[str, Any] = {}
    try:
        if kind in ("csv", "tsv"):
            sep = sniff_separator(path, kind)
            if sep != ("," if kind == "csv" else "\t"):
                info["separator"] = {"\t": "tab"}.get(sep, sep)
            with open_text(path) as fh:
                header = [c.strip().strip('"').lstrip("\ufeff") for c in fh.readline().rstrip("\r\n").split(sep)]
            twice = next((c for c in header if c and header.count(c) > 1), None)
            if twice is not None:
                raise CjstatsError(f"The header of `{path}` names column '{twice}' twice; rename one of them so "
                                   f"each column has its own name.")
            # the Arrow route (not for decimal commas or reference raters); lines are counted only for messages
            if arrow is not None and sep != ";" and all(arrow.get(c, c) != "judge_type" for c in header):
                labels = [c for c in header if arrow.get(c, c) in LABEL_COLUMNS]
                numbers = [c for c in header if arrow.get(c, c) == "score"]
                got = _read_csv_arrow(path, sep, quoted=_has_quote(path), as_table=True, labels=labels,
                                      numbers=numbers)
                if got is not None:
                    # declined: the table as read (text ids, parsed scores) is what the pandas route reads
                    return _ArrowRead(list(got[1]), got[1], got[2],
                                      lambda: _csv_frame(got[0].to_pandas(), _scan_lines(path)[0])), info
            n_lines, quoted = _scan_lines(path)
            df = _read_csv_arrow(path, sep, quoted=quoted)
            if df is None:  # pyarrow would read it differently (or not at all): pandas decides and words errors
                df = pd.read_csv(path, sep=sep, dtype=str, skipinitialspace=True, low_memory=False)
            df = _csv_frame(df, n_lines)
            if sep == ";":  # ';'-separated files come from locales that write decimal commas (4,5 = 4.5)
                info["decimal"] = ","
            return df, info
        if kind == "parquet":
            fast = _read_parquet_arrow(path, arrow) if arrow is not None else None
            if fast is not None:
                return fast, info
            try:
                return pd.read_parquet(path), info
            except ImportError as exc:
                raise CjstatsError("Reading Parquet needs pyarrow: pip install 'cjstats[parquet]'.") from exc
        return _read_jsonl(path), info
    except BadGzipFile as exc:
        raise CjstatsError(f"The score file `{path}` is not gzip-compressed data although its name ends in .gz; "
                           f"rename it without .gz if it is plain text.") from exc
    except (EOFError, zlib.error) as exc:
        raise _cut_short(path) from exc
    except UnicodeDecodeError as exc:
        raise CjstatsError(f"The score file `{path}` is not UTF-8 text (byte {exc.object[exc.start]:#04x} at "
                           f"position {exc.start}); save it as UTF-8 (in Excel: CSV UTF-8).") from exc
    except pd.errors.EmptyDataError as exc:
        raise CjstatsError(rules.msg_empty_file(path)) from exc
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError, OSError) as exc:
        if isinstance(exc, CjstatsError):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "end-of-stream" in first or "ended before" in first:
            raise _cut_short(path) from exc
        raise CjstatsError(f"Could not read `{path}` as {kind.upper()}: {first.rstrip('.')}.") from exc


def _csv_frame(df: pd.DataFrame, n_lines: int) -> pd.DataFrame:
    """Strip the column names; number the rows by the line of the file (line 1 is the header) when rows and
    lines match one to one (no blank lines, no quoted line breaks), so messages point at lines."""
    df.columns = [str(c).strip() for c in df.columns]
    if n_lines == len(df) + 1:
        df.index = pd.RangeIndex(2, len(df) + 2, name="line")
    return df


def _numeric_columns(df: pd.DataFrame) -> dict[str, bool]:
    """Whether each column's first 50 values (missing ones left out) are all numbers, for
    :func:`cjstats.io.rules.wide_pattern`."""
    out = {}
    for col in map(str, df.columns):
        head = df[col].dropna().head(50)
        out[col] = bool(len(head) > 0 and pd.to_numeric(head, errors="coerce").notna().all())
    return out


def _first_row(mask: np.ndarray, index: pd.Index) -> Any:
    return index[int(np.flatnonzero(mask)[0])]


def _unit(df: pd.DataFrame) -> str:
    """How messages point at a row: ``line`` (of the file) when the index holds line numbers, ``source`` when
    it holds whole places (``result 3 of `x.json```, written by the readers of other tools), else ``row``."""
    return df.index.name if df.index.name in ("line", "source") else "row"


def _at(unit: str, *where: Any) -> str:
    """``line 12`` (``lines 12 and 40`` for two), or the places themselves when ``unit`` is ``source``."""
    places = " and ".join(map(str, where))
    return places if unit == "source" else f"{unit}{'s' if len(where) > 1 else ''} {places}"


def _check_ids(df: pd.DataFrame, cols: list[str]) -> None:
    for col in cols:
        if pd.api.types.is_object_dtype(df[col]):
            nested = df[col].map(lambda v: isinstance(v, (dict, list, tuple, set))).to_numpy()
            if nested.any():
                kind = type(df[col].iloc[int(np.flatnonzero(nested)[0])]).__name__
                raise CjstatsError(rules.msg_nested_ids(col, kind, _at(_unit(df), _first_row(nested, df.index))))
        bad = df[col].isna().to_numpy()
        if bad.any():
            raise CjstatsError(rules.msg_missing_ids(col, int(bad.sum()), _at(_unit(df), _first_row(bad, df.index))))


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (so messages print ``0``, not ``np.int64(0)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _number_text(v: Any) -> str:
    v = _plain(v)
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _all_int_text(labels: np.ndarray) -> bool:
    """Whether every label (all str) is a plain integer in the sense of ``INT_TEXT`` (``12``, not ``007``)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return bool(pd.Series(labels, dtype=object).str.fullmatch(INT_TEXT).all())
    arr = pa.array(labels, type=pa.string())
    return bool(pc.all(pc.match_substring_regex(arr, f"^{INT_TEXT}$")).as_py() is not False)


def ids_as_labels(col: pd.Series, name: str, *, from_text: bool, text_as_object: bool = True) -> pd.Series:
    """Treat an id column as labels: never merge or split ids by parsing them as numbers.

    A column read from a text file is text; it becomes integers only when every value is a plain integer
    (``12``, not ``1.10`` or ``007``), which is lossless. A column that mixes numbers and text (``3`` and
    ``"3"``) is turned into text, with a warning when that makes two values one label.
    """
    from cjstats import _warnings as warnings  # shown under a blanket ignore

    if from_text and (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
        codes, uniques = pd.factorize(col)  # decide on the distinct labels, not on every row
        uniques = np.asarray(uniques, dtype=object)
        if isinstance(col.dtype, pd.StringDtype) or all(isinstance(v, str) for v in uniques):
            if _all_int_text(uniques):
                try:
                    as_int = uniques.astype(np.int64)
                except OverflowError:  # beyond int64 the integers would not be lossless: they stay text
                    as_int = None
                if as_int is not None:
                    return pd.Series(as_int[codes], index=col.index, name=col.name)
            return col.astype(object) if text_as_object else col
    if not pd.api.types.is_object_dtype(col):
        return col
    values = pd.unique(col)
    numbers = [v for v in values if _is_number(v)]
    texts = {v for v in values if isinstance(v, str)}
    if not numbers or not texts:
        return col
    clash = next(((n, _number_text(n)) for n in numbers if _number_text(n) in texts), None)
    if clash is not None:
        warnings.warn(f"Column '{name}' mixes numbers and text ({_plain(clash[0])!r} and {clash[1]!r}): both are "
                      f"read as the label {clash[1]!r}; make the column one type if they are different "
                      f"{name}s.", CjstatsWarning, stacklevel=3)
    return col.map(lambda v: _number_text(v) if _is_number(v) else v).astype(object)


def _warn_near_duplicates(col: pd.Series | np.ndarray, name: str) -> None:
    """Warn when two labels differ only in case or surrounding spaces (``gpt-4`` and ``GPT-4 ``).

    ``col`` is the column or its distinct labels (the check reads only the distinct labels).
    """
    from cjstats import _warnings as warnings  # shown under a blanket ignore

    pair = _near_duplicates(col)
    if pair is not None:
        warnings.warn(f"Column '{name}' has labels that differ only in case or surrounding spaces "
                      f"({pair[0]!r} and {pair[1]!r}): they are analysed as different {name}s; fix the labels "
                      f"if they name the same one.", CjstatsWarning, stacklevel=3)


def _near_duplicates(col: pd.Series | np.ndarray) -> tuple[str, str] | None:
    """The first two labels (in sorted order) that differ only in case or surrounding spaces, or ``None``."""
    labels = sorted({v for v in pd.unique(np.asarray(col, dtype=object)) if isinstance(v, str)})
    seen: dict[str, str] = {}
    for label in labels:
        key = label.strip().casefold()
        if key in seen:
            return seen[key], label
        seen[key] = label
    return None


def _text_scores(raw: pd.Series) -> np.ndarray | None:
    """A text score column parsed by pyarrow when every value is a number, else ``None`` (pandas then decides).

    For finite numbers pyarrow's cast accepts a subset of what ``pd.to_numeric`` accepts (no surrounding
    spaces, no missing values) and rounds the same way, so the numbers are the same; a column that does not
    parse or gives a NaN or infinity takes the pandas path, which words the error.
    """
    if not isinstance(raw.dtype, pd.StringDtype) or raw.hasnans:
        return None
    try:
        import pyarrow as pa
        import pyarrow.compute as pc

        values = pc.cast(pa.array(raw.array), pa.float64()).to_numpy(zero_copy_only=False)
    except Exception:  # noqa: BLE001 - pyarrow missing, or a value it does not parse: pandas handles it
        return None
    # pyarrow reads 'NAN', 'INF', '1e999' and the like, pandas only some of them: leave those to pandas
    return values if np.isfinite(values).all() else None


def _verdict_scores(raw: pd.Series) -> pd.Series | None:
    """A column of verdicts (True/False, C/I/P/N, pass/fail, yes/no: :mod:`cjstats.io.verdicts`) as numbers, the
    mapping stated once in a warning; None for any other column. A column of words none of which is a number nor
    a verdict is refused with one sentence naming them."""
    from cjstats.io import verdicts

    boolean = pd.api.types.is_bool_dtype(raw) or (raw.dtype == object and pd.api.types.infer_dtype(raw) == "boolean")
    if not boolean and (pd.api.types.is_numeric_dtype(raw) or raw.dtype.kind in "fiuc"):
        return None
    present = raw[raw.notna()]
    mapping = verdicts.verdict_mapping(present.unique())
    if mapping is None:
        if not boolean and verdicts.all_words(present.unique()):
            raise CjstatsError(verdicts.msg_text_scores("score", present.unique(), int(len(present))))
        return None
    from cjstats import _warnings as warnings  # shown under a blanket ignore

    warnings.warn(verdicts.msg_verdicts("score", mapping), CjstatsWarning, stacklevel=4)
    return raw.map(mapping).astype(float)


def _check_scores(df: pd.DataFrame) -> pd.Series:
    raw = df["score"]
    mapped = _verdict_scores(raw)
    if mapped is not None:
        raw = mapped
    values = _text_scores(raw)
    if values is None:
        num = pd.to_numeric(raw, errors="coerce")
        nonnum = (num.isna() & raw.notna()).to_numpy()
        if nonnum.any():
            i = int(np.flatnonzero(nonnum)[0])
            first = _plain(raw.iloc[i])
            raise CjstatsError(rules.msg_nonnumeric(int(nonnum.sum()), first, _at(_unit(df), df.index[i])))
        values = num.to_numpy(dtype=np.float64)
    nan = np.isnan(values)
    if nan.any():
        raise CjstatsError(rules.msg_nan(int(nan.sum()), _at(_unit(df), _first_row(nan, df.index))))
    inf = np.isinf(values)
    if inf.any():
        raise CjstatsError(rules.msg_inf(int(inf.sum()), _at(_unit(df), _first_row(inf, df.index))))
    # A sum of n squares stays finite only when every |score| < sqrt(max_float / n); keep a factor 16 spare for
    # the sums of squares of the mean-square decomposition.
    limit = math.sqrt(np.finfo(np.float64).max / (16.0 * max(len(values), 1)))
    huge = np.abs(values) > limit
    if huge.any():
        i = int(np.flatnonzero(huge)[0])
        raise CjstatsError(rules.msg_huge(int(huge.sum()), values[i], _at(_unit(df), df.index[i])))
    sentinel = values == -1
    if sentinel.any() and (values[~sentinel] >= 0).all():
        from cjstats import _warnings as warnings  # shown under a blanket ignore

        warnings.warn(rules.msg_sentinel(int(sentinel.sum()), _at(_unit(df), _first_row(sentinel, df.index))),
                      CjstatsWarning, stacklevel=3)
    return pd.Series(values, index=df.index, name="score")


def _melt_judges(df: pd.DataFrame, judge_columns: Sequence[str] | str) -> tuple[pd.DataFrame, int]:
    """A wide table (one score column per judge) as the long ``judge``/``score`` table."""
    from fnmatch import fnmatchcase

    names = [str(c) for c in df.columns]
    if isinstance(judge_columns, str):
        pattern = judge_columns
        cols = [c for c in names if fnmatchcase(c, pattern)]
        if not cols:
            raise CjstatsError(f"judge_columns={pattern!r} matches no column (found: {', '.join(names)}).")
        head, star, tail = pattern.partition("*")
        simple = star and "*" not in tail and not any(ch in pattern for ch in "?[")
        labels = {c: (c[len(head):len(c) - len(tail)] or c) if simple else c for c in cols}
    elif isinstance(judge_columns, Sequence) and judge_columns and all(isinstance(c, str) for c in judge_columns):
        cols = list(dict.fromkeys(judge_columns))
        absent = [c for c in cols if c not in names]
        if absent:
            raise CjstatsError(f"judge_columns names '{absent[0]}', but scores has no column '{absent[0]}' "
                               f"(found: {', '.join(names)}).")
        labels = {c: c for c in cols}
    else:
        raise CjstatsError(f"The 'judge_columns' argument of read_scores must be a list of column names or a "
                           f"pattern such as 'score_*'. Got {judge_columns!r} instead.")
    clash = [c for c in ("judge", "score") if c in names and c not in cols]
    if clash:
        raise CjstatsError(f"scores has a column '{clash[0]}' and judge_columns too; a wide table has one column "
                           f"per judge instead, so rename or drop '{clash[0]}'.")
    ids = [c for c in df.columns if str(c) not in cols]
    long = df.melt(id_vars=ids, value_vars=cols, var_name="judge", value_name="score")
    long["judge"] = long["judge"].map(labels)
    blank = long["score"].isna() | (long["score"].astype(str).str.strip() == "")
    return long[~blank].reset_index(drop=True), int(blank.sum())


def read_scores(source: pd.DataFrame | str | Path, *, columns: Mapping[str, str] | None = None,
                duplicates: Literal["error", "mean"] = "error",
                judge_columns: Sequence[str] | str | None = None,
                reference: str | list[str] | None = None) -> Scores:
    """Read and validate a long score table.

    Parameters
    ----------
    source : DataFrame or path
        A DataFrame, or a path to a ``.csv``, ``.csv.gz``, ``.tsv``, ``.parquet`` or ``.jsonl`` file, with one
        row per judge call and the columns ``model, scenario, generation, judge, score`` (and optionally
        ``criterion``). ``generation`` may be absent: every scenario then has one generation (m = 1).
        Other columns are ignored.
    columns : mapping, optional
        Renames your columns to ours, e.g. ``{"rater": "judge", "item": "scenario"}``.
    duplicates : {"error", "mean"}
        What to do when a (model, [criterion], scenario, generation, judge) cell has more than one row:
        raise (default), or average the rows into one and count them in the design summary.
    judge_columns : list of str or str, optional
        Read a *wide* table, one score column per judge (the common spreadsheet layout), instead of the
        ``judge``/``score`` columns. A list names the columns, each column name being the judge; a pattern
        such as ``"score_*"`` takes every matching column, and the judge is the part matched by ``*``
        (``score_gpt4`` gives judge ``gpt4``). Blank cells are calls that were not made: they are left out
        and counted in ``provenance['wide_blank_cells']``.
    reference : str or list of str, optional
        Judges that are reference (human) raters rather than LLM judges. Without it, a ``judge_type`` column
        (values ``human`` / ``llm``) marks the human rows as reference raters. Reference rows are kept apart
        (:meth:`Scores.reference_frame`): every analysis sees only the LLM judges, and ``provenance`` says so.

    Returns
    -------
    Scores
        The validated, immutable table; ``.design`` summarises each model (x criterion).

    Notes
    -----
    Ids are labels, never numbers: in a text file (CSV, TSV, JSONL) ``1.1`` and ``1.10`` are two scenarios and
    ``007`` is not ``7``; a column becomes integers only when every value is a plain integer. A column that
    mixes numbers and text (``3`` and ``"3"``) is read as text, with a :class:`CjstatsWarning` when two
    values become one label, and labels that differ only in case or surrounding spaces (``gpt-4`` /
    ``GPT-4 ``) warn. A ``.csv`` saved with ``;`` (then decimal commas are read as numbers) or tabs, and a
    header with spaces after the commas, are read correctly. Scores of -1 on an otherwise non-negative scale
    (FastChat's "could not parse" code) warn; scores whose squares overflow are refused.

    Examples
    --------
    >>> import cjstats as cj
    >>> scores = cj.read_scores(cj.datasets.table("hanna"))
    >>> scores.design[["model", "n_scenarios", "generations", "n_judges"]].head(2)  # doctest: +SKIP
    """
    from cjstats._validate import check_choice

    check_choice("duplicates", duplicates, ("error", "mean"), caller="read_scores")
    provenance: dict[str, Any] = {}
    from_text = False
    # the Arrow route: plain tables (no wide layout, no reference raters) are coded on Arrow/NumPy arrays
    mapping = (dict(columns) if columns else {}) if judge_columns is None and reference is None and \
        (not columns or isinstance(columns, Mapping)) else None
    fast = None
    if isinstance(source, pd.DataFrame):
        df = source
        provenance["source"] = "DataFrame"
        if mapping is not None:
            fast = _frame_columns(df, mapping)
    elif isinstance(source, (str, Path)):
        path = Path(source)
        df, info = read_file(path, arrow=mapping)
        provenance["source"] = str(path)
        provenance.update(info)
        from_text = rules.file_kind(path) != "parquet"
        if isinstance(df, _ArrowRead):
            if columns:
                rules.check_mapping(columns, df.names)
            fast = ({mapping.get(k, k): v for k, v in df.columns.items()},
                    {mapping.get(k, k): v for k, v in df.floats.items()})
    else:
        raise CjstatsError(f"read_scores takes a DataFrame or a file path. Got {type(source).__name__} instead.")
    if fast is not None:
        got = _fast_scores(fast[0], fast[1], from_text=from_text, provenance=provenance)
        if got is not None:
            scores, distinct = got
            for col, labels in distinct.items():
                _warn_near_duplicates(labels, col)
            return scores
        if isinstance(df, _ArrowRead):  # the pandas route starts from the table read, or reads the file again
            df = df.frame() if df.frame is not None else read_file(path)[0]
    if columns:
        rules.check_mapping(columns, list(df.columns))
        df = df.rename(columns=dict(columns))
    if judge_columns is not None:
        df, blank = _melt_judges(df, judge_columns)
        provenance["wide_blank_cells"] = blank
    missing = rules.missing_columns(list(df.columns))
    if missing:  # a wide table (one score column per judge) is told to use judge_columns=
        raise CjstatsError(rules.msg_missing_column(missing, [str(c) for c in df.columns],
                                                    lambda: _numeric_columns(df)))
    if len(df) == 0:
        raise CjstatsError(rules.msg_empty())
    is_reference = _reference_mask(df, reference)
    keep = [c for c in (*SCORE_COLUMNS, "criterion") if c in df.columns]
    df = df[keep].copy()
    df["_reference"] = is_reference
    if "generation" not in df.columns:
        df.insert(2, "generation", 0)
        provenance["generation"] = "absent: one generation per scenario assumed (m = 1)"
    ids = ["model", "scenario", "generation", "judge"] + (["criterion"] if "criterion" in df.columns else [])
    _check_ids(df, ids)
    if provenance.get("decimal") == "," and not pd.api.types.is_numeric_dtype(df["score"]):
        as_text = df["score"].astype(str).str.strip()
        comma = as_text.str.fullmatch(r"-?\d+,\d+")
        if comma.any():
            df["score"] = as_text.where(~comma, as_text.str.replace(",", ".", regex=False))
        else:
            provenance.pop("decimal")
    elif "decimal" in provenance:
        provenance.pop("decimal")
    df["score"] = _check_scores(df)
    for col in ids:
        # model, judge and criterion become str just below, so text stays text (no round trip through object)
        df[col] = ids_as_labels(df[col], col, from_text=from_text,
                                 text_as_object=col not in ("model", "judge", "criterion"))
    for col in ("model", "judge", "criterion"):
        if col in df.columns:
            df[col] = df[col].astype(str)
    codes = _key_codes(df, "criterion" in df.columns)  # the distinct labels of every id column, factorized once
    distinct = {"model": codes.model_labels, "scenario": codes.scenario_labels,
                "generation": codes.generation_labels, "judge": codes.judge_labels,
                "criterion": codes.criterion_labels}
    for col in ids:
        if df[col].dtype.kind not in "iu":  # integer labels cannot differ only in case or spaces
            _warn_near_duplicates(distinct[col], col)
    unit, where_in_source = _unit(df), df.index  # to name the user's rows or lines in messages
    df = df[[c for c in (*SCORE_COLUMNS[:4], "criterion", "score", "_reference")
             if c in df.columns]].reset_index(drop=True)
    key_cols = ["model"] + (["criterion"] if "criterion" in df.columns else []) + ["scenario", "generation", "judge"]
    dup_sorted = codes.sorted_duplicate_mask()
    if codes.order is None:
        dup = dup_sorted
    else:
        dup = np.empty_like(dup_sorted)
        dup[codes.order] = dup_sorted
    n_dup: dict[tuple, int] = {}
    if dup.any():
        if duplicates == "error":
            rows = np.flatnonzero(dup)
            first = df.iloc[rows[0]]
            same = rows[(df.iloc[rows][key_cols] == first[key_cols]).all(axis=1).to_numpy()]
            n_cells = int(df[dup].groupby(key_cols, sort=False, observed=True).ngroups)
            rows_text = _at(unit, where_in_source[same[0]], where_in_source[same[1]])
            raise CjstatsError(rules.msg_duplicates(n_cells, {c: _plain(first[c]) for c in key_cols}, rows_text))
        grp_cols = ["model"] + (["criterion"] if "criterion" in df.columns else [])
        dups = df[dup].groupby(key_cols, sort=False, observed=True).ngroups
        per_group = df[dup].drop_duplicates(key_cols).groupby(grp_cols, observed=True).size()
        for key, count in per_group.items():
            key = key if isinstance(key, tuple) else (key,)
            n_dup[(str(key[0]), str(key[1]) if len(key) > 1 else None)] = int(count)
        df = df.groupby(key_cols, sort=False, observed=True, as_index=False).agg(
            score=("score", "mean"), _reference=("_reference", "first"))
        provenance["duplicate_cells_averaged"] = int(dups)
    df, ref = _split_reference(df)
    reuse = codes if not dup.any() and ref is None else None  # same rows in the same order: reuse the codes
    return Scores(df, provenance=provenance, _n_duplicates=n_dup, _reference=ref, _codes=reuse)


# --------------------------------------------------------------------------------------- the Arrow route
_STR = pd.StringDtype("pyarrow", na_value=np.nan)  # pandas' default text dtype ("str")


def _is_str(dtype: Any) -> bool:
    """Whether a dtype is exactly ``_STR`` (``==`` alone also holds for the object dtype)."""
    return isinstance(dtype, pd.StringDtype) and dtype == _STR


def _frame_columns(df: pd.DataFrame, mapping: Mapping[str, str]) -> tuple[dict[str, Any], dict] | None:
    """The columns of a DataFrame for :func:`_fast_scores` (after the renaming ``mapping``), or ``None`` when
    its names are not unique text or a mapping check fails (the pandas route then raises the error)."""
    names = list(df.columns)
    if not all(isinstance(c, str) for c in names) or len(set(names)) != len(names):
        return None
    if mapping:
        rules.check_mapping(mapping, names)
    return {mapping.get(c, c): df[c] for c in names}, {}


def _fast_label(col: Any, name: str, *, from_text: bool) -> tuple[np.ndarray, Any, np.ndarray, Any, bool] | None:
    """One id column coded for the Arrow route: ``(codes, labels, labels as objects, result dtype, all used)``
    (see :func:`cjstats.io._arrow.text_codes` for labels that no row uses).

    ``labels`` are what the sorted column is built from (an Arrow string array for text, a NumPy array
    otherwise) and the result dtype is the one the pandas route gives the column: ``str`` for text (object for
    a scenario or generation read from a text file), the integer dtype for integers (int64 for text that
    holds only plain integers). ``None`` for anything else (object columns, nulls, integer models or judges).
    """
    from cjstats.io._arrow import int_codes, text_codes

    is_key = name in ("scenario", "generation")
    if isinstance(col, pd.Series):
        if _is_str(col.dtype):
            got = text_codes(col.array.__arrow_array__())
            if got is None:
                return None
            return got[0], got[1], got[1].to_numpy(zero_copy_only=False), _STR, got[3]
        if not (is_key and isinstance(col.dtype, np.dtype) and col.dtype.kind in "iu"):
            return None
        values = col.to_numpy()
    else:  # an Arrow column of a file
        import pyarrow as pa
        import pyarrow.compute as pc

        if not pa.types.is_integer(col.type):
            got = text_codes(col, as_int=from_text and is_key)
            if got is None:
                return None
            codes, labels, is_int, all_used = got
            if from_text and not is_key and pc.any(pc.equal(labels, "-0")).as_py():
                return None  # the pandas route reads a text model or judge '-0' as the integer 0, then '0'
            if is_int:
                return codes, labels, labels.astype(object), np.dtype(np.int64), all_used
            objects = labels.to_numpy(zero_copy_only=False)
            return codes, labels, objects, np.dtype(object) if from_text and is_key else _STR, all_used
        if not is_key or col.null_count:
            return None
        values = col.to_numpy()
    got = int_codes(values)
    if got is None:  # ids spread over a wide range (hashes, timestamps): a hash table, as the pandas route does
        codes, uniques = pd.factorize(values, sort=True)
        got = codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=values.dtype)
    codes = got[0]
    if isinstance(col, pd.Series) and np.shares_memory(codes, values):  # dense ids are their own codes: the
        codes = codes.copy()  # table must not follow later changes to the caller's DataFrame
    return codes, got[1], got[1].astype(object), values.dtype, True


def _fast_score(col: Any, floats: np.ndarray | None) -> np.ndarray | None:
    """The scores as float64 when every one is a finite number that read_scores takes without a message."""
    if floats is not None:
        y = floats
    elif isinstance(col, pd.Series):
        if not (isinstance(col.dtype, np.dtype) and col.dtype.kind in "iuf"):
            return None
        y = col.to_numpy(dtype=np.float64)
    else:
        import pyarrow as pa

        t = col.type
        if col.null_count or not (pa.types.is_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t)):
            return None
        y = col.to_numpy().astype(np.float64, copy=False)
    limit = math.sqrt(np.finfo(np.float64).max / (16.0 * max(len(y), 1)))  # as in _check_scores
    lo, hi = y.min(), y.max()  # NaN and infinities show in the extremes
    if not (np.isfinite(lo) and np.isfinite(hi)) or max(-lo, hi) > limit:
        return None
    if lo == -1:  # the FastChat warning when the other scores are >= 0: the pandas route words it
        sentinel = y == -1
        if (y[~sentinel] >= 0).all():
            return None
    return y


def _fast_column(coded: tuple, codes: np.ndarray) -> Any:
    """A sorted id column built from its codes and few labels, with the dtype the pandas route gives."""
    labels, objects, dtype = coded[1:4]
    if _is_str(dtype):
        import pyarrow as pa

        out = pa.chunked_array([labels.take(pa.array(codes))]).to_pandas()
        return out if _is_str(out.dtype) else out.astype(_STR)
    if dtype == object:  # a Series, or pandas would infer str from the object array
        return pd.Series(objects[codes], dtype=object)
    return labels.astype(dtype, copy=False)[codes]


def _fast_scores(cols: Mapping[str, Any], floats: Mapping[str, np.ndarray], *, from_text: bool,
                 provenance: dict[str, Any]) -> tuple[Scores, dict[str, np.ndarray]] | None:
    """``read_scores`` on Arrow/NumPy columns: code every id column once (dictionary encoding for text), sort
    by the combined int64 key and build the sorted table and groups from the codes.

    Returns the table and the distinct text labels of each id column (for the near-duplicate warnings), or
    ``None`` whenever the pandas route could say something (an error, a warning other than near-duplicate
    labels, duplicate cells, reference raters, decimal commas), so that route reads the table instead.
    """
    from cjstats.io._arrow import sort_key

    if any(c not in cols for c in REQUIRED) or "judge_type" in cols or provenance.get("decimal"):
        return None
    n = len(cols["score"])
    if n == 0 or any(len(v) != n for v in cols.values()):
        return None
    has_crit = "criterion" in cols
    names = ["model", "scenario", "generation", "judge"] + (["criterion"] if has_crit else [])
    coded: dict[str, tuple] = {}
    for name in names:
        if name == "generation" and name not in cols:
            coded[name] = (np.zeros(n, dtype=np.int32), np.zeros(1, dtype=np.int64),
                           np.zeros(1, dtype=np.int64).astype(object), np.dtype(np.int64), True)
            continue
        got = _fast_label(cols[name], name, from_text=from_text)
        if got is None:
            return None
        coded[name] = got
    y = _fast_score(cols["score"], floats.get("score"))
    if y is None:
        return None
    m, m_lab = coded["model"][0], coded["model"][2]
    c, c_lab = (coded["criterion"][0], coded["criterion"][2]) if has_crit else (None, None)
    g = m if c is None else m * len(c_lab) + c
    n_crit = 1 if c is None else len(c_lab)
    s, gen, j = coded["scenario"][0], coded["generation"][0], coded["judge"][0]
    got = sort_key([g, s, gen, j], [len(m_lab) * n_crit, len(coded["scenario"][2]), len(coded["generation"][2]),
                                    len(coded["judge"][2])])
    if got is None or got[2]:  # a key too wide for int64, or duplicate cells: the pandas route
        return None
    order, key, _ = got
    if "generation" not in cols:
        provenance["generation"] = "absent: one generation per scenario assumed (m = 1)"
    cd = _Codes(m, m_lab, c, c_lab, s, coded["scenario"][2], gen, coded["generation"][2], j, coded["judge"][2],
                order, key)
    # rows of each group: the sorted key runs through the groups in order, each a block of `per` keys
    per = len(coded["scenario"][2]) * len(coded["generation"][2]) * len(coded["judge"][2])
    bounds = np.searchsorted(key, (np.arange(len(m_lab) * n_crit + 1, dtype=np.int64) * per).astype(key.dtype))
    sizes = np.diff(bounds)
    gids = np.flatnonzero(sizes)
    # y may be the caller's memory (a DataFrame column) or a read-only Arrow buffer: the table gets its own copy
    y = y[order] if order is not None else np.array(y, dtype=np.float64)
    groups, row_codes = _groups_from_key(cd, key, y, bounds, (len(coded["scenario"][2]),
                                                              len(coded["generation"][2]), len(coded["judge"][2])))
    specs = {name: (None, *coded[name][1:4]) for name in names}  # labels and dtypes only (not the row codes)
    build = _ArrowFrame(specs, gids, sizes[gids], n_crit, row_codes, y)

    # the pandas route warns about labels that differ only in case or spaces in every column not of integers
    distinct = {}
    for name in names:
        codes, labels, objects, dtype, all_used = coded[name]
        if dtype.kind in "iu":
            continue
        if not all_used and _near_duplicates(objects) is not None:  # only labels that rows use count
            objects = objects[np.bincount(codes, minlength=len(objects)) > 0]
        distinct[name] = objects
    return Scores._assembled(build, has_crit, groups, provenance), distinct


@dataclass(frozen=True, slots=True)
class _ArrowFrame:
    """The sorted long frame of a table read by the Arrow route, built on call from the codes: group ``gids[i]``
    (model ``gid // n_crit``, criterion ``gid % n_crit``) holds the next ``sizes[i]`` rows, ``row_codes()`` gives
    the scenario, generation and judge codes of every row and ``specs`` the labels and dtype of each id column.
    Data, not a closure, so a :class:`Scores` pickles before its frame is made."""

    specs: Mapping[str, tuple]
    gids: np.ndarray
    sizes: np.ndarray
    n_crit: int
    row_codes: _RowCodes
    y: np.ndarray

    def __call__(self) -> pd.DataFrame:  # every column is a new array: no copy needed
        s, gen, j = self.row_codes()
        sorted_codes = {"model": np.repeat(self.gids // self.n_crit, self.sizes), "scenario": s, "generation": gen,
                        "judge": j}
        if "criterion" in self.specs:
            sorted_codes["criterion"] = np.repeat(self.gids % self.n_crit, self.sizes)
        columns = {name: _fast_column(self.specs[name], sorted_codes[name])
                   for name in ("model", "scenario", "generation", "judge", "criterion") if name in self.specs}
        return pd.DataFrame({**columns, "score": self.y}, copy=False)


# -------------------------------------------------------------------------------- reference (human) raters
_JUDGE_TYPES = ("human", "llm")


def _reference_mask(df: pd.DataFrame, reference: str | list[str] | None) -> np.ndarray:
    """Which rows are reference ratings: the judges named in ``reference``, else ``judge_type == 'human'``."""
    judges = df["judge"].astype(str)
    if reference is not None:
        names = [reference] if isinstance(reference, str) else reference
        if not isinstance(names, (list, tuple)) or not names or not all(isinstance(x, str) for x in names):
            raise CjstatsError(f"The 'reference' argument of read_scores must be a judge name or a list of judge "
                               f"names. Got {reference!r} instead.")
        found = set(judges)
        unknown = [x for x in names if x not in found]
        if unknown:
            raise CjstatsError(f"The reference rater '{unknown[0]}' is not in column 'judge' (judges: "
                               f"{', '.join(sorted(found))}); name the human raters exactly as they appear there.")
        return judges.isin(names).to_numpy()
    if "judge_type" not in df.columns:
        return np.zeros(len(df), dtype=bool)
    kind = df["judge_type"]
    bad = (kind.isna() | ~kind.astype(str).str.strip().str.lower().isin(_JUDGE_TYPES)).to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CjstatsError(f"Column 'judge_type' must hold 'human' or 'llm' but has {kind.iloc[i]!r} in row "
                           f"{df.index[i]}; recode it or drop the column.")
    return (kind.astype(str).str.strip().str.lower() == "human").to_numpy()


def _split_reference(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    mask = df["_reference"].to_numpy(dtype=bool)
    df = df.drop(columns="_reference")
    if not mask.any():
        return df, None
    if mask.all():
        names = ", ".join(sorted(set(df["judge"].astype(str))))
        raise CjstatsError(f"Every row of scores is a reference rating ({names}): there are no LLM-judge rows to "
                           f"analyse; add the judges' scores or mark fewer raters as reference.")
    return df[~mask].reset_index(drop=True), df[mask].reset_index(drop=True)
