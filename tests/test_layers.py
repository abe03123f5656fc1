"""The package's import structure (docs/architecture.md draws it): the layers of the pipeline import only from
the layers below them, no private name or private module is used from outside the package that owns it (absolute
or relative import, or an attribute of a module), no library module reaches a name through the package root, no
two modules import each other (a child taking names from a parent package that imports it included), and
``dir(cjstats)`` is the public API. A small AST check, so it needs no extra tool; the checks are functions of the
sources, and planted violations show that each one fails."""

from __future__ import annotations

import ast
import functools
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


@functools.cache
def _is_package(module: str) -> bool:
    return (ROOT.parent / Path(*module.split(".")) / "__init__.py").exists()


@functools.cache
def _is_module(module: str) -> bool:
    """Whether a dotted name is a module or package of the source tree."""
    path = ROOT.parent / Path(*module.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


@functools.cache
def _tree(source: str) -> ast.Module:
    return ast.parse(source)


def _from_base(node: ast.ImportFrom, me: str, is_package: bool) -> str:
    """The absolute module of ``from X import ...``, relative forms (``from ._x import y``) resolved."""
    base = node.module or ""
    if node.level:
        pkg = me if is_package else me.rpartition(".")[0]
        parts = pkg.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
    return base


#: Calls that import the module named by a literal string argument: ``importlib.import_module("cjstats.x")``,
#: ``__import__``, the registries' ``import_registered`` and their entries (``ModuleBackend("reml",
#: "cjstats.estimators.reml")``, ``ModuleEngine(...)``: the module is imported when the entry is used). Data tables
#: of names looked up at run time (``results.persist.RESULT_TYPES``, which names every saveable class wherever it
#: lives so that load can rebuild it) are not imports of the module that holds them.
IMPORTING_CALLS = frozenset({"import_module", "__import__", "import_registered", "ModuleBackend", "ModuleEngine"})


def _call_name(node: ast.Call) -> str | None:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _literal_imports(node: ast.AST) -> set[str]:
    """The cjstats modules a call imports by a literal name (see IMPORTING_CALLS)."""
    if not (isinstance(node, ast.Call) and _call_name(node) in IMPORTING_CALLS):
        return set()
    return {a.value for a in [*node.args, *(k.value for k in node.keywords)]
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
            and (a.value == "cjstats" or a.value.startswith("cjstats."))}


def _imports(path: Path, source: str | None = None) -> set[str]:
    """Every cjstats module a file imports, at top level or inside functions (lazy imports count), including
    ``importlib.import_module("cjstats.x")`` and the registries' literal module names (IMPORTING_CALLS)."""
    tree = ast.parse(path.read_text() if source is None else source)
    me = _module_name(path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("cjstats"))
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, me, path.name == "__init__.py")
            if not base.startswith("cjstats"):
                continue
            out.add(base)
            for a in node.names:      # "from cjstats.x import y" may import the submodule y
                if _is_module(f"{base}.{a.name}"):
                    out.add(f"{base}.{a.name}")
        else:
            out |= _literal_imports(node)
    return out


MODULES = {_module_name(p): _imports(p) for p in ROOT.rglob("*.py")}
SOURCES = {_module_name(p): p.read_text() for p in ROOT.rglob("*.py")}


def upward_imports(modules: dict[str, set[str]]) -> list[str]:
    """Imports from a later layer of the pipeline (``cjstats/__init__.py`` excepted)."""
    return sorted(f"{m} imports {d}" for m, deps in modules.items() if m != "cjstats"
                  for d in deps if layer_of(d) > layer_of(m))


