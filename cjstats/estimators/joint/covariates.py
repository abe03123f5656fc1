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

H = V/s2 is block-diagonal by scenario and nested inside a block (cells c in (model, scenario) groups g in
scenarios i). For any columns a, b of Z = [X, y] with cell sums a_c, the nested Woodbury identities give
(theta = variances / s2)::

    a'H^{-1}b = a'b - sum_c theta_b w_c a_c b_c - sum_g theta_ms d_g f_g(a) f_g(b) - sum_i theta_a d_i F_i(a) F_i(b)
    w_c = 1/(1 + n_c theta_b), f_g(a) = sum_{c in g} w_c a_c, q_g = sum_{c in g} n_c w_c, d_g = 1/(1 + theta_ms q_g),
    F_i(a) = sum_{g in i} d_g f_g(a), Q_i = sum_{g in i} d_g q_g, d_i = 1/(1 + theta_a Q_i),
    log|H| = sum_c log(1 + n_c theta_b) - sum_g log d_g - sum_i log d_i,

and the profiled REML criterion (N - r)(1 + log(2 pi rss/(N - r))) + log|H| + log|X'H^{-1}X| is minimised over
theta >= 0 by the package's REML engine (:func:`cjstats.estimators.reml.engine.minimize_bounded`) with a central
difference gradient. The covariate columns vary inside a (model, scenario) group only through the cell sums,
so the table is read once into per-cell sums of Z and Z'Z.

Variance components: REML estimates with Wald intervals on the log scale, v exp(-+ z se/v), se from
2 H^{-1} with H the central-difference Hessian of the REML deviance in the variances (none at a boundary).

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
from scipy import special, stats

from cjstats.estimators.joint._joint import (JOINT_LABEL, JointFit, View, as_scores, check_residual,
                                             components_frame, joint_stats)
from cjstats.estimators.joint.reml import _effect_row, _population_rows
from cjstats.estimators.reml import engine
from cjstats.exceptions import CjstatsError
from cjstats.results.components import ComponentRow
from cjstats.results.contrast import ContrastResult, JointCovariance, contrast_result, parse_contrast

__all__ = ["CovariateFit", "fit_joint_covariates", "cell_covariates", "refuse_covariates", "SLOPE_COLUMNS"]

#: Columns of :attr:`CovariateFit.slopes`.
SLOPE_COLUMNS: tuple[str, ...] = ("covariate", "judge", "slope", "std_error", "df", "lower", "upper", "p_value",
                                  "ci_level")

_NAN = float("nan")


# ------------------------------------------------------------------------------------------------ input
def cell_covariates(table: pd.DataFrame, covariates: Sequence[str], frame: pd.DataFrame) -> np.ndarray:
    """The covariates of every row of ``frame`` (the validated table), shape (rows, C), read from the raw
    ``table``: numeric columns, no missing values, constant within each (model, scenario, generation) cell."""
    if not isinstance(table, pd.DataFrame):
        raise CjstatsError(f"covariates={list(covariates)!r} are read from the columns of the score table, but "
                           f"scores is a {type(table).__name__} (read_scores keeps only the score columns); pass "
                           f"the DataFrame that has the covariate columns.")
    if isinstance(covariates, str) or not len(covariates):
        raise CjstatsError("The 'covariates' argument takes a list of column names, such as ['length'].")
    covariates = [str(c) for c in covariates]
    if len(set(covariates)) != len(covariates):
        raise CjstatsError(f"The 'covariates' argument names a column twice ({covariates!r}); name each once.")
    keys = ["model", "scenario"] + (["generation"] if "generation" in table.columns else [])
    for c in covariates:
        if c not in table.columns:
            raise CjstatsError(f"The covariate column '{c}' is not in the score table (columns: "
                               f"{', '.join(map(str, table.columns))}).")
        if c in ("model", "scenario", "generation", "judge", "score", "criterion"):
            raise CjstatsError(f"The covariate '{c}' is a key column of the score table; name a numeric item "
                               f"column such as 'length'.")
        if not pd.api.types.is_numeric_dtype(table[c]) or pd.api.types.is_bool_dtype(table[c]):
            raise CjstatsError(f"The covariate column '{c}' is not numeric (dtype {table[c].dtype}); convert it "
                               f"with pd.to_numeric or code it as numbers.")
        bad = ~np.isfinite(table[c].to_numpy(np.float64))
        if bad.any():
            raise CjstatsError(f"The covariate column '{c}' has {int(bad.sum())} missing or infinite value(s) "
                               f"(first in row {int(np.flatnonzero(bad)[0])}); fill them or drop those rows.")
    raw_key = pd.MultiIndex.from_frame(table[keys].astype(str))
    per_cell = table[covariates].set_axis(raw_key).groupby(level=list(range(len(keys))))
    spread = per_cell.max() - per_cell.min()
    for c in covariates:
        varies = spread[c] > 1e-12 * max(1.0, float(np.abs(table[c]).max()))
        if varies.any():
            first = dict(zip(keys, varies[varies].index[0]))
            where = ", ".join(f"{k} '{v}'" for k, v in first.items())
            raise CjstatsError(f"The covariate column '{c}' varies within one {' x '.join(keys)} cell ({where}): "
                               f"an item covariate must be one value per answer; give every judge's row of an "
                               f"answer the same '{c}'.")
    values = per_cell.first()
    key = pd.MultiIndex.from_frame(frame[keys].astype(str))
    out = values.reindex(key)
    if out.isna().to_numpy().any():
        raise CjstatsError("The covariates could not be matched to the validated score rows (the model, scenario "
                           "or generation labels changed when the table was read); pass a table whose key "
                           "columns are plain strings or integers.")
    return out.to_numpy(np.float64)


