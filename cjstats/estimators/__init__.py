"""Estimator backends behind one entry point, :func:`estimate`, and the registry that describes them.

``REGISTRY`` is the only list of backends. Each entry is a :class:`Backend`: a name, the packages it needs
(and the extra that installs them), its declared :class:`Capabilities` and
``fit(stats, *, ci_level, seed, rows=None, **options) -> VarianceComponents``. :func:`estimate` reduces the
table to its sufficient statistics once (:func:`cjstats.stats.build_stats`) and hands the score rows only to
option sets that declare they need them (``Capabilities.rows_options``). No backend imports another; a new
backend is one module and one :func:`register_backend` call, and the shared conformance suite
(``tests/estimators/test_conformance.py``) tests it from the start, parametrised by its capabilities.
Optional dependencies are checked when a backend is chosen, not at import.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from importlib.util import find_spec
from os import PathLike
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from cjstats.results.estimands import COMPONENTS, JOINT_COMPONENTS
from cjstats._validate import check_choice, import_registered, resolve_ci_level
from cjstats.results.components import VarianceComponents
from cjstats.results.model import TERMS, Model, as_model, model_from_options
from cjstats.exceptions import CjstatsError
from cjstats.io.read import read_scores
from cjstats.io.scores import Scores
from cjstats.stats.engines import ENGINES
from cjstats.estimators.capabilities import CAPABILITIES, Capabilities, JointCapabilities, Scale  # noqa: F401  (re-exported)

__all__ = ["BACKENDS", "REQUIRES", "REGISTRY", "JOINT_BACKENDS", "JOINT_ESTIMANDS", "RANK_INTERVALS", "Backend",
           "Capabilities", "JointCapabilities", "ModuleBackend", "estimate", "compare", "available_backends",
           "get_backend", "get_joint_backend", "missing_packages", "register_backend", "register_joint_backend",
           "auto_method", "UnknownOptionError", "ENGINE_OPTIONS", "check_engine_options", "MODEL_OPTIONS",
           "model_options", "model_for", "can_fit", "check_fit", "resolve_model", "check_required_terms"]

Method = Literal["anova", "reml", "bayes"]


#: The estimands of a joint fit of several models (its ``component`` rows; ``judge_model`` in both views).
JOINT_ESTIMANDS: tuple[str, ...] = tuple(c for c in COMPONENTS if c != "scenario_judge") + JOINT_COMPONENTS

#: How :func:`cjstats.compare_models` makes simultaneous rank intervals from a joint fit.
RANK_INTERVALS: tuple[str, ...] = ("studentized_range", "max_t", "posterior")


@runtime_checkable
class Backend(Protocol):
    """One estimator backend (see :class:`ModuleBackend` for the registry's implementation).

    Per-model backends (:data:`REGISTRY`) take the statistics of every unit (``ScoreStats``) and return
    :class:`VarianceComponents`; joint backends (:data:`JOINT_BACKENDS`) take the joint statistics of several
    models (a ``JointStats``), also ``model_scenario=``, and return a ``JointFit``. Both receive the score rows
    only when their capabilities say the options need them (``Capabilities.needs_rows``), else ``rows=None``.
    """

    name: str
    requires: tuple[str, ...]
    extra: str
    capabilities: Capabilities

    def fit(self, stats: Any, *, ci_level: float, seed: int | None, rows: Scores | None = None,
            **options: Any) -> VarianceComponents: ...


@dataclass(frozen=True, slots=True)
class ModuleBackend:
    """A backend whose ``fit`` lives in a module imported only when the backend is used."""

    name: str
    module: str
    requires: tuple[str, ...] = ()
    extra: str = ""
    capabilities: Capabilities = field(default_factory=Capabilities)

    def fit(self, stats: Any, *, ci_level: float, seed: int | None, rows: Scores | None = None,
            **options: Any) -> VarianceComponents:
        mod = import_registered(self.module, "backend", self.name)
        return mod.fit(stats, ci_level=ci_level, seed=seed, rows=rows, **options)

    def hook(self, name: str) -> Any:
        """The module's function ``name``, one its capabilities declare in ``hooks`` (e.g. ``parameter_draws``, the
        draws of an ML fit's parameters that the decision layer simulates from), or one sentence."""
        if name not in self.capabilities.hooks:
            raise CjstatsError(f"method='{self.name}' declares no '{name}' (its hooks: "
                               f"{', '.join(self.capabilities.hooks) or 'none'}).")
        return getattr(import_registered(self.module, "backend", self.name), name)


#: The registry: method name -> backend.
REGISTRY: dict[str, Backend] = {}
#: The registry of joint fits of several models (:func:`cjstats.fit_joint`): method name -> backend.
JOINT_BACKENDS: dict[str, Backend] = {}


def _check_backend(backend: Any, caller: str) -> None:
    if not isinstance(backend, Backend):
        raise CjstatsError(f"{caller} takes a Backend (name, requires, extra, capabilities, fit). "
                           f"Got {type(backend).__name__} instead.")


def register_backend(backend: Backend) -> Backend:
    """Add a backend to the registry (a new backend is one module and one call to this)."""
    _check_backend(backend, "register_backend")
    REGISTRY[backend.name] = backend
    BACKENDS[backend.name] = getattr(backend, "module", backend.name)
    REQUIRES[backend.name] = (tuple(backend.requires), backend.extra)
    return backend


#: Method name -> module implementing ``fit`` (kept for callers of the first registry; filled by
#: :func:`register_backend`).
BACKENDS: dict[str, str] = {}
#: Packages each backend needs beyond numpy, scipy and pandas, with the extra that installs them.
REQUIRES: dict[str, tuple[tuple[str, ...], str]] = {}

register_backend(ModuleBackend(
    "anova", "cjstats.estimators.anova",
    capabilities=CAPABILITIES["anova"]))
register_backend(ModuleBackend(
    "reml", "cjstats.estimators.reml",   # the structured path needs only numpy/scipy; path="statsmodels" checks its own
    capabilities=CAPABILITIES["reml"]))
register_backend(ModuleBackend(
    "bayes", "cjstats.estimators.bayes", requires=("pymc", "arviz"), extra="bayes",
    capabilities=CAPABILITIES["bayes"]))
register_backend(ModuleBackend(
    "ordinal", "cjstats.estimators.ordinal_ml",   # cumulative link by AGQ: reads the rows, latent scale
    capabilities=CAPABILITIES["ordinal"]))


def register_joint_backend(backend: Backend) -> Backend:
    """Add a joint backend to :data:`JOINT_BACKENDS` (a new joint fit is one module, whose ``fit(stats, *,
    ci_level, seed, rows=None, model_scenario="pooled", **options) -> JointFit`` fits a ``JointStats``, and one
    call to this with its :class:`JointCapabilities`); the joint conformance suite then tests it."""
    _check_backend(backend, "register_joint_backend")
    if not isinstance(backend.capabilities, JointCapabilities):
        raise CjstatsError(f"register_joint_backend takes a backend whose capabilities are JointCapabilities. Got "
                           f"{type(backend.capabilities).__name__} for '{backend.name}' instead.")
    JOINT_BACKENDS[backend.name] = backend
    return backend


register_joint_backend(ModuleBackend(
    "anova", "cjstats.estimators.joint.anova",   # incomplete="drop" needs the rows to drop scenarios from
    capabilities=JointCapabilities(balanced_only=True, rows_options={"incomplete": ("drop",)},
                                   option_defaults={"incomplete": "error"}, estimands=JOINT_ESTIMANDS,
                                   options=("incomplete", "max_drop"), rank_intervals="studentized_range")))
register_joint_backend(ModuleBackend(
    "reml", "cjstats.estimators.joint.reml_backend",
    capabilities=JointCapabilities(estimands=JOINT_ESTIMANDS, model_scenario=("pooled", "per_model"),
                                   rank_intervals="max_t", options=("covariates",), stats_options=("covariates",))))
register_joint_backend(ModuleBackend(
    "bayes", "cjstats.estimators.joint.bayes", requires=("pymc", "arviz"), extra="bayes",
    capabilities=JointCapabilities(rows_always=True, samples=True, estimands=JOINT_ESTIMANDS,
                                   options=("draws", "tune", "chains", "target_accept", "nuts_sampler", "progress"),
                                   rank_intervals="posterior")))
register_joint_backend(ModuleBackend(
    "ordinal", "cjstats.estimators.joint.ordinal",   # verdicts and ratings: the joint cumulative-link mixed model
    capabilities=JointCapabilities(rows_always=True, estimands=JOINT_ESTIMANDS, terms=("scenario", "model_scenario"),
                                   likelihoods={"cumulative": ("probit", "logit")}, thresholds=("shared",),
                                   latent_options={"link": ("probit", "logit")}, option_defaults={"link": "probit"},
                                   options=("link", "nagq"), model_options=("link",), model_scenario=("pooled",),
                                   rank_intervals="max_t", hooks=("score_scale",))))


# ------------------------------------------------------------------------------------------ the model as data
#: How a :class:`~cjstats.results.model.Model` reaches a backend: option name -> its value for a model. A backend
#: names the options it takes in ``Capabilities.model_options``; this is the one translation.
MODEL_OPTIONS: dict[str, Callable[[Model], Any]] = {
    "scenario_judge": lambda m: m.scenario_judge,
    "likelihood": lambda m: "ordinal" if m.likelihood == "cumulative" else "gaussian",
    "link": lambda m: m.link,
    "thresholds": lambda m: m.thresholds,
    "generation": lambda m: (None if "generation" in m.auto else True) if "generation" in m.terms else False,
    "model_scenario": lambda m: m.model_scenario,
    "covariates": lambda m: list(m.covariates) or None,
    "model": lambda m: m,            # a backend that takes the specification itself (the path for new terms)
}


def model_options(backend: Backend, model: Model) -> dict[str, Any]:
    """The keyword options that make ``backend`` fit ``model`` (those its capabilities name)."""
    return {name: MODEL_OPTIONS[name](model) for name in backend.capabilities.model_options}


def model_for(backend: Backend, options: Mapping[str, Any]) -> Model:
    """The model a call with these options fits (today's keyword arguments as a :class:`Model`)."""
    caps = backend.capabilities
    unit = "joint" if isinstance(caps, JointCapabilities) else "model"
    vals = {**caps.option_defaults, **options}
    lik = vals.get("likelihood", next(iter(caps.likelihoods)))
    lik = "cumulative" if lik in ("ordinal", "cumulative") else lik
    spec = model_from_options(
        unit=unit, scenario_judge=vals.get("scenario_judge", "auto") if "scenario_judge" in caps.terms else False,
        likelihood=lik, link=vals.get("link") if lik != "gaussian" else None,
        thresholds=vals.get("thresholds", "shared"), generation=vals.get("generation"),
        model_scenario=vals.get("model_scenario", "pooled"), covariates=vals.get("covariates"))
    held = caps.likelihood_terms.get(spec.likelihood, caps.terms)
    return dataclasses.replace(spec, terms=tuple(t for t in spec.terms if t in held))


def _fitters(model: Model, test: Callable[[Backend], bool]) -> str:
    reg = JOINT_BACKENDS if model.unit == "joint" else REGISTRY
    names = [f"method='{n}'" for n, b in reg.items() if test(b)]
    return " or ".join(names) if names else "no registered backend"


def can_fit(method: str, model: Model | str, *, engine: str | None = None) -> tuple[bool, str]:
    """Whether backend ``method`` can fit ``model`` from the statistics of ``engine``, and if not, why.

    Read from the declarations alone (the backend's :class:`Capabilities`, the engine's ``EngineCapabilities``):
    the likelihood and link, the thresholds, every term the model requires (a term the model fits only where
    identifiable, ``Model.auto``, is left out where the backend or engine cannot fit it, and the fit says so),
    the terms the backend always fits, the form of the model x scenario variance and covariates. With ``engine``:
    the engine builds the statistics of the likelihood (``EngineCapabilities.likelihoods``) and of every term, and
    a term the backend fits from the score rows (``Capabilities.rows_terms``, e.g. the ordinal model's generation
    effect) is required only of an engine that keeps the rows in memory; where identifiable (``Model.auto``) it
    is fitted out of core in no group, and a group whose design identifies it is refused by the fit in one
    sentence.

    Returns
    -------
    (bool, str)
        ``(True, "")``, or ``(False, reason)`` with one sentence naming what to change.
    """
    spec = as_model(model, unit=model.unit if isinstance(model, Model) else "model") if isinstance(
        model, (Model, str)) else None
    if spec is None:
        return False, f"can_fit takes a cj.Model or a formula string. Got {type(model).__name__} instead."
    reg = JOINT_BACKENDS if spec.unit == "joint" else REGISTRY
    where = "cj.fit_joint" if spec.unit == "joint" else "cj.estimate"
    if method not in reg:
        return False, (f"{where} has no method '{method}' (its methods: {', '.join(reg)}).")
    backend = reg[method]
    caps = backend.capabilities
    if spec.likelihood not in caps.likelihoods:
        by = _fitters(spec, lambda b: spec.likelihood in b.capabilities.likelihoods)
        return False, (f"method='{method}' does not fit the {spec.likelihood} likelihood (it fits "
                       f"{', '.join(caps.likelihoods)}); {by} does.")
    if spec.link not in caps.likelihoods[spec.likelihood]:
        return False, (f"method='{method}' fits the {spec.likelihood} likelihood with link "
                       f"{' or '.join(repr(x) for x in caps.likelihoods[spec.likelihood])}, not '{spec.link}'.")
    if spec.likelihood == "cumulative" and spec.thresholds not in caps.thresholds:
        by = _fitters(spec, lambda b: spec.thresholds in b.capabilities.thresholds)
        return False, f"method='{method}' does not fit thresholds='{spec.thresholds}'; {by} does."
    held = caps.likelihood_terms.get(spec.likelihood, caps.terms)
    for t in spec.terms:
        if t not in held and t not in spec.auto:
            by = _fitters(spec, lambda b: spec.likelihood in b.capabilities.likelihoods and t in
                          b.capabilities.likelihood_terms.get(spec.likelihood, b.capabilities.terms))
            text = TERMS[t].joint_lme4 if spec.unit == "joint" else TERMS[t].lme4
            return False, (f"method='{method}' does not fit the {t} term {text} with the {spec.likelihood} "
                           f"likelihood; {by} does, or leave the term out of the model.")
    if spec.unit == "joint":
        if spec.model_scenario not in getattr(caps, "model_scenario", ("pooled",)):
            by = _fitters(spec, lambda b: spec.model_scenario in getattr(b.capabilities, "model_scenario", ()))
            return False, f"model_scenario='{spec.model_scenario}' is fitted by {by} only (not method='{method}')."
        if spec.covariates and "covariates" not in getattr(caps, "options", ()) and \
                "covariates" not in caps.model_options:
            by = _fitters(spec, lambda b: "covariates" in getattr(b.capabilities, "options", ()) or
                          "covariates" in b.capabilities.model_options)
            return False, f"covariate slopes are fitted by {by} only (not method='{method}')."
    if engine is not None:
        if engine not in ENGINES:
            return False, f"There is no engine '{engine}' (the engines: {', '.join(ENGINES)})."
        ecaps = ENGINES[engine].capabilities
        if spec.likelihood not in ecaps.likelihoods:
            by = " or ".join(f"'{n}'" for n, e in ENGINES.items() if spec.likelihood in e.capabilities.likelihoods)
            return False, (f"engine='{engine}' does not build the statistics of the {spec.likelihood} likelihood; "
                           f"use engine={by}.")
        for t in spec.terms:
            if t in caps.rows_terms and t not in spec.auto and not ecaps.in_memory:
                by = " or ".join(f"'{n}'" for n, e in ENGINES.items() if e.capabilities.in_memory)
                return False, (f"method='{method}' fits the {t} term {TERMS[t].lme4} from the score rows, which "
                               f"engine='{engine}' does not load; read the table with cj.read_scores and use "
                               f"engine={by}, or let the model fit the term where identifiable (then a group with "
                               f"{TERMS[t].needs[2] if TERMS[t].needs else 'the term'} is refused out of core).")
        built = ecaps.terms
        for t in spec.terms:
            if t not in built and t not in spec.auto:
                by = " or ".join(f"'{n}'" for n, e in ENGINES.items() if t in e.capabilities.terms)
                return False, (f"engine='{engine}' does not build the statistics of the {t} term; use engine={by}, "
                               f"or let the model fit it where identifiable (the fit then leaves it out and says so).")
    return True, ""


def check_fit(method: str, model: Model | str, *, engine: str | None = None) -> None:
    """Raise :class:`CjstatsError` with :func:`can_fit`'s sentence when ``method`` cannot fit ``model``."""
    ok, why = can_fit(method, model, engine=engine)
    if not ok:
        raise CjstatsError(why)


def resolve_model(backend: Backend, model: Model | str | None, options: dict[str, Any], *, caller: str,
                  engine: str | None = None) -> tuple[Model, dict[str, Any]]:
    """The model a call fits and the backend options that carry it.

    With ``model`` given (a :class:`Model` or a formula), the options it sets must not be given too; the
    backend must be able to fit it (:func:`check_fit`). Without it, the model is built from the options.
    """
    caps = backend.capabilities
    unit = "joint" if isinstance(caps, JointCapabilities) else "model"
    if model is None:
        return model_for(backend, options), options
    spec = as_model(model, unit=unit)
    clash = [o for o in options if o in MODEL_OPTIONS]
    if clash:
        raise CjstatsError(f"{caller} takes the model either as model= or as the option '{clash[0]}', not both: "
                           f"put it in the model, or leave model= out.")
    check_fit(backend.name, spec, engine=engine)
    return spec, {**options, **model_options(backend, spec)}


def check_required_terms(spec: Model, design: pd.DataFrame, backend: Backend | None = None) -> None:
    """One sentence when the data contradict the model for some group's design, read from each term's declared
    requirement (``Term.needs``; the scenario x judge interaction with ``scenario_judge=True`` is checked by the
    backends on the statistics):

    - a term the model requires (not 'auto') that a group's design cannot identify;
    - a term the model leaves out but ``backend`` always fits where identifiable (not in its ``optional_terms``),
      in a group whose design identifies it.
    """
    caps = backend.capabilities if backend is not None else None
    for _, r in design.iterrows():
        where = f"model '{r['model']}'" + (f", criterion '{r['criterion']}'" if "criterion" in design.columns else "")
        for name, term in TERMS.items():
            ok = term.identified(r)
            if ok is None:
                continue
            text = term.joint_lme4 if spec.unit == "joint" else term.lme4
            if ok and caps is not None and name in caps.terms and name not in spec.terms \
                    and name not in caps.optional_terms:
                by = _fitters(spec, lambda b: spec.likelihood in b.capabilities.likelihoods
                              and name in b.capabilities.optional_terms)
                other = f" (or use a backend that can leave it out: {by})" if by != "no registered backend" else ""
                raise CjstatsError(f"The model leaves out the {name} term {text}, but {where} has "
                                   f"{term.needs[2]} and method='{backend.name}' fits the term wherever the data "
                                   f"identify it; add it to the model{other}.")
            if not ok and name in spec.terms and name not in spec.auto:
                raise CjstatsError(f"The model requires the {name} term {text}, but {where} has {term.needs[3]}, "
                                   f"so it is not identifiable; change the design, or let the model "
                                   f"fit it where identifiable (Model(auto=('{name}', ...))).")


def _installed(package: str) -> bool:
    try:
        return find_spec(package) is not None
    except (ImportError, ValueError):  # a module blocked in sys.modules, or a broken install
        return False


def missing_packages(backend: Backend) -> list[str]:
    """The packages ``backend`` needs that are not installed (empty when it can run)."""
    return [p for p in backend.requires if not _installed(p)]


def available_backends() -> list[str]:
    """The backends whose module exists and whose optional packages are installed."""
    return [m for m, mod in BACKENDS.items() if find_spec(mod) is not None and not missing_packages(REGISTRY[m])]


def get_backend(method: str) -> Backend:
    """The registered backend called ``method``."""
    return REGISTRY[check_choice("method", method, REGISTRY, caller="estimate")]


def get_joint_backend(method: str, *, caller: str = "fit_joint") -> Backend:
    """The registered joint backend called ``method``."""
    return JOINT_BACKENDS[check_choice("method", method, JOINT_BACKENDS, caller=caller)]


def _as_scores(scores: Scores | pd.DataFrame | Any) -> Scores:
    if isinstance(scores, Scores):
        return scores
    if isinstance(scores, pd.DataFrame):
        return read_scores(scores)
    if isinstance(scores, (str, PathLike, list, tuple)):
        raise CjstatsError(f"estimate reads a path only with an out-of-core engine: pass engine='duckdb' (a file, "
                           f"folder or glob such as 'scores/*.parquet'), or read the file first with "
                           f"cj.read_scores({str(scores)!r}). Got {scores!r} with engine='numpy'.")
    raise CjstatsError(f"estimate takes a Scores table (from read_scores), a DataFrame, or with engine='duckdb' "
                       f"or 'dask' a path or glob. Got {type(scores).__name__} instead.")


class UnknownOptionError(CjstatsError, TypeError):
    """An option :func:`estimate` does not take: one sentence (a :class:`CjstatsError`, so the command line shows
    it as such) that is also the ``TypeError`` Python raises for an unexpected keyword argument."""


#: Options of each engine's ``build`` (``cjstats.stats.build_stats``), passed with ``engine_options=``: read from
#: the engine registry's declared capabilities (``cjstats.stats.engines.ENGINES``).
ENGINE_OPTIONS: dict[str, tuple[str, ...]] = {name: e.capabilities.options for name, e in ENGINES.items()}


def check_engine_options(engine: str | None, options: Mapping[str, Any]) -> None:
    """One sentence for ``engine_options`` the engine does not take (or any, for an engine that takes none)."""
    if not options:
        return
    name = engine or "numpy"
    known = ENGINES[name].capabilities.options if name in ENGINES else None
    if known == ():
        takers = " or ".join(f"'{n}'" for n, e in ENGINES.items() if e.capabilities.options)
        raise CjstatsError(f"engine_options ({', '.join(sorted(options))}) belong to engine={takers}; "
                           f"the {name} engine takes none.")
    unknown = [o for o in options if known is not None and o not in known]
    if unknown:
        raise UnknownOptionError(f"engine_options names '{unknown[0]}', which engine='{engine}' does not take (its "
                           f"options: {', '.join(known)}).")


def _check_options(backend: Any, options: Mapping[str, Any]) -> None:
    """One sentence for an option the backend does not take (instead of Python's TypeError), naming the ones
    it does, or ``engine_options=`` for an engine's option."""
    import inspect

    if not options or not isinstance(backend, ModuleBackend):
        return
    try:
        params = inspect.signature(import_module(backend.module).fit).parameters
    except (ImportError, ValueError, TypeError):  # a backend module that cannot be inspected checks its own
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    known = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY
             and n not in ("ci_level", "seed", "rows")]
    unknown = [o for o in options if o not in known]
    if not unknown:
        return
    name = unknown[0]
    if any(name in names for names in ENGINE_OPTIONS.values()):
        raise UnknownOptionError(f"'{name}' is an option of the out-of-core engine, not of method='{backend.name}'; pass "
                           f"it as engine_options={{{name!r}: ...}} with engine='duckdb' or 'dask'.")
    raise UnknownOptionError(f"estimate has no option '{name}' for method='{backend.name}' (its options: "
                       f"{', '.join(known) or 'none'}; engine options go in engine_options=).")


