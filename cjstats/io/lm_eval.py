"""lm-evaluation-harness per-sample files (``samples_<task>_<date>.jsonl``, written with lm-eval's log_samples option) as a
score table.

lm-eval 0.4 (``lm_eval/loggers/evaluation_tracker.py``) writes, under ``<output_path>/<model_name_sanitized>/``,
``results_<date>.json`` (with ``model_name`` and ``config.model_args``) and one ``samples_<task>_<date>.jsonl``
per task: one line per (document, filter) with ``doc_id``, ``filter``, ``metrics`` (the metric names) and one
key per metric holding the document's value.

Mapping onto the long table (one row per metric and filter of each line):

- ``model`` = ``model=`` if given, else ``model_name`` of the ``results_<date>.json`` beside the samples file
  (the one with the same date), else the folder's name (lm-eval names it after the model);
- ``scenario`` = ``doc_id``; ``generation`` = 0 (lm-eval stores repeats already scored into one value);
- ``judge`` = ``"<metric>,<filter>"``, lm-eval's own key (``exact_match,strict-match``): each metric under each
  answer-extraction filter scores the same answer, as a judge does; an LLM-as-judge task whose metric values
  are per-judge mappings (``{"judge": value}``) gives one judge per key instead;
- ``criterion`` = the task, when the files hold more than one;
- ``score`` = the metric's value (booleans as 1/0); values that are not numbers (lists of log-likelihoods of
  corpus-level metrics) are left out and counted in ``provenance['non_numeric_values']``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cjstats.exceptions import CjstatsError
from cjstats.io._evaltools import files_of, load_json, to_scores
from cjstats.io.scores import Scores

__all__ = ["read_lm_eval_samples", "sample_file_parts"]

_WHAT = "lm-eval samples"
_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.-]+)\.jsonl$")


def sample_file_parts(path: Path) -> tuple[str, str] | None:
    """(task, date) of a ``samples_<task>_<date>.jsonl`` name, or None for another name."""
    match = _NAME.match(path.name)
    return (match["task"], match["date"]) if match else None


def _model_of(path: Path) -> str:
    parts = sample_file_parts(path)
    candidates = [path.parent / f"results_{parts[1]}.json"] if parts else []
    candidates += sorted(path.parent.glob("results_*.json"))
    for results in candidates:
        if results.is_file():
            try:
                doc = load_json(results, what="lm-eval results")
            except CjstatsError:
                continue
            if isinstance(doc, Mapping) and doc.get("model_name"):
                return str(doc["model_name"])
    return path.parent.name.replace("__", "/")


def _lines(path: Path) -> list[dict[str, Any]]:
    out = []
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CjstatsError(f"Line {lineno} of `{path}` is not valid JSON ({exc.msg}), so the file is "
                                       f"not an lm-eval samples file.") from None
                if not isinstance(rec, Mapping) or "doc_id" not in rec or not isinstance(rec.get("metrics"), list):
                    raise CjstatsError(f"Line {lineno} of `{path}` has no `doc_id` and `metrics` list: this is not "
                                       f"an lm-eval samples file (lm-eval writes one per task with its log_samples option).")
                out.append(rec)
    except UnicodeDecodeError:
        raise CjstatsError(f"`{path}` is not UTF-8 text, so it is not an lm-eval samples file.") from None
    return out


def read_lm_eval_samples(path: str | Path | Sequence[str | Path], *, model: str | None = None) -> Scores:
    """Read lm-evaluation-harness ``samples_<task>_<date>.jsonl`` files into one score table.

    scenario = ``doc_id``, judge = ``"<metric>,<filter>"``, criterion = task (when several), model from the
    ``results_<date>.json`` beside each file (or ``model=``). See the module docstring for the full mapping.

    Parameters
    ----------
    path : path, folder, glob pattern or list of them
        Samples files, or the ``--output_path`` folder (searched recursively for ``samples_*.jsonl``).
    model : str, optional
        The model's name, overriding what the results file and folder say.

    Examples
    --------
    >>> import cjstats as cj
    >>> scores = cj.read_lm_eval_samples("output/")  # doctest: +SKIP
    """
    files = files_of(path, caller="read_lm_eval_samples", what=_WHAT, pattern="samples_*.jsonl")
    counts = {"non_numeric_values": 0}
    records = []
    for f in files:
        parts = sample_file_parts(f)
        task = parts[0] if parts else f.stem
        name = model or _model_of(f)
        for rec in _lines(f):
            filt = rec.get("filter", "none")
            for metric in rec["metrics"]:
                value = rec.get(metric)
                pairs = (value.items() if isinstance(value, Mapping) else [(f"{metric},{filt}", value)])
                for judge, v in pairs:
                    if isinstance(v, bool):
                        v = float(v)
                    if not isinstance(v, (int, float)):
                        counts["non_numeric_values"] += 1
                        continue
                    records.append({"model": name, "scenario": rec["doc_id"], "generation": 0, "judge": str(judge),
                                    "criterion": task, "score": float(v)})
    where = f"`{files[0]}`" if len(files) == 1 else f"the {len(files)} lm-eval samples files"
    provenance = {"source": str(files[0]) if len(files) == 1 else [str(f) for f in files], "format": "lm-eval-samples",
                  "mapping": "model=results json model_name (or folder), scenario=doc_id, generation=0, "
                             "judge='metric,filter', criterion=task, score=metric value (bool as 1/0)", **counts}
    return to_scores(records, provenance, where=where)
