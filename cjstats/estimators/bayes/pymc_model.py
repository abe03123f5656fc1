"""The Bayesian models of record, written in PyMC: the Gaussian model and the ordinal (cumulative-logit) model.

These are the reference definitions; the hand-written densities in :mod:`cjstats.estimators.bayes.gaussian`
and :mod:`cjstats.estimators.bayes.ordinal` are accelerators, tested equal to these models' log density and
gradient (``tests/estimators/test_bayes.py``). PyMC and PyTensor are imported inside the builders.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cjstats.estimators.bayes.gaussian import NU, GaussianPriors
from cjstats.estimators.bayes.ordinal import OrdinalData
from cjstats.stats.views import GaussianStats

__all__ = ["build_pymc_gaussian", "build_pymc_ordinal"]


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