def estimate(scores: Scores | pd.DataFrame | Any, method: Method = "anova", *, ci_level: float | None = None,
             seed: int | None = None, engine: str | None = None, engine_options: Mapping[str, Any] | None = None,
             model: Model | str | None = None, **options: Any) -> VarianceComponents:
    """Estimate the variance components of a score table, per model (and criterion).

    The table is reduced once to the sufficient statistics of each unit (:func:`cjstats.stats.build_stats`);
    the backend fits from those, and receives the rows only when its options declare they need them.

    Parameters
    ----------
    scores : Scores or DataFrame
        The table, from :func:`cjstats.read_scores` (a DataFrame is validated on the way in).
    method : {"anova", "reml", "bayes"}
        The backend: method of moments (paper App. C), REML or a PyMC model.
    ci_level : float, optional
        Level of every interval; default ``cjstats._defaults.CI_LEVEL`` (0.95).
    seed : int, optional
        Seed of any randomness (bootstrap, MCMC); recorded in ``provenance``.
    **options
        Backend options, e.g. ``interval="satterthwaite"`` or ``incomplete="drop"`` for ``"anova"``. An option
        the backend does not take is refused with one sentence naming the ones it does.
    engine : {"numpy", "duckdb", "dask"}, optional
        The engine that computes the statistics (:func:`cjstats.stats.build_stats`). ``"duckdb"`` and
        ``"dask"`` also take a file, a folder, a glob such as ``"scores/*.parquet"`` or a list of paths (and
        ``"dask"`` a dask DataFrame) and never load the rows into Python; ``scores`` may also be the
        :class:`~cjstats.stats.ScoreStats` such an engine returned. Options that need rows are refused then.
    engine_options : mapping, optional
        Passed to the engine, as in :func:`cjstats.compare_models`: ``memory_limit``, ``temp_directory``,
        ``threads``, ``connection`` (duckdb), ``client``, ``npartitions``, ``shuffle`` (dask), ``columns``.
    model : Model or str, optional
        The model to fit, a :class:`cjstats.Model` or an lme4-style formula restricted to its vocabulary
        (``"score ~ judge + (1|scenario) + (1|scenario:generation)"``). Default: the model the options stand for
        (the paper's model, with ``generation`` and ``scenario_judge`` where identifiable). A backend that
        cannot fit it is refused in one sentence (:func:`can_fit`); the options it sets
        (``scenario_judge``, ``likelihood``, ``link``, ``thresholds``, ``generation``) are then not given.

    Returns
    -------
    VarianceComponents
        The same result type whatever the backend; ``fit.model`` is the model fitted and ``fit.formula`` its
        exact R formula per group.

    Examples
    --------
    >>> import cjstats as cj
    >>> fit = cj.estimate(cj.datasets.load("hanna"), method="reml")
    >>> sorted(fit.components["component"].unique())
    ['generation', 'judge_panel', 'judge_population', 'mu', 'residual', 'scenario', 'scenario_judge']
    """
    from cjstats.stats import build_stats

    backend = get_backend(method)
    missing = missing_packages(backend)
    if missing:
        raise CjstatsError(f"method='{backend.name}' requires package(s): {', '.join(missing)}. "
                           f"Install them with pip install 'cjstats[{backend.extra}]'.")
    ci = resolve_ci_level(ci_level)
    drop_options = [o for o in ("incomplete", "max_drop") if o in options]
    if drop_options and not backend.capabilities.balanced_only:
        raise CjstatsError(f"The '{drop_options[0]}' argument of estimate applies to a backend that needs complete "
                           f"data, such as method='anova'; method='{backend.name}' keeps every call, so leave it out.")
    _check_options(backend, options)
    spec, options = resolve_model(backend, model, dict(options), caller="estimate", engine=engine)
    engine_opts = dict(engine_options or {})
    check_engine_options(engine, engine_opts)
    if _stats_only(scores, engine):  # out-of-core engines: statistics without rows (issue 13)
        fit = _fit_stats_only(backend, scores, engine, ci_level=ci, seed=seed, options=options,
                              engine_options=engine_opts, model=spec if model is not None else None)
        return dataclasses.replace(fit, model=spec)
    table = _as_scores(scores)
    if model is not None:
        check_required_terms(spec, table.design, backend)
    rows = table if backend.capabilities.needs_rows(options) or _rows_terms_identified(backend, table.design) else None
    # the statistics the model's terms and likelihood need
    stats = build_stats(table, engine=engine or "numpy", terms=spec.terms, likelihood=spec.likelihood)
    fit = backend.fit(stats, ci_level=ci, seed=seed, rows=rows, **options)
    from cjstats.estimators.score_advice import with_score_shape

    return dataclasses.replace(with_score_shape(fit, table), model=spec)


