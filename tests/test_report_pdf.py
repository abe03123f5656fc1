"""The report as PDF: printed by headless Chromium (Debian's ``chromium``; CI installs it, elsewhere the browser
tests skip with a message), and the sentences when it cannot be written."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

import cjstats as cj  # noqa: E402
from cjstats.exceptions import CjstatsError  # noqa: E402
from cjstats.reporting import pdf as pdf_mod  # noqa: E402
from cli_helpers import run_main  # noqa: E402

needs_chromium = pytest.mark.skipif(pdf_mod.find_browser() is None,
                                    reason="Chromium is not installed (Debian: apt-get install -y chromium); "
                                           "the PDF is printed by it, so these tests skip.")


@pytest.fixture(scope="module")
def small():
    return cj.datasets.load("hanna", composite=True).subset(models=["GPT-2", "Human", "CTRL"])


@pytest.fixture(scope="module")
def printed(small, tmp_path_factory):
    if pdf_mod.find_browser() is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install -y chromium); the PDF is printed by it.")
    path = tmp_path_factory.mktemp("pdf") / "report.pdf"
    html = cj.report(small, output=path)
    return path, html


@needs_chromium
def test_the_pdf_is_a_pdf_with_pages(printed):
    path, html = printed
    data = path.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    pages = data.count(b"/Type /Page") - data.count(b"/Type /Pages")
    assert pages >= 3
    assert "<section id=\"components\">" in html  # the HTML is still returned
    mode = stat.S_IMODE(path.stat().st_mode)
    assert mode & stat.S_IRUSR and mode == (0o666 & ~_umask())


@needs_chromium
def test_the_pdf_holds_the_report_text(printed):
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext is not installed (Debian: apt-get install -y poppler-utils); text check skipped.")
    path, _ = printed
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout
    for title in ("Design summary", "Variance components", "Judge tables and judge-bias heatmap",
                  "Allocation recommendation", "Model comparisons"):
        assert title in text, title
    assert "GPT-2" in text and "judge_panel" in text
    import re

    found = re.findall(r"\bFILE\b|<table>|\bTODO\b|\bnan\b|\bNaN\b|\bNone\b", text)
    assert not found, found                       # no placeholder in the printed words


@needs_chromium
def test_the_command_line_writes_a_pdf(tmp_path):
    src = tmp_path / "hanna.csv"
    cj.datasets.load("hanna").subset(models=["GPT-2", "Human"]).to_frame().to_csv(src, index=False)
    out = tmp_path / "r.pdf"
    code, _, err = run_main(["report", str(src), "-o", str(out), "--composite"])
    assert code == 0, err
    assert out.read_bytes().startswith(b"%PDF-") and f"Wrote {out}" in err


def test_without_chromium_the_sentence_says_how_to_get_it(small, tmp_path, monkeypatch):
    monkeypatch.setattr(pdf_mod, "find_browser", lambda: None)
    out = tmp_path / "r.pdf"
    with pytest.raises(CjstatsError, match=r"needs Chromium, which is not on PATH: install it \(Debian/Ubuntu: "
                                           r"apt-get install chromium\)"):
        cj.report(small, output=out)
    assert not out.exists()


def test_a_browser_that_does_not_print_is_one_sentence(small, tmp_path):
    out = tmp_path / "r.pdf"
    with pytest.raises(CjstatsError, match="Chromium did not write the PDF"):
        cj.report(small, output=out, browser=shutil.which("true") or "/bin/true")
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".r.pdf")]


def test_an_existing_pdf_needs_force(small, tmp_path):
    out = tmp_path / "r.pdf"
    out.write_bytes(b"old")
    with pytest.raises(CjstatsError, match="already exists; pass force=True"):
        cj.report(small, output=out, browser="/nonexistent/chromium")
    assert out.read_bytes() == b"old"


def test_html_reports_are_readable_by_others(small, tmp_path):
    out = tmp_path / "r.html"
    cj.report(small, output=out)
    assert stat.S_IMODE(out.stat().st_mode) == (0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@needs_chromium
def test_pdf_tables_wrap_at_word_boundaries(small, tmp_path):
    """Long model and judge names and narrow columns make the tables wrap: every word the PDF prints is a word of
    the HTML (a break inside a word would print fragments such as ``scenari`` or ``estimat``, as it did with
    ``overflow-wrap: anywhere``)."""
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext is not installed (Debian: apt-get install -y poppler-utils); text check skipped.")
    import html as html_mod
    import re

    df = small.to_frame()
    df["model"] = df["model"].map(lambda m: f"organisation-name/{m}-instruct-finetuned-checkpoint_2024_11_05_long")
    df["judge"] = df["judge"].map(lambda j: f"provider/{j}-judge_with_a_very_long_identifier")
    path = tmp_path / "long.pdf"
    html = cj.report(cj.read_scores(df), output=path)

    def words(text):
        return {w for w in re.split(r"[^A-Za-z]+", text) if len(w) >= 2}

    visible = re.sub(r"<style.*?</style>|src=\"data:[^\"]*\"", " ", html, flags=re.S)
    visible = html_mod.unescape(re.sub(r"<[^>]+>", " ", visible))
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert "organisation-name/" in text                 # the long names are printed (and wrapped at their joins)
    broken = sorted(words(text) - words(visible))
    assert not broken, broken
