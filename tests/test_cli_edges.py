"""The command line never prints a traceback (issue 31): every subcommand, over every edge table.

The subcommands are discovered from the click app itself (``cjstats.cli.cli``): each one that reads a score FILE
runs over each edge table with its default options (plus ``--method ordinal`` and ``--model-scenario per-model``
where the command offers them); the ones that read something else (``drift``: two files; ``plan``: a count or
an allocation; ``study``: a truth file; ``demo``, ``datasets``: nothing) get a matching small case. A run passes
when it prints no traceback and either exits 0 with a result or exits 1 with ONE sentence on stderr that is not a
Python exception repr (``KeyError: ...``, ``numpy``, an "internal error" notice).

A new subcommand, or a new required argument, makes :func:`test_every_subcommand_is_covered` fail until it has
a case here.
"""

from __future__ import annotations

import json
import re

import click
import numpy as np
import pandas as pd
import pytest

from cjstats.cli import cli
from cli_helpers import run_main

N = 30                       # scenarios of the edge tables (small: the whole file runs in well under a minute)
JUDGES = ("j1", "j2", "j3")
MODELS = ("A", "B")


# ------------------------------------------------------------------------------------------ the edge tables
def _long(score, *, models=MODELS, judges=JUDGES, n=N, m=1, seed=0) -> pd.DataFrame:
    """One row per judge call; ``score(model, scenario, generation, judge, rng)`` gives each score."""
    rng = np.random.default_rng(seed)
    rows = [(p, f"s{i}", g, j, score(p, i, g, j, rng))
            for p in models for i in range(n) for g in range(m) for j in judges]
    return pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])


def _likert(p, i, g, j, rng):
    return int(np.clip(round(3 + (p == "B") * 0.5 + 0.8 * np.sin(i) + rng.normal(0, 0.8)), 1, 5))


def _tables() -> dict[str, pd.DataFrame | str | None]:
    """Name -> a DataFrame (written as CSV), raw text (written as is), or None (a path that does not exist)."""
    t: dict[str, pd.DataFrame | str | None] = {}
    t["normal"] = _long(lambda p, i, g, j, r: float(np.round(5 + (p == "B") + np.sin(i) + r.normal(0, 1), 2)))
    t["binary_judge_passes_all"] = _long(lambda p, i, g, j, r: 1 if j == "j1" else int(r.random() < 0.6))
    t["likert_judge_gives_5"] = _long(lambda p, i, g, j, r: 5 if j == "j1" else _likert(p, i, g, j, r))
    strong = _long(lambda p, i, g, j, r: 1 if p == "A" else int(r.random() < 0.7), n=40, m=10)
    strong = strong.drop(index=strong.index[(strong["model"] == "A")][-1])            # 1,199 calls of A ...
    strong.loc[strong.index[strong["model"] == "A"][0], "score"] = 0                  # ... 1,198 of them passed
    t["binary_strong_model_1198_of_1199"] = strong
    no3 = _long(_likert)
    no3.loc[no3["score"] == 3, "score"] = 4                                           # valid 1-5, nobody gave a 3
    t["likert_no_3"] = no3
    one_scen = _long(_likert, models=("A", "B", "C"))
    t["model_on_one_scenario"] = one_scen[(one_scen["model"] != "C") | (one_scen["scenario"] == "s0")]
    # every judge call of a (scenario, generation) cell identical: no judge effect, no residual
    t["zero_residual"] = _long(lambda p, i, g, j, r: float(round(np.sin(i) * 2 + 5 + (p == "B"), 3)), m=2)
    # scenario + an exact judge shift, no noise: a judge effect and a residual of exactly 0
    t["judge_shift_no_noise"] = _long(lambda p, i, g, j, r: round(np.sin(i) * 2 + 5) + (j == "j2"))
    t["one_judge"] = _long(_likert, judges=("j1",))
    t["one_scenario"] = _long(_likert, n=1, m=3)
    t["one_model"] = _long(_likert, models=("A",))
    t["constant_score"] = _long(lambda p, i, g, j, r: 4.0)
    nan = t["normal"].copy()
    nan.loc[[3, 10], "score"] = np.nan
    t["nan_scores"] = nan
    inf = t["normal"].copy()
    inf.loc[[3], "score"] = np.inf
    inf.loc[[10], "score"] = -np.inf
    t["inf_scores"] = inf
    dup = t["normal"]
    t["duplicated_call"] = pd.concat([dup, dup.iloc[[5]]], ignore_index=True)
    t["empty_file"] = ""
    t["header_only"] = "model,scenario,generation,judge,score\n"
    t["semicolon_separated"] = t["normal"].to_csv(index=False, sep=";")
    t["cut_short_json"] = json.dumps(t["normal"].head(20).to_dict(orient="records"))[:300]
    t["cut_short_jsonl"] = t["normal"].head(20).to_json(orient="records", lines=True)[:700]
    t["missing_file"] = None
    t["folder"] = "<folder>"
    return t