def refuse_covariates(method: str, engine: str | None, options: Mapping[str, Any]) -> None:
    """One sentence for a covariate fit asked of a backend or engine that does not fit covariates."""
    if method != "reml":
        raise CjstatsError(f"covariates are fitted by method='reml' only (got method='{method}'); use "
                           f"method='reml', or drop covariates.")
    if engine not in (None, "numpy"):
        raise CjstatsError(f"covariates are read from the rows of the table, which engine='{engine}' does not load; "
                           f"pass the DataFrame with engine='numpy' (the default).")
    if options:
        raise CjstatsError(f"fit_joint with covariates takes no option {', '.join(map(repr, options))}; drop it.")


# ------------------------------------------------------------------------------------------- criterion
@dataclass(frozen=True)
class _Design:
    """Per-cell sums of Z = [X, y] and what the nested Woodbury identities need (module docstring)."""

    zz: np.ndarray          # Z'Z, (q+1, q+1)
    zc: np.ndarray          # per-cell sums of Z, (C, q+1)
    n_c: np.ndarray         # rows per cell
    cell_group: np.ndarray  # group of each cell
    group_scen: np.ndarray  # scenario of each group
    n_groups: int
    n_scen: int
    n: int
    r: int                  # columns of X
    has_generation: bool


def _gram(theta: np.ndarray, d: _Design) -> tuple[np.ndarray, float]:
    """Z'H^{-1}Z and log|H| at theta = (theta_a, theta_ms, theta_b)."""
    ta, tm, tb = (float(t) for t in theta)
    w = 1.0 / (1.0 + d.n_c * tb)
    m = d.zz - tb * (d.zc * w[:, None]).T @ d.zc
    f = np.zeros((d.n_groups, d.zc.shape[1]))
    np.add.at(f, d.cell_group, d.zc * w[:, None])
    q = np.bincount(d.cell_group, weights=d.n_c * w, minlength=d.n_groups)
    dg = 1.0 / (1.0 + tm * q)
    m -= tm * (f * dg[:, None]).T @ f
    fs = np.zeros((d.n_scen, d.zc.shape[1]))
    np.add.at(fs, d.group_scen, f * dg[:, None])
    qs = np.bincount(d.group_scen, weights=q * dg, minlength=d.n_scen)
    di = 1.0 / (1.0 + ta * qs)
    m -= ta * (fs * di[:, None]).T @ fs
    logdet = float(np.log1p(d.n_c * tb).sum() - np.log(dg).sum() - np.log(di).sum())
    return m, logdet


def _profiled(theta: np.ndarray, d: _Design) -> tuple[float, np.ndarray, np.ndarray, float]:
    """REML deviance, beta, (X'H^{-1}X)^{-1} and s2 at theta."""
    m, logdet = _gram(theta, d)
    r = d.r
    a = m[:r, :r]
    chol = np.linalg.cholesky(a)
    ainv = np.linalg.inv(a)
    beta = ainv @ m[:r, r]
    rss = float(m[r, r] - m[r, :r] @ beta)
    nu = d.n - r
    dev = nu * (1 + math.log(2 * math.pi * rss / nu)) + logdet + 2 * float(np.log(np.diag(chol)).sum())
    return dev, beta, ainv, rss / nu


def _full_deviance(v: np.ndarray, d: _Design) -> float:
    """REML deviance (up to a constant) at variances v = (residual, scenario, model_scenario, generation)."""
    s2 = v[0]
    m, logdet = _gram(v[1:] / s2, d)
    r = d.r
    a = m[:r, :r]
    beta = np.linalg.solve(a, m[:r, r])
    rss = float(m[r, r] - m[r, :r] @ beta)
    return (d.n - r) * math.log(s2) + logdet + float(np.linalg.slogdet(a)[1]) + rss / s2


