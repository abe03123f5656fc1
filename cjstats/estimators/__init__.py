"""Estimator backends behind one entry point, :func:`estimate`.

``BACKENDS`` is the only list of backends. Each entry names a module that defines
``fit(scores, *, ci_level, seed, **options) -> VarianceComponents``. None imports another; a new backend is
one module and one line here, and the shared conformance suite (``tests/estimators/test_conformance.py``)
tests it from the start. Optional dependencies are checked when a backend is chosen, not at import.
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from typing import Any, Literal

import pandas as pd

from cjstats._validate import check_choice, resolve_ci_level
from cjstats.components import VarianceComponents
from cjstats.exceptions import CjstatsError
from cjstats.scores import Scores, read_scores

__all__ = ["BACKENDS", "REQUIRES", "estimate", "compare", "available_backends"]

Method = Literal["anova", "reml", "bayes"]

#: The registry: method name -> module implementing ``fit``.
BACKENDS: dict[str, str] = {
    "anova": "cjstats.estimators.anova",
    "reml": "cjstats.estimators.reml",
    "bayes": "cjstats.estimators.bayes",
}

#: Packages each backend needs beyond numpy, scipy and pandas, with the extra that installs them.
REQUIRES: dict[str, tuple[tuple[str, ...], str]] = {
    "anova": ((), ""),
    "reml": ((), ""),  # the default structured path needs only numpy/scipy; path="statsmodels" checks its own
    "bayes": (("pymc", "arviz"), "bayes"),
}


def _installed(package: str) -> bool:
    try:
        return find_spec(package) is not None
    except (ImportError, ValueError):  # a module blocked in sys.modules, or a broken install
        return False


def _missing_packages(method: str) -> list[str]:
    return [p for p in REQUIRES[method][0] if not _installed(p)]


def available_backends() -> list[str]:
    """The backends whose module exists and whose optional packages are installed."""
    return [m for m, mod in BACKENDS.items() if find_spec(mod) is not None and not _missing_packages(m)]


def _as_scores(scores: Scores | pd.DataFrame | Any) -> Scores:
    if isinstance(scores, Scores):
        return scores
    if isinstance(scores, pd.DataFrame):
        return read_scores(scores)
    raise CjstatsError(f"estimate takes a Scores table (from read_scores) or a DataFrame. "
                       f"Got {type(scores).__name__} instead.")


def estimate(scores: Scores | pd.DataFrame, method: Method = "anova", *, ci_level: float | None = None,
             seed: int | None = None, **options: Any) -> VarianceComponents:
    """Estimate the variance components of a score table, per model (and criterion).

    Parameters
    ----------
    scores : Scores or DataFrame
        The table, from :func:`cjstats.read_scores` (a DataFrame is validated on the way in).
    method : {"anova", "reml", "bayes"}
        The backend: method of moments (paper App. C), REML (statsmodels MixedLM) or a PyMC model.
    ci_level : float, optional
        Level of every interval; default ``cjstats._defaults.CI_LEVEL`` (0.95).
    seed : int, optional
        Seed of any randomness (bootstrap, MCMC); recorded in ``provenance``.
    **options
        Backend options, e.g. ``interval="satterthwaite"`` or ``incomplete="drop"`` for ``"anova"``.

    Returns
    -------
    VarianceComponents
        The same result type whatever the backend.

    Examples
    --------
    >>> import cjstats as cj
    >>> fit = cj.estimate(cj.datasets.load("hanna"), method="anova")
    >>> sorted(fit.components["component"].unique())
    ['generation', 'judge_panel', 'judge_population', 'mu', 'residual', 'scenario']
    """
    method = check_choice("method", method, BACKENDS, caller="estimate")
    missing = _missing_packages(method)
    if missing:
        extra = REQUIRES[method][1]
        raise CjstatsError(f"method='{method}' requires package(s): {', '.join(missing)}. "
                           f"Install them with pip install 'cjstats[{extra}]'.")
    try:
        backend = import_module(BACKENDS[method])
    except ModuleNotFoundError as exc:
        if exc.name == BACKENDS[method]:
            raise CjstatsError(f"The '{method}' backend is not part of this version of cjstats.") from exc
        raise
    return backend.fit(_as_scores(scores), ci_level=resolve_ci_level(ci_level), seed=seed, **options)


def compare(scores: Scores | pd.DataFrame, methods: list[str] | tuple[str, ...] = ("anova", "reml", "bayes"), *,
            ci_level: float | None = None, seed: int | None = None) -> pd.DataFrame:
    """Run several backends on the same table and stack their component tables (column ``method``)."""
    scores = _as_scores(scores)
    frames = [estimate(scores, m, ci_level=ci_level, seed=seed).components for m in methods]
    return pd.concat(frames, ignore_index=True)
