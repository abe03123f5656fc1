r"""Joint REML fit of several models: nested random intercepts, fixed model x judge, from per-cell statistics.

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
needs only the per-cell judge counts and score sums: O(rows) once, then O(cells x (PK)^2) per evaluation,
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

from cjstats.comparisons._joint import (
    JOINT_LABEL, JointData, JointFit, JointRow, as_scores, check_shared_scenarios, components_frame, joint_data,
)
from cjstats.estimators.intervals import noncentral_chi2_interval
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.scores import Scores

__all__ = ["CellStatistics", "cell_statistics", "reml_deviance", "fit_nested", "NestedFit", "fit_joint"]

_NAN = float("nan")


@dataclass(frozen=True, slots=True)
class CellStatistics:
    """Per-cell counts and sums of a joint table (cells sorted by model, then scenario, then generation).

    ``hk[c, l]`` counts the rows of generation cell c scored by judge l, ``u[c]`` sums their scores; the
    model of a cell is ``cell_model``. Groups are (model, scenario) pairs, model-major.
    """

    n_rows: int
    n_models: int
    n_judges: int
    hk: np.ndarray          # (C, K)
    u: np.ndarray           # (C,)
    n_c: np.ndarray         # (C,)
    cell_group: np.ndarray  # (C,)
    cell_starts: np.ndarray  # (P,) first cell of each model
    group_scen: np.ndarray  # (G,)
    group_model: np.ndarray  # (G,)
    group_starts: np.ndarray  # (P,) first group of each model
    counts: np.ndarray      # (PK,) rows per (model, judge)
    sums: np.ndarray        # (PK,) score sums per (model, judge)
    yy: float
    has_generation: bool
    cell_to_group: Any      # sparse (G, C) indicator

    @property
    def n_scenarios(self) -> int:
        return int(self.group_scen.max()) + 1


def cell_statistics(d: JointData) -> CellStatistics:
    """O(rows) sufficient statistics of the joint REML criterion."""
    from scipy import sparse

    p, k = d.n_models, d.n_judges
    n_cells = int(d.cell.max()) + 1
    hk = np.zeros((n_cells, k))
    np.add.at(hk, (d.cell, d.judge), 1.0)
    u = np.bincount(d.cell, weights=d.y, minlength=n_cells)
    n_c = hk.sum(axis=1)
    cell_group = np.zeros(n_cells, dtype=np.int64)
    cell_group[d.cell] = d.ms
    cell_model = np.zeros(n_cells, dtype=np.int64)
    cell_model[d.cell] = d.model
    n_groups = int(d.ms.max()) + 1
    group_scen = np.zeros(n_groups, dtype=np.int64)
    group_scen[d.ms] = d.scenario
    group_model = np.zeros(n_groups, dtype=np.int64)
    group_model[d.ms] = d.model
    pl = d.model * k + d.judge
    c2g = sparse.csr_matrix((np.ones(n_cells), (cell_group, np.arange(n_cells))), shape=(n_groups, n_cells))
    return CellStatistics(
        n_rows=len(d.y), n_models=p, n_judges=k, hk=hk, u=u, n_c=n_c, cell_group=cell_group,
        cell_starts=np.searchsorted(cell_model, np.arange(p)), group_scen=group_scen, group_model=group_model,
        group_starts=np.searchsorted(group_model, np.arange(p)),
        counts=np.bincount(pl, minlength=p * k).astype(float), sums=np.bincount(pl, weights=d.y, minlength=p * k),
        yy=float(d.y @ d.y), has_generation=n_cells > n_groups, cell_to_group=c2g)


def _grouped_outer(local: np.ndarray, weight: np.ndarray, starts: np.ndarray, p: int, k: int,
                   out: np.ndarray) -> None:
    """out -= sum_rows weight e e', rows grouped by model (contiguous); e = local[:K] in the model's block, y last."""
    wl = local * weight[:, None]
    blocks = np.add.reduceat(np.einsum("ca,cb->cab", wl, local), starts, axis=0)  # (P, K+1, K+1)
    y = p * k
    for q in range(p):
        sl = slice(q * k, (q + 1) * k)
        bq = blocks[q]
        out[sl, sl] -= bq[:k, :k]
        out[sl, y] -= bq[:k, k]
        out[y, sl] -= bq[k, :k]
        out[y, y] -= bq[k, k]


def _weighted_gram(theta: np.ndarray, cs: CellStatistics, t: np.ndarray) -> tuple[np.ndarray, float]:
    """[X, y]'H^{-1}[X, y] and log|H| at relative variances theta = (theta_a, theta_ms, theta_b).

    Computed in the cell-means basis (P K columns + y), where the generation and (model, scenario) levels are
    block-diagonal by model, then mapped to X = cell indicator x T.
    """
    ta, tm, tb = theta
    p, k = cs.n_models, cs.n_judges
    pk = p * k
    m = np.zeros((pk + 1, pk + 1))
    m[np.arange(pk), np.arange(pk)] = cs.counts
    m[:pk, pk] = m[pk, :pk] = cs.sums
    m[pk, pk] = cs.yy
    local = np.column_stack([cs.hk, cs.u])  # (C, K+1)
    w = 1.0 / (1.0 + cs.n_c * tb)
    if tb > 0:
        _grouped_outer(local, tb * w, cs.cell_starts, p, k, m)
    f = np.asarray(cs.cell_to_group @ (local * w[:, None]))  # (G, K+1)
    n_groups = len(cs.group_scen)
    qg = np.bincount(cs.cell_group, weights=cs.n_c * w, minlength=n_groups)
    dg = 1.0 / (1.0 + tm * qg)
    if tm > 0:
        _grouped_outer(f, tm * dg, cs.group_starts, p, k, m)
    n_scen = cs.n_scenarios
    fd = f * dg[:, None]
    fs = np.zeros((n_scen, p, k))
    fs[cs.group_scen, cs.group_model] = fd[:, :k]
    fs = np.column_stack([fs.reshape(n_scen, pk), np.bincount(cs.group_scen, weights=fd[:, k], minlength=n_scen)])
    qs = np.bincount(cs.group_scen, weights=qg * dg, minlength=n_scen)
    ds = 1.0 / (1.0 + ta * qs)
    if ta > 0:
        m -= (fs * (ta * ds)[:, None]).T @ fs
    logdet = float(np.log1p(cs.n_c * tb).sum() + np.log1p(tm * qg).sum() + np.log1p(ta * qs).sum())
    if t is not None and not (t.shape[0] == t.shape[1] and np.array_equal(t, np.eye(pk))):
        q = t.shape[1]
        tt = np.zeros((pk + 1, q + 1))
        tt[:pk, :q] = t
        tt[pk, q] = 1.0
        m = tt.T @ m @ tt
    return m, logdet


def reml_deviance(theta: np.ndarray, cs: CellStatistics, t: np.ndarray, *, reml: bool = True
                  ) -> tuple[float, dict]:
    """Profiled -2 log (restricted) likelihood at relative variances theta; also beta, s2 and X'H^{-1}X."""
    m, logdet = _weighted_gram(theta, cs, t)
    q = t.shape[1]
    a, b, c = m[:q, :q], m[:q, q], m[q, q]
    chol = np.linalg.cholesky(a)
    z = np.linalg.solve(chol, b)
    rss = max(float(c - z @ z), 1e-300)
    n = cs.n_rows
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


