"""DeepEval test runs (the ``TestRun`` JSON DeepEval saves, e.g. ``.deepeval/.latest_run_full.json`` or
``test_run_<time>.json`` in ``DEEPEVAL_RESULTS_FOLDER``) as a score table.

DeepEval serialises ``TestRun.model_dump(by_alias=True)``: ``{"testCases": [{"name", "input", "success",
"metricsData": [{"name", "score", "success", "threshold", "evaluationModel", ...}], ...}],
"conversationalTestCases": [...], "hyperparameters": {...}, ...}``, sometimes wrapped as
``{"testRunData": {...}}``. One file is one run of one model on a dataset.

Mapping onto the long table (one row per metric of each test case):

- ``model`` = ``model=`` if given, else ``hyperparameters["model"]``, else the file's stem;
- ``scenario`` = the test case's ``name`` (``test_case_0``, ...: its position, the same across runs);
- ``generation`` = 0;
- ``judge`` = the metric's ``evaluationModel`` (the LLM that graded it), else the metric's name;
- ``criterion`` = the metric's name (``Answer Relevancy``, ``Correctness [GEval]``, ...);
- ``score`` = the metric's ``score``; the pass flag ``success`` is kept apart (``provenance['passed']``).

Metrics that errored (no score) are left out and counted in ``provenance['metrics_without_score']``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from cjstats.exceptions import CjstatsError
from cjstats.io import rules
from cjstats.io._evaltools import AT, files_of, load_json, to_scores
from cjstats.io.scores import Scores

__all__ = ["read_deepeval", "looks_like_deepeval"]

_WHAT = "DeepEval test-run"


def _run(doc: Any) -> Mapping[str, Any] | None:
    if isinstance(doc, Mapping) and isinstance(doc.get("testRunData"), Mapping):
        doc = doc["testRunData"]
    if isinstance(doc, Mapping) and ("testCases" in doc or "conversationalTestCases" in doc):
        return doc
    return None


def looks_like_deepeval(doc: Any) -> bool:
    """Whether a parsed JSON document is a DeepEval test run (used by :func:`cjstats.io.doctor.diagnose`)."""
    return _run(doc) is not None


def _rows(doc: Any, path: Path, model: str | None, counts: dict[str, int]) -> list[dict[str, Any]]:
    run = _run(doc)
    if run is None:
        raise CjstatsError(f"`{path}` is not a DeepEval test run: it has no `testCases` list; give the JSON "
                           f"DeepEval saves (e.g. `.deepeval/.latest_run_full.json`).")
    hyper = run.get("hyperparameters") if isinstance(run.get("hyperparameters"), Mapping) else {}
    name = str(model or hyper.get("model") or path.stem).strip()
    if not name:
        raise CjstatsError(rules.msg_no_model(path, "read_deepeval"))
    cases = [(f"{key}[{k}]", case) for key in ("testCases", "conversationalTestCases")
             for k, case in enumerate(run.get(key) or [])]
    records = []
    for i, (at, case) in enumerate(cases):
        if not isinstance(case, Mapping):
            raise CjstatsError(f"Test case {i} of `{path}` is not a JSON object, so the file is not a DeepEval "
                               f"test run.")
        for metric in case.get("metricsData") or []:
            score = metric.get("score")
            if not isinstance(score, (int, float)) or isinstance(score, bool):
                counts["metrics_without_score"] += 1
                continue
            counts["passed"] += bool(metric.get("success"))
            records.append({"model": name, "scenario": case.get("name", f"test_case_{i}"), "generation": 0,
                            "judge": metric.get("evaluationModel") or metric.get("name"),
                            "criterion": metric.get("name"), "score": float(score), AT: f"{at} of `{path}`"})
    return records


def read_deepeval(path: str | Path | Sequence[str | Path], *, model: str | None = None,
                  duplicates: Literal["error", "mean"] = "error") -> Scores:
    """Read DeepEval test runs into one score table (one row per metric of each test case).

    model = ``hyperparameters['model']`` (or ``model=``, or the file name), scenario = test case name, judge =
    the metric's ``evaluationModel``, criterion = the metric, score = the metric's score. See the module
    docstring for the full mapping.

    Parameters
    ----------
    path : path, folder, glob pattern or list of them
        One test-run JSON file per model (or a folder of them); all are stacked into one table.
    model : str, optional
        The model's name when the run logged no ``hyperparameters={"model": ...}`` (one file only).
    duplicates : {"error", "mean"}
        A judge call read twice (the same model, test case, judge and metric, e.g. two runs of one model):
        refused with the two places (default), or averaged and counted, as in :func:`read_scores`.

    Examples
    --------
    >>> import cjstats as cj
    >>> scores = cj.read_deepeval(["run_gpt4o.json", "run_llama.json"])  # doctest: +SKIP
    """
    files = files_of(path, caller="read_deepeval", what=_WHAT, pattern="*.json")
    if model is not None and len(files) > 1:
        raise CjstatsError(f"read_deepeval got model={model!r} for {len(files)} files; give one file per call, or "
                           f"log hyperparameters={{'model': ...}} in each run.")
    counts = {"metrics_without_score": 0, "passed": 0}
    records = [r for f in files for r in _rows(load_json(f, what=_WHAT), f, model, counts)]
    where = f"`{files[0]}`" if len(files) == 1 else f"the {len(files)} DeepEval files"
    provenance = {"source": str(files[0]) if len(files) == 1 else [str(f) for f in files], "format": "deepeval",
                  "mapping": "model=hyperparameters.model (or file name), scenario=test case name, generation=0, "
                             "judge=metric evaluationModel, criterion=metric name, score=metric score", **counts}
    return to_scores(records, provenance, where=where, caller="read_deepeval", duplicates=duplicates)
