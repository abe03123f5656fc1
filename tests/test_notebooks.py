"""Every notebook executes top to bottom on the current package (nbclient), and is stored with its outputs."""

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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes_without_error(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (cjstats[notebooks])")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (cjstats[notebooks])")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (cjstats[notebooks])")
    pytest.importorskip("matplotlib")
    # the kernel imports this checkout's cjstats, whatever is installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()                  # raises CellExecutionError, naming the cell, on any error
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []


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
