"""Covariate fits on the one joint REML engine (issues 31 and 32): the slope columns are fixed columns of the joint
criterion (cjstats.estimators.joint.reml.ExtraColumns), the optimum is lme4's (the REML criterion itself, not only
the estimates), ``converged`` is the engine's KKT check, an unconverged fit warns, and the rank check does not
depend on a covariate's unit.

References: tests/data/lme4_covariates (make_inputs.py, fit_lme4_covariates.R: lme4 1.1.31)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.estimators.joint._joint import as_scores, joint_stats
from cjstats.estimators.joint.covariates import cell_covariates, slope_columns
from cjstats.estimators.reml import engine
from cjstats.studies.simulate_covariates import simulate_length_bias

DATA = Path(__file__).parent.parent / "data" / "lme4_covariates"
REF = json.loads((DATA / "lme4_covariates_reference.json").read_text())
NAMES = sorted(REF)


def _covariates(d: pd.DataFrame) -> list[str]:
    return [c for c in ("length", "fluency") if c in d.columns]


@functools.cache
def _table(name: str) -> pd.DataFrame:
    return pd.read_csv(DATA / f"{name}.csv")


@functools.cache
def _fit(name: str):
    d = _table(name)
    return cj.fit_joint(d, "reml", covariates=_covariates(d))


def _slope_columns(d: pd.DataFrame):
    """The ExtraColumns of a table (from its joint statistics built with the covariates) and the joint statistics
    they go with."""
    js, _ = joint_stats(d, "fit_joint", covariates=_covariates(d))
    ns = js.for_joint_reml()
    return slope_columns(js, ns), ns


def _row_slope_columns(d: pd.DataFrame):
    """The same arrays summed over the rows (the reference the statistics layer is checked against): every row
    contributes u = [judge indicator, centred covariates on its judge's columns, y - model mean]."""
    scores = as_scores(d, "fit_joint")
    js, _ = joint_stats(scores, "fit_joint")
    f = scores.to_frame()
    ns = js.for_joint_reml()
    x = cell_covariates(d, _covariates(d), f)
    xc = x - x.mean(axis=0)
    p, k, nc = ns.n_models, ns.n_judges, xc.shape[1]
    pk, e = p * k, nc * k
    q = pd.Index(js.models).get_indexer(f["model"].astype(str))
    jl = pd.Index(js.judge_labels).get_indexer(f["judge"].astype(str))
    sc = pd.Index(js.scenario_labels.astype(str)).get_indexer(f["scenario"].astype(str))
    g = pd.Index(ns.group_model * ns.n_scenarios + ns.group_scen).get_indexer(q * ns.n_scenarios + sc)
    gen, _ = pd.factorize(f["generation"], sort=True)
    cell, _ = pd.factorize(g.astype(np.int64) * (int(gen.max()) + 1) + gen, sort=True)
    n = len(f)
    u = np.zeros((n, k + e + 1))
    u[np.arange(n), jl] = 1.0
    u[np.arange(n)[:, None], k + np.arange(nc) * k + jl[:, None]] = xc
    u[:, -1] = f["score"].to_numpy(np.float64) - ns.shift[q]
    full = np.zeros((n, pk + e + 1))
    full[np.arange(n), q * k + jl] = 1.0
    full[:, pk:] = u[:, k:]
    n_cells = int(cell.max()) + 1
    uc = np.stack([np.bincount(cell, weights=u[:, j], minlength=n_cells) for j in range(u.shape[1])], axis=1)
    n_c = np.bincount(cell, minlength=n_cells)
    c_group = np.zeros(n_cells, dtype=np.int64)
    c_group[cell] = g
    s = np.searchsorted(ns.sizes, n_c)
    cell_aug = np.zeros((p, len(ns.sizes), k + e + 1, k + e + 1))
    group_aug = np.zeros((ns.n_groups, len(ns.sizes), k + e + 1))
    for c in range(n_cells):
        cell_aug[ns.group_model[c_group[c]], s[c]] += np.outer(uc[c], uc[c])
        group_aug[c_group[c], s[c]] += uc[c]
    return full.T @ full, cell_aug, group_aug


@pytest.mark.parametrize("name", NAMES)
class TestOnTheEngine:
    def test_converged_by_the_kkt_check(self, name):
        diag = _fit(name).diagnostics
        assert diag["converged"] is True
        assert diag["kkt"]["stationary"] is True
        assert diag["kkt"]["decrement"] <= engine.KKT_DECREMENT
        assert diag["kkt"]["message"] == "KKT conditions hold"

    def test_reml_criterion_is_lme4s(self, name):
        """The minimum itself equals lme4's REMLcrit once the basis of the fixed columns is accounted for
        (2 log|det T| = log|X_lme4'X_lme4| - log|X'X|), so the optimiser reached lme4's optimum."""
        f, r = _fit(name), REF[name]
        extra, ns = _slope_columns(_table(name))
        q = ns.n_models * ns.n_judges + extra.n
        ours = np.linalg.slogdet(extra.gram[:q, :q])[1]
        assert f.diagnostics["reml_deviance"] + r["logdet_xtx"] - ours == pytest.approx(r["reml_criterion"], abs=1e-6)

    def test_variances_and_slopes_are_lme4s(self, name):
        f, r = _fit(name), REF[name]
        comp = f.components.set_index("component")["estimate"]
        for c in ("scenario", "model_scenario", "residual"):
            assert comp[c] == pytest.approx(r["variances"][c], rel=2e-6), c
        np.testing.assert_allclose(f.slope_values[:, 0], r["slopes"], rtol=1e-6, atol=1e-9 * np.abs(r["slopes"]).max())

    def test_statistics_equal_the_row_sums(self, name):
        """The slope columns the statistics layer builds (sums over cells, x centred per model, then re-centred
        at the mean over every row) are the row-level sums to rounding."""
        extra, _ = _slope_columns(_table(name))
        for got, want in zip((extra.gram, extra.cell_aug, extra.group_aug), _row_slope_columns(_table(name))):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())

    def test_cell_sums_laid_out_as_the_joint_statistics(self, name):
        """The [D_c; y_c] part of the widened cell vectors is the NestedStats the pooled fit reads (same models,
        scenarios, sizes, groups and centring), so the hook adds columns and changes nothing else."""
        extra, ns = _slope_columns(_table(name))
        k, pk = ns.n_judges, ns.n_models * ns.n_judges
        base = np.r_[np.arange(k), k + extra.n]
        np.testing.assert_allclose(extra.cell_aug[:, :, base][:, :, :, base], ns.cell_aug, rtol=1e-10, atol=1e-8)
        np.testing.assert_allclose(extra.group_aug[:, :, base], ns.group_aug, rtol=1e-10, atol=1e-8)
        np.testing.assert_allclose(np.diag(extra.gram)[:pk], ns.counts)
        np.testing.assert_allclose(extra.gram[:pk, -1], ns.sums, atol=1e-8)
        assert extra.gram[-1, -1] == pytest.approx(ns.yy, rel=1e-10)


