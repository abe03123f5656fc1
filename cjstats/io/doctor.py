"""What kind of score file is this? Format detection and the facts ``cjstats doctor`` reports.

:func:`detect_format` names the format of a file (or table); :func:`read_any` reads it with the matching reader
and keeps the raw long table, so columns the analysis ignores (possible covariates) can be looked at;
:func:`describe` counts what was found. The :class:`~cjstats.results.diagnosis.Diagnosis` result and the
commands to run are built from these in :func:`cjstats.results.diagnosis.diagnose`.

Formats: ``long`` (CSV/TSV/Parquet/JSONL with model, scenario, judge, score columns), ``wide`` (one score column
per judge, e.g. ``score_gpt4``), ``inspect`` (Inspect AI ``.eval``/``.json`` logs), ``fastchat``
(MT-Bench ``*_single.jsonl``), ``promptfoo``, ``deepeval`` and ``lm-eval`` (``samples_<task>_<date>.jsonl``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.io import rules
from cjstats.io.score_kind import ORDINAL_MAX_LEVELS, score_kind, score_shape
from cjstats.io.scores import Scores

__all__ = ["FORMATS", "detect_format", "read_any", "describe", "score_kind", "score_counts", "covariate_columns",
           "ORDINAL_MAX_LEVELS", "ERRORED_COUNTS"]

FORMATS = ("long", "wide", "inspect", "fastchat", "promptfoo", "deepeval", "lm-eval")


def _first_json_line(path: Path) -> Any:
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    return json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError, OSError):
        return None
    return None


def _tool_files(folder: Path) -> list[Path]:
    """The files in a folder (searched recursively) that an eval-tool reader could read."""
    from cjstats.io.lm_eval import sample_file_parts

    return sorted(f for f in folder.rglob("*") if f.is_file() and (
        f.name.lower().endswith((".eval", ".json")) or sample_file_parts(f) is not None))


def _paths(source: Any) -> list[Path]:
    """The files and folders ``source`` names: a path, a folder, a glob pattern or a list of them (a folder is
    kept whole: its format decides which of its files are read)."""
    import glob as _glob

    items = list(source) if isinstance(source, (list, tuple)) else [source]
    if not items:
        raise CjstatsError("cjstats doctor got no file; give a score file, several, a glob pattern or a folder.")
    out: list[Path] = []
    for item in items:
        path = Path(item)
        if not path.exists() and _glob.has_magic(str(item)):
            found = sorted(Path(p) for p in _glob.glob(str(item)))
            if not found:
                raise CjstatsError(f"The pattern `{item}` matches no file.")
            out += [p for p in found if p not in out]
        elif not path.exists():
            raise CjstatsError(f"The file `{path}` does not exist.")
        elif path not in out:
            out.append(path)
    return out


def _folder_format(path: Path) -> str:
    """The format of the files in a folder: every eval-tool file in it must be of one format."""
    files = _tool_files(path)
    if not files:
        raise CjstatsError(f"`{path}` is a folder without eval-tool files (Inspect .eval logs, promptfoo or DeepEval "
                           f".json files, lm-eval samples_*.jsonl); give a score table file instead.")
    if any(f.name.lower().endswith(".eval") for f in files):
        return "inspect"                         # Inspect folders also hold JSON beside the logs
    from cjstats.io.lm_eval import sample_file_parts

    if any(sample_file_parts(f) is not None for f in files):
        return "lm-eval"                         # lm-eval folders hold results_*.json beside the samples
    return _one_format([detect_format(f) for f in files], files)


def _one_format(formats: list[str], paths: list[Path]) -> str:
    """The one format of several files, or one sentence naming two that differ."""
    other = next((i for i, f in enumerate(formats) if f != formats[0]), None)
    if other is not None:
        raise CjstatsError(f"The files are of different formats: `{paths[0]}` is {formats[0]}, `{paths[other]}` is "
                           f"{formats[other]}; give cjstats doctor files of one format (one tool's runs) at a time.")
    fmt = formats[0]
    if len(paths) > 1 and fmt in ("long", "wide"):
        raise CjstatsError(f"cjstats doctor got {len(paths)} score tables ({', '.join(f'`{p}`' for p in paths[:3])}"
                           f"{', ...' if len(paths) > 3 else ''}); the commands read one table: stack them into one "
                           f"file (one row per score, a model column telling them apart) and give that.")
    return fmt


def detect_format(source: Any) -> str:
    """The format of ``source`` (one of :data:`FORMATS`), or one sentence saying it is none of them.

    ``source`` is a file, a folder, a glob pattern or a list of them (several eval-tool files of one format,
    e.g. one DeepEval run per model, or an lm-eval output folder of model folders), a DataFrame or a Scores.
    """
    from cjstats.io.deepeval import looks_like_deepeval
    from cjstats.io.lm_eval import sample_file_parts
    from cjstats.io.promptfoo import looks_like_promptfoo

    if isinstance(source, Scores):
        return "long"
    if isinstance(source, pd.DataFrame):
        missing = rules.missing_columns(list(source.columns))
        return "long" if not missing else "wide"
    paths = _paths(source)
    if len(paths) > 1 or not isinstance(source, (str, Path)):
        return _one_format([detect_format(p) for p in paths], paths)
    path = paths[0]
    if path.is_dir():
        return _folder_format(path)
    name = path.name.lower()
    if name.endswith(".eval"):
        return "inspect"
    if sample_file_parts(path) is not None:
        return "lm-eval"
    if name.endswith(".json"):
        from cjstats.io._evaltools import load_json

        doc = load_json(path, what="score")
        if looks_like_promptfoo(doc):
            return "promptfoo"
        if looks_like_deepeval(doc):
            return "deepeval"
        if isinstance(doc, dict) and "eval" in doc and ("samples" in doc or "results" in doc):
            return "inspect"
        raise CjstatsError(f"`{path}` is JSON but not a file cjstats reads: not a promptfoo results file, a DeepEval "
                           f"test run or an Inspect log; write the scores as a long table (model, scenario, judge, "
                           f"score) in CSV or JSON Lines.")
    if name.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        first = _first_json_line(path)
        if isinstance(first, dict) and {"question_id", "model", "judge", "score"} <= set(first) and \
                isinstance(first.get("judge"), list):
            return "fastchat"
        if isinstance(first, dict) and "doc_id" in first and isinstance(first.get("metrics"), list):
            return "lm-eval"
    rules.file_kind(path, reader="cjstats doctor reads")
    from cjstats.io.read import read_file

    df, _ = read_file(path)
    return "long" if not rules.missing_columns(list(df.columns)) else "wide"


def read_any(source: Any) -> tuple[Scores, pd.DataFrame | None, str]:
    """(scores, raw long table or None, format): ``source`` read with the reader its format needs (a
    :class:`Scores` is taken as read). Eval-tool files may be several (a list, a glob pattern or a folder): the
    reader stacks them into one table.

    The raw table is the file as read (long or wide), for the columns the analysis ignores; tool files give None.
    """
    from cjstats.io.read import read_file, read_scores

    if isinstance(source, Scores):
        return source, None, "long"
    fmt = detect_format(source)
    if isinstance(source, (list, tuple)) and fmt in ("long", "wide"):
        source = _paths(source)[0]           # one table given as a list of one
    if fmt == "promptfoo":
        from cjstats.io.promptfoo import read_promptfoo
        return read_promptfoo(source), None, fmt
    if fmt == "deepeval":
        from cjstats.io.deepeval import read_deepeval
        return read_deepeval(source), None, fmt
    if fmt == "lm-eval":
        from cjstats.io.lm_eval import read_lm_eval_samples
        return read_lm_eval_samples(source), None, fmt
    if fmt == "fastchat":
        from cjstats.io.fastchat import read_mtbench_judgments
        return read_mtbench_judgments(source), None, fmt
    if fmt == "inspect":
        from cjstats.io.inspect import read_inspect_log
        return read_inspect_log(source), None, fmt
    raw = source.copy() if isinstance(source, pd.DataFrame) else read_file(Path(source))[0]
    if isinstance(raw, pd.DataFrame):
        raw = raw.reset_index(drop=True)
    if fmt == "long":
        return read_scores(raw), raw, fmt
    numeric = {str(c): _numbers(raw[c]) is not None for c in raw.columns}
    pattern = rules.wide_pattern(numeric)
    if pattern is None:
        missing = rules.missing_columns(list(raw.columns))
        raise CjstatsError(f"The table has no column{'s' if len(missing) > 1 else ''} {', '.join(missing)} and no "
                           f"score columns sharing a prefix (score_<judge>); name the columns model, scenario, "
                           f"judge, score (or rename them with --columns).")
    return read_scores(raw, judge_columns=pattern), raw, "wide:" + pattern


def _numbers(col: pd.Series) -> pd.Series | None:
    """The column as numbers when every value present is one (text files are read as text), else None."""
    if pd.api.types.is_bool_dtype(col):
        return None
    values = pd.to_numeric(col, errors="coerce")
    return values if values.notna().sum() == col.notna().sum() and values.notna().any() else None


def covariate_columns(raw: pd.DataFrame | None) -> list[str]:
    """Numeric columns of the raw table that are constant within each (model, scenario, generation) item:
    candidates for item covariates (answer length, position, ...)."""
    if raw is None or rules.missing_columns(list(raw.columns)) and "model" not in raw:
        return []
    skip = set(rules.LABEL_COLUMNS) | {"score", "judge_type"}
    keys = [c for c in ("model", "scenario", "generation") if c in raw]
    out = []
    for col in raw.columns:
        values = None if col in skip or str(col).startswith("score") else _numbers(raw[col])
        if values is None or values.nunique(dropna=True) < 2:
            continue
        if keys and values.groupby([raw[k] for k in keys], dropna=False).nunique(dropna=True).max() > 1:
            continue
        out.append(str(col))
    return out


def score_counts(scores: Scores, *, bins: int = 10) -> pd.DataFrame:
    """Calls per judge and score value (``judge, value, count``): the values themselves for binary and ordinal
    scores, else the midpoints of ``bins`` equal-width bins over the observed range."""
    frame = scores.to_frame()
    s = frame["score"].to_numpy(dtype=float)
    if score_kind(s) == "continuous" and np.nanmax(s) > np.nanmin(s):
        edges = np.linspace(np.nanmin(s), np.nanmax(s), bins + 1)
        idx = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, bins - 1)
        value = (edges[idx] + edges[idx + 1]) / 2
    else:
        value = s
    counts = (pd.DataFrame({"judge": frame["judge"].astype(str).to_numpy(), "value": value})
              .groupby(["judge", "value"], sort=True).size())
    if score_kind(s) == "continuous" and np.nanmax(s) > np.nanmin(s):   # every bin, empty ones too
        mids = (edges[:-1] + edges[1:]) / 2
        full = pd.MultiIndex.from_product([sorted(counts.index.unique("judge")), mids], names=["judge", "value"])
        counts = counts.reindex(full, fill_value=0)
    return counts.rename("count").reset_index()


#: The provenance counts of the eval-tool readers that are calls lost to an error (a result, metric or sample
#: that errored or whose grade could not be read): promptfoo, DeepEval, Inspect, FastChat.
ERRORED_COUNTS = ("errored_results", "metrics_without_score", "unscored", "dropped_unparsed")


def describe(scores: Scores, raw: pd.DataFrame | None) -> dict[str, Any]:
    """The counts and kinds ``cjstats doctor`` reports for a read table.

    ``errored`` = the sum of the reader's :data:`ERRORED_COUNTS` (calls left out because they errored): the
    design is complete only if every (model, scenario, generation, judge) cell was scored and none errored.
    ``fewest_judges`` = the fewest judges of any analysis group (model, or model x criterion).
    ``checks`` = the deterministic assertions left out of the judges (promptfoo), ``type (n results, k passed)``.
    """
    frame = scores.to_frame()
    s = frame["score"].to_numpy(dtype=float)
    top = np.nanmax(s) if len(s) else np.nan
    generations = frame.groupby(["model", "scenario"])["generation"].nunique() if "generation" in frame else None
    errored = sum(int(scores.provenance.get(k) or 0) for k in ERRORED_COUNTS)
    return {
        "models": scores.models, "judges": scores.judges,
        "fewest_judges": min((len(g.judge_labels) for g in scores.groups()), default=0),
        "criteria": scores.criteria if scores.has_criterion else [],
        "reference_raters": scores.reference_judges if scores.has_reference else [],
        "n_rows": int(len(frame)), "n_scenarios": int(frame["scenario"].nunique()),
        "generations_per_scenario": int(generations.max()) if generations is not None and len(generations) else 1,
        "score_kind": score_kind(s), "score_min": float(np.nanmin(s)), "score_max": float(top),
        "distinct_scores": int(len(np.unique(s[np.isfinite(s)]))),
        "ceiling_share": float(np.mean(s == top)) if len(s) else float("nan"),
        "floor_share": score_shape(s)["floor_share"],
        "covariates": covariate_columns(raw),
        "errored": errored,
        "checks": [f"{kind} ({t['results']} results, {t['passed']} passed)"
                   for kind, t in sorted((scores.provenance.get("deterministic") or {}).items())],
        "complete": (bool(scores.design["complete"].all()) if "complete" in scores.design else True) and not errored,
    }
