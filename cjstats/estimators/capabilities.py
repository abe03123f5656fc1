"""What a backend declares about itself (:class:`Capabilities`, :class:`JointCapabilities`), and the
declarations of the per-model backends registered in :mod:`cjstats.estimators` (:data:`CAPABILITIES`).

Kept apart from :mod:`cjstats.estimators` so that a backend reads its own declaration (the REML and Bayesian fits
ask whether their options need the score rows) from here, not from the package that registers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from cjstats.results.estimands import COMPONENTS

__all__ = ["Capabilities", "JointCapabilities", "CAPABILITIES", "Scale"]

Scale = Literal["score", "latent"]

_PER_MODEL_TERMS: tuple[str, ...] = ("scenario", "generation", "scenario_judge")
_PER_MODEL_OPTIONAL: tuple[str, ...] = ("scenario_judge",)
_PER_MODEL_OPTIONS: tuple[str, ...] = ("scenario_judge",)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend declares about itself; :func:`estimate`, the conformance suite and the decision layer
    read these instead of asking which backend made a result.

    Attributes
    ----------
    rows_options : Mapping[str, tuple]
        Option values that make the backend read score rows, e.g. ``{"interval": ("bootstrap",)}``; every
        other option set fits from the statistics alone.
    balanced_only : bool
        The backend needs a balanced design (it refuses, or drops cells from, an unbalanced one).
    latent_options : Mapping[str, tuple]
        Option values whose components are on a latent scale (not the score scale), e.g. the ordinal model.
    estimands : tuple of str
        The ``component`` rows the backend returns.
    samples : bool
        The result carries draws (posterior or bootstrap) by default.
    option_defaults : Mapping[str, Any]
        Defaults of the options named above (so an option left out is read correctly).
    rows_always : bool
        Every fit reads score rows, whatever its options (the joint Bayesian model: an effect per scenario and
        cell).
    rows_terms : tuple of str
        Terms (names of :data:`cjstats.results.model.TERMS`) whose design makes the fit read score rows: a unit
        whose design identifies one (``Term.needs``, e.g. ``generation``: a scenario with several generations) is
        fitted from its rows, whether the model fits the term or not; the other units from the statistics. The
        rows are given whenever the table is in memory and some unit identifies such a term; out of core such a
        unit is refused in one sentence (the ordinal model: per-pattern counts suffice at m = 1 only).
    terms : tuple of str
        The model terms it fits (names of :data:`cjstats.results.model.TERMS`).
    optional_terms : tuple of str
        The terms among ``terms`` it can leave out of a fit when the model does not have them (the others it
        always fits where identifiable).
    likelihoods : Mapping[str, tuple]
        Likelihood -> the links it fits with it (``{"gaussian": ("identity",)}``).
    thresholds : tuple of str
        Threshold structures of the cumulative likelihood it fits (``"shared"``, ``"judge"``).
    model_options : tuple of str
        The options through which a :class:`~cjstats.results.model.Model` reaches its ``fit`` (names of
        :data:`cjstats.estimators.MODEL_OPTIONS`): the one translation from the model to the backend's keywords.
        ``"model"`` hands it the specification itself (the path for a backend that fits new terms).
    likelihood_terms : Mapping[str, tuple]
        For a likelihood whose fit holds fewer terms than ``terms``, the terms it holds.
    pattern_form : bool
        It fits from statistics whose per-scenario part is in the pattern form (``CellStats.pat``: per design
        pattern the scenario count and the moments of the scenario sums), which the DuckDB engine keeps for large
        tables; a backend without it gets per-scenario statistics out of core (``build_stats(...,
        scenarios="each")``).
    hooks : tuple of str
        Functions of its module that later layers may call through the registry (``ModuleBackend.hook``), e.g.
        ``"parameter_draws"``: draws of a maximum-likelihood fit's parameters from their asymptotic normal, which
        the decision layer simulates designs from.
    """

    rows_options: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    balanced_only: bool = False
    latent_options: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    estimands: tuple[str, ...] = COMPONENTS
    samples: bool = False
    option_defaults: Mapping[str, Any] = field(default_factory=dict)
    rows_always: bool = False
    rows_terms: tuple[str, ...] = ()
    terms: tuple[str, ...] = _PER_MODEL_TERMS
    optional_terms: tuple[str, ...] = _PER_MODEL_OPTIONAL
    likelihoods: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {"gaussian": ("identity",)})
    thresholds: tuple[str, ...] = ()
    model_options: tuple[str, ...] = _PER_MODEL_OPTIONS
    likelihood_terms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    hooks: tuple[str, ...] = ()
    pattern_form: bool = False

    def _matches(self, table: Mapping[str, tuple[Any, ...]], options: Mapping[str, Any]) -> bool:
        return any(options.get(k, self.option_defaults.get(k)) in vals for k, vals in table.items())

    def needs_rows(self, options: Mapping[str, Any]) -> bool:
        """Whether a fit with these options reads score rows (always, when ``rows_always``)."""
        return self.rows_always or self._matches(self.rows_options, options)

    def scale(self, options: Mapping[str, Any]) -> Scale:
        """``"latent"`` when these options put the components on a latent scale, else ``"score"``."""
        return "latent" if self._matches(self.latent_options, options) else "score"