_SUFFIX = {"cut_short_json": ".json", "cut_short_jsonl": ".jsonl"}


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, str]:
    """The edge tables on disk, made once: name -> path."""
    d = tmp_path_factory.mktemp("edges")
    paths = {}
    for name, t in _tables().items():
        path = d / f"{name}{_SUFFIX.get(name, '.csv')}"
        if isinstance(t, pd.DataFrame):
            t.to_csv(path, index=False)
        elif t == "<folder>":
            path = d / "a_folder"
            path.mkdir()
            _tables()["normal"].to_csv(path / "scores.csv", index=False)
        elif t is not None:
            path.write_text(t)
        paths[name] = str(path)
    return paths


TABLES = list(_tables())


# ---------------------------------------------------------------------------------------- the subcommands
def _commands() -> dict[str, click.Command]:
    """Every leaf subcommand of the app, by its full name ('datasets export')."""
    out: dict[str, click.Command] = {}

    def walk(group: click.Group, prefix: str) -> None:
        for name, cmd in group.commands.items():
            if isinstance(cmd, click.Group):
                walk(cmd, f"{prefix}{name} ")
            else:
                out[f"{prefix}{name}"] = cmd
    walk(cli, "")
    return out


COMMANDS = _commands()


def _arguments(cmd: click.Command) -> list[str]:
    return [p.name for p in cmd.params if isinstance(p, click.Argument)]


def _choices(cmd: click.Command, option: str) -> list[str]:
    for p in cmd.params:
        if isinstance(p, click.Option) and p.name == option and isinstance(p.type, click.Choice):
            return list(p.type.choices)
    return []


#: Subcommands reading one score FILE (discovered: their only argument is ``file``, or ``files`` for doctor,
#: which also takes several eval-tool files).
FILE_COMMANDS = sorted(name for name, cmd in COMMANDS.items() if _arguments(cmd) in (["file"], ["files"]))


def _bounds(table: str) -> str:
    """The score scale of a table, for ``monitor --bounds``."""
    return "0,1" if table.startswith("binary") else "1,5" if table.startswith(("likert", "one_", "model_on")) else "-20,30"


def _extra(command: str, table: str, tmp_path) -> list[str]:
    """The options a FILE subcommand cannot run without: without them it stops before reading the data."""
    models = {"one_model": "A", "model_on_one_scenario": "A,C"}.get(table, "A,B")
    return {"monitor": ["--models", models, "--bounds", _bounds(table)],
            "allocate": ["--budget", "600"],
            "humans": ["--reference", "j3"],
            "report": ["-o", str(tmp_path / "report.html")]}.get(command, [])