def _owns(me: str, module: str) -> bool:
    """Whether ``me`` is inside the package that owns ``module``'s private names (the package itself when
    ``module`` is a package, else the package holding it)."""
    owner = module if _is_package(module) else module.rpartition(".")[0]
    return me == owner or me.startswith(owner + ".")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_name_imports(sources: dict[str, str]) -> list[str]:
    """``from cjstats.x.y import _name`` (or the relative ``from .y import _name``) where the importing module is
    outside the package that holds x.y."""
    bad = []
    for me, src in sources.items():
        for node in ast.walk(_tree(src)):
            if not isinstance(node, ast.ImportFrom):
                continue
            mod = _from_base(node, me, _is_package(me))
            if not mod.startswith("cjstats"):
                continue
            for a in node.names:
                if _private(a.name) and not _owns(me, mod):
                    bad.append(f"{me} imports {mod}.{a.name}")
    return sorted(bad)


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _module_aliases(tree: ast.AST, me: str) -> dict[str, str]:
    """Local names bound to a cjstats module: ``import cjstats.x.y as s`` (s), ``import cjstats.x`` (cjstats, the
    root), ``from cjstats.x import y`` when y is a module, ``s = import_module("cjstats.x")``."""
    alias = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "cjstats" or a.name.startswith("cjstats."):
                    alias[a.asname or "cjstats"] = a.name if a.asname else "cjstats"
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, me, _is_package(me))
            for a in node.names:
                if base.startswith("cjstats") and _is_module(f"{base}.{a.name}"):
                    alias[a.asname or a.name] = f"{base}.{a.name}"
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names = _literal_imports(node.value)
            if len(names) == 1:
                alias[node.targets[0].id] = names.pop()
    return alias


@functools.cache
def _module_attributes(source: str, me: str) -> tuple[tuple[str, str], ...]:
    """(module, attribute) for every ``X.attr`` whose X is a cjstats module (through the aliases above)."""
    tree = _tree(source)
    alias = _module_aliases(tree, me)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (chain := _dotted(node.value)) is not None:
            head, _, rest = chain.partition(".")
            if head in alias:
                mod = alias[head] + (f".{rest}" if rest else "")
                if _is_module(mod):
                    out.append((mod, node.attr))
    return tuple(out)


def private_attribute_uses(sources: dict[str, str]) -> list[str]:
    """``s._name`` where s is a cjstats module (``import cjstats.decisions.schedules as s``, ``from
    cjstats.decisions import schedules``, ``cjstats.stats._x``) and the using module is outside its package."""
    bad = set()
    for me, src in sources.items():
        for mod, attr in _module_attributes(src, me):
            if _private(attr) and not _owns(me, mod):
                bad.add(f"{me} uses {mod}.{attr}")
    return sorted(bad)


def _root_own_names() -> frozenset[str]:
    """The public names ``cjstats/__init__.py`` binds itself (``__version__``), as opposed to the names its
    ``__getattr__`` re-exports from their home modules."""
    tree = ast.parse((ROOT / "__init__.py").read_text())
    return frozenset(t.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
                     for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                     if isinstance(t, ast.Name) and not _private(t.id))


ROOT_OWN = _root_own_names()


def root_imports(sources: dict[str, str]) -> list[str]:
    """A library module reaching a name through the package root instead of its home module: ``import cjstats``
    (or ``cjstats.estimate`` after ``import cjstats.x``), ``from cjstats import estimate``, ``from cjstats import
    tables`` (the root's alias of cjstats.results.tables). The root's own modules and subpackages (``from cjstats
    import _warnings``, ``from cjstats import plots``) and the names it binds itself (``__version__``) are fine."""
    def fine(name: str) -> bool:
        return name in ROOT_OWN or _is_module(f"cjstats.{name}")

    bad = set()
    for me, src in sources.items():
        if me == "cjstats":
            continue
        tree = _tree(src)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                bad.update(f"{me} imports cjstats" for a in node.names if a.name == "cjstats")
            elif isinstance(node, ast.ImportFrom) and _from_base(node, me, _is_package(me)) == "cjstats":
                bad.update(f"{me} imports cjstats.{a.name}" for a in node.names if not fine(a.name))
            elif _literal_imports(node) & {"cjstats"}:
                bad.add(f"{me} imports cjstats")
        bad.update(f"{me} uses cjstats.{attr}" for mod, attr in _module_attributes(src, me)
                   if mod == "cjstats" and not fine(attr))
    return sorted(bad)


