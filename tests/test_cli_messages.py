"""No message advises an option the command does not have.

Every message template and hint in ``cjstats/`` (the string literals of the source, f-strings with their
placeholders as ``{}``, docstrings left out) is read as a user of the command line sees it: library advice such
as ``incomplete='drop'`` or ``method='reml'`` is rewritten by the CLI (:func:`cjstats.cli._app.as_flags`)
into ``--incomplete drop`` and ``--method reml``. Each ``--option`` it then names must be an option of every
subcommand whose code can reach the message, or of the subcommand it names (``cjstats allocate --format json``).

"Can reach" is a static call graph over the package, built from the source with ``ast``: a call or reference
to a name resolves through the module's own definitions and its imports (at any level, as this package imports
inside functions); a method call ``x.name(...)`` resolves to every method called ``name`` in the package and to
the module-level ``name`` of every module the package imports by name at run time (the backend registries);
attribute reads resolve to properties. That over-approximates what runs (it ignores which arguments a
command passes), so a few messages are reachable in the graph but cannot be shown by a command: they are
listed in ``UNREACHABLE`` with the reason, and each entry must still be found (a stale entry fails, as a strict
xfail would). The subject of a validation sentence ("The option --x must ...", "The value of --x ...") is an
option the user gave, so only the other options a message names are advice and are checked.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from cjstats.cli import cli
from cjstats.cli._app import as_flags

PACKAGE = Path(__file__).resolve().parent.parent / "cjstats"
TOKEN = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
#: The rewrite table itself: its replacement strings are templates, not messages.
NOT_MESSAGES = {("cjstats.cli._app", "_FLAGS")}

_BUDGET_ONLY = ("report calls optimise with a budget only (no costs, target SE, n_max or designs; an ordinal fit, "
                "from --method ordinal, is planned for that budget too), so optimise's checks of those arguments "
                "cannot fire")
_VERDICT = ("decompose calls optimise only through scenario_judge_verdict, with the data's budget, n_max, no costs "
            "and a score-scale fit, so optimise's checks of the other arguments cannot fire")
_SIMULATION = ("simulation_study records each fit's error in its replicate table and silences the fits' warnings; "
               "none reaches the terminal")
_SPARSE = ("run_group rewrites the sparse-judge warning of incomplete='drop' (adding --exclude-judges), which this "
           "subcommand never passes")
_DESIGNS_ROWS = ("a check of the designs= rows a user gives predictive_design_variance; the optimiser's ordinal "
                 "evaluator (reached through the method names it shares) builds its candidate rows itself, and no "
                 "subcommand passes designs=")
_LAZY_FRAME = ("a summary's text reads Scores.to_frame, whose lazy frame is built from rows already validated; the "
               "graph resolves that build by name to the DuckDB engine's, which plan never runs")
_JOINT_FIT = ("compare fits the joint backends; the per-model Bayesian fit's convergence advice is reached only "
              "because the per-model and joint registries both call a module's fit")
_PER_MODEL = ("the identification check's advice for a model on one scenario, and the pooled-vs-per-model test's, are "
              "reached only by a joint REML fit, which only compare runs (with --model-scenario)")
_ORDINAL_FIT = ("the ordinal ML fit's not-converged advice is shown only by the commands that fit --method ordinal "
                "(decompose, allocate, report), which have --link and --thresholds; the others reach the fit only "
                "through the backend registry's shared name")
#: (subcommand, option) -> why the graph reaches a message naming the option that the subcommand cannot show.
UNREACHABLE: dict[tuple[str, str], str] = {
    ("allocate", "--judges-per-generation"): _DESIGNS_ROWS,
    ("compare", "--judges-per-generation"): _DESIGNS_ROWS,
    ("demo", "--judges-per-generation"): _DESIGNS_ROWS,
    ("judges", "--judges-per-generation"): _DESIGNS_ROWS,
    ("variance", "--judges-per-generation"): _DESIGNS_ROWS,
    ("plan", "--columns"): _LAZY_FRAME,
    ("plan", "--duplicates"): _LAZY_FRAME,
    ("compare", "--draws"): _JOINT_FIT,
    ("compare", "--tune"): _JOINT_FIT,
    ("demo", "--columns"): "demo reads only the bundled tables, which read_scores accepts as shipped",
    ("demo", "--duplicates"): "demo reads only the bundled tables, which read_scores accepts as shipped",
    ("demo", "--incomplete"): "demo_report refuses method='anova' on a table with missing calls before fitting "
                              "(tests/test_cli_mentalalign.py), so the ANOVA's incomplete-data advice never shows",
    ("demo", "--max-drop"): "the drop limit applies to incomplete='drop', which demo never passes",
    ("demo", "--reference"): "demo asks for the human section only on hanna, which has its reference raters",
    ("demo", "--exclude-judges"): _SPARSE,
    ("plan", "--exclude-judges"): _SPARSE,
    ("study", "--exclude-judges"): _SPARSE,
    ("datasets", "--exclude-judges"): _SPARSE,
    ("humans", "--n-max"): "label_budgets fills n_max with the data's units, so label_budget never asks",
    ("judges", "--draws"): "judges offers --method auto, anova or reml: no Bayesian fit runs",
    ("judges", "--tune"): "judges offers --method auto, anova or reml: no Bayesian fit runs",
    ("decompose", "--costs"): _VERDICT,
    ("decompose", "--generation-cost"): _VERDICT,
    ("decompose", "--judges-per-generation"): _VERDICT,
    ("decompose", "--m-max"): _VERDICT,
    ("decompose", "--n-max"): _VERDICT,
    ("decompose", "--target-se"): _VERDICT,
    ("report", "--costs"): _BUDGET_ONLY,
    ("report", "--generation-cost"): _BUDGET_ONLY,
    ("report", "--judges-per-generation"): _BUDGET_ONLY,
    ("report", "--m-max"): _BUDGET_ONLY + "; the subsampling experiment gets a Scores table, not an array",
    ("report", "--n-max"): _BUDGET_ONLY,
    ("report", "--target-se"): _BUDGET_ONLY,
    ("report", "--reference"): "report adds the human section only when the table has reference raters",
    ("study", "--method"): _SIMULATION,
    ("study", "--incomplete"): _SIMULATION,
    ("study", "--max-drop"): _SIMULATION,
    ("study", "--draws"): _SIMULATION,
    ("study", "--tune"): _SIMULATION,
    ("study", "--judges-per-generation"): "study never passes shares= to cyclic_schedule",
    # a real gap, outside the drop change: `cjstats study --truth scores.csv` reads the file with read_scores,
    # whose advice for a misnamed column or duplicate rows names data options that study does not have
    ("study", "--columns"): "known gap: study --truth FILE passes read_scores' advice on; study has no data options",
    ("study", "--duplicates"): "known gap: study --truth FILE passes read_scores' advice on; study has no data options",
    ("drift", "--dataset"): "drift checks that BEFORE and AFTER are files before load_scores, whose FILE-or-dataset "
                            "advice then cannot fire",
    ("drift", "--draws"): "drift offers --method reml or anova: no Bayesian fit runs",
    ("drift", "--tune"): "drift offers --method reml or anova: no Bayesian fit runs",
    ("drift", "--exclude-judges"): _SPARSE,
    ("drift", "--judges-per-generation"): _DESIGNS_ROWS,
    ("drift", "--where"): "drift passes load_scores no --where rows, so the reference-rater advice of --where cannot "
                          "fire",
    ("drift", "--output"): "the promptfoo reader's advice names promptfoo's own `promptfoo eval --output`, not a "
                           "cjstats option",
    **{(cmd, "--model-scenario"): _PER_MODEL for cmd in ("allocate", "decompose", "demo", "drift", "judges", "report",
                                                          "study", "variance")},
    ("gstudy", "--judges-per-generation"): _DESIGNS_ROWS,
    **{(cmd, opt): _ORDINAL_FIT for cmd in ("compare", "demo", "drift", "gstudy", "judges", "study", "variance")
       for opt in ("--link", "--thresholds")
       if (cmd, opt) not in {("compare", "--link"), ("gstudy", "--link")}},   # their --method ordinal takes --link
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class _Graph:
    """Units (functions, methods, classes, module constants, the rest of each module), their texts and edges."""

    def __init__(self) -> None:
        self.trees = {_module_name(p): (p, ast.parse(p.read_text(encoding="utf-8"))) for p in PACKAGE.rglob("*.py")}
        self.texts: dict[tuple[str, str], list[str]] = {}
        self.nodes: dict[tuple[str, str], list[ast.AST]] = {}
        self.defs: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
        self.methods: dict[str, set] = defaultdict(set)
        self.props: dict[str, set] = defaultdict(set)
        self.imports: dict[str, dict[str, tuple]] = defaultdict(dict)
        self.dynamic: set[str] = set()        # modules named in strings: imported at run time (registries)
        for mod, (path, tree) in self.trees.items():
            self._read(mod, path, tree)
        self.edges = {key: self._edges(key) for key in self.nodes}

    def _read(self, mod: str, path: Path, tree: ast.Module) -> None:
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                for a in n.names:
                    if a.name.startswith("cjstats"):
                        self.imports[mod][a.asname or "cjstats"] = ("module", a.name if a.asname else "cjstats")
                    else:                              # np.full(...) is numpy's, not a cjstats method named full
                        self.imports[mod].setdefault(a.asname or a.name.split(".")[0], ("external",))
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
                    base = ".".join(pkg[: len(pkg) - n.level + 1] + ([base] if base else []))
                if not base.startswith("cjstats"):
                    continue
                for a in n.names:
                    full = f"{base}.{a.name}"
                    self.imports[mod][a.asname or a.name] = (("module", full) if full in self.trees
                                                             else ("name", base, a.name))
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in self.trees:
                self.dynamic.add(n.value)

        def texts(nodes: list[ast.AST]) -> list[str]:
            out, inside = [], set()
            for node in nodes:
                for n in ast.walk(node):
                    if id(n) in docs or id(n) in inside:
                        continue
                    if isinstance(n, ast.JoinedStr):
                        out.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in n.values))
                        inside.update(id(v) for v in n.values)
                    elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                        out.append(n.value)
            return out

        def unit(key: tuple[str, str], nodes: list[ast.AST]) -> None:
            self.nodes[key] = nodes
            self.texts[key] = texts(nodes)

        def visit(body: list[ast.stmt], cls: str | None) -> list[ast.stmt]:
            rest = []
            for n in body:
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = (mod, f"{cls}.{n.name}" if cls else n.name)
                    unit(key, [n])
                    if cls is None:
                        self.defs[mod][n.name] = key
                    elif any(isinstance(d, ast.Name) and d.id in ("property", "cached_property")
                             for d in n.decorator_list):
                        self.props[n.name].add(key)
                    else:
                        self.methods[n.name].add(key)
                elif isinstance(n, ast.ClassDef) and cls is None:
                    key = (mod, n.name)
                    unit(key, [*visit(n.body, n.name), *n.decorator_list, *n.bases])
                    self.defs[mod][n.name] = key
                    for init in ("__init__", "__post_init__", "__new__"):   # calling the class runs these
                        if (mod, f"{n.name}.{init}") in self.nodes:
                            self.nodes[key].append(ast.Name(id=f"{n.name}.{init}"))
                else:
                    rest.append(n)
            return rest

        other = []
        for n in visit(tree.body, None):
            targets = (n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign)
                       else [])
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if names:                                    # a module constant: reached when referenced
                unit((mod, names[0]), [n])
                for name in names:
                    self.defs[mod][name] = (mod, names[0])
            else:
                other.append(n)
        unit((mod, "<module>"), other)

    def _lookup(self, mod: str, name: str) -> list[tuple[str, str]]:
        if name in self.defs[mod]:
            return [self.defs[mod][name]]
        if (mod, name) in self.nodes:                     # a class's __init__ named by the class unit
            return [(mod, name)]
        imp = self.imports[mod].get(name)
        if imp and imp[0] == "name":
            target, obj = imp[1], imp[2]
            if obj in self.defs.get(target, {}):
                return [self.defs[target][obj]]
            if target in self.trees and obj in self.imports[target]:   # re-exported by a package __init__
                return self._lookup(target, obj)
        return []

    def _edges(self, key: tuple[str, str]) -> set[tuple[str, str]]:
        mod = key[0]
        out: set[tuple[str, str]] = set()
        for node in self.nodes[key]:
            called = {id(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)}
            for n in ast.walk(node):
                if isinstance(n, ast.Name):
                    out.update(self._lookup(mod, n.id))
                elif isinstance(n, ast.Attribute):
                    base = n.value
                    imp = self.imports[mod].get(base.id) if isinstance(base, ast.Name) else None
                    if imp and imp[0] == "external":
                        continue
                    if imp and imp[0] == "module":
                        if n.attr in self.defs.get(imp[1], {}):
                            out.add(self.defs[imp[1]][n.attr])
                        continue
                    out.update(self.props.get(n.attr, ()))
                    if id(n) in called and not n.attr.startswith("__"):   # super().__init__: the class's own
                        out.update(self.methods.get(n.attr, ()))
                        out.update(self.defs[t][n.attr] for t in self.dynamic if n.attr in self.defs.get(t, {}))
        return out

    def reach(self, start: set[tuple[str, str]]) -> set[tuple[str, str]]:
        seen: set[tuple[str, str]] = set()
        stack = list(start)
        while stack:
            key = stack.pop()
            if key not in seen:
                seen.add(key)
                stack.extend(self.edges[key])
        return seen


def _options(name: str) -> set[str]:
    return {o for p in cli.commands[name].params for o in (*p.opts, *p.secondary_opts)} | {"--help", "-h"}


def _lacking(graph: _Graph, start: set[tuple[str, str]], name: str) -> dict[tuple[str, str], list[str]]:
    """(subcommand, option it lacks) -> the messages reachable from ``start``, as the CLI shows them, naming it."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for key in graph.reach(start) - NOT_MESSAGES:
        for text in graph.texts[key]:
            if " " not in text:                     # names, keys and patterns, not sentences
                continue
            msg = as_flags(text)
            for m in TOKEN.finditer(msg):
                before = msg[:m.start()]
                if re.search(r"(?:^|The option |The value of |The ')$", before):
                    continue                        # the option being validated: one the user gave
                other = re.search(r"cjstats (\w+)(?: [^;.,()`]*)?$", before)
                target = other.group(1) if other and other.group(1) in cli.commands else name
                if m.group(0) not in _options(target):
                    found[(name if target == name else f"{name} -> {target}", m.group(0))].append(
                        f"{key[0]}.{key[1]}: {msg}")
    return found


