"""The package's import structure: no import circle between modules, and no private module imported from
outside the package that owns it (a small AST check, so it needs no extra tool)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "cjstats"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every cjstats module a file imports, at top level or inside functions (lazy imports count)."""
    tree = ast.parse(path.read_text())
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
