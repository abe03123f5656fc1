"""Judge drift (:class:`~cjstats.estimators.drift.DriftResult`): which judges drifted, how far the panel mean
moved, the drift plot and tables."""

from __future__ import annotations

import math
from typing import Any

from cjstats.reporting.plan import refuse as _refuse
from cjstats.reporting.sections._audit import items_of as _items, p_text as _p


def drift_paragraph(r: Any) -> str:
    """One paragraph: which judges drifted (adjusted), the panel mean's change, and the global test."""
    alpha = 1.0 - r.ci_level
    flagged = r.flagged()
    d = r.drift
    panel = d[d["judge"] == "(panel mean)"]
    tests = r.tests.set_index(["group", "test"])
    parts = []
    for _, row in panel.iterrows():
        g = row["group"]
        where = "" if d["group"].nunique() == 1 else f" ({g})"
        nd = tests.loc[(g, "no_drift"), "p_value"] if (g, "no_drift") in tests.index else math.nan
        parts.append(f"The panel mean moved by {row['estimate']:+.3g} (interval [{row['lower']:.3g}, "
                     f"{row['upper']:.3g}], p = {_p(row['p_value'])}){where}; the test that no judge moved gives "
                     f"p = {_p(nd)}.")
    lead = (f"Between '{r.labels[0]}' and '{r.labels[1]}', on {int(d['n_items'].max())} anchor items, "
            + (f"{', '.join(flagged)} drifted (offset change different from 0 at level {alpha:g} after the "
               f"{r.adjust} adjustment across judges)." if flagged else
               f"no judge's offset changed detectably at level {alpha:g} ({r.adjust}-adjusted across judges)."))
    tail = (" A drifted judge scores the same answers differently than before: scores from the two runs are not "
            "comparable for it until it is re-anchored (re-judge the earlier models, or drop it from the panel)."
            if flagged else " Scores of the two runs can be compared, within the intervals shown.")
    return " ".join([lead, *parts]) + tail


def drift_items(obj: Any) -> list[dict[str, Any]]:
    from cjstats import plots
    from cjstats.estimators.drift import DriftResult
    from cjstats.reporting.items import figure as _figure, format_table, heading as _heading, text as _text

    items: list[dict[str, Any]] = []
    for label, r in _items(obj):
        if not isinstance(r, DriftResult):
            raise _refuse("drift", r, "a DriftResult (cj.judge_drift(before, after))")
        if label is not None:
            items.append(_heading(label))
        items.append(_text(drift_paragraph(r)))
        items.append(_figure(plots.drift_plot(r), f"Change of each judge's offset, {r.labels[1]} - {r.labels[0]}, "
                             f"with its {100 * r.ci_level:g}% interval; orange: drifted after the {r.adjust} "
                             "adjustment; grey: the panel mean.", "judge drift"))
        one = r.drift["group"].nunique() == 1          # the group column says nothing with one group
        items.append(format_table(r.drift.drop(columns=["ci_level", *(["group"] if one else [])]), caption=f"drift per judge ({r.method}; "
                                  f"p_adjusted: {r.adjust})", se_column="std_error",
                                  value_columns=("estimate", "std_error", "lower", "upper")))
        items.append(format_table(r.tests.drop(columns=["p_chisq", *(["group"] if one else [])]),
                                  caption="global tests: panel_mean (H0: the panel mean did not move), "
                                  "equal_drift (H0: the judges moved together), no_drift (H0: no judge moved; "
                                  "Bonferroni over the two)"))
    return items


def render(inputs: Any) -> list[dict[str, Any]]:
    given = inputs.drift
    return [] if given is None else drift_items(given)
