"""Joint REML against lme4 on a suite of 41 small and boundary tables (tests/data/lme4_joint_suite/README.md).

Pooled form (``cj.fit_joint(df, method="reml")``), per table: the variances, the pairwise model differences and
their standard errors (emmeans, panel view), the ML log-likelihoods of the interaction test, and no claim of
convergence short of lme4's REML criterion.

Per-model form (``model_scenario="per_model"``, DESIGN.md section 4: one ``model_scenario`` variance per model):
the same checks; they skip, with the reason, while ``fit_joint`` refuses the option (TypeError/ValueError), and
run once it exists. Two-model complete tables: the pair's SE is the paired t SE.

Tolerances. lme4's reference is the best of five optimiser runs (bobyqa and nloptwrap at default and tight
tolerances, and a restart); measured over the suite, the runs that reach the best criterion (within 1e-9) agree
on the variances to 1.1e-6 relative (pooled; 8e-6 per model) and 2e-8 absolute below 0.01 (2.5e-7 per model).
The tolerances below are about 10-100 times that: 1e-4 relative or 1e-6 absolute, for variances, differences and
SEs alike. The REML criteria compare exactly: cjstats codes the fixed effects by the P x K cell means, so its
criterion is lme4's REMLcrit minus 2 log|det T| (reml.py module docstring); fit_lme4.R evaluates lme4's
deviance function with that coding at its optimum (``reml_crit_cell``), checked equal to REMLcrit - 2 log|det T|
to 1e-8 on every table.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj

DATA = Path(__file__).parents[1] / "data" / "lme4_joint_suite"
SUITE = json.loads((DATA / "suite.json").read_text())
NAMES = sorted(SUITE)
PAIRS = [n for n in NAMES if SUITE[n]["p"] == 2 and SUITE[n]["missing"] == 0]   # two models, complete

REL, ABS = 1e-4, 1e-6       # variances, differences, SEs (lme4's own precision: see the module docstring)
DEV_TOL = 1e-6              # REML criterion: a fit that claims convergence must reach lme4's, or better
JOINT = "(joint)"
SHARED = ("scenario", "generation", "residual")


@functools.cache
def _ref(name: str) -> dict:
    return json.loads((DATA / "fits" / f"{name}.json").read_text())


@functools.cache
def _table(name: str) -> pd.DataFrame:
    return pd.read_csv(DATA / "tables" / f"{name}.csv")


@functools.cache
def _pooled(name: str):
    df = _table(name)
    fit = cj.fit_joint(df, method="reml")
    return fit, cj.compare_models(df, method="reml", fit=fit).differences


@functools.cache
def _per_model(name: str):
    df = _table(name)
    fit = cj.fit_joint(df, method="reml", model_scenario="per_model")
    return fit, cj.compare_models(df, method="reml", fit=fit).differences


def _variance(fit, comp: str, model: str = JOINT) -> float:
    t = fit.components
    rows = t[(t.component == comp) & (t.model == model)]
    if len(rows) > 1:
        rows = rows[rows.view == "panel"]
    assert len(rows) == 1, f"expected one {comp!r} row for model {model!r} in components, got {len(rows)}"
    return float(rows["estimate"].iloc[0])


def _close(ours: float, theirs: float) -> bool:
    return bool(abs(ours - theirs) <= max(REL * abs(theirs), ABS))


def _check_variances(fit, ref: dict, per_model: bool) -> None:
    expect = {(c, JOINT): ref["variances"][c] for c in SHARED}
    if per_model:
        expect |= {("model_scenario", m): v for m, v in ref["variances"]["model_scenario"].items()}
    else:
        expect[("model_scenario", JOINT)] = ref["variances"]["model_scenario"]
    bad = []
    for (comp, model), theirs in expect.items():
        ours = _variance(fit, comp, model)
        if theirs is None:                          # m = 1: no generation term in either fit
            if not np.isnan(ours):
                bad.append(f"{comp}[{model}]: cjstats {ours!r}, lme4 has no such term (m = 1)")
        elif not _close(ours, theirs):
            bad.append(f"{comp}[{model}]: cjstats {ours:.10g}, lme4 {theirs:.10g} (diff {ours - theirs:+.3g})")
    assert not bad, "variances differ from lme4:\n  " + "\n  ".join(bad) + _diag(fit, ref)


def _check_differences(diffs: pd.DataFrame, ref: dict) -> None:
    r = ref["differences"]
    bad = []
    for a, b, est, se in zip(r["model_a"], r["model_b"], r["estimate"], r["std_error"]):
        row = diffs[(diffs.model_a == a) & (diffs.model_b == b)]
        sign = 1.0
        if row.empty:
            row, sign = diffs[(diffs.model_a == b) & (diffs.model_b == a)], -1.0
        assert len(row) == 1, f"no difference row for {a} - {b}"
        ours_est, ours_se = sign * float(row["difference"].iloc[0]), float(row["std_error"].iloc[0])
        if not _close(ours_est, est):
            bad.append(f"{a} - {b} estimate: cjstats {ours_est:.10g}, lme4 {est:.10g}")
        if not _close(ours_se, se):
            bad.append(f"{a} - {b} SE: cjstats {ours_se:.10g}, lme4 {se:.10g} (ratio {ours_se / se:.6f})")
    assert not bad, "model differences differ from lme4 (emmeans):\n  " + "\n  ".join(bad)


def _check_deviance(fit, ref: dict) -> None:
    d = fit.diagnostics
    ours, theirs = float(d["reml_deviance"]), ref["reml_crit_cell"]
    assert not (d["converged"] and ours > theirs + DEV_TOL), (
        f"diagnostics say converged=True, but the REML criterion {ours:.10f} is worse than lme4's {theirs:.10f} "
        f"by {ours - theirs:.3g}" + _diag(fit, ref))


def _diag(fit, ref: dict) -> str:
    d = fit.diagnostics
    return (f"\n  (cjstats: converged={d.get('converged')}, reml_deviance={d.get('reml_deviance')!r}, "
            f"theta={d.get('theta')}; lme4: reml_crit_cell={ref['reml_crit_cell']!r}, singular={ref['singular']})")


# ---------------------------------------------------------------------------------------------- pooled form

@pytest.mark.parametrize("name", NAMES)
def test_pooled_variances(name):
    fit, _ = _pooled(name)
    _check_variances(fit, _ref(name)["pooled"], per_model=False)


@pytest.mark.parametrize("name", NAMES)
def test_pooled_differences_and_standard_errors(name):
    _, diffs = _pooled(name)
    _check_differences(diffs, _ref(name)["pooled"])


@pytest.mark.parametrize("name", NAMES)
def test_pooled_no_false_convergence(name):
    fit, _ = _pooled(name)
    _check_deviance(fit, _ref(name)["pooled"])


@pytest.mark.parametrize("name", NAMES)
def test_pooled_ml_fits_of_the_interaction_test(name):
    fit, _ = _pooled(name)
    t, ml = fit.tests["judge_model"], _ref(name)["pooled"]["ml"]
    assert t["loglik_full_ml"] == pytest.approx(ml["loglik_full"], abs=DEV_TOL / 2)
    assert t["loglik_additive_ml"] == pytest.approx(ml["loglik_additive"], abs=DEV_TOL / 2)
    assert t["statistic"] == pytest.approx(max(ml["lr_statistic"], 0.0), abs=2 * DEV_TOL)
    assert t["df1"] == ml["df"]


# ------------------------------------------------------------------------------------------- per-model form

@pytest.mark.parametrize("name", NAMES)
def test_per_model_variances(name):
    fit, _ = _per_model(name)
    _check_variances(fit, _ref(name)["per_model"], per_model=True)


@pytest.mark.parametrize("name", NAMES)
def test_per_model_differences_and_standard_errors(name):
    _, diffs = _per_model(name)
    _check_differences(diffs, _ref(name)["per_model"])


@pytest.mark.parametrize("name", NAMES)
def test_per_model_no_false_convergence(name):
    fit, _ = _per_model(name)
    _check_deviance(fit, _ref(name)["per_model"])


def _paired_se(name: str) -> float:
    """sd of the per-scenario differences of the two models' panel means (over generations and judges) / sqrt(n)."""
    means = _table(name).groupby(["scenario", "model"])["score"].mean().unstack("model")
    d = means["m0"] - means["m1"]
    return float(d.std(ddof=1) / np.sqrt(len(d)))


