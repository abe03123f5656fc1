"""What the fits return: the result types, their tidy frames and summaries, and their renderers.

- :mod:`~cjstats.results.components`: :class:`~cjstats.results.components.VarianceComponents`, the per-model fit.
- :mod:`~cjstats.results.allocation`: :class:`~cjstats.results.allocation.Allocation`, the optimiser's answer.
- :mod:`~cjstats.results.tables`: wide tables and booktabs LaTeX of any fit.
"""