def test_row_order_and_label_types_do_not_matter():
    """Shuffled rows and integer scenario labels give the same fit (the slope columns are matched to the joint
    statistics by label, not by position)."""
    d = _table("missing_block")
    e = d.sample(frac=1.0, random_state=3).reset_index(drop=True)
    e["scenario"] = e["scenario"].str[1:].astype(int)       # 0..29: numeric order is not the text order
    a, b = _fit("missing_block"), cj.fit_joint(e, "reml", covariates=["length"])
    np.testing.assert_allclose(b.slope_values, a.slope_values, rtol=1e-8)
    np.testing.assert_allclose(b.cell_means, a.cell_means, rtol=1e-9)
    np.testing.assert_allclose(b.components["estimate"], a.components["estimate"], rtol=1e-7)


class TestUnitOfACovariate:
    """Issue 31: length x 1e6 is the same covariate in another unit: it is not called collinear, its slopes are
    1e6 times smaller and nothing else changes."""

    def test_large_unit_fits_like_the_original(self):
        big, plain = _fit("length_1e6"), _fit("unbalanced")
        np.testing.assert_allclose(big.slope_values * 1e6, plain.slope_values, rtol=1e-7)
        np.testing.assert_allclose(big.cell_means, plain.cell_means, rtol=1e-9)
        est = lambda f: f.components.set_index("component")["estimate"]  # noqa: E731
        for c in ("scenario", "model_scenario", "residual", "judge_panel"):
            assert est(big)[c] == pytest.approx(est(plain)[c], rel=1e-7), c
        assert big.tests["slopes[length]"]["p_value"] == pytest.approx(plain.tests["slopes[length]"]["p_value"],
                                                                       rel=1e-6)

    def test_small_unit_too(self):
        d = _table("unbalanced").assign(length=lambda t: t["length"] * 1e-6)
        f = cj.fit_joint(d, "reml", covariates=["length"])
        np.testing.assert_allclose(f.slope_values * 1e-6, _fit("unbalanced").slope_values, rtol=1e-7)

    @pytest.mark.parametrize("make", ["model_indicator", "linear_in_length"])
    def test_truly_collinear_covariate_refused(self, make):
        d = _table("length_1e6").copy()
        if make == "model_indicator":          # constant within each model: in the span of the model x judge cells
            d["fluency"] = (d["model"] == "m1") * 1e6
        else:                                  # an affine function of the other covariate
            d["fluency"] = 3.0 * d["length"] - 7e8
        with pytest.raises(cj.CjstatsError, match=r"collinear with the model x judge cells .* leave one out\.$"):
            cj.fit_joint(d, "reml", covariates=["length", "fluency"])


class TestNotConverged:
    """A fit whose optimiser stops before the optimum is reported as not converged (the KKT check fails) and
    fit_joint says so in one warning that names what to try; compare_models warns and prints it too."""

    @pytest.fixture()
    def one_step(self, monkeypatch):
        monkeypatch.setattr(engine, "minimize_bounded", functools.partial(engine.minimize_bounded, maxiter=1))

    def test_fit_joint_warns(self, one_step):
        with pytest.warns(cj.CjstatsWarning, match=r"did not reach a minimum .*units of order 1 to 100") as rec:
            f = cj.fit_joint(_table("balanced"), "reml", covariates=["length"])
        assert len([w for w in rec if "did not reach a minimum" in str(w.message)]) == 1
        assert f.diagnostics["converged"] is False
        assert f.diagnostics["kkt"]["stationary"] is False
        assert "not a minimum" in f.diagnostics["message"]

    def test_compare_models_warns_and_says_so(self, one_step):
        with pytest.warns(cj.CjstatsWarning, match="did not reach a minimum"):
            cmp = cj.compare_models(_table("balanced"), "reml", covariates=["length"], n_draws=2000)
        assert "WARNING: the joint reml fit did not converge" in cmp.as_text()


def test_exact_newton_needs_few_evaluations():
    """The exact gradient and Hessian make the fit a handful of Newton steps (the central-difference optimiser
    it replaces spent thousands of criterion evaluations)."""
    d = simulate_length_bias(n=200, mu=(5.0, 5.2, 4.9), lengths=(550.0, 400.0, 450.0), slopes=(0.0, 0.004), seed=1)
    f = cj.fit_joint(d, "reml", covariates=["length"])
    assert f.diagnostics["converged"] is True
    assert f.diagnostics["n_evaluations"] <= 40
