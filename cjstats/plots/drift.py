"""The drift figure: per judge, the change of its offset between two runs with its interval; 0 marks none."""

from __future__ import annotations

from typing import Any

import numpy as np

from cjstats.plots._style import PALETTE, label_inches, new_axes, require_columns

__all__ = ["drift_plot"]


def drift_plot(result: Any, *, ax: Any = None) -> Any:
    """Delta_l = eta[after, l] - eta[before, l] of every judge (and the panel mean) with its interval.

    Draws ``result.drift`` (:func:`cjstats.judge_drift`): judges whose adjusted test rejects at 1 - ci_level
    in orange (``gid="drifted"``), the others in blue, the panel mean in grey; the vertical line is no drift.

    Returns
    -------
    matplotlib.figure.Figure
    """
    d = getattr(result, "drift", None)
    require_columns(d, ("group", "judge", "estimate", "lower", "upper", "p_adjusted", "ci_level"),
                    what="a drift result's .drift", caller="drift_plot")
    multi = d["group"].nunique() > 1
    labels = [f"{j} / {g}" if multi else str(j) for j, g in zip(d["judge"], d["group"])]
    fig, ax = new_axes(ax, figsize=(min(3.8 + label_inches(labels), 12.0), 1.0 + 0.3 * len(d)))
    y = np.arange(len(d))[::-1]
    alpha = 1.0 - float(d["ci_level"].iloc[0])
    panel = (d["judge"] == "(panel mean)").to_numpy()
    flagged = (~panel) & (d["p_adjusted"].to_numpy(float) < alpha)
    for mask, colour, label, gid in ((~panel & ~flagged, PALETTE[0], "no drift detected", "steady"),
                                     (flagged, PALETTE[3], "drifted (adjusted p < %g)" % alpha, "drifted"),
                                     (panel, "0.35", "panel mean", "panel")):
        if mask.any():
            est, lo, hi = (d[c].to_numpy(float)[mask] for c in ("estimate", "lower", "upper"))
            ax.errorbar(est, y[mask], xerr=np.vstack([est - lo, hi - est]), fmt="o", color=colour, ms=4,
                        capsize=2, label=label, gid=gid)
    ax.axvline(0.0, color="0.4", lw=0.8)
    ax.set_yticks(y, labels)
    labs = getattr(result, "labels", ("before", "after"))
    ax.set_xlabel(f"drift Delta_l = offset({labs[1]}) - offset({labs[0]}) (score units)")
    ax.set_title("Judge drift on the anchor set", fontsize=10)
    ax.legend(fontsize=8, loc="best", frameon=False)
    return fig
