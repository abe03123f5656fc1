"""The report's numbers and pictures agree (issue 24): the two SE figures, which model is drawn, layout, outputs."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

import cjstats as cj  # noqa: E402
from cjstats.exceptions import CjstatsError  # noqa: E402
from cjstats.reporting import _se_text, format_table  # noqa: E402
from cjstats.decisions.formulas import design_variance, strategy_variance  # noqa: E402


@pytest.fixture(scope="module")
def hanna():
    return cj.datasets.load("hanna", composite=True, keep_sentinels=True)


@pytest.fixture(scope="module")
def fit(hanna):
    return cj.estimate(hanna, method="anova")


@pytest.fixture(scope="module")
def html(hanna):
    return cj.report(hanna, method="anova", comparisons=None)


def _section(html: str, sid: str) -> str:
    start = html.index(f'<section id="{sid}">')
    return html[start:html.index("</section>", start)]


# ----------------------------------------------------------------------------------------- the two SEs
def test_the_two_se_figures_are_computed_from_cjstats_variance_and_labelled(html, fit):
    """Strategy curves: SE on the table's scenarios; allocation: SE including scenario sampling. Both are in the
    report for the recommended design, each with its name, and they differ exactly by sigma2_alpha/n."""
    model = "Human"                               # the highest panel mean: what the sections draw by default
    assert fit.components.query("component == 'mu'").set_index("model")["estimate"].idxmax() == model
    alloc = cj.optimise(fit, budget=480, model=model, seed=0)
    r = alloc.recommendation
    est = fit.estimates(model=model)
    kw = dict(n=int(r["n"]), m=int(r["m"]), k=int(r["judges_per_generation"]), k_total=5,
              assignment="random" if r["strategy"] == "random" else "cyclic")
    s2b = 0.0                                     # m = 1: sigma2_beta not identifiable, used at 0 by both
    se_sampled = math.sqrt(design_variance(est["scenario"], s2b, est["residual"], est["judge_panel"], **kw))
    se_fixed = math.sqrt(design_variance(0.0, s2b, est["residual"], est["judge_panel"], **kw))
    assert se_sampled == pytest.approx(r["se"], rel=1e-12)            # the optimiser ranked this number
    assert se_sampled ** 2 - se_fixed ** 2 == pytest.approx(est["scenario"] / r["n"], rel=1e-9)
    # the strategy curve at the same calls per scenario is the conditional number
    b = int(r["m"]) * int(r["judges_per_generation"])
    curve = math.sqrt(strategy_variance(r["strategy"], s2_generation=s2b, s2_residual=est["residual"],
                                        s2_judge_panel=est["judge_panel"], budget=b, n=int(r["n"]), k_total=5))
    assert curve == pytest.approx(se_fixed, rel=1e-12)
    allocation = _section(html, "allocation")
    assert f"predicted SE including scenario sampling {_se_text(se_sampled)}" in allocation
    assert f"SE on these scenarios, the strategy curves&#39; quantity: {_se_text(se_fixed)}" in allocation
    assert _se_text(se_sampled) != _se_text(se_fixed)                   # 0.0370 against 0.0165 on HANNA
    assert "SE of the mean on these scenarios" in _section(html, "strategies")


def test_each_figure_axis_names_its_quantity(fit):
    curves = cj.plots.strategy_curves(fit, model="GPT")
    assert "on these scenarios" in curves.axes[0].get_ylabel()
    sampled = cj.plots.strategy_curves(fit, model="GPT", scenarios="sampled")
    assert "including scenario sampling" in sampled.axes[0].get_ylabel()
    frontier = cj.plots.allocation_frontier(cj.optimise(fit, budget=480, model="GPT"))
    assert "including scenario sampling" in frontier.axes[0].get_ylabel()
    # the "sampled" curves are the frontier's quantity: at B = K_tot, all judges, the recommendation's SE
    (line,) = [x for x in sampled.axes[0].get_lines() if x.get_gid() == "line:all"]
    x, y = line.get_data()
    est = fit.estimates(model="GPT")
    want = math.sqrt(design_variance(est["scenario"], 0.0, est["residual"], est["judge_panel"], n=96, m=1, k=5,
                                     k_total=5))
    assert y[list(x).index(5)] == pytest.approx(want, rel=1e-12)
    with pytest.raises(CjstatsError, match="scenarios"):
        cj.plots.strategy_curves(fit, model="GPT", scenarios="both")


def test_m1_curves_show_a_over_c_and_budgets_below_k_total(fit):
    fig = cj.plots.strategy_curves(fit, model="GPT")
    lines = {ln.get_gid(): ln for ln in fig.axes[0].get_lines()}
    a, c = lines["line:all"], lines["line:cyclic"]
    np.testing.assert_allclose(a.get_ydata(), c.get_ydata(), rtol=1e-12)     # sigma2_beta = 0: they coincide
    assert a.get_linestyle() != c.get_linestyle() and a.get_zorder() > c.get_zorder()   # A stays visible
    assert list(a.get_xdata()[:5]) == [1, 2, 3, 4, 5]                          # budget < K_tot is drawn
    assert "coincides" in fig.axes[0].get_title()


# ------------------------------------------------------------------------------------- which model
def test_the_sections_say_which_model_they_draw(html, hanna):
    for sid in ("strategies", "allocation"):
        sec = _section(html, sid)
        assert "Drawn for Human, chosen as the highest panel mean of the table&#39;s 11 models (mu = 3.50, " \
               "anova): the leader" in sec
        assert "sorted order" not in sec
    chosen = cj.report(hanna.subset(models=["GPT", "XLNet"]), method="anova", model="XLNet", comparisons=None)
    assert "Drawn for XLNet, as asked" in _section(chosen, "strategies")
    assert "Recommended for XLNet" in chosen


# ------------------------------------------------------------------------------------------- layout
def test_table_columns_have_one_decimals_setting(html, fit):
    comp = _section(html.replace("<wbr>", ""), "components")     # <wbr>: where a header may wrap in print
    comp = comp[comp.index("Every component row"):]                  # the long table, behind the compact one
    table = comp[comp.index("<table>"):comp.index("</table>")]
    head = re.findall(r'<th class="\w+" scope="col">([^<]*)</th>', table)
    rows = [re.findall(r'<td class="\w+">([^<]*)</td>', r) for r in table.split("<tr>")[2:]]
    for col in ("estimate", "std_error", "lower", "upper"):
        j = head.index(col)
        decs = {len(v.split(".")[1]) for v in (r[j] for r in rows) if "." in v}
        assert len(decs) == 1, (col, decs)
    # the column's decimals: two significant digits of its smallest standard error
    from cjstats.results.format import column_decimals

    assert decs == {column_decimals(fit.components["std_error"])}


def test_no_footnote_marker_column_without_notes_and_no_empty_rows_note(hanna):
    agreement = SimpleNamespace(table=pd.DataFrame({"judge": ["a", "panel"], "bias": [0.1, 0.0],
                                                    "bias_lower": [0.0, -0.1], "bias_upper": [0.2, 0.1]}),
                                humans=pd.DataFrame(columns=["criterion", "human_r"]), reference=("h",))
    out = cj.report(hanna.subset(models=["GPT"]), method="anova", comparisons=None, human_agreement=agreement)
    section = _section(out, "human_agreement")
    assert "no rows" not in section
    assert "No human ceiling: it needs items rated by two or more reference raters" in section


def test_wide_tables_say_they_scroll_and_narrow_ones_do_not():
    wide = format_table(pd.DataFrame({f"column_number_{i}": [1.5, 2.25] for i in range(14)}))
    narrow = format_table(pd.DataFrame({"a": [1.5], "b": [2]}))
    assert wide["wide"] and not narrow["wide"]
    html = cj.report(cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT"]), method="anova",
                     comparisons=None)
    design = _section(html, "design")
    assert 'class="hint">Wide table (' in design and 'class="scroll wide' in design
    assert "background: linear-gradient" in html                     # the shadow at a hidden edge, any width


def test_print_css_keeps_headers_with_their_rows(html):
    style = html[html.index("@media print"):html.index("</style>")]
    assert "thead { display: table-header-group; }" in style
    assert "tbody tr:first-child, tbody tr:nth-child(2) { break-before: avoid; }" in style
    assert ".scroll.short { break-inside: avoid; }" in style


# ------------------------------------------------------------------------------------------- outputs
@pytest.mark.parametrize("name", ["report.docx", "report.txt", "report"])
def test_an_extension_report_cannot_write_is_refused(hanna, tmp_path, name):
    out = tmp_path / name
    with pytest.raises(CjstatsError, match="which report cannot write; name it `report.html` .HTML. or "
                                           "`report.pdf` .PDF."):
        cj.report(hanna.subset(models=["GPT"]), output=out)
    assert list(tmp_path.iterdir()) == []


def test_cli_refuses_an_unknown_extension_in_one_line(tmp_path):
    import subprocess
    import sys

    data = tmp_path / "s.csv"
    cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT"]).to_frame().to_csv(data, index=False)
    out = tmp_path / "r.docx"
    r = subprocess.run([sys.executable, "-c", "from cjstats.cli import main; main()", "report", str(data), "-o",
                        str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "extension '.docx'" in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("suffix", [".html", ".HTM", ".pdf"])
def test_known_extensions_pass_the_check(tmp_path, suffix):
    from cjstats.reporting import check_output

    assert check_output(tmp_path / f"r{suffix}", force=False).suffix == suffix


# ------------------------------------------------------------------------------------------- figures
def test_coverage_axis_and_bars_stop_at_one():
    rows = [{"design": d, "method": "anova", "component": "scenario", "coverage": cov, "coverage_mcse": 0.01,
             "replicates": 200} for d, cov in (("n=5", 1.0), ("n=20", 0.93))]
    fig = cj.plots.coverage_plot(SimpleNamespace(measures=pd.DataFrame(rows)))
    ax = fig.axes[0]
    assert ax.get_xlim()[1] == 1.0
    bars = [c for c in ax.collections if c.get_segments()]
    right = max(seg[:, 0].max() for c in bars for seg in c.get_segments())
    assert right <= 1.0


def test_agreement_plot_ticks_do_not_run_together():
    pytest.importorskip("krippendorff")
    a = cj.judge_agreement(cj.datasets.load("hanna", humans=True, keep_sentinels=True))
    fig = cj.plots.agreement_plot(a)
    ax = fig.axes[0]
    fig.canvas.draw() if hasattr(fig.canvas, "draw") else None
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
    lo, hi = ax.get_xlim()
    boxes = [b for b, v in zip(boxes, ax.get_xticks()) if lo <= v <= hi]
    assert 2 <= len(boxes) <= 6
    for b1, b2 in zip(boxes, boxes[1:]):
        assert b1.x1 + 4 < b2.x0                              # at least 4 px between neighbouring labels
