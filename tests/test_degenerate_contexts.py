"""Degenerate derived data and contexts taken from the data, not defaults (issue 31).

- judge_drift on an exact shift (no spread of the differences within any judge): exact rows (SE 0, p NaN) and one
  warning, never SE 1e-17 / p 1e-175 or "no drift detected"; a zero residual: no traceback;
- the interval root finder answers NaN, never raises, when its CDF is NaN or does not bracket;
- drift's runs go through read_scores' rules, naming the run; labels must be two run names;
- confidence_sequence reads a DataFrame through read_scores (duplicates refused, as for a Scores table);
- sequential_plan takes the score scale from the fit, or refuses without one; bounds must contain the fit's scores.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cli_helpers import run_main

JUDGES = ["J1", "J2", "J3"]
EXACT, PANEL = "exact: no spread in the differences", "(panel mean)"      # the verdict and the panel row
SHIFT = {"J1": 0.3, "J2": 0.0, "J3": -0.7}      # 0.3 and 0.7 are not binary fractions: D carries rounding


def _before(n: int = 12, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [("m", f"s{i}", j, float(rng.normal(3, 1))) for i in range(n) for j in JUDGES]
    return pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])


def _exact_after(before: pd.DataFrame) -> pd.DataFrame:
    return before.assign(score=before["score"] + before["judge"].map(SHIFT))


def _flat_after(before: pd.DataFrame) -> pd.DataFrame:
    """Judge shifts plus an item shift, no noise: the residual of the differences is 0, the item spread is not."""
    item = before["scenario"].str[1:].astype(int) * 0.1
    return before.assign(score=before["score"] + before["judge"].map(SHIFT) + item)


# ------------------------------------------------------------------------------------------- drift
@pytest.mark.parametrize("method", ["reml", "anova"])
def test_exact_shift_is_reported_exact_with_one_warning(method):
    b = _before()
    with pytest.warns(CjstatsWarning, match="no spread within any judge") as rec:
        res = cj.judge_drift(b, _exact_after(b), method=method)
    assert sum("no spread" in str(w.message) for w in rec) == 1
    d = res.drift.set_index("judge")
    for j, shift in SHIFT.items():
        assert d.loc[j, "estimate"] == pytest.approx(shift, abs=1e-12)
    assert d.loc[PANEL, "estimate"] == pytest.approx(np.mean(list(SHIFT.values())), abs=1e-12)
    assert (d["std_error"] == 0).all() and d["p_value"].isna().all() and d["t"].isna().all()
    assert (d["verdict"] == EXACT).all() and (d["lower"] == d["upper"]).all()
    assert res.tests["p_value"].isna().all()                  # no test applies, never p = 1e-175
    assert res.flagged() == ["J1", "J3"]                      # J1 and J3 moved, exactly; J2 did not
    assert "no spread" in res.as_text()


@pytest.mark.parametrize("method", ["reml", "anova"])
def test_uniform_exact_shift_is_not_a_tiny_standard_error(method):
    b = _before(seed=1)
    with pytest.warns(CjstatsWarning, match="drift is exact"):
        res = cj.judge_drift(b, b.assign(score=b["score"] + 0.3), method=method)
    assert (res.drift["std_error"] == 0).all() and res.drift["p_value"].isna().all()


def test_zero_residual_no_traceback():
    b = _before()
    with pytest.warns(CjstatsWarning, match="no residual variation"):
        res = cj.judge_drift(b, _flat_after(b), method="anova")
    t = res.tests.set_index("test")
    assert math.isnan(t.loc["equal_drift", "p_value"]) and math.isnan(t.loc["no_drift", "p_value"])
    # the panel mean is tested against the spread between items: mean 0.1 x (0..11) = 0.55 plus mean shift
    d = res.drift.set_index("judge")
    assert d.loc[PANEL, "estimate"] == pytest.approx(0.55 + np.mean(list(SHIFT.values())), abs=1e-9)
    assert d.loc[PANEL, "std_error"] > 0.05 and 0 < t.loc["panel_mean", "p_value"] < 1
    with pytest.raises(CjstatsError, match="no residual variation.*method='anova'") as info:
        cj.judge_drift(b, _flat_after(b), method="reml")
    assert "\n" not in str(info.value)


def test_interval_root_finder_answers_nan_instead_of_raising():
    from cjstats.estimators.intervals import noncentral_chi2_interval, noncentral_f_interval

    # an F ratio over a residual mean square of 1e-32 (a zero residual to rounding)
    assert all(math.isnan(v) for v in noncentral_chi2_interval(3.3e32, 3, 0.95))
    assert all(math.isnan(v) for v in noncentral_f_interval(1.1e32, 3, 22, 0.95))
    assert all(math.isnan(v) for v in noncentral_chi2_interval(-1.0, 3, 0.95))      # a negative mean square
    lo, hi = noncentral_chi2_interval(12.0, 3, 0.95)                                 # ordinary values unchanged
    assert 0 < lo < 9 < hi


@pytest.mark.parametrize("which", ["before", "after"])
def test_a_duplicated_judge_call_in_either_run_is_refused_naming_the_run(which):
    b = _before()
    a = b.assign(score=b["score"] + np.random.default_rng(2).normal(0, 0.5, len(b)))
    runs = {"before": b, "after": a}
    runs[which] = pd.concat([runs[which], runs[which].iloc[[4]].assign(score=9.0)], ignore_index=True)
    with pytest.raises(CjstatsError, match=f"^The '{which}' run: scores has 1 duplicate cells") as info:
        cj.judge_drift(runs["before"], runs["after"])
    assert "duplicates='mean'" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("labels", ["may", ("may",), ("may", "may"), ("", "june"), ("a", "b", "c")])
def test_labels_must_be_two_run_names(labels):
    b = _before()
    a = b.assign(score=b["score"] + np.random.default_rng(3).normal(0, 0.5, len(b)))
    with pytest.raises(CjstatsError, match=r"labels must be two run names, e.g. labels=\('may', 'june'\)"):
        cj.judge_drift(b, a, labels=labels)
    assert cj.judge_drift(b, a, labels=["may", "june"]).labels == ("may", "june")


def test_cli_drift_on_an_exact_shift_says_it_in_one_sentence(tmp_path):
    b = _before()
    b.to_csv(tmp_path / "b.csv", index=False)
    _exact_after(b).to_csv(tmp_path / "a.csv", index=False)
    for method in ("reml", "anova"):
        code, out, err = run_main(["drift", str(tmp_path / "b.csv"), str(tmp_path / "a.csv"), "--method", method])
        assert code == 0 and "Traceback" not in out + err, err
        last = out.rstrip().splitlines()[-1]
        assert last.startswith("EXACT DRIFT: the differences have no spread") and "J1 +0.3" in last, last
        assert err.count("no spread within any judge") == 1
    code, _, err = run_main(["drift", str(tmp_path / "b.csv"), str(tmp_path / "a.csv"), "--labels", "may,may"])
    assert code != 0 and "different from each other" in err and "Traceback" not in err


# ------------------------------------------------------------------------------ confidence sequences
def _two_models(n: int = 30, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [(m, f"s{i}", j, float(rng.integers(1, 6))) for i in range(n) for m in ("a", "b") for j in JUDGES]
    return pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])


def test_confidence_sequence_dataframe_goes_through_read_scores():
    df = _two_models()
    dup = pd.concat([df, df.iloc[[0]].assign(score=5.0)], ignore_index=True)
    with pytest.raises(CjstatsError, match="duplicate cells.*duplicates='mean'"):
        cj.confidence_sequence(dup, "a", "b", bounds=(1, 5))
    # the same table as a Scores is refused by read_scores itself; averaged on request, both paths agree
    with pytest.raises(CjstatsError, match="duplicate cells"):
        cj.read_scores(dup)
    with pytest.raises(CjstatsError, match="has no column 'judge'.*columns="):
        cj.confidence_sequence(df.rename(columns={"judge": "rater"}), "a", "b", bounds=(1, 5))
    # table order (and an order column) survive read_scores' sorting
    rev = df.iloc[::-1].reset_index(drop=True)
    res = cj.confidence_sequence(rev, "a", "b", bounds=(1, 5))
    assert res.table["scenario"].iloc[0] == "s29"
    by_col = cj.confidence_sequence(df.assign(ts=-df["scenario"].str[1:].astype(int)), "a", "b", bounds=(1, 5),
                                    order="ts")
    assert list(by_col.table["scenario"]) == list(res.table["scenario"])
    assert res.t_estimate == pytest.approx(cj.confidence_sequence(cj.read_scores(df), "a", "b",
                                                                  bounds=(1, 5)).t_estimate)


# --------------------------------------------------------------------------------------------- plans
@pytest.fixture(scope="module")
def fit_0_100():
    """A joint fit of scores on a 0-100 scale (2 models, 4 judges, 60 scenarios)."""
    rng = np.random.default_rng(4)
    gam = [-8.0, -2.0, 3.0, 7.0]
    rows = []
    for i in range(60):
        item = rng.normal(0, 12)
        for m, mu in (("a", 62.0), ("b", 55.0)):
            ms = rng.normal(0, 6)
            rows += [(m, f"s{i}", f"j{k}", float(np.clip(mu + item + ms + gam[k] + rng.normal(0, 10), 0, 100)))
                     for k in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CjstatsWarning)
        return cj.fit_joint(cj.read_scores(pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])))


def test_plan_takes_the_scale_from_the_fit(fit_0_100):
    lo, hi = fit_0_100.diagnostics["score_shape"]["min"], fit_0_100.diagnostics["score_shape"]["max"]
    assert 0 <= lo < 20 and hi == 100
    plan = cj.sequential_plan(fit_0_100, delta=5.0, budget=4, strategies=("all",), replicates=20, n_max=1000)
    assert plan.bounds == (lo, hi) and any("range of the scores the fit saw" in n for n in plan.notes)
    # the example: bounds (1, 5) on a 0-100 fit are refused in one sentence, not planned
    with pytest.raises(CjstatsError, match=r"is \(1, 5\), but the fit's scores run from .* to 100") as info:
        cj.sequential_plan(fit_0_100, delta=5.0, budget=4, strategies=("all",), bounds=(1, 5), replicates=20)
    assert "\n" not in str(info.value)
    ok = cj.sequential_plan(fit_0_100, delta=5.0, budget=4, strategies=("all",), bounds=(0, 100), replicates=20,
                            n_max=1000)
    assert ok.bounds == (0.0, 100.0)


def test_plan_from_a_mapping_needs_bounds():
    comps = dict(s2_model_scenario=0.1, s2_generation=0.2, s2_residual=0.8, s2_judge_panel=0.2,
                 s2_judge_difference=0.0)
    with pytest.raises(CjstatsError, match=r"needs the score scale .* pass bounds=\(lowest, highest\)"):
        cj.sequential_plan(comps, delta=0.3, k_total=4, replicates=20)
    plan = cj.sequential_plan(comps, delta=0.3, k_total=4, method="normal_mixture", replicates=20, n_max=3000)
    assert all(math.isnan(b) for b in plan.bounds)          # the normal mixture needs no scale