@pytest.mark.parametrize("name", PAIRS)
def test_lme4_per_model_pair_se_is_the_paired_t_se(name):
    # the reference itself: with two models the per-model form leaves the 2 x 2 scenario-level covariance free,
    # so at an interior optimum Var(difference) is the sample variance of the paired differences
    ref = _ref(name)["per_model"]
    if ref["singular"]:
        pytest.skip("lme4's per-model fit is at a boundary: the identity holds only at an interior optimum")
    assert ref["differences"]["std_error"][0] == pytest.approx(_paired_se(name), rel=REL)


@pytest.mark.parametrize("name", PAIRS)
def test_per_model_pair_se_is_the_paired_t_se(name):
    if _ref(name)["per_model"]["singular"]:
        pytest.skip("lme4's per-model fit is at a boundary: the identity holds only at an interior optimum")
    _, diffs = _per_model(name)
    # an identity at the exact optimum, so no lme4 imprecision enters: tighter than REL
    assert float(diffs["std_error"].iloc[0]) == pytest.approx(_paired_se(name), rel=1e-6)


def test_suite_is_what_the_readme_says():
    assert len(NAMES) == 41 and all((DATA / "fits" / f"{n}.json").exists() for n in NAMES)
    for n in NAMES:
        ref = _ref(n)
        assert ref["n_rows"] == SUITE[n]["n_rows"] == len(_table(n))
        for form in ("pooled", "per_model"):
            r = ref[form]
            assert r["reml_crit"] - 2 * ref["logdet_t"] == pytest.approx(r["reml_crit_cell"], abs=1e-7)
            assert r["reml_crit"] == min(run["criterion"] for run in r["runs"])
