r"""Bayesian backend: the paper's model in PyMC, sampled by NUTS, with posterior intervals on every estimand.

Model (paper Eq. 1, ``eq:model``), per evaluated model (and criterion):

    X_ijl = mu + alpha_i + beta_ij + gamma_l + eps_ijl,
    alpha_i ~ N(0, s2_alpha),  beta_ij ~ N(0, s2_beta),  eps_ijl ~ N(0, s2_eps),
    gamma ~ ZeroSumNormal(sigma_gamma) over the panel of K judges

that is u_l ~ N(0, sigma_gamma^2) and gamma_l = u_l - mean(u) (``pm.ZeroSumNormal``). Priors are weakly
informative and scaled to the observed scores (sd_y = standard deviation of the group's scores, ybar their
mean): mu ~ N(ybar, (2.5 sd_y)^2) and sigma_alpha, sigma_beta, sigma_eps, sigma_gamma ~ HalfStudentT(nu=3,
sd_y), all overridable with ``priors=``. The half-t (rather than half-normal) tail matters for sigma_gamma,
which K - 1 degrees of freedom cannot pin down: a half-normal tail is a steep wall on the log scale where the
sampler moves.

Estimands (docs/estimands.md), each a function of one posterior draw:

- ``mu``: the panel mean (the gamma_l sum to zero over the panel);
- ``scenario`` = sigma_alpha^2, ``generation`` = sigma_beta^2, ``residual`` = sigma_eps^2;
- ``judge_panel`` = (1/K) sum_l gamma_l^2, the paper's sigma2_gamma for the FIXED panel (the quantity in
  Proposition 1, Eq. 2, ``eq:variance``); tight when the panel has scored many items;
- ``judge_population`` = sigma_gamma^2, the variance of the distribution judges are drawn from (judges
  RANDOM). Each gamma_l then has marginal variance sigma_gamma^2 (K - 1)/K, so E[judge_panel] =
  judge_population (K - 1)/K. With 4 or 5 judges this rests on K - 1 degrees of freedom and its interval is
  wide and prior-sensitive: that is the honest answer;
- ``gamma[l]``: each judge's offset from the panel mean, in ``judge_offsets``.

Point estimates are posterior means, ``std_error`` the posterior standard deviation, and intervals are
equal-tailed (``ci_kind="eti"``, default) or highest-density (``"hdi"``) at the result's ``ci_level``
(ArviZ's own default, an 89% ETI, is not used). ``ci_method`` records the kind, e.g. ``"posterior ETI"``.

Geometry: every effect is integrated out analytically
------------------------------------------------------
Sampling alpha and beta is what makes this model hard: with non-centred effects and many rows per scenario,
mu and sigma_alpha mixed badly (r_hat 1.33); centred effects left a ridge between mu and the sum of the
scenario effects (r_hat 1.11); zero-sum scenario effects mix but change what mu means. Because the model is
Gaussian, alpha and beta can instead be integrated out exactly: given (mu, gamma, sigmas) each scenario's
scores are Gaussian with a nested compound-symmetric covariance, whose log-determinant and inverse have closed
forms (matrix determinant lemma and Sherman-Morrison, :mod:`cjstats.estimators.bayes.gaussian`). The result
depends on the data only through per-scenario sufficient statistics grouped by cell size, and scenarios with
the same pattern of cell sizes pool into one block, so a balanced design costs the same whatever its number
of rows; unbalanced data (different numbers of generations per scenario, missing judge calls) need no special
case, they only add patterns.

Sampling (mu, gamma) next to the scales still leaves a funnel between sigma_gamma and gamma when judge effects
are weak (tens of divergences per run measured here with a centred gamma) and a steep wall of
log sigma_gamma given gamma when they are strong. The same Gaussian algebra integrates (mu, gamma) out too:
given the variances, the collapsed likelihood is a quadratic form in (mu, gamma) and their priors are
Gaussian, so the default ``parametrisation="marginal"`` runs NUTS on the 3 or 4 log scales alone and draws
(mu, gamma) for each posterior draw exactly from their conditional normal, after sampling, one seeded stream per
chain; the density goes to nutpie as compiled C callbacks
(:func:`~cjstats.estimators.bayes.native.native_marginal_model`: the chains run in parallel). The joint draws are from the same
posterior as the PyMC model, with no funnel and no wall (every r_hat <= 1.01 and no divergences across the
weak-to-strong judge-effect runs in the tests). mu keeps its meaning: the panel mean with scenario effects
random, so its uncertainty includes sigma_alpha^2/n.

The PyMC model (:func:`~cjstats.estimators.bayes.pymc_model.build_pymc_gaussian`) writes the same model with
(mu, sigmas, gamma) as free variables and the alpha/beta-collapsed likelihood as a ``pm.Potential``.

Scenario x judge interaction
----------------------------
With ``scenario_judge="auto"`` (default; ``True`` | ``False`` as in the REML and ANOVA backends) the model gains
(alpha gamma)_il ~ N(0, sigma_sj^2), sigma_sj ~ HalfStudentT(3, sd_y), wherever some judge scored two
generations of a scenario, and reports ``scenario_judge`` = sigma_sj^2 (``residual`` is then the within-cell
residual). Its effects are integrated out exactly too, from the per-pattern statistics of
:mod:`cjstats.stats.scenario_judge` through the REML backend's evaluator of A = [J y0]'H^{-1}[J y0] and log|H|
(:mod:`cjstats.estimators.bayes.scenario_judge`), and the same two parametrisations apply. The marginal one
(default) samples the other scales on the log scale and sigma_sj as |u| on a signed coordinate u: the term's
posterior often piles up at 0, a long tail on the log scale that doubled NUTS's gradient evaluations, while
the density of u is smooth through 0 (the posterior and the prior are unchanged; issue 34). Its density runs
in a numba kernel of plain loops (no BLAS), handed to nutpie as C callbacks like the ordinal model's
(:mod:`cjstats.estimators.bayes.native`: the chains run in parallel), and (mu, gamma) are drawn after sampling
from the conditional normal the callbacks store; the joint density runs in numpy. ``sampler="pymc"`` samples
the PyMC model of record (:func:`~cjstats.estimators.bayes.pymc_model.build_pymc_gaussian_sj`, the per-pattern
algebra in PyTensor).
Where the term is not fitted its row is not identifiable (with the reason) and its draws are NaN. The ordinal
likelihood has no such term.

Samplers
--------
``sampler="nutpie"`` (the default when nutpie is installed) runs nutpie's NUTS on the log density written
out with its exact gradient, on PyMC's unconstrained space (log scales, zero-sum transform), compiled once
with numba and cached on disk, so no model is compiled per fit (compiling the PyMC graph took 20-120 s
here, and most of the issue's measured times). ``sampler="pymc"`` runs ``pm.sample`` on the PyMC model
(the reference; slow to compile). The tests check that the hand-written densities equal PyMC's log density
and gradient, and that the marginal density equals the joint one integrated over (mu, gamma).

With one generation per scenario (m = 1) alpha_i + beta_i1 is one constant per scenario: the model then has no
generation effect, the ``generation`` row is not identifiable (no number, so the prior cannot masquerade as an
estimate) and ``scenario`` holds sigma2_alpha + sigma2_beta. Likewise, when every (scenario, generation) cell
holds a single judge call (one judge per generation, as CyclicJudge schedules do), beta_ij + eps_ijl is one
draw: ``generation`` is not identifiable and ``residual`` holds sigma2_beta + sigma2_eps.

Ordinal option
--------------
``likelihood="ordinal"`` treats the scores as ordered categories (judge scores are bounded: the limitation the
paper states for its linear model) with a cumulative-logit (default) or, ``link="probit"``, cumulative-probit
link and the same effects on a latent scale; see :mod:`cjstats.estimators.bayes.ordinal`. Its ``scenario``,
``generation``, ``judge_panel``, ``judge_population`` and ``residual`` (fixed at pi^2/3, the logistic variance,
or 1 for probit) are on the latent scale, and
``mu`` is the expected score of the panel on the score scale; every row says so in ``ci_method`` and ``note``,
and ``draws.attrs["scale"]`` says so for the draws. Latent variances are not score variances: Proposition 1
applied to them predicts the variance of a latent mean, not of the benchmark's mean score. Allocation on the
score scale needs posterior-predictive simulation of scores from the posterior (cutpoints, gamma and scales
are all in the ``posterior`` DataTree); this backend does not do that simulation yet.

Diagnostics
-----------
Each group's ``diagnostics`` entry holds the largest r_hat, the smallest bulk and tail ESS (over every sampled
parameter and estimand), the number of divergent transitions, the sampler, draws, chains, seed and sampling
time. A :class:`~cjstats.exceptions.CjstatsWarning` is raised when r_hat > 1.01, an ESS is below 100 per chain,
or any transition diverged (Vehtari et al. 2021): a poor fit is never accepted silently.

References
----------
Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021). Rank-normalization, folding, and localization: an
improved R-hat for assessing convergence of MCMC. *Bayesian Analysis* 16(2), 667-718.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib.util import find_spec
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats.results.estimands import COMPONENTS
from cjstats._validate import check_choice, check_number, check_positive_int
from cjstats.results.components import ComponentRow, ParameterCovariance, VarianceComponents
from cjstats.estimators.base import (
    M1_NOTE,
    SJ_NOTE,
    GroupFit,
    resolve_scenario_judge,
    as_stats,
    check_estimable,
    fit_groups,
    group_name,
    location_params,
    rows_for,
)
from cjstats._warnings import warn
from cjstats._progress import progress_enabled
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io.scores import GroupData, Scores
from cjstats.estimators.bayes.priors import GAUSSIAN_PRIORS, ORDINAL_PRIORS
from cjstats.stats import CellStats, ScoreStats

__all__ = ["ESS_PER_CHAIN_MIN", "GAUSSIAN_PRIORS", "ONE_CALL_NOTE", "ORDINAL_PRIORS", "RHAT_MAX", "fit"]

Likelihood = Literal["gaussian", "ordinal"]
Sampler = Literal["auto", "nutpie", "pymc"]
CiKind = Literal["eti", "hdi"]
Parametrisation = Literal["marginal", "joint"]

#: Default tuning steps per chain of the ordinal model (the Gaussian model's is 1000).
ORDINAL_TUNE = 500

#: Largest acceptable r_hat and smallest acceptable ESS per chain (Vehtari et al. 2021).
RHAT_MAX: float = 1.01
ESS_PER_CHAIN_MIN: float = 100.0

#: The note of the ``generation`` row when every (scenario, generation) cell holds one judge call.
ONE_CALL_NOTE = ("not identifiable: every (scenario, generation) cell has one judge call, so beta_ij + eps_ijl is "
                 "one draw and the residual component holds sigma2_beta + sigma2_eps")


# ------------------------------------------------------------------------------------------- validation
def _resolve_sampler(sampler: str) -> str:
    check_choice("sampler", sampler, ("auto", "nutpie", "pymc"), caller="estimate")
    has_nutpie = find_spec("nutpie") is not None
    if sampler == "auto":
        return "nutpie" if has_nutpie else "pymc"
    if sampler == "nutpie" and not has_nutpie:
        raise CjstatsError("sampler='nutpie' requires package(s): nutpie. Install it with pip install nutpie, "
                           "or pass sampler='pymc'.")
    if sampler == "pymc" and find_spec("pymc") is None:
        raise CjstatsError("sampler='pymc' requires package(s): pymc. Install it with pip install 'cjstats[bayes]'.")
    return sampler


def _check_priors(priors: Mapping[str, float] | None, likelihood: str) -> dict[str, float]:
    allowed = GAUSSIAN_PRIORS if likelihood == "gaussian" else ORDINAL_PRIORS
    if priors is None:
        return {}
    if not isinstance(priors, Mapping):
        raise CjstatsError(f"The 'priors' argument of estimate must be a mapping of prior scales. "
                           f"Got {type(priors).__name__} instead.")
    out = {}
    for key, value in priors.items():
        if key not in allowed:
            names = ", ".join(f"'{k}'" for k in allowed)
            raise CjstatsError(f"The 'priors' argument of estimate has no key '{key}' for likelihood="
                               f"'{likelihood}' (known: {names}).")
        val = check_number(f"priors['{key}']", value, caller="estimate")
        if not val > 0:
            raise CjstatsError(f"The 'priors['{key}']' argument of estimate must be a positive scale. "
                               f"Got {value!r} instead.")
        out[key] = val
    return out


def _group_seeds(seed: int | None, n: int) -> tuple[int, list[int]]:
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**63))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise CjstatsError(f"The 'seed' argument of estimate must be a non-negative integer. Got {seed!r} instead.")
    children = np.random.SeedSequence(int(seed)).spawn(n)
    return int(seed), [int(c.generate_state(1, dtype=np.uint64)[0] % (2**63)) for c in children]


# ---------------------------------------------------------------------------------------------- sampling
@dataclass(frozen=True, slots=True)
class _Run:
    """What sampling one group produced: the DataTree and the estimand draws (chain, draw)."""

    tree: Any
    components: dict[str, np.ndarray]    # name -> (chains, draws); only the components the model has
    gamma: np.ndarray                     # (chains, draws, K)
    check_vars: list[str]                 # variables whose r_hat / ESS are checked
    seconds: float
    sampler: str


def _sample_nutpie(density: Any, *, names: list[str], judge_labels: tuple[str, ...], draws: int, tune: int,
                   chains: int, seed: int, progress: bool, target_accept: float, cores: int | None,
                   native: bool = False) -> Any:
    """NUTS (nutpie) on a hand-coded log density with gradient: no compilation step. ``native``: hand the
    density to nutpie as compiled C callbacks (:mod:`cjstats.estimators.bayes.native`; the chains then run in
    parallel without the GIL), falling back to the Python callback where that is not available. The marginal
    densities (the paper model's and the scenario x judge one) store per draw the conditional normal of
    (mu, gamma), and their ``conditional_draws`` draws them after sampling, one stream per chain from ``seed``
    (:class:`~cjstats.estimators.bayes.gaussian._ConditionalDraws`): nutpie hands every chain's expand function
    the seeds (0, 0, 0), so a stream made there would repeat across chains and fits."""
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc

    conditional = hasattr(density, "conditional_draws")
    if conditional:
        out_names, shapes, out_coords, out_dims = density.conditional_layout()
    else:
        probe = density.expand(density.initial_point(np.random.default_rng(0)))
        out_names, shapes, out_coords, out_dims = names, [tuple(np.shape(probe[nm])) for nm in names], {}, {}

    def make_logp_fn() -> Any:
        def logp(x: np.ndarray, **_: Any) -> tuple[float, np.ndarray]:
            try:
                return density.logp(x)
            except (ArithmeticError, ValueError, np.linalg.LinAlgError):  # an invalid point: zero density
                return -math.inf, np.zeros(len(x))
        return logp

    def make_expand_fn(seed1: int, seed2: int, chain: int) -> Any:  # nutpie passes 0, 0, 0 to every chain
        if conditional:
            def expand_conditional(x: np.ndarray, **__: Any) -> dict[str, np.ndarray]:
                return density.conditional_expand(x)
            return expand_conditional
        def expand_plain(x: np.ndarray, **__: Any) -> dict[str, np.ndarray]:
            return density.expand(x)
        return expand_plain

    def init(s: int) -> np.ndarray:
        return density.initial_point(np.random.default_rng(int(s)))

    dims = {nm: dim for nm, dim in density.expanded_dims().items() if nm in names}
    coords = {"judge": list(judge_labels), **density.coords()}
    model = None
    if native:
        try:
            from cjstats.estimators.bayes import native as nat
        except Exception:  # noqa: BLE001 - numba missing or unusable: the Python callback is exact, only slower
            nat = None
        if nat is not None and conditional:                           # native: a marginal density
            from cjstats.estimators.bayes.gaussian import MarginalDensity

            make = nat.native_marginal_model if isinstance(density, MarginalDensity) else nat.native_sj_model
            model = make(density, init=init)
        elif nat is not None:
            model = nat.native_model(density, names=names, shapes=shapes, coords=coords, dims=dims, init=init)
    if model is None:
        model = from_pyfunc(density.ndim, make_logp_fn, make_expand_fn, [np.dtype("float64")] * len(out_names),
                            shapes, out_names, coords={**coords, **out_coords}, dims={**dims, **out_dims},
                            make_initial_point_fn=init)
    tree = nutpie.sample(model, draws=draws, tune=tune, chains=chains, seed=seed, progress_bar=progress,
                         target_accept=target_accept, cores=cores if cores is not None else chains,
                         save_warmup=False)
    if conditional:
        density.conditional_draws(tree, names=names, seed=seed, judge=list(judge_labels))
    return tree


def _sample_pymc(model: Any, *, draws: int, tune: int, chains: int, seed: int, progress: bool,
                 target_accept: float, cores: int | None) -> Any:
    import pymc as pm

    from cjstats._pytensor import reproducible_compile

    with warnings.catch_warnings(), reproducible_compile():  # same bits from a cold or warm compile cache
        warnings.simplefilter("ignore", FutureWarning)
        return pm.sample(draws=draws, tune=tune, chains=chains, random_seed=seed, progressbar=progress,
                         nuts_sampler="pymc", model=model, compute_convergence_checks=False, quiet=not progress,
                         target_accept=target_accept, cores=cores if cores is not None else min(chains, 4))


def _posterior_array(tree: Any, name: str) -> np.ndarray:
    return np.asarray(tree.posterior[name].transpose("chain", "draw", ...).values, dtype=np.float64)


def _run_gaussian(g: CellStats, *, priors: dict[str, float], sampler: str, draws: int, tune: int, chains: int,
                  seed: int, progress: bool, target_accept: float, cores: int | None,
                  parametrisation: str = "marginal", scenario_judge: bool = False) -> _Run:
    from cjstats.estimators.bayes.gaussian import (
        GaussianDensity,
        GaussianPriors,
        MarginalDensity,
    )
    from cjstats.estimators.bayes.pymc_model import build_pymc_gaussian, gaussian_prior_scales

    st = g.for_gaussian()
    # the spec's one set of priors (the joint fit uses the same function), with the user's scales over them
    pr = GaussianPriors(**gaussian_prior_scales(st.sd, ["scenario", "generation", "residual", "judge",
                                                        "scenario_judge"], priors))
    t0 = time.perf_counter()
    if scenario_judge:
        from cjstats.estimators.bayes.scenario_judge import SJJointDensity, SJMarginalDensity, sj_data

        data = sj_data(g)
    if sampler == "nutpie":
        if scenario_judge:
            density = SJMarginalDensity(data, pr) if parametrisation == "marginal" else SJJointDensity(data, pr)
        else:
            density = MarginalDensity(st, pr) if parametrisation == "marginal" else GaussianDensity(st, pr)
        names = density.expanded_names()
        tree = _sample_nutpie(density, names=names, judge_labels=g.judge_labels, draws=draws, tune=tune,
                              chains=chains, seed=seed, progress=progress, target_accept=target_accept, cores=cores,
                              native=isinstance(density, SJMarginalDensity if scenario_judge else MarginalDensity))
    else:
        if scenario_judge:
            from cjstats.estimators.bayes.pymc_model import build_pymc_gaussian_sj

            model = build_pymc_gaussian_sj(data, pr, g.judge_labels)
        else:
            model = build_pymc_gaussian(st, pr, g.judge_labels)
        tree = _sample_pymc(model, draws=draws, tune=tune, chains=chains, seed=seed, progress=progress,
                            target_accept=target_accept, cores=cores)
    seconds = time.perf_counter() - t0
    sj = ["scenario_judge"] if scenario_judge else []
    comps = ["mu", "scenario", *(["generation"] if st.has_generation else []), *sj, "residual", "judge_panel",
             "judge_population"]
    free = ["mu", "sigma_scenario", *(["sigma_generation"] if st.has_generation else []),
            *(["sigma_scenario_judge"] if scenario_judge else []), "sigma_residual", "sigma_judge", "gamma"]
    return _Run(tree=tree, components={c: _posterior_array(tree, c) for c in comps},
                gamma=_posterior_array(tree, "gamma"), check_vars=free + comps[1:], seconds=seconds,
                sampler=sampler)


def _run_ordinal(g: GroupData, *, priors: dict[str, float], sampler: str, draws: int, tune: int, chains: int,
                 seed: int, progress: bool, target_accept: float, cores: int | None, link: str = "logit") -> _Run:
    from cjstats.estimators.bayes.ordinal import (
        OrdinalDensity,
        expected_score,
        RESIDUAL_VARIANCE,
        location_shift,
        ordinal_data,
    )

    od = ordinal_data(g)
    if len(od.values) < 2:  # pragma: no cover - check_estimable already rejects constant scores
        raise CjstatsError(f"{g.label().capitalize()} has a single score value: the ordinal model needs two.")
    t0 = time.perf_counter()
    if sampler == "nutpie":
        density = OrdinalDensity(od, priors, link=link)
        tree = _sample_nutpie(density, names=density.expanded_names(), judge_labels=g.judge_labels, draws=draws,
                              tune=tune, chains=chains, seed=seed, progress=progress, target_accept=target_accept,
                              cores=cores, native=True)
    else:
        from cjstats.estimators.bayes.pymc_model import build_pymc_ordinal

        model = build_pymc_ordinal(od, priors, g.judge_labels, link=link)
        tree = _sample_pymc(model, draws=draws, tune=tune, chains=chains, seed=seed, progress=progress,
                            target_accept=target_accept, cores=cores)
    seconds = time.perf_counter() - t0
    gamma = _posterior_array(tree, "gamma")
    cut = _posterior_array(tree, "cutpoints")
    s2a = _posterior_array(tree, "scenario")
    s2 = s2a + _posterior_array(tree, "generation") if od.has_generation else s2a
    shape = s2.shape
    shift = location_shift(s2a.ravel(), od.n_scenarios, np.random.default_rng([seed, 1]))
    mu = expected_score(cut.reshape(-1, cut.shape[-1]), od.values, gamma.reshape(-1, gamma.shape[-1]),
                        s2.ravel(), shift=shift, link=link).reshape(shape)
    post = tree["posterior"].to_dataset()
    post["mu"] = (("chain", "draw"), mu)
    post["mu"].attrs["description"] = "expected score of the panel for a new scenario and generation (score scale)"
    tree["posterior"] = post
    comps = ["mu", "scenario", *(["generation"] if od.has_generation else []), "judge_panel", "judge_population"]
    components = {c: _posterior_array(tree, c) for c in comps}
    components["residual"] = np.full(shape, RESIDUAL_VARIANCE[link])
    free = ["sigma_scenario", *(["sigma_generation"] if od.has_generation else []), "sigma_judge", "gamma",
            "cutpoints"]
    return _Run(tree=tree, components=components, gamma=gamma, check_vars=free + comps, seconds=seconds,
                sampler=sampler)


# ------------------------------------------------------------------------------------------- summarising
def _interval(x: np.ndarray, level: float, kind: str) -> tuple[float, float]:
    """ArviZ's equal-tailed or highest-density interval of the draws ``x`` (chain, draw)."""
    from arviz_stats.base import array_stats

    flat = np.ravel(x)
    ci = array_stats.eti(flat, level) if kind == "eti" else array_stats.hdi(flat, level)
    return float(ci[0]), float(ci[1])


def _flat_params(run: _Run) -> tuple[list[str], np.ndarray]:
    """Every checked variable as rows of a (P, chain, draw) array, with ArviZ-style labels."""
    labels, arrays = [], []
    post = run.tree.posterior
    for name in run.check_vars:
        a = _posterior_array(run.tree, name)
        if a.ndim == 2:
            labels.append(name)
            arrays.append(a)
            continue
        dim = next(d for d in post[name].dims if d not in ("chain", "draw"))
        for j, c in enumerate(post[name].coords[dim].values):
            labels.append(f"{name}[{c}]")
            arrays.append(a[..., j])
    return labels, np.stack(arrays)


def _diagnose(run: _Run, g: CellStats, chains: int) -> dict[str, Any]:
    """r_hat (rank-normalised, split), bulk and tail ESS of every checked variable, and divergences."""
    from arviz_stats.base import array_stats

    labels, ary = _flat_params(run)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r_hat = np.asarray(array_stats.rhat(ary), dtype=float)
        bulk = np.asarray(array_stats.ess(ary, method="bulk"), dtype=float)
        tail = np.asarray(array_stats.ess(ary, method="tail", prob=(0.05, 0.95)), dtype=float)
    tab = pd.DataFrame({"r_hat": r_hat, "ess_bulk": bulk, "ess_tail": tail}, index=pd.Index(labels, name="variable"))
    r_max = float(np.nanmax(r_hat)) if np.isfinite(r_hat).any() else math.nan
    worst = labels[int(np.nanargmax(r_hat))] if np.isfinite(r_hat).any() else ""
    ess_bulk = float(np.nanmin(bulk)) if np.isfinite(bulk).any() else math.nan
    ess_tail = float(np.nanmin(tail)) if np.isfinite(tail).any() else math.nan
    stats = run.tree.sample_stats
    divergences = int(np.asarray(stats["diverging"].values).sum()) if "diverging" in stats else 0
    diag = {"r_hat_max": r_max, "r_hat_worst": worst, "ess_bulk_min": ess_bulk, "ess_tail_min": ess_tail,
            "divergences": divergences, "per_variable": tab}
    problems = []
    if not r_max <= RHAT_MAX:
        problems.append(f"max r_hat = {r_max:.3f} ({worst}) > {RHAT_MAX}")
    ess_min = ESS_PER_CHAIN_MIN * chains
    if not min(ess_bulk, ess_tail) >= ess_min:
        problems.append(f"min ESS = {min(ess_bulk, ess_tail):.0f} < {ess_min:.0f} ({ESS_PER_CHAIN_MIN:.0f} per chain)")
    if divergences:
        problems.append(f"{divergences} divergent transitions")
    diag["converged"] = not problems
    diag["problems"] = problems
    if problems:
        warn(f"The Bayesian fit of {g.label()} failed its convergence checks: {'; '.join(problems)}. "
             f"Increase draws and tune, or check the priors (see diagnostics).", CjstatsWarning,
             stacklevel=2)
    return diag


def _row(name: str, x: np.ndarray, level: float, kind: str, method: str, *, view: str = "panel",
         note: str = "") -> ComponentRow:
    mean = float(np.mean(x))
    lo, hi = _interval(x, level, kind)
    return ComponentRow(name, mean, lo, hi, float(np.std(x, ddof=1)), method, view, mean, False, True, note)


def _rows(run: _Run, g: CellStats, level: float, kind: str, likelihood: str, sj_note: str = SJ_NOTE,
          link: str = "logit") -> tuple[list[ComponentRow], list[dict]]:
    k = g.design.n_judges
    label = f"posterior {kind.upper()}"
    latent = likelihood == "ordinal"
    method = label + (" (latent scale)" if latent else "")
    lat_note = f"latent (cumulative-{link}) scale" if latent else ""

    def join(*parts: str) -> str:
        return "; ".join(p for p in parts if p)

    has_gen = "generation" in run.components
    m1 = g.design.generations_max == 1
    rows: list[ComponentRow] = []
    if latent:
        rows.append(_row("mu", run.components["mu"], level, kind, label + " (score scale)",
                         note="score scale: expected score of the panel for a new scenario and generation"))
    else:
        rows.append(_row("mu", run.components["mu"], level, kind, label))
    scen_note = "m = 1: holds sigma2_alpha + sigma2_beta (generation not separable)" if m1 else ""
    resid_note = "" if has_gen or m1 else ("every cell has one judge call: holds sigma2_beta + sigma2_eps "
                                           "(generation not separable)")
    rows.append(_row("scenario", run.components["scenario"], level, kind, method, note=join(lat_note, scen_note)))
    if has_gen:
        rows.append(_row("generation", run.components["generation"], level, kind, method, note=lat_note))
    elif m1:
        rows.append(ComponentRow.not_identifiable("generation", M1_NOTE))
    else:
        rows.append(ComponentRow.not_identifiable("generation", ONE_CALL_NOTE))
    if "scenario_judge" in run.components:
        rows.append(_row("scenario_judge", run.components["scenario_judge"], level, kind, method,
                         note="residual is the within-cell residual"))
    else:
        rows.append(ComponentRow.not_identifiable("scenario_judge", sj_note))
    if latent:
        from cjstats.estimators.bayes.ordinal import RESIDUAL_VARIANCE

        r = RESIDUAL_VARIANCE[link]
        unit = ("the logistic residual variance pi^2/3" if link == "logit" else
                "the standard normal residual variance 1")
        rows.append(ComponentRow("residual", r, r, r, 0.0, f"fixed by the {link} link", "panel", r, False, True,
                                 f"latent scale: {unit} is the unit of the latent scale, not an estimate"))
    else:
        rows.append(_row("residual", run.components["residual"], level, kind, method, note=resid_note))
    rows.append(_row("judge_panel", run.components["judge_panel"], level, kind, method,
                     note=join(lat_note, "judges fixed: mean of gamma_l^2 over the panel")))
    rows.append(_row("judge_population", run.components["judge_population"], level, kind, method, view="population",
                     note=join(lat_note, f"judges random: {k} judges give {k - 1} degrees of freedom, so the "
                                         f"interval is wide and depends on the prior")))
    offsets = []
    for j, lab in enumerate(g.judge_labels):
        x = run.gamma[..., j]
        lo, hi = _interval(x, level, kind)
        offsets.append({"judge": lab, "estimate": float(np.mean(x)), "std_error": float(np.std(x, ddof=1)),
                        "lower": lo, "upper": hi, "ci_method": method})
    return rows, offsets


def _draws_frame(run: _Run, g: CellStats) -> pd.DataFrame:
    any_c = next(iter(run.components.values()))
    n_chain, n_draw = any_c.shape
    chain, draw = np.meshgrid(np.arange(n_chain), np.arange(n_draw), indexing="ij")
    data: dict[str, Any] = dict(g.key)
    data["chain"] = chain.ravel()
    data["draw"] = draw.ravel()
    for c in COMPONENTS:
        data[c] = run.components[c].ravel() if c in run.components else np.full(chain.size, np.nan)
    return pd.DataFrame(data)


# ------------------------------------------------------------------------------------------------ the fit
def _capabilities() -> Any:
    from cjstats.estimators.capabilities import CAPABILITIES   # what cjstats.estimators registers it with

    return CAPABILITIES["bayes"]


def fit(stats: ScoreStats | Scores, *, ci_level: float, seed: int | None = None, rows: Scores | None = None,
        draws: int = 1000, tune: int | None = None,
        chains: int = 4, ci_kind: CiKind = "eti", likelihood: Likelihood = "gaussian", link: str = "logit",
        priors: Mapping[str, float] | None = None, sampler: Sampler = "auto", progress: bool | None = None,
        target_accept: float | None = None, cores: int | None = None,
        parametrisation: Parametrisation = "marginal", scenario_judge: Any = "auto") -> VarianceComponents:
    """Bayesian fit of every model (x criterion) of ``scores`` (see the module docstring for the model).

    Parameters
    ----------
    stats : ScoreStats
        The statistics of every unit (:func:`cjstats.stats.build_stats`); a ``Scores`` table is reduced first
        and kept as ``rows``.
    ci_level : float
        Level of every credible interval.
    rows : Scores, optional
        The score rows, read only by ``likelihood="ordinal"`` (the registry's ``Capabilities.rows_options``).
    seed : int, optional
        Seed of the sampler; the same seed gives the same numbers. Each group gets its own stream
        (``numpy.random.SeedSequence(seed).spawn``). ``None`` draws one, recorded in ``diagnostics``.
    draws, tune, chains : int
        Posterior draws kept per chain, tuning iterations per chain, number of chains. ``tune=None`` is 1000 for
        the Gaussian model and 500 for the ordinal one (:data:`ORDINAL_TUNE`), whose step size and mass matrix
        have settled by then: on 4,000 rows, 500 and 1000 tuning steps give the same ESS and r_hat
        (``benchmarks/bench_bayes_ordinal.py``), and the tuning is a third of the run time.
    ci_kind : {"eti", "hdi"}
        Equal-tailed or highest-density intervals; recorded in ``ci_method``.
    likelihood : {"gaussian", "ordinal"}
        The paper's linear model (default) or a cumulative-link model of the scores as ordered categories
        with the same effects (components on the latent scale).
    link : {"logit", "probit"}
        ``likelihood="ordinal"`` only: the cumulative link, P(Y <= k) = F(c_k - eta) with F the standard
        logistic (default; latent residual variance pi^2/3) or the standard normal (residual variance 1, the
        scale of ``method="ordinal"``'s default and of the reference study's latent truth).
    priors : mapping, optional
        Prior scales overriding the defaults. Gaussian model (:data:`GAUSSIAN_PRIORS`, in score units): ``mu``
        is the standard deviation of the normal prior around the observed mean, each ``sigma_*`` the scale of
        a half-Student-t prior with 3 degrees of freedom. Ordinal model (:data:`ORDINAL_PRIORS`, latent
        units): ``sigma_*`` as above, ``cutpoints`` the standard deviation of their normal prior.
    sampler : {"auto", "nutpie", "pymc"}
        ``"nutpie"``: nutpie's NUTS on the hand-coded log density (no compilation; default when installed).
        ``"pymc"``: ``pm.sample`` on the PyMC model (compiles it first).
    progress : bool, optional
        Show the sampler's progress bar on stderr (one per model x criterion group). ``None`` (default): only when
        stderr is a terminal (:func:`cjstats._progress.progress_enabled`), so logs and pipes stay clean.
    target_accept : float, optional
        NUTS target acceptance rate (raise it, e.g. to 0.95, if divergences are reported). Default 0.8, and 0.9 for
        a unit that fits ``scenario_judge`` with ``parametrisation="joint"`` or ``sampler="pymc"``: there the
        term's scale is sampled on the log scale, and it is often near 0, where that geometry narrows (at the
        paper's design without an interaction, 0.8 gave a divergent transition in 8,000 and 0.9 none). The default
        marginal density samples it as sigma_sj = |u| instead (smooth through 0: no divergence at 0.8 on the
        paper's design, small and unbalanced tables, 15 fits).
    cores : int, optional
        Chains run in parallel (default: all chains).
    parametrisation : {"marginal", "joint"}
        Gaussian model with ``sampler="nutpie"`` only. ``"marginal"`` (default) samples the log scales (and
        sigma_scenario_judge = |u| on a signed coordinate u) with mu and gamma integrated out and draws
        (mu, gamma) exactly from their conditional normal; ``"joint"`` samples (mu, log scales, gamma) with gamma
        centred, as the PyMC model does (a funnel when judge effects are weak). Both target the same posterior.
    scenario_judge : {"auto", True, False}
        Fit the scenario x judge interaction (``scenario_judge`` = sigma_sj^2, the variance of (alpha gamma)_il,
        prior sigma_sj ~ HalfStudentT(3, sd_y)): ``"auto"`` (default) where some judge scored two generations of
        a scenario, ``True`` (refused where it is not identifiable) or ``False`` (the paper's model, the
        interaction left in the residual). Where it is fitted ``residual`` is the within-cell residual; where it
        is not, its row is not identifiable and says why, and its draws are NaN. The Gaussian likelihood only:
        ``likelihood="ordinal"`` leaves it out (``True`` is refused).

    Returns
    -------
    VarianceComponents
        With ``method="bayes"``; ``draws`` holds the posterior draws of every component in long format and
        ``posterior`` the full posterior of each group (an ArviZ ``DataTree``).

    Examples
    --------
    >>> import cjstats as cj
    >>> fit = cj.estimate(cj.datasets.load("hanna"), method="bayes", seed=1, draws=500, chains=2)  # doctest: +SKIP
    >>> fit.components[["model", "component", "estimate", "lower", "upper"]]  # doctest: +SKIP
    """
    check_choice("ci_kind", ci_kind, ("eti", "hdi"), caller="estimate")
    check_choice("likelihood", likelihood, ("gaussian", "ordinal"), caller="estimate")
    check_choice("parametrisation", parametrisation, ("marginal", "joint"), caller="estimate")
    draws = check_positive_int("draws", draws, caller="estimate", minimum=4)
    if tune is None:
        tune = ORDINAL_TUNE if likelihood == "ordinal" else 1000
    tune = check_positive_int("tune", tune, caller="estimate", minimum=1)
    chains = check_positive_int("chains", chains, caller="estimate", minimum=1)
    if cores is not None:
        cores = check_positive_int("cores", cores, caller="estimate", minimum=1)
    ta = None if target_accept is None else check_number("target_accept", target_accept, caller="estimate")
    if ta is not None and not 0.0 < ta < 1.0:
        raise CjstatsError(f"The 'target_accept' argument of estimate must lie in (0, 1). Got {target_accept!r} "
                           f"instead.")
    user_priors = _check_priors(priors, likelihood)
    check_choice("link", link, ("logit", "probit"), caller="estimate")
    if link != "logit" and likelihood != "ordinal":
        raise CjstatsError(f"The 'link' argument of estimate applies to likelihood='ordinal' only; the Gaussian "
                           f"model has no link. Drop link={link!r} or add likelihood='ordinal'.")
    resolved = _resolve_sampler(sampler)
    stats, rows = as_stats(stats, rows)
    caps = _capabilities()
    if caps.needs_rows({"likelihood": likelihood}) and rows is None:
        raise CjstatsError("likelihood='ordinal' needs the score rows: pass rows=scores (cjstats.estimate does this "
                           "for you).")
    groups = list(stats)
    for g in groups:
        check_estimable(g)
        if g.design.n_rows == g.design.n_scenarios:
            raise CjstatsError(f"{g.label().capitalize()} has one judge call per scenario: the scenario and "
                               f"residual variances cannot be separated. Score each scenario at least twice.")
    seed, seeds = _group_seeds(seed, len(groups))
    sj_plan = [_resolve_sj(g, scenario_judge, likelihood) for g in groups]

    fits: dict[str, GroupFit] = {}
    frames: list[pd.DataFrame] = []
    trees: dict[str, Any] = {}
    opts = {"sampler": resolved, "draws": draws, "tune": tune, "chains": chains, "progress": progress_enabled(progress),
            "target_accept": ta, "cores": cores}
    for g, s, (sj_fit, sj_note) in zip(groups, seeds, sj_plan):
        # 0.9 where sigma_sj is sampled on the log scale (joint density, PyMC), 0.8 on the marginal's |u| coordinate
        log_sj = sj_fit and (resolved != "nutpie" or parametrisation != "marginal")
        opts["target_accept"] = ta if ta is not None else (0.9 if log_sj else 0.8)
        if likelihood == "gaussian":
            run = _run_gaussian(g, priors=user_priors, seed=s, parametrisation=parametrisation,
                                scenario_judge=sj_fit, **opts)
        else:
            run = _run_ordinal(rows_for(rows, g), priors={**ORDINAL_PRIORS, **user_priors}, seed=s, link=link,
                               **opts)
        diag = _diagnose(run, g, chains)
        diag.update({"sampler": run.sampler, "likelihood": likelihood, "draws": draws, "tune": tune,
                     "target_accept": opts["target_accept"],
                     "chains": chains, "seed": s, "seconds": run.seconds, "n": g.design.n_scenarios,
                     "m_min": g.design.generations_min, "m_max": g.design.generations_max,
                     "k": g.design.n_judges, "n_rows": g.design.n_rows,
                     "scenario_judge": "fitted" if sj_fit else sj_note})
        comp_rows, offsets = _rows(run, g, ci_level, ci_kind, likelihood, sj_note, link=link)
        if likelihood == "ordinal":        # separation: the priors keep the offsets finite, so they are prior-driven
            from cjstats.estimators.identification import (
                as_records,
                ordinal_separation,
                prior_driven,
                warn_findings,
            )

            gd = rows_for(rows, g)
            vals, cats = np.unique(np.asarray(gd.y, dtype=np.float64), return_inverse=True)
            found = [replace(f, fix="the interval of this Bayesian fit is set by the prior (see priors=); drop the "
                                    "judge to rest on the data alone")
                     for f in ordinal_separation(cats, np.asarray(gd.judge), gd.judge_labels, vals)]
            comp_rows = prior_driven(comp_rows, found)
            sep = {f.judge for f in found}
            offsets = [{**o, "ci_method": o.get("ci_method", "") + "; prior-driven (separation)"}
                       if str(o.get("judge")) in sep else o for o in offsets]
            warn_findings(found, g.label(capital=True), stacklevel=3,
                          consequence="its posterior, and what depends on it, is set by the prior")
            diag["identification"] = as_records(found)
        _annotate(run.tree, likelihood=likelihood, sampler=run.sampler, g=g)
        loc = np.column_stack((run.components["mu"].ravel(), run.gamma.reshape(-1, run.gamma.shape[-1])))
        cov = ParameterCovariance(params=location_params(g.judge_labels), estimate=loc.mean(axis=0),
                                  cov=np.cov(loc, rowvar=False), draws=loc)
        fits[group_name(g)] = GroupFit(comp_rows, offsets, diag, cov)
        frames.append(_draws_frame(run, g))
        trees[group_name(g)] = run.tree

    draws_frame = pd.concat(frames, ignore_index=True)
    draws_frame.attrs["likelihood"] = likelihood
    draws_frame.attrs["scale"] = ("score" if likelihood == "gaussian" else
                                  f"latent (cumulative-{link}) for every component but mu, which is on the score "
                                  f"scale")
    options = {"draws": draws, "tune": tune, "chains": chains, "ci_kind": ci_kind, "likelihood": likelihood,
               **({"link": link} if likelihood == "ordinal" else {}),
               "priors": dict(user_priors), "sampler": resolved, "target_accept": ta, "seed_used": seed,
               "parametrisation": parametrisation, "scenario_judge": scenario_judge}
    return fit_groups(stats, lambda g: fits[group_name(g)], method="bayes", ci_level=ci_level, seed=seed,
                      options=options, draws=draws_frame, posterior=MappingProxyType(trees),
                      scale=caps.scale({"likelihood": likelihood}))


def _resolve_sj(g: CellStats, option: Any, likelihood: str) -> tuple[bool, str]:
    """Whether one unit's fit has the ``scenario_judge`` term, and the note of its row when it has not.

    As in the REML and ANOVA backends (:func:`~cjstats.estimators.base.resolve_scenario_judge`); the ordinal
    likelihood has no such term (``"auto"`` leaves it out, saying so in the row's note, and ``True`` is refused),
    and statistics from an engine that does not collect the scenario x judge sums cannot fit it (``"auto"``
    warns, as REML does).
    """
    ordinal = likelihood == "ordinal"
    unsupported = "likelihood='ordinal' has no scenario x judge term (use likelihood='gaussian')" if ordinal else None
    return resolve_scenario_judge(g, option, unsupported=unsupported, warn_unsupported=not ordinal)


def _annotate(tree: Any, *, likelihood: str, sampler: str, g: CellStats) -> None:
    from cjstats import __version__

    tree.attrs.update({"modeling_interface": "cjstats", "modeling_interface_version": __version__,
                       "likelihood": likelihood, "sampler": sampler, "model": g.model,
                       "criterion": "" if g.criterion is None else g.criterion})