def fit_nested(cs: CellStatistics, t: np.ndarray, *, reml: bool = True) -> NestedFit:
    """Minimise the profiled criterion over sqrt(theta) >= 0 (generation fixed at 0 when not identifiable)."""
    free = np.array([True, True, cs.has_generation])

    def fun(x: np.ndarray) -> float:
        th = np.zeros(3)
        th[free] = x**2
        return reml_deviance(th, cs, t, reml=reml)[0]

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
    dev, info = reml_deviance(th, cs, t, reml=reml)
    cov = info["s2"] * np.linalg.inv(info["xhx"])
    return NestedFit(theta=th, s2=info["s2"], beta=info["beta"], cov_beta=cov, deviance=dev,
                     converged=bool(best.success), n_evaluations=int(best.nfev))


def _deviance_in_variances(v: np.ndarray, cs: CellStatistics, t: np.ndarray, free: np.ndarray) -> float:
    """Non-profiled REML deviance at variances v = (s2_eps, s2_a, s2_ms, s2_b)[free]."""
    full = np.zeros(4)
    full[np.r_[True, free]] = v
    s2 = full[0]
    th = full[1:] / s2
    m, logdet = _weighted_gram(th, cs, t)
    q = t.shape[1]
    a, b, c = m[:q, :q], m[:q, q], m[q, q]
    chol = np.linalg.cholesky(a)
    z = np.linalg.solve(chol, b)
    rss = float(c - z @ z)
    n = cs.n_rows
    return (n - q) * math.log(s2) + logdet + 2 * float(np.log(np.diag(chol)).sum()) + rss / s2


