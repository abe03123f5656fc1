"""What the file holds (:class:`~cjstats.results.diagnosis.Diagnosis`, what ``cjstats doctor`` prints): one
sentence on the data, its notes, the facts table, the commands that analyse the file and how each judge uses the
scale. The report's first section: the data before what is estimated from it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from cjstats.reporting.plan import refuse as _refuse
from cjstats.reporting.sections._audit import items_of as _items


def diagnosis_items(obj: Any) -> list[dict[str, Any]]:
    """What the file holds (facts table), the commands that analyse it, how each judge uses the scale."""
    from cjstats import plots
    from cjstats.reporting.items import figure as _figure, format_table, heading as _heading, text as _text
    from cjstats.results.diagnosis import Diagnosis

    items: list[dict[str, Any]] = []
    for label, d in _items(obj):
        if not isinstance(d, Diagnosis):
            raise _refuse("diagnosis", d, "a Diagnosis (cj.diagnose(path), what cjstats doctor prints)")
        if label is not None:
            items.append(_heading(label))
        f = d.facts
        n_j, n_m = len(f["judges"]), len(f["models"])
        name = "The table" if d.source == "<table>" else f"{d.source}"
        what = (f"{name} is a {d.format} score table of {f['n_rows']:,} scores: {n_m} model"
                f"{'s' if n_m != 1 else ''} on {f['n_scenarios']} scenarios, up to {f['generations_per_scenario']} "
                f"generation(s) per scenario, scored by {n_j} judge{'s' if n_j != 1 else ''}"
                + (f" on {len(f['criteria'])} criteria" if f["criteria"] else "")
                + (f", with {len(f['reference_raters'])} reference rater(s)" if f["reference_raters"] else "")
                + f". The scores are {f['score_kind']} ({f['distinct_scores']} distinct values in "
                f"[{f['score_min']:g}, {f['score_max']:g}], {f['ceiling_share']:.0%} at the top) and the design is "
                f"{'complete' if f['complete'] else 'incomplete: some judge calls are missing'}.")
        items.append(_text(what))
        items.extend(_text(n) for n in d.notes)
        facts = d.to_frame()
        facts = facts[~facts["item"].isin(["command", "note"])].reset_index(drop=True)
        facts["value"] = facts["value"].replace("", "none")
        items.append(format_table(facts, caption="what the file holds"))
        if d.source == "<table>":
            items.append(_text("cjstats doctor, run on the file this table was read from, prints the commands "
                               "that analyse it."))
        elif d.commands:
            items.append(format_table(pd.DataFrame({"step": range(1, len(d.commands) + 1), "command": d.commands}),
                                      caption="commands that analyse it, in order"))
        if len(d.score_counts):
            shown = replace(d, source="the table") if d.source == "<table>" else d   # no placeholder in the title
            items.append(_figure(plots.diagnosis_plot(shown), "Each judge's share of its calls at each score value: "
                                 "a pile at the top value is a ceiling; judges using the scale differently are the "
                                 "judge variance the analysis estimates.", "score use by judge"))
    return items


def render(inputs: Any) -> list[dict[str, Any]]:
    given = inputs.diagnosis
    return [] if given is None else diagnosis_items(given)
