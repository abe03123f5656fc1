r"""Joint Bayesian fit of several models (PyMC), for small and moderate tables.

Model of record (docs/estimands.md, "Several models"), built from the Gaussian spec the per-model models use
(:func:`cjstats.estimators.bayes.pymc_model.build_pymc_model`, with a model axis), so the priors are the same::

    score ~ Normal(eta[p, l] + alpha[i] + am[p, i] + beta[p, i, j], sigma_eps)
    eta[p, l] = mu[p] + gamma[l] + gp[p, l]
    gamma ~ ZeroSumNormal(sigma_judge)                         (sums to 0 over judges)
    gp    ~ ZeroSumNormal(sigma_judge_model, two zero-sum axes) (sums to 0 over models and over judges)
    alpha = sigma_scenario z, am = sigma_model_scenario z, beta = sigma_generation z,  z ~ Normal(0, 1)
    mu[p] ~ Normal(mean(y), (2.5 sd(y))^2); every sigma ~ HalfStudentT(nu=3, sd(y))

(sd(y) the standard deviation of all scores; these are the per-model model's priors, ``GAUSSIAN_PRIORS`` times
sd(y), where the model x scenario and judge x model scales take the scenario and judge ones. Before they were
shared, this fit had mu ~ Normal(mean(y), (2 sd(y))^2) and HalfNormal(sd(y)) scales; the posterior changed with
them.) The generation term is left out when every (model, scenario) has one generation. With
``model_scenario="per_model"`` each model has its own sigma_model_scenario (same prior). Components are
posterior means with equal-tailed intervals: ``scenario``, ``model_scenario``, ``generation``, ``residual`` are
the squared sigmas; ``judge_panel`` is mean_l gamma_l^2 and ``judge_model`` (panel) mean_pl gp_pl^2 per draw (the
panel's own effects, so no bias correction is needed); ``judge_population`` = sigma_judge^2 and
``judge_model`` (population) = sigma_judge_model^2. Contrasts use the posterior draws of eta: the estimate is
the posterior mean, the standard error the posterior SD, df = inf; the population view adds the posterior
mean of C sigma_judge_model^2 + D sigma_judge^2 (C = sum c^2, D = sum_l (sum_p c_pl)^2). Ranks and ``p_best``
come from the posterior draws of the model means. Sampling: ``pm.sample`` (NUTS; ``nuts_sampler="pymc"`` by
default, whose compile is faster than nutpie's on small tables), ``chains`` x ``draws``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cjstats.results.components import ComponentRow
from cjstats.results.contrast import JointCovariance
from cjstats.estimators.joint._joint import (
    JOINT_LABEL, JointData, JointFit, components_frame, joint_data, joint_stats,
)
from cjstats._pytensor import reproducible_compile
from cjstats.exceptions import CjstatsError
from cjstats.io.scores import Scores

__all__ = ["build_joint_model", "fit_joint"]


def _row(component: str, x: np.ndarray, level: float, view: str = "panel", note: str = "") -> ComponentRow:
    a = (1 - level) / 2
    lo, hi = np.quantile(x, [a, 1 - a])
    m = float(np.mean(x))
    return ComponentRow(component, m, float(lo), float(hi), float(np.std(x, ddof=1)), "posterior (equal-tailed)",
                        view, m, False, True, note)


def build_joint_model(d: JointData, *, model_scenario: str = "pooled") -> tuple[Any, bool]:
    """The joint PyMC model of coded rows ``d`` (:func:`~cjstats.estimators.joint._joint.joint_data`) from the
    shared Gaussian spec, and whether it has the generation term. The likelihood is the rows' normal density
    (the effects are sampled, non-centred), with the Deterministic ``eta`` = mu[p] + gamma[l] + gp[p, l].
    """
    from cjstats.estimators.bayes.pymc_model import GaussianSpec, Term, build_pymc_model, gaussian_prior_scales

    n_groups = int(d.ms.max()) + 1
    n_cells = int(d.cell.max()) + 1
    has_gen = n_cells > n_groups
    group_model = np.zeros(n_groups, dtype=np.int64)
    group_model[d.ms] = d.model
    terms = (Term("scenario", len(d.scenarios)),
             Term("model_scenario", n_groups, group_model if model_scenario == "per_model" else None),
             *([Term("generation", n_cells)] if has_gen else []),
             Term("residual"), Term("judge"), Term("judge_model"))
    y = d.y
    spec = GaussianSpec(terms, d.judges, float(np.mean(y)),
                        gaussian_prior_scales(float(np.std(y)), [t.name for t in terms]), models=d.models)

    def likelihood(v: dict[str, Any]) -> None:
        import pymc as pm

        eta = pm.Deterministic("eta", v["mu"][:, None] + v["gamma"][None, :] + v["gp"], dims=("model", "judge"))
        m = eta[d.model, d.judge] + v["effect_scenario"][d.scenario] + v["effect_model_scenario"][d.ms]
        if has_gen:
            m = m + v["effect_generation"][d.cell]
        pm.Normal("y", m, v["sigma_residual"], observed=y)

    return build_pymc_model(spec, likelihood), has_gen


def fit_joint(scores: Scores, *, ci_level: float, seed: int | None = 0, draws: int = 500, tune: int = 500,
              chains: int = 2, target_accept: float = 0.9, nuts_sampler: str = "pymc",
              model_scenario: str = "pooled", progress: bool | None = None) -> JointFit:
    """Joint PyMC fit (module docstring). Returns a :class:`JointFit` with posterior draws of eta.

    ``progress``: PyMC's progress bar on stderr; ``None`` (default) shows it only when stderr is a terminal
    (:func:`cjstats._progress.progress_enabled`).

    ``model_scenario``: ``"pooled"`` (one sigma_model_scenario) or ``"per_model"`` (one per model, a
    ``model_scenario`` row per model).
    """
    from cjstats._progress import progress_enabled

    try:
        import pymc as pm
    except ImportError as exc:  # pragma: no cover - optional
        raise CjstatsError("method='bayes' requires package(s): pymc. Install them with pip install "
                           "'cjstats[bayes]'.") from exc
    if model_scenario not in ("pooled", "per_model"):
        raise CjstatsError(f"The 'model_scenario' argument of fit_joint must be 'pooled' or 'per_model'. "
                           f"Got {model_scenario!r} instead.")
    _, scores = joint_stats(scores, "compare_models")
    if scores is None:
        raise CjstatsError("method='bayes' fits the score rows (its model has an effect per scenario and cell), "
                           "but it was given statistics without rows; pass the table, or use method='reml'.")
    d = joint_data(scores)
    p, k = d.n_models, d.n_judges
    n_scen = len(d.scenarios)
    counts = np.bincount(d.model * k + d.judge, minlength=p * k)
    if (counts == 0).any():
        pm_, lj = divmod(int(np.flatnonzero(counts == 0)[0]), k)
        raise CjstatsError(f"Judge '{d.judges[lj]}' never scored model '{d.models[pm_]}', so the model x judge cell "
                           f"means are not estimable. Drop that judge or that model (scores.subset(...)).")
    model, has_gen = build_joint_model(d, model_scenario=model_scenario)
    with model, reproducible_compile():  # the same bits from a cold or a warm compile cache (cjstats._pytensor)
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed,
                          target_accept=target_accept, progressbar=progress_enabled(progress),
                          quiet=not progress_enabled(progress), compute_convergence_checks=False,
                          nuts_sampler=nuts_sampler)
    post = idata.posterior

    def flat(name: str) -> np.ndarray:
        v = post[name].values
        return v.reshape(-1, *v.shape[2:])

    eta_d = flat("eta")
    level = ci_level
    rows = []
    for q, name in enumerate(d.models):
        rows.append((name, _row("mu", eta_d[:, q].mean(axis=1), level)))
    J = JOINT_LABEL
    rows.append((J, _row("scenario", flat("scenario"), level)))
    m1 = "" if has_gen else "m = 1: holds s2_model_scenario + s2_generation"
    if model_scenario == "per_model":
        s2ms = flat("model_scenario")
        note = (m1 + "; " if m1 else "") + "per-model variance (model_scenario='per_model')"
        rows += [(name, _row("model_scenario", s2ms[:, q], level, note=note)) for q, name in enumerate(d.models)]
    else:
        rows.append((J, _row("model_scenario", flat("model_scenario"), level, note=m1)))
    if has_gen:
        rows.append((J, _row("generation", flat("generation"), level)))
    else:
        rows.append((J, ComponentRow.not_identifiable(
            "generation", "not identifiable: one generation per (model, scenario) (m = 1)")))
    rows.append((J, _row("residual", flat("residual"), level)))
    rows.append((J, _row("judge_panel", flat("judge_panel"), level)))
    s2j, s2jm = flat("judge_population"), flat("judge_model_population")
    rows.append((J, _row("judge_population", s2j, level, view="population")))
    rows.append((J, _row("judge_model", flat("judge_model_panel"), level)))
    rows.append((J, _row("judge_model", s2jm, level, view="population")))
    e_s2j, e_s2jm = float(s2j.mean()), float(s2jm.mean())

    # the point estimate of a contrast is sum c * posterior mean of eta = posterior mean of the contrast
    div = int(idata.sample_stats["diverging"].values.sum())
    diag = {"n": n_scen, "p": p, "k": k, "n_cells": int(d.cell.max()) + 1, "draws": draws, "chains": chains,
            "divergences": div, "seed": seed}   # n_cells: the (model, scenario, generation) cells (g_study reads m)
    return JointFit(method="bayes", models=d.models, judges=d.judges, cell_means=eta_d.mean(axis=0),
                    components=components_frame(rows, method="bayes", ci_level=ci_level), tests={},
                    ci_level=ci_level, diagnostics=diag, draws=eta_d,
                    covariance=JointCovariance.from_draws(eta_d, s2_judge_model=e_s2jm, s2_judge=e_s2j))


def fit(stats: object, *, ci_level: float, seed: int | None = 0, rows: object = None, model_scenario: str = "pooled",
        **options: object) -> JointFit:
    """The joint backend protocol (:class:`cjstats.estimators.Backend`, registered in
    :data:`cjstats.estimators.JOINT_BACKENDS`): :func:`fit_joint` of the score rows ``rows`` (the model has an
    effect per scenario and cell, so statistics alone are refused); ``options`` are :func:`fit_joint`'s
    (``draws``, ``tune``, ``chains``, ``target_accept``, ``nuts_sampler``, ``progress``)."""
    if model_scenario != "pooled":   # fit_joint refuses it first, from the capabilities
        raise CjstatsError(f"model_scenario={model_scenario!r} is not fitted by method='bayes'; use 'pooled'.")
    from cjstats.estimators.joint._joint import JointSource

    return fit_joint(JointSource(stats, rows), ci_level=ci_level, seed=seed, **options)
