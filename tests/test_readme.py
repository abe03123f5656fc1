"""The README's Python examples run as written (keeps the README true to the code)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md[python block {i}]", "exec"), namespace)


def test_readme_names_the_two_setup_commands_that_ci_runs():
    text = README.read_text()
    assert "bash scripts/run.sh demo" in text and "bash scripts/run.sh test" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "bash scripts/run.sh test" in ci
