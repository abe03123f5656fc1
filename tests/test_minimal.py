"""The core (scores, ANOVA and structured REML backends, judge tables, report) needs only numpy, scipy,
pandas and click.

Runs in a subprocess in which statsmodels, PyMC and ArviZ cannot be imported, as on an install without
extras (ArviZ's test_minimal pattern).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    for name in ("statsmodels", "pymc", "arviz", "pytensor", "matplotlib"):
        sys.modules[name] = None
    import cjstats as cj
    from cjstats.reporting.text import demo_report
    scores = cj.datasets.load("hanna", composite=True, keep_sentinels=True)   # complete: the ANOVA fits it
    fit = cj.estimate(scores, "anova")
    assert len(fit.components) == 11 * 7
    cj.judge_table(scores); cj.judge_f_test(scores)
    assert "cjstats demo" in demo_report("hanna")
    reml = cj.estimate(scores, "reml")          # the structured REML path needs no statsmodels
    assert reml.diagnostics["GPT"]["path"] == "structured", reml.diagnostics["GPT"]
    for method, extra, kw in (("reml", "reml", {"path": "statsmodels"}), ("bayes", "bayes", {})):
        try:
            cj.estimate(scores, method, **kw)
        except cj.CjstatsError as exc:
            assert f"pip install 'cjstats[{extra}]'" in str(exc), str(exc)
        else:
            raise AssertionError(method + " ran without its packages")
    heavy = [m for m in ("statsmodels", "pymc", "arviz") if sys.modules.get(m) is not None]
    assert not heavy, heavy
    print("ok")
""")


def test_core_runs_without_optional_packages():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")
