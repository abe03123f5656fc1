"""Reading score tables: everything that turns a file or a harness's output into a :class:`cjstats.Scores` table.

- ``cjstats.io.rules``: the input rules (canonical columns, synonyms, file kinds, missing-value strings) and
  the sentences that refuse a table; one copy, used by ``read_scores`` and by the DuckDB/Dask engines.
- ``cjstats.io.read``: :func:`cjstats.read_scores` and every file reader (CSV, TSV, Parquet, JSONL, wide tables).
- ``cjstats.io.scores``: the :class:`~cjstats.io.scores.Scores`, ``GroupDesign`` and ``GroupData`` types.

Loaders of evaluation harnesses:

- :func:`read_mtbench_judgments` (``cjstats.io.fastchat``): FastChat MT-Bench ``*_single.jsonl`` judgments.
- :func:`read_promptfoo` (``cjstats.io.promptfoo``): promptfoo ``--output`` results JSON.
- :func:`read_deepeval` (``cjstats.io.deepeval``): DeepEval test-run JSON.
- :func:`read_lm_eval_samples` (``cjstats.io.lm_eval``): lm-evaluation-harness ``samples_<task>_<date>.jsonl``.
- ``cjstats.io.doctor``: which of these formats a file is (``cjstats doctor``).
- :func:`read_inspect_log` (``cjstats.io.inspect``): Inspect AI ``.eval``/``.json`` logs (``cjstats[inspect]``); the
  scorer that runs a CyclicJudge schedule in Inspect is :func:`cjstats.decisions.inspect_scorer.cyclic_judge_scorer`.

Wide tables (one column per judge) are read by :func:`cjstats.read_scores` with ``judge_columns=``.
Each loader is imported only when used, so ``import cjstats`` does not import Inspect.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["read_mtbench_judgments", "read_inspect_log", "read_promptfoo", "read_deepeval", "read_lm_eval_samples"]

_WHERE = {"read_mtbench_judgments": "cjstats.io.fastchat", "read_inspect_log": "cjstats.io.inspect",
          "read_promptfoo": "cjstats.io.promptfoo", "read_deepeval": "cjstats.io.deepeval",
          "read_lm_eval_samples": "cjstats.io.lm_eval"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'cjstats.io' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(__all__)
