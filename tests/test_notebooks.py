"""Every notebook executes top to bottom on the current package (nbclient), and is stored with the outputs a fresh
run prints (the ``notebooks`` extra: nbclient, nbformat, ipykernel, nbconvert; skipped without them)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_with_outputs_and_figures(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code), f"{path.name}: run docs/scripts/make_notebooks.py"
    assert sum(bool(c.get("outputs")) for c in code) >= len(code) // 2
    assert any("image/png" in o.get("data", {}) for c in code for o in c["outputs"]), f"{path.name} has no figure"


def _execute(path: Path, monkeypatch):
    """The notebook at ``path`` executed top to bottom by nbclient on this checkout's cjstats (a fresh copy)."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install 'cjstats[notebooks]')")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install 'cjstats[notebooks]')")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install 'cjstats[notebooks]')")
    pytest.importorskip("matplotlib")
    # the kernel imports this checkout's cjstats, whatever is installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()                  # raises CellExecutionError, naming the cell, on any error
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes_and_prints_what_it_stores(path, monkeypatch):
    """A fresh run prints, cell by cell, the text stored in the notebook (streams, results, figure sizes; memory
    addresses, timings and warning paths masked: tests/notebook_outputs.py). Rebuild a notebook whose stored
    outputs went stale with ``python docs/scripts/make_notebooks.py NAME``."""
    from notebook_outputs import compare_notebooks

    fresh = _execute(path, monkeypatch)
    errors = [o for c in fresh.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    stale = compare_notebooks(json.loads(path.read_text()), fresh)
    assert stale == [], (f"{path.name}: the stored outputs differ from a fresh run; rebuild it with "
                         f"python docs/scripts/make_notebooks.py {path.stem}\n" + "\n".join(stale))


def test_the_comparison_masks_what_changes_between_runs_and_nothing_else():
    """Addresses, warning paths and timing columns are masked; a number moving by one unit of its last printed
    digit is the same; any other change is a difference, named by its code cell."""
    from notebook_outputs import compare_notebooks

    def nb(*texts):
        return {"cells": [{"cell_type": "code", "outputs": [{"output_type": "stream", "name": "stdout", "text": t}]}
                          for t in texts]}

    table = "   design  sec/fit reps\n0  n=30   {}   60\n"
    assert compare_notebooks(nb("<obj at 0x7f3a2b4c5d60>", table.format("0.0022")),
                             nb("<obj at 0x7f00aa11bb22>", table.format("0.0190"))) == []
    warned = "/a/cjstats/x.py:{}: CjstatsWarning: 3 rows dropped\n  fit = f(x)\n"
    assert compare_notebooks(nb(warned.format(12)), nb(warned.format(99).replace("f(x)", "g(x)"))) == []
    assert compare_notebooks(nb("mean 2.314"), nb("mean 2.315")) == []
    assert compare_notebooks(nb("mean 2.314"), nb("mean 2.372")) == [
        "code cell 1: stored '[stdout] mean 2.314' ... but a fresh run prints '[stdout] mean 2.372' ..."]
    assert compare_notebooks(nb("a", "b"), nb("a", "b", "c")) == ["2 code cells stored, 3 run"]
    assert compare_notebooks(nb("<Figure size 539x495 with 2 Axes>"), nb("<Figure size 755.7x665.5 with 2 Axes>"))


def test_stored_notebooks_are_the_builders_notebooks():
    """docs/scripts/make_notebooks.py defines every notebook; the stored ones are its executed output."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_notebooks", ROOT / "docs" / "scripts" / "make_notebooks.py")
    if importlib.util.find_spec("nbclient") is None or importlib.util.find_spec("nbformat") is None:
        pytest.skip("nbclient/nbformat are not installed (cjstats[notebooks])")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    assert sorted(builder.NOTEBOOKS) == [p.stem for p in NOTEBOOKS]
    for path in NOTEBOOKS:
        stored = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
        assert stored == [src for _, src in builder.NOTEBOOKS[path.stem]], f"rebuild {path.name}"
