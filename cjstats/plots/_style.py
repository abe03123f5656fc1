"""Palette, style and small shared helpers of :mod:`cjstats.plots` (matplotlib is imported lazily)."""

from __future__ import annotations

from typing import Any

from cjstats._validate import require_packages  # noqa: F401  (re-exported for the plot modules)
from cjstats.exceptions import CjstatsError

__all__ = ["PALETTE", "STRATEGY_COLOURS", "set_style", "new_axes", "require_columns", "require_packages"]

#: Okabe-Ito colour-blind-safe palette (Okabe & Ito 2008), black last.
PALETTE: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
                            "#000000")

#: One colour per judge-assignment strategy, the same in every figure.
STRATEGY_COLOURS: dict[str, str] = {"all": PALETTE[0], "random": PALETTE[1], "cyclic": PALETTE[2],
                                    "weighted": PALETTE[4], "fixed": PALETTE[3]}

_RC: dict[str, Any] = {
    "figure.dpi": 110, "savefig.dpi": 200, "savefig.bbox": "tight",
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "xtick.labelsize": 8, "ytick.labelsize": 8,
    "legend.fontsize": 8, "legend.frameon": False,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3,
    "lines.linewidth": 1.6, "lines.markersize": 5,
}


def set_style() -> None:
    """Apply cjstats' figure style: paper-size fonts, light grid, the colour-blind-safe :data:`PALETTE`.

    Optional: every plot function reads colours from :data:`PALETTE` itself, so figures look the same without it.
    """
    require_packages("set_style", "matplotlib")
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(_RC)
    mpl.rcParams["axes.prop_cycle"] = cycler(color=list(PALETTE))


def new_axes(ax: Any, *, figsize: tuple[float, float]) -> tuple[Any, Any]:
    """``(figure, axes)``: the given axes and its figure, or a new figure of ``figsize`` inches."""
    if ax is not None:
        return ax.figure, ax
    require_packages("cjstats.plots", "matplotlib")
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")   # no pyplot state: nothing to close, nothing shown
    return fig, fig.add_subplot()


def label_inches(labels: Any) -> float:
    """Width in inches that the longest of ``labels`` takes as tick text (about 0.07 inch a character at the
    style's tick size), so a figure can grow with its labels instead of squeezing its axes to nothing."""
    longest = max((len(str(x)) for x in labels), default=0)
    return 0.07 * longest


def require_columns(frame: Any, columns: tuple[str, ...], *, what: str, caller: str) -> None:
    """Refuse, in one sentence, a result whose table lacks the columns a plot draws."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise CjstatsError(f"{caller} draws {what}, a DataFrame; got {type(frame).__name__}.")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise CjstatsError(f"{caller} needs {what} with columns {', '.join(columns)}; "
                           f"missing: {', '.join(missing)}.")
