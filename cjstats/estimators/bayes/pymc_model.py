"""The Bayesian models of record, written in PyMC: one Gaussian model spec (terms with or without a model axis,
one set of priors) used by the per-model model (without and with the scenario x judge interaction) and by the
joint fit of several models (:mod:`cjstats.estimators.joint.bayes`), and the ordinal (cumulative-logit) model.

These are the reference definitions; the hand-written densities in :mod:`cjstats.estimators.bayes.gaussian`,
:mod:`cjstats.estimators.bayes.scenario_judge` and :mod:`cjstats.estimators.bayes.ordinal` are accelerators,
tested equal to these models' log density and gradient (``tests/estimators/test_bayes.py``,
``tests/estimators/test_bayes_scenario_judge.py``). PyMC and PyTensor are imported inside the builders.

The Gaussian spec (:class:`GaussianSpec`, :func:`build_pymc_model`)
-------------------------------------------------------------------
A model is a list of variance terms, each ``t`` with a standard deviation ``sigma_t``, and optionally a model
axis (P models). One set of priors, scaled to the observed scores (ybar, sd_y = their mean and standard
deviation; the scales are :data:`cjstats.estimators.bayes.GAUSSIAN_PRIORS` times sd_y, see
:func:`gaussian_prior_scales`)::

    mu ~ Normal(ybar, (2.5 sd_y)^2)                    (one per model with a model axis)
    sigma_t ~ HalfStudentT(nu = 3, sd_y)               for every term t
    gamma ~ ZeroSumNormal(sigma_judge)                 over the panel of K judges       (term "judge")
    gp ~ ZeroSumNormal(sigma_judge_model), zero-sum over models and over judges        (term "judge_model")
    e_t = sigma_t z_t,  z_t ~ Normal(0, 1)             for a term whose effects are sampled (non-centred);
                                                        with ``per_model`` sigma_t has one value per model

A term whose effects are not sampled is integrated out by the likelihood the caller adds (the per-model
models' collapsed likelihood) or is the residual. Free variables are created in one order: mu, then the
sigmas in :data:`TERMS` order, gamma, gp, then the sampled effects ``z_t`` in :data:`TERMS` order. Every
estimand is a Deterministic: ``t = sigma_t^2`` for each term but the judge ones, ``judge_panel = mean(gamma^2)``,
``judge_population = sigma_judge^2``, ``judge_model_panel = mean(gp^2)``, ``judge_model_population =
sigma_judge_model^2``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from cjstats.estimators.bayes.gaussian import NU, GaussianPriors
from cjstats.estimators.bayes.ordinal import OrdinalData
from cjstats.exceptions import CjstatsError
from cjstats.stats.views import GaussianStats

if TYPE_CHECKING:
    from cjstats.estimators.bayes.scenario_judge import SJData

__all__ = ["GaussianSpec", "TERMS", "Term", "build_pymc_gaussian", "build_pymc_gaussian_sj", "build_pymc_model",
           "build_pymc_ordinal", "gaussian_prior_scales"]

#: Every variance term of the Gaussian models, in the order their standard deviations are declared.
TERMS: tuple[str, ...] = ("scenario", "model_scenario", "generation", "scenario_judge", "residual", "judge",
                          "judge_model")
#: Terms that need a model axis.
MODEL_TERMS = frozenset({"model_scenario", "judge_model"})
#: The per-model prior whose multiple of sd_y a term with a model axis takes: a model x scenario effect is
#: a scenario effect, a judge x model effect a judge effect.
_PRIOR_OF = {"sigma_model_scenario": "sigma_scenario", "sigma_judge_model": "sigma_judge"}


@dataclass(frozen=True, slots=True)
class Term:
    """One variance term of a :class:`GaussianSpec`.

    ``levels``: the number of effects to sample as free variables, e_t = sigma_t z_t with z_t ~ N(0, 1)
    (non-centred), or None when the likelihood integrates them out (or for the residual and the judge terms,
    whose offsets are zero-sum variables). ``level_model``: for a term with one sigma per model, the model
    index of each level (sigma_t then has shape (P,) and e_t[i] = sigma_t[level_model[i]] z_t[i]).
    """

    name: str
    levels: int | None = None
    level_model: np.ndarray | None = field(default=None, compare=False)

    @property
    def per_model(self) -> bool:
        return self.level_model is not None


@dataclass(frozen=True, slots=True)
class GaussianSpec:
    """A Gaussian model: its terms, the panel, the optional model axis, and the prior scales in score units.

    ``priors`` maps ``"mu"`` (sd of the normal prior of mu around ``ybar``) and ``"sigma_<term>"`` (scale of
    the half-Student-t(3) prior of each term's sd) to positive numbers; :func:`gaussian_prior_scales` gives
    the defaults every Gaussian model uses.
    """

    terms: tuple[Term, ...]
    judges: tuple[str, ...]
    ybar: float
    priors: Mapping[str, float]
    models: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        names = [t.name for t in self.terms]
        unknown = [n for n in names if n not in TERMS]
        if unknown:
            raise CjstatsError(f"GaussianSpec has an unknown term '{unknown[0]}'; the terms are {', '.join(TERMS)}.")
        if len(set(names)) != len(names):
            raise CjstatsError(f"GaussianSpec lists a term twice ({names}); list each term once.")
        for req in ("residual", "judge"):
            if req not in names:
                raise CjstatsError(f"GaussianSpec needs the '{req}' term (got {names}); add Term('{req}').")
        if self.models is None:
            bad = [t.name for t in self.terms if t.name in MODEL_TERMS or t.per_model]
            if bad:
                raise CjstatsError(f"GaussianSpec term '{bad[0]}' needs a model axis; pass models=(...).")
        missing = [k for k in ["mu", *(f"sigma_{n}" for n in names)] if k not in self.priors]
        if missing:
            raise CjstatsError(f"GaussianSpec priors lack '{missing[0]}'; use gaussian_prior_scales(sd, terms).")

    def term(self, name: str) -> Term | None:
        return next((t for t in self.terms if t.name == name), None)


def gaussian_prior_scales(sd: float, terms: Sequence[str], overrides: Mapping[str, float] | None = None
                          ) -> dict[str, float]:
    """The one set of prior scales of the Gaussian models, in score units: ``mu`` = 2.5 sd and every
    ``sigma_<term>`` = 1.0 sd (the multiples in :data:`cjstats.estimators.bayes.GAUSSIAN_PRIORS`; a term with
    a model axis takes its per-model counterpart's, see ``_PRIOR_OF``), with ``overrides`` (score units)
    replacing any of them. ``sd`` <= 0 (constant scores) is taken as 1.
    """
    from cjstats.estimators.bayes.priors import GAUSSIAN_PRIORS

    sd = sd if sd > 0 else 1.0
    out = {"mu": GAUSSIAN_PRIORS["mu"] * sd}
    for t in terms:
        key = f"sigma_{t}"
        out[key] = GAUSSIAN_PRIORS[_PRIOR_OF.get(key, key)] * sd
    out.update(overrides or {})
    return out


def build_pymc_model(spec: GaussianSpec, likelihood: Callable[[dict[str, Any]], None]) -> Any:
    """The PyMC model of ``spec`` (module docstring): priors, effects and Deterministics, plus what
    ``likelihood(v)`` adds (a ``Potential`` or an observed variable) given ``v``, the dict of variables
    (``mu``, ``sigma_<term>``, ``gamma``, ``gp``, ``effect_<term>`` for sampled terms).
    """
    import pymc as pm
    import pytensor.tensor as pt

    coords: dict[str, Any] = {"judge": list(spec.judges)}
    if spec.models is not None:
        coords["model"] = list(spec.models)
    names = {t.name for t in spec.terms}
    pri = spec.priors
    v: dict[str, Any] = {}
    with pm.Model(coords=coords) as model:
        if spec.models is None:
            v["mu"] = pm.Normal("mu", mu=spec.ybar, sigma=pri["mu"])
        else:
            v["mu"] = pm.Normal("mu", mu=spec.ybar, sigma=pri["mu"], dims="model")
        for name in TERMS:
            t = spec.term(name)
            if t is None:
                continue
            dims = "model" if t.per_model else None
            v[f"sigma_{name}"] = pm.HalfStudentT(f"sigma_{name}", nu=NU, sigma=pri[f"sigma_{name}"], dims=dims)
        v["gamma"] = pm.ZeroSumNormal("gamma", sigma=v["sigma_judge"], dims="judge")
        if "judge_model" in names:
            v["gp"] = pm.ZeroSumNormal("gp", sigma=v["sigma_judge_model"], dims=("model", "judge"),
                                       n_zerosum_axes=2)
        for name in TERMS:
            t = spec.term(name)
            if t is None or t.levels is None:
                continue
            z = pm.Normal(f"{name}_z", 0.0, 1.0, shape=t.levels)
            s = v[f"sigma_{name}"]
            v[f"effect_{name}"] = z * (s[np.asarray(t.level_model)] if t.per_model else s)
        likelihood(v)
        for name in TERMS:
            if name in names and name not in ("judge", "judge_model"):
                dims = "model" if spec.term(name).per_model else None
                pm.Deterministic(name, v[f"sigma_{name}"] ** 2, dims=dims)
        pm.Deterministic("judge_panel", pt.mean(v["gamma"] ** 2))
        pm.Deterministic("judge_population", v["sigma_judge"] ** 2)
        if "judge_model" in names:
            pm.Deterministic("judge_model_panel", pt.mean(v["gp"] ** 2))
            pm.Deterministic("judge_model_population", v["sigma_judge_model"] ** 2)
    return model


def _spec_priors(priors: GaussianPriors) -> dict[str, float]:
    return {"mu": priors.mu, "sigma_scenario": priors.sigma_scenario, "sigma_generation": priors.sigma_generation,
            "sigma_scenario_judge": priors.sigma_scenario_judge, "sigma_residual": priors.sigma_residual,
            "sigma_judge": priors.sigma_judge}


def _per_model_terms(has_generation: bool, scenario_judge: bool) -> tuple[Term, ...]:
    names = ["scenario", *(["generation"] if has_generation else []), *(["scenario_judge"] if scenario_judge else []),
             "residual", "judge"]
    return tuple(Term(n) for n in names)


def build_pymc_gaussian(st: GaussianStats, priors: GaussianPriors, judge_labels: tuple[str, ...]) -> Any:
    """The per-model model written in PyMC: the spec's terms scenario, generation (when identifiable), residual
    and judge without a model axis (:func:`build_pymc_model`), and the likelihood with alpha and beta integrated
    out as a ``Potential`` (:func:`cjstats.estimators.bayes.gaussian.collapsed_loglik`).

    Variables: ``mu ~ Normal(ybar, priors.mu)``; ``sigma_* ~ HalfStudentT(nu=3, scale)``;
    ``gamma ~ ZeroSumNormal(sigma_judge)`` over the panel; Deterministics ``scenario = sigma_scenario^2``,
    ``generation``, ``residual``, ``judge_panel = mean(gamma^2)``, ``judge_population = sigma_judge^2``.
    """
    import pytensor.tensor as pt

    spec = GaussianSpec(_per_model_terms(st.has_generation, False), tuple(judge_labels), st.ybar, _spec_priors(priors))

    def likelihood(v: dict[str, Any]) -> None:
        import pymc as pm

        mu, gamma = v["mu"], v["gamma"]
        s2a, s2e = v["sigma_scenario"] ** 2, v["sigma_residual"] ** 2
        s2b = v["sigma_generation"] ** 2 if st.has_generation else pt.constant(0.0)
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

    return build_pymc_model(spec, likelihood)


def build_pymc_gaussian_sj(data: SJData, priors: GaussianPriors, judge_labels: tuple[str, ...]) -> Any:
    r"""The model with the scenario x judge interaction written in PyMC (:mod:`cjstats.estimators.bayes.scenario_judge`).

    Variables as in :func:`build_pymc_gaussian`, plus ``sigma_scenario_judge ~ HalfStudentT(nu=3, scale)``
    (created after ``sigma_generation``, the spec's :data:`TERMS` order) and the Deterministic
    ``scenario_judge = sigma_scenario_judge^2``. The
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
    spec = GaussianSpec(_per_model_terms(data.has_generation, True), tuple(judge_labels), st.ybar,
                        _spec_priors(priors))

    def likelihood(v: dict[str, Any]) -> None:
        import pymc as pm

        mu, gamma = v["mu"], v["gamma"]
        s2a, s2sj, s2e = v["sigma_scenario"] ** 2, v["sigma_scenario_judge"] ** 2, v["sigma_residual"] ** 2
        s2b = v["sigma_generation"] ** 2 if data.has_generation else pt.constant(0.0)
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

    return build_pymc_model(spec, likelihood)


def build_pymc_ordinal(od: OrdinalData, priors: dict[str, float], judge_labels: tuple[str, ...],
                       link: str = "logit") -> Any:
    """The ordinal model written in PyMC (``pm.OrderedLogistic``, or ``pm.OrderedProbit`` with unit scale for
    ``link="probit"``), the same density as :class:`OrdinalDensity`."""
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
        if link == "probit":
            pm.OrderedProbit("score", eta=eta, cutpoints=cut, sigma=1.0, observed=od.category)
        else:
            pm.OrderedLogistic("score", eta=eta, cutpoints=cut, observed=od.category)
        pm.Deterministic("scenario", s_a**2)
        if od.has_generation:
            pm.Deterministic("generation", s_b**2)
        pm.Deterministic("judge_panel", (gamma**2).mean())
        pm.Deterministic("judge_population", s_g**2)
    return model
