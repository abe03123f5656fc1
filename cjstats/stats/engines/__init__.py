"""Engines that reduce score rows to :class:`~cjstats.stats.ScoreStats`, behind one protocol and one registry.

Every engine is an :class:`Engine`: a name, the packages it needs (and the extra that installs them), its declared
:class:`EngineCapabilities` and ``build(source, *, unit, **options) -> ScoreStats``, which computes the
statistics of each analysis unit (one model, or model x criterion; :func:`cjstats.stats.build_stats` stacks the
joint units of ``unit=("criterion",)`` from these). ``ENGINES`` is the only list of engines:

- ``numpy``: a table in memory (:class:`~cjstats.io.scores.Scores` or DataFrame), one O(rows) pass per unit;
- ``duckdb``: files, folders, globs or a DataFrame, reduced inside DuckDB (the rows never enter Python);
- ``dask``: a dask DataFrame or files, each partition reduced by the numpy engine on a worker, then
  :func:`cjstats.stats.merge_stats`.

A new engine is one module with a ``build`` function and one :func:`register_engine` call; the conformance suite
(``tests/conformance/test_engine_conformance.py``) then checks, from its first commit, that it builds the numpy
engine's statistics (to 1e-12 relative) on balanced, incomplete and ragged tables of several models and criteria.
The module is imported, and its packages checked, only when the engine is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cjstats._validate import import_registered
from cjstats.exceptions import CjstatsError

__all__ = ["ENGINES", "Engine", "EngineCapabilities", "ModuleEngine", "get_engine", "register_engine"]


@dataclass(frozen=True, slots=True)
class EngineCapabilities:
    """What an engine declares about itself; :func:`cjstats.stats.build_stats`, :func:`cjstats.estimate`,
    :func:`cjstats.fit_joint` and the conformance suite read these instead of the engine's name.

    Attributes
    ----------
    in_memory : bool
        It reads a table already in Python (``Scores`` or a DataFrame), so the caller still holds the rows and
        fits that need them (bootstrap intervals, ``incomplete="drop"``, the Bayesian models) can have them.
        Otherwise the rows stay out of core and those fits are refused.
    reads_files : bool
        It also reads a file, folder, glob (``"scores/*.parquet"``) or list of paths itself, out of core.
    scenario_judge : bool
        It builds the scenario x judge statistics (``CellStats.sj``) whenever the term is identifiable.
    takes_scores : bool
        Its ``build`` takes a :class:`~cjstats.io.scores.Scores` as it is; otherwise it is given
        ``scores.to_frame()``.
    options : tuple of str
        The keyword options of its ``build`` besides ``source``, ``unit`` and ``covariates`` (``engine_options=``).
    covariates : bool
        It builds the covariate statistics of item covariates (``build(..., covariates=[...])``, ``CellStats.cov``,
        :mod:`cjstats.stats.covariates`), which the joint REML fit with covariates reads. An engine that does not
        declare it is never passed ``covariates``: :func:`cjstats.stats.build_stats` refuses them in one sentence.
    likelihoods : tuple of str
        The likelihoods (names of ``cjstats.results.model.LIKELIHOODS``) whose statistics it builds:
        ``"gaussian"`` (the sums of :class:`~cjstats.stats.CellStats`, always) and ``"cumulative"``, the per-pattern
        counts of the cumulative link model with one generation per scenario (``CellStats.patterns``,
        :mod:`cjstats.stats.ordinal`), built when ``build(..., likelihood="cumulative")``: what the
        maximum-likelihood ordinal fit reads out of core.
    """

    in_memory: bool = False
    reads_files: bool = False
    scenario_judge: bool = False
    takes_scores: bool = False
    options: tuple[str, ...] = ()
    covariates: bool = False
    likelihoods: tuple[str, ...] = ("gaussian",)

    @property
    def terms(self) -> tuple[str, ...]:
        """The model terms (names of ``cjstats.results.model.TERMS``) whose statistics it builds."""
        return ("scenario", "generation", *(("scenario_judge",) if self.scenario_judge else ()), "model_scenario")


@runtime_checkable
class Engine(Protocol):
    """One engine (see :class:`ModuleEngine` for the registry's implementation)."""

    name: str
    requires: tuple[str, ...]
    extra: str
    capabilities: EngineCapabilities

    def build(self, source: Any, *, unit: tuple[str, ...], terms: tuple[str, ...] | None = None,
              likelihood: str = "gaussian", **options: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class ModuleEngine:
    """An engine whose ``build(source, *, unit, **options) -> ScoreStats`` lives in a module imported only when
    the engine is used."""

    name: str
    module: str
    requires: tuple[str, ...] = ()
    extra: str = ""
    capabilities: EngineCapabilities = field(default_factory=EngineCapabilities)

    def build(self, source: Any, *, unit: tuple[str, ...], terms: tuple[str, ...] | None = None,
              likelihood: str = "gaussian", **options: Any) -> Any:
        """The module's ``build``; ``terms`` (the model's terms) reaches it when its ``build`` takes them (an engine
        that builds optional statistics, such as the scenario x judge sums, leaves out those of absent terms), and
        ``likelihood`` when it is not ``"gaussian"`` (an engine that declares the likelihood takes it)."""
        import inspect

        from cjstats.io.scores import Scores

        mod = import_registered(self.module, "engine", self.name)
        if isinstance(source, Scores) and not self.capabilities.takes_scores:
            source = source.to_frame()
        if terms is not None and "terms" in inspect.signature(mod.build).parameters:
            options = {**options, "terms": tuple(terms)}
        if likelihood != "gaussian":
            options = {**options, "likelihood": likelihood}
        return mod.build(source, unit=tuple(unit), **options)


#: The registry: engine name -> engine.
ENGINES: dict[str, Engine] = {}


def register_engine(engine: Engine) -> Engine:
    """Add an engine to the registry (a new engine is one module and one call to this)."""
    if not isinstance(engine, Engine):
        raise CjstatsError(f"register_engine takes an Engine (name, requires, extra, capabilities, build). "
                           f"Got {type(engine).__name__} instead.")
    ENGINES[engine.name] = engine
    return engine


def get_engine(name: str, *, caller: str = "build_stats") -> Engine:
    """The registered engine called ``name`` (one sentence naming the engines otherwise)."""
    from cjstats._validate import check_choice

    return ENGINES[check_choice("engine", name, ENGINES, caller=caller)]


register_engine(ModuleEngine(
    "numpy", "cjstats.stats.engines.numpy_engine",
    capabilities=EngineCapabilities(in_memory=True, scenario_judge=True, takes_scores=True, covariates=True,
                                    likelihoods=("gaussian", "cumulative"))))
register_engine(ModuleEngine(
    "duckdb", "cjstats.stats.engines.duckdb_engine", requires=("duckdb",), extra="scale",
    capabilities=EngineCapabilities(reads_files=True, scenario_judge=True,
                                    options=("columns", "connection", "memory_limit", "temp_directory",
                                             "threads", "scenarios"), likelihoods=("gaussian", "cumulative"))))
register_engine(ModuleEngine(
    "dask", "cjstats.stats.engines.dask_engine", requires=("dask",), extra="scale",
    capabilities=EngineCapabilities(reads_files=True, options=("columns", "shuffle", "npartitions", "client"),
                                    scenario_judge=True, covariates=True, likelihoods=("gaussian", "cumulative"))))
