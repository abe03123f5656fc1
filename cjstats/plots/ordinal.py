"""The ordinal figure: where each judge's category boundaries sit on the latent scale, and the judge offsets.

A cumulative-link fit (``method="ordinal"``) has no score-scale variance components to draw on one axis: its
variances are on the latent scale (units of the link's residual sd) and its judges differ by where they put the
boundaries between scores. Left: for judge l the boundaries theta_k - gamma_l (shared thresholds shifted by its
offset; per-judge thresholds as fitted), with the score each interval gives written between them and the
scenario spread +- 1.96 s_a shaded. Right: the panel-centred offsets gamma_l with their intervals (shared
thresholds only).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cjstats.exceptions import CjstatsError
from cjstats.plots._style import PALETTE, new_axes

__all__ = ["ordinal_plot"]


def ordinal_plot(fit: Any, *, model: str | None = None, criterion: str | None = None, ax: Any = None) -> Any:
    """Category boundaries per judge on the latent scale and the judge offsets of an ML ordinal fit.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if getattr(fit, "method", None) != "ordinal":
        raise CjstatsError("ordinal_plot draws a fit from cjstats.estimate(..., method='ordinal'). Got "
                           f"{type(fit).__name__} with method {getattr(fit, 'method', None)!r} instead.")
    model, criterion = fit.resolve_group(model, criterion)
    key = model if criterion is None else f"{model} / {criterion}"
    diag = fit.diagnostics[key]
    judges = [str(j) for j in diag.get("judges", [])]
    theta = np.atleast_2d(np.asarray(diag["thresholds_centred"], dtype=float))
    gamma = np.asarray(diag["gamma_centred"], dtype=float)
    values = list(diag["values"])
    k = len(judges)
    cuts = theta - gamma[:, None] if theta.shape[0] == 1 else theta
    s_a = float(np.sqrt(fit.estimates(model=model, criterion=criterion)["scenario"]))
    shared = diag["thresholds"] == "shared"
    if ax is None:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2 if shared else 1, figsize=(9.5 if shared else 6.5, 1.4 + 0.45 * k),
                                 squeeze=False, gridspec_kw={"width_ratios": [2.2, 1]} if shared else None)
        ax, ax2 = axes[0, 0], (axes[0, 1] if shared else None)
    else:
        fig, ax = new_axes(ax)
        ax2 = None
    y = np.arange(k)[::-1]
    lo, hi = min(cuts.min(), -1.96 * s_a) - 0.8, max(cuts.max(), 1.96 * s_a) + 0.8
    ax.axvspan(-1.96 * s_a, 1.96 * s_a, color=PALETTE[0], alpha=0.12, lw=0, label="scenarios: 0 +- 1.96 s_a")
    for i, j in enumerate(judges):
        c = cuts[i]
        ax.plot(c, np.full(c.size, y[i]), "|", color=PALETTE[3], ms=16, mew=2)
        edges = np.concatenate([[lo], c, [hi]])
        for q, v in enumerate(values):
            ax.text(0.5 * (edges[q] + edges[q + 1]), y[i] + 0.18, f"{v:g}", ha="center", va="bottom", fontsize=8)
    ax.set_yticks(y, judges)
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.7, k - 0.2)
    ax.set_xlabel(f"latent scale (sd of the {diag['link']} residual = 1 unit)")
    ax.set_title("category boundaries per judge (score between the ticks)", fontsize=9)
    ax.legend(loc="lower right", fontsize=7, frameon=False)
    if ax2 is not None:
        o = fit.judge_offsets
        o = o[o["model"].astype(str) == model].set_index("judge").loc[judges]
        est = o["estimate"].to_numpy(float)
        ax2.errorbar(est, y, xerr=np.vstack([est - o["lower"].to_numpy(float), o["upper"].to_numpy(float) - est]),
                     fmt="o", color=PALETTE[0], ms=4, capsize=2)
        ax2.axvline(0.0, color="0.5", lw=0.8)
        ax2.set_yticks(y, judges)
        ax2.set_ylim(-0.7, k - 0.2)
        ax2.set_xlabel("offset gamma_l (latent)")
        ax2.set_title(f"judge offsets, {fit.ci_level:.0%} intervals", fontsize=9)
    fig.suptitle(f"Ordinal fit of '{key}' ({diag['link']}, thresholds {diag['thresholds']})", fontsize=10)
    fig.tight_layout()
    return fig
