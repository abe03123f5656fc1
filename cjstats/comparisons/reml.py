r"""Joint REML fit of several models: nested random intercepts, fixed model x judge, from the joint statistics.

Model (lme4: ``lmer(score ~ model * judge + (1|scenario) + (1|scenario:model) +
(1|scenario:model:generation))``, any contrasts: the fit is coded by the P x K cell means eta_pl, which spans
the same column space as ``model * judge`` under ``contr.sum``, so the variances, fitted cell means and their
covariance are identical; only lme4's REML criterion differs by the constant 2 log|det T| of the recoding)::

    X_pijl = eta_pl + alpha_i + (alpha p)_pi + beta_pij + eps_pijl

With every variance divided by s2_eps (theta_a, theta_ms, theta_b), H = V/s2_eps is block-diagonal by scenario,
and inside a block it is nested compound symmetry: generation cells c (n_c rows) inside (model, scenario)
groups g inside scenarios i. Nested Woodbury identities give, for any two columns a, b of [X, y] with per-cell
sums a_c = sum_{rows in c} a:

    a'H^{-1}b = a'b - sum_c theta_b w_c a_c b_c - sum_g theta_ms/(1 + theta_ms q_g) f_g(a) f_g(b)
                - sum_i theta_a/(1 + theta_a Q_i) F_i(a) F_i(b)
    w_c = 1/(1 + n_c theta_b),  f_g(a) = sum_{c in g} w_c a_c,  q_g = sum_{c in g} n_c w_c,
    F_i(a) = sum_{g in i} f_g(a)/(1 + theta_ms q_g),  Q_i = sum_{g in i} q_g/(1 + theta_ms q_g),
    log|H| = sum_c log(1 + n_c theta_b) + sum_g log(1 + theta_ms q_g) + sum_i log(1 + theta_a Q_i).

So the profiled REML criterion (N - r)(1 + log(2 pi s2_hat)) + log|H| + log|X'H^{-1}X|, s2_hat = RSS/(N - r),
needs only per-cell-size sums of the cell judge counts and score sums, per model and per (model, scenario)
group (:class:`cjstats.stats.NestedStats`, the ``for_joint_reml`` view of ``build_stats(..., unit=("criterion",))``,
so any engine can feed it): O(rows) once, then O(groups x sizes x K + (PK)^2 x scenarios) per evaluation,
with no N x N matrix. The optimiser (L-BFGS-B on sqrt(theta) >= 0, like lme4's theta >= 0) finds boundary
optima exactly at 0. With one generation in every (model, scenario), the generation term is not identifiable
(it is the ``scenario:model`` term) and is dropped; ``model_scenario`` then holds both.

Reported (``components``):

- ``scenario``, ``model_scenario``, ``generation``, ``residual``: the REML variances; interval: Wald on the
  log scale from the numerical Hessian of the REML deviance in the variances (none at a boundary, where the
  row says so).
- ``mu`` per model: the row mean of the GLS cell means, t interval with (scenarios of the model - 1) df.
- ``judge_panel`` and ``judge_model`` (panel view): mean of the squared estimated effects minus the mean of
  their sampling variances, (|g|^2 - tr Cov g)/count, with g the judge (or judge x model interaction) effects
  of the GLS cell means. Interval: W = g'Cov(g)^+ g is noncentral chi-square(df, lambda) and
  lambda = count x value / mean nonzero eigenvalue of Cov(g); on balanced data this is the ANOVA interval.
- ``judge_model`` (population view): the same fixed-effects estimator scaled to a variance,
  count/df x panel value; ``judge_population``: (|gamma|^2 - tr Cov gamma)/(K - 1) - judge_model/P, no interval.
- The test of no judge x model interaction is the likelihood-ratio test of ``model * judge`` against
  ``model + judge``, both fitted by ML, on (P - 1)(K - 1) df.

Contrasts of the cell means use the GLS covariance s2_eps (X'H^{-1}X)^{-1}, with containment degrees of freedom
that reproduce the ANOVA's on balanced data: N - cells - P(K - 1) for interaction contrasts (within-model
sums zero), (model, scenario) groups - scenarios - (P - 1) for contrasts between models, scenarios - 1 otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from cjstats.comparisons._joint import JOINT_LABEL, JointFit, JointRow, check_judges_scored, components_frame, joint_stats
from cjstats.estimators.intervals import noncentral_chi2_interval
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.stats import NestedStats

__all__ = ["reml_deviance", "fit_nested", "NestedFit", "fit_joint"]

_NAN = float("nan")


def _subtract_blocks(blocks: np.ndarray, p: int, k: int, out: np.ndarray) -> None:
    """out -= blocks[q] in model q's [judges, y] rows and columns (blocks (P, K+1, K+1), y last)."""
    y = p * k
    for q in range(p):
        sl = slice(q * k, (q + 1) * k)
        bq = blocks[q]
        out[sl, sl] -= bq[:k, :k]
        out[sl, y] -= bq[:k, k]
        out[y, sl] -= bq[k, :k]
        out[y, y] -= bq[k, k]


