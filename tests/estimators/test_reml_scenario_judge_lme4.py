"""The scenario x judge interaction (``scenario_judge=True``, issue 21) against lme4 on 32 small and boundary tables.

Model, per evaluated model (DESIGN.md, components table)::

    X_ijl = mu + alpha_i + beta_ij + gamma_l + (alpha gamma)_il + eps_ijl

with ``scenario_judge`` the variance of (alpha gamma)_il and ``residual`` the within-cell residual. The tables,
the R script and lme4's fits are under ``tests/data/lme4_sj_suite`` (README.md there); these tests need no R.
For every table and model, ``cj.estimate(scores, method="reml", scenario_judge=True)`` is compared with

- ``lmer(score ~ judge + (1|scenario) + (1|scenario:generation) + (1|scenario:judge))`` (REML, contr.sum): the
  variances, mu and its SE, the judge offsets gamma_l and their SEs (emmeans' judge means minus their mean, SEs
  from emmeans' covariance, asymptotic), and the REML criterion, which cjstats reports as lme4's ``REMLcrit``
  under contr.sum (``cjstats/estimators/reml/core.py`` docstring: no constant between the two);
- ``lmer(score ~ 1 + (1|judge) + ... + (1|scenario:judge))``: ``judge_population`` and the random-judge model;
- the REML likelihood-ratio statistic of scenario_judge = 0, REMLcrit(without) - REMLcrit(with), the fit without
  ``(1|scenario:judge)`` having the same fixed effects.

Balanced tables also go through ``method="anova"``: the mean squares (scenario, generation within scenario,
judge, scenario x judge, within-cell residual) and the moment estimates, computed in R by hand and checked there
against ``anova(lm(...))``.

Tolerances. lme4's reference is the best of five optimiser runs; measured over the suite, every run reaches the
best criterion within 2e-7, and the tight runs (bobyqa, nloptwrap, restart) that reach it within 1e-9 agree on
the variances to 6e-6 relative (above 0.01) and 4e-8 absolute (below). Variances, mu, offsets and SEs compare to
1e-4 relative or 1e-6 absolute, 17 times or more that spread. The REML criterion: never more than 1e-6 above
lme4's best (no false convergence), and, where lme4's fit is interior, not more than 1e-6 below either (the same
criterion, not one with another constant). Where lme4's fit is singular the variances are compared unless
cjstats' criterion is below lme4's by more than 1e-6 (then cjstats found a better boundary point and lme4's
variances are no reference). The LR statistic to 1e-5 absolute; the ANOVA to 1e-8 relative (the same closed
forms on the same numbers; R kept 10 significant digits).

``test_fixtures_*`` check the suite itself (no cjstats fit), and ``test_without_scenario_judge_matches_lme4`` checks
the default fit (no interaction term) against lme4's fit without ``(1|scenario:judge)``: these run on any cjstats.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj

DATA = Path(__file__).parents[1] / "data" / "lme4_sj_suite"
SUITE = json.loads((DATA / "suite.json").read_text())
NAMES = sorted(SUITE)
CASES = [(name, f"m{q}") for name in NAMES for q in range(SUITE[name]["p"])]
BALANCED = [(name, model) for name, model in CASES if SUITE[name]["balanced"]]
IDS = [f"{name}-{model}" for name, model in CASES]
BAL_IDS = [f"{name}-{model}" for name, model in BALANCED]

REL, ABS = 1e-4, 1e-6       # variances, mu, offsets and SEs (lme4's own precision: see the module docstring)
DEV_TOL = 1e-6              # REML criterion
LR_TOL = 1e-5               # REML likelihood-ratio statistic, absolute
MS_REL = 1e-8               # ANOVA mean squares and moment estimates
COMPONENTS = ("scenario", "generation", "scenario_judge", "residual")
MS_KEYS = {"scenario": "ms_scenario", "generation": "ms_generation", "judge": "ms_judge",
           "scenario_judge": "ms_scenario_judge", "residual": "ms_residual"}


@functools.cache
def _ref(name: str) -> dict:
    return json.loads((DATA / "fits" / f"{name}.json").read_text())


@functools.cache
def _table(name: str) -> pd.DataFrame:
    return pd.read_csv(DATA / "tables" / f"{name}.csv")


@functools.cache
def _reml(name: str) -> cj.VarianceComponents:
    return cj.estimate(cj.read_scores(DATA / "tables" / f"{name}.csv"), method="reml", scenario_judge=True)


@functools.cache
def _anova(name: str) -> cj.VarianceComponents:
    return cj.estimate(cj.read_scores(DATA / "tables" / f"{name}.csv"), method="anova", scenario_judge=True)


def _close(ours: float, theirs: float, rel: float = REL, abs_: float = ABS) -> bool:
    return bool(abs(ours - theirs) <= max(rel * abs(theirs), abs_))


def _row(fit: cj.VarianceComponents, model: str, component: str) -> pd.Series:
    t = fit.components
    rows = t[(t.component == component) & (t.model == model)]
    if len(rows) > 1:
        rows = rows[rows.view == ("population" if component == "judge_population" else "panel")]
    assert len(rows) == 1, f"expected one {component!r} row for model {model!r} in components, got {len(rows)}"
    return rows.iloc[0]


def _diag(fit: cj.VarianceComponents, model: str) -> dict:
    assert model in fit.diagnostics, f"no diagnostics for model {model!r}: keys {list(fit.diagnostics)}"
    return fit.diagnostics[model]


def _criterion_gap(name: str, model: str) -> float:
    """cjstats' REML criterion minus lme4's best (negative: cjstats is lower)."""
    return float(_diag(_reml(name), model)["reml_criterion"]) - _ref(name)["fits"][model]["fixed"]["reml_crit"]


def _skip_if_better_boundary(name: str, model: str, ref: dict) -> None:
    if ref["singular"] and _criterion_gap(name, model) < -DEV_TOL:
        pytest.skip(f"lme4's fit is singular and cjstats' REML criterion is {-_criterion_gap(name, model):.3g} "
                    f"lower: lme4's boundary point is no reference for the variances")


# ------------------------------------------------------------------------------------------ fixed judges

@pytest.mark.parametrize(("name", "model"), CASES, ids=IDS)
def test_variances_match_lme4(name, model):
    ref = _ref(name)["fits"][model]["fixed"]
    _skip_if_better_boundary(name, model, ref)
    fit = _reml(name)
    bad = []
    for comp in COMPONENTS:
        ours, theirs = float(_row(fit, model, comp)["estimate"]), ref["variances"][comp]
        if not _close(ours, theirs):
            bad.append(f"{comp}: cjstats {ours:.10g}, lme4 {theirs:.10g} (diff {ours - theirs:+.3g})")
    assert not bad, (f"{name} [{model}] variances differ from lme4 (singular={ref['singular']}, criterion "
                     f"cjstats - lme4 = {_criterion_gap(name, model):+.3g}):\n  " + "\n  ".join(bad))


@pytest.mark.parametrize(("name", "model"), CASES, ids=IDS)
def test_reml_criterion_is_lme4s(name, model):
    ref = _ref(name)["fits"][model]["fixed"]
    gap = _criterion_gap(name, model)
    d = _diag(_reml(name), model)
    assert not (d.get("converged", True) and gap > DEV_TOL), (
        f"converged, but the REML criterion is {gap:.3g} above lme4's best {ref['reml_crit']:.10f}")
    if not ref["singular"]:
        assert gap >= -DEV_TOL, (f"the REML criterion is {-gap:.3g} below lme4's interior optimum "
                                 f"{ref['reml_crit']:.10f}: a different constant, or lme4's five runs all missed it")


@pytest.mark.parametrize(("name", "model"), CASES, ids=IDS)
def test_mu_and_judge_offsets_match_lme4(name, model):
    """contr.sum: mu is lme4's intercept; gamma_l is emmeans' judge mean minus the mean of the judge means."""
    ref = _ref(name)["fits"][model]["fixed"]
    _skip_if_better_boundary(name, model, ref)
    fit = _reml(name)
    mu = _row(fit, model, "mu")
    assert _close(float(mu["estimate"]), ref["fixef"][0]), (float(mu["estimate"]), ref["fixef"][0])
    assert _close(float(mu["std_error"]), float(np.sqrt(ref["vcov"][0][0]))), (
        float(mu["std_error"]), float(np.sqrt(ref["vcov"][0][0])))
    off = fit.judge_offsets
    off = off[off.model == model]
    em = ref["judge_means"]
    assert list(off["judge"]) == list(em["judge"])
    bad = []
    for judge, est, se, r_est, r_se in zip(off["judge"], off["estimate"], off["std_error"], em["offset"],
                                          em["offset_std_error"]):
        if not _close(float(est), r_est):
            bad.append(f"{judge} offset: cjstats {est:.10g}, lme4 {r_est:.10g}")
        if not _close(float(se), r_se):
            bad.append(f"{judge} SE: cjstats {se:.10g}, lme4 {r_se:.10g} (ratio {se / r_se:.6f})")
    assert not bad, f"{name} [{model}] judge offsets differ from lme4 (emmeans):\n  " + "\n  ".join(bad)


@pytest.mark.parametrize(("name", "model"), CASES, ids=IDS)
def test_likelihood_ratio_statistic_matches_lme4(name, model):
    ref = _ref(name)["fits"][model]
    test = _diag(_reml(name), model)["scenario_judge_test"]
    assert float(test["statistic"]) == pytest.approx(max(ref["lr_statistic"], 0.0), abs=LR_TOL)


# ----------------------------------------------------------------------------------------- random judges

@pytest.mark.parametrize(("name", "model"), CASES, ids=IDS)
def test_judge_population_matches_lme4(name, model):
    ref = _ref(name)["fits"][model]["random"]
    rj = _diag(_reml(name), model)["random_judge_model"]
    gap = float(rj["reml_criterion"]) - ref["reml_crit"]
    assert not (rj.get("converged", True) and gap > DEV_TOL), (
        f"random-judge fit converged, but its REML criterion is {gap:.3g} above lme4's best {ref['reml_crit']:.10f}")
    if ref["singular"] and gap < -DEV_TOL:
        pytest.skip(f"lme4's random-judge fit is singular and cjstats' criterion is {-gap:.3g} lower")
    ours, theirs = float(_row(_reml(name), model, "judge_population")["estimate"]), ref["variances"]["judge"]
    assert _close(ours, theirs), f"judge_population: cjstats {ours:.10g}, lme4 {theirs:.10g}"
    bad = [f"{c}: cjstats {rj['variances'].get(c)!r}, lme4 {v:.10g}" for c, v in ref["variances"].items()
           if c not in rj["variances"] or not _close(float(rj["variances"][c]), v)]
    assert not bad, f"{name} [{model}] random-judge model variances differ from lme4:\n  " + "\n  ".join(bad)


# ---------------------------------------------------------------- without the interaction (runs today)

@functools.cache
def _reml_plain(name: str) -> cj.VarianceComponents:
    return cj.estimate(cj.read_scores(DATA / "tables" / f"{name}.csv"), method="reml", scenario_judge=False)


@pytest.mark.parametrize(("name", "model"), CASES, ids=IDS)
def test_without_scenario_judge_matches_lme4(name, model):
    """The default fit (no scenario_judge term) is lme4's fit without (1|scenario:judge): the reference of the
    LR statistic, checked with the machinery above on the code as it is."""
    ref = _ref(name)["fits"][model]["no_scenario_judge"]
    fit = _reml_plain(name)
    gap = float(_diag(fit, model)["reml_criterion"]) - ref["reml_crit"]
    assert gap <= DEV_TOL and (ref["singular"] or gap >= -DEV_TOL), f"criterion cjstats - lme4 = {gap:+.3g}"
    if ref["singular"] and gap < -DEV_TOL:
        pytest.skip(f"lme4's fit is singular and cjstats' criterion is {-gap:.3g} lower")
    bad = [f"{c}: cjstats {float(_row(fit, model, c)['estimate']):.10g}, lme4 {v:.10g}"
           for c, v in ref["variances"].items() if not _close(float(_row(fit, model, c)["estimate"]), v)]
    off = fit.judge_offsets
    gamma = np.append(ref["fixef"][1:], -np.sum(ref["fixef"][1:]))
    vcov = np.asarray(ref["vcov"])
    se = np.sqrt(np.append(np.diag(vcov)[1:], vcov[1:, 1:].sum()))
    off = off[off.model == model]
    bad += [f"{j}: cjstats {e:.10g} ({s:.6g}), lme4 {g:.10g} ({t:.6g})"
            for j, e, s, g, t in zip(off["judge"], off["estimate"], off["std_error"], gamma, se)
            if not (_close(float(e), g) and _close(float(s), t))]
    assert not bad, f"{name} [{model}] differs from lme4 without scenario_judge:\n  " + "\n  ".join(bad)


# ----------------------------------------------------------------------------------- ANOVA (balanced only)

@pytest.mark.parametrize(("name", "model"), BALANCED, ids=BAL_IDS)
def test_anova_mean_squares_match_r(name, model):
    ref = _ref(name)["fits"][model]["anova"]
    d = _diag(_anova(name), model)
    bad = [f"{key}: cjstats {d.get(key)!r}, R {ref['ms'][src]:.10g}" for src, key in MS_KEYS.items()
           if key not in d or not _close(float(d[key]), ref["ms"][src], MS_REL, 0.0)]
    assert not bad, f"{name} [{model}] mean squares differ from R:\n  " + "\n  ".join(bad)


@pytest.mark.parametrize(("name", "model"), BALANCED, ids=BAL_IDS)
def test_anova_estimates_match_r(name, model):
    ref = _ref(name)["fits"][model]["anova"]["estimates"]
    fit = _anova(name)
    # (MS_SJ - MS_W) / m needs no other component: its untruncated value is always the closed form
    raw = float(_row(fit, model, "scenario_judge")["raw_estimate"])
    assert _close(raw, ref["scenario_judge"], MS_REL, 1e-12), (raw, ref["scenario_judge"])
    if min(ref.values()) <= 0:
        pytest.skip("a moment estimate is negative: the truncated estimates are not the closed forms")
    bad = [f"{c}: cjstats {float(_row(fit, model, c)['estimate']):.10g}, R {ref[c]:.10g}" for c in COMPONENTS
           if not _close(float(_row(fit, model, c)["estimate"]), ref[c], MS_REL, 1e-12)]
    assert not bad, f"{name} [{model}] ANOVA estimates differ from R's closed forms:\n  " + "\n  ".join(bad)


# ------------------------------------------------------------------------------- the fixtures themselves

def test_fixtures_every_table_has_its_fit():
    assert len(NAMES) == 32
    for name in NAMES:
        assert (DATA / "tables" / f"{name}.csv").exists(), name
        assert (DATA / "fits" / f"{name}.json").exists(), name
        ref, df = _ref(name), _table(name)
        assert ref["n_rows"] == SUITE[name]["n_rows"] == len(df) <= 2000, name
        assert list(ref["models"]) == sorted(df.model.unique()) == [f"m{q}" for q in range(SUITE[name]["p"])]
        for model, fm in ref["fits"].items():
            g = df[df.model == model]
            assert fm["n_rows"] == len(g) and fm["judges"] == sorted(g.judge.unique()), (name, model)
            assert fm["balanced"] == SUITE[name]["balanced"], (name, model)
            # identifiable: some scenario x judge pair has several calls
            assert g.groupby(["scenario", "judge"]).size().max() == fm["max_calls_per_scenario_judge"] >= 2
            assert (fm["anova"] is None) != fm["balanced"], (name, model)


def test_fixtures_best_run_is_the_smallest_criterion():
    for name in NAMES:
        for model, fm in _ref(name)["fits"].items():
            for form in ("fixed", "random", "no_scenario_judge"):
                r = fm[form]
                crits = [run["criterion"] for run in r["runs"]]
                assert len(crits) == 5 and all(r["reml_crit"] <= c for c in crits), (name, model, form)
                assert r["reml_crit"] == min(crits)
                best = next(run for run in r["runs"] if run["optimizer"] == r["best_run"])
                assert best["variances"] == r["variances"], (name, model, form)
            assert fm["lr_statistic"] == pytest.approx(fm["no_scenario_judge"]["reml_crit"] - fm["fixed"]["reml_crit"],
                                                       abs=1e-8)


def test_fixtures_offsets_are_the_contr_sum_coefficients():
    """emmeans' judge means minus their mean are lme4's contr.sum coefficients (gamma_K = -sum of the others),
    and emmeans' SEs of them are the ones the coefficient covariance gives."""
    for name, model in CASES:
        r = _ref(name)["fits"][model]["fixed"]
        off, vcov = np.asarray(r["judge_means"]["offset"]), np.asarray(r["vcov"])
        gamma = np.append(r["fixef"][1:], -np.sum(r["fixef"][1:]))
        np.testing.assert_allclose(off, gamma, rtol=1e-7, atol=1e-9, err_msg=name)
        var = np.append(np.diag(vcov)[1:], vcov[1:, 1:].sum())
        np.testing.assert_allclose(r["judge_means"]["offset_std_error"], np.sqrt(var), rtol=1e-7, err_msg=name)
        assert np.mean(r["judge_means"]["emmean"]) == pytest.approx(r["fixef"][0], rel=1e-8)


