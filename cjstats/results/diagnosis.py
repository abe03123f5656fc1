"""``cjstats doctor``'s result: what a score file holds and the commands that analyse it.

:func:`diagnose` reads any file cjstats reads (:func:`cjstats.io.doctor.read_any` detects the format), counts
models, scenarios, generations, judges, criteria and reference raters, names the numeric item-level columns that
could be covariates, classifies the scores (continuous / ordinal: at most 11 distinct integers / binary) with the
share at the highest observed score (the ceiling), and lists the ``cjstats`` commands for that design.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cjstats.results.base import Result, freeze_plain

__all__ = ["Diagnosis", "diagnose"]

_TOOL_FORMATS = {"promptfoo": "read_promptfoo", "deepeval": "read_deepeval", "lm-eval": "read_lm_eval_samples",
                 "fastchat": "read_mtbench_judgments", "inspect": "read_inspect_log"}
#: A ceiling share above this is reported as a ceiling (a bounded score piling up at its top).
CEILING_NOTE = 0.3


@dataclass(frozen=True)
class Diagnosis(Result):
    """What :func:`diagnose` found in one file or table.

    Attributes
    ----------
    source : str
        The file (or ``"<table>"``).
    format : str
        ``long``, ``wide:<pattern>``, ``inspect``, ``fastchat``, ``promptfoo``, ``deepeval`` or ``lm-eval``.
    facts : Mapping
        models, judges, criteria, reference_raters (lists); n_rows, n_scenarios, generations_per_scenario;
        score_kind, score_min, score_max, distinct_scores, ceiling_share; covariates; complete.
    commands : list of str
        The ``cjstats`` commands that analyse it, in the order to run them.
    score_counts : DataFrame
        Calls per judge and score value (``judge, value, count``; bin midpoints for continuous scores), drawn by
        :func:`cjstats.plots.diagnosis_plot`.
    notes : list of str
        Sentences about the design (one judge, a ceiling, criteria, a tool file to convert first).
    """

    source: str
    format: str
    facts: dict[str, Any]
    commands: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    score_counts: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["judge", "value", "count"]))

    def __post_init__(self) -> None:
        freeze_plain(self, "facts")

    def to_frame(self) -> pd.DataFrame:
        """One row per fact (``item``, ``value`` as text), then the commands (``item = command``)."""
        rows = [{"item": "format", "value": self.format}]
        for k, v in self.facts.items():
            rows.append({"item": k, "value": ", ".join(map(str, v)) if isinstance(v, list) else
                         (f"{v:.3g}" if isinstance(v, float) else str(v))})
        rows += [{"item": "command", "value": c} for c in self.commands]
        rows += [{"item": "note", "value": n} for n in self.notes]
        return pd.DataFrame(rows, columns=["item", "value"])

    def as_text(self) -> str:
        f = self.facts

        def names(key: str) -> str:
            v = f[key]
            shown = ", ".join(map(str, v[:8])) + (f", ... ({len(v)} in all)" if len(v) > 8 else "")
            return f"{len(v)} ({shown})" if v else "none"

        lines = [f"{self.source}: {self.format} score table, {f['n_rows']} scores",
                 f"  models:            {names('models')}",
                 f"  scenarios:         {f['n_scenarios']}",
                 f"  generations:       up to {f['generations_per_scenario']} per scenario",
                 f"  judges:            {names('judges')}",
                 f"  criteria:          {names('criteria')}",
                 f"  reference raters:  {names('reference_raters')}",
                 f"  covariate columns: {', '.join(f['covariates']) or 'none'}",
                 f"  scores:            {f['score_kind']}, {f['distinct_scores']} distinct values in "
                 f"[{f['score_min']:g}, {f['score_max']:g}]; {f['ceiling_share']:.0%} at the top",
                 *([f"  checks:            {', '.join(f['checks'])} (deterministic, not judges)"]
                   if f.get("checks") else []),
                 f"  design:            {_design(f)}"]
        lines += ["", "Notes:", *[f"  - {n}" for n in self.notes]] if self.notes else []
        lines += ["", "Commands:", *[f"  {c}" for c in self.commands]]
        return "\n".join(lines)

    def as_markdown(self) -> str:
        return "\n".join(["```text", self.as_text(), "```"])


def _design(f: dict[str, Any]) -> str:
    """The design line: complete only when no judge call is missing and none errored."""
    if f.get("errored"):
        return f"incomplete ({f['errored']} errored result(s) left out)"
    return "complete" if f["complete"] else "incomplete (some judge calls missing)"


def _commands(fmt: str, source: str, facts: dict[str, Any], output: str | None,
              flags: str, stem: str) -> tuple[list[str], list[str]]:
    notes: list[str] = []
    commands: list[str] = []
    target = source
    extra = f" {flags}" if flags else ""
    if fmt in _TOOL_FORMATS:
        target = output or f"{stem}.long.csv"
        commands.append(f"cjstats doctor {source} -o {target}")
        what = {"inspect": "An Inspect log"}.get(fmt, f"{'An' if fmt[0] in 'aeiou' or fmt == 'lm-eval' else 'A'} {fmt} file")
        notes.append(f"{what}: the line above writes it as a long table (cj.{_TOOL_FORMATS[fmt]} reads it "
                     f"in Python) that every command reads.")
    elif fmt.startswith("wide:"):
        extra += f" --judge-columns '{fmt.split(':', 1)[1]}'"
    n_judges, n_models = facts.get("fewest_judges", len(facts["judges"])), len(facts["models"])
    commands.append(f"cjstats decompose {target}{extra}")
    if n_judges >= 2:
        commands.append(f"cjstats judges {target}{extra}")
    elif len(facts["judges"]) >= 2:
        notes.append("A criterion (or model) has one judge only: its judge variance cannot be estimated; "
                     "--criteria NAME keeps the criteria with two judges or more.")
    else:
        notes.append("One judge only: the judge variance cannot be estimated; add a second judge to separate it.")
    if n_models >= 2:
        commands.append(f"cjstats compare {target}{extra}")
    if facts["reference_raters"]:
        commands.append(f"cjstats humans {target}{extra}")
    per_model = facts["n_rows"] // max(n_models * max(len(facts["criteria"]), 1), 1)
    commands.append(f"cjstats allocate {target}{extra} --budget {per_model}")
    if facts["criteria"]:
        notes.append(f"{len(facts['criteria'])} criteria: each is analysed apart; --composite averages them, "
                     f"--criteria NAME keeps one.")
    if facts["score_kind"] == "binary":
        notes.append("Binary scores (pass/fail): components are on the probability scale; means are pass rates.")
    elif facts["score_kind"] == "ordinal":
        notes.append("Ordinal scores (few levels): the Gaussian fits describe means on the score scale; "
                     "the Bayesian backend's ordinal likelihood (likelihood='ordinal', docs/backends.md) fits ordered "
                     "categories.")
    if facts["ceiling_share"] > CEILING_NOTE and facts["score_kind"] != "binary":
        notes.append(f"{facts['ceiling_share']:.0%} of scores sit at the top value: a ceiling shrinks the variances "
                     f"near it.")
    if facts["covariates"]:
        notes.append(f"Item-level numeric columns ({', '.join(facts['covariates'])}) could be covariates "
                     f"(e.g. answer length) in the joint model: cjstats compare {target}{extra} --covariates "
                     f"{facts['covariates'][0]}.")
    if facts.get("errored"):
        notes.append(f"{facts['errored']} result(s) errored (the provider or the grader failed) and were left out: "
                     f"their calls are missing; rerun them, or read the design as incomplete.")
    if facts.get("checks"):
        notes.append(f"Deterministic assertions ({', '.join(facts['checks'])}) are checks, not judges: they are "
                     f"left out of the judge table (cj.read_promptfoo(..., deterministic='judge') keeps them).")
    if not facts["complete"]:
        notes.append("Some judge calls are missing: the default method (auto) fits REML, which keeps every call.")
    return commands, notes


def diagnose(source: Any, *, output: str | None = None, raw: pd.DataFrame | None = None,
             flags: str = "") -> Diagnosis:
    """Detect the format of ``source`` (a path or a DataFrame), read it and say what it holds and how to analyse it.

    Parameters
    ----------
    source : path, list of paths, glob pattern, folder, DataFrame or Scores
        A long or wide table (CSV/TSV/Parquet/JSONL), an Inspect log, FastChat judgments, a promptfoo results
        file, a DeepEval test run or an lm-eval samples file; several eval-tool files of one format (a list, a
        glob pattern or a folder, e.g. one DeepEval run per model); or a table already read (``Scores``).
    output : str, optional
        The long table the commands should read for a tool file (``cjstats doctor FILE -o OUTPUT`` writes it).
    raw : DataFrame, optional
        With a ``Scores`` source: the table it was read from, searched for covariate columns.
    flags : str
        Options every printed command repeats (the command line passes the data options it was given).

    Examples
    --------
    >>> from cjstats.results.diagnosis import diagnose
    >>> print(diagnose("results.json"))  # doctest: +SKIP
    """
    import shlex
    from glob import has_magic as glob_magic

    from cjstats.io.doctor import describe, read_any, score_counts

    from cjstats.io.scores import Scores

    scores, found, fmt = read_any(source)
    facts = describe(scores, found if raw is None else raw)
    if isinstance(source, (pd.DataFrame, Scores)):
        name, stem = "<table>", "table"
    elif isinstance(source, (list, tuple)) and len(source) != 1:
        name, stem = " ".join(shlex.quote(str(s)) for s in source), fmt
    else:                            # quoted, so a glob pattern reaches cjstats as the pattern
        one = source[0] if isinstance(source, (list, tuple)) else source
        name, stem = shlex.quote(str(one)), Path(one).stem if not glob_magic(str(one)) else fmt
    commands, notes = _commands(fmt, name, facts, output, flags, stem)
    diag = Diagnosis(source=name, format=fmt, facts=facts, commands=commands, notes=notes,
                     score_counts=score_counts(scores))
    return diag
