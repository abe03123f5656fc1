"""The Bayesian models of record, written in PyMC: the Gaussian model (without and with the scenario x judge
interaction) and the ordinal (cumulative-logit) model.

These are the reference definitions; the hand-written densities in :mod:`cjstats.estimators.bayes.gaussian`,
:mod:`cjstats.estimators.bayes.scenario_judge` and :mod:`cjstats.estimators.bayes.ordinal` are accelerators,
tested equal to these models' log density and gradient (``tests/estimators/test_bayes.py``,
``tests/estimators/test_bayes_scenario_judge.py``). PyMC and PyTensor are imported inside the builders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cjstats.estimators.bayes.gaussian import NU, GaussianPriors
from cjstats.estimators.bayes.ordinal import OrdinalData
from cjstats.stats.views import GaussianStats

if TYPE_CHECKING:
    from cjstats.estimators.bayes.scenario_judge import SJData

__all__ = ["build_pymc_gaussian", "build_pymc_gaussian_sj", "build_pymc_ordinal"]


def build_pymc_gaussian(st: GaussianStats, priors: GaussianPriors, judge_labels: tuple[str, ...]) -> Any:
    """The same model written in PyMC: free variables, the collapsed likelihood as a ``Potential``, and
    Deterministics for every estimand (score units).

    Variables: ``mu ~ Normal(ybar, priors.mu)``; ``sigma_* ~ HalfStudentT(nu=3, scale)``;
    ``gamma ~ ZeroSumNormal(sigma_judge)`` over the panel; Deterministics ``scenario = sigma_scenario^2``,
    ``generation``, ``residual``, ``judge_panel = mean(gamma^2)``, ``judge_population = sigma_judge^2``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    with pm.Model(coords={"judge": list(judge_labels)}) as model:
        mu = pm.Normal("mu", mu=st.ybar, sigma=priors.mu)
        s_a = pm.HalfStudentT("sigma_scenario", nu=NU, sigma=priors.sigma_scenario)
        s_b = pm.HalfStudentT("sigma_generation", nu=NU, sigma=priors.sigma_generation) if st.has_generation else None
        s_e = pm.HalfStudentT("sigma_residual", nu=NU, sigma=priors.sigma_residual)
        s_g = pm.HalfStudentT("sigma_judge", nu=NU, sigma=priors.sigma_judge)
        gamma = pm.ZeroSumNormal("gamma", sigma=s_g, dims="judge")
        s2a, s2e = s_a**2, s_e**2
        s2b = s_b**2 if s_b is not None else pt.constant(0.0)
        beta = pt.concatenate([pt.ones(1), -(mu - st.ybar)[None], -gamma])
        dh = s2b + s2e / st.sizes
        eh = 1.0 / dh
        qh = pt.dot(pt.dot(st.m_h, beta), beta)
        q = pt.dot(pt.dot(st.v, beta), eh)
        w = pt.dot(st.m_count, eh)
        u = 1.0 + s2a * w
        ssw = st.ssw0 - 2.0 * pt.dot(gamma, st.b_w) + pt.dot(gamma, pt.dot(st.g_w, gamma))
        big_l = ((st.n_obs - st.n_cells) * pt.log(s2e) + ssw / s2e + pt.dot(st.cells_per_size, pt.log(dh))
                 + pt.dot(qh, eh) + pt.sum(pt.log(u)) - s2a * pt.sum(q * q / u))
        pm.Potential("collapsed_loglik", -0.5 * big_l)
        pm.Deterministic("scenario", s2a)
        if st.has_generation:
            pm.Deterministic("generation", s2b)
        pm.Deterministic("residual", s2e)
        pm.Deterministic("judge_panel", pt.mean(gamma**2))
        pm.Deterministic("judge_population", s_g**2)
    return model