def _weighted_gram(theta: np.ndarray, ns: NestedStats, t: np.ndarray | None) -> tuple[np.ndarray, float]:
    """[X, y]'H^{-1}[X, y] and log|H| at relative variances theta = (theta_a, theta_ms, theta_b).

    Computed in the cell-means basis (P K columns + y), where the generation and (model, scenario) levels are
    block-diagonal by model, then mapped to X = cell indicator x T. Every cell of size h has the same weight
    w_h = 1/(1 + h theta_b), so the cell level is sum_h theta_b w_h sum_c [D_c; Y_c][D_c; Y_c]' per model and
    f_g = sum_h w_h sum_{c in g, size h} [D_c; Y_c]: the per-size sums of :class:`~cjstats.stats.NestedStats`.
    """
    ta, tm, tb = theta
    p, k = ns.n_models, ns.n_judges
    pk = p * k
    m = np.zeros((pk + 1, pk + 1))
    m[np.arange(pk), np.arange(pk)] = ns.counts
    m[:pk, pk] = m[pk, :pk] = ns.sums
    m[pk, pk] = ns.yy
    w = 1.0 / (1.0 + ns.sizes * tb)                                   # (S,)
    if tb > 0:
        _subtract_blocks(np.tensordot(ns.cell_aug, tb * w, axes=([1], [0])), p, k, m)
    f = np.tensordot(ns.group_aug, w, axes=([1], [0]))                # (G, K+1)
    qg = ns.group_cnt @ (ns.sizes * w)
    dg = 1.0 / (1.0 + tm * qg)
    if tm > 0:
        fw = f * (tm * dg)[:, None]
        _subtract_blocks(np.add.reduceat(np.einsum("ga,gb->gab", fw, f), ns.group_starts, axis=0), p, k, m)
    n_scen = ns.n_scenarios
    fd = f * dg[:, None]
    fs = np.zeros((n_scen, p, k))
    fs[ns.group_scen, ns.group_model] = fd[:, :k]
    fs = np.column_stack([fs.reshape(n_scen, pk), np.bincount(ns.group_scen, weights=fd[:, k], minlength=n_scen)])
    qs = np.bincount(ns.group_scen, weights=qg * dg, minlength=n_scen)
    ds = 1.0 / (1.0 + ta * qs)
    if ta > 0:
        m -= (fs * (ta * ds)[:, None]).T @ fs
    logdet = float(ns.size_cells.sum(axis=0) @ np.log1p(ns.sizes * tb) + np.log1p(tm * qg).sum()
                   + np.log1p(ta * qs).sum())
    if t is not None and not (t.shape[0] == t.shape[1] and np.array_equal(t, np.eye(pk))):
        q = t.shape[1]
        tt = np.zeros((pk + 1, q + 1))
        tt[:pk, :q] = t
        tt[pk, q] = 1.0
        m = tt.T @ m @ tt
    return m, logdet


def reml_deviance(theta: np.ndarray, ns: NestedStats, t: np.ndarray, *, reml: bool = True
                  ) -> tuple[float, dict]:
    """Profiled -2 log (restricted) likelihood at relative variances theta; also beta, s2 and X'H^{-1}X."""
    m, logdet = _weighted_gram(theta, ns, t)
    q = t.shape[1]
    a, b, c = m[:q, :q], m[:q, q], m[q, q]
    chol = np.linalg.cholesky(a)
    z = np.linalg.solve(chol, b)
    rss = max(float(c - z @ z), 1e-300)
    n = ns.n_rows
    dof = n - q if reml else n
    s2 = rss / dof
    dev = dof * (1 + math.log(2 * math.pi * s2)) + logdet
    if reml:
        dev += 2 * float(np.log(np.diag(chol)).sum())
    beta = np.linalg.solve(chol.T, z)
    return dev, {"beta": beta, "s2": s2, "xhx": a, "rss": rss}


