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
- ``judge`` = the grader of a model-graded assertion (:data:`MODEL_GRADED`: ``llm-rubric``, ``g-eval``,
  ``factuality``, ``model-graded-*``, ..., also negated as ``not-<type>``): the assertion's ``provider``, else
  the test's ``options.provider``, else the config's ``defaultTest.options.provider``, else ``"default grader"``;
- deterministic assertions (``contains``, ``equals``, ``regex``, ``is-json``, ``javascript``, ``python``, ...:
  every other type) are checks, not judges: they are left out and counted per type, with how many passed, in
  ``provenance['deterministic']`` (``deterministic="judge"`` reads each as a judge named by its type instead);
- ``criterion`` = the assertion's ``metric`` when assertions name metrics;
- ``score`` = the component's ``score``; promptfoo writes 1/0 for pass/fail assertions, and a component
  without a number is scored 1 if it passed and 0 if not (counted in ``provenance['scored_from_pass']``).

Results that errored (promptfoo's ``failureReason`` 2, ERROR: the provider or the grader failed, ``error`` says
why; or no ``gradingResult``) are left out and counted in ``provenance['errored_results']``; a result that only
failed its assertions (``failureReason`` 1) is a score like any other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from cjstats.exceptions import CjstatsError
from cjstats.io._evaltools import AT, files_of, load_json, to_scores
from cjstats.io.scores import Scores

__all__ = ["read_promptfoo", "MODEL_GRADED", "model_graded", "looks_like_promptfoo"]

#: Assertion types whose grade comes from a model: promptfoo's own ``MODEL_GRADED_ASSERTION_TYPES`` and the other
#: types it grades with a provider (``usesGradingProvider`` in ``src/assertions/constants.ts``), plus ``pi`` and
#: ``web-search``; ``promptfoo:redteam:*`` graders too. Every other type is deterministic (a check, not a judge).
MODEL_GRADED = frozenset({
    "agent-rubric", "answer-relevance", "context-faithfulness", "context-recall", "context-relevance",
    "factuality", "llm-rubric", "model-graded-closedqa", "model-graded-factuality", "search-rubric",
    "trajectory:goal-success", "classifier", "conversation-relevance", "g-eval", "moderation", "select-best",
    "similar", "pi", "web-search"})
#: promptfoo's ``ResultFailureReason.ERROR``: the result errored (``ASSERT`` = 1 is a failed assertion, a score).
_ERROR = 2
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


def model_graded(kind: str) -> bool:
    """Whether an assertion type is graded by a model (a judge), ``not-`` negations and ``similar:<metric>``
    included; every other type is a deterministic check."""
    base = kind[4:] if kind.startswith("not-") else kind
    return base in MODEL_GRADED or base.startswith(("similar:", "promptfoo:redteam:"))


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


def _rows(doc: Any, path: Path, counts: dict[str, Any], deterministic: str) -> list[dict[str, Any]]:
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
        if not isinstance(grading, Mapping) or res.get("failureReason") == _ERROR:
            counts["errored_results"] += 1
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
            if model_graded(kind):
                judge = (_name(assertion.get("provider")) or _name(options.get("provider")) or default_grader
                         or "default grader")
            elif deterministic == "judge":
                judge = kind
            else:
                tally = counts["deterministic"].setdefault(kind, {"results": 0, "passed": 0})
                tally["results"] += 1
                tally["passed"] += bool(comp.get("pass"))
                continue
            score = comp.get("score")
            if not isinstance(score, (int, float)) or isinstance(score, bool):
                score = 1.0 if comp.get("pass") else 0.0
                counts["scored_from_pass"] += 1
            records.append({"model": model, "scenario": scenario, "generation": generation,
                            "judge": judge, "criterion": assertion.get("metric") or "all", "score": float(score),
                            AT: f"results.results[{i}] of `{path}`"})
    return records


def read_promptfoo(path: str | Path | Sequence[str | Path], *,
                   duplicates: Literal["error", "mean"] = "error",
                   deterministic: Literal["exclude", "judge"] = "exclude") -> Scores:
    """Read promptfoo eval results (``promptfoo eval --output results.json``) into one score table.

    One row per assertion of each (provider, test case) result: model = provider, scenario = test index,
    generation = repeat index, judge = the grader of a model-graded assertion, score = the assertion's score
    (pass/fail as 1/0). Deterministic assertions (``contains``, ``equals``, ...) and errored results are left out
    and counted in the provenance. See the module docstring for the full mapping.

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
    if deterministic not in ("exclude", "judge"):
        raise CjstatsError(f"read_promptfoo got deterministic={deterministic!r}; give 'exclude' (leave "
                           f"deterministic assertions out) or 'judge' (read each as a judge named by its type).")
    files = files_of(path, caller="read_promptfoo", what=_WHAT, pattern="*.json")
    counts: dict[str, Any] = {"errored_results": 0, "scored_from_pass": 0, "deterministic": {}}
    records = [r for f in files for r in _rows(load_json(f, what=_WHAT), f, counts, deterministic)]
    where = f"`{files[0]}`" if len(files) == 1 else f"the {len(files)} promptfoo files"
    if not records and counts["deterministic"]:
        raise CjstatsError(f"{where} holds only deterministic assertions ({', '.join(sorted(counts['deterministic']))}"
                           f"), no model-graded one: no judge to analyse; pass deterministic='judge' to read each "
                           f"check as a judge.")
    provenance = {"source": str(files[0]) if len(files) == 1 else [str(f) for f in files], "format": "promptfoo",
                  "mapping": "model=provider label/id, scenario=testIdx (repeats with equal vars share the first), "
                             "generation=repeat index, "
                             "judge=grader of model-graded assertions"
                             + (" else assertion type" if deterministic == "judge"
                                else " (deterministic assertions left out)")
                             + ", score=component score (pass/fail written as 1/0)", **counts}
    return to_scores(records, provenance, where=where, caller="read_promptfoo", duplicates=duplicates)