def _wald_cov(fit: NestedFit, cs: CellStatistics, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Variances (s2_eps, s2_a, s2_ms, s2_b) and the inverse of half the Hessian of the REML deviance."""
    free = np.array([True, True, cs.has_generation])
    v = np.r_[fit.s2, fit.s2 * fit.theta][np.r_[True, free]]
    k = len(v)
    h = np.zeros((k, k))
    step = 1e-4 * np.maximum(v, 1e-8 * max(v.max(), 1e-12))
    f0 = _deviance_in_variances(v, cs, t, free)
    for i in range(k):
        for j in range(i, k):
            ei, ej = np.eye(k)[i] * step[i], np.eye(k)[j] * step[j]
            if i == j:
                fp = _deviance_in_variances(v + ei, cs, t, free)
                fm = _deviance_in_variances(np.maximum(v - ei, 1e-300), cs, t, free)
                h[i, i] = (fp - 2 * f0 + fm) / step[i] ** 2
            else:
                fpp = _deviance_in_variances(v + ei + ej, cs, t, free)
                fpm = _deviance_in_variances(np.maximum(v + ei - ej, 1e-300), cs, t, free)
                fmp = _deviance_in_variances(np.maximum(v - ei + ej, 1e-300), cs, t, free)
                fmm = _deviance_in_variances(np.maximum(v - ei - ej, 1e-300), cs, t, free)
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


def fit_joint(scores: Scores, *, ci_level: float) -> JointFit:
    """Joint REML fit (module docstring); missing cells, unequal generations and unshared scenarios are fine."""
    with _single_thread_blas():
        return _fit_joint(scores, ci_level=ci_level)


def _fit_joint(scores: Scores, *, ci_level: float) -> JointFit:
    scores = as_scores(scores, "compare_models")
    d = joint_data(scores)
    check_shared_scenarios(d)
    p, k = d.n_models, d.n_judges
    cs = cell_statistics(d)
    empty = np.flatnonzero(cs.counts == 0)  # (model, judge) cells
    if empty.size:
        pm, lj = divmod(int(empty[0]), k)
        raise CjstatsError(f"Judge '{d.judges[lj]}' never scored model '{d.models[pm]}', so the model x judge cell "
                           f"means are not estimable. Drop that judge or that model (scores.subset(...)).")
    t_full = np.eye(p * k)
    fit = fit_nested(cs, t_full, reml=True)
    beta = fit.beta.reshape(p, k)
    cov = fit.cov_beta
    v, vcov = _wald_cov(fit, cs, t_full)
    free = np.array([True, True, cs.has_generation])
    names = ["residual", "scenario", "model_scenario", "generation"]
    used = [n for n, f in zip(names, np.r_[True, free]) if f]
    level = ci_level
    rows: list[tuple[str, JointRow]] = []
    n_scen_model = np.bincount(_group_model(d), minlength=p)
    a = (1 - level) / 2
    for q, name in enumerate(d.models):
        c = np.zeros(p * k)
        c[q * k:(q + 1) * k] = 1.0 / k
        est = float(c @ fit.beta)
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
                                                m1_note if comp == "model_scenario" and not cs.has_generation else "")))
    # judge and judge x model effects of the GLS cell means
    lk = np.eye(k) - 1.0 / k
    lp = np.eye(p) - 1.0 / p
    colmean = np.kron(np.full((1, p), 1.0 / p), np.eye(k))  # (K, PK): judge means
    g_judge = lk @ colmean @ fit.beta
    cov_judge = lk @ colmean @ cov @ colmean.T @ lk
    l_int = np.kron(lp, lk)
    g_int = l_int @ fit.beta
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
    ml_full = fit_nested(cs, t_full, reml=False)
    ml_add = fit_nested(cs, t_add, reml=False)
    lr = max(ml_add.deviance - ml_full.deviance, 0.0)
    test = {"test": "LR", "statistic": lr, "df1": dfi, "p_value": float(stats.chi2.sf(lr, dfi)),
            "loglik_full_ml": -ml_full.deviance / 2, "loglik_additive_ml": -ml_add.deviance / 2}
    n_cells, n_groups, n_scen = len(cs.u), len(cs.group_scen), int(cs.group_scen.max()) + 1
    df_within = cs.n_rows - n_cells - p * (k - 1)
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
            "n_cells": n_cells, "has_generation": cs.has_generation, "cell_counts": cs.counts.reshape(p, k),
            "df_within": df_within, "df_between": df_between}
    if not fit.converged:
        import warnings

        warnings.warn("The joint REML optimiser did not report convergence; check diagnostics['converged'].",
                      CjstatsWarning, stacklevel=2)
    return JointFit(method="reml", models=d.models, judges=d.judges, cell_means=beta,
                    components=components_frame(rows, method="reml", ci_level=ci_level),
                    tests={"judge_model": test}, ci_level=ci_level, diagnostics=diag, contrast_fn=contrast_fn)


def _group_model(d: JointData) -> np.ndarray:
    """Model of each (model, scenario) group, for counting each model's scenarios."""
    n_groups = int(d.ms.max()) + 1
    out = np.zeros(n_groups, dtype=np.int64)
    out[d.ms] = d.model
    return out