def _rows_terms_identified(backend: Any, design: pd.DataFrame) -> bool:
    """Whether some group's design identifies a term the backend fits from the score rows
    (``Capabilities.rows_terms``)."""
    terms = [TERMS[t] for t in backend.capabilities.rows_terms]
    return any(bool(t.identified(r)) for t in terms for _, r in design.iterrows())


def _stats_only(scores: Any, engine: str | None) -> bool:
    from cjstats.stats import ScoreStats

    eng = ENGINES.get(engine or "numpy")   # an unknown name is refused by build_stats, with the engines' names
    return isinstance(scores, ScoreStats) or eng is None or not eng.capabilities.in_memory


def _fit_stats_only(backend: Any, scores: Any, engine: str | None, *, ci_level: float, seed: int | None,
                    options: dict[str, Any], engine_options: Mapping[str, Any] | None = None,
                    model: Model | None = None) -> VarianceComponents:
    """Fit from statistics an engine computed (or was given); the rows are never loaded."""
    from cjstats.stats import ScoreStats, build_stats

    if backend.capabilities.needs_rows(options):
        shown = ", ".join(f"{k}={v!r}" for k, v in options.items())
        raise CjstatsError(f"method='{backend.name}' with {shown} needs the score rows, which "
                           f"engine='{engine or getattr(scores, 'engine', 'duckdb')}' does not load; use engine='numpy' or drop "
                           f"those options.")
    if isinstance(scores, ScoreStats) and engine_options:
        raise CjstatsError("engine_options apply when the engine reads the rows; these statistics are already "
                           "computed, so leave them out.")
    likelihood = (model or model_for(backend, options)).likelihood
    opts = dict(engine_options or {})
    eng = ENGINES.get(engine or "numpy")
    if (not backend.capabilities.pattern_form and eng is not None and "scenarios" in eng.capabilities.options
            and "scenarios" not in opts):   # the backend reads per-scenario statistics (Capabilities.pattern_form)
        opts["scenarios"] = "each"
    stats = scores if isinstance(scores, ScoreStats) else build_stats(scores, engine=engine, likelihood=likelihood,
                                                                      **opts)
    if model is not None:
        check_required_terms(model, stats.design, backend)
    return backend.fit(stats, ci_level=ci_level, seed=seed, rows=None, **options)


