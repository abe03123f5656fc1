"""Every fitting subcommand runs on MentalAlign with its defaults.

MentalAlign misses one judge call per model in 4,000 (two for some models), so the ANOVA cannot fit it as it
is; ``--method auto`` (every subcommand's default) picks REML, which keeps every call, and says why in one line.
``demo`` reads the bundled table (``--dataset``); the others read it from a CSV written here: the composite of
the criteria (one score per call, as ``compare`` needs, and the smallest table that still has the gaps) and, for
``humans``, one criterion with the human-expert ratings.
"""

from __future__ import annotations

import json

import pytest

import cjstats as cj
from cli_helpers import run_main

AUTO_REML = "Method: reml (--method auto: model 'claude-3.5-haiku' is not complete and balanced, 1 of 4000 judge "
AUTO_REML_CRIT = ("Method: reml (--method auto: model 'claude-3.5-haiku', criterion 'Empathy' is not complete and "
                  "balanced, 1 of 4000 judge ")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("mentalalign")
    composite = d / "composite.csv"
    cj.datasets.load("mentalalign", composite=True).to_frame().to_csv(composite, index=False)
    frame = cj.datasets.load_frame("mentalalign")
    humans = d / "empathy_with_humans.csv"
    frame[frame["criterion"] == "Empathy"].to_csv(humans, index=False)
    return {"composite": composite, "humans": humans, "dir": d}


def _ok(args):
    code, out, err = run_main(args)
    assert code == 0, err
    return out, err


def test_the_bundled_table_misses_calls_so_the_anova_refuses_it():
    d = cj.datasets.load("mentalalign", composite=True).design
    assert not d["complete"].all()
    assert (d["n_missing"] > 0).sum() == 8 and int(d["n_missing"].max()) == 2


def test_decompose(files):
    out, _ = _ok(["decompose", str(files["composite"])])
    assert out.startswith(AUTO_REML) and "Variance components (reml)" in out


def test_compare(files):
    out, _ = _ok(["compare", str(files["composite"])])
    assert out.startswith(AUTO_REML) and "Model comparison (reml, panel view, 1000 scenarios, 4 judges)" in out


def test_judges(files):
    out, _ = _ok(["judges", str(files["composite"])])
    assert out.startswith(AUTO_REML) and "Wald F-test of the judge offsets" in out
    code, out, err = run_main(["judges", str(files["composite"]), "--format", "json"])
    tests = json.loads(out)["f_test"]
    assert code == 0 and len(tests) == 10 and {t["method"] for t in tests} == {"reml"}
    assert all(t["df1"] == 3 and 2990 < t["df2"] < 3000 for t in tests)


def test_allocate(files):
    out, _ = _ok(["allocate", str(files["composite"]), "--budget", "4000", "--model", "gpt-4o"])
    assert out.startswith("Method: reml (--method auto: model 'gpt-4o' is not complete and balanced")
    assert "Recommended:" in out


def test_variance(files):
    out, _ = _ok(["variance", str(files["composite"]), "--model", "gpt-4o-mini"])
    # no gap; the scores' ceiling is named (issue 22: --method auto considers the kind of scores)
    assert out.startswith("Method: anova (--method auto: every group is complete and balanced; scores take ")
    assert "which suits an ordinal model" in out.splitlines()[0]


def test_report(files):
    out_file = files["dir"] / "report.html"
    _, err = _ok(["report", str(files["composite"]), "-o", str(out_file), "--force"])
    assert err.startswith(AUTO_REML) and err.endswith(f"Wrote {out_file}\n")
    html = out_file.read_text()
    assert "Backend: reml, chosen by method &#39;auto&#39;" in html or "Backend: reml, chosen by method 'auto'" in html
    assert "Wald F of the judge offsets" in html and 'id="comparisons"' in html


def test_demo():
    out, _ = _ok(["demo", "--dataset", "mentalalign"])
    assert "cjstats demo: 'mentalalign'" in out and "Method: reml (auto: model 'claude-3.5-haiku'" in out
    for text in ("Variance components, reml backend", "Wald F-test of the judge offsets", "Top model by judge",
                 "Which model is better"):
        assert text in out


def test_demo_refuses_the_anova_instead_of_dropping():
    code, out, err = run_main(["demo", "--dataset", "mentalalign", "--method", "anova"])
    assert code == 1 and out == ""
    assert err == ("The bundled 'mentalalign' table misses judge calls, and the demo drops nothing, so --method anova "
                   "cannot fit it; use --method auto or --method reml, which keep every call.\n")


def test_humans(files):
    out, _ = _ok(["humans", str(files["humans"])])
    assert "Judges against the reference raters (human-expert)" in out


def test_incomplete_drop_still_runs_and_says_what_it_removed(files):
    code, out, err = run_main(["compare", str(files["composite"]), "--incomplete", "drop"])
    assert code == 0, err
    assert err.startswith("Warning: --incomplete drop removed the scenarios not complete for every model and judge "
                          "from 10 of 10 models: ")
    assert "6 of 1,000 scenarios" in err
    assert out.startswith("Method: anova (--method auto with --incomplete drop: ")