def _variants(command: str) -> list[tuple[str, list[str]]]:
    """The default run, plus the methods issue 31 names where the command offers them."""
    cmd = COMMANDS[command]
    out = [("default", [])]
    if "ordinal" in _choices(cmd, "method") or "ordinal" in _choices(cmd, "methods"):
        out.append(("ordinal", ["--method", "ordinal"]))
    if "per-model" in _choices(cmd, "model_scenario"):
        out.append(("per-model", ["--model-scenario", "per-model"]))
    if "normal_mixture" in _choices(cmd, "method"):
        out.append(("normal_mixture", ["--method", "normal_mixture"]))
    return out


# --------------------------------------------------------------------------------------------- the verdict
_REPR = re.compile(r"Traceback|\b[A-Z]\w*(Error|Exception|Warning)\b:|\bnumpy\b|\bpandas\b|\bscipy\b|internal error|"
                   r"File \"|line \d+, in ", re.IGNORECASE)


def _check(code: int, out: str, err: str, args: list[str]) -> None:
    where = f"cjstats {' '.join(args)}"
    assert "Traceback" not in out + err, f"{where} printed a traceback:\n{err[-2000:]}"
    assert code in (0, 1), f"{where} exited {code}:\n{err[-2000:]}"
    if code == 1:
        lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("Warning:", "Method:", "Bayes:"))]
        assert lines, f"{where} exited 1 with nothing on stderr"
        last = lines[-1]
        assert not _REPR.search(last), f"{where} ended in an exception repr, not a sentence: {last!r}"
        assert last.rstrip().endswith((".", ")", "?")), f"{where} ended in an unfinished sentence: {last!r}"
    else:
        assert out.strip() or "Wrote" in err, f"{where} exited 0 and printed nothing"


#: Known failures whose fix belongs elsewhere: (command, variant, table) -> reason (none left: the overflow in
#: ordinal_ml.parameter_draws on a model passing 1,198 of 1,199 calls is now one sentence naming what the data do not
#: identify).
XFAIL: dict[tuple[str, str, str], str] = {}

#: Cases left to ``-m slow`` to keep the file under a minute in CI: a report takes 3-5 s (its figures), and these
#: reach no code path the other report cases miss (the same rows as ``normal``; tables without a report-specific edge).
SLOW = {("report", "default", "semicolon_separated"), ("report", "default", "one_model"),
        ("report", "ordinal", "judge_shift_no_noise"), ("report", "ordinal", "one_model")}


def _cases():
    for command in FILE_COMMANDS:
        for variant, _ in _variants(command):
            for table in TABLES:
                marks = []
                reason = XFAIL.get((command, variant, table))
                if reason:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                if (command, variant, table) in SLOW:
                    marks.append(pytest.mark.slow)
                label = command if variant == "default" else f"{command} --{variant}"
                yield pytest.param(command, variant, table, marks=marks, id=f"{label} x {table}")


@pytest.mark.parametrize("command, variant, table", list(_cases()))
def test_file_command_over_edge_table(command, variant, table, tables, tmp_path):
    options = dict(_variants(command))[variant]
    args = [*command.split(), tables[table], *options, *_extra(command, table, tmp_path)]
    code, out, err = run_main(args)
    _check(code, out, err, args)


# -------------------------------------------------------------------------- subcommands with other inputs
def _drift_pair(tmp_path, kind: str) -> tuple[str, str]:
    """BEFORE and AFTER of `cjstats drift` (the same anchor items judged twice)."""
    rng = np.random.default_rng(5)
    b = _long(lambda p, i, g, j, r: float(np.round(5 + np.sin(i) + r.normal(0, 1), 3)), seed=5)
    if kind == "constant_shift":        # judge j2 moves by exactly 0.5, nothing else changes: zero residual
        a = b.assign(score=b["score"] + 0.5 * (b["judge"] == "j2"))
    elif kind == "identical":
        a = b.copy()
    elif kind == "one_judge":
        b = b[b["judge"] == "j1"]
        a = b.assign(score=b["score"] + rng.normal(0, 1, len(b)))
    elif kind == "binary":
        b = b.assign(score=(b["score"] > 5).astype(int))
        a = b.assign(score=np.where(b["judge"] == "j1", 1, b["score"]))
    else:  # "one_scenario"
        b = b[b["scenario"] == "s0"]
        a = b.assign(score=b["score"] + rng.normal(0, 1, len(b)))
    bp, ap = tmp_path / "before.csv", tmp_path / "after.csv"
    b.to_csv(bp, index=False)
    a.to_csv(ap, index=False)
    return str(bp), str(ap)


