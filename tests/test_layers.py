"""The package's import structure (docs/architecture.md draws it): the layers of the pipeline import only from
the layers below them, no private name or private module is imported from outside the package that owns it,
and no two modules import each other. A small AST check, so it needs no extra tool; the checks are functions
of the sources, and planted violations show that each one fails."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "cjstats"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


#: The pipeline's layers, lowest first (docs/architecture.md). A module may import from its own layer and the
#: layers before it. The package root (``cjstats/*.py``: exceptions, defaults, validators, warnings) is below
#: them all; ``cjstats/__init__.py`` only names the public API lazily and is not a layer.
LAYERS: tuple[str, ...] = ("io", "datasets", "stats", "results", "estimators", "decisions", "studies", "plots",
                           "reporting", "cli")


def layer_of(module: str) -> int:
    """The rank of a module's layer: -1 for the package root's own modules."""
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else -1


def _is_package(module: str) -> bool:
    return (ROOT.parent / Path(*module.split(".")) / "__init__.py").exists()


def _imports(path: Path, source: str | None = None) -> set[str]:
    """Every cjstats module a file imports, at top level or inside functions (lazy imports count)."""
    tree = ast.parse(path.read_text() if source is None else source)
    me = _module_name(path)
    pkg = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("cjstats"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
            if not base.startswith("cjstats"):
                continue
            out.add(base)
            for a in node.names:      # "from cjstats.x import y" may import the submodule y
                if (ROOT.parent / Path(*f"{base}.{a.name}".split("."))).with_suffix(".py").exists() or \
                        (ROOT.parent / Path(*f"{base}.{a.name}".split(".")) / "__init__.py").exists():
                    out.add(f"{base}.{a.name}")
    return out


MODULES = {_module_name(p): _imports(p) for p in ROOT.rglob("*.py")}
SOURCES = {_module_name(p): p.read_text() for p in ROOT.rglob("*.py")}


def upward_imports(modules: dict[str, set[str]]) -> list[str]:
    """Imports from a later layer of the pipeline (``cjstats/__init__.py`` excepted)."""
    return sorted(f"{m} imports {d}" for m, deps in modules.items() if m != "cjstats"
                  for d in deps if layer_of(d) > layer_of(m))


def private_name_imports(sources: dict[str, str]) -> list[str]:
    """``from cjstats.x.y import _name`` where the importing module is outside the package that holds x.y."""
    bad = []
    for me, src in sources.items():
        for node in ast.walk(ast.parse(src)):
            if not (isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("cjstats")):
                continue
            mod = node.module
            owner = mod if _is_package(mod) else mod.rpartition(".")[0]
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__") \
                        and not (me == owner or me.startswith(owner + ".")):
                    bad.append(f"{me} imports {mod}.{a.name}")
    return sorted(bad)


def test_no_layer_imports_from_a_later_layer():
    bad = upward_imports(MODULES)
    assert not bad, "upward imports (a layer may import only from the layers before it): " + "; ".join(bad)


def test_no_private_name_is_imported_from_outside_its_package():
    bad = private_name_imports(SOURCES)
    assert not bad, "private names imported across packages: " + "; ".join(bad)


def test_a_planted_upward_import_fails_the_layer_check():
    planted = {**MODULES, "cjstats.stats.cellstats": MODULES["cjstats.stats.cellstats"] | {"cjstats.decisions.formulas"}}
    assert upward_imports(planted) == ["cjstats.stats.cellstats imports cjstats.decisions.formulas"]
    lazy = _imports(ROOT / "io" / "read_planted.py", "def f():\n    from cjstats.plots import judge_bias_heatmap\n")
    assert upward_imports({"cjstats.io.read_planted": lazy})      # an import inside a function counts too


def test_a_planted_private_name_import_fails_the_private_check():
    planted = {"cjstats.plots.planted": "from cjstats.decisions.schedules import _completed_mask\n",
               "cjstats.decisions.planted": "from cjstats.decisions.schedules import _completed_mask\n"}
    assert private_name_imports(planted) == ["cjstats.plots.planted imports cjstats.decisions.schedules._completed_mask"]


def test_every_subpackage_is_a_named_layer():
    """A new top-level folder must take its place in the pipeline (LAYERS and docs/architecture.md)."""
    folders = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert folders == set(LAYERS)
    arch = (ROOT.parent / "docs" / "architecture.md").read_text()
    drawing = arch.split("```text", 1)[1].split("```", 1)[0]
    drawn = [m.group(1) for m in re.finditer(r"^(\w+)/", drawing, flags=re.M)]
    assert drawn == list(LAYERS), "docs/architecture.md must draw the layer folders in the order LAYERS gives"


def _owner(private: str) -> str:
    """The package that owns a private module: its name up to the first private component."""
    parts = private.split(".")
    i = next(i for i, p in enumerate(parts) if p.startswith("_"))
    return ".".join(parts[:i])


def test_no_private_module_is_imported_from_outside_its_package():
    bad = []
    for mod, deps in MODULES.items():
        for dep in deps:
            if any(p.startswith("_") for p in dep.split(".")):
                owner = _owner(dep)
                if not (mod == owner or mod.startswith(owner + ".")):
                    bad.append(f"{mod} imports {dep}")
    assert not bad, "private modules imported across packages: " + "; ".join(sorted(bad))


def _cycles() -> list[list[str]]:
    """Cycles between modules, ignoring package __init__ re-exports (a package importing its own children)."""
    graph = {m: {d for d in deps if d in MODULES and d != m and not m.startswith(d + ".") and not d.startswith(m + ".")}
             for m, deps in MODULES.items()}
    graph = {m: {d for d in deps if not (d == "cjstats" or m == "cjstats")} for m, deps in graph.items()}
    found, state, stack = [], {}, []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                found.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


@pytest.mark.parametrize("pair", [("cjstats.decisions.optimise", "cjstats.decisions.predictive")])
def test_decision_modules_do_not_import_each_other_both_ways(pair):
    a, b = pair
    assert not (b in MODULES[a] and a in MODULES[b]), f"{a} and {b} import each other"


def test_no_import_circle_between_modules():
    cycles = _cycles()
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_package_cites_no_file_outside_the_repository():
    """Code and docs cite docs/architecture.md, not design notes that are not shipped."""
    bad = [str(p.relative_to(ROOT.parent)) for p in [*ROOT.rglob("*.py"), *(ROOT.parent / "docs").rglob("*.md")]
           if any(s in p.read_text() for s in ("DESIGN.md", "STYLE.md", "../shared"))]
    assert not bad, f"files citing notes outside the repository: {bad}"