def _mean_squares(g: pd.DataFrame) -> dict[str, float]:
    """The balanced two-way-within-nested ANOVA of one model, from the table (numpy, not R)."""
    n, m, k = g.scenario.nunique(), g.generation.nunique(), g.judge.nunique()
    y = g.sort_values(["scenario", "generation", "judge"])["score"].to_numpy().reshape(n, m, k)
    gm, yi, yl = y.mean(), y.mean(axis=(1, 2)), y.mean(axis=(0, 1))
    yij, yil = y.mean(axis=2), y.mean(axis=1)
    ss = {"scenario": m * k * np.sum((yi - gm) ** 2), "generation": k * np.sum((yij - yi[:, None]) ** 2),
          "judge": n * m * np.sum((yl - gm) ** 2),
          "scenario_judge": m * np.sum((yil - yi[:, None] - yl[None, :] + gm) ** 2),
          "residual": np.sum((y - yij[:, :, None] - yil[:, None, :] + yi[:, None, None]) ** 2)}
    df = {"scenario": n - 1, "generation": n * (m - 1), "judge": k - 1, "scenario_judge": (n - 1) * (k - 1),
          "residual": n * (m - 1) * (k - 1)}
    return {c: ss[c] / df[c] for c in ss}


def test_fixtures_mean_squares_and_reml_agree_on_balanced_tables():
    """R's mean squares are the numpy ones; where every moment estimate is positive it is the REML estimate
    (balanced data), to lme4's precision."""
    n_interior = 0
    for name, model in BALANCED:
        fm = _ref(name)["fits"][model]
        ms = _mean_squares(_table(name)[lambda t: t.model == model])
        for c, v in ms.items():
            assert v == pytest.approx(fm["anova"]["ms"][c], rel=1e-9), (name, model, c)
        est = fm["anova"]["estimates"]
        if min(est.values()) > 0:
            n_interior += 1
            for c in COMPONENTS:
                assert est[c] == pytest.approx(fm["fixed"]["variances"][c], rel=1e-5), (name, model, c)
    assert n_interior >= 10
