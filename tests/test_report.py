"""`cjstats report` / cj.report: one self-contained HTML file on bundled HANNA, rendered in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from types import SimpleNamespace

import pandas as pd
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

import cjstats as cj  # noqa: E402
from cjstats.cli import cli  # noqa: E402
from cjstats.exceptions import CjstatsError  # noqa: E402
from cjstats.reporting import SECTION_TITLES  # noqa: E402

CORE = ("design", "components", "judges", "f_tests", "strategies", "allocation")


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict]]:
    p = _Tags()
    p.feed(html)
    return p.tags


@pytest.fixture(scope="module")
def hanna_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "hanna.csv"
    cj.datasets.load("hanna", composite=True, keep_sentinels=True).to_frame().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def hanna_report(hanna_csv, tmp_path_factory):
    from click.testing import CliRunner

    out = tmp_path_factory.mktemp("report") / "report.html"
    r = CliRunner().invoke(cli, ["report", str(hanna_csv), "-o", str(out), "--method", "anova", "--method", "reml"])
    assert r.exit_code == 0, r.output
    return out


class TestHannaReport:
    def test_writes_one_file_and_no_temporary(self, hanna_report):
        assert [p.name for p in hanna_report.parent.iterdir()] == ["report.html"]

    def test_references_no_external_url(self, hanna_report):
        html = hanna_report.read_text()
        text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", html)      # base64 has slashes
        assert not re.search(r"https?:|ftp:|//[a-z]", text, flags=re.I)
        for tag, attrs in _tags(html):
            assert tag not in ("script", "link", "iframe", "object", "embed"), tag
            for key in ("src", "href"):
                value = attrs.get(key)
                if value is not None:
                    assert value.startswith(("data:image/png;base64,", "#")), value
        assert "@import" not in html and "url(" not in html and "@font-face" not in html

    def test_every_section_present_with_real_tables_and_figures(self, hanna_report):
        html = hanna_report.read_text()
        tags = _tags(html)
        ids = [a["id"] for t, a in tags if t == "section"]
        assert ids == [*CORE, "comparisons"]        # 11 models: compared automatically
        for key in [*CORE, "comparisons"]:
            assert f"<h2>{SECTION_TITLES[key]}</h2>" in html
        assert sum(t == "table" for t, _ in tags) >= 8
        assert sum(t == "img" for t, _ in tags) >= 5                # forest, heatmap, curves, frontier, ranks
        assert "Backend anova" in html and "Backend reml" in html

    def test_human_raters_in_the_table_give_the_human_agreement_section(self):
        full = cj.datasets.load("mentalalign", humans=True)
        keep = sorted(full.to_frame()["scenario"].unique())[:60]
        frame = full.to_frame()
        ref = full.reference_frame()
        small = cj.read_scores(pd.concat([frame[frame["scenario"].isin(keep)], ref[ref["scenario"].isin(keep)]]),
                               reference="human-expert").subset(models=["gpt-4o", "qwen3-4b"],
                                                                criteria=["Empathy", "Safety"])
        html = cj.report(small, method="reml")
        ids = [a["id"] for t, a in _tags(html) if t == "section"]
        assert ids == [*CORE, "comparisons", "human_agreement"]
        section = html[html.index("id=\"human_agreement\""):]
        assert "bias" in section and "panel" in section
        assert 'alt="agreement plot"' in section
        assert "Joint fit of every model (reml) on the composite" in html

    def test_numbers_formatted_to_their_precision(self, hanna_report):
        fit = cj.estimate(cj.datasets.load("hanna", composite=True, keep_sentinels=True))
        from cjstats.results.format import column_decimals

        row = fit.components.query("model == 'GPT' and component == 'residual'").iloc[0]
        # one decimals setting per column: two significant digits of the column's smallest standard error (so
        # the GPT residual, se 0.021, shows the 4 decimals a 0.0093 se elsewhere in the column needs)
        d = column_decimals(fit.components["std_error"])
        assert d == 4
        assert f"<td class=\"num\">{row.estimate:.{d}f}</td>" in hanna_report.read_text()

    def test_renders_in_headless_chromium(self, hanna_report, tmp_path):
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        if browser is None:
            pytest.skip("Chromium is not installed (Debian: apt-get install -y chromium); browser step skipped.")
        shot = tmp_path / "report.png"
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1280,2400",
               hanna_report.as_uri()]
        subprocess.run(cmd, check=True, timeout=120, capture_output=True)
        from PIL import Image

        with Image.open(shot) as im:
            assert im.size == (1280, 2400)
            colours = im.convert("RGB").resize((64, 120)).getcolors(64 * 120)
        assert colours is not None and len(colours) > 20       # a rendered page, not a blank or error screen


class TestOutputPath:
    """-o into a missing folder or over an existing file without --force: one sentence, nothing written."""

    def _run(self, args):
        import sys

        return subprocess.run([sys.executable, "-c", "from cjstats.cli import main; main()", *args],
                              capture_output=True, text=True, timeout=120)

    def test_missing_folder(self, hanna_csv, tmp_path):
        out = tmp_path / "nope" / "r.html"
        r = self._run(["report", str(hanna_csv), "-o", str(out)])
        assert r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1
        assert r.stderr == (f"The folder `{out.parent}` of the output `{out}` does not exist; create it first or "
                            "choose another path.\n")
        assert not out.parent.exists()

    def test_existing_file_needs_force(self, hanna_csv, tmp_path):
        out = tmp_path / "r.html"
        out.write_text("keep me")
        r = self._run(["report", str(hanna_csv), "-o", str(out)])
        assert r.returncode == 1 and r.stderr == (f"The output `{out}` already exists; pass force=True (--force) to "
                                                  "overwrite it.\n")
        assert out.read_text() == "keep me" and [p.name for p in tmp_path.iterdir()] == ["r.html"]

    def test_force_overwrites_atomically(self, tmp_path):
        out = tmp_path / "r.html"
        out.write_text("old")
        cj.reporting.write_html("<html></html>", out, force=True)
        assert out.read_text() == "<html></html>" and [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_optional_sections_render_tidy_frames_generically():
    scores = cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT", "GPT-2", "XLNet"])
    ranks = pd.DataFrame({"model": ["GPT-2", "GPT", "XLNet"], "mean": [2.6, 2.3, 2.05], "rank": [1, 2, 3],
                          "rank_lower": [1, 2, 2], "rank_upper": [1, 3, 3], "p_best": [0.99, 0.01, 0.0]})
    diffs = pd.DataFrame({"model_a": ["GPT-2"], "model_b": ["GPT"], "difference": [0.29], "std_error": [0.06],
                          "df": [95.0], "lower": [0.17], "upper": [0.41], "p_value": [3e-6], "p_adjusted": [9e-6],
                          "ci_level": [0.95], "method": ["anova"], "view": ["panel"]})
    human = pd.DataFrame({"model": ["GPT"], "human_mean": [3.1], "bias": [-0.8]})
    html = cj.report(scores, comparisons=SimpleNamespace(ranks=ranks, differences=diffs), human_agreement=human).replace("<wbr>", "")
    ids = [a["id"] for t, a in _tags(html) if t == "section"]
    assert ids == [*CORE, "comparisons", "human_agreement"]
    assert "<caption>differences</caption>" in html and "<caption>ranks</caption>" in html
    assert '<td class="num">3e-06</td>' in html                        # p-values with 2 significant digits
    assert "human_mean" in html


def test_unknown_backend_is_one_sentence():
    with pytest.raises(CjstatsError, match="The 'method' argument of report must be one of"):
        cj.report(cj.datasets.load("hanna", composite=True, keep_sentinels=True), method="lmer")


def test_a_failed_write_leaves_no_file_behind(tmp_path, monkeypatch):
    import os

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        cj.reporting.write_html("<html></html>", tmp_path / "r.html")
    assert list(tmp_path.iterdir()) == []