DRIFT_CASES = ["constant_shift", "identical", "one_judge", "binary", "one_scenario"]


@pytest.mark.parametrize("kind", DRIFT_CASES + ["anova constant_shift"], ids=lambda k: f"drift x {k}")
def test_drift_pairs(kind, tmp_path):
    method = ["--method", "anova"] if kind.startswith("anova ") else []
    before, after = _drift_pair(tmp_path, kind.split()[-1])
    args = ["drift", before, after, *method]
    _check(*run_main(args), args)


@pytest.mark.parametrize("table", TABLES, ids=lambda t: f"drift x {t} (as AFTER)")
def test_drift_over_edge_table(table, tables):
    args = ["drift", tables["normal"], tables[table]]
    _check(*run_main(args), args)


def _other_cases(tmp_path, tables) -> dict[str, list[list[str]]]:
    """Small cases of the subcommands that take no score FILE."""
    alloc = tmp_path / "alloc.json"
    code, out, _ = run_main(["allocate", tables["normal"], "--budget", "200", "--format", "json"])
    alloc.write_text(out if code == 0 else "{}")
    return {
        "plan": [["plan", "--scenarios", "7", "--judges", "a,b,c"],
                 ["plan", "--scenarios", "0", "--judges", "a,b,c"],
                 ["plan", "--scenarios", "5", "--judges", "a"],
                 ["plan", "--scenarios", tables["empty_file"], "--judges", "a,b"],
                 ["plan", "--scenarios", tables["missing_file"], "--judges", "a,b"],
                 ["plan", "--from-allocation", str(alloc)],
                 ["plan", "--from-allocation", tables["cut_short_json"]],
                 ["plan", "--from-allocation", tables["normal"]]],
        "study": [["study", "--replicates", "2", "--n", "10", "--k", "3"],
                  ["study", "--truth", tables["normal"], "--replicates", "2", "--n", "10"],
                  ["study", "--truth", tables["constant_score"], "--replicates", "2", "--n", "10"],
                  ["study", "--truth", tables["cut_short_json"], "--replicates", "2", "--n", "10"],
                  ["study", "--truth", tables["missing_file"], "--replicates", "2", "--n", "10"]],
        "datasets list": [["datasets", "list"]],
        "datasets export": [["datasets", "export", "hanna", "-o", str(tmp_path / "hanna.csv")],
                            ["datasets", "export", "hanna", "-o", tables["folder"]]],
        "demo": [["demo", "--dataset", "nosuch"]],
        "drift": [],    # test_drift_pairs, test_drift_over_edge_table
    }


OTHER = sorted(set(COMMANDS) - set(FILE_COMMANDS))


@pytest.mark.parametrize("command", OTHER, ids=lambda c: f"{c} x own inputs")
def test_other_command(command, tables, tmp_path):
    for args in _other_cases(tmp_path, tables)[command]:
        _check(*run_main(args), args)


def test_every_subcommand_is_covered(tables, tmp_path):
    """A new subcommand needs a case here: FILE subcommands are found by their argument, the others are listed."""
    assert set(OTHER) <= set(_other_cases(tmp_path, tables)), set(OTHER) - set(_other_cases(tmp_path, tables))
    assert {"decompose", "compare", "monitor", "report"} <= set(FILE_COMMANDS)
    required = {c: [p.name for p in COMMANDS[c].params if isinstance(p, click.Option) and p.required]
                for c in FILE_COMMANDS}
    assert all(set(opts) <= {"models", "output"} for opts in required.values()), required
