r"""Item covariates in the joint REML fit: each judge's slope on a covariate (e.g. answer length), the panel's,
a test that the judges' slopes differ, and the model means at the mean covariate.

Model (lme4: ``lmer(score ~ model * judge + judge * length + (1|scenario) + (1|scenario:model)
[+ (1|scenario:model:generation)], REML = TRUE)``), for models p, scenarios i, generations j, judges l and
covariates x^(c) constant within a (model, scenario, generation) cell::

    X_pijl = eta_pl + sum_c b_lc (x^(c)_pij - xbar_c) + alpha_i + (alpha p)_pi + beta_pij + eps_pijl

with the random effects of the joint model (:mod:`cjstats.estimators.joint.reml`). Each covariate is centred at
its mean over the score rows, xbar_c (what ``emmeans`` uses as "the mean covariate"), so eta_pl is judge l's mean
for model p *at the mean covariate*, and the row means of eta are the model means at equal covariate values:
a model that writes longer answers no longer gains what a length-rewarding judge adds for length. The fixed
part spans the same column space as lme4's ``model * judge + judge * length`` (any contrasts), so the fitted
values, variances and every estimable contrast are identical.

The fit is the joint REML fit itself (:func:`cjstats.estimators.joint.reml.fit_nested`, one criterion and one
optimiser for both): the criterion gains the C K slope columns in its fixed effects (X = [model x judge cell
indicators, X_e], column (c, l) of X_e the centred x^(c) on judge l's rows; :class:`~cjstats.estimators.joint.reml.
ExtraColumns`, built by :func:`slope_columns`), and nothing about the variance parameters changes. The nested
Woodbury identities of :mod:`cjstats.estimators.joint.reml` need of any column only its row-level cross-products
and its sums per (model, scenario, generation) cell, so every cell's vector [D_c; Y_c] (judge counts, score sum)
becomes [D_c; E_c; Y_c], E_c the cell sums of X_e (x^(c) is constant within a cell, so E_c = (x^(c)_c - xbar_c)
D_c): O(rows) once, then per evaluation the pooled fit's cost with P K + C K instead of P K fixed columns. The
profiled REML criterion (N - r)(1 + log(2 pi rss/(N - r))) + log|H| + log|X'H^{-1}X| (r = P K + C K) and its exact
gradient and Hessian in theta = (variances)/s2 are minimised over theta >= 0 by the REML engine
(:func:`cjstats.estimators.reml.engine.fit`: Newton steps on the exact Hessian, boundary faces), and
``diagnostics["converged"]`` is its KKT check (``diagnostics["kkt"]``); a fit that fails it warns.

Variance components: REML estimates with Wald intervals on the log scale, v exp(-+ z se/v), se from
2 H^{-1} with H the exact Hessian of the REML deviance in the variances (:func:`cjstats.estimators.reml.engine.
variance_hessian`; none at a boundary).

The slopes must be estimable: the rank of X is read from its scaled cross-product (unit diagonal, so it does not
depend on a covariate's unit; :func:`check_slopes_estimable`).

Inference (t with containment degrees of freedom, as the joint REML fit): a judge's slope and the panel slope
(mean of the judges' slopes) use the between-group df (model x scenario groups - scenarios - (P - 1) - C);
a difference of judges' slopes the within-cell df (rows - cells - P(K - 1) - C(K - 1)). The test that the judges'
slopes on covariate c are equal is the Wald F = b_c'L'(L V L')^{-1} L b_c/(K - 1) with L the K - 1 successive
differences, on (K - 1, within df). Reference: lme4 (Bates, Maechler, Bolker and Walker 2015); emmeans'
reference grid at the covariate mean (Lenth 2016, "Least-squares means: the R package lsmeans").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from cjstats import _dist
from cjstats._blas import single_thread_blas
from cjstats._warnings import warn
from cjstats.estimators.joint._joint import (JOINT_LABEL, JointFit, View, check_judges_scored, check_residual,
                                             components_frame, joint_stats)
from cjstats.estimators.joint.reml import (ExtraColumns, _effect_row, _kkt_summary, _population_rows, _wald_cov,
                                           fit_nested)
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.results.components import ComponentRow
from cjstats.results.contrast import ContrastResult, JointCovariance, contrast_result, parse_contrast
from cjstats.stats import JointStats, NestedStats
from cjstats.stats.covariates import cell_values, check_covariate_names, lookup

__all__ = ["CovariateFit", "fit_joint_covariates", "cell_covariates", "slope_columns", "SLOPE_COLUMNS"]

#: Columns of :attr:`CovariateFit.slopes`.
SLOPE_COLUMNS: tuple[str, ...] = ("covariate", "judge", "slope", "std_error", "df", "lower", "upper", "p_value",
                                  "ci_level")

_NAN = float("nan")


# ------------------------------------------------------------------------------------------------ input
def cell_covariates(table: pd.DataFrame, covariates: Sequence[str], frame: pd.DataFrame) -> np.ndarray:
    """The covariates of every row of ``frame`` (the validated table), shape (rows, C), read from the raw
    ``table`` (:func:`cjstats.stats.covariates.cell_values`: numeric columns, no missing values, constant within
    each (model, scenario, generation) cell)."""
    values, keys = cell_values(table, covariates)
    return lookup(values, keys, frame)


# --------------------------------------------------------------------------------------- extra columns
def slope_columns(js: JointStats, ns: NestedStats) -> ExtraColumns:
    r"""The judges' slope columns as fixed columns of the joint REML criterion (:class:`ExtraColumns`), from the
    joint statistics ``js`` built with covariates (:meth:`cjstats.stats.JointStats.for_joint_slopes`).

    Column (c, l) of X_e is the centred covariate x^(c) - xbar_c on judge l's rows and 0 elsewhere (C K columns,
    covariate-major), so b_lc is its coefficient. Every row contributes u = [D (judge indicator, K), X_e row (C K),
    y - shift_p]; the cell sums of u, their per-model and per-size outer products and their per-group sums are laid
    out in the order of ``ns`` (``js.for_joint_reml()``: its models, judges, scenarios, cell sizes and groups; y
    centred as there). The statistics layer keeps them as sums over cells with x centred per model, so they are
    computed by any engine that declares covariate statistics and merge over chunks.
    """
    s = js.for_joint_slopes(ns)
    return ExtraColumns(n=s.n, gram=s.gram, cell_aug=s.cell_aug, group_aug=s.group_aug)


def check_slopes_estimable(gram: np.ndarray, r: int, covariates: Sequence[str]) -> None:
    r"""Refuse covariates collinear with the model x judge cells or with each other, on the scaled cross-product.

    The rank is read from C = S^{-1} X'X S^{-1} with S = diag(X'X)^{1/2} (unit diagonal: the correlation-type
    cross-product of the columns, which no change of a covariate's unit alters): X has full column rank when
    the smallest eigenvalue of C exceeds 1e-10 times its largest (well above the rounding of X'X, ~ rows x 1e-16).
    """
    xx = gram[:r, :r]
    d = np.sqrt(np.diag(xx))
    ok = bool(np.all(d > 0))
    if ok:
        ev = np.linalg.eigvalsh(xx / np.outer(d, d))
        ok = bool(ev[0] > 1e-10 * ev[-1])
    if not ok:
        raise CjstatsError(f"The covariates {list(covariates)!r} are collinear with the model x judge cells (or with "
                           f"each other), so the judges' slopes are not estimable; leave one out.")



def _wald_log_intervals(v: np.ndarray, cov: np.ndarray, level: float) -> tuple[np.ndarray, ...]:
    """Wald standard errors sqrt(diag cov) of the variances v (cov = 2 H^{-1} from the exact REML Hessian,
    :func:`cjstats.estimators.joint.reml._wald_cov`) and intervals on the log scale, v exp(-+ z se/v); NaN for a
    variance at 0 (its row of cov is NaN)."""
    z = float(special.ndtri(0.5 + level / 2))
    d = np.diag(cov)
    ok = (v > 0) & np.isfinite(d) & (d >= 0)
    se = np.where(ok, np.sqrt(np.where(ok, d, 0.0)), _NAN)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(ok, v * np.exp(-z * se / v), _NAN)
        hi = np.where(ok, v * np.exp(z * se / v), _NAN)
    return se, lo, hi


# ---------------------------------------------------------------------------------------------- result
@dataclass(frozen=True, slots=True)
class CovariateFit(JointFit):
    """A joint REML fit with item covariates (module :mod:`cjstats.estimators.joint.covariates`).

    Besides the :class:`~cjstats.estimators.joint.JointFit` fields (``cell_means`` and ``mu`` rows are at the
    mean covariate, stated in their ``note``):

    Attributes
    ----------
    covariates : tuple of str
        The covariate columns, in the order of ``slope_values``' columns.
    covariate_means : ndarray, shape (C,)
        The centring constants xbar_c (the means over the score rows).
    slope_values : ndarray, shape (K, C)
        Each judge's slope b_lc (score units per covariate unit).
    beta_cov : ndarray
        Covariance of (eta flattened model-major, slopes flattened covariate-major): (PK + KC) square.
    slopes : DataFrame
        One row per covariate and judge plus a ``"(panel)"`` row (the mean of the judges' slopes), with standard
        errors, degrees of freedom, intervals and p-values (:data:`SLOPE_COLUMNS`).
    slope_df : tuple of float
        Degrees of freedom of a slope (and of the panel slope), and of a difference of judges' slopes.
    """

    covariates: tuple[str, ...] = ()
    covariate_means: np.ndarray = field(default_factory=lambda: np.zeros(0))
    slope_values: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    beta_cov: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    slopes: pd.DataFrame = field(default_factory=pd.DataFrame)
    slope_df: tuple[float, float] = (math.inf, math.inf)

    def at_mean_text(self) -> str:
        """``"at length = 412.3, the mean"`` (every covariate, joined by "and")."""
        parts = [f"{c} = {m:.4g}" for c, m in zip(self.covariates, self.covariate_means)]
        return f"at {' and '.join(parts)}, the mean{'s' if len(parts) > 1 else ''}"

    def _slope_weights(self, spec: Any) -> tuple[np.ndarray, str] | None:
        """Weights over (eta, slopes) of a string or mapping spec that names a slope; None when it names none."""
        if isinstance(spec, str):
            terms, label = parse_contrast(spec), spec.strip()
        elif isinstance(spec, Mapping) and spec:
            terms = []
            for key, w in spec.items():
                (w1, name, parts), = parse_contrast(str(key))
                terms.append((w1 * float(w), name, parts))
            from cjstats.results.contrast import spec_label
            label = spec_label(spec)
        else:
            return None
        if not any(name == "slope" for _, name, _ in terms):
            return None
        p, k = self.cell_means.shape
        nc = len(self.covariates)
        w_eta = {}
        out = np.zeros(p * k + k * nc)
        for w, name, parts in terms:
            if name != "slope":
                w_eta.setdefault("spec", []).append((w, name, parts))
                continue
            if len(parts) not in (1, 2):
                raise CjstatsError("A slope is written slope[covariate, judge] (one judge) or slope[covariate] "
                                   "(the panel: the mean of the judges' slopes).")
            if parts[0] not in self.covariates:
                raise CjstatsError(f"The contrast names covariate '{parts[0]}', which this fit does not have "
                                   f"(covariates: {', '.join(self.covariates)}).")
            ci = self.covariates.index(parts[0])
            if len(parts) == 1:
                out[p * k + ci * k:p * k + (ci + 1) * k] += w / k
            else:
                if parts[1] not in self.judges:
                    raise CjstatsError(f"The contrast names judge '{parts[1]}', which this fit does not have "
                                       f"(judges: {', '.join(self.judges)}).")
                out[p * k + ci * k + self.judges.index(parts[1])] += w
        for w, name, parts in w_eta.get("spec", []):
            lab = f"{name}[{', '.join(parts)}]" if parts else name
            c, _ = JointFit._weights(self, lab)
            out[:p * k] += w * c.ravel()
        return out, label

    def contrast(self, spec: Any, view: View = "panel", *, level: float | None = None,
                 name: str | None = None) -> ContrastResult:
        """:meth:`JointFit.contrast`, and slopes: ``slope[covariate, judge]`` (one judge's slope),
        ``slope[covariate]`` (the panel slope, the mean of the judges'), in any linear combination with the
        joint fit's parameters (``mu``, ``gamma``, ``eta``, ``gp``; these are at the mean covariate). A contrast
        of slopes uses the panel view (slopes are fixed judge effects)."""
        sw = self._slope_weights(spec)
        if sw is None:
            return JointFit.contrast(self, spec, view, level=level, name=name)
        from cjstats._validate import resolve_ci_level

        lvl = float(self.ci_level) if level is None else resolve_ci_level(level)
        wv, label = sw
        p, k = self.cell_means.shape
        est = float(wv @ np.r_[self.cell_means.ravel(), self.slope_values.T.ravel()])
        var = float(wv @ self.beta_cov @ wv)
        slope_w = wv[p * k:].reshape(len(self.covariates), k)
        eta_w = wv[:p * k]
        if np.abs(eta_w).max() > 0:
            _, dfs = self.covariance.variance_df(eta_w.reshape(1, p, k), "panel")
            df = min(float(dfs[0]), self.slope_df[0])
        else:
            within = np.abs(slope_w.sum(axis=1)).max() <= 1e-12
            df = self.slope_df[1] if within else self.slope_df[0]
        return contrast_result(name or label, est, var, df, lvl, view="panel", method="t (containment df)")

    def summary(self) -> Any:
        """The joint components (``mu`` at the mean covariate), then each judge's slope and the test."""
        from cjstats.results.components import Summary

        notes = [f"note: {n}" for n in dict.fromkeys(self.components["note"]) if n]
        for c in self.covariates:
            t = self.tests[f"slopes[{c}]"]
            notes.append(f"judges' slopes on {c} differ? Wald F = {t['statistic']:.4g} on ({t['df1']:g}, "
                         f"{t['df2']:g}) df, p = {t['p_value']:.3g}")
        s = self.slopes.copy()
        s[["slope", "std_error", "lower", "upper"]] = s[["slope", "std_error", "lower", "upper"]].astype(float)
        notes.append("slopes (score per covariate unit):\n" + s.to_string(index=False, float_format="%.4g"))
        return Summary(title=f"Joint variance components with covariates (reml), model means {self.at_mean_text()}",
                       header=(("models", str(len(self.models))), ("judges", str(len(self.judges))),
                               ("covariates", ", ".join(self.covariates))),
                       table=self.components, offsets=pd.DataFrame(), footnotes=tuple(notes))


# ------------------------------------------------------------------------------------------------- fit
def fit_joint_covariates(source: Any, covariates: Sequence[str], *, ci_level: float,
                         model_scenario: str = "pooled") -> CovariateFit:
    """The joint REML fit with covariates (module docstring) from the joint statistics of ``source``: statistics
    built with ``covariates`` (``cj.stats.build_stats(table, unit=("criterion",), covariates=[...])``, or what
    :func:`cjstats.fit_joint` built), or a DataFrame with the score and covariate columns."""
    if model_scenario != "pooled":
        raise CjstatsError("covariates are fitted with model_scenario='pooled' only; drop model_scenario.")
    covariates = list(check_covariate_names(covariates))
    js, _ = joint_stats(source, "fit_joint", covariates=covariates)
    if list(js.covariates) != covariates:
        have = f"covariates {', '.join(js.covariates)}" if js.covariates else "no covariates"
        raise CjstatsError(f"covariates={covariates!r} need statistics built with them, but these carry {have}; "
                           f"build them with cj.stats.build_stats(table, unit=('criterion',), "
                           f"covariates={covariates!r}).")
    models, judges = tuple(js.models), tuple(js.judge_labels)
    ns = js.for_joint_reml()
    p, k, nc = len(models), len(judges), len(covariates)
    check_judges_scored(ns.counts, models, judges)
    slope_stats = js.for_joint_slopes(ns)
    xbar = slope_stats.means
    for c in range(nc):
        if slope_stats.x_max[c] == slope_stats.x_min[c]:
            raise CjstatsError(f"The covariate column '{covariates[c]}' is constant ({slope_stats.x_min[c]:g}): it "
                               f"has no slope to estimate; leave it out of covariates.")
    n = ns.n_rows
    r = p * k + k * nc
    extra = ExtraColumns(n=slope_stats.n, gram=slope_stats.gram, cell_aug=slope_stats.cell_aug,
                         group_aug=slope_stats.group_aug)
    check_slopes_estimable(extra.gram, r, covariates)
    t_cells = np.eye(p * k)
    with single_thread_blas():
        fit = fit_nested(ns, t_cells, reml=True, extra=extra)
        check_residual(float(fit.s2), js)
        vv, vcov, _ = _wald_cov(fit, ns, t_cells, extra)
    theta, s2, dev = fit.theta, float(fit.s2), float(fit.deviance)
    beta = fit.beta + np.r_[np.repeat(ns.shift, k), np.zeros(k * nc)]   # the scores were centred per model
    cov = fit.cov_beta
    n_cells, n_groups, n_scen = ns.n_cells, ns.n_groups, ns.n_scenarios
    has_gen = ns.has_generation
    eta = beta[:p * k].reshape(p, k)
    slopes = beta[p * k:].reshape(nc, k).T                  # (K, C)
    level = ci_level
    df_within = n - n_cells - p * (k - 1) - nc * (k - 1)
    df_between = n_groups - n_scen - (p - 1) - nc
    df_slope, df_diff = float(max(df_between, 1)), float(max(df_within, 1))
    at = ", ".join(f"{c} = {m:.4g}" for c, m in zip(covariates, xbar))
    at_note = f"at {at}, the mean{'s' if nc > 1 else ''}"
    # components
    rows: list[tuple[str, ComponentRow]] = []
    a = (1 - level) / 2
    n_scen_model = np.bincount(ns.group_model, minlength=p)
    for q, name in enumerate(models):
        c = np.zeros(r)
        c[q * k:(q + 1) * k] = 1.0 / k
        est, se = float(c @ beta), math.sqrt(float(c @ cov @ c))
        dfq = max(int(n_scen_model[q]) - 1, 1)
        tq = float(special.stdtrit(dfq, 1 - a))
        rows.append((name, ComponentRow("mu", est, est - tq * se, est + tq * se, se, "t (GLS, scenarios - 1 df)",
                                        "panel", est, note=f"model mean {at_note}")))
    v_se, v_lo, v_hi = _wald_log_intervals(vv, vcov, level)
    for comp, i in (("scenario", 1), ("model_scenario", 2), ("generation", 3), ("residual", 0)):
        if comp == "generation" and not has_gen:
            rows.append((JOINT_LABEL, ComponentRow.not_identifiable(
                comp, "not identifiable: one generation per (model, scenario) (m = 1)")))
            continue
        v = float(vv[i])
        bnd = comp != "residual" and v == 0
        rows.append((JOINT_LABEL, ComponentRow(comp, v, 0.0 if bnd else float(v_lo[i]), _NAN if bnd else float(v_hi[i]),
                                               float(v_se[i]), "Wald on the log scale (REML Hessian)", "panel", v,
                                               bnd, True, "REML optimum at 0: no interval" if bnd else "")))
    ce = cov[:p * k, :p * k]
    lk = np.eye(k) - 1.0 / k
    lp = np.eye(p) - 1.0 / p
    colmean = np.kron(np.full((1, p), 1.0 / p), np.eye(k))
    g_judge = lk @ colmean @ beta[:p * k]
    cov_judge = lk @ colmean @ ce @ colmean.T @ lk
    l_int = np.kron(lp, lk)
    g_int = l_int @ beta[:p * k]
    cov_int = l_int @ ce @ l_int
    dfi = (p - 1) * (k - 1)
    rows.append((JOINT_LABEL, _effect_row("judge_panel", g_judge, cov_judge, k, k - 1, level, note=at_note)))
    jm_panel = _effect_row("judge_model", g_int, cov_int, p * k, dfi, level)
    jm_pop, jpop = _population_rows(g_judge, cov_judge, g_int, cov_int, p, k, max(df_within, 1), level)
    rows += [(JOINT_LABEL, jpop), (JOINT_LABEL, jm_panel), (JOINT_LABEL, jm_pop)]
    # slopes and the test that they are equal
    tq_s = float(special.stdtrit(df_slope, 1 - a))
    srows, tests = [], {}
    for c, cname in enumerate(covariates):
        idx = p * k + c * k + np.arange(k)
        vb = cov[np.ix_(idx, idx)]
        for lab, w in [(j, np.eye(k)[i]) for i, j in enumerate(judges)] + [("(panel)", np.full(k, 1.0 / k))]:
            est, se = float(w @ slopes[:, c]), math.sqrt(float(w @ vb @ w))
            srows.append({"covariate": cname, "judge": lab, "slope": est, "std_error": se, "df": df_slope,
                          "lower": est - tq_s * se, "upper": est + tq_s * se,
                          "p_value": float(2 * special.stdtr(df_slope, -abs(est / se))) if se > 0 else _NAN,
                          "ci_level": level})
        ld = np.eye(k)[:-1] - np.eye(k)[1:]
        lb = ld @ slopes[:, c]
        fstat = float(lb @ np.linalg.solve(ld @ vb @ ld.T, lb)) / (k - 1)
        tests[f"slopes[{cname}]"] = {"test": "Wald F", "statistic": fstat, "df1": float(k - 1), "df2": df_diff,
                                     "p_value": float(_dist.f_sf(fstat, k - 1, df_diff)),
                                     "hypothesis": f"every judge has the same slope on {cname}"}
    diag = {"theta": theta.tolist(), "s2_residual": s2, "reml_deviance": dev, "converged": fit.converged,
            "message": fit.result.message, "kkt": _kkt_summary(fit.result), "n_evaluations": fit.n_evaluations,
            "n": n_scen, "p": p, "k": k, "n_cells": n_cells,
            "has_generation": has_gen, "df_within": df_within, "df_between": df_between,
            "model_scenario": "pooled", "covariates": list(covariates), "covariate_means": xbar.tolist(),
            "covariate_note": (f"covariates {', '.join(covariates)}: model means and differences are {at_note} "
                               f"(compared at equal covariate values; each judge's slope is in fit.slopes).")}
    jcov = JointCovariance.reml(ce, p, k, s2_judge_model=max(jm_pop.raw_estimate, 0.0),
                                s2_judge=max(jpop.raw_estimate, 0.0),
                                df_structure=(n_scen - 1, max(df_between, 1), max(df_within, 1)),
                                df_population=max(dfi, 1))
    if not fit.converged:
        warn(f"The joint REML fit with covariates {', '.join(covariates)} did not reach a minimum "
             f"({fit.result.message}); its numbers are not trustworthy: put each covariate in units of order 1 to "
             f"100 (e.g. length in hundreds of tokens), check the table for models or judges with very few scores, "
             f"or compare with the fit without covariates.", CjstatsWarning, stacklevel=3)
    return CovariateFit(method="reml", models=models, judges=judges, cell_means=eta,
                        components=components_frame(rows, method="reml", ci_level=ci_level), tests=tests,
                        ci_level=ci_level, diagnostics=diag, covariance=jcov, covariates=tuple(covariates),
                        covariate_means=xbar, slope_values=slopes, beta_cov=cov,
                        slopes=pd.DataFrame(srows, columns=list(SLOPE_COLUMNS)), slope_df=(df_slope, df_diff))
