"""Every notebook's code cells run top to bottom on the current package (keeps the examples true)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_code_cells_run(path):
    nb = json.loads(path.read_text())
    namespace: dict = {}
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert cells, f"{path.name} has no code cells"
    for i, cell in enumerate(cells):
        exec(compile("".join(cell["source"]), f"{path.name}[{i}]", "exec"), namespace)
