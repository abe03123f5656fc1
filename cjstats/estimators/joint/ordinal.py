r"""The joint cumulative-link mixed model of several models (``method="ordinal"``): pass/fail verdicts and ratings.

Model, for models p, scenarios i and judges l (row r: one judge call, category Y_r in 0..J-1 of the J distinct
scores, sorted)::

    P(Y_r <= k | a_i, b_pi) = F(theta_k - eta_pl - a_i - b_pi),   a_i ~ N(0, s2_scenario),
                                                                   b_pi ~ N(0, s2_model_scenario),

F the probit or logit link, shared thresholds theta_0 < ... < theta_{J-2}, and a free fixed effect per
(model, judge) cell: R's ``clmm(ordered(score) ~ model*judge + (1|scenario) + (1|scenario:model))`` and, for 0/1
verdicts, ``glmer(score ~ model*judge + (1|scenario) + (1|scenario:model), binomial(link))`` (there eta_glmer =
-theta_0 + eta_pl). ``cell_means`` are eta_pl - mean_k theta_k (for verdicts: glmer's linear predictor of the
cell, so P(pass | a = b = 0) = F(cell mean)); a difference of two models' means (the row means, as emmeans
averages over judges) does not depend on that choice.

Estimation: maximum likelihood. The likelihood of scenario i is the (1 + P_i)-dimensional nested integral
int N(a) prod_p [int N(b) prod_{r in (p, i)} P(Y_r | a + b) db] da, the structure of the per-model backend's
generation effect a_i + b_ij with "generation" read as "model" (:mod:`cjstats.estimators.ordinal_ml.nested`: the
same vectorised joint modes, arrow-shaped Hessian and analytic Laplace gradient; the fixed effects enter as that
module's judge offsets, one per (model, judge) cell). ``nagq=1`` (default) is the Laplace approximation of the
joint (a, b) integral, the definition glmer (which allows no quadrature with two random terms) and clmm use;
``nagq=Q > 1`` is nested adaptive Gauss-Hermite quadrature (:func:`nested_agq_neg_loglik`: Q nodes for a_i
around its Laplace mode and marginal curvature, and for each node Q nodes for each b_pi around its conditional
mode, Q^2 evaluations per row), maximised from the Laplace fit with a central-difference gradient. Its accuracy
against Laplace and R: docs/comparisons.md, "Verdicts and ratings".

Components (latent scale, ``residual`` fixed by the link: 1 for probit, pi^2/3 for logit): ``scenario`` and
``model_scenario`` (Wald on log s; profile likelihood with lower limit 0 at a boundary estimate); ``mu`` per
model the latent panel mean with its Wald interval; ``judge_panel`` the mean squared panel-centred judge offset
and ``judge_model`` (panel) the mean squared judge x model interaction, both bias-corrected by the trace of
their estimator's covariance (delta-method Wald interval, truncated at 0); ``judge_population`` and
``judge_model`` (population) the same sums of squares over their degrees of freedom (K - 1, (P - 1)(K - 1))
with chi-squared intervals that ignore the estimation error of the effects. ``tests["judge_model"]``: the Wald
chi-squared test of no judge x model interaction. Contrasts use the covariance of the cell means from the
observed information (delta method), with normal quantiles (df = inf, as emmeans for a glmer fit).

Score scale (:func:`score_scale`): each model's expected score (pass rate for 0/1) for a new scenario and the
panel, E_p = mean_l int sum_k v_k P(Y = k | eta_pl + e) N(e; 0, s2_scenario + s2_model_scenario) de
(:func:`cjstats.results.likelihoods.expected_score`: marginal over the scenario effects, not at a = b = 0), and
the pairwise differences E_p - E_q, with delta-method intervals (numerical gradient in the optimiser's
parameters times their covariance). :func:`cjstats.compare_models` reports them as ``score_means`` and
``score_differences`` (the backend declares the hook ``score_scale``).

Identification (:mod:`cjstats.estimators.identification`): a (model, judge) cell whose every call is in one
extreme category (a model that passes everything) is separated: its cell mean is +-inf and the likelihood has
no finite maximum. The fit leaves those rows out (the exact limit of the MLE of everything else), reports the
cell mean as +-inf, the model's ``mu`` row and every row built from all cells (``judge_*``) as not identified, and
warns; :func:`cjstats.compare_models` then refuses to rank in one sentence rather than show a finite interval
around an arbitrary number.

The model has no generation term. With several generations per (model, scenario) the generations are treated
as independent calls given the scenario and model effects (a warning says so, and the ``generation`` row is not
identifiable); score one generation, or average over them, for the model as stated.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from cjstats import _dist
from cjstats._validate import check_choice
from cjstats._warnings import warn
from cjstats.estimators.identification import IdentificationWarning, ordinal_separation
from cjstats.estimators.joint._joint import JOINT_LABEL, JointFit, JointSource, components_frame, joint_data, joint_stats
from cjstats.estimators.ordinal_ml.likelihood import unpack
from cjstats.estimators.ordinal_ml.links import LINKS, RESIDUAL_VARIANCE, log_prob
from cjstats.estimators.ordinal_ml.nested import NestedProblem, fit_nested, make_nested, mode_curvatures, profile_nested
from cjstats.estimators.ordinal_ml.numdiff import central_difference, pinv_held
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.results.components import ComponentRow
from cjstats.results.contrast import JointCovariance

__all__ = ["fit", "score_scale", "nested_agq_neg_loglik", "MAX_CATEGORIES"]

#: More distinct scores than this is a continuous score: the cumulative model would fit one threshold per value.
MAX_CATEGORIES = 30
_LOG_2PI = math.log(2.0 * math.pi)


# ------------------------------------------------------------------------------------------ nested quadrature
def nested_agq_neg_loglik(q: NestedProblem, x: np.ndarray, nagq: int, a0: np.ndarray | None = None,
                          b0: np.ndarray | None = None) -> float:
    r"""-log L by nested adaptive Gauss-Hermite quadrature with ``nagq`` = Q nodes per level.

    Per scenario i, with (a*, b*) the joint mode and the arrow Hessian (v_c = -D2_c, w_c = 1/s_b^2 + v_c, S_i
    the Schur complement, :mod:`cjstats.estimators.ordinal_ml.nested`): outer nodes a_t = a* + z_t / sqrt(S_i)
    (S_i^-1 the Laplace marginal variance of a); for each, the conditional mode of b_c given a_t to first order,
    b_c(a_t) = b*_c - (v_c / w_c)(a_t - a*), and inner nodes b_ctu = b_c(a_t) + z_u / sqrt(w_c). Then

        log I_c(a_t) = log sum_u w_u exp(h_c(b_ctu) + z_u^2/2) - 1/2 log w_c,
        log L_i = log sum_t w_t exp(log N(a_t; 0, s_a^2) + sum_c log I_c(a_t) + z_t^2/2) - 1/2 log S_i,

    h_c(b) = log N(b; 0, s_b^2) + sum_{r in c} log P(Y_r | a_t + b), (z, w) the rule for exp(-z^2/2). Q = 1 is
    the Laplace approximation exactly; the error falls quickly with Q (docs/comparisons.md)."""
    p = q.base
    a, b, s2a, s2b, u0, lo0, v, w, S = mode_curvatures(q, x, a0, b0)
    z, wq = np.polynomial.hermite_e.hermegauss(int(nagq))
    n, cs, nc = p.n_scenarios, q.cell_scenario, q.n_cells
    sd_a = 1.0 / np.sqrt(S)
    at = a[:, None] + z[None, :] * sd_a[:, None]                                    # (n, Q)
    bc = b[:, None] + (-v / w)[:, None] * (z[None, :] * sd_a[cs][:, None])          # (C, Q)
    bn = bc[:, :, None] + (z[None, None, :] / np.sqrt(w)[:, None, None])            # (C, Q, Q)
    eta = at[p.scenario][:, :, None] + bn[q.cell]                                   # (N, Q, Q)
    lp = log_prob(u0[:, None, None] - eta, lo0[:, None, None] - eta, p.link, derivatives=0)[0]
    Q = z.size
    idx = (q.cell[:, None, None] * Q * Q + np.arange(Q * Q).reshape(1, Q, Q)).ravel()
    lpc = np.bincount(idx, weights=lp.ravel(), minlength=nc * Q * Q).reshape(nc, Q, Q)
    h = lpc - 0.5 * bn * bn / s2b - 0.5 * (_LOG_2PI + math.log(s2b)) + 0.5 * z[None, None, :] ** 2 \
        + np.log(wq)[None, None, :]
    m = h.max(axis=2, keepdims=True)
    log_i = (m[..., 0] + np.log(np.exp(h - m).sum(axis=2))) - 0.5 * np.log(w)[:, None]   # (C, Q)
    si = np.zeros((n, Q))
    np.add.at(si, cs, log_i)
    g = si - 0.5 * at * at / s2a - 0.5 * (_LOG_2PI + math.log(s2a)) + 0.5 * z[None, :] ** 2 + np.log(wq)[None, :]
    mg = g.max(axis=1, keepdims=True)
    li = mg[:, 0] + np.log(np.exp(g - mg).sum(axis=1)) - 0.5 * np.log(S)
    val = float(-np.sum(li))
    return val if math.isfinite(val) else math.inf


def _fit_agq(q: NestedProblem, lap: Any, nagq: int) -> Any:
    """Maximise the nested-AGQ likelihood from the Laplace fit ``lap`` (L-BFGS-B on central differences, then the
    observed information by central differences of that gradient)."""
    from dataclasses import replace as dc_replace

    from scipy.optimize import minimize

    from cjstats._blas import single_thread_blas
    from cjstats.estimators.ordinal_ml.optimise import LOG_S_BOUNDS

    def f(z: np.ndarray) -> float:
        return nested_agq_neg_loglik(q, z, nagq)

    def grad(z: np.ndarray) -> np.ndarray:
        return central_difference(f, z, 1e-5)

    with single_thread_blas():
        x0 = lap.x.copy()
        bounds = [LOG_S_BOUNDS] + [(None, None)] * (x0.size - 2) + [LOG_S_BOUNDS]
        res = minimize(lambda z: (f(z), grad(z)), x0, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": 300, "ftol": 1e-13, "gtol": 1e-6})
        x = res.x.copy()
        hess = central_difference(grad, x, 1e-4, relative=True)
    hess = 0.5 * (hess + hess.T)
    g = grad(x)
    gnorm = float(np.max(np.abs(g)))
    return dc_replace(lap, x=x, loglik=-float(res.fun), hessian=hess, grad_norm=gnorm,
                      converged=bool(gnorm < 1e-3 and math.isfinite(res.fun)),
                      at_boundary=bool(x[0] <= LOG_S_BOUNDS[0] + 1e-6),
                      message=f"nested AGQ {nagq} from the Laplace fit: L-BFGS-B {res.message}; max |gradient| "
                              f"{gnorm:.2g} (central differences)",
                      extra={**lap.extra, "generation_at_boundary": bool(x[-1] <= LOG_S_BOUNDS[0] + 1e-6)})


# ------------------------------------------------------------------------------------------ coding and fit
def separated_cells(d: Any, cat: np.ndarray, values: np.ndarray) -> dict[int, Any]:
    """The (model, judge) cells whose every call gets the lowest or the highest score, keyed by cell code
    ``model * K + judge``: complete separation (:func:`cjstats.estimators.identification.ordinal_separation`
    with each cell as a "judge"), so the cell's latent mean is +-inf. ``d``: :func:`joint_data` of the rows,
    ``cat``/``values``: their category codes and the distinct scores."""
    from dataclasses import replace as dc_replace

    p, k = d.n_models, d.n_judges
    cellcode = d.model * k + d.judge
    labels = [f"{m}:{j}" for m in d.models for j in d.judges]
    findings = [f for f in ordinal_separation(cat, cellcode, labels, values, thresholds="shared")
                if f.judge is not None]
    counts = np.bincount(cellcode, minlength=p * k)
    separated = {}
    for f in findings:
        ci_ = labels.index(f.judge)
        m, j = d.models[ci_ // k], d.judges[ci_ % k]
        side = "top" if f.limit > 0 else "bottom"
        separated[ci_] = dc_replace(f, parameter=f"eta[{m}, {j}]", reason=(
            f"model '{m}' gets {f.value:g} (the {side} score) from judge '{j}' on all {int(counts[ci_])} calls: "
            f"complete separation, so its latent cell mean is {'+' if f.limit > 0 else '-'}inf"),
            fix=f"report model '{m}''s raw rate, drop it, or use method='bayes' (prior-driven effects)")
    return separated


def first_separated_cell(rows: Any) -> tuple[str, str, float] | None:
    """(model, judge, score) of the first separated cell of the rows (:func:`separated_cells`), or None."""
    d = joint_data(rows)
    values, cat = np.unique(d.y, return_inverse=True)
    sep = separated_cells(d, cat, values)
    if not sep:
        return None
    cell = min(sep)
    return d.models[cell // d.n_judges], d.judges[cell % d.n_judges], float(sep[cell].value)


def _code(rows: Any, link: str, nagq: int) -> dict[str, Any]:
    """The coded rows, the separation findings and the nested problem of the kept rows."""
    d = joint_data(rows)
    p, k = d.n_models, d.n_judges
    values, cat = np.unique(d.y, return_inverse=True)
    if values.size > MAX_CATEGORIES:
        raise CjstatsError(f"Column 'score' takes {values.size} distinct values, but method='ordinal' fits one "
                           f"threshold per score category (at most {MAX_CATEGORIES}): it is for verdicts (0/1) and "
                           f"ratings (1-5, 1-10); use method='reml' for continuous scores.")
    cellcode = d.model * k + d.judge
    separated = separated_cells(d, cat, values)
    keep = ~np.isin(cellcode, list(separated))
    if not keep.any() or np.unique(cat[keep]).size < 2:
        raise CjstatsError("Every (model, judge) cell of these scores is in one category (or what is left after "
                           "the separated cells is): no threshold, model difference or variance is identified; report "
                           "the raw rates, or use method='bayes', whose priors keep the effects finite.")
    kept_cells = np.unique(cellcode[keep])
    jcode = np.searchsorted(kept_cells, cellcode[keep])
    vals_k, cat_k = np.unique(d.y[keep], return_inverse=True)
    s_lab, scen = np.unique(d.scenario[keep], return_inverse=True)
    c_lab, cell = np.unique(d.ms[keep], return_inverse=True)
    cell_scen = np.zeros(c_lab.size, dtype=np.int64)
    cell_scen[cell] = scen
    cell_model = np.zeros(c_lab.size, dtype=np.int64)
    cell_model[cell] = d.model[keep]
    q = make_nested(cat_k, scen, cell, jcode, cell_scen, n_scenarios=s_lab.size, n_judges=kept_cells.size,
                    n_categories=vals_k.size, link=link, thresholds="shared")
    gens = int(pd.Series(d.cell).groupby(d.ms).nunique().max())
    return {"d": d, "values": vals_k, "values_all": values, "separated": separated, "kept_cells": kept_cells,
            "q": q, "generations_max": gens, "n_scenarios": int(len(d.scenarios)), "cell_model": cell_model}


def _start(q: NestedProblem, d: Any, keep_cells: np.ndarray, cat: np.ndarray) -> np.ndarray:
    """Start values: thresholds from the pooled category shares, cell offsets from each cell's mean probit/logit
    shift against the reference cell, s_a = s_b = 0.5."""
    from cjstats.estimators.ordinal_ml.links import quantile
    from cjstats.estimators.ordinal_ml.optimise import start_values

    x = np.concatenate([start_values(q.base), [math.log(0.5)]])
    p = q.base
    j = p.n_categories
    # mean latent score of each cell: -F^-1(share at or below the middle category), relative to the first cell
    below = np.bincount(p.judge, weights=(p.category <= (j - 2) // 2).astype(float), minlength=p.n_judges)
    tot = np.bincount(p.judge, minlength=p.n_judges)
    share = np.clip((below + 0.5) / (tot + 1.0), 0.02, 0.98)
    loc = -quantile(share, p.link)
    x[1:p.n_judges] = loc[1:] - loc[0]
    return x


def _eta(q: NestedProblem, x: np.ndarray) -> np.ndarray:
    """Cell offsets of the kept cells minus the mean threshold: the reported latent cell means."""
    _, gamma, theta = unpack(q.base, x[:-1])
    return gamma - float(np.mean(theta[0]))


def _var_row(component: str, log_s: float, se_log: float, z: float, at: bool, prof: tuple[float, float] | None,
             note: str = "") -> ComponentRow:
    s2 = math.exp(2 * log_s)
    if at:
        lo, hi = prof if prof is not None else (0.0, math.nan)
        return ComponentRow(component, 0.0, 0.0, hi, math.nan, "profile likelihood (boundary estimate)", "panel",
                            0.0, True, True, note)
    se = 2 * s2 * se_log
    return ComponentRow(component, s2, math.exp(2 * (log_s - z * se_log)), math.exp(2 * (log_s + z * se_log)), se,
                        "Wald on log s (observed information)", "panel", s2, False, True, note)


def _ss_row(component: str, vec: np.ndarray, cmat: np.ndarray, cov: np.ndarray, denom: float, z: float,
            view: str, level: float, df: float | None, note: str) -> ComponentRow:
    """sum of squares of the effects cmat @ eta over ``denom``, bias-corrected by tr(C Sigma C')."""
    e = cmat @ vec
    cc = cmat @ cov @ cmat.T
    raw = (float(e @ e) - float(np.trace(cc))) / denom
    est = max(raw, 0.0)
    if df is None:          # panel: delta-method Wald, truncated at 0
        grad = 2 * cmat.T @ e / denom
        se = math.sqrt(max(float(grad @ cov @ grad), 0.0))
        return ComponentRow(component, est, max(est - z * se, 0.0), est + z * se, se,
                            "Wald (delta method), bias-corrected", view, raw, raw < 0, True, note)
    a = (1 - level) / 2
    lo, hi = df * est / _dist.chi2_ppf(1 - a, df), df * est / _dist.chi2_ppf(a, df)
    return ComponentRow(component, est, lo, hi, est * math.sqrt(2 / df), f"chi2_{df:g} (effects as known)", view,
                        raw, raw < 0, True, note)


def fit(stats: Any, *, ci_level: float, seed: int | None = None, rows: Any = None, model_scenario: str = "pooled",
        link: str = "probit", nagq: int = 1) -> JointFit:
    """The joint backend protocol: the ML fit of the joint cumulative-link mixed model (module docstring) to the
    score rows ``rows`` (needed: the likelihood is a product over calls). ``link``: ``"probit"`` or ``"logit"``.
    ``nagq``: 1 (default) the Laplace approximation (as glmer and clmm), Q > 1 nested adaptive Gauss-Hermite
    quadrature with Q nodes per level. Deterministic (``seed`` unused)."""
    check_choice("link", link, LINKS, caller="fit_joint")
    if model_scenario != "pooled":
        raise CjstatsError(f"model_scenario={model_scenario!r} is not fitted by method='ordinal'; use 'pooled'.")
    if not isinstance(nagq, int | np.integer) or not 1 <= int(nagq) <= 25:
        raise CjstatsError(f"The 'nagq' argument of fit_joint must be an integer from 1 (Laplace) to 25 (nested "
                           f"quadrature nodes per level). Got {nagq!r} instead.")
    js, rows = joint_stats(JointSource(stats, rows) if not isinstance(stats, JointSource) else stats,
                           "compare_models")
    if rows is None:
        raise CjstatsError("method='ordinal' fits the score rows (the likelihood is a product over judge calls), "
                           "but it was given statistics without rows; pass the table, or use method='reml'.")
    c = _code(rows, link, int(nagq))
    d, q, sep, kept = c["d"], c["q"], c["separated"], c["kept_cells"]
    P, K = d.n_models, d.n_judges
    labels = [f"{m}:{j}" for m in d.models for j in d.judges]
    if sep:
        warn(f"compare_models: {len(sep)} model x judge cell{'s are' if len(sep) > 1 else ' is'} separated ("
             + "; ".join(f.reason for f in sep.values())
             + "): their latent cell means are +-inf and are reported so; the rest is fitted without their rows (the "
             "exact limit of the maximum-likelihood fit); models with such a cell have no finite latent mean or "
             "difference.", IdentificationWarning, stacklevel=4)
    if c["generations_max"] > 1:
        warn(f"method='ordinal' fits no generation term, but some (model, scenario) has {c['generations_max']} "
             f"generations: they are treated as independent calls given the scenario and model effects, which "
             f"understates the standard errors if generations differ; score or average one generation per "
             f"(model, scenario) for the model as stated.", CjstatsWarning, stacklevel=4)
    x0 = _start(q, d, kept, q.base.category)
    uf = fit_nested(q, x0)
    lap_loglik = uf.loglik
    if int(nagq) > 1:
        uf = _fit_agq(q, uf, int(nagq))
    x = uf.x
    held = ([0] if uf.at_boundary else []) + ([x.size - 1] if uf.extra.get("generation_at_boundary") else [])
    cov_x = pinv_held(uf.hessian, held)
    cov_x = 0.5 * (cov_x + cov_x.T)
    level = ci_level
    z = float(_dist.norm_ppf(0.5 + level / 2))

    # latent cell means and their covariance (Jacobian of eta in x: linear except the threshold gaps)
    jac = central_difference(lambda xx: _eta(q, xx), x, 1e-6)
    eta_k = _eta(q, x)
    cov_k = jac @ cov_x @ jac.T
    eta = np.full(P * K, np.nan)
    eta[kept] = eta_k
    for ci_, f in sep.items():
        eta[ci_] = f.limit
    cov = np.zeros((P * K, P * K))
    cov[np.ix_(kept, kept)] = cov_k
    E = eta.reshape(P, K)

    # components
    se_x = np.sqrt(np.maximum(np.diag(cov_x), 0.0))
    rows_out: list[tuple[str, ComponentRow]] = []
    bad_models = sorted({ci_ // K for ci_ in sep})
    for pi, name in enumerate(d.models):
        if pi in bad_models:
            why = "; ".join(f.reason for ci_, f in sep.items() if ci_ // K == pi)
            rows_out.append((name, ComponentRow.not_identifiable("mu", f"not identified: {why}")))
            continue
        cvec = np.zeros(P * K)
        cvec[pi * K:(pi + 1) * K] = 1.0 / K
        m = float(E[pi].mean())
        s = math.sqrt(max(float(cvec @ cov @ cvec), 0.0))
        rows_out.append((name, ComponentRow("mu", m, m - z * s, m + z * s, s, "Wald (observed information)", "panel",
                                            m, False, True, f"latent scale ({link}); expected scores: "
                                                            "compare_models(...).score_means")))
    J = JOINT_LABEL
    prof_a = prof_b = None
    if uf.at_boundary or uf.extra.get("generation_at_boundary"):
        fit_for_profile = uf if int(nagq) == 1 else None
        if fit_for_profile is not None:
            def prof(index: int) -> tuple[float, float] | None:
                try:
                    return profile_nested(q, uf, level, index, at_boundary=True)
                except ValueError:        # no sign change found: the interval's upper limit is left unstated
                    return None

            if uf.at_boundary:
                prof_a = prof(0)
            if uf.extra.get("generation_at_boundary"):
                prof_b = prof(-1)
    rows_out.append((J, _var_row("scenario", float(x[0]), float(se_x[0]), z, uf.at_boundary, prof_a)))
    m1 = "" if c["generations_max"] > 1 else "m = 1: holds s2_model_scenario + s2_generation"
    rows_out.append((J, _var_row("model_scenario", float(x[-1]), float(se_x[-1]), z,
                                 bool(uf.extra.get("generation_at_boundary")), prof_b, m1)))
    gen_note = ("not identifiable: one generation per (model, scenario) (m = 1)" if c["generations_max"] == 1 else
                "not fitted: method='ordinal' has no generation term (generations treated as independent calls)")
    rows_out.append((J, ComponentRow.not_identifiable("generation", gen_note)))
    rv = RESIDUAL_VARIANCE[link]
    rows_out.append((J, ComponentRow("residual", rv, rv, rv, 0.0, f"fixed by the {link} link (latent scale)",
                                     "panel", rv, False, True, "the unit of the latent scale")))
    # judge offsets and the judge x model interaction, as linear maps of vec(eta) (model-major)
    cj_ = np.kron(np.ones((1, P)) / P, np.eye(K)) - np.ones((K, P * K)) / (P * K)          # (K, PK)
    ci_mat = np.kron(np.eye(P) - 1.0 / P, np.eye(K) - 1.0 / K)                             # (PK, PK)
    dfj, dfi = K - 1, (P - 1) * (K - 1)
    if sep:
        why = "not identified: a model x judge cell is separated (its cell mean is +-inf)"
        rows_out += [(J, ComponentRow.not_identifiable("judge_panel", why)),
                     (J, ComponentRow.not_identifiable("judge_population", why, view="population")),
                     (J, ComponentRow.not_identifiable("judge_model", why)),
                     (J, ComponentRow.not_identifiable("judge_model", why, view="population"))]
        s2j = s2jm = 0.0
        test = {"test": "Wald chi2", "statistic": math.nan, "df1": dfi, "p_value": math.nan}
    else:
        jp = _ss_row("judge_panel", eta, cj_, cov, K, z, "panel", level, None, "latent scale")
        jpop = _ss_row("judge_population", eta, cj_, cov, dfj, z, "population", level, dfj, "latent scale")
        jm = _ss_row("judge_model", eta, ci_mat, cov, P * K, z, "panel", level, None, "latent scale")
        jmpop = _ss_row("judge_model", eta, ci_mat, cov, dfi, z, "population", level, dfi, "latent scale")
        rows_out += [(J, jp), (J, jpop), (J, jm), (J, jmpop)]
        s2j, s2jm = jpop.estimate, jmpop.estimate
        gp = ci_mat @ eta
        w_stat = float(gp @ np.linalg.pinv(ci_mat @ cov @ ci_mat.T, rcond=1e-10) @ gp)
        test = {"test": "Wald chi2", "statistic": w_stat, "df1": dfi, "p_value": float(_dist.chi2_sf(w_stat, dfi))}
    covariance = JointCovariance.reml(cov, P, K, s2_judge_model=s2jm, s2_judge=s2j,
                                      df_structure=(math.inf, math.inf, math.inf), df_population=math.inf)
    diag = {"n": c["n_scenarios"], "p": P, "k": K, "link": link, "nagq": int(nagq),
            "integration": "Laplace" if int(nagq) == 1 else f"nested AGQ {int(nagq)}",
            "loglik": float(uf.loglik), "loglik_laplace": float(lap_loglik), "converged": bool(uf.converged),
            "message": uf.message, "x": x.tolist(), "x_covariance": cov_x.tolist(),
            "values": c["values"].tolist(), "n_categories": int(c["values"].size),
            "kept_cells": kept.tolist(), "cell_labels": labels, "has_generation": False,
            "generations_max": c["generations_max"], "n_cells": int(np.unique(c["d"].cell).size),
            "identification": [{"parameter": f.parameter, "reason": f.reason, "fix": f.fix,
                                "limit": f.limit} for f in sep.values()],
            "cell_counts": np.bincount(d.model * K + d.judge, minlength=P * K).reshape(P, K).tolist()}
    return JointFit(method="ordinal", models=d.models, judges=d.judges, cell_means=E,
                    components=components_frame(rows_out, method="ordinal", ci_level=level),
                    tests={"judge_model": test}, ci_level=level, diagnostics=diag, covariance=covariance)


# ------------------------------------------------------------------------------------------ score scale
def _score_means(x: np.ndarray, n_kept: int, n_cat: int, link: str, values: np.ndarray, kept: np.ndarray,
                 P: int, K: int) -> np.ndarray:
    """Each model's expected score for a new scenario and the panel (NaN for a model with a separated cell)."""
    from cjstats.results.likelihoods import expected_score
    from cjstats.estimators.ordinal_ml.likelihood import make_problem

    pb = make_problem(np.zeros(0), np.zeros(0), np.zeros(0), n_scenarios=1, n_judges=n_kept, n_categories=n_cat,
                      link=link, thresholds="shared", nagq=1)
    _, gamma, theta = unpack(pb, x[:-1])
    s2 = math.exp(2 * x[0]) + math.exp(2 * x[-1])
    full = np.full(P * K, np.nan)
    full[kept] = gamma
    out = np.full(P, np.nan)
    for p in range(P):
        g = full[p * K:(p + 1) * K]
        if np.all(np.isfinite(g)):
            out[p] = float(expected_score(theta[0][None, :], values, g[None, :], np.array([s2]), link=link)[0])
    return out


def score_scale(fit: JointFit, level: float | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    r"""The score-scale answers of an ordinal joint fit: (``means``, ``differences``).

    ``means``: per model the expected score (the pass rate for 0/1 verdicts) of a new scenario scored by the
    panel, marginal over the scenario and model x scenario effects (module docstring), with a delta-method
    standard error and a Wald interval on the logit of its position in the score range (so it stays inside it).
    ``differences``: E_a - E_b for every pair (a ranked above b by the latent means, as
    :func:`cjstats.compare_models` orders them), with delta-method standard errors, normal-quantile Wald intervals
    and two-sided z tests. The gradient is a central difference (step 1e-5) in the optimiser's parameters and
    their covariance the inverse observed information."""
    if fit.method != "ordinal":
        raise CjstatsError(f"score_scale reads an ordinal joint fit (method='ordinal'); got method='{fit.method}'.")
    dg = fit.diagnostics
    lvl = float(fit.ci_level) if level is None else float(level)
    z = float(_dist.norm_ppf(0.5 + lvl / 2))
    x = np.asarray(dg["x"], dtype=np.float64)
    cov_x = np.asarray(dg["x_covariance"], dtype=np.float64)
    values = np.asarray(dg["values"], dtype=np.float64)
    kept = np.asarray(dg["kept_cells"], dtype=np.int64)
    P, K = len(fit.models), len(fit.judges)

    def fn(xx: np.ndarray) -> np.ndarray:
        return _score_means(xx, kept.size, values.size, dg["link"], values, kept, P, K)

    means = fn(x)
    grad = central_difference(fn, x, 1e-5)                     # (P, dim x)
    cov_m = grad @ cov_x @ grad.T
    se = np.sqrt(np.maximum(np.diag(cov_m), 0.0))
    lo_v, hi_v = float(values[0]), float(values[-1])
    u = (means - lo_v) / (hi_v - lo_v)
    with np.errstate(divide="ignore", invalid="ignore"):
        lu = np.log(u / (1 - u))
        sl = se / ((hi_v - lo_v) * u * (1 - u))
        lower = lo_v + (hi_v - lo_v) / (1 + np.exp(-(lu - z * sl)))
        upper = lo_v + (hi_v - lo_v) / (1 + np.exp(-(lu + z * sl)))
    what = "pass_rate" if values.size == 2 and lo_v == 0 and hi_v == 1 else "expected_score"
    mframe = pd.DataFrame({"model": list(fit.models), "estimate": means, "std_error": se, "lower": lower,
                           "upper": upper, "ci_level": lvl, "quantity": what,
                           "note": "new scenario, panel of judges; marginal over the scenario effects"})
    order = list(np.argsort(-fit.model_means(), kind="stable"))
    recs = []
    for ia, a in enumerate(order):
        for b in order[ia + 1:]:
            dif = float(means[a] - means[b])
            s = math.sqrt(max(float(cov_m[a, a] + cov_m[b, b] - 2 * cov_m[a, b]), 0.0))
            pv = float(2 * _dist.norm_sf(abs(dif) / s)) if s > 0 else math.nan
            recs.append({"model_a": fit.models[a], "model_b": fit.models[b], "difference": dif, "std_error": s,
                         "lower": dif - z * s, "upper": dif + z * s, "p_value": pv, "ci_level": lvl,
                         "quantity": what})
    return mframe, pd.DataFrame(recs)