@dataclass(frozen=True, slots=True)
class NestedFit:
    theta: np.ndarray      # relative variances (scenario, model_scenario, generation)
    s2: float
    beta: np.ndarray
    cov_beta: np.ndarray
    deviance: float
    converged: bool
    n_evaluations: int


def fit_nested(ns: NestedStats, t: np.ndarray, *, reml: bool = True) -> NestedFit:
    """Minimise the profiled criterion over sqrt(theta) >= 0 (generation fixed at 0 when not identifiable)."""
    free = np.array([True, True, ns.has_generation])

    def fun(x: np.ndarray) -> float:
        th = np.zeros(3)
        th[free] = x**2
        return reml_deviance(th, ns, t, reml=reml)[0]

    best = None
    for x0 in (np.full(free.sum(), 0.7), np.full(free.sum(), 0.1)):
        r = optimize.minimize(fun, x0, method="L-BFGS-B", jac="3-point", bounds=[(0, None)] * int(free.sum()),
                              options={"ftol": 1e-14, "gtol": 1e-7, "maxiter": 500})
        if best is None or r.fun < best.fun:
            best = r
        if r.success and r.nit > 0 and np.abs(r.jac).max() < 1e-3:
            break  # one well-converged start is enough
    # snap tiny values to the boundary when that does not worsen the criterion
    x = best.x.copy()
    for i in range(len(x)):
        if 0 < x[i] < 1e-4:
            trial = x.copy()
            trial[i] = 0.0
            if fun(trial) <= best.fun + 1e-9:
                x = trial
    th = np.zeros(3)
    th[free] = x**2
    dev, info = reml_deviance(th, ns, t, reml=reml)
    cov = info["s2"] * np.linalg.inv(info["xhx"])
    return NestedFit(theta=th, s2=info["s2"], beta=info["beta"], cov_beta=cov, deviance=dev,
                     converged=bool(best.success), n_evaluations=int(best.nfev))


def _deviance_in_variances(v: np.ndarray, ns: NestedStats, t: np.ndarray, free: np.ndarray) -> float:
    """Non-profiled REML deviance at variances v = (s2_eps, s2_a, s2_ms, s2_b)[free]."""
    full = np.zeros(4)
    full[np.r_[True, free]] = v
    s2 = full[0]
    th = full[1:] / s2
    m, logdet = _weighted_gram(th, ns, t)
    q = t.shape[1]
    a, b, c = m[:q, :q], m[:q, q], m[q, q]
    chol = np.linalg.cholesky(a)
    z = np.linalg.solve(chol, b)
    rss = float(c - z @ z)
    n = ns.n_rows
    return (n - q) * math.log(s2) + logdet + 2 * float(np.log(np.diag(chol)).sum()) + rss / s2


