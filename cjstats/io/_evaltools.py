"""What the readers of other evaluation tools share: reading one JSON document and refusing a foreign one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.io._paths import expand_sources

__all__ = ["load_json", "files_of", "to_scores"]


def files_of(source: str | Path | Sequence[str | Path], *, caller: str, what: str, pattern: str) -> list[Path]:
    """The files ``source`` names (a file, a folder searched for ``pattern``, a glob or a list)."""
    return expand_sources(
        source, empty_list=f"{caller} got an empty list of files; give at least one {what} file.",
        bad_type=f"{caller} takes a file, a folder, a glob pattern or a list of files. Got {{type}} instead.",
        folder_files=lambda p: sorted(f for f in p.rglob(pattern) if f.is_file()),
        empty_folder=f"The folder `{{path}}` holds no {what} file ({pattern}).",
        missing=f"The {what} file `{{path}}` does not exist.")


def load_json(path: Path, *, what: str) -> Any:
    """One JSON document, or one sentence saying why ``path`` is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CjstatsError(f"`{path}` is not UTF-8 text, so it is not a {what} file.") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CjstatsError(f"`{path}` is not valid JSON ({exc.msg} at line {exc.lineno}), so it is not a {what} "
                           f"file.") from None


def to_scores(records: list[dict[str, Any]], provenance: dict[str, Any], *, where: str) -> Any:
    """The validated :class:`Scores` of ``records``, with ``provenance`` saying what was read and how."""
    from cjstats.io.read import read_scores
    from cjstats.io.scores import Scores

    if not records:
        raise CjstatsError(f"{where} holds no score: nothing is left to analyse.")
    df = pd.DataFrame.from_records(records)
    if "criterion" in df and df["criterion"].nunique() <= 1:
        df = df.drop(columns="criterion")
    scores = read_scores(df)
    return Scores(scores.to_frame(), provenance={**provenance, **{k: v for k, v in scores.provenance.items()
                                                                  if k != "source"}})
