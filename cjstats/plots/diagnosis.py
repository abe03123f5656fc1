"""The figure of ``cjstats doctor``'s :class:`~cjstats.results.diagnosis.Diagnosis`: how each judge uses the scale."""

from __future__ import annotations

from typing import Any

import numpy as np

from cjstats.plots._style import PALETTE, label_inches, new_axes, require_columns

__all__ = ["diagnosis_plot"]


def diagnosis_plot(diagnosis: Any, *, ax: Any = None) -> Any:
    """Each judge's share of calls at each score value (bars grouped by value, one colour per judge).

    Draws ``diagnosis.score_counts`` (:func:`cjstats.results.diagnosis.diagnose`): for binary and ordinal scores
    the values themselves, for continuous scores the midpoints of equal-width bins. A judge piling its calls at
    the top value shows the ceiling the diagnosis reports; judges using the scale differently show the judge
    variance the analysis will estimate. Shares are within judge, so judges with different numbers of calls
    compare.

    Returns
    -------
    matplotlib.figure.Figure
    """
    t = getattr(diagnosis, "score_counts", None)
    require_columns(t, ("judge", "value", "count"), what="a diagnosis' .score_counts", caller="diagnosis_plot")
    judges = list(dict.fromkeys(t["judge"]))
    values = np.sort(t["value"].unique())
    fig, ax = new_axes(ax, figsize=(min(4.2 + 0.25 * len(values) + label_inches(judges), 12.0), 3.0))
    width = 0.8 / max(len(judges), 1)
    x = np.arange(len(values))
    for i, judge in enumerate(judges):
        rows = t[t["judge"] == judge].set_index("value")["count"].reindex(values, fill_value=0)
        share = rows.to_numpy(dtype=float) / max(rows.sum(), 1)
        ax.bar(x - 0.4 + width * (i + 0.5), share, width=width, color=PALETTE[i % len(PALETTE)], label=str(judge),
               gid=f"judge:{judge}")
    ax.set_xticks(x, [f"{v:.3g}" for v in values], rotation=45 if len(values) > 8 else 0)
    facts = getattr(diagnosis, "facts", {}) or {}
    kind = facts.get("score_kind", "")
    ax.set_xlabel("score" + (" (bin midpoint)" if kind == "continuous" else ""))
    ax.set_ylabel("share of the judge's calls")
    from pathlib import PurePath

    name = PurePath(str(getattr(diagnosis, "source", ""))).name or "table"
    ax.set_title(f"{name}: {kind} scores, {len(judges)} judges", fontsize=10)
    ax.legend(title="judge", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig
