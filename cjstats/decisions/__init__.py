"""Decisions from fitted components: the variance of a benchmark score under a design, and the design to run.

- :mod:`~cjstats.decisions.inputs`: :class:`~cjstats.decisions.inputs.GroupComponents`, the layer's one input
  (one group of a fit, read through the result's public API).
- :mod:`~cjstats.decisions.components`: :class:`~cjstats.decisions.components.Components` (the components
  vector, keyed by estimand name, with its scale and conditioning), :class:`~cjstats.decisions.components.VarianceDesign`
  and :data:`~cjstats.decisions.components.TERM_CONTRIBUTIONS`, the one registry of each term's coefficient
  (:func:`~cjstats.decisions.components.register_contribution`); :func:`~cjstats.decisions.components.score_variance`
  is the variance of a benchmark score under a design.
- :mod:`~cjstats.decisions.formulas`: pure variance formulas (paper Eqs. 3-6, Proposition 1, App. C, F), thin
  wrappers over the registry with one ``s2_*`` argument per term.
- :mod:`~cjstats.decisions.schedules`: which judge scores which item (all judges, random, CyclicJudge) and
  the variance a given schedule realises.
- :mod:`~cjstats.decisions.optimise`: the one budget- and cost-aware optimiser (:func:`cjstats.optimise`).
- :mod:`~cjstats.decisions.predictive`: the posterior-predictive variance of a design for ordinal fits (the
  variance evaluation :func:`cjstats.optimise` plugs in when a fit is on the latent scale).
- :mod:`~cjstats.decisions.subsample`: strategies A/B/C replayed on an observed all-judges table.
- :mod:`~cjstats.decisions.differences`: the variance of a paired model difference under each strategy.
- :mod:`~cjstats.decisions.labels`: how many human labels a prediction-powered mean needs.
"""

from cjstats.decisions.components import (
    TERM_CONTRIBUTIONS,
    Components,
    Contribution,
    VarianceDesign,
    component_names,
    register_contribution,
    score_variance,
    term_coefficients,
    term_variances,
)

__all__ = ["Components", "VarianceDesign", "Contribution", "TERM_CONTRIBUTIONS", "register_contribution", "component_names",
           "score_variance", "term_coefficients", "term_variances"]
