r"""Maximum-likelihood cumulative link mixed model for discrete scores (``method="ordinal"``).

Per model (x criterion): P(Y <= k | alpha_i) = F(theta_k - gamma_l - alpha_i), alpha_i ~ N(0, s_a^2), F the
probit or logit link (:mod:`.likelihood` for the model and the adaptive Gauss-Hermite quadrature, :mod:`.optimise`
for the fit). Binary verdicts are the two-category case. Components are on the latent scale: ``scenario`` =
s_a^2 (Wald interval on log s_a, or ``interval="profile"``: the profile likelihood, also used for a boundary
estimate s_a ~ 0, where the Wald interval on log s_a is meaningless), ``judge_panel`` =
mean(gamma_l^2) of the panel-centred offsets (delta-method Wald interval, truncated at 0), ``judge_population``
= sum(gamma_l^2)/(K-1) with a chi2_{K-1} interval that ignores the offsets' estimation error, ``residual`` fixed
by the link (1 for probit, pi^2/3 for logit); ``mu`` on the score scale (the panel's expected score, delta method). With m > 1
generations (``generation=None`` or True) the nested generation effect beta_ij ~ N(0, s_b^2) is fitted too
(:mod:`.nested`, Laplace in the joint (a, b) integral) and the ``generation`` row reports s_b^2 (Wald on log s_b;
profile at a boundary). No scenario x judge term is fitted yet (its row says so). Agreement with ``ordinal::clmm``, ``clmm2(nominal = ~judge)`` and ``lme4::glmer``: docs/ordinal.md.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from cjstats import _dist
from cjstats._validate import check_choice
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.estimators.base import M1_NOTE, GroupFit, as_stats, fit_groups, rows_for
from cjstats._warnings import warn
from cjstats.estimators.identification import (
    Finding,
    as_records,
    mark,
    ordinal_separation,
    run_off,
    singular,
    unanimous,
    warn_findings,
)
from cjstats.estimators.ordinal_ml.likelihood import make_problem, unpack
from cjstats.estimators.ordinal_ml.links import LINKS, RESIDUAL_VARIANCE
from cjstats.estimators.ordinal_ml.nested import profile_nested
from cjstats.estimators.ordinal_ml.numdiff import central_difference, pinv_held
from cjstats.estimators.ordinal_ml.optimise import profile_scenario
from cjstats.estimators.ordinal_ml.unit import fit_patterns, fit_unit, fit_unit_nested
from cjstats.results.components import ComponentRow, ParameterCovariance

__all__ = ["fit", "fit_unit", "parameter_draws", "threshold_test"]


def _drop_judges(g: Any, separated: dict[str, Any]) -> Any:
    """The rows of ``g`` without the separated judges, recoded (judges, scenarios, cells 0-based and dense): the
    exact limit of the maximum-likelihood fit of everything else (:mod:`cjstats.estimators.identification`).
    One sentence when nothing is left to fit."""
    from types import SimpleNamespace

    labels = [str(lab) for lab in g.judge_labels]
    keep_j = [j for j, lab in enumerate(labels) if lab not in separated]
    if not keep_j:
        raise CjstatsError(f"Every judge of {g.label()} gives one score to every item ("
                           + ", ".join(f"'{lab}' {f.value:g}" for lab, f in separated.items())
                           + "): no judge offset, threshold or variance can be estimated from these scores; the "
                           "ordinal model needs judges that use at least two categories.")
    def single(value: float) -> CjstatsError:
        return CjstatsError(f"After the separated judges of {g.label()} ("
                            + ", ".join(f"'{lab}'" for lab in separated) + ", each in one category) the other "
                            f"judges' scores take a single value ({value:g}): nothing identifies the ordinal model; "
                            f"use method='bayes', whose priors keep the offsets finite, or report the raw rates.")

    if getattr(g, "pat", None) is not None:   # per-pattern counts (m = 1): the other judges' columns
        pat = g.pat.without_judges(keep_j)
        if pat.n_categories < 2:
            raise single(float(pat.values[0]))
        return _pattern_unit(pat, tuple(labels[j] for j in keep_j), g.label)
    judge = np.asarray(g.judge)
    keep = np.isin(judge, keep_j)
    y = np.asarray(g.y)[keep]
    if np.unique(y).size < 2:
        raise single(float(y[0]))
    new_j = np.full(len(labels), -1, dtype=np.int64)
    new_j[keep_j] = np.arange(len(keep_j))
    s_lab, scen = np.unique(np.asarray(g.scenario)[keep], return_inverse=True)
    c_lab, cell = np.unique(np.asarray(g.cell)[keep], return_inverse=True)
    cell_scen = np.zeros(c_lab.size, dtype=np.int64)
    cell_scen[cell] = scen
    per = np.bincount(cell_scen, minlength=s_lab.size)
    design = SimpleNamespace(n_scenarios=int(s_lab.size), n_judges=len(keep_j), generations_max=int(per.max()))
    return SimpleNamespace(y=y, scenario=scen, judge=new_j[judge[keep]], cell=cell, cell_scenario=cell_scen,
                           judge_labels=tuple(labels[j] for j in keep_j), design=design, label=g.label)


def _pattern_unit(pat: Any, judge_labels: tuple[str, ...], label: Any) -> Any:
    """One unit with one generation per scenario as its per-pattern counts ``pat``
    (:class:`cjstats.stats.ordinal.OrdinalPatterns`), with what the fit reads of a unit besides them."""
    from types import SimpleNamespace

    design = SimpleNamespace(n_scenarios=pat.n_scenarios, n_judges=len(judge_labels), generations_max=1)
    return SimpleNamespace(pat=pat, judge_labels=tuple(judge_labels), design=design, label=label)


def _unit_data(g: Any, rows: Any, engine: str, generation: bool | None) -> Any:
    """What the fit of unit ``g`` (its statistics) reads: with one generation per scenario its per-pattern counts
    (``g.patterns``, or built from the rows by the numpy engine's function when the statistics lack them), else
    its rows; one sentence when the rows it needs are not loaded."""
    from cjstats.stats.engines.numpy_engine import unit_patterns

    if int(g.design.generations_max) == 1:
        pat = getattr(g, "patterns", None)
        if pat is None:
            if rows is None:
                raise CjstatsError(f"method='ordinal' fits {g.label()} from its per-pattern counts, which these "
                                   f"statistics do not hold: build them with cj.stats.build_stats(..., "
                                   f"likelihood='cumulative') (cj.estimate does), or pass rows=scores.")
            pat = unit_patterns(rows_for(rows, g))
        return _pattern_unit(pat, tuple(str(j) for j in g.judge_labels), g.label)
    if rows is None:
        from cjstats.stats.engines import ENGINES

        what = ("with generation=False (generations as independent calls given the scenario)" if generation is False
                else "of the nested generation effect")
        head = (f"{g.label(capital=True)} has several generations per scenario (up to "
                f"{int(g.design.generations_max)}): the ordinal fit {what} needs the score rows")
        if engine in ENGINES and ENGINES[engine].capabilities.in_memory:
            raise CjstatsError(f"{head}; pass rows=scores (cj.estimate does this).")
        raise CjstatsError(f"{head}, which engine='{engine}' does not load (per-pattern counts are sufficient only "
                           f"with one generation per scenario); read the table with cj.read_scores and fit it with "
                           f"engine='numpy', or keep one generation per scenario.")
    return rows_for(rows, g)


def _mu_interval(mu: float, se: float, lo: float, hi: float, level: float, n: int) -> tuple[float, float, str]:
    r"""Interval for the panel's expected score mu in (lo, hi), the score range: Wald on the logit of
    u = (mu - lo)/(hi - lo), se_u = se / ((hi - lo) u (1 - u)) (delta method), with the t quantile on n - 1 df
    (n scenarios: mu is a mean over scenarios, and a normal quantile covers 0.905 at n = 20), mapped back, so the
    interval stays inside the score range."""
    q = float(_dist.t_ppf(0.5 + level / 2, max(n - 1, 1)))
    u = (mu - lo) / (hi - lo)
    if not (0.0 < u < 1.0) or not math.isfinite(se):
        return mu, mu, f"Wald (delta method, logit scale, t_{max(n - 1, 1)}): at the edge of the score range"
    lu = math.log(u / (1 - u))
    sl = se / ((hi - lo) * u * (1 - u))
    a, b = lu - q * sl, lu + q * sl
    return (lo + (hi - lo) * float(0.5 * (1 + np.tanh(a / 2))), lo + (hi - lo) * float(0.5 * (1 + np.tanh(b / 2))),
            f"Wald (delta method, logit scale, t_{max(n - 1, 1)})")


def _effective(x_full: np.ndarray) -> np.ndarray:
    """The m = 1 vector whose s_a^2 is s_a^2 + s_b^2 (a new scenario's single new generation sees both)."""
    xe = np.array(x_full[:-1], dtype=np.float64)
    xe[0] = 0.5 * float(np.logaddexp(2 * x_full[0], 2 * x_full[-1]))
    return xe


def _jacobian(p, x: np.ndarray) -> np.ndarray:
    """d(log s_a, gamma_centred (K)) / dx, numerically (central differences, step 1e-6; linear in x except
    through exp)."""
    def f(z):
        log_s, gamma, _ = unpack(p, z)
        return np.concatenate([[log_s], gamma - gamma.mean()])
    return central_difference(f, x, 1e-6)


def _x_cov(cov_x: np.ndarray, at_boundary: bool) -> np.ndarray:
    """The asymptotic covariance of the optimiser's vector; log s_a held fixed (row and column 0) at a boundary
    estimate, where the normal approximation does not hold for it."""
    c = 0.5 * (cov_x + cov_x.T)
    if at_boundary:
        c = c.copy()
        c[0, :] = c[:, 0] = 0.0
    return c


def _natural(p, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(cutpoints (J-1,) or (K, J-1) shifted by the mean offset, panel-centred gamma (K,), s_a^2) of x."""
    log_s, gamma, theta = unpack(p, x)
    gbar = gamma.mean()
    cut = theta[0] - gbar if p.thresholds == "shared" else theta - gbar
    return cut, gamma - gbar, float(np.exp(2 * log_s))


def _panel_score(p, x: np.ndarray, values: np.ndarray) -> float:
    r"""mu = (1/K) sum_l E[Y | new scenario, judge l] = (1/K) sum_l int sum_q v_q P(Y = q | a, l) N(a; 0, s_a^2) da
    (:func:`cjstats.estimators.bayes.ordinal.expected_score`, per judge for per-judge thresholds)."""
    from cjstats.results.likelihoods import expected_score

    cut, gc, s2 = _natural(p, x)
    if cut.ndim == 1:
        return float(expected_score(cut[None, :], values, gc[None, :], np.array([s2]), link=p.link)[0])
    return float(np.mean([expected_score(cut[j][None, :], values, gc[None, j:j + 1], np.array([s2]), link=p.link)[0]
                          for j in range(cut.shape[0])]))


def _mu_gradient(p, x: np.ndarray, values: np.ndarray, *, generation: bool = False) -> tuple[float, np.ndarray]:
    """mu and d mu / dx (central differences, step 1e-5). With ``generation`` x ends with log s_b and mu is the
    score of a new scenario's new generation, whose latent location varies by s_a^2 + s_b^2 (:func:`_effective`)."""
    def score(z: np.ndarray) -> float:
        return _panel_score(p, _effective(z) if generation else z, values)
    return score(x), central_difference(score, x, 1e-5)


def parameter_draws(fit: Any, key: str, *, n_draws: int | None = 200, seed: int | None = None) -> dict[str, Any]:
    r"""Latent parameters of one unit of an ML ordinal fit in the form of
    :func:`cjstats.decisions.predictive.ordinal_draws`: ``n_draws`` draws of the optimiser's vector from its
    asymptotic normal N(x_hat, I(x_hat)^{-1}) (I the observed information; seeded with ``seed``, default the
    fit's seed), each mapped to cutpoints (D, J-1) (or (D, K, J-1) for per-judge thresholds), panel-centred
    gamma (D, K) and s2_scenario (D,); a fit without a seed draws with seed 0; ``n_draws=None`` gives the plug-in estimate as one draw (D = 1).
    A fit with the nested generation effect (``generation`` in the diagnostics) also draws ``s2_generation``
    (log s_b is the vector's last entry) and says ``generation_identifiable`` True; otherwise ``s2_generation``
    is zero and ``generation_identifiable`` False."""
    diag = fit.diagnostics[key]
    found = [f for f in diag.get("identification", []) if f.get("judge") and f.get("value") == f.get("value")
             or set(f.get("rows", ())) & {"scenario", "generation", "mu"}]
    if found:
        raise CjstatsError(f"The ordinal fit of {key} has parameters the data do not identify ("
                           + "; ".join(f"{f['parameter']}: {f['reason']}" for f in found[:2])
                           + "), so its designs cannot be simulated from it: drop the judge or merge the categories "
                           "named there and fit again.")
    opts = fit.provenance.get("options", {})
    p = make_problem(np.zeros(0), np.zeros(0), np.zeros(0), n_scenarios=diag["n_scenarios"],
                     n_judges=diag["n_judges"], n_categories=diag["n_categories"], link=diag["link"],
                     thresholds=diag["thresholds"], nagq=int(opts.get("nagq", 10)))
    x = np.asarray(diag["x"], dtype=np.float64)
    if n_draws is None:
        xs = x[None, :]
    else:
        if seed is None:
            seed = fit.provenance.get("seed")
        rng = np.random.default_rng(0 if seed is None else seed)
        cov = np.asarray(diag["x_covariance"], dtype=np.float64)
        w, v = np.linalg.eigh(cov)
        xs = x + (rng.standard_normal((int(n_draws), x.size)) * np.sqrt(np.maximum(w, 0.0))) @ v.T
    gen = bool(diag.get("generation", False))
    nat = [_natural(p, xi[:-1] if gen else xi) for xi in xs]
    s2 = np.array([t[2] for t in nat])
    s2b = np.exp(2 * xs[:, -1]) if gen else np.zeros_like(s2)
    return {"cutpoints": np.stack([t[0] for t in nat]), "gamma": np.stack([t[1] for t in nat]),
            "s2_scenario": s2, "s2_generation": s2b, "s2_scenario_judge": np.zeros_like(s2),
            "values": np.asarray(diag["values"], dtype=np.float64), "judges": list(diag["judges"]),
            "link": diag["link"], "generation_identifiable": gen, "n_scenarios": int(diag["n_scenarios"])}


def fit(stats: Any, *, ci_level: float, seed: int | None = None, rows: Any = None, link: str = "probit",
        thresholds: str = "shared", nagq: int = 10, interval: str = "wald", generation: bool | None = None) -> Any:
    """ML fit of every model (x criterion); see the module docstring. A unit with one generation per scenario is
    fitted from its per-pattern counts (``CellStats.patterns``, :mod:`cjstats.stats.ordinal`: the same problem as
    from its rows, so an out-of-core engine's statistics give the in-memory fit), built from ``rows`` when the
    statistics lack them; a unit with several generations from its ``rows`` (refused in one sentence without).

    ``generation``: fit the nested generation effect beta_ij ~ N(0, s_b^2) (:mod:`.nested`, Laplace in the joint
    (a, b) integral; ``nagq`` then does not apply). None (default): fitted for a unit with m > 1 generations in
    some scenario, not at m = 1 (where it is not identifiable). False: the generations of a scenario are treated
    as independent calls given the scenario (the model before the generation effect existed)."""
    check_choice("link", link, LINKS, caller="estimate")
    check_choice("thresholds", thresholds, ("shared", "judge"), caller="estimate")
    check_choice("interval", interval, ("wald", "profile"), caller="estimate")
    if not isinstance(nagq, int | np.integer) or nagq < 1:
        raise CjstatsError(f"The 'nagq' argument of estimate must be a positive integer (1 = Laplace). "
                           f"Got {nagq!r} instead.")
    stats, rows = as_stats(stats, rows)
    if generation is not None and not isinstance(generation, bool | np.bool_):
        raise CjstatsError(f"The 'generation' argument of estimate must be True, False or None (fit the generation "
                           f"effect when some scenario has several generations). Got {generation!r} instead.")
    z = float(_dist.norm_ppf(0.5 + ci_level / 2))
    resid = RESIDUAL_VARIANCE[link]
    method = f"ML cumulative {link} (AGQ {nagq}{', Laplace' if nagq == 1 else ''}; latent scale)"

    def fit_one(g):
        gd = _unit_data(g, rows, stats.engine, generation)
        if getattr(gd, "pat", None) is not None:   # m = 1: a representative scenario per pattern, weighted
            values_all = gd.pat.values
            cat_all, scen_all, judge_all, w = gd.pat.problem_rows()
            row_w = None if w is None else w[scen_all]
            mean_all = gd.pat.mean_score() if values_all.size else math.nan
        else:
            values_all, cat_all = np.unique(np.asarray(gd.y, dtype=np.float64), return_inverse=True)
            scen_all, judge_all, row_w = np.asarray(gd.scenario), np.asarray(gd.judge), None
            mean_all = float(np.mean(gd.y))
        # identification before the fit: a judge in one extreme category is separated (its offset is +-inf) and
        # the exact limit of the MLE of everything else is the fit without its rows (identification module)
        findings = ordinal_separation(cat_all, judge_all, gd.judge_labels, values_all, thresholds=thresholds,
                                      weight=row_w) if values_all.size >= 2 else []
        separated = {f.judge: f for f in findings if f.judge is not None and not math.isnan(f.value)}
        if values_all.size >= 2 and unanimous(cat_all, scen_all):
            raise CjstatsError(f"Every scenario of {gd.label()} has one score from all its judges (each scenario is "
                               f"unanimous): the ordinal model's scenario variance is unbounded and no judge offset or "
                               f"threshold is identified by these scores; their mean ({mean_all:g}) and "
                               f"the share of scenarios at each score are all they support.")
        fd = _drop_judges(gd, separated) if separated else gd
        one_gen = int(fd.design.generations_max) == 1
        gen = (not one_gen) if generation is None else (bool(generation) and not one_gen)
        if gen:
            q, uf, values = fit_unit_nested(fd, link=link, thresholds=thresholds)
            p, xb = q.base, uf.x[:-1]
            gen_boundary = bool(uf.extra["generation_at_boundary"])
            cx = _x_cov(pinv_held(uf.hessian, uf.extra.get("fixed", ())), uf.at_boundary)
            if gen_boundary:
                cx[-1, :] = cx[:, -1] = 0.0
            jac = np.hstack([_jacobian(p, xb), np.zeros((p.n_judges + 1, 1))])
            umethod = f"ML cumulative {link} (Laplace in (scenario, generation); latent scale)"
        elif getattr(fd, "pat", None) is not None:
            p, uf, values = fit_patterns(fd.pat, fd.label(), link=link, thresholds=thresholds, nagq=nagq)
            xb = uf.x
            cx = _x_cov(pinv_held(uf.hessian, uf.extra.get("fixed", ())), uf.at_boundary)
            jac = _jacobian(p, uf.x)
            umethod = method
        else:
            p, uf, values = fit_unit(fd, link=link, thresholds=thresholds, nagq=nagq)
            xb = uf.x
            # log s_a held fixed at a boundary estimate, per-judge thresholds of unused categories at their limits
            cx = _x_cov(pinv_held(uf.hessian, uf.extra.get("fixed", ())), uf.at_boundary)
            jac = _jacobian(p, uf.x)
            umethod = method
        cov = jac @ cx @ jac.T
        log_s, gamma, theta = unpack(p, xb)
        gc = gamma - gamma.mean()
        k = p.n_judges
        s2 = math.exp(2 * log_s)
        se_ls = math.sqrt(max(cov[0, 0], 0.0))
        cg = cov[1:, 1:]
        # identification after the fit: a variance at the top of its search range, or an offset whose
        # information is singular (quasi-separation the data check cannot see)
        from cjstats.estimators.ordinal_ml.optimise import LOG_S_BOUNDS

        names = ["scenario"] + ([f"gamma[{lab}]" for lab in fd.judge_labels] if thresholds == "shared" and k > 1
                                else [])
        xs = [log_s] + ([0.0] * k if len(names) > 1 else [])
        ses = [0.0 if uf.at_boundary else se_ls] + (list(np.sqrt(np.maximum(np.diag(cg), 0.0))) if len(names) > 1
                                                      else [])
        if gen:
            names.append("generation")
            xs.append(float(uf.x[-1]))
            ses.append(0.0 if gen_boundary else math.sqrt(max(cx[-1, -1], 0.0)))
        after = run_off(names, np.array(xs), np.array(ses), upper={"scenario": LOG_S_BOUNDS[1],
                                                                   "generation": LOG_S_BOUNDS[1]},
                        # mu (a new scenario's expected score) integrates over the scenario and generation effects
                        rows={"scenario": ("scenario", "mu"), "generation": ("generation", "mu"),
                              **{n: ("judge_panel", "judge_population") for n in names if n.startswith("gamma[")}},
                        fix="check the table for a judge, scenario or category that explains it (see the "
                            "identification diagnostics), or use method='bayes', whose priors keep it finite")
        # a flat or non-maximal direction of the information (no isolated maximum) names its parameters
        xnames = (["scenario"] + [f"gamma[{lab}]" for lab in fd.judge_labels[1:]] * (thresholds == "shared")
                  + ["thresholds"] * (p.n_sets * (p.n_categories - 1)) + (["generation"] if gen else []))
        held = ({0} if uf.at_boundary else set()) | set(uf.extra.get("fixed", ()))
        if gen and gen_boundary:
            held.add(len(xnames) - 1)
        # per-judge thresholds at +-inf for an unused extreme category are explained before the fit (a boundary:
        # the judge gives that score with probability 0), and leave mu well defined
        explained = any(f.parameter.startswith("thresholds[") for f in findings)
        flat = [n for n in singular(uf.hessian, np.array([i for i in range(len(xnames)) if i not in held]), xnames)
                if n not in {f.parameter for f in after}]
        after += [Finding(n, f"the likelihood is flat or not maximal in the direction of {n} (the observed "
                             f"information is not positive definite there)",
                          "a judge, category or scenario pattern explains it (see the fit's convergence message)",
                          rows={"scenario": ("scenario", "mu"), "generation": ("generation", "mu"),
                                "thresholds": () if explained else ("mu",)}.get(n, ("judge_panel",
                                                                                   "judge_population")))
                  for n in flat]
        findings = findings + after
        bad = {f.parameter for f in after}
        if "scenario" in bad:
            lo, hi, how = math.nan, math.nan, "not identified"
        elif gen and (interval == "profile" or uf.at_boundary):
            lo, hi = profile_nested(q, uf, ci_level, 0, at_boundary=uf.at_boundary)
            how = "profile likelihood" + ("" if interval == "profile" else " (boundary estimate)")
        elif interval == "profile" or uf.at_boundary:     # at s_a ~ 0 the Wald interval on log s_a is meaningless
            # at the boundary the information of log s_a is ~0 and profile_scenario's step (its Wald se) overflows
            # exp: a NaN Hessian makes it step by 0.5 in log s_a instead
            pf = replace(uf, hessian=np.full_like(uf.hessian, np.nan)) if uf.at_boundary else uf
            lo, hi, _ = profile_scenario(p, pf, ci_level)
            how = "profile likelihood" + ("" if interval == "profile" else " (boundary estimate)")
        else:
            lo, hi = s2 * float(np.exp(-2 * z * se_ls)), s2 * float(np.exp(2 * z * se_ls))
            how = "Wald on log s_a"
        mu, g_mu = _mu_gradient(p, uf.x, values, generation=gen)
        # a separated judge gives its one score with probability 1 in the limit: it enters the panel mean exactly
        k_all = len(gd.judge_labels)
        share = k / k_all
        mu = share * mu + sum(f.value for f in separated.values()) / k_all
        g_mu = share * g_mu
        # (mu, panel-centred gamma) and their delta-method covariance: the contrast API's parameters
        lj = np.vstack([g_mu, jac[1:]]) if thresholds == "shared" else g_mu[None, :]
        loc_cov = lj @ cx @ lj.T
        se_mu = math.sqrt(max(float(loc_cov[0, 0]), 0.0))
        mlo, mhi, mhow = _mu_interval(mu, se_mu, float(values_all[0]), float(values_all[-1]), ci_level,
                                      int(fd.design.n_scenarios))
        sep_note = ("; judges " + ", ".join(f"'{j}'" for j in separated) + " enter at their one observed score "
                    "(separated: offset +-inf), taken as exact") if separated else ""
        out = [ComponentRow("mu", mu, mlo, mhi, se_mu, f"{umethod}, {mhow}", "panel", mu, False, True,
                            "score scale: the panel's expected score for a new scenario" + sep_note),
               ComponentRow("scenario", s2, lo, hi, 2 * s2 * se_ls, f"{umethod}, {how}", "panel", s2,
                            uf.at_boundary, True, "latent scale; " + (
                                "holds sigma2_alpha + sigma2_beta (m = 1)" if one_gen else
                                "the generation effect is fitted separately" if gen else
                                "the generations of a scenario are treated as independent calls (generation=False)"))]
        if gen:
            s2b = math.exp(2 * uf.x[-1])
            se_lb = math.sqrt(max(cx[-1, -1], 0.0))
            if "generation" in bad:
                blo, bhi, bhow = math.nan, math.nan, "not identified"
            elif interval == "profile" or gen_boundary:
                blo, bhi = profile_nested(q, uf, ci_level, -1, at_boundary=gen_boundary)
                bhow = "profile likelihood" + ("" if interval == "profile" else " (boundary estimate)")
            else:
                blo, bhi = s2b * float(np.exp(-2 * z * se_lb)), s2b * float(np.exp(2 * z * se_lb))
                bhow = "Wald on log s_b"
            out.append(ComponentRow("generation", s2b, blo, bhi, 2 * s2b * se_lb, f"{umethod}, {bhow}", "panel", s2b,
                                    gen_boundary, True, "latent scale; scenario x generation within the model"
                                    + ("; a boundary estimate (s_b ~ 0)" if gen_boundary else "")))
        else:
            out.append(ComponentRow.not_identifiable("generation", M1_NOTE if one_gen else (
                "not fitted (generation=False): generations treated as independent calls")))
        out.append(ComponentRow.not_identifiable("scenario_judge", "not fitted by the ML ordinal backend"))
        out.append(ComponentRow("residual", resid, resid, resid, 0.0, f"fixed by the {link} link", "panel", resid,
                                False, True, "latent scale: the unit of the latent scale, not an estimate"))
        if thresholds == "shared":
            jp = float(gc @ gc) / k
            se_jp = math.sqrt(max(float((2 * gc / k) @ cg @ (2 * gc / k)), 0.0))
            out.append(ComponentRow("judge_panel", jp, max(jp - z * se_jp, 0.0), jp + z * se_jp, se_jp,
                                    f"{umethod}, Wald (delta method)", "panel", jp, False, True,
                                    "latent scale; judges fixed: mean of gamma_l^2"))
            if k > 1:
                pop = float(gc @ gc) / (k - 1)
                lo_q, hi_q = _dist.chi2_ppf(0.5 + ci_level / 2, k - 1), _dist.chi2_ppf(0.5 - ci_level / 2, k - 1)
                out.append(ComponentRow("judge_population", pop, (k - 1) * pop / lo_q, (k - 1) * pop / hi_q, math.nan,
                                        f"{umethod}, chi2_(K-1)", "population", pop, False, True,
                                        "latent scale; ignores the offsets' estimation error"))
            else:
                out.append(ComponentRow.not_identifiable("judge_population", "one judge with an identified offset",
                                                         view="population"))
            centring = (f"; centred over the judges with an identified offset ({', '.join(fd.judge_labels)})"
                        if separated else "")
            se_g = np.sqrt(np.maximum(np.diag(cg), 0.0))
            offsets = [{"judge": lab, "estimate": float(gc[j]), "std_error": float(se_g[j]),
                        "lower": float(gc[j] - z * se_g[j]), "upper": float(gc[j] + z * se_g[j]),
                        "ci_method": umethod + centring}
                       if f"gamma[{lab}]" not in bad and k > 1 and not any(
                           f.parameter.startswith("gamma[") and f.judge is None for f in findings) else
                       {"judge": lab, "estimate": math.nan, "std_error": math.nan, "lower": math.nan,
                        "upper": math.nan, "ci_method": "not identified (separation, singular information, or the "
                                                        "only judge with a finite offset)"}
                       for j, lab in enumerate(fd.judge_labels)]
            offsets += [{"judge": lab, "estimate": f.limit, "std_error": math.nan,
                         "lower": f.limit if f.limit < 0 else math.nan, "upper": f.limit if f.limit > 0 else math.nan,
                         "ci_method": "not identified (separation: every score of this judge is "
                                      f"{f.value:g})"} for lab, f in separated.items()]
            order = {lab: i for i, lab in enumerate(gd.judge_labels)}
            offsets.sort(key=lambda o: order[o["judge"]])
        else:
            note = "thresholds='judge': a judge is its own set of thresholds, not a shift"
            out.append(ComponentRow.not_identifiable("judge_panel", note))
            out.append(ComponentRow.not_identifiable("judge_population", note, view="population"))
            offsets = []
        out = mark(out, findings)
        warn_findings(findings, gd.label(capital=True), stacklevel=4)
        if not uf.converged:
            warn(f"{gd.label(capital=True)}: the ordinal fit did not converge ({uf.message}); its numbers are not a "
                 f"maximum-likelihood estimate. Try the other link (link='logit' or link='probit') or "
                 f"thresholds='shared'; a judge or category that explains it is named in the fit's identification "
                 f"diagnostics.",
                 CjstatsWarning, stacklevel=4)
        diag = {"loglik": uf.loglik, "converged": uf.converged, "message": uf.message, "grad_norm": uf.grad_norm,
                "at_boundary": uf.at_boundary, "link": link, "nagq": nagq, "thresholds": thresholds,
                "values": values.tolist(), "thresholds_centred": (theta - gamma.mean()).tolist(),
                "gamma_centred": gc.tolist(), "hessian": uf.hessian.tolist(), "x": uf.x.tolist(),
                "x_covariance": cx.tolist(), "generation": gen, "n_judges": k,
                "n_categories": int(values.size), "n_scenarios": int(fd.design.n_scenarios),
                "judges": [str(j) for j in fd.judge_labels], "identification": as_records(findings),
                "separated_judges": {str(j): f.value for j, f in separated.items()}}
        names = ("mu", *(f"gamma[{lab}]" for lab in fd.judge_labels)) if thresholds == "shared" else ("mu",)
        est = np.concatenate([[mu], gc]) if thresholds == "shared" else np.array([mu])
        return GroupFit(out, offsets, diag, cov=ParameterCovariance(names, est, 0.5 * (loc_cov + loc_cov.T)),
                        terms=("scenario", "generation") if gen else ("scenario",))

    return fit_groups(stats, fit_one, method="ordinal", ci_level=ci_level, seed=seed,
                      options={"link": link, "thresholds": thresholds, "nagq": nagq, "interval": interval,
                               "generation": generation},
                      scale="latent")



from cjstats.estimators.ordinal_ml.threshold_test import threshold_test  # noqa: E402  (re-export)