def _joint_gap(source: Any) -> str | None:
    """Why the models of ``source`` do not form the complete shared table the joint ANOVA needs, or None.

    Every group is already complete and balanced here; the joint fit also needs the models of each criterion to
    share their scenarios, judges and number of generations.
    """
    from cjstats.stats import ScoreStats

    units = list(source.groups()) if isinstance(source, Scores) else list(source) if isinstance(
        source, ScoreStats) else []
    first: dict[Any, Any] = {}
    for u in units:
        if hasattr(u, "complete_scenarios"):        # a joint unit of build_stats(unit=("criterion",))
            keep, _, reason = u.complete_scenarios()
            if not keep.all():
                return f"{int((~keep).sum())} scenarios are not complete for every model ({reason})"
            continue
        if getattr(u, "pat", None) is not None:   # a pattern-form unit keeps no scenario labels to compare
            return (f"model '{u.model}' holds its scenarios grouped by design pattern (the DuckDB engine's form for "
                    f"large tables), so whether the models share their scenarios cannot be checked")
        sig = (frozenset(u.scenario_labels.tolist()), frozenset(u.judge_labels), u.design.generations)
        ref = first.setdefault(u.criterion, (u.model, sig))
        if sig != ref[1]:
            what = ("scenarios" if sig[0] != ref[1][0] else "judges" if sig[1] != ref[1][1] else
                    "number of generations")
            return f"model '{u.model}' does not have the same {what} as model '{ref[0]}'"
    return None


