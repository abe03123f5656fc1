"""promptfoo eval results (``promptfoo eval --output results.json``) as a score table.

promptfoo writes ``{"evalId", "results": {"version": 3, "results": [EvaluateResult, ...], "prompts", "stats"},
"config", ...}``; each ``EvaluateResult`` is one (prompt, provider, test case) cell with ``provider``
(``id``, ``label``), ``testIdx``, ``testCase``, ``vars`` and ``gradingResult`` whose ``componentResults`` hold
one ``GradingResult`` per assertion (``pass``, ``score``, ``assertion`` = ``{type, provider?, metric?}``).

Mapping onto the long table (one row per assertion of each result):

- ``model`` = the provider's label, else its id (with the prompt's label appended when the file has more
  than one prompt, since each prompt is then a different system under test);
- ``scenario`` = ``testIdx`` (the test case's position, the same for every provider); test cases with equal
  ``vars`` are repeats of one scenario (``promptfoo eval --repeat N`` writes each repeat as a new ``testIdx``
  with the same vars): they share the first one's ``testIdx`` as scenario;
- ``generation`` = the repeat: the result's ``repeatIndex`` when present, else the position of its ``testIdx``
  among the test cases with the same vars (0 for a test run once);
- ``judge`` = for a model-graded assertion (``llm-rubric``, ``g-eval``, ``factuality``, ``model-graded-*``, ...)
  the grader: the assertion's ``provider``, else the test's ``options.provider``, else the config's
  ``defaultTest.options.provider``, else ``"default grader"``; for any other assertion its ``type``;
- ``criterion`` = the assertion's ``metric`` when assertions name metrics;
- ``score`` = the component's ``score``; promptfoo writes 1/0 for pass/fail assertions, and a component
  without a number is scored 1 if it passed and 0 if not (counted in ``provenance['scored_from_pass']``).

Results that failed with an error before grading (no ``gradingResult``) are left out and counted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from cjstats.exceptions import CjstatsError
from cjstats.io._evaltools import AT, files_of, load_json, to_scores
from cjstats.io.scores import Scores

__all__ = ["read_promptfoo", "MODEL_GRADED", "looks_like_promptfoo"]

#: Assertion types whose grade comes from a model (promptfoo's model-graded metrics).
MODEL_GRADED = frozenset({
    "llm-rubric", "g-eval", "factuality", "model-graded-closedqa", "model-graded-factuality", "answer-relevance",
    "context-faithfulness", "context-recall", "context-relevance", "conversation-relevance", "search-rubric",
    "select-best", "max-score", "pi", "classifier"})
_WHAT = "promptfoo results"


def _summary(doc: Any) -> Mapping[str, Any] | None:
    """The ``EvaluateSummary`` inside an output file (or the file itself when it is one)."""
    if not isinstance(doc, Mapping):
        return None
    inner = doc.get("results")
    if isinstance(inner, Mapping) and isinstance(inner.get("results"), list):
        return inner
    if isinstance(inner, list) and ("version" in doc or "stats" in doc):
        return doc
    return None


def looks_like_promptfoo(doc: Any) -> bool:
    """Whether a parsed JSON document is a promptfoo output file (used by :func:`cjstats.io.doctor.diagnose`)."""
    summary = _summary(doc)
    rows = summary.get("results") if summary else None
    return bool(rows) and isinstance(rows[0], Mapping) and "testIdx" in rows[0] and "provider" in rows[0]


def _name(provider: Any) -> str | None:
    if isinstance(provider, str):
        return provider
    if isinstance(provider, Mapping):
        return provider.get("label") or provider.get("id")
    return None


def _default_grader(doc: Mapping[str, Any]) -> str | None:
    config = doc.get("config") if isinstance(doc.get("config"), Mapping) else {}
    default = config.get("defaultTest") if isinstance(config.get("defaultTest"), Mapping) else {}
    options = default.get("options") if isinstance(default.get("options"), Mapping) else {}
    return _name(options.get("provider"))


def _rows(doc: Any, path: Path, counts: dict[str, int]) -> list[dict[str, Any]]:
    summary = _summary(doc)
    if summary is None or not looks_like_promptfoo(doc):
        lacks = ("no `results` key" if not isinstance(doc, Mapping) or "results" not in doc else
                 "no `results.results` list of eval results with `provider` and `testIdx`")
        raise CjstatsError(f"`{path}` is not a promptfoo results file: it has {lacks}; write one with `promptfoo "
                           f"eval --output results.json`.")
    default_grader = _default_grader(doc)
    results = summary["results"]
    prompt_ids = {r.get("promptId") or r.get("promptIdx", 0) for r in results}  # promptIdx is the grid column
    first: dict[str, list[int]] = {}
    for res in results:
        key = json.dumps(res.get("vars") or {"testIdx": res.get("testIdx")}, sort_keys=True, default=str)
        idx = first.setdefault(key, [])
        if res.get("testIdx") not in idx:
            idx.append(res.get("testIdx"))
    repeat_of = {t: (ids[0], k) for ids in first.values() for k, t in enumerate(sorted(ids, key=str))}
    records = []
    for i, res in enumerate(results):
        model = _name(res.get("provider"))
        if model is None:
            raise CjstatsError(f"Result {i} of `{path}` has no provider id or label, so its model is unknown.")
        if len(prompt_ids) > 1:
            prompt = res.get("prompt") if isinstance(res.get("prompt"), Mapping) else {}
            model = f"{model} [{prompt.get('label') or 'prompt ' + str(res.get('promptIdx', 0))}]"
        grading = res.get("gradingResult")
        if not isinstance(grading, Mapping):
            counts["errors_without_grade"] += 1
            continue
        components = grading.get("componentResults") or [grading]
        test = res.get("testCase") if isinstance(res.get("testCase"), Mapping) else {}
        options = test.get("options") if isinstance(test.get("options"), Mapping) else {}
        metadata = res.get("metadata") if isinstance(res.get("metadata"), Mapping) else {}
        scenario, repeat = repeat_of[res.get("testIdx")]
        generation = res.get("repeatIndex", metadata.get("repeatIndex", repeat))
        for comp in components:
            if not isinstance(comp, Mapping):
                continue
            assertion = comp.get("assertion") if isinstance(comp.get("assertion"), Mapping) else {}
            kind = str(assertion.get("type", "assertion"))
            if kind in MODEL_GRADED:
                judge = (_name(assertion.get("provider")) or _name(options.get("provider")) or default_grader
                         or "default grader")
            else:
                judge = kind
            score = comp.get("score")
            if not isinstance(score, (int, float)) or isinstance(score, bool):
                score = 1.0 if comp.get("pass") else 0.0
                counts["scored_from_pass"] += 1
            records.append({"model": model, "scenario": scenario, "generation": generation,
                            "judge": judge, "criterion": assertion.get("metric") or "all", "score": float(score),
                            AT: f"results.results[{i}] of `{path}`"})
    return records


def read_promptfoo(path: str | Path | Sequence[str | Path], *,
                   duplicates: Literal["error", "mean"] = "error") -> Scores:
    """Read promptfoo eval results (``promptfoo eval --output results.json``) into one score table.

    One row per assertion of each (provider, test case) result: model = provider, scenario = test index,
    generation = repeat index, judge = the grader of a model-graded assertion (its type for any other), score
    = the assertion's score (pass/fail as 1/0). See the module docstring for the full mapping.

    Parameters
    ----------
    path : path, folder, glob pattern or list of them
        One ``--output`` JSON file, a folder of them, or a list; all are stacked into one table.
    duplicates : {"error", "mean"}
        A judge call read twice (the same model, scenario, generation, judge and criterion, e.g. one file given
        twice): refused with the two places (default), or averaged and counted, as in :func:`read_scores`.

    Examples
    --------
    >>> import cjstats as cj
    >>> scores = cj.read_promptfoo("results.json")  # doctest: +SKIP
    """
    files = files_of(path, caller="read_promptfoo", what=_WHAT, pattern="*.json")
    counts = {"errors_without_grade": 0, "scored_from_pass": 0}
    records = [r for f in files for r in _rows(load_json(f, what=_WHAT), f, counts)]
    where = f"`{files[0]}`" if len(files) == 1 else f"the {len(files)} promptfoo files"
    provenance = {"source": str(files[0]) if len(files) == 1 else [str(f) for f in files], "format": "promptfoo",
                  "mapping": "model=provider label/id, scenario=testIdx (repeats with equal vars share the first), "
                             "generation=repeat index, "
                             "judge=grader of model-graded assertions else assertion type, score=component score "
                             "(pass/fail written as 1/0)", **counts}
    return to_scores(records, provenance, where=where, caller="read_promptfoo", duplicates=duplicates)
