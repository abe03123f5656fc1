"""lm-evaluation-harness per-sample files (``samples_<task>_<date>.jsonl``, written with lm-eval's log_samples option) as a
score table.

lm-eval 0.4 (``lm_eval/loggers/evaluation_tracker.py``) writes, under ``<output_path>/<model_name_sanitized>/``,
``results_<date>.json`` (with ``model_name`` and ``config.model_args``) and one ``samples_<task>_<date>.jsonl``
per task: one line per (document, filter) with ``doc_id``, ``filter``, ``metrics`` (the metric names) and one
key per metric holding the document's value.

Mapping onto the long table (one row per metric and filter of each line):

- ``model`` = ``model=`` if given, else the ``results_<date>.json`` beside the samples file (the one with the
  same date first): its ``model_name``, else the model in its ``config.model_args`` (``pretrained=``, ``model=``,
  ``path=``, ... as lm-eval reads it), else its ``model_name_sanitized``; else the name of the folder that holds
  the file, resolved (lm-eval names it after the model, ``/`` written as ``__``; a file given as
  ``samples_x.jsonl`` is in the current folder); a model name is never empty: without any of these the reader
  asks for ``model=``;
- ``scenario`` = ``doc_id``; ``generation`` = 0 (lm-eval stores repeats already scored into one value);
- ``judge`` = ``"<metric>,<filter>"``, lm-eval's own key (``exact_match,strict-match``): each metric under each
  answer-extraction filter scores the same answer, as a judge does; an LLM-as-judge task whose metric values
  are per-judge mappings (``{"judge": value}``) gives one judge per key instead;
- ``criterion`` = the task, when the files hold more than one;
- ``score`` = the metric's value (booleans as 1/0); values that are not numbers (lists of log-likelihoods of
  corpus-level metrics) are left out and counted in ``provenance['non_numeric_values']``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from cjstats.exceptions import CjstatsError
from cjstats.io import rules
from cjstats.io._evaltools import AT, files_of, json_lines, load_json, to_scores
from cjstats.io.scores import Scores

__all__ = ["read_lm_eval_samples", "sample_file_parts"]

_WHAT = "lm-eval samples"
_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.-]+)\.jsonl$")


def sample_file_parts(path: Path) -> tuple[str, str] | None:
    """(task, date) of a ``samples_<task>_<date>.jsonl`` name, or None for another name."""
    match = _NAME.match(path.name)
    return (match["task"], match["date"]) if match else None


#: The keys of ``model_args`` that name the model, in the order lm-eval's own ``_get_model_name`` tries them.
_MODEL_ARGS = ("peft", "delta", "pretrained", "model", "path", "engine")


def _name_in_results(doc: Any) -> str | None:
    """The model an lm-eval ``results_<date>.json`` names: ``model_name``, else ``config.model_args``
    (a ``key=value,...`` string or a mapping), else ``model_name_sanitized``; None when it names none."""
    if not isinstance(doc, Mapping):
        return None
    if str(doc.get("model_name") or "").strip():
        return str(doc["model_name"]).strip()
    config = doc.get("config") if isinstance(doc.get("config"), Mapping) else {}
    args = config.get("model_args")
    if isinstance(args, str):
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    if isinstance(args, Mapping):
        for key in _MODEL_ARGS:
            if str(args.get(key) or "").strip():
                return str(args[key]).strip()
    sanitized = str(doc.get("model_name_sanitized") or "").strip()
    return sanitized.replace("__", "/") if sanitized else None


def _model_of(path: Path) -> str:
    """The model of a samples file: its results file's (see :func:`_name_in_results`), else the name of the
    folder holding it (resolved: ``samples_x.jsonl`` alone is in the current folder); never empty."""
    parts = sample_file_parts(path)
    candidates = [path.parent / f"results_{parts[1]}.json"] if parts else []
    candidates += sorted(path.parent.glob("results_*.json"))
    for results in candidates:
        if results.is_file():
            try:
                name = _name_in_results(load_json(results, what="lm-eval results"))
            except CjstatsError:
                continue
            if name:
                return name
    folder = path.resolve().parent.name.replace("__", "/").strip()
    if not folder:
        raise CjstatsError(rules.msg_no_model(path, "read_lm_eval_samples"))
    return folder


def _lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for lineno, rec in json_lines(path, what=_WHAT):
        if not isinstance(rec, Mapping) or "doc_id" not in rec or not isinstance(rec.get("metrics"), list):
            raise CjstatsError(f"Line {lineno} of `{path}` has no `doc_id` and `metrics` list: this is not "
                               f"an lm-eval samples file (lm-eval writes one per task with its log_samples option).")
        out.append((lineno, rec))
    return out


def read_lm_eval_samples(path: str | Path | Sequence[str | Path], *, model: str | None = None,
                         duplicates: Literal["error", "mean"] = "error") -> Scores:
    """Read lm-evaluation-harness ``samples_<task>_<date>.jsonl`` files into one score table.

    scenario = ``doc_id``, judge = ``"<metric>,<filter>"``, criterion = task (when several), model from the
    ``results_<date>.json`` beside each file (or ``model=``). See the module docstring for the full mapping.

    Parameters
    ----------
    path : path, folder, glob pattern or list of them
        Samples files, or the ``--output_path`` folder (searched recursively for ``samples_*.jsonl``).
    model : str, optional
        The model's name, overriding what the results file and folder say.
    duplicates : {"error", "mean"}
        A judge call read twice (the same model, task, doc_id, metric and filter, e.g. one file given twice):
        refused with the two lines (default), or averaged and counted, as in :func:`read_scores`.

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
        for lineno, rec in _lines(f):
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
                                    "criterion": task, "score": float(v), AT: f"line {lineno} of `{f}`"})
    where = f"`{files[0]}`" if len(files) == 1 else f"the {len(files)} lm-eval samples files"
    provenance = {"source": str(files[0]) if len(files) == 1 else [str(f) for f in files], "format": "lm-eval-samples",
                  "mapping": "model=results json model_name (or folder), scenario=doc_id, generation=0, "
                             "judge='metric,filter', criterion=task, score=metric value (bool as 1/0)", **counts}
    return to_scores(records, provenance, where=where, caller="read_lm_eval_samples", duplicates=duplicates)
