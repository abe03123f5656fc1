"""Figures of cjstats results (optional extra ``cjstats[plots]``: matplotlib, arviz-plots).

Every function takes the result object it draws, accepts ``ax=`` (``posterior``: ``figsize=``), returns the
matplotlib Figure and never calls ``show()``. Axes are labelled with the estimand names and score units.
matplotlib is imported only when a function is called, so ``import cjstats`` stays fast.
"""

from __future__ import annotations

from cjstats.plots._plots import (
    allocation_frontier, components_forest, coverage_plot, judge_bias_heatmap, posterior, rank_plot,
    strategy_curves,
)
from cjstats.plots._intervals import agreement_plot, ppi_plot, self_preference_plot
from cjstats.plots.diagnosis import diagnosis_plot
from cjstats.plots.drift import drift_plot
from cjstats.plots._style import PALETTE, STRATEGY_COLOURS, set_style
from cjstats.plots.sequential import sequence_plot
from cjstats.plots.covariates import slopes_plot
from cjstats.plots.ordinal import ordinal_plot
from cjstats.plots.gstudy import gstudy_plot

__all__ = ["judge_bias_heatmap", "strategy_curves", "components_forest", "allocation_frontier", "posterior",
           "rank_plot", "coverage_plot", "agreement_plot", "ppi_plot", "self_preference_plot", "drift_plot",
           "diagnosis_plot", "sequence_plot", "slopes_plot", "set_style", "PALETTE", "STRATEGY_COLOURS"]
__all__ += ["ordinal_plot", "gstudy_plot"]