def parent_names_taken(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the packages above it whose ``__init__`` it takes a name from (``from cjstats.x import f`` in
    cjstats.x.y, f not a submodule; or ``x.f`` on the package), lazily or not. The root is left out: what a module
    may take from it is root_imports' business, and it imports its children only by its lazy table."""
    out: dict[str, set[str]] = {}
    for me, src in sources.items():
        tree = _tree(src)
        taken = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _from_base(node, me, _is_package(me))
                if me.startswith(base + ".") and any(not _is_module(f"{base}.{a.name}") for a in node.names):
                    taken.add(base)
        taken.update(mod for mod, attr in _module_attributes(src, me)
                     if me.startswith(mod + ".") and not _is_module(f"{mod}.{attr}"))
        taken.discard("cjstats")
        if taken:
            out[me] = taken
    return out


def _reach(start: str, modules: dict[str, set[str]]) -> set[str]:
    """The modules ``start`` imports, directly or through others. Not through the root: a module importing it gets
    the loaded root (``__version__``, its exceptions), and the root imports the API only lazily, by name."""
    seen, todo = {"cjstats"}, [start]
    while todo:
        for d in modules.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen - {"cjstats"}


def child_parent_loops(sources: dict[str, str], modules: dict[str, set[str]]) -> list[str]:
    """A module that takes a name from a package above it whose ``__init__`` imports that module (directly or
    through other imports, lazily or not: a registry's literal module name counts). The cycle check ignores a
    child's import of its parent, so such a loop hides there; one that only runs inside functions works until an
    import order changes, so none is allowed."""
    return sorted(f"{me} takes names from {pkg}, which imports {me}"
                  for me, pkgs in parent_names_taken(sources).items() for pkg in sorted(pkgs)
                  if me in _reach(pkg, modules))


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


def private_module_imports(modules: dict[str, set[str]]) -> list[str]:
    """Imports of a private module (``cjstats.plots._style``, relative ``from ._style import x`` too) from outside
    the package that owns it."""
    bad = []
    for mod, deps in modules.items():
        for dep in deps:
            if any(p.startswith("_") for p in dep.split(".")):
                owner = _owner(dep)
                if not (mod == owner or mod.startswith(owner + ".")):
                    bad.append(f"{mod} imports {dep}")
    return sorted(bad)


def test_no_private_module_is_imported_from_outside_its_package():
    bad = private_module_imports(MODULES)
    assert not bad, "private modules imported across packages: " + "; ".join(bad)


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


# ------------------------------------------------------------------ relative, attribute, root and string imports
def test_no_private_name_is_used_through_a_module_from_outside_its_package():
    bad = private_attribute_uses(SOURCES)
    assert not bad, "private names reached through a module from outside its package: " + "; ".join(bad)


def test_no_library_module_imports_through_the_package_root():
    bad = root_imports(SOURCES)
    assert not bad, ("names reached through cjstats/__init__.py instead of their home module: " + "; ".join(bad))


def test_no_module_takes_names_from_a_package_that_imports_it():
    bad = child_parent_loops(SOURCES, MODULES)
    assert not bad, "child-to-parent import loops: " + "; ".join(bad)


def test_planted_relative_private_imports_fail_the_private_checks():
    planted = {"cjstats.plots.planted": "from ..decisions.schedules import _completed_mask\n",
               "cjstats.decisions.planted": "from .schedules import _completed_mask\n"}
    assert private_name_imports(planted) == ["cjstats.plots.planted imports cjstats.decisions.schedules._completed_mask"]
    rel = _imports(ROOT / "decisions" / "planted.py", "def f():\n    from ..plots._style import PALETTE\n")
    assert "cjstats.plots._style" in rel
    assert private_module_imports({"cjstats.decisions.planted": rel}) == [
        "cjstats.decisions.planted imports cjstats.plots._style"]
    inside = _imports(ROOT / "plots" / "planted.py", "from ._style import PALETTE\n")
    assert private_module_imports({"cjstats.plots.planted": inside}) == []      # inside its package: fine


@pytest.mark.parametrize("source", [
    "import cjstats.decisions.schedules as s\ns._completed_mask\n",
    "from cjstats.decisions import schedules\nschedules._completed_mask\n",
    "from ..decisions import schedules as sch\ndef f():\n    return sch._completed_mask\n",
    "import cjstats.decisions.schedules\ncjstats.decisions.schedules._completed_mask\n",
    "from importlib import import_module\ns = import_module('cjstats.decisions.schedules')\ns._completed_mask\n",
])
def test_a_planted_private_attribute_fails_the_attribute_check(source):
    planted = {"cjstats.plots.planted": source, "cjstats.decisions.planted": source}
    assert private_attribute_uses(planted) == ["cjstats.plots.planted uses cjstats.decisions.schedules._completed_mask"]
    assert private_attribute_uses({"cjstats.plots.planted": "import cjstats.decisions.schedules as s\n"
                                   "s.cyclic_schedule, s.__name__\n"}) == []


@pytest.mark.parametrize("source, found", [
    ("import cjstats\n", "cjstats.io.planted imports cjstats"),
    ("import cjstats as cj\ndef f():\n    return cj.estimate\n", "cjstats.io.planted imports cjstats"),
    ("def f():\n    from cjstats import estimate\n", "cjstats.io.planted imports cjstats.estimate"),
    ("from .. import estimate\n", "cjstats.io.planted imports cjstats.estimate"),
    ("from cjstats import tables\n", "cjstats.io.planted imports cjstats.tables"),     # an alias, not a submodule
    ("import cjstats.io.read\ncjstats.read_scores\n", "cjstats.io.planted uses cjstats.read_scores"),
    ("import importlib\nimportlib.import_module('cjstats')\n", "cjstats.io.planted imports cjstats"),
])
def test_a_planted_import_through_the_root_fails_the_root_check(source, found):
    assert found in root_imports({"cjstats.io.planted": source})
    fine = ("from cjstats import __version__\nfrom cjstats import _warnings as warnings\nfrom cjstats import plots\n"
            "from cjstats.exceptions import CjstatsError\nimport cjstats.io.read\ncjstats.io.read.read_scores\n")
    assert root_imports({"cjstats.io.planted": fine}) == []
    assert root_imports({"cjstats": "from cjstats import io\n"}) == []      # the root itself


def test_a_literal_module_name_counts_as_an_import():
    src = ("import importlib\nfrom importlib import import_module\n"
           "def f():\n    importlib.import_module('cjstats.decisions.formulas')\n"
           "    __import__('cjstats.plots')\n    import_registered('cjstats.plots._style', 'backend', 'x')\n"
           "register_backend(ModuleBackend('x', 'cjstats.reporting'))\n"
           "import_module(name)\n")         # a computed name is not followed
    found = _imports(ROOT / "stats" / "planted.py", src)
    assert found == {"cjstats.decisions.formulas", "cjstats.plots", "cjstats.plots._style", "cjstats.reporting"}
    assert upward_imports({"cjstats.stats.planted": found}) == [f"cjstats.stats.planted imports {m}" for m in sorted(found)]
    assert private_module_imports({"cjstats.stats.planted": found}) == ["cjstats.stats.planted imports cjstats.plots._style"]


def test_planted_child_to_parent_loops_fail_the_loop_check():
    """reml's fit once asked ``cjstats.estimators.REGISTRY`` for its own capabilities while cjstats.estimators
    registers (imports) reml; a lazy import of the parent on one side and a registry name on the other."""
    child = "def _capabilities():\n    from cjstats.estimators import REGISTRY\n    return REGISTRY['reml']\n"
    planted = {**SOURCES, "cjstats.estimators.reml": child}
    assert child_parent_loops(planted, MODULES) == [
        "cjstats.estimators.reml takes names from cjstats.estimators, which imports cjstats.estimators.reml"]
    through = {**SOURCES, "cjstats.stats.engines.numpy_engine": "import cjstats.stats as S\nS.ScoreStats\n"}
    assert child_parent_loops(through, MODULES) == [       # stats -> stats.engines -> (registry) numpy_engine
        "cjstats.stats.engines.numpy_engine takes names from cjstats.stats, which imports "
        "cjstats.stats.engines.numpy_engine"]
    sibling = {**SOURCES, "cjstats.stats.engines.numpy_engine": "from cjstats.stats import cellstats\n"}
    assert child_parent_loops(sibling, MODULES) == []       # a sibling module taken through the package: no loop
    notparent = {**SOURCES, "cjstats.estimators.judges": "from cjstats.estimators import estimate\n"}
    assert child_parent_loops(notparent, MODULES) == []     # cjstats.estimators never imports judges


# ------------------------------------------------------------------------------------------ the public namespace
def test_dir_of_the_package_is_its_public_api_and_every_name_resolves():
    import cjstats

    names = dir(cjstats)
    assert names == sorted(cjstats.__all__) and len(set(names)) == len(names)
    assert set(cjstats._LAZY) <= set(names)            # every lazy export is public
    assert not [n for n in names if _private(n)]
    for leak in ("annotations", "import_module", "TYPE_CHECKING", "Any", "exceptions", "estimators", "decisions"):
        assert leak not in names
    for name in names:
        assert getattr(cjstats, name) is not None, name
    assert dir(cjstats) == names        # resolving every name (it imports the subpackages) adds nothing