def auto_method(source: Any, *, incomplete: str | None = None, joint: bool = False,
                discrete: bool = False) -> tuple[str, str]:
    """The backend ``method="auto"`` stands for on ``source``, and the reason in a few words.

    ``"anova"`` when every model (x criterion) group is complete and balanced, the closed-form method of moments;
    ``"reml"`` otherwise, since it keeps every judge call of an incomplete or unbalanced table. ``joint=True`` (a
    joint fit of several models, :func:`cjstats.fit_joint`) also needs the models to share their scenarios,
    judges and generations for the ANOVA. ``incomplete`` (``"drop"`` or ``"error"``) is the ANOVA's handling of
    missing calls, so asking for it keeps the ANOVA.

    Parameters
    ----------
    source : Scores or ScoreStats
        The table, or the statistics an engine computed (both carry the per-group ``design``).
    discrete : bool
        Consider the kind of scores too (the command line's ``--method auto`` does): on a table whose scores are
        discrete or piled at a bound (:func:`cjstats.io.score_kind.prefers_discrete_model`) keep the Gaussian
        choice (score-scale components, which the decision tools read) and say in the reason that the
        maximum-likelihood ordinal backend ``method="ordinal"`` suits the scores. With ``joint=True`` (model
        comparisons: ``cjstats compare --method auto``) choose ``"ordinal"``, the joint cumulative-link model
        (latent differences and pass rates, :mod:`cjstats.estimators.joint.ordinal`), when the scores are
        verdicts or a short scale (at most :data:`cjstats.io.score_kind.FEW_LEVELS` values) and that fit can run
        (:func:`_joint_ordinal_gap`); otherwise the Gaussian choice, whose reason says why not ordinal.

    Returns
    -------
    (str, str)
        The method and why, e.g. ``("reml", "model 'a' is not complete and balanced, 1 of 4000 judge calls
        missing")``; the command line prints it as ``Method: reml (--method auto: ...).``
    """
    if discrete and joint and incomplete is None:
        from cjstats.estimators.score_advice import shape_of
        from cjstats.io.score_kind import FEW_LEVELS, prefers_discrete_model, shape_phrase

        shape = shape_of(source)
        if prefers_discrete_model(shape) and shape["n_values"] <= FEW_LEVELS:   # verdicts or a short scale
            gap = _joint_ordinal_gap(source)
            what = "pass rates" if shape["n_values"] == 2 else "expected ratings"
            if gap is None:
                return "ordinal", (f"{shape_phrase(shape)}: the joint cumulative-link model fits latent-scale "
                                   f"differences and {what} (the Gaussian fit: reml)")
            chosen, why = auto_method(source, joint=True)
            return chosen, (f"{why}; {shape_phrase(shape)}, but the joint ordinal model does not fit this table "
                            f"({gap}), so the Gaussian {chosen} is an approximation here")
    if discrete and not joint and incomplete is None:
        from cjstats.estimators.score_advice import shape_of
        from cjstats.io.score_kind import prefers_discrete_model, shape_phrase

        shape = shape_of(source)
        if prefers_discrete_model(shape):
            # auto keeps a Gaussian backend: its components are on the score scale, which every decision tool of
            # the command line reads; the ordinal fit is one call away and the reason names it
            chosen, why = auto_method(source)
            return chosen, (f"{why}; {shape_phrase(shape)}, which suits an ordinal model (latent scale: "
                            f"cj.estimate(scores, method=\"ordinal\")), so the Gaussian {chosen} is an approximation "
                            f"here")
    if incomplete == "drop":
        return "anova", ("scenarios not complete for every model are dropped" if joint else
                         "incomplete cells are dropped")
    if incomplete == "error":
        return "anova", "missing calls are refused"
    d = source.design
    if bool(d["balanced"].all()):
        gap = _joint_gap(source) if joint else None
        if gap is None:
            return "anova", ("every model is complete and balanced on the same scenarios" if joint else
                             "every group is complete and balanced")
        return "reml", gap
    bad = d[~d["balanced"]].iloc[0]
    where = f"model '{bad['model']}'" + (f", criterion '{bad['criterion']}'" if "criterion" in d.columns else "")
    why = (f"{int(bad['n_missing'])} of {int(bad['n_cells']) * int(bad['n_judges'])} judge calls missing"
           if int(bad["n_missing"]) else "unequal generations per scenario")
    return "reml", f"{where} is not complete and balanced, {why}"