@dataclass(frozen=True, slots=True)
class JointCapabilities(Capabilities):
    """What a joint backend (a fit of several models at once, :func:`cjstats.fit_joint`) declares besides
    :class:`Capabilities`; :func:`cjstats.fit_joint`, :func:`cjstats.compare_models` and the joint conformance
    suite (``tests/conformance/test_joint_conformance.py``) read these instead of the backend's name.

    Attributes
    ----------
    options : tuple of str
        The keyword options its ``fit`` takes besides ``ci_level``, ``seed``, ``rows`` and ``model_scenario``;
        any other option is refused with one sentence naming these.
    model_scenario : tuple of str
        The forms of the model x scenario variance it fits: ``"pooled"`` (one variance, the paper's joint model)
        and, if declared, ``"per_model"`` (one per model).
    views : tuple of str
        The views its contrasts take: ``"panel"`` (the judges in the data) and ``"population"`` (judges a sample).
    rank_intervals : {"studentized_range", "max_t", "posterior"}
        How simultaneous rank intervals are made: Tukey's studentized range q_{P, df}/sqrt 2 (exact for a
        balanced design), the max-t quantile by Monte Carlo from the covariance of the model means, or
        posterior rank intervals from draws of the cell means (also ``p_best`` as the share of draws).
    stats_options : tuple of str
        Those of ``options`` the statistics are built for: :func:`cjstats.fit_joint` passes them to
        :func:`cjstats.stats.build_stats` too (``covariates``: the covariate statistics the slopes are fitted from).

    The joint model's terms (``scenario``, ``model_scenario``, ``generation``) are its ``terms`` unless it
    declares others.
    """

    options: tuple[str, ...] = ()
    stats_options: tuple[str, ...] = ()
    model_scenario: tuple[str, ...] = ("pooled",)
    views: tuple[str, ...] = ("panel", "population")
    rank_intervals: str = "max_t"

    def __post_init__(self) -> None:
        if self.terms == _PER_MODEL_TERMS:
            object.__setattr__(self, "terms", ("scenario", "model_scenario", "generation"))
        if self.optional_terms == _PER_MODEL_OPTIONAL:
            object.__setattr__(self, "optional_terms", ())
        if self.model_options == _PER_MODEL_OPTIONS:
            object.__setattr__(self, "model_options", ())


#: The declared capabilities of the per-model backends, by method name (``register_backend`` in
#: :mod:`cjstats.estimators` registers each with its entry here).
CAPABILITIES: dict[str, Capabilities] = {
    "anova": Capabilities(balanced_only=True, pattern_form=True),
    "reml": Capabilities(rows_options={"interval": ("bootstrap",), "path": ("statsmodels",)},
                         option_defaults={"interval": "profile", "path": "auto"}, pattern_form=True),
    "bayes": Capabilities(rows_options={"likelihood": ("ordinal",)}, latent_options={"likelihood": ("ordinal",)},
                          samples=True, option_defaults={"likelihood": "gaussian", "link": "logit"},
                          likelihoods={"gaussian": ("identity",), "cumulative": ("logit", "probit")},
                          thresholds=("shared",), model_options=("scenario_judge", "likelihood", "link"),
                          likelihood_terms={"cumulative": ("scenario", "generation")}),
    "ordinal": Capabilities(rows_terms=("generation",), latent_options={"link": ("probit", "logit")},
                            estimands=COMPONENTS,
                            option_defaults={"link": "probit"}, terms=("scenario", "generation"),
                            optional_terms=("generation",), likelihoods={"cumulative": ("probit", "logit")},
                            thresholds=("shared", "judge"), model_options=("link", "thresholds", "generation"),
                            hooks=("parameter_draws",)),
}
