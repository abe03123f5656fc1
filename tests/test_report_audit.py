"""cj.report's audit sections: diagnosis (doctor), judge drift and sequential comparisons, each with its figure,
its table and one paragraph that says what it means (cjstats.reporting.sections)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

import cjstats as cj  # noqa: E402
from cjstats.exceptions import CjstatsError  # noqa: E402
from cjstats.reporting import SECTION_TITLES  # noqa: E402

CORE = ["design", "components", "judges", "f_tests", "strategies", "allocation"]
COMPS = dict(s2_model_scenario=0.1, s2_generation=0.2, s2_residual=0.8, s2_judge_panel=0.2, s2_judge_difference=0.0)


def _section(html: str, key: str) -> str:
    start = html.index(f'<section id="{key}">')
    return html[start:html.index("</section>", start)]


def _plain(fragment: str) -> str:
    import html

    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)))


@pytest.fixture(scope="module")
def audit():
    scores = cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT", "GPT-2", "XLNet"])
    f = scores.to_frame()
    shifted = f["judge"] == "ChatGPT"
    later = f.assign(score=f["score"] + np.random.default_rng(0).normal(0, 0.3, len(f)) + 0.6 * shifted)
    drift = cj.judge_drift(f, later, labels=("May run", "June run"))
    seq = cj.confidence_sequence(f, "GPT-2", "XLNet", method="normal_mixture")
    html = cj.report(scores, method="anova", comparisons=None, subsample_reps=20, diagnosis="auto", drift=drift,
                     sequences={"GPT-2 vs XLNet": seq})
    return html, drift, seq


def test_sections_in_order_each_with_figure_table_and_paragraph(audit):
    html = audit[0]
    ids = re.findall(r'<section id="([a-z_]+)">', html)
    assert ids == ["diagnosis", *CORE, "drift", "sequences"]          # the data first
    for key, alt in (("diagnosis", "score use by judge"), ("drift", "judge drift"),
                     ("sequences", "confidence sequence")):
        sec = _section(html, key)
        assert f"<h2>{SECTION_TITLES[key]}</h2>" in sec
        assert f'alt="{alt}"' in sec and "data:image/png;base64," in sec
        assert "<table" in sec


def test_diagnosis_section_says_what_the_table_holds(audit):
    text = _plain(_section(audit[0], "diagnosis"))
    assert "The table is a long score table of 1,440 scores: 3 models on 96 scenarios" in text
    assert "scored by 5 judges" in text and "continuous" in text
    assert "criteria none" in text            # empty lists read 'none', not a blank cell


def test_drift_section_names_the_drifted_judge_and_the_tests(audit):
    html, drift, _ = audit
    assert drift.flagged() == ["ChatGPT"]
    text = _plain(_section(html, "drift"))
    assert "Between 'May run' and 'June run', on 288 anchor items, ChatGPT drifted" in text
    assert "holm adjustment" in text and "re-anchored" in text
    row = drift.drift.set_index("judge").loc["ChatGPT"]
    assert f"{row['estimate']:.4f}" in text                       # the table shows the result's own number
    assert "panel_mean" in text and "equal_drift" in text and "no_drift" in text
    assert "p_chisq" not in text


def test_sequence_section_gives_the_decision_and_the_stopping_row(audit):
    html, _, seq = audit
    sec = _section(html, "sequences")
    text = _plain(sec)
    assert "<h3>GPT-2 vs XLNet</h3>" in sec
    assert seq.stop_at is not None
    assert f"STOP: it excluded 0 at n = {seq.stop_at}, so the difference is above 0" in text
    assert "would hold only had n been fixed in advance" in text
    # the stopping row's lower bound is shown with the decimals that keep it visibly above 0
    lower = float(seq.table["lower"].iloc[seq.stop_at - 1])
    assert 0 < lower < 0.01 and f'<td class="num">{lower:.4f}</td>' in sec


def test_a_plan_and_a_continuing_sequence():
    scores = cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT", "GPT-2"])
    f = scores.to_frame()
    seq = cj.confidence_sequence(f[f["scenario"].isin(sorted(f["scenario"].unique())[:30])], "GPT", "GPT-2",
                                 method="normal_mixture")
    plan = cj.sequential_plan(COMPS, delta=0.3, k_total=4, bounds=(1, 5), n_max=2000, replicates=40)
    from cjstats.reporting.sections import sequence_items

    items = sequence_items({"first 30": seq, "plan": plan})
    texts = " ".join(i["text"] for i in items if i["kind"] == "text")
    assert seq.decision == "CONTINUE" and "CONTINUE: it still contains 0" in texts
    best = plan.table.loc[plan.table["expected_n"].idxmin()]
    assert f"{best['strategy']} stops first, after about {best['expected_n']:.0f} scenarios" in texts
    assert [i["caption"] for i in items if i["kind"] == "table"][-1] == "sequential plan per strategy"


def test_wrong_result_type_is_one_sentence_before_fitting(monkeypatch):
    import cjstats.estimators as est

    monkeypatch.setattr(est, "estimate", lambda *a, **k: pytest.fail("fitted before refusing"))
    scores = cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT"])
    with pytest.raises(CjstatsError, match=r"^The 'drift' argument of report takes a DriftResult .*got DataFrame\.$"):
        cj.report(scores, drift=scores.to_frame())


def test_new_sections_render_in_headless_chromium(audit, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install -y chromium); browser step skipped.")
    page = tmp_path / "r.html"
    page.write_text(audit[0])
    shot = tmp_path / "r.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1280,12000",
                    page.as_uri()], check=True, timeout=120, capture_output=True)
    from PIL import Image

    with Image.open(shot) as im:
        grey = np.asarray(im.convert("L"))
    inked = np.nonzero((grey < 250).sum(axis=1))[0]
    assert inked.max() > 6000             # the page runs on past the core sections into the audit sections


def _two_runs(tmp_path):
    rng = np.random.default_rng(7)
    import pandas as pd

    rows = [(m, f"s{i}", j) for m in ("m1", "m2") for i in range(40) for j in ("J1", "J2", "J3")]
    b = pd.DataFrame(rows, columns=["model", "scenario", "judge"])
    item = rng.normal(0, 0.6, 80).repeat(3) + np.where(b["model"] == "m1", 0.8, 0.0)
    b["score"] = 3 + item + rng.normal(0, 0.3, len(b))
    a = b.assign(score=3 + item + 0.7 * (b["judge"] == "J3") + rng.normal(0, 0.3, len(b)))
    b.to_csv(tmp_path / "may.csv", index=False)
    a.to_csv(tmp_path / "june.csv", index=False)
    return tmp_path / "may.csv", tmp_path / "june.csv"


def test_cli_report_adds_the_audit_sections(tmp_path):
    from cli_helpers import run_main

    may, june = _two_runs(tmp_path)
    out = tmp_path / "r.html"
    code, _, err = run_main(["report", str(june), "-o", str(out), "--doctor", "--drift-before", str(may),
                             "--sequence", "m1,m2", "--bounds", "0,6"])
    assert code == 0, err
    html = out.read_text().replace("<wbr>", "")                          # <wbr>: where a cell may wrap in print
    ids = re.findall(r'<section id="([a-z_]+)">', html)
    assert ids[0] == "diagnosis" and ids[-2:] == ["drift", "sequences"]
    words = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", html)
    assert not re.search(r"\bFILE\b|<table>|\bTODO\b|\bnan\b|\bNone\b", _plain(words[words.index("<body>"):]))
    assert f"cjstats decompose {june}" in html                       # the file's own commands, not '<table>'
    assert "J3 drifted" in _plain(_section(html, "drift"))
    assert "CONTINUE: it still contains 0" in _plain(_section(html, "sequences"))   # bounded CS, 40 scenarios: wide
    for args, words in ((["--bounds", "1,5"], "--bounds sets the scale of --sequence"),
                        (["--sequence", "m1,zz"], "--sequence names 'zz'"),
                        (["--sequence", "m1"], "--sequence takes two model names"),
                        (["--drift-before", str(tmp_path / "none.csv")], "none.csv")):
        code, _, err = run_main(["report", str(june), "-o", str(tmp_path / "x.html"), *args])
        assert code == 1 and words in err and "Traceback" not in err, (args, err)
        assert not (tmp_path / "x.html").exists()


# ------------------------------------------------------------------------------------------------- covariates
@pytest.fixture(scope="module")
def covariate_report():
    df = cj.simulate_length_bias()
    fit = cj.fit_joint(df, covariates=["length"])
    return cj.report(cj.read_scores(df[["model", "scenario", "generation", "judge", "score"]]), method="anova",
                     comparisons=None, subsample_reps=20, covariates=fit), fit


def test_covariate_section_names_the_rewarding_judges_and_the_mean_length(covariate_report):
    html, fit = covariate_report
    assert re.findall(r'<section id="([a-z_]+)">', html) == [*CORE, "covariates"]
    sec = _section(html, "covariates")
    assert f"<h2>{SECTION_TITLES['covariates']}</h2>" in sec
    assert 'alt="slopes on length"' in sec and "data:image/png;base64," in sec
    text = _plain(sec)
    s = fit.slopes.set_index("judge")
    rewarding = [j for j in fit.judges if s.at[j, "lower"] > 0]
    assert rewarding and all(j in text for j in rewarding)       # the plants: the length-rewarding judge(s)
    assert "gives higher scores to answers with more length" in text or "give higher scores" in text
    assert f"at length = {fit.covariate_means[0]:.4g}, the mean" in text
    assert f"{s.at['(panel)', 'slope']:.3g}" in text
    assert "model means at length" in text


def test_covariate_section_refuses_a_plain_fit_in_one_sentence():
    s = cj.datasets.load("hanna", composite=True, keep_sentinels=True).subset(models=["GPT", "GPT-2"])
    with pytest.raises(CjstatsError, match="takes a covariate fit"):
        cj.report(s, method="anova", comparisons=None, covariates=cj.fit_joint(s))
