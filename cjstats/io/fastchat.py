"""FastChat MT-Bench single-grade judgments (``<judge>_single.jsonl``) as a score table.

FastChat's ``gen_judgment.py`` writes one ``<judge>_single.jsonl`` per judge into
``data/mt_bench/model_judgment/``; :func:`read_mtbench_judgments` reads one file, a folder of them, a glob
pattern or a list of files, and stacks them into one table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.io._paths import expand_sources
from cjstats.io.read import read_scores
from cjstats.io.scores import Scores

__all__ = ["read_mtbench_judgments", "judgment_files"]

_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".ndjson")


def judgment_files(source: str | Path | Sequence[str | Path]) -> list[Path]:
    """The judgment files named by a file, a folder, a glob pattern or a list of any of these, sorted.

    A folder contributes every ``*_single.jsonl`` in it (every ``.jsonl`` file if none is so named).
    """
    def folder_files(path: Path) -> list[Path]:
        found = sorted(path.glob("*_single.jsonl")) + sorted(path.glob("*_single.jsonl.gz"))
        return found or sorted(p for p in path.iterdir() if p.name.lower().endswith(_SUFFIXES))

    return expand_sources(
        source, empty_list="read_mtbench_judgments got an empty list of files; give at least one file.",
        bad_type="read_mtbench_judgments takes a file, a folder, a glob pattern or a list of files. Got {type} "
                 "instead.",
        folder_files=folder_files,
        empty_folder="The folder `{path}` holds no judgment file (*_single.jsonl); give the folder FastChat wrote "
                     "its judgments to.",
        missing="The judgment file `{path}` does not exist.")


def _records(path: Path) -> list[dict[str, Any]]:
    import gzip
    import zlib

    try:
        return _parse(path)
    except gzip.BadGzipFile:
        raise CjstatsError(f"The judgment file `{path}` is not gzip-compressed data although its name ends in "
                           f".gz; rename it without .gz if it is plain text.") from None
    except (EOFError, zlib.error):
        raise CjstatsError(f"The judgment file `{path}` is cut short: its compressed data ends early, so copy "
                           f"it again.") from None
    except UnicodeDecodeError as exc:
        raise CjstatsError(f"The judgment file `{path}` is not UTF-8 text (byte {exc.object[exc.start]:#04x} at "
                           f"position {exc.start}); FastChat writes UTF-8, so the file was changed or is not "
                           f"a judgment file.") from None


def _parse(path: Path) -> list[dict[str, Any]]:
    import gzip

    records = []
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CjstatsError(f"Line {lineno} of `{path}` is not valid JSON ({exc.msg}).") from exc
            if not isinstance(rec, dict):
                raise CjstatsError(f"Line {lineno} of `{path}` is not a JSON object: this is not a FastChat "
                                   f"single-grade judgment file.")
            for key in ("question_id", "model", "judge", "score"):
                if key not in rec:
                    raise CjstatsError(f"Line {lineno} of `{path}` has no field '{key}': this is not a FastChat "
                                       f"single-grade judgment file.")
            judge = rec["judge"]
            records.append({
                "model": rec["model"], "scenario": rec["question_id"],
                "generation": rec.get("generation", rec.get("sample_id", 0)),
                "judge": judge[0] if isinstance(judge, (list, tuple)) else judge,
                "turn": rec.get("turn", 1), "score": rec["score"],
            })
    return records


def read_mtbench_judgments(path: str | Path | Sequence[str | Path], *,
                           turns: Literal["mean", "separate"] = "mean") -> Scores:
    """Read FastChat MT-Bench single-grade judgments (``*_single.jsonl``) into one table.

    Each line holds ``question_id, model, judge=[name, template], score, turn``. The judge is ``judge[0]``
    (the template differs by question category, not by judge). Scores of -1 mean the judge's answer could
    not be parsed: those calls are dropped and counted in ``provenance['dropped_unparsed']``. A record field
    ``generation`` (or ``sample_id``), when present, gives the generation; otherwise m = 1.

    Parameters
    ----------
    path : path, folder, glob pattern or list of them
        One judgment file, the folder FastChat writes one ``<judge>_single.jsonl`` per judge into, a
        pattern such as ``"judgments/*_single.jsonl"``, or a list of files. All are stacked into one table.
    turns : {"mean", "separate"}
        ``"mean"`` averages the turns of each call into one score per (model, question, judge), as the paper
        does; cells missing a turn are averaged over the turns present and counted in
        ``provenance['partial_turn_cells']``. ``"separate"`` keeps turns apart as criteria ``turn 1``, ``turn 2``.

    Examples
    --------
    >>> import cjstats as cj
    >>> scores = cj.read_mtbench_judgments("data/mt_bench/model_judgment/")  # doctest: +SKIP
    """
    from cjstats._validate import check_choice

    check_choice("turns", turns, ("mean", "separate"), caller="read_mtbench_judgments")
    files = judgment_files(path)
    records = [r for f in files for r in _records(f)]
    where = f"`{files[0]}`" if len(files) == 1 else f"the {len(files)} judgment files"
    if not records:
        raise CjstatsError(f"The judgment file{'' if len(files) == 1 else 's'} {where} "
                           f"{'is' if len(files) == 1 else 'are'} empty: no judgments.")
    df = pd.DataFrame.from_records(records)
    df["score"] = pd.to_numeric(df["score"], errors="coerce")
    unparsed = (df["score"] == -1) | df["score"].isna()
    dropped = int(unparsed.sum())
    df = df[~unparsed]
    if df.empty:
        raise CjstatsError(f"Every judgment in {where} has score -1 (unparsed): nothing is left to analyse.")
    provenance: dict[str, Any] = {"source": str(files[0]) if len(files) == 1 else [str(f) for f in files],
                                  "format": "fastchat-mtbench-single", "dropped_unparsed": dropped}
    keys = ["model", "scenario", "generation", "judge"]
    if turns == "mean":
        grouped = df.groupby(keys, sort=False)
        n_turns = df["turn"].nunique()
        provenance["partial_turn_cells"] = int((grouped["turn"].nunique() < n_turns).sum())
        out = grouped["score"].mean().reset_index()
    else:
        out = df.assign(criterion="turn " + df["turn"].astype(str)).drop(columns="turn")
    scores = read_scores(out)
    return Scores(scores.to_frame(), provenance={**provenance, **{k: v for k, v in scores.provenance.items()
                                                                  if k != "source"}})
