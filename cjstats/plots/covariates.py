"""The covariate figure: each judge's slope on a covariate with its interval, and the panel's slope."""

from __future__ import annotations

from typing import Any

import numpy as np

from cjstats.plots._style import PALETTE, label_inches, new_axes, require_columns

__all__ = ["slopes_plot"]


def slopes_plot(result: Any, *, covariate: str | None = None, per: float = 1.0, ax: Any = None) -> Any:
    """b_l, each judge's slope on ``covariate`` (times ``per``: ``per=100`` draws score per 100 tokens) with its
    interval, and the panel slope (mean of the judges') as a grey line with its interval shaded; 0 is no effect.

    Draws ``result.slopes`` (:func:`cjstats.fit_joint` with ``covariates=``): judges whose interval excludes 0 in
    orange (``gid="rewarded"``), the others in blue (``gid="flat"``), the panel in grey (``gid="panel"``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    s = getattr(result, "slopes", None)
    require_columns(s, ("covariate", "judge", "slope", "lower", "upper", "ci_level"),
                    what="a covariate fit's .slopes", caller="slopes_plot")
    names = list(dict.fromkeys(s["covariate"]))
    cov = covariate if covariate is not None else names[0]
    if cov not in names:
        from cjstats.exceptions import CjstatsError

        raise CjstatsError(f"slopes_plot: the fit has no covariate '{cov}' (covariates: {', '.join(names)}).")
    d = s[s["covariate"] == cov]
    judges = d[d["judge"] != "(panel)"]
    panel = d[d["judge"] == "(panel)"].iloc[0]
    labels = [str(j) for j in judges["judge"]]
    fig, ax = new_axes(ax, figsize=(min(4.2 + label_inches(labels), 12.0), 1.4 + 0.32 * len(judges)))
    y = np.arange(len(judges))[::-1]
    est, lo, hi = (judges[c].to_numpy(float) * per for c in ("slope", "lower", "upper"))
    off = (lo > 0) | (hi < 0)
    ax.axvspan(panel["lower"] * per, panel["upper"] * per, color="0.85", lw=0, gid="panel_band",
               label="panel interval")
    ax.axvline(panel["slope"] * per, color="0.35", lw=1.2, ls="--", gid="panel",
               label=f"panel slope {panel['slope'] * per:.3g}")
    for mask, colour, label, gid in ((~off, PALETTE[0], "interval covers 0", "flat"),
                                     (off, PALETTE[3], "interval excludes 0", "rewarded")):
        if mask.any():
            ax.errorbar(est[mask], y[mask], xerr=np.vstack([est[mask] - lo[mask], hi[mask] - est[mask]]), fmt="o",
                        color=colour, ms=4, capsize=2, label=label, gid=gid)
    ax.axvline(0.0, color="0.4", lw=0.8)
    ax.set_yticks(y, labels)
    ax.set_ylim(-0.8, len(judges) - 0.2)
    unit = f"per {per:g} units of {cov}" if per != 1 else f"per unit of {cov}"
    ax.set_xlabel(f"slope b_l (score {unit}; {100 * float(panel['ci_level']):g}% intervals)")
    test = getattr(result, "tests", {}).get(f"slopes[{cov}]")
    title = f"Each judge's slope on {cov}"
    if test:
        title += f" (judges differ: F = {test['statistic']:.3g}, p = {test['p_value']:.2g})"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best", frameon=False)
    return fig
