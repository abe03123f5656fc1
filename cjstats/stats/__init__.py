r"""The statistics layer: score rows reduced once to per-unit sufficient statistics that every backend fits from.

::

    read_scores -> Scores --build_stats--> ScoreStats (one CellStats per unit) --Backend.fit--> result

:func:`build_stats` runs an engine (``stats/engines/``: numpy, duckdb, dask) over each analysis unit (one model, or
model x criterion) and returns a :class:`ScoreStats`. Each :class:`CellStats` is additive over chunks split by
scenario (:func:`merge_stats`) and gives each backend its view: ``for_anova`` (mean squares),
``for_reml`` (the structured REML's design and score statistics) and ``for_gaussian`` (the collapsed
Gaussian likelihood's statistics); with ``likelihood="cumulative"`` it also holds the per-pattern counts of the
ordinal model (``CellStats.patterns``, :mod:`cjstats.stats.ordinal`). Only numpy, scipy and pandas are needed.

Examples
--------
>>> import cjstats as cj
>>> st = cj.stats.build_stats(cj.datasets.load("hanna", keep_sentinels=True))
>>> unit = next(iter(st))
>>> ms, _ = unit.for_anova()
>>> ms.k
5
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.io.scores import Scores
from cjstats.stats.cellstats import CellStats, merge_stats
from cjstats.stats.engines import ENGINES, get_engine
from cjstats.stats.joint import JointBalanced, JointStats, NestedStats, stack_models
from cjstats.stats.scorestats import ScoreStats
from cjstats.stats.views import Design, GaussianStats, MeanSquares, YStats

__all__ = ["CellStats", "ScoreStats", "build_stats", "merge_stats", "MeanSquares", "Design", "YStats",
           "GaussianStats", "JointStats", "NestedStats", "JointBalanced", "stack_models", "UNITS"]

#: The analysis units :func:`build_stats` supports: per model (x criterion), or joint (every model of a criterion).
UNITS: tuple[tuple[str, ...], ...] = (("model", "criterion"), ("model",), ("criterion",))


def build_stats(source: Scores | pd.DataFrame, *, unit: tuple[str, ...] = ("model", "criterion"),
                engine: str = "numpy", terms: tuple[str, ...] | None = None,
                covariates: Sequence[str] | None = None, likelihood: str = "gaussian",
                **engine_options: Any) -> ScoreStats:
    """Reduce a score table to the sufficient statistics of each analysis unit.

    Parameters
    ----------
    source : Scores or DataFrame
        The table (a DataFrame is validated by :func:`cjstats.read_scores` first).
    unit : tuple of str
        The columns that define one analysis unit: ``("model", "criterion")`` (default; the criterion is
        ignored when the table has none), ``("model",)`` (a table with a criterion column is refused:
        pooling criteria would mix scales) or ``("criterion",)``: one joint unit per criterion holding every
        model on a shared scenario axis (:class:`JointStats`, what ``cj.fit_joint`` and ``cj.compare_models``
        fit from), stacked from the per-model statistics of any engine.
    engine : {"numpy", "duckdb", "dask"}
        The engine that reads the rows (a registered :class:`~cjstats.stats.engines.Engine`,
        ``cjstats.stats.engines.ENGINES``; build_stats dispatches on its declared capabilities). ``"duckdb"`` and ``"dask"`` also take
        a file, folder, glob (``"scores/*.parquet"``) or list of paths (``"dask"`` a dask DataFrame) and keep the
        rows out of Python (``docs/scale.md``).
    terms : tuple of str, optional
        The model's terms (``cjstats.results.model.TERMS`` names, e.g. ``fit.model.terms``): an engine builds the
        statistics of these only (an engine that builds a term's statistics declares it in
        ``EngineCapabilities.terms``). None: every term the engine can.
    covariates : list of str, optional
        Numeric item columns of the DataFrame ``source`` (one value per model x scenario x generation): each unit
        also gets its covariate statistics (``CellStats.cov``; :mod:`cjstats.stats.covariates`), and a joint unit
        their joint view (:meth:`JointStats.for_joint_slopes`), what ``cj.fit_joint(..., covariates=[...])``
        fits the judges' slopes from. Built by the engines that declare ``EngineCapabilities.covariates``.
    likelihood : {"gaussian", "cumulative"}
        The model's likelihood (``Model.likelihood``). ``"cumulative"`` also builds, for every unit with one
        generation per scenario, its per-pattern counts (``CellStats.patterns``, :mod:`cjstats.stats.ordinal`), the
        sufficient statistics of the cumulative link model that ``method="ordinal"`` fits from out of core; built
        by the engines that declare it in ``EngineCapabilities.likelihoods``.
    **engine_options
        Passed to an out-of-core engine's ``build``: ``columns``; duckdb ``memory_limit``, ``temp_directory``,
        ``threads``, ``connection``, ``scenarios`` (``"each"``, ``"patterns"`` or ``"auto"``: per-scenario arrays
        or their pattern form, docs/scale.md); dask ``shuffle``, ``npartitions``, ``client``.

    Returns
    -------
    ScoreStats
        One :class:`CellStats` per unit (a :class:`JointStats` per criterion for ``unit=("criterion",)``).
    """
    eng = get_engine(engine, caller="build_stats")
    unit = tuple(unit)
    if unit not in UNITS:
        raise CjstatsError(f"The 'unit' argument of build_stats must be ('model', 'criterion'), ('model',) or "
                           f"('criterion',). Got {unit!r} instead.")
    if covariates is not None and not eng.capabilities.covariates:
        takers = [f"'{n}'" for n, e in ENGINES.items() if e.capabilities.covariates]
        raise CjstatsError(f"engine='{eng.name}' does not build covariate statistics (covariates="
                           f"{list(covariates) if not isinstance(covariates, str) else covariates!r}); use "
                           f"engine={' or '.join(takers)}, which {'does' if len(takers) == 1 else 'do'}.")
    from cjstats._validate import check_choice

    check_choice("likelihood", likelihood, {lik for e in ENGINES.values() for lik in e.capabilities.likelihoods},
                 caller="build_stats")
    if likelihood not in eng.capabilities.likelihoods:
        takers = " or ".join(f"'{n}'" for n, e in ENGINES.items() if likelihood in e.capabilities.likelihoods)
        raise CjstatsError(f"engine='{eng.name}' does not build the statistics of the {likelihood} likelihood; use "
                           f"engine={takers}.")
    if unit == ("criterion",):
        if "scenarios" in eng.capabilities.options and engine_options.get("scenarios", "auto") == "auto":
            # the joint units pair the models' scenarios, so they need the per-scenario arrays
            engine_options = {**engine_options, "scenarios": "each"}
        per = build_stats(source, unit=("model", "criterion"), engine=engine, terms=terms, covariates=covariates,
                          likelihood=likelihood, **engine_options)
        crits = list(dict.fromkeys(u.criterion for u in per.units))
        joint = tuple(stack_models([u for u in per.units if u.criterion == c]) for c in crits)
        return ScoreStats(units=joint, has_criterion=per.has_criterion, design=per.design, unit=unit,
                          engine=per.engine)
    unknown = [o for o in engine_options if o not in eng.capabilities.options]
    if unknown:
        if not eng.capabilities.options:
            takers = " or ".join(f"'{n}'" for n, e in ENGINES.items() if e.capabilities.options)
            raise CjstatsError(f"build_stats(engine='{engine}') takes no engine options; got "
                               f"{', '.join(sorted(engine_options))}. They belong to engine={takers}.")
        raise CjstatsError(f"build_stats(engine='{engine}') takes no option '{unknown[0]}' (its options: "
                           f"{', '.join(eng.capabilities.options)}).")
    if covariates is not None:
        from cjstats.stats.covariates import check_covariate_names

        engine_options = {**engine_options, "covariates": check_covariate_names(covariates)}
    return eng.build(source, unit=unit, **({"terms": tuple(terms)} if terms is not None else {}),
                     **({"likelihood": likelihood} if likelihood != "gaussian" else {}), **engine_options)
