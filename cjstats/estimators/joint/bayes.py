r"""Joint Bayesian fit of several models (PyMC), for small and moderate tables.

Model of record (docs/estimands.md, "Several models")::

    score ~ Normal(eta[p, l] + alpha[i] + am[p, i] + beta[p, i, j], sigma_eps)
    eta[p, l] = mu[p] + gamma[l] + gp[p, l]
    gamma ~ ZeroSumNormal(sigma_judge)                         (sums to 0 over judges)
    gp    ~ ZeroSumNormal(sigma_judge_model, two zero-sum axes) (sums to 0 over models and over judges)
    alpha ~ Normal(0, sigma_scenario), am ~ Normal(0, sigma_ms), beta ~ Normal(0, sigma_generation)
    mu ~ Normal(mean(y), 2 sd(y)); every sigma ~ HalfNormal(sd(y))

(the generation term is left out when every (model, scenario) has one generation). Components are posterior
means with equal-tailed intervals: ``scenario``, ``model_scenario``, ``generation``, ``residual`` are the
squared sigmas; ``judge_panel`` is mean_l gamma_l^2 and ``judge_model`` (panel) mean_pl gp_pl^2 per draw (the
panel's own effects, so no bias correction is needed); ``judge_population`` = sigma_judge^2 and
``judge_model`` (population) = sigma_judge_model^2. Contrasts use the posterior draws of eta: the estimate is
the posterior mean, the standard error the posterior SD, df = inf; the population view adds the posterior
mean of C sigma_judge_model^2 + D sigma_judge^2 (C = sum c^2, D = sum_l (sum_p c_pl)^2). Ranks and ``p_best``
come from the posterior draws of the model means. Sampling: ``pm.sample`` (NUTS; ``nuts_sampler="pymc"`` by
default, whose compile is faster than nutpie's on small tables), ``chains`` x ``draws``.
"""

from __future__ import annotations

import numpy as np

from cjstats.results.contrast import JointCovariance
from cjstats.estimators.joint._joint import (
    JOINT_LABEL, JointFit, JointRow, components_frame, joint_data, joint_stats,
)
from cjstats.exceptions import CjstatsError
from cjstats.io.scores import Scores

__all__ = ["fit_joint"]


def _row(component: str, x: np.ndarray, level: float, view: str = "panel", note: str = "") -> JointRow:
    a = (1 - level) / 2
    lo, hi = np.quantile(x, [a, 1 - a])
    m = float(np.mean(x))
    return JointRow(component, m, float(lo), float(hi), float(np.std(x, ddof=1)), "posterior (equal-tailed)",
                        view, m, False, True, note)


def fit_joint(scores: Scores, *, ci_level: float, seed: int | None = 0, draws: int = 500, tune: int = 500,
              chains: int = 2, target_accept: float = 0.9, nuts_sampler: str = "pymc") -> JointFit:
    """Joint PyMC fit (module docstring). Returns a :class:`JointFit` with posterior draws of eta."""
    try:
        import pymc as pm
    except ImportError as exc:  # pragma: no cover - optional
        raise CjstatsError("method='bayes' requires package(s): pymc. Install them with pip install "
                           "'cjstats[bayes]'.") from exc
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
    n_groups = int(d.ms.max()) + 1
    n_cells = int(d.cell.max()) + 1
    has_gen = n_cells > n_groups
    y = d.y
    sd = float(np.std(y)) or 1.0
    with pm.Model():
        mu = pm.Normal("mu", float(np.mean(y)), 2 * sd, shape=p)
        s_j = pm.HalfNormal("sigma_judge", sd)
        s_jm = pm.HalfNormal("sigma_judge_model", sd)
        gamma = pm.ZeroSumNormal("gamma", sigma=s_j, shape=k)
        gp = pm.ZeroSumNormal("gp", sigma=s_jm, shape=(p, k), n_zerosum_axes=2)
        eta = pm.Deterministic("eta", mu[:, None] + gamma[None, :] + gp)
        s_a = pm.HalfNormal("sigma_scenario", sd)
        s_ms = pm.HalfNormal("sigma_model_scenario", sd)
        a = pm.Normal("a_raw", 0, 1, shape=n_scen) * s_a
        am = pm.Normal("am_raw", 0, 1, shape=n_groups) * s_ms
        m = eta[d.model, d.judge] + a[d.scenario] + am[d.ms]
        if has_gen:
            s_b = pm.HalfNormal("sigma_generation", sd)
            b = pm.Normal("b_raw", 0, 1, shape=n_cells) * s_b
            m = m + b[d.cell]
        s_e = pm.HalfNormal("sigma_residual", sd)
        pm.Normal("y", m, s_e, observed=y)
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed,
                          target_accept=target_accept, progressbar=False, compute_convergence_checks=False,
                          nuts_sampler=nuts_sampler)
    post = idata.posterior

    def flat(name: str) -> np.ndarray:
        v = post[name].values
        return v.reshape(-1, *v.shape[2:])

    eta_d = flat("eta")
    gamma_d, gp_d = flat("gamma"), flat("gp")
    level = ci_level
    rows = []
    for q, name in enumerate(d.models):
        rows.append((name, _row("mu", eta_d[:, q].mean(axis=1), level)))
    J = JOINT_LABEL
    rows.append((J, _row("scenario", flat("sigma_scenario") ** 2, level)))
    rows.append((J, _row("model_scenario", flat("sigma_model_scenario") ** 2, level,
                         note="" if has_gen else "m = 1: holds s2_model_scenario + s2_generation")))
    if has_gen:
        rows.append((J, _row("generation", flat("sigma_generation") ** 2, level)))
    else:
        rows.append((J, JointRow.not_identifiable(
            "generation", "not identifiable: one generation per (model, scenario) (m = 1)")))
    rows.append((J, _row("residual", flat("sigma_residual") ** 2, level)))
    rows.append((J, _row("judge_panel", (gamma_d**2).mean(axis=1), level)))
    s2j, s2jm = flat("sigma_judge") ** 2, flat("sigma_judge_model") ** 2
    rows.append((J, _row("judge_population", s2j, level, view="population")))
    rows.append((J, _row("judge_model", (gp_d**2).mean(axis=(1, 2)), level)))
    rows.append((J, _row("judge_model", s2jm, level, view="population")))
    e_s2j, e_s2jm = float(s2j.mean()), float(s2jm.mean())

    # the point estimate of a contrast is sum c * posterior mean of eta = posterior mean of the contrast
    div = int(idata.sample_stats["diverging"].values.sum())
    diag = {"n": n_scen, "p": p, "k": k, "draws": draws, "chains": chains, "divergences": div, "seed": seed}
    return JointFit(method="bayes", models=d.models, judges=d.judges, cell_means=eta_d.mean(axis=0),
                    components=components_frame(rows, method="bayes", ci_level=ci_level), tests={},
                    ci_level=ci_level, diagnostics=diag, draws=eta_d,
                    covariance=JointCovariance.from_draws(eta_d, s2_judge_model=e_s2jm, s2_judge=e_s2j))