def _joint_ordinal_gap(source: Any) -> str | None:
    """Why the joint ordinal fit (``method="ordinal"`` of :func:`cjstats.fit_joint`) cannot stand for
    ``--method auto`` on ``source``, in a few words, or None when it can.

    It reads the score rows (``JointCapabilities.rows_always``: an in-memory table, not an out-of-core engine's
    statistics); it fits the terms its capabilities declare (no ``generation`` term: several generations per
    scenario would be treated as independent calls); and a (model, judge) cell whose every call gets the lowest
    or the highest score is separated, its latent mean +-inf (:mod:`cjstats.estimators.identification`), so the
    comparison of that model is not identified on the latent scale."""
    caps = JOINT_BACKENDS["ordinal"].capabilities
    if not isinstance(source, Scores) or source.has_criterion:     # rows_always: an in-memory table
        return "it reads the score rows of one criterion, which an out-of-core engine does not load"
    d = source.design
    if "generation" not in caps.terms and int(d["generations_max"].max()) > 1:
        return "it has no generation term, and the scenarios have several generations"
    from cjstats.estimators.joint.ordinal import first_separated_cell

    sep = first_separated_cell(source)               # the rule the fit itself applies
    if sep is not None:
        m, j, v = sep
        return f"model '{m}' gets {v:g} from judge '{j}' on every call, so its latent mean is not identified"
    return None


def compare(scores: Scores | pd.DataFrame, methods: list[str] | tuple[str, ...] = ("anova", "reml", "bayes"), *,
            ci_level: float | None = None, seed: int | None = None) -> pd.DataFrame:
    """Run several backends on the same table and stack their component tables (column ``method``)."""
    scores = _as_scores(scores)
    frames = [estimate(scores, m, ci_level=ci_level, seed=seed).components for m in methods]
    return pd.concat(frames, ignore_index=True)
