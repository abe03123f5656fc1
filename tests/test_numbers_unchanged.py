"""Regression battery: every stored result frame (tests/data/battery) is reproduced to 1e-12.

The battery (tables, fits, decision-layer grid) is defined once in tests/battery.py; the fixtures were written
by tests/data/battery/make_battery.py from that same definition. Numeric columns must agree to rtol = atol =
1e-12 (NaN == NaN, inf == inf), string and bool columns exactly, and columns and index must be the same.
The "slow" tier (heavy REML and ordinal fits on the bundled data) is marked ``slow``; the default "ci" tier
still covers every method (anova, reml, ordinal, the joint fits and comparisons, self-preference, the decision
layer and the optimiser).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import battery

INDEX = battery.read_index()
ENTRIES = INDEX["frames"]
_FRESH: dict[str, battery.Frames] = {}



def fresh(tier: str) -> battery.Frames:
    """The battery's frames of one tier, computed once per session."""
    if tier not in _FRESH:
        _FRESH[tier] = battery.build_battery((tier,))
    return _FRESH[tier]


def _param(entry: dict) -> pytest.param:
    marks = [pytest.mark.slow] if entry["tier"] == "slow" else []
    return pytest.param(entry, id=f"{entry['fit']}/{entry['frame']}", marks=marks)


@pytest.mark.parametrize("entry", [_param(e) for e in ENTRIES])
def test_frame_unchanged(entry):
    got = fresh(entry["tier"]).get((entry["fit"], entry["frame"]))
    assert got is not None, f"fit {entry['fit']!r} no longer produces frame {entry['frame']!r}"
    problems = battery.compare_frames(battery.read_frame(entry), got,
                                      where=f"fit {entry['fit']!r}, frame {entry['frame']!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("tier", [pytest.param(t, marks=[pytest.mark.slow] if t == "slow" else [])
                                  for t in battery.TIERS])
def test_same_frames_as_stored(tier):
    """No frame appears or disappears (a new frame means the fixtures need regenerating on purpose)."""
    stored = {(e["fit"], e["frame"]) for e in ENTRIES if e["tier"] == tier}
    made = set(fresh(tier))
    assert made == stored, (f"produced but not stored: {sorted(made - stored)}; "
                            f"stored but not produced: {sorted(stored - made)}")


def test_ci_tier_covers_every_method():
    """The default (not slow) subset still exercises each estimator and each kind of result."""
    ci = {e["fit"] for e in ENTRIES if e["tier"] == "ci"}
    for part in ("anova", "reml", "ordinal", "sj_false", "thresholds_judge", "joint.", "per_model", "compare.",
                 "self_preference.", "judge_f_test.", "decisions", "optimise."):
        assert any(part in f for f in ci), f"no ci-tier fit covers {part!r}"


# ------------------------------------------------------------------------- the comparison can fail (planted)
def _stored(fit: str, frame: str) -> pd.DataFrame:
    entry = next(e for e in ENTRIES if e["fit"] == fit and e["frame"] == frame)
    return battery.read_frame(entry)


def test_planted_relative_change_is_reported():
    expected = _stored("hanna.reml", "components")
    changed = expected.copy()
    i = int(np.flatnonzero(np.isfinite(expected["estimate"].to_numpy()) & (expected["estimate"] != 0))[3])
    old = float(changed.loc[changed.index[i], "estimate"])
    changed.loc[changed.index[i], "estimate"] = old * (1 + 1e-9)
    problems = battery.compare_frames(expected, changed, where="fit 'hanna.reml', frame 'components'")
    assert len(problems) == 1, problems
    msg = problems[0]
    assert "'hanna.reml'" in msg and "'components'" in msg and "column 'estimate'" in msg
    assert f"row {expected.index.tolist()[i]!r}" in msg and repr(old) in msg and repr(old * (1 + 1e-9)) in msg
    assert f"model={expected['model'].iloc[i]!r}" in msg and f"component={expected['component'].iloc[i]!r}" in msg


def test_planted_change_below_tolerance_passes():
    expected = _stored("hanna.reml", "components")
    changed = expected.copy()
    changed["estimate"] = changed["estimate"] * (1 + 1e-14)
    assert battery.compare_frames(expected, changed) == []


def test_planted_nan_string_bool_and_shape_changes_are_reported():
    expected = _stored("sim_unbal.reml", "components")
    changed = expected.copy()
    changed.loc[changed.index[0], "method"] = changed["method"].iloc[0] + " "
    changed.loc[changed.index[1], "at_boundary"] = not bool(changed["at_boundary"].iloc[1])
    j = int(np.flatnonzero(np.isfinite(expected["std_error"].to_numpy()))[0])
    changed.loc[changed.index[j], "std_error"] = math.nan
    problems = battery.compare_frames(expected, changed)
    assert any("column 'method'" in p for p in problems)
    assert any("column 'at_boundary'" in p for p in problems)
    assert any("column 'std_error'" in p and "nan" in p for p in problems)
    assert battery.compare_frames(expected, expected.iloc[:-1])
    assert battery.compare_frames(expected, expected.drop(columns=["note"]))
    assert battery.compare_frames(expected, expected.iloc[::-1])
    inf = pd.DataFrame({"x": [math.inf, -math.inf, math.nan]})
    assert battery.compare_frames(inf, inf.copy()) == []
    assert battery.compare_frames(inf, pd.DataFrame({"x": [-math.inf, math.inf, math.nan]}))
