"""Every markdown table of the docs renders as an HTML table (docs/scripts/check_tables.py, a mkdocs hook).

A table with a bare ``|`` in a cell is printed by Python-Markdown as a paragraph of raw ``| a | b |`` text and
``mkdocs build --strict`` used to pass anyway; the hook makes it a warning, hence an error in strict mode.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BROKEN = """Text.

| criterion | smallest |bias| | bias |
|---|---|---|
| Coherence | ChatGPT | 0.1 |
"""
FIXED = BROKEN.replace("smallest |bias|", "smallest \\|bias\\|")


def _checker():
    spec = importlib.util.spec_from_file_location("check_tables", ROOT / "docs" / "scripts" / "check_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_table_with_a_bare_pipe_is_found_and_an_escaped_one_is_not():
    markdown = pytest.importorskip("markdown", reason="the docs extra (markdown) is not installed")
    check = _checker()
    broken = markdown.markdown(BROKEN, extensions=["tables"])
    assert "<table>" not in broken                              # what the reader of the page saw
    assert check.raw_tables(broken) == ["| criterion | smallest |bias| | bias |"]
    fixed = markdown.markdown(FIXED, extensions=["tables"])
    assert "<table>" in fixed and "smallest |bias|</th>" in fixed
    assert check.raw_tables(fixed) == []
    # a table shown as code is not a table that failed
    assert check.raw_tables("<pre><code>| a | b |\n|---|---|\n| 1 | 2 |\n</code></pre>") == []


def test_the_humans_page_tables_escape_their_pipes():
    doc = (ROOT / "docs" / "humans.md").read_text()
    rows = [line for line in doc.splitlines() if line.startswith("|") and "smallest" in line]
    assert len(rows) == 2 and all("smallest \\|bias\\|" in line for line in rows)


def test_the_hook_is_registered_in_mkdocs_yml():
    assert "docs/scripts/check_tables.py" in (ROOT / "mkdocs.yml").read_text()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    for mod in ("mkdocs", "material", "mkdocstrings"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"the docs extra is not installed ({mod} is missing): pip install -e .[docs] to build the "
                        "site and check its tables.")
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600, env={**_env(), "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def test_every_table_of_the_built_site_rendered(site):
    check = _checker()
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 10
    bad = {str(p.relative_to(site)): check.raw_tables(p.read_text(encoding="utf-8")) for p in pages}
    assert {k: v for k, v in bad.items() if v} == {}
    humans = (site / "humans" / "index.html").read_text(encoding="utf-8")
    assert humans.count("<table>") == humans.count("</table>") >= 8
    assert "smallest |bias|</th>" in humans


def test_the_strict_build_fails_on_a_table_that_did_not_render(site, tmp_path):
    """The hook turns a raw table into a warning, so --strict aborts (a copy of the docs with one broken page)."""
    import shutil

    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs, ignore=shutil.ignore_patterns("figures"))
    shutil.copytree(ROOT / "docs" / "figures", docs / "figures")
    (docs / "humans.md").write_text((docs / "humans.md").read_text().replace("\\|bias\\|", "|bias|"))
    (tmp_path / "mkdocs.yml").write_text((ROOT / "mkdocs.yml").read_text().replace("paths: [.]",
                                                                                  f"paths: [{ROOT}]"))
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={**_env(), "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode != 0
    assert "humans.md' has a markdown table that did not render" in run.stdout + run.stderr