def build_pymc_gaussian_sj(data: SJData, priors: GaussianPriors, judge_labels: tuple[str, ...]) -> Any:
    r"""The model with the scenario x judge interaction written in PyMC (:mod:`cjstats.estimators.bayes.scenario_judge`).

    Variables as in :func:`build_pymc_gaussian`, plus ``sigma_scenario_judge ~ HalfStudentT(nu=3, scale)``
    (created after ``sigma_generation``) and the Deterministic ``scenario_judge = sigma_scenario_judge^2``. The
    likelihood, with alpha, beta and (alpha gamma) integrated out, is a ``Potential`` written with the per-pattern
    algebra of :mod:`cjstats.estimators.reml.scenario_judge` in PyTensor: for every pattern p (W_p = Z'Z,
    G_p = Z'J, n_p, S_p = sum z_i, Sc_p = sum z_i z_i'), with S = Lambda^{1/2} and K_p = I + S W_p S (symmetric
    positive definite, |K_p| = |I + Lambda W_p| = |H_i|),

        R_p = S K_p^{-1} S = (I + Lambda W_p)^{-1} Lambda,   log|H| = sum_p n_p log|K_p| (Cholesky),
        A = A_0 - sum_p [[n_p G'RG, G'R S_p], [S_p'RG, tr(R Sc_p)]],

    and log p(X | mu, gamma, s2) = -1/2 [N log(2 pi s2_eps) + log|H| + z'Az / s2_eps], z = (-(mu + gamma -
    shift), 1). The symmetric form is the same algebra as the evaluator's C = I + Lambda W, and stays defined
    at Lambda = 0 (no generation effect when it is not identifiable).
    """
    import pymc as pm
    import pytensor.tensor as pt

    ev = data.ev
    sj = ev.sj
    w, g = sj.blocks()
    m, q, k = sj.m, sj.q, sj.k
    base = np.zeros((k + 1, k + 1))
    base[:k, :k] = np.diag(ev.d.judge_n)
    base[:k, k] = base[k, :k] = ev.ys.judge_sum
    base[k, k] = ev.ys.yy
    sel = np.zeros((3, q))
    sel[0, 0] = 1.0
    sel[1, 1:1 + m] = 1.0
    sel[2, 1 + m:] = 1.0
    st = data.st
    with pm.Model(coords={"judge": list(judge_labels)}) as model:
        mu = pm.Normal("mu", mu=st.ybar, sigma=priors.mu)
        s_a = pm.HalfStudentT("sigma_scenario", nu=NU, sigma=priors.sigma_scenario)
        s_b = (pm.HalfStudentT("sigma_generation", nu=NU, sigma=priors.sigma_generation)
               if data.has_generation else None)
        s_sj = pm.HalfStudentT("sigma_scenario_judge", nu=NU, sigma=priors.sigma_scenario_judge)
        s_e = pm.HalfStudentT("sigma_residual", nu=NU, sigma=priors.sigma_residual)
        s_g = pm.HalfStudentT("sigma_judge", nu=NU, sigma=priors.sigma_judge)
        gamma = pm.ZeroSumNormal("gamma", sigma=s_g, dims="judge")
        s2a, s2sj, s2e = s_a**2, s_sj**2, s_e**2
        s2b = s_b**2 if s_b is not None else pt.constant(0.0)
        theta = pt.stack([s2a, s2b, s2sj]) / s2e
        sq = pt.sqrt(pt.dot(theta, sel))                                     # Lambda^{1/2} (q,)
        kmat = pt.eye(q)[None] + sq[None, :, None] * w * sq[None, None, :]   # (P, q, q)
        chol = pt.linalg.cholesky(kmat)
        logdet = 2.0 * pt.sum(pt.log(pt.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)    # (P,)
        kinv = pt.linalg.inv(kmat)
        r = sq[None, :, None] * kinv * sq[None, None, :]                   # (P, q, q)
        rg = pt.matmul(r, g)                                                 # (P, q, K)
        gg = pt.sum(sj.count[:, None, None] * pt.matmul(g.transpose(0, 2, 1), rg), axis=0)   # (K, K)
        gs = pt.sum(rg * sj.zsum[:, :, None], axis=(0, 1))                  # (K,)
        ss = pt.sum(r * sj.zscat)
        absorbed = pt.concatenate([pt.concatenate([gg, gs[:, None]], axis=1),
                                   pt.concatenate([gs, ss[None]])[None, :]], axis=0)
        amat = base - absorbed
        z = pt.concatenate([-(mu + gamma - sj.shift), pt.ones(1)])
        quad = pt.dot(z, pt.dot(amat, z))
        ld = pt.dot(sj.count, logdet)
        pm.Potential("collapsed_loglik", -0.5 * (data.n_obs * (np.log(2.0 * np.pi) + pt.log(s2e)) + ld + quad / s2e))
        pm.Deterministic("scenario", s2a)
        if s_b is not None:
            pm.Deterministic("generation", s2b)
        pm.Deterministic("scenario_judge", s2sj)
        pm.Deterministic("residual", s2e)
        pm.Deterministic("judge_panel", pt.mean(gamma**2))
        pm.Deterministic("judge_population", s_g**2)
    return model


def build_pymc_ordinal(od: OrdinalData, priors: dict[str, float], judge_labels: tuple[str, ...]) -> Any:
    """The ordinal model written in PyMC (``pm.OrderedLogistic``), the same density as :class:`OrdinalDensity`."""
    import pymc as pm
    from pymc.distributions.transforms import ordered

    coords: dict[str, Any] = {"judge": list(judge_labels), "scenario_index": np.arange(od.n_scenarios)}
    if od.has_generation:
        coords["cell_index"] = np.arange(od.n_cells)
    with pm.Model(coords=coords) as model:
        s_a = pm.HalfStudentT("sigma_scenario", nu=NU, sigma=priors["sigma_scenario"])
        s_b = None
        if od.has_generation:
            s_b = pm.HalfStudentT("sigma_generation", nu=NU, sigma=priors["sigma_generation"])
        s_g = pm.HalfStudentT("sigma_judge", nu=NU, sigma=priors["sigma_judge"])
        z_a = pm.ZeroSumNormal("scenario_z", sigma=1.0, dims="scenario_index")
        eta = s_a * z_a[od.scenario]
        if od.has_generation:
            z_b = pm.Normal("generation_z", 0.0, 1.0, dims="cell_index")
            eta = eta + s_b * z_b[od.cell]
        gamma = pm.ZeroSumNormal("gamma", sigma=s_g, dims="judge")
        eta = eta + gamma[od.judge]
        j = len(od.values)
        cut = pm.Normal("cutpoints", 0.0, priors["cutpoints"], shape=j - 1, transform=ordered,
                        initval=np.linspace(-1.5, 1.5, j - 1))
        pm.OrderedLogistic("score", eta=eta, cutpoints=cut, observed=od.category)
        pm.Deterministic("scenario", s_a**2)
        if od.has_generation:
            pm.Deterministic("generation", s_b**2)
        pm.Deterministic("judge_panel", (gamma**2).mean())
        pm.Deterministic("judge_population", s_g**2)
    return model
