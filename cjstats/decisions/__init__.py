"""Decisions from fitted components: the variance of a benchmark score under a design, and the design to run.

- :mod:`~cjstats.decisions.inputs`: :class:`~cjstats.decisions.inputs.GroupComponents`, the layer's one input
  (one group of a fit, read through the result's public API).
- :mod:`~cjstats.decisions.formulas`: pure variance formulas (paper Eqs. 3-6, Proposition 1, App. C, F).
- :mod:`~cjstats.decisions.schedules`: which judge scores which item (all judges, random, CyclicJudge) and
  the variance a given schedule realises.
- :mod:`~cjstats.decisions.optimise`: the one budget- and cost-aware optimiser (:func:`cjstats.optimise`).
- :mod:`~cjstats.decisions.predictive`: the posterior-predictive variance of a design for ordinal fits (the
  variance evaluation :func:`cjstats.optimise` plugs in when a fit is on the latent scale).
- :mod:`~cjstats.decisions.subsample`: strategies A/B/C replayed on an observed all-judges table.
- :mod:`~cjstats.decisions.differences`: the variance of a paired model difference under each strategy.
- :mod:`~cjstats.decisions.labels`: how many human labels a prediction-powered mean needs.
"""
