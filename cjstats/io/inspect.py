"""Inspect AI logs as a score table, and an Inspect scorer that runs the CyclicJudge schedule.

Needs the optional extra ``cjstats[inspect]`` (``inspect-ai``), imported only inside these functions. Logs are
read through Inspect's public API: :func:`inspect_ai.log.read_eval_log` (the header: the evaluated model and
each scorer's grader model) and :func:`inspect_ai.analysis.samples_df` / :func:`inspect_ai.analysis.evals_df`
(one row per sample and epoch, one ``score_<scorer>`` column per scorer).

Mapping onto the long table: ``model`` = the evaluated model of the log, ``scenario`` = the sample id,
``generation`` = the epoch (each epoch is a new generation of the model), ``judge`` = the grader model of
each scorer (the ``model`` parameter of ``model_graded_qa``/``model_graded_fact`` in the log header, the
scorer's name when it has none), ``score`` = the scorer's value. Letter grades are mapped as Inspect's own
:func:`inspect_ai.scorer.value_to_float` does (C = 1, P = 0.5, I = 0, N = 0), unless ``values=`` says otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.io._paths import expand_sources
from cjstats.io.read import read_scores
from cjstats.io.scores import Scores

__all__ = ["read_inspect_log", "log_files", "need_inspect", "CYCLIC_SCORER"]

#: The scorer name :func:`cjstats.decisions.inspect_scorer.cyclic_judge_scorer` registers; its dict values are {judge: value}.
CYCLIC_SCORER = "cyclic_judge"


def need_inspect() -> None:
    from importlib.util import find_spec

    if find_spec("inspect_ai") is None:
        raise CjstatsError("Reading Inspect logs needs inspect-ai: pip install 'cjstats[inspect]'.")


def log_files(source: str | Path | Sequence[str | Path]) -> list[Path]:
    """The ``.eval``/``.json`` log files named by a file, a folder (searched recursively), a glob or a list."""
    def folder_files(path: Path) -> list[Path]:
        return sorted(p for p in path.rglob("*") if p.suffix in (".eval", ".json") and p.is_file()
                      and not p.name.startswith(("logs.json", "eval-set.json")))

    return expand_sources(
        source, empty_list="read_inspect_log got an empty list of logs; give at least one log file or folder.",
        bad_type="read_inspect_log takes a log file, a folder of logs or a list of them. Got {type} instead.",
        folder_files=folder_files, empty_folder="The folder `{path}` holds no Inspect log (*.eval or *.json).",
        missing="The Inspect log `{path}` does not exist.")


def _unique_names(names: list[str]) -> list[str]:
    # Inspect's rule for the keys of sample.scores when two scorers share a name: name, name1, name2, ...
    used: list[str] = []
    for base in names:
        name, count = base, 1
        while name in used:
            name, count = f"{base}{count}", count + 1
        used.append(name)
    return used


def _grader(options: Mapping[str, Any] | None, fallback: str) -> str:
    """The judge of a scorer: its ``model`` parameter (a name, a serialised Model, or a list), else its name."""
    model = (options or {}).get("model")
    if isinstance(model, Mapping):
        model = model.get("model")
    if isinstance(model, (list, tuple)):
        names = [m.get("model") if isinstance(m, Mapping) else m for m in model]
        model = "+".join(str(n) for n in names if n)
    return str(model) if model else fallback


_ZIP_START = b"PK\x03\x04"   # a zip archive (an .eval log) starts with a local file header ...
_ZIP_END = b"PK\x05\x06"     # ... and ends with its index (end of central directory, within the last 64 kB + 22 bytes)


def _unreadable(path: Path) -> str | None:
    """Why a log Inspect could not open is unusable, in plain words (empty, cut short, not a log), or None.

    A cut-short ``.eval`` (an interrupted eval, a partial copy or download) is a zip archive that lost its end,
    where the index of its members lives; Inspect reports that as "EOCD not found". A cut-short ``.json`` log
    does not end with the closing brace of its JSON object.
    """
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(4)
            fh.seek(max(0, size - 65_558))
            tail = fh.read()
    except OSError:
        return None
    if size == 0:
        return f"The Inspect log `{path}` is empty (0 bytes): rerun the eval, or copy the log again."
    cut = (f"The Inspect log `{path}` is cut short ({size:,} bytes, its end is missing): the eval was interrupted "
           f"or the file was not copied completely; rerun the eval or copy the log again.")
    if path.suffix == ".eval":
        if head == _ZIP_START and _ZIP_END not in tail:
            return cut
        if head != _ZIP_START:
            return f"`{path}` is not an Inspect .eval log (not a zip archive): pass the log files Inspect wrote."
        return None
    if path.suffix == ".json" and head.lstrip()[:1] == b"{" and not tail.rstrip().endswith(b"}"):
        return cut
    return None


def _scorer_judges(path: Path) -> tuple[str, dict[str, str]]:
    """(evaluated model, {score column key: judge}) from a log header."""
    from inspect_ai.log import read_eval_log

    try:
        header = read_eval_log(str(path), header_only=True)
    except Exception as exc:  # Inspect raises several types for a file that is not a log; name the file
        why = _unreadable(path)
        if why is None:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            why = f"Could not read `{path}` as an Inspect log ({first.rstrip('.')})."
        raise CjstatsError(why) from exc
    scorers = list(header.eval.scorers or [])
    keys = _unique_names([s.name for s in scorers])
    judges = {}
    for key, s in zip(keys, scorers):
        judges[key] = CYCLIC_SCORER if s.name.split("/")[-1] == CYCLIC_SCORER else _grader(s.options, s.name)
    return header.eval.model, judges


def _to_float(values: Mapping[Any, float] | None, words: dict[str, dict[Any, float]] | None = None,
              ) -> Callable[[Any, str], float]:
    """The converter of score values to numbers: ``values`` first, else Inspect's ``value_to_float``. Words it maps
    (C/I/P/N, yes/no, ...) are collected in ``words`` per scorer column, so the mapping is stated once; a word
    it does not know (which value_to_float would log and score 0) is refused with one sentence."""
    from inspect_ai.scorer import value_to_float

    from cjstats.io import verdicts

    inspect_map = value_to_float()

    def convert(v: Any, column: str = "score") -> float:
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            return math.nan
        if values is not None and isinstance(v, str | int | float | bool) and v in values:
            return float(values[v])
        if isinstance(v, str):
            try:
                float(v)
            except ValueError:
                if verdicts.verdict_mapping([v]) is None:
                    raise CjstatsError(f"Column '{column}' of the Inspect log holds {v!r}, neither a number nor a "
                                       f"verdict ({verdicts.VOCABULARY}); map it with read_inspect_log(..., "
                                       f"values={{{v!r}: <number>}}).") from None
                x = verdicts.verdict_mapping([v])[v]     # Inspect's numbers, case ignored (value_to_float: C only)
                if words is not None:
                    words.setdefault(column, {})[v] = x
                return x
        return float(inspect_map(v))

    return convert


def read_inspect_log(path_or_dir: str | Path | Sequence[str | Path], *,
                     values: Mapping[Any, float] | None = None) -> Scores:
    """Read Inspect AI evaluation logs (``.eval`` or ``.json``) into one long score table.

    Parameters
    ----------
    path_or_dir : path, folder or list
        One log, a folder of logs (several evaluated models become one table) or a list of logs.
    values : mapping, optional
        How to turn score values into numbers, e.g. ``{"C": 1, "P": 0.5, "I": 0}``; values not in it are
        converted as Inspect's ``value_to_float()`` does (C = 1, P = 0.5, I = 0, N = 0, numbers as they are).

    Returns
    -------
    Scores
        ``model`` = the evaluated model, ``scenario`` = sample id, ``generation`` = epoch, ``judge`` = each
        scorer's grader model (its name if it has none), ``score`` = its value. Samples a scorer did not score
        (errors, unparsed grades) are missing calls, counted in ``provenance['unscored']``. With
        :func:`cjstats.decisions.inspect_scorer.cyclic_judge_scorer`, each sample holds only the judges its schedule assigned.

    Examples
    --------
    >>> import cjstats as cj
    >>> scores = cj.read_inspect_log("logs/")  # doctest: +SKIP
    """
    need_inspect()
    from inspect_ai.analysis import evals_df, samples_df

    if values is not None and not isinstance(values, Mapping):
        raise CjstatsError(f"The 'values' argument of read_inspect_log must be a mapping such as "
                           f"{{'C': 1, 'I': 0}}. Got {type(values).__name__} instead.")
    files = log_files(path_or_dir)
    words: dict[str, dict[Any, float]] = {}
    convert = _to_float(values, words)
    rows: list[dict[str, Any]] = []
    unscored = 0
    for f in files:
        why = _unreadable(f)      # Inspect reads the head of a cut-short JSON log and finds no sample in it
        if why is not None:
            raise CjstatsError(why)
        model, judges = _scorer_judges(f)
        samples = samples_df(str(f), quiet=True)
        evals = evals_df(str(f), quiet=True)
        model = str(evals["model"].iloc[0]) if "model" in evals.columns and len(evals) else model
        for key, judge in judges.items():
            col = f"score_{key}"
            if col not in samples.columns:
                continue
            for sid, epoch, v in zip(samples["id"], samples["epoch"], samples[col]):
                if judge == CYCLIC_SCORER and isinstance(v, Mapping):
                    items = list(v.items())
                elif judge == CYCLIC_SCORER and isinstance(v, str):
                    import json

                    items = list(json.loads(v).items())
                else:
                    items = [(judge, v)]
                for j, value in items:
                    x = convert(value, col)
                    if math.isnan(x):
                        # a cyclic_judge NaN is a judge the schedule did not assign: not a missing call
                        unscored += judge != CYCLIC_SCORER or not isinstance(value, float)
                        continue
                    rows.append({"model": model, "scenario": sid, "generation": int(epoch), "judge": str(j),
                                 "score": x})
    if not rows:
        raise CjstatsError(f"The Inspect log{'s' if len(files) > 1 else ''} hold no scored sample: run the eval "
                           f"with a scorer, or check its errors with `inspect view`.")
    if words:
        from cjstats import _warnings as warnings
        from cjstats.exceptions import CjstatsWarning
        from cjstats.io.verdicts import msg_verdicts

        for col, mapping in words.items():     # once per scorer column, with the words it held
            warnings.warn(msg_verdicts(col, mapping), CjstatsWarning, stacklevel=2)
    scores = read_scores(pd.DataFrame(rows))
    prov = {"source": [str(f) for f in files], "format": "inspect-ai", "unscored": unscored,
            **({"score_mapping": {c: {str(k): v for k, v in m.items()} for c, m in words.items()}} if words else {})}
    return Scores(scores.to_frame(), provenance={**prov, **{k: v for k, v in scores.provenance.items()
                                                            if k != "source"}})