def _variance_intervals(v: np.ndarray, free: np.ndarray, d: _Design, level: float) -> tuple[np.ndarray, ...]:
    """Wald standard errors (2 H^{-1}, H the central-difference Hessian of the REML deviance in the free
    variances) and intervals on the log scale, v exp(-+ z se/v); NaN for a variance at 0 or not free."""
    idx = np.flatnonzero(free & (v > 0))
    se = np.full(v.size, _NAN)
    lo, hi = np.full(v.size, _NAN), np.full(v.size, _NAN)
    hs = 1e-4 * v[idx]
    h = np.zeros((idx.size, idx.size))
    f0 = _full_deviance(v, d)
    for a_, i in enumerate(idx):
        for b_, j in enumerate(idx[a_:], start=a_):
            def at(si: float, sj: float) -> float:
                x = v.copy()
                x[i] += si * hs[a_]
                x[j] += sj * hs[b_]
                return _full_deviance(x, d)
            if i == j:
                h[a_, a_] = (at(1, 0) - 2 * f0 + at(-1, 0)) / hs[a_] ** 2
            else:
                h[a_, b_] = h[b_, a_] = (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * hs[a_] * hs[b_])
    try:
        cov = 2 * np.linalg.inv(h)
    except np.linalg.LinAlgError:
        return se, lo, hi
    z = float(special.ndtri(0.5 + level / 2))
    sd = np.sqrt(np.maximum(np.diag(cov), 0.0))
    se[idx] = sd
    lo[idx] = v[idx] * np.exp(-z * sd / v[idx])
    hi[idx] = v[idx] * np.exp(z * sd / v[idx])
    return se, lo, hi


