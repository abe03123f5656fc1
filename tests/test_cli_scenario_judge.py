"""``--scenario-judge`` on decompose / variance / allocate, and the design verdict in decompose's text."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "estimators"))
from cli_helpers import run_main  # noqa: E402
from test_scenario_judge import simulate  # noqa: E402


def _csv(tmp_path, m):
    p = tmp_path / f"m{m}.csv"
    simulate(n=15, m=m, k=4, seed=31, s2sj=0.8).to_csv(p, index=False)
    return str(p)


def test_decompose_fits_and_reports_the_interaction(tmp_path):
    code, out, err = run_main(["decompose", _csv(tmp_path, 3)])
    assert code == 0, err
    assert "scenario_judge (A): " in out and "F = " in out
    assert "scenario_judge (A) and the design: it " in out


def test_off_and_on(tmp_path):
    code, out, err = run_main(["decompose", _csv(tmp_path, 3), "--scenario-judge", "off"])
    assert code == 0, err
    assert "not fitted (scenario_judge=False)" in out and "and the design" not in out
    code, out, err = run_main(["decompose", _csv(tmp_path, 1), "--scenario-judge", "on"])
    assert code != 0
    assert "not identifiable" in err and "Traceback" not in err
    code, out, err = run_main(["decompose", _csv(tmp_path, 1), "--format", "json"])
    assert code == 0 and '"scenario_judge"' in out


def test_variance_and_allocate_take_it(tmp_path):
    f = _csv(tmp_path, 3)
    code, out, err = run_main(["variance", f, "--scenario-judge", "on"])
    assert code == 0, err
    code, out, err = run_main(["allocate", f, "--budget", "200", "--scenario-judge", "on"])
    assert code == 0, err
    assert "scenario x judge interaction" in out


def test_report_has_the_interaction_section(tmp_path):
    import cjstats as cj

    df = simulate(n=15, m=3, k=4, seed=32, s2sj=0.8)
    out = cj.report(cj.read_scores(df), output=tmp_path / "r.html", subsample_reps=20)
    html = out.read_text() if hasattr(out, "read_text") else (tmp_path / "r.html").read_text()
    assert "Judges who disagree about scenarios (scenario x judge interaction)" in html
    assert "scenario_judge (A): " in html and "For A: it " in html
    df1 = simulate(n=15, m=1, k=4, seed=32)
    cj.report(cj.read_scores(df1), output=tmp_path / "r1.html")
    assert "Judges who disagree about scenarios" not in (tmp_path / "r1.html").read_text()
