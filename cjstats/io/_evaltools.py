"""What the readers of other evaluation tools share: reading one JSON document (or JSON Lines) and refusing a
foreign, empty or cut-short one, and handing the rows to the input rules of :func:`cjstats.read_scores`."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.io import rules
from cjstats.io._paths import expand_sources

__all__ = ["load_json", "json_lines", "files_of", "to_scores", "AT"]

#: The key of a record that says where in its file the row comes from (``result 3 of `x.json```): the rules of
#: read_scores name it in their messages (a missing id, a duplicate judge call) instead of a row number.
AT = "_at"


def files_of(source: str | Path | Sequence[str | Path], *, caller: str, what: str, pattern: str) -> list[Path]:
    """The files ``source`` names (a file, a folder searched for ``pattern``, a glob or a list)."""
    return expand_sources(
        source, empty_list=f"{caller} got an empty list of files; give at least one {what} file.",
        bad_type=f"{caller} takes a file, a folder, a glob pattern or a list of files. Got {{type}} instead.",
        folder_files=lambda p: sorted(f for f in p.rglob(pattern) if f.is_file()),
        empty_folder=f"The folder `{{path}}` holds no {what} file ({pattern}).",
        missing=f"The {what} file `{{path}}` does not exist.")


def _text(path: Path, what: str) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CjstatsError(f"`{path}` is not UTF-8 text, so it is not a {what} file.") from None
    if not text.strip():
        raise CjstatsError(rules.msg_empty_file(path, what, "no JSON in it"))
    return text


def load_json(path: Path, *, what: str) -> Any:
    """One JSON document, or one sentence saying why ``path`` is not one: empty, cut short (the text ends inside
    a value: :func:`cjstats.io.rules.json_cut_short`) or not JSON."""
    text = _text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if rules.json_cut_short(text, exc.pos, exc.msg):
            raise CjstatsError(rules.msg_cut_short_json(path, text.count("\n", 0, len(text.rstrip())) + 1)) \
                from None
        raise CjstatsError(f"`{path}` is not valid JSON ({exc.msg} at line {exc.lineno}), so it is not a {what} "
                           f"file.") from None


def json_lines(path: Path, *, what: str) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed line)`` of a JSON Lines file, blank lines skipped; one sentence for an empty file,
    a last line cut short (:func:`cjstats.io.rules.json_cut_short`) or a line that is not JSON."""
    from cjstats.io.read import json_lines as lines_of

    yield from lines_of(_text(path, what).splitlines(), path,
                        not_json=lambda n, msg: f"Line {n} of `{path}` is not valid JSON ({msg}), so the file is not an "
                                                f"{what} file.")


def to_scores(records: list[dict[str, Any]], provenance: dict[str, Any], *, where: str, caller: str = "read_scores",
              duplicates: str = "error") -> Any:
    """The validated :class:`Scores` of ``records``, with ``provenance`` saying what was read and how.

    The rows go through :func:`cjstats.read_scores` (``duplicates`` as there: a judge call twice is refused, or
    averaged and counted); each record's :data:`AT` names its place in the file in the messages, and the advice
    names ``caller``.
    """
    from cjstats.io.read import read_scores
    from cjstats.io.scores import Scores

    if not records:
        raise CjstatsError(f"{where} holds no score: nothing is left to analyse.")
    df = pd.DataFrame.from_records(records)
    if AT in df:
        df = df.set_index(AT).rename_axis("source")
    if "criterion" in df and df["criterion"].nunique() <= 1:
        df = df.drop(columns="criterion")
    try:
        scores = read_scores(df, duplicates=duplicates)  # type: ignore[arg-type]
    except CjstatsError as exc:
        raise CjstatsError(str(exc).replace("read_scores(...,", f"{caller}(...,")) from None
    counts = {(g.model, g.criterion): int(g.design.n_duplicates) for g in scores.groups() if g.design.n_duplicates}
    return Scores(scores.to_frame(), provenance={**provenance, **{k: v for k, v in scores.provenance.items()
                                                                  if k != "source"}}, _n_duplicates=counts)
