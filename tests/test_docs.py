"""The documentation site builds with `mkdocs build --strict` (no warnings) and cites nothing outside the repo."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_mkdocs_build_strict_has_no_warnings(tmp_path):
    for mod in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(mod, reason=f"{mod} is not installed (pip install 'cjstats[docs]'); docs build skipped")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                        "-d", str(tmp_path / "site")], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=300)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log
    assert "WARNING" not in log, log
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    for name in ("judge_bias_heatmap", "strategy_curves", "estimate", "report"):
        assert 'id="cjstats.' in api and name in api           # the API page is generated from docstrings
    for fig in ("judge_bias_heatmap", "strategy_curves", "components_forest", "allocation_frontier"):
        assert (tmp_path / "site" / "figures" / f"{fig}.png").exists()


def test_docs_and_package_cite_no_file_outside_the_repository():
    pattern = re.compile(r"\.\./shared|DESIGN\.md|STYLE\.md")
    # the docs site, the figures, the report and the tables (older modules are checked where they live)
    files = [*ROOT.joinpath("docs").rglob("*.md"), *ROOT.joinpath("docs").rglob("*.py"),
             *ROOT.joinpath("cjstats", "plots").rglob("*.py"), *ROOT.joinpath("cjstats", "reporting").rglob("*"),
             ROOT / "cjstats" / "tables.py", ROOT / "mkdocs.yml"]
    files = [p for p in files if p.is_file() and p.suffix in (".md", ".py", ".j2", ".yml")]
    offenders = [str(p.relative_to(ROOT)) for p in files if pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