@pytest.fixture(scope="module")
def graph() -> _Graph:
    return _Graph()


@pytest.fixture(scope="module")
def advice(graph) -> dict[tuple[str, str], list[str]]:
    """Every (subcommand, option it lacks) with the messages naming it, over every subcommand."""
    found: dict[tuple[str, str], list[str]] = {}
    for name, cmd in cli.commands.items():
        mod = cmd.callback.__module__
        found.update(_lacking(graph, {(mod, cmd.callback.__name__), (mod, "<module>"),
                                      ("cjstats.cli._app", "run_group")}, name))
    return found


def test_the_walk_reaches_the_messages_it_checks(graph):
    # the drop refusal, with its advice, reaches decompose through estimate and the registry's ANOVA backend
    reached = graph.reach({("cjstats.cli.decompose", "decompose")})
    assert ("cjstats.estimators.anova", "fit") in reached
    assert ("cjstats.stats.cellstats", "CellStats.for_anova") in reached
    texts = [as_flags(t) for key in reached for t in graph.texts[key]]
    assert any("--max-drop" in t and "--method reml" in t for t in texts)
    assert {"decompose", "compare", "report", "judges", "allocate", "demo", "humans"} <= set(cli.commands)


def test_the_walk_flags_advice_for_an_option_a_subcommand_lacks(graph):
    # humans has no --method: were it to fit the ANOVA, the ANOVA's advice to use --method reml would be flagged
    lacking = _lacking(graph, {("cjstats.estimators.anova", "fit")}, "humans")
    assert ("humans", "--method") in lacking and ("humans", "--incomplete") not in lacking
    assert any("Use --method reml" in m for m in lacking[("humans", "--method")])


def test_no_message_advises_an_option_its_subcommand_lacks(advice):
    unexpected = {k: v for k, v in advice.items() if k not in UNREACHABLE}
    assert not unexpected, "\n".join(f"{cmd} has no {opt}, but can show: {msgs[0]}"
                                     for (cmd, opt), msgs in sorted(unexpected.items()))


def test_every_declared_unreachable_message_still_exists(advice):
    stale = sorted(set(UNREACHABLE) - set(advice))
    assert not stale, f"UNREACHABLE lists pairs the walk no longer finds (remove them): {stale}"
