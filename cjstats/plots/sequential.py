"""``sequence_plot``: a confidence sequence over scenarios (draws a :class:`~cjstats.results.sequential.SequenceResult`)."""

from __future__ import annotations

from typing import Any

from cjstats.plots._style import PALETTE, new_axes

__all__ = ["sequence_plot"]


def sequence_plot(result: Any, *, ax: Any = None) -> Any:
    """The CS's estimate and band against the number of scenarios, the null line and the stopping point.

    Also marks the fixed-n t interval at the last scenario (valid only for a sample size fixed in advance).
    Returns the matplotlib Figure.
    """
    fig, ax = new_axes(ax, figsize=(7.0, 3.6))
    t = result.table
    n = t["n"].to_numpy()
    ax.fill_between(n, t["lower"], t["upper"], color=PALETTE[0], alpha=0.25, lw=0,
                    label=f"{100 * (1 - result.alpha):g}% confidence sequence", gid="band")
    ax.plot(n, t["estimate"], color=PALETTE[0], lw=1.4, label="estimate", gid="estimate")
    ax.axhline(result.null, color="0.3", lw=0.8, ls="--", gid="null")
    ax.errorbar([n[-1] + max(1, len(n) // 60)], [result.t_estimate],
                yerr=[[result.t_estimate - result.t_lower], [result.t_upper - result.t_estimate]], fmt="s",
                color=PALETTE[1], ms=4, capsize=3, label=f"fixed-n t interval at n = {n[-1]}", gid="t_interval")
    if result.stop_at is not None:
        row = t.iloc[result.stop_at - 1]
        ax.axvline(result.stop_at, color=PALETTE[2], lw=1.0, gid="stop")
        ax.annotate(f"STOP at n = {result.stop_at}", (result.stop_at, row["estimate"]), xytext=(6, 10),
                    textcoords="offset points", color=PALETTE[2], fontsize=8)
    what = (f"mean({result.model_a}) - mean({result.model_b})" if result.model_b is not None
            else f"mean({result.model_a})")
    ax.set_xlabel("scenarios seen (n)")
    ax.set_ylabel(what)
    ax.set_title(f"{result.method.replace('_', ' ')}: {result.decision}", fontsize=10)
    finite = t[["lower", "upper"]].to_numpy(dtype=float)
    finite = finite[(abs(finite) < 1e300).all(axis=1)]
    if len(finite) > 10:   # the first intervals span the whole range; zoom to those after the first fifth
        lo, hi = finite[len(finite) // 5:, 0].min(), finite[len(finite) // 5:, 1].max()
        pad = 0.1 * (hi - lo)
        ax.set_ylim(min(lo, result.null) - pad, max(hi, result.null) + pad)
    ax.legend(fontsize=8, loc="best", frameon=True, framealpha=0.9)
    return fig
