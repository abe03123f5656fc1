"""The script behind docs/comparisons.md runs on a slice of MentalAlign and gives consistent tables."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "docs" / "scripts" / "comparisons_mentalalign.py"


def test_docs_script_runs_on_a_slice():
    spec = importlib.util.spec_from_file_location("comparisons_mentalalign", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    res = mod.run(scenarios=80)
    for method in ("anova", "reml"):
        r = res[method]
        assert len(r["compare"].ranks) == 10
        assert abs(r["compare"].ranks["p_best"].sum() - 1) < 1e-12
        sp = r["self_preference"].contrasts
        assert len(sp) == 6 and sp["std_error"].gt(0).all()
    # the two backends agree closely on the same data (REML keeps the few incomplete scenarios ANOVA drops)
    a = res["anova"]["self_preference"].contrasts["estimate"].to_numpy()
    b = res["reml"]["self_preference"].contrasts["estimate"].to_numpy()
    assert abs(a - b).max() < 0.05
