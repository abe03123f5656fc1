"""What the fits return: the result types, their tidy frames and summaries, and their renderers.

- :mod:`~cjstats.results.base`: :class:`~cjstats.results.base.Result`, the contract every public result keeps
  (``to_frame``, ``summary``, ``_repr_html_``, ``save``/``load``; pickle and deepcopy work).
- :mod:`~cjstats.results.estimands`: the one estimand registry (``ESTIMANDS``) and the view vocabulary (``VIEWS``).
- :mod:`~cjstats.results.components`: :class:`~cjstats.results.components.VarianceComponents`, the per-model fit.
- :mod:`~cjstats.results.contrast`: :class:`~cjstats.results.contrast.ContrastResult`, the one answer of every
  ``fit.contrast(spec)``, and :class:`~cjstats.results.contrast.JointCovariance`, a joint fit's covariance as data.
- :mod:`~cjstats.results.persist`: ``save``/``load`` of a result as a portable directory.
- :mod:`~cjstats.results.allocation`: :class:`~cjstats.results.allocation.Allocation`, the optimiser's answer.
- :mod:`~cjstats.results.tables`: wide tables and booktabs LaTeX of any fit.
- :mod:`~cjstats.results.format`: the one number-formatting policy of summaries, reports, plots and LaTeX.
"""