def _wald_cov(fit: NestedFit, ns: NestedStats, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Variances (s2_eps, s2_a, s2_ms, s2_b) and the inverse of half the Hessian of the REML deviance."""
    free = np.array([True, True, ns.has_generation])
    v = np.r_[fit.s2, fit.s2 * fit.theta][np.r_[True, free]]
    k = len(v)
    h = np.zeros((k, k))
    step = 1e-4 * np.maximum(v, 1e-8 * max(v.max(), 1e-12))
    f0 = _deviance_in_variances(v, ns, t, free)
    for i in range(k):
        for j in range(i, k):
            ei, ej = np.eye(k)[i] * step[i], np.eye(k)[j] * step[j]
            if i == j:
                fp = _deviance_in_variances(v + ei, ns, t, free)
                fm = _deviance_in_variances(np.maximum(v - ei, 1e-300), ns, t, free)
                h[i, i] = (fp - 2 * f0 + fm) / step[i] ** 2
            else:
                fpp = _deviance_in_variances(v + ei + ej, ns, t, free)
                fpm = _deviance_in_variances(np.maximum(v + ei - ej, 1e-300), ns, t, free)
                fmp = _deviance_in_variances(np.maximum(v - ei + ej, 1e-300), ns, t, free)
                fmm = _deviance_in_variances(np.maximum(v - ei - ej, 1e-300), ns, t, free)
                h[i, j] = h[j, i] = (fpp - fpm - fmp + fmm) / (4 * step[i] * step[j])
    boundary = np.r_[False, fit.theta[free] == 0]
    cov = np.full((k, k), np.nan)
    keep = ~boundary
    try:
        cov[np.ix_(keep, keep)] = np.linalg.inv(h[np.ix_(keep, keep)] / 2)
    except np.linalg.LinAlgError:
        pass
    return v, cov


def _effect_row(component: str, g: np.ndarray, cov: np.ndarray, count: int, df: int, level: float, *,
                scale: float = 1.0, view: str = "fixed", note: str = "") -> JointRow:
    """(|g|^2 - tr Cov g)/count (times scale) with the noncentral chi-square interval of the module docstring."""
    raw = (float(g @ g) - float(np.trace(cov))) / count * scale
    est, boundary = (0.0, True) if raw < 0 else (raw, False)
    ev, vec = np.linalg.eigh(cov)
    tol = ev.max() * 1e-9
    nz = ev > tol
    mean_ev = float(ev[nz].mean())
    proj = vec[:, nz].T @ g
    w = float((proj**2 / ev[nz]).sum())
    lo, hi = noncentral_chi2_interval(w, int(nz.sum()), level)
    to_value = mean_ev / count * scale
    se = to_value * math.sqrt(2 * (int(nz.sum()) + 2 * max(w - nz.sum(), 0.0)))
    return JointRow(component, est, lo * to_value, hi * to_value, se,
                        "noncentral chi-square inversion (GLS effects)", view, raw, boundary, True, note)


def _variance_row(component: str, est: float, var: float, level: float, boundary: bool, note: str = ""
                  ) -> JointRow:
    if boundary:
        return JointRow(component, 0.0, _NAN, _NAN, _NAN, "Wald (log scale)", "fixed", 0.0, True, True,
                            (note + "; " if note else "") + "REML optimum at 0: no Wald interval")
    se = math.sqrt(var) if var > 0 else _NAN
    z = float(special.ndtri(1 - (1 - level) / 2))
    f = math.exp(z * se / est) if est > 0 and np.isfinite(se) else _NAN
    return JointRow(component, est, est / f, est * f, se, "Wald (log scale)", "fixed", est, False, True, note)


def _single_thread_blas() -> Any:
    """One BLAS thread while fitting: every product is small, and on a busy machine OpenBLAS's threads made an
    evaluation 20 times slower (41 ms against 2 ms on MentalAlign)."""
    import contextlib

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def fit_joint(source: Any, *, ci_level: float) -> JointFit:
    """Joint REML fit (module docstring) from the joint statistics of ``source`` (a table or a joint unit of
    :func:`cjstats.stats.build_stats`); missing cells, unequal generations and unshared scenarios are fine."""
    with _single_thread_blas():
        return _fit_joint(source, ci_level=ci_level)


def _fit_joint(source: Any, *, ci_level: float) -> JointFit:
    js, _ = joint_stats(source, "compare_models")
    ns = js.for_joint_reml()
    p, k = ns.n_models, ns.n_judges
    check_judges_scored(ns.counts, js.models, js.judge_labels)
    t_full = np.eye(p * k)
    fit = fit_nested(ns, t_full, reml=True)
    beta_raw = fit.beta + np.repeat(ns.shift, k)       # the scores were centred by one constant per model
    beta = beta_raw.reshape(p, k)
    cov = fit.cov_beta
    v, vcov = _wald_cov(fit, ns, t_full)
    free = np.array([True, True, ns.has_generation])
    names = ["residual", "scenario", "model_scenario", "generation"]
    used = [n for n, f in zip(names, np.r_[True, free]) if f]
    level = ci_level
    rows: list[tuple[str, JointRow]] = []
    n_scen_model = np.bincount(ns.group_model, minlength=p)
    a = (1 - level) / 2
    for q, name in enumerate(js.models):
        c = np.zeros(p * k)
        c[q * k:(q + 1) * k] = 1.0 / k
        est = float(c @ beta_raw)
        se = math.sqrt(float(c @ cov @ c))
        df = max(int(n_scen_model[q]) - 1, 1)
        tq = float(special.stdtrit(df, 1 - a))
        rows.append((name, JointRow("mu", est, est - tq * se, est + tq * se, se, "t (GLS, scenarios - 1 df)",
                                        "fixed", est)))
    m1_note = "m = 1: holds s2_model_scenario + s2_generation (generation not separable)"
    for comp in ("scenario", "model_scenario", "generation", "residual"):
        if comp not in used:
            rows.append((JOINT_LABEL, JointRow.not_identifiable(
                comp, "not identifiable: one generation per (model, scenario) (m = 1)")))
            continue
        i = used.index(comp)
        bnd = comp != "residual" and v[i] == 0
        rows.append((JOINT_LABEL, _variance_row(comp, float(v[i]), float(vcov[i, i]), level, bnd,
                                                m1_note if comp == "model_scenario" and not ns.has_generation else "")))
    # judge and judge x model effects of the GLS cell means
    lk = np.eye(k) - 1.0 / k
    lp = np.eye(p) - 1.0 / p
    colmean = np.kron(np.full((1, p), 1.0 / p), np.eye(k))  # (K, PK): judge means
    g_judge = lk @ colmean @ beta_raw
    cov_judge = lk @ colmean @ cov @ colmean.T @ lk
    l_int = np.kron(lp, lk)
    g_int = l_int @ beta_raw
    cov_int = l_int @ cov @ l_int
    dfi = (p - 1) * (k - 1)
    rows.append((JOINT_LABEL, _effect_row("judge_panel", g_judge, cov_judge, k, k - 1, level)))
    jm_panel = _effect_row("judge_model", g_int, cov_int, p * k, dfi, level)
    jm_pop = _effect_row("judge_model", g_int, cov_int, p * k, dfi, level, scale=p * k / dfi, view="random")
    raw_pop_j = (float(g_judge @ g_judge) - float(np.trace(cov_judge))) / (k - 1) - max(jm_pop.raw_estimate, 0) / p
    rows.append((JOINT_LABEL, JointRow("judge_population", max(raw_pop_j, 0.0), _NAN, _NAN, _NAN, "", "random",
                                           raw_pop_j, raw_pop_j < 0, True,
                                           f"judges random: {k} judges give {k - 1} degrees of freedom; no "
                                           f"interval in the joint REML fit (see cj.estimate)")))
    rows.append((JOINT_LABEL, jm_panel))
    rows.append((JOINT_LABEL, jm_pop))
    # likelihood-ratio test of the interaction (ML fits)
    t_add = np.hstack([np.kron(np.eye(p), np.ones((k, 1))),
                       np.kron(np.ones((p, 1)), np.vstack([np.eye(k - 1), -np.ones((1, k - 1))]))])
    ml_full = fit_nested(ns, t_full, reml=False)
    ml_add = fit_nested(ns, t_add, reml=False)
    lr = max(ml_add.deviance - ml_full.deviance, 0.0)
    test = {"test": "LR", "statistic": lr, "df1": dfi, "p_value": float(stats.chi2.sf(lr, dfi)),
            "loglik_full_ml": -ml_full.deviance / 2, "loglik_additive_ml": -ml_add.deviance / 2}
    n_cells, n_groups, n_scen = ns.n_cells, ns.n_groups, ns.n_scenarios
    df_within = ns.n_rows - n_cells - p * (k - 1)
    df_between = n_groups - n_scen - (p - 1)
    s2_jm_pop = max(jm_pop.raw_estimate, 0.0)
    s2_j_pop = max(raw_pop_j, 0.0)

    def contrast_fn(c: np.ndarray, view: str) -> tuple[float, float]:
        cf = c.reshape(-1)
        var = float(cf @ cov @ cf)
        if abs(c.sum()) > 1e-12:
            df = n_scen - 1
        elif np.abs(c.sum(axis=1)).max() > 1e-12:
            df = df_between
        else:
            df = df_within
        if view == "population":
            add = float((c**2).sum()) * s2_jm_pop + float((c.sum(axis=0) ** 2).sum()) * s2_j_pop
            if add > 0:
                df = (var + add) ** 2 / (var**2 / df + add**2 / max(dfi, 1))
                var += add
        return var, float(df)

    diag = {"theta": fit.theta.tolist(), "s2_residual": fit.s2, "reml_deviance": fit.deviance,
            "converged": fit.converged, "n_evaluations": fit.n_evaluations, "n": n_scen, "p": p, "k": k,
            "n_cells": n_cells, "has_generation": ns.has_generation, "cell_counts": ns.counts.reshape(p, k),
            "df_within": df_within, "df_between": df_between}
    if not fit.converged:
        import warnings

        warnings.warn("The joint REML optimiser did not report convergence; check diagnostics['converged'].",
                      CjstatsWarning, stacklevel=2)
    return JointFit(method="reml", models=js.models, judges=js.judge_labels, cell_means=beta,
                    components=components_frame(rows, method="reml", ci_level=ci_level),
                    tests={"judge_model": test}, ci_level=ci_level, diagnostics=diag, contrast_fn=contrast_fn)
