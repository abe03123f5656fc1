r"""How reliable a ranking of models is: G and D studies (Brennan 2001) and replication of the ranking.

The object of measurement is the model p; scenarios i, judges l and generations (nested in p x i) are the
facets. The joint model (docs/estimands.md, "Several models")

    X_pijl = mu_p + alpha_i + (alpha p)_pi + beta_pij + gamma_l + (gamma p)_pl + eps_pijl

is Brennan's p x i x l design with generations nested in p x i (the p x i x l interaction is inside eps). A
benchmark scores each model by its mean over n scenarios, m generations per (model, scenario) and k judges per
generation from a panel of K_tot, the judges chosen by a strategy (the decision layer's schemes: ``"all"``
judges, ``"random"`` k judges per generation, ``"cyclic"`` (CyclicJudge), ``"fixed"`` k judges throughout); every
model is scored in the same judge slots (the crossed design, a shared schedule).

Universe score variance (the spread of the models' true panel means)::

    sigma2_p = sum_p (mu_p - mean mu)^2 / (P - 1),

estimated as the variance of the fitted model means minus their sampling error, [x'Cx - tr(C Sigma)]/(P - 1)
(C = I - J/P, Sigma the covariance of the model means), with standard error sqrt(2 tr((C Sigma)^2) +
4 x'C Sigma C x)/(P - 1) (the variance of a normal quadratic form); from posterior draws of the means (Bayes),
the draws of that variance.

Error variances for a design d: each term's coefficient c_t(d) comes from the decision layer's one registry
(:data:`cjstats.decisions.components.TERM_CONTRIBUTIONS`, scenarios resampled), and

    relative  sigma2(delta) = c_ms s2_model_scenario + c_gen s2_generation + c_res s2_residual + c_j P/(P-1) s2_judge_model
    absolute  sigma2(Delta) = c_sc s2_scenario + c_ms s2_model_scenario + c_gen s2_generation + c_res s2_residual
                              + c_j (s2_judge_panel + s2_judge_model)

    E rho^2 = sigma2_p / (sigma2_p + sigma2(delta)),   Phi = sigma2_p / (sigma2_p + sigma2(Delta)).

Relative error holds the terms that differ between models (the shared scenario and judge offsets cancel from a
ranking); absolute error is Var(X_p - mu_p), averaged over the models. With the judges of the fit as the universe
of judges (``judges="panel"``) the judge x model effects are fixed and centred over the models, so their sample
variance over the P models is P/(P - 1) times their mean square (``judge_model`` is a mean over the P x K table).
With judges drawn afresh from a population (``judges="population"``: Brennan's random facet), a new panel of K_tot
judges has offsets u_l ~ (0, s2_u) and the judge terms' coefficient is 1/K_tot + (K_tot - 1)/K_tot c_j(d) (the
new panel's mean, plus the registry's within-panel part at E[panel variance] = (K_tot - 1)/K_tot s2_u); the
universe score is then the population-judge mean, whose variance is the panel one minus s2_judge_model/K_fit.

For the fully crossed p x I x L design (``strategy="fixed"``, k judges, m = 1, judges a population) these are
Brennan's (2001, Table 4.3): sigma2(delta) = s2_pi/n + s2_pl/k + s2_pil,e/(nk) and sigma2(Delta) = sigma2(delta)
+ s2_i/n + s2_l/k + s2_il,e/(nk) (with s2_il inside our residual).

Per-model fits (:func:`cjstats.estimate`) are refused: each model's ``scenario`` variance there is
s2_scenario + s2_model_scenario (the shared scenario effects alpha_i, which cancel from a ranking, and the model x
scenario effects, which do not, in one number), and the fits carry no covariance between the models' means (the
shared scenarios and judges make them covary), so neither sigma2(delta) nor sigma2_p is identified. Every backend
has a joint fit (:func:`cjstats.fit_joint`), which identifies both.

Replication (:func:`replication`) simulates fresh benchmarks from the fit with the true parameters drawn from
their uncertainty. With the models as random (``models="random"``, the default: the G study's universe of models,
mu_p ~ N(m, tau^2) with m flat), the true cell means are drawn from their posterior given the estimates: the
flat-prior draws eta ~ N(eta_hat, Sigma) (or a Bayes fit's posterior draws) are conditioned on the prior's
pseudo-observation 0 = C L eta + tau e (e ~ N(0, I), L the row means, C = I - J/P) by Matheron's rule,
eta* = eta - M (G + tau^2 I)^+ (C L eta + tau e), M = Sigma L'C, G = C L Sigma L'C, which shrinks the
differences of the model means by their reliability and undoes the winner's curse of the observed top model.
tau^2 is drawn from its posterior under a flat prior on tau: with the contrasts rotated to z = (UW)'x,
independent N(0, tau^2 + d_j) (UW diag(d) (UW)' = G), log p(tau | x) = -1/2 sum_j [log(tau^2 + d_j) +
z_j^2/(tau^2 + d_j)], on a grid. ``models="fixed"`` keeps the flat-prior draws.

Intervals: parametric draws of every component, a scaled chi-square with Satterthwaite's degrees of freedom
nu = 2 est^2/SE^2 (est x chi2_nu/nu; a component estimated at 0 is held at 0), drawn independently, and the
universe variance the same way (or from the posterior draws of the model means); percentile intervals of the
coefficients over the draws.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats._defaults import JOINT_LABEL
from cjstats._validate import check_choice, check_positive_int, resolve_ci_level
from cjstats.decisions.components import SCHEMES, Components, VarianceDesign, score_variance, term_coefficients
from cjstats.exceptions import CjstatsError
from cjstats.results.gstudy import GStudy, Replication

__all__ = ["g_study", "replication", "error_variances", "JUDGE_VIEWS"]

#: The universe of judges: the fit's panel (judges fixed) or a population the judges are drawn from.
JUDGE_VIEWS: tuple[str, ...] = ("panel", "population")

_RELATIVE = ("model_scenario", "generation", "residual", "judge_model")
_ABSOLUTE = ("scenario", "model_scenario", "generation", "residual", "judge_panel", "judge_model")
_JUDGE_TERMS = ("judge_panel", "judge_model")


# ------------------------------------------------------------------------------------------ the fit's inputs
@dataclass(frozen=True)
class _Inputs:
    models: tuple[str, ...]
    means: np.ndarray            # (P,)
    mean_cov: np.ndarray         # (P, P), panel view
    cell_means: np.ndarray       # (P, K)
    eta_cov: np.ndarray          # (PK, PK), panel view
    eta_draws: np.ndarray | None
    comps: dict[str, tuple[float, float]]     # name -> (estimate, standard error); judge terms per view
    k_fit: int
    n_fit: int
    m_fit: int
    method: str
    scale: str
    note: str


def _joint_inputs(fit: Any, caller: str) -> _Inputs:
    from cjstats.results.components import VarianceComponents

    if isinstance(fit, VarianceComponents):     # per-model fits: E rho^2 is not identified (module docstring)
        raise CjstatsError(f"{caller} needs the models fitted jointly, but got a per-model fit (cj.estimate): its "
                           f"scenario variance holds both the scenario effects every model shares, which cancel "
                           f"from a ranking, and the model x scenario effects, which do not, and it has no "
                           f"covariance between the models' means; fit the same table with "
                           f"cj.fit_joint(scores, '{fit.method}') or pass compare_models(scores, ...).fit.")
    if not all(hasattr(fit, a) for a in ("cell_means", "covariance", "components", "model_means")):
        raise CjstatsError(f"The 'fit' argument of {caller} must be a joint fit of several models (from "
                           f"cjstats.fit_joint, or compare_models(...).fit). Got {type(fit).__name__} instead.")
    if fit.covariance is None:
        raise CjstatsError(f"This joint fit carries no covariance of its cell means, which {caller} needs; refit "
                           f"it with cjstats.fit_joint.")
    t = fit.components
    joint = t[t["model"].astype(str) == JOINT_LABEL]

    def row(name: str, view: str = "panel") -> tuple[float, float]:
        r = joint[(joint["component"] == name) & (joint["view"] == view)]
        if r.empty:          # per-model variances (model_scenario="per_model"): their mean over the models
            r = t[(t["component"] == name) & (t["view"] == view)]
        if r.empty or not bool(r["identifiable"].astype(bool).all()):
            return 0.0, 0.0
        est = float(np.mean(np.maximum(r["estimate"].to_numpy(float), 0.0)))
        se = float(np.sqrt(np.mean(np.square(r["std_error"].to_numpy(float)))) / math.sqrt(len(r)))
        return est, (se if math.isfinite(se) else 0.0)

    comps = {"scenario": row("scenario"), "model_scenario": row("model_scenario"), "generation": row("generation"),
             "residual": row("residual"), "judge_panel": row("judge_panel"), "judge_model": row("judge_model"),
             "judge_population": row("judge_population", "population"),
             "judge_model_population": row("judge_model", "population")}
    gen = t[t["component"] == "generation"]
    note = ("" if gen.empty or bool(gen["identifiable"].astype(bool).all())
            else "one generation per (model, scenario): generation is inside model_scenario")
    p, k = fit.cell_means.shape
    diag = fit.diagnostics
    n_fit = int(diag.get("n") or diag.get("n_scenarios") or 1)
    m_fit = diag.get("m")
    if m_fit is None and diag.get("n_cells") is not None:
        m_fit = round(float(diag["n_cells"]) / (p * n_fit))
    m_fit = max(int(m_fit or 1), 1)
    return _Inputs(models=tuple(fit.models), means=np.asarray(fit.model_means(), float),
                   mean_cov=np.asarray(fit.covariance.model_mean_covariance("panel"), float),
                   cell_means=np.asarray(fit.cell_means, float),
                   eta_cov=np.asarray(fit.covariance.sigma("panel"), float),
                   eta_draws=None if fit.draws is None else np.asarray(fit.draws, float), comps=comps,
                   k_fit=int(k), n_fit=n_fit, m_fit=m_fit, method=str(fit.method),
                   scale=str(getattr(fit, "scale", "score")), note=note)


def universe_variance(means: np.ndarray, cov: np.ndarray) -> tuple[float, float]:
    """sigma2_p = [x'Cx - tr(C Sigma)]/(P - 1) (C = I - J/P; may be negative: not truncated here) and its
    standard error sqrt(2 tr((C Sigma)^2) + 4 x'C Sigma C x)/(P - 1) (module docstring)."""
    x = np.asarray(means, float)
    p = x.size
    c = np.eye(p) - 1.0 / p
    cs = c @ cov
    cx = c @ x
    est = (cx @ cx - np.trace(cs)) / (p - 1)
    var = 2.0 * np.trace(cs @ cs) + 4.0 * cx @ cov @ cx
    return float(est), float(math.sqrt(max(var, 0.0)) / (p - 1))


def _chisq_draws(est: float, se: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """est x chi2_nu / nu with nu = 2 est^2/se^2 (Satterthwaite), held at est when est <= 0 or se == 0."""
    est = max(float(est), 0.0)
    if est <= 0.0 or not se > 0.0:
        return np.full(size, est)
    nu = 2.0 * est * est / (se * se)
    return est * rng.chisquare(nu, size) / nu


# --------------------------------------------------------------------------------------------- the designs
def _design(strategy: str, n: int, m: int, k: int, k_total: int) -> VarianceDesign:
    if strategy == "all":
        return VarianceDesign("all", n=n, k_total=k_total, budget=m * k_total)
    return VarianceDesign(strategy, n=n, k_total=k_total, m=m, k=k)


def _grid(n: Any, m: Any, k: Any, strategy: Any, designs: Any, k_total: int, defaults: tuple[int, int],
          caller: str) -> list[tuple[str, int, int, int]]:
    """(strategy, n, m, k) rows: the product of the given values, or the rows of ``designs``."""
    if designs is not None:
        frame = pd.DataFrame(designs)
        if "strategy" not in frame.columns or "n" not in frame.columns:
            raise CjstatsError(f"The 'designs' argument of {caller} needs columns 'strategy' and 'n' (and optionally "
                               f"'m', 'k'). Got {list(frame.columns)} instead.")
        rows = [(str(r["strategy"]), r["n"], r.get("m", None), r.get("k", None)) for _, r in frame.iterrows()]
    else:
        as_list = (lambda v: [None] if v is None else (list(v) if isinstance(v, (Sequence, np.ndarray))
                                                        and not isinstance(v, str) else [v]))
        strategies = [strategy] if isinstance(strategy, str) else list(strategy)
        rows = list(itertools.product(strategies, as_list(n), as_list(m), as_list(k)))
    out = []
    for s, n_, m_, k_ in rows:
        check_choice("strategy", s, SCHEMES, caller=caller)
        n_ = defaults[0] if n_ is None or (isinstance(n_, float) and math.isnan(n_)) else n_
        m_ = defaults[1] if m_ is None or (isinstance(m_, float) and math.isnan(m_)) else m_
        if s == "all":
            k_ = k_total
        elif k_ is None or (isinstance(k_, float) and math.isnan(k_)):
            k_ = k_total if s == "fixed" else 1
        n_, m_, k_ = (check_positive_int(name, int(v) if isinstance(v, (float, np.floating)) and float(v).is_integer()
                                         else v, caller=caller) for name, v in (("n", n_), ("m", m_), ("k", k_)))
        if k_ > k_total:
            raise CjstatsError(f"The 'k' argument of {caller} must be at most k_total={k_total} (judges per "
                               f"generation from the panel). Got {k_} instead.")
        out.append((s, n_, m_, k_))
    return out


def _coefficients(design: VarianceDesign, judges: str) -> dict[str, float]:
    """Each term's coefficient in a model's score (scenarios resampled), from the registry; with judges drawn
    from a population the judge terms' coefficient is 1/K_tot + (K_tot - 1)/K_tot c_j (module docstring)."""
    c = {name: float(v) for name, v in term_coefficients(design, terms=_ABSOLUTE).items()}
    if judges == "population":
        kt = design.k_total
        for name in _JUDGE_TERMS:
            c[name] = 1.0 / kt + (kt - 1.0) / kt * c[name]
    return c


def _values(comps: Mapping[str, Any], judges: str, p: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The component values (floats or draw arrays) the relative and the absolute error read."""
    if judges == "panel":
        jp, jm = comps["judge_panel"], comps["judge_model"]
        jm_rel = jm * (p / (p - 1.0))      # fixed, centred over the models: their variance over P models
    else:
        jp, jm = comps["judge_population"], comps["judge_model_population"]
        jm_rel = jm
    base = {name: comps[name] for name in ("scenario", "model_scenario", "generation", "residual")}
    rel = {**{k_: base[k_] for k_ in ("model_scenario", "generation", "residual")}, "judge_model": jm_rel}
    ab = {**base, "judge_panel": jp, "judge_model": jm}
    return rel, ab


def error_variances(components: Mapping[str, float], design: VarianceDesign, *, n_models: int,
                    judges: Literal["panel", "population"] = "panel") -> tuple[float, float]:
    """sigma2(delta) and sigma2(Delta) of one design from point components (module docstring).

    ``components`` holds ``scenario, model_scenario, generation, residual`` and, for ``judges="panel"``,
    ``judge_panel, judge_model`` (panel view), for ``"population"`` ``judge_population`` and
    ``judge_model_population``. Panel view: the sums are :func:`~cjstats.decisions.components.score_variance` of a
    :class:`~cjstats.decisions.components.Components` vector of the relative and of the absolute terms.
    """
    check_choice("judges", judges, JUDGE_VIEWS, caller="error_variances")
    rel, ab = _values({k_: float(components.get(k_, 0.0)) for k_ in
                       ("scenario", "model_scenario", "generation", "residual", "judge_panel", "judge_model",
                        "judge_population", "judge_model_population")}, judges, int(n_models))
    if judges == "panel":
        return (score_variance(Components(rel), design), score_variance(Components(ab), design))
    c = _coefficients(design, judges)
    return (math.fsum(c[k_] * v for k_, v in rel.items()), math.fsum(c[k_] * v for k_, v in ab.items()))


# ----------------------------------------------------------------------------------------------- g_study
def _component_draws(inp: _Inputs, judges: str, n_draws: int, rng: np.random.Generator
                     ) -> tuple[dict[str, float], dict[str, np.ndarray], float, float, np.ndarray]:
    """Point components, their draws, the universe variance (estimate, SE) and its draws."""
    point = {k_: v[0] for k_, v in inp.comps.items()}
    draws = {k_: _chisq_draws(est, se, n_draws, rng) for k_, (est, se) in inp.comps.items()}
    jm_pop, jm_pop_se = inp.comps["judge_model_population"]
    shift = jm_pop / inp.k_fit if judges == "population" else 0.0
    if inp.eta_draws is not None:
        mu = inp.eta_draws.mean(axis=2)
        u = mu.var(axis=1, ddof=1)
        idx = rng.integers(0, u.size, n_draws)
        u_draws = u[idx] - (draws["judge_model_population"] / inp.k_fit if judges == "population" else 0.0)
        u_est, u_se = float(u.mean() - shift), float(u.std(ddof=1))
        return point, draws, u_est, u_se, np.maximum(u_draws, 0.0)
    u_est, u_se = universe_variance(inp.means, inp.mean_cov)
    if judges == "population":
        u_est, u_se = u_est - shift, math.hypot(u_se, jm_pop_se / inp.k_fit)
    return point, draws, u_est, u_se, _chisq_draws(u_est, u_se, n_draws, rng)


def g_study(fit: Any, *, n: Any = None, m: Any = None, k: Any = None, strategy: str | Sequence[str] = "all",
            k_total: int | None = None, judges: Literal["panel", "population"] = "panel", designs: Any = None,
            ci_level: float | None = None, n_draws: int = 4000, seed: int | None = 0) -> GStudy:
    """E rho^2 (relative: ranking the models) and Phi (absolute) of a benchmark's model scores, per design.

    Parameters
    ----------
    fit : JointFit
        A joint fit of the models (:func:`cjstats.fit_joint` or ``compare_models(...).fit``, any backend:
        ``anova``, ``reml``, ``bayes``, ``ordinal``). A per-model fit (:func:`cjstats.estimate`) is refused in
        one sentence: it does not identify E rho^2 (module docstring).
    n, m, k : int or sequence of int, optional
        Scenarios, generations per (model, scenario) and judges per generation; sequences give a D study over
        their product (with every ``strategy``). Defaults: the fit's n and m; k = K_tot for ``"all"`` and
        ``"fixed"``, 1 for ``"random"`` and ``"cyclic"`` (the paper's strategies B and C).
    strategy : str or sequence of str
        ``"all"`` (every judge scores each generation, strategy A), ``"random"`` (k random judges per
        generation, B), ``"cyclic"`` (CyclicJudge, C) or ``"fixed"`` (the same k judges throughout: Brennan's
        crossed p x I x L).
    k_total : int, optional
        The panel size; the fit's number of judges (the only one the panel view allows).
    judges : {"panel", "population"}
        The universe of judges: the fit's judges (fixed) or judges drawn afresh from a population.
    designs : DataFrame or list of dicts, optional
        Explicit designs (columns ``strategy, n`` and optionally ``m, k``) instead of the product.
    ci_level, n_draws, seed
        Level of the percentile intervals, number of parametric draws, and their seed.

    Returns
    -------
    GStudy
        ``.table`` one row per design (``e_rho2``, ``phi`` with intervals, the error variances and the universe
        score variance), ``.components`` the components used. Formulas: module docstring and docs/gstudy.md.
    """
    caller = "g_study"
    inp = _joint_inputs(fit, caller)
    check_choice("judges", judges, JUDGE_VIEWS, caller=caller)
    level = float(fit.ci_level) if ci_level is None else resolve_ci_level(ci_level)
    n_draws = check_positive_int("n_draws", n_draws, caller=caller)
    kt = inp.k_fit if k_total is None else check_positive_int("k_total", k_total, caller=caller)
    if judges == "panel" and kt != inp.k_fit:
        raise CjstatsError(f"The 'k_total' argument of {caller} must be the fit's {inp.k_fit} judges with "
                           f"judges='panel' (the panel is the universe of judges); pass judges='population' to "
                           f"plan for a panel of {kt} new judges.")
    rows = _grid(n, m, k, strategy, designs, kt, (inp.n_fit, inp.m_fit), caller)
    rng = np.random.default_rng(seed)
    point, draws, u_est, u_se, u_draws = _component_draws(inp, judges, n_draws, rng)
    u_point = max(u_est, 0.0)
    p = len(inp.models)
    rel_d, ab_d = _values(draws, judges, p)
    lo_q, hi_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2
    out = []
    for s, n_, m_, k_ in rows:
        design = _design(s, n_, m_, k_, kt)
        rel, ab = error_variances(point, design, n_models=p, judges=judges)
        c = _coefficients(design, judges)
        rel_s = sum(c[t] * v for t, v in rel_d.items())
        ab_s = sum(c[t] * v for t, v in ab_d.items())
        with np.errstate(invalid="ignore", divide="ignore"):
            g_s = np.where(u_draws + rel_s > 0, u_draws / (u_draws + rel_s), 0.0)
            f_s = np.where(u_draws + ab_s > 0, u_draws / (u_draws + ab_s), 0.0)
        coef = (lambda e: u_point / (u_point + e) if u_point + e > 0 else 0.0)
        out.append({"strategy": s, "n": n_, "m": m_, "k": k_, "k_total": kt,
                    "calls_per_scenario": int(design.calls), "universe": u_point, "relative_error": rel,
                    "absolute_error": ab, "e_rho2": coef(rel), "e_rho2_lower": float(np.percentile(g_s, lo_q)),
                    "e_rho2_upper": float(np.percentile(g_s, hi_q)), "phi": coef(ab),
                    "phi_lower": float(np.percentile(f_s, lo_q)), "phi_upper": float(np.percentile(f_s, hi_q)),
                    "scale": inp.scale, "judges": judges})
    jp, jm = (("judge_panel", "judge_model") if judges == "panel"
              else ("judge_population", "judge_model_population"))
    used = [("universe", u_est, u_se, True, True)] + [
        (name, *inp.comps[name], name in ("model_scenario", "generation", "residual", jm), True)
        for name in ("scenario", "model_scenario", "generation", "residual", jp, jm)]
    comp = pd.DataFrame([{"component": nm, "estimate": e, "std_error": se,
                          "df": (2 * e * e / (se * se)) if se > 0 and e > 0 else math.inf,
                          "relative": rl, "absolute": ab_} for nm, e, se, rl, ab_ in used])
    uncertainty = ("posterior draws of the model means; scaled chi-square (Satterthwaite df) draws of the "
                   "components" if inp.eta_draws is not None else
                   "scaled chi-square draws (Satterthwaite df from each estimate and standard error)")
    if inp.note:
        uncertainty += f"; {inp.note}"
    return GStudy(table=pd.DataFrame(out), components=comp, models=inp.models, method=inp.method, scale=inp.scale,
                  judges=judges, ci_level=level, n_draws=n_draws, uncertainty=uncertainty)


# ------------------------------------------------------------------------------------------- replication
def _judge_weights(strategy: str, n: int, m: int, k: int, kt: int, size: int, rng: np.random.Generator,
                   design: VarianceDesign) -> np.ndarray:
    """(size, K_tot) weights of the panel's judges in a model's score, one schedule per replication, shared by
    every model (the judges score every model in the same slots)."""
    if strategy == "all":              # m generations x every judge: each judge has weight 1/K_tot exactly
        return np.full((size, kt), 1.0 / kt)
    if strategy == "fixed":            # a random k-subset of the panel scores everything
        pick = np.argsort(rng.random((size, kt)), axis=1)[:, :k]
        w = np.zeros((size, kt))
        np.put_along_axis(w, pick, 1.0 / k, axis=1)
        return w
    if strategy == "cyclic":           # one rotation over T = nmk calls: q each, one more for a random r-subset
        t = n * m * k
        q, r = divmod(t, kt)
        extra = np.argsort(rng.random((size, kt)), axis=1) < r
        return (q + extra) / t
    if k == 1:                         # one random judge per generation: multinomial counts over nm generations
        return rng.multinomial(n * m, np.full(kt, 1.0 / kt), size=size) / (n * m)
    # k > 1 random judges per generation: normal weights with the scheme's exact covariance, c_j/K_tot (I - J/K_tot)
    c = float(term_coefficients(design, terms=("judge_panel",))["judge_panel"])
    z = rng.standard_normal((size, kt))
    return 1.0 / kt + math.sqrt(c / kt) * (z - z.mean(axis=1, keepdims=True))


def _kendall_tau(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-a between each row of x (S, P) and the vector y (P,) (no ties with continuous scores)."""
    a, b = np.triu_indices(y.size, 1)
    return (np.sign(x[:, a] - x[:, b]) * np.sign(y[a] - y[b])).mean(axis=1)


def _universe_posterior(means: np.ndarray, mean_cov: np.ndarray, size: int, rng: np.random.Generator
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draws of sigma2_p = tau^2 from its posterior with the models as draws mu_p ~ N(m, tau^2) (m flat, a flat
    prior on tau), and the eigenbasis it uses: with U (P, P - 1) orthonormal on the contrasts and
    U'C Sigma_mu C U = W diag(d) W', the rotated contrasts z = (UW)'x are independent N(0, tau^2 + d_j), so
    log p(tau | x) = -1/2 sum_j [log(tau^2 + d_j) + z_j^2/(tau^2 + d_j)] + const, evaluated on a grid of tau
    up to 4 sqrt(mean z^2 + max d) (with two models, one contrast, the flat prior alone leaves the posterior
    improper, and this bound is part of the prior). Returns (tau^2 draws, UW, d)."""
    x = np.asarray(means, float)
    p = x.size
    c = np.eye(p) - 1.0 / p
    cv, cu = np.linalg.eigh(c)
    u = cu[:, cv > 0.5]                                                # (P, P - 1): the contrasts
    d, w = np.linalg.eigh(u.T @ c @ mean_cov @ c @ u)
    d = np.clip(d, 0.0, None)
    uw = u @ w
    z = uw.T @ x
    top = 4.0 * math.sqrt(float(np.mean(z * z)) + float(d.max(initial=0.0))) + 1e-12
    grid = np.linspace(0.0, top, 801)
    t2 = grid[:, None] ** 2 + d[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = -0.5 * np.sum(np.log(t2) + np.where(t2 > 0, z[None, :] ** 2 / t2, np.inf), axis=1)
    logp = np.where(np.isfinite(logp), logp, -np.inf)
    if not np.isfinite(logp).any():                                    # every contrast estimated without error
        return np.full(size, float(np.mean(z * z))), uw, d
    prob = np.exp(logp - logp.max())
    prob /= prob.sum()
    step = grid[1] - grid[0]
    tau = grid[rng.choice(grid.size, size=size, p=prob)] + (rng.random(size) - 0.5) * step
    return np.abs(tau) ** 2, uw, d


def _shrink_to_models(eta: np.ndarray, inp: _Inputs, rng: np.random.Generator) -> np.ndarray:
    """Draws of the cell means with the models as random (mu_p ~ N(m, tau^2), m flat) from draws ``eta``
    (S, P, K) of the flat-prior posterior N(eta_hat, Sigma), by Matheron's rule (module docstring):
    eta* = eta - M (G + tau^2 I)^+ (C L eta + tau e), M = Sigma L'C, G = C L Sigma L'C = UW diag(d) (UW)',
    e ~ N(0, I), one tau^2 per draw from its posterior (:func:`_universe_posterior`)."""
    s_n, p, k = eta.shape
    lm = np.kron(np.eye(p), np.full((1, k), 1.0 / k))                # L: cell means -> model means
    c = np.eye(p) - 1.0 / p
    mm = inp.eta_cov @ lm.T @ c                                        # M (PK, P)
    s2, uw, d = _universe_posterior(inp.means, inp.mean_cov, s_n, rng)
    resid = eta.mean(axis=2) @ uw + np.sqrt(s2)[:, None] * rng.standard_normal((s_n, p - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(d[None, :] + s2[:, None] > 0, 1.0 / (d[None, :] + s2[:, None]), 0.0)
    step = (resid * inv) @ uw.T @ mm.T                                 # (S, PK)
    return eta - step.reshape(s_n, p, k)


def replication(fit: Any, *, n: Any = None, m: Any = None, k: Any = None, strategy: str | Sequence[str] = "all",
                judges: Literal["same", "new"] = "same", k_total: int | None = None, designs: Any = None,
                models: Literal["random", "fixed"] = "random", n_sims: int = 4000,
                seed: int | None = 0) -> Replication:
    """P(same top model) and E[Kendall tau] of a fresh replication of the benchmark, by simulation from the fit.

    Each of ``n_sims`` replications draws the parameters from the fit's uncertainty (the judge x model cell means
    from N(eta_hat, Sigma), or the posterior draws of a Bayes fit; the variance components as scaled chi-squares
    with Satterthwaite df), then a new benchmark: new scenarios, generations and calls (each model's mean holds
    normal noise of variance c_ms s2_model_scenario + c_gen s2_generation + c_res s2_residual, the coefficients
    from the decision registry for the design), and the judges' part sum_l w_l g_pl with a judge schedule drawn
    for the strategy and shared by the models. ``judges="same"``: the fit's panel, g_pl = eta_pl - mu_p as drawn;
    ``"new"``: a new panel of ``k_total`` judges with (gamma p)_pl ~ N(0, s2_judge_model (population)) (their
    main effects cancel from the ranking). The replicated ranking is compared with the observed one (the fit's
    model means): ``p_same_top`` = P(same top model), ``kendall_tau`` = E[tau], each with its Monte Carlo SE.
    Designs as in :func:`g_study`.

    ``models="random"`` (default; the G study's view of the object of measurement) draws the true means from
    their posterior with the models as draws from a universe of models, mu_p ~ N(m, sigma2_p) (sigma2_p the
    universe score variance, drawn from its uncertainty): the estimates are shrunk toward their mean by the
    reliability of the observed differences, which undoes the winner's curse of the observed top model, and the
    probabilities are calibrated (``tests/test_gstudy_calibration.py``). ``models="fixed"`` draws them from
    N(estimate, covariance) (a flat prior): overconfident when the models are close (two tied models: 0.70 for a
    true 0.5).
    """
    caller = "replication"
    inp = _joint_inputs(fit, caller)
    check_choice("judges", judges, ("same", "new"), caller=caller)
    check_choice("models", models, ("random", "fixed"), caller=caller)
    n_sims = check_positive_int("n_sims", n_sims, caller=caller)
    kt = inp.k_fit if k_total is None else check_positive_int("k_total", k_total, caller=caller)
    if judges == "same" and kt != inp.k_fit:
        raise CjstatsError(f"The 'k_total' argument of {caller} must be the fit's {inp.k_fit} judges with "
                           f"judges='same'; pass judges='new' for a panel of {kt} new judges.")
    rows = _grid(n, m, k, strategy, designs, kt, (inp.n_fit, inp.m_fit), caller)
    rng = np.random.default_rng(seed)
    p, kf = inp.cell_means.shape
    if inp.eta_draws is not None:
        eta = inp.eta_draws[rng.integers(0, inp.eta_draws.shape[0], n_sims)]
    else:
        cov = (inp.eta_cov + inp.eta_cov.T) / 2
        vals, vecs = np.linalg.eigh(cov)
        root = vecs * np.sqrt(np.clip(vals, 0.0, None))
        eta = inp.cell_means[None] + (rng.standard_normal((n_sims, p * kf)) @ root.T).reshape(n_sims, p, kf)
    comps = {k_: _chisq_draws(est, se, n_sims, rng) for k_, (est, se) in inp.comps.items()}
    if models == "random":
        eta = _shrink_to_models(eta, inp, rng)
    mu = eta.mean(axis=2)
    g = eta - mu[..., None]
    observed = inp.means
    top_obs = int(np.argmax(observed))
    out, tops = [], []
    for s, n_, m_, k_ in rows:
        design = _design(s, n_, m_, k_, kt)
        c = _coefficients(design, "panel")
        v = c["model_scenario"] * comps["model_scenario"] + c["generation"] * comps["generation"] + \
            c["residual"] * comps["residual"]
        x = mu + np.sqrt(v)[:, None] * rng.standard_normal((n_sims, p))
        w = _judge_weights(s, n_, m_, k_, kt, n_sims, rng, design)
        if judges == "same":
            x = x + np.einsum("sk,spk->sp", w, g)
        else:
            gp = rng.standard_normal((n_sims, p, kt)) * np.sqrt(comps["judge_model_population"])[:, None, None]
            x = x + np.einsum("sk,spk->sp", w, gp)
        top = np.argmax(x, axis=1)
        same = top == top_obs
        tau = _kendall_tau(x, observed)
        ps = float(same.mean())
        out.append({"strategy": s, "n": n_, "m": m_, "k": k_, "k_total": kt, "judges": judges,
                    "top_model": inp.models[top_obs], "p_same_top": ps,
                    "p_same_top_se": math.sqrt(ps * (1 - ps) / n_sims), "kendall_tau": float(tau.mean()),
                    "kendall_tau_se": float(tau.std(ddof=1) / math.sqrt(n_sims)) if n_sims > 1 else math.nan,
                    "n_sims": n_sims})
        counts = np.bincount(top, minlength=p) / n_sims
        tops += [{"strategy": s, "n": n_, "m": m_, "k": k_, "model": name, "p_top": float(counts[i])}
                 for i, name in enumerate(inp.models)]
    unc = ("posterior draws of the cell means" if inp.eta_draws is not None else
           "cell means from N(estimate, covariance)") + (
        ", shrunk as draws from a universe of models (models='random')" if models == "random" else
        " (models='fixed')") + "; components as scaled chi-squares (Satterthwaite df)"
    return Replication(table=pd.DataFrame(out), top=pd.DataFrame(tops), models=inp.models,
                       observed=tuple(float(x) for x in observed), method=inp.method, scale=inp.scale,
                       uncertainty=unc)