def _fit_theta(d: _Design) -> tuple[np.ndarray, float, dict[str, Any]]:
    """Minimise the profiled REML deviance over theta >= 0 (generation fixed at 0 when not identifiable)."""
    free = np.array([True, True, d.has_generation])

    def full(x: np.ndarray) -> np.ndarray:
        th = np.zeros(3)
        th[free] = x
        return th

    def value(x: np.ndarray) -> float:
        try:
            return _profiled(full(x), d)[0]
        except np.linalg.LinAlgError:
            return math.inf

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        fx = value(x)
        g = np.empty_like(x)
        for i in range(x.size):
            h = 1e-6 * max(1.0, abs(x[i]))
            e = np.zeros_like(x)
            e[i] = h
            if x[i] - h >= 0:
                g[i] = (value(x + e) - value(x - e)) / (2 * h)
            else:     # one-sided (second order) at the boundary
                g[i] = (-3 * fx + 4 * value(x + e) - value(x + 2 * e)) / (2 * h)
        return fx, g

    best = None
    nfree = int(free.sum())
    for start in (0.5, 0.05, 2.0):
        x, fx, info = engine.minimize_bounded(fun, np.full(nfree, start), np.zeros(nfree), tol=1e-13)
        if best is None or fx < best[1] - 1e-10:
            best = (x, fx, info)
    x, fx, info = best
    return full(x), fx, info


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
def fit_joint_covariates(table: pd.DataFrame, covariates: Sequence[str], *, ci_level: float,
                         model_scenario: str = "pooled") -> CovariateFit:
    """The joint REML fit with covariates (module docstring) of the long table ``table`` (a DataFrame with the
    score columns and the covariate columns)."""
    if model_scenario != "pooled":
        raise CjstatsError("covariates are fitted with model_scenario='pooled' only; drop model_scenario.")
    scores = as_scores(table, "fit_joint")
    js, _ = joint_stats(scores, "fit_joint")
    f = scores.to_frame()
    covariates = [str(c) for c in covariates] if not isinstance(covariates, str) else covariates
    x = cell_covariates(table, covariates, f)
    models, judges = tuple(js.models), tuple(js.judge_labels)
    p, k, nc = len(models), len(judges), x.shape[1]
    mcode = pd.Categorical(f["model"].astype(str), categories=list(models)).codes.astype(np.int64)
    jcode = pd.Categorical(f["judge"].astype(str), categories=list(judges)).codes.astype(np.int64)
    scode, _ = pd.factorize(f["scenario"], sort=True)
    gcode, _ = pd.factorize(f["generation"], sort=True)
    group, _ = pd.factorize(mcode * (scode.max() + 1) + scode, sort=True)
    cell, _ = pd.factorize(group.astype(np.int64) * (gcode.max() + 1) + gcode, sort=True)
    xbar = x.mean(axis=0)
    xc = x - xbar
    for c in range(nc):
        if np.ptp(x[:, c]) == 0:
            raise CjstatsError(f"The covariate column '{covariates[c]}' is constant ({x[0, c]:g}): it has no "
                               f"slope to estimate; leave it out of covariates.")
    n = len(f)
    r = p * k + k * nc
    z = np.zeros((n, r + 1))
    z[np.arange(n), mcode * k + jcode] = 1.0
    for c in range(nc):
        z[np.arange(n), p * k + c * k + jcode] = xc[:, c]
    z[:, r] = f["score"].to_numpy(np.float64)
    n_cells = int(cell.max()) + 1
    zc = np.zeros((n_cells, r + 1))
    np.add.at(zc, cell, z)
    n_c = np.bincount(cell, minlength=n_cells).astype(float)
    cell_group = np.zeros(n_cells, dtype=np.int64)
    cell_group[cell] = group
    n_groups = int(group.max()) + 1
    group_scen = np.zeros(n_groups, dtype=np.int64)
    group_scen[group] = scode
    has_gen = n_cells > n_groups
    d = _Design(zz=z.T @ z, zc=zc, n_c=n_c, cell_group=cell_group, group_scen=group_scen, n_groups=n_groups,
                n_scen=int(scode.max()) + 1, n=n, r=r, has_generation=has_gen)
    if np.linalg.matrix_rank(d.zz[:r, :r]) < r:
        raise CjstatsError(f"The covariates {covariates!r} are collinear with the model x judge cells (or with each "
                           f"other), so the judges' slopes are not estimable; leave one out.")
    theta, dev, info = _fit_theta(d)
    dev, beta, ainv, s2 = _profiled(theta, d)
    check_residual(s2, js)
    cov = s2 * ainv
    eta = beta[:p * k].reshape(p, k)
    slopes = beta[p * k:].reshape(nc, k).T                  # (K, C)
    level = ci_level
    df_within = n - n_cells - p * (k - 1) - nc * (k - 1)
    df_between = n_groups - d.n_scen - (p - 1) - nc
    df_slope, df_diff = float(max(df_between, 1)), float(max(df_within, 1))
    at = ", ".join(f"{c} = {m:.4g}" for c, m in zip(covariates, xbar))
    at_note = f"at {at}, the mean{'s' if nc > 1 else ''}"
    # components
    rows: list[tuple[str, ComponentRow]] = []
    a = (1 - level) / 2
    n_scen_model = np.bincount(np.unique(np.c_[mcode, scode], axis=0)[:, 0], minlength=p)
    for q, name in enumerate(models):
        c = np.zeros(r)
        c[q * k:(q + 1) * k] = 1.0 / k
        est, se = float(c @ beta), math.sqrt(float(c @ cov @ c))
        dfq = max(int(n_scen_model[q]) - 1, 1)
        tq = float(special.stdtrit(dfq, 1 - a))
        rows.append((name, ComponentRow("mu", est, est - tq * se, est + tq * se, se, "t (GLS, scenarios - 1 df)",
                                        "panel", est, note=f"model mean {at_note}")))
    vv = np.r_[s2, theta * s2]          # residual, scenario, model_scenario, generation
    v_se, v_lo, v_hi = _variance_intervals(vv, np.array([True, True, True, has_gen]), d, level)
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
                                     "p_value": float(stats.f.sf(fstat, k - 1, df_diff)),
                                     "hypothesis": f"every judge has the same slope on {cname}"}
    diag = {"theta": theta.tolist(), "s2_residual": s2, "reml_deviance": dev,
            "converged": bool(info.get("success", False)) or bool(info.get("nit", 0) < 200),
            "message": str(info.get("message", "")), "n": d.n_scen, "p": p, "k": k, "n_cells": n_cells,
            "has_generation": has_gen, "df_within": df_within, "df_between": df_between,
            "model_scenario": "pooled", "covariates": list(covariates), "covariate_means": xbar.tolist(),
            "covariate_note": (f"covariates {', '.join(covariates)}: model means and differences are {at_note} "
                               f"(compared at equal covariate values; each judge's slope is in fit.slopes).")}
    jcov = JointCovariance.reml(ce, p, k, s2_judge_model=max(jm_pop.raw_estimate, 0.0),
                                s2_judge=max(jpop.raw_estimate, 0.0),
                                df_structure=(d.n_scen - 1, max(df_between, 1), max(df_within, 1)),
                                df_population=max(dfi, 1))
    return CovariateFit(method="reml", models=models, judges=judges, cell_means=eta,
                        components=components_frame(rows, method="reml", ci_level=ci_level), tests=tests,
                        ci_level=ci_level, diagnostics=diag, covariance=jcov, covariates=tuple(covariates),
                        covariate_means=xbar, slope_values=slopes, beta_cov=cov,
                        slopes=pd.DataFrame(srows, columns=list(SLOPE_COLUMNS)), slope_df=(df_slope, df_diff))
