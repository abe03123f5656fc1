"""The G/D-study figure: E rho^2 (ranking models) and Phi (absolute) against the number of scenarios, one line per
judge strategy, with the intervals from the fit's uncertainty."""

from __future__ import annotations

from typing import Any

import numpy as np

from cjstats.plots._style import STRATEGY_COLOURS, require_columns

__all__ = ["gstudy_plot"]


def gstudy_plot(result: Any, *, ax: Any = None) -> Any:
    """E rho^2 = s2_p / (s2_p + s2_delta) and Phi = s2_p / (s2_p + s2_Delta) of every design in ``result.table``
    (:func:`cjstats.g_study`) against n, one panel each, a line and band per strategy and judges per generation k
    (at the table's first m when it holds several).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    t = getattr(result, "table", None)
    require_columns(t, ("strategy", "n", "m", "k", "e_rho2", "e_rho2_lower", "e_rho2_upper", "phi", "phi_lower",
                        "phi_upper"), what="a G study's .table", caller="gstudy_plot")
    m = t["m"].iloc[0]
    t = t[t["m"] == m]
    if ax is None:
        fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.4), sharey=True)
    else:
        axes = np.atleast_1d(ax)
        fig = axes[0].figure
    for a, (col, title) in zip(axes, (("e_rho2", "E rho^2 (ranking models)"), ("phi", "Phi (absolute)"))):
        for (strategy, k), part in t.groupby(["strategy", "k"], sort=False):
            part = part.sort_values("n")
            colour = STRATEGY_COLOURS.get(str(strategy), "0.3")
            a.plot(part["n"], part[col], marker="o", ms=3, color=colour, label=f"{strategy} (k = {int(k)})",
                   gid=str(strategy))
            a.fill_between(part["n"], part[f"{col}_lower"], part[f"{col}_upper"], color=colour, alpha=0.15)
        a.set_xscale("log")
        a.set_xlabel("scenarios n (log scale)")
        a.set_title(title, fontsize=10)
    axes[0].set_ylabel(f"coefficient (m = {int(m)})")
    axes[-1].legend(title="judges", fontsize=8)
    fig.tight_layout()
    return fig
