"""Anytime-valid sequential comparisons (:class:`~cjstats.results.sequential.SequenceResult`,
:class:`~cjstats.results.sequential.SequentialPlan`): where the confidence sequence stands, STOP or CONTINUE."""

from __future__ import annotations

from typing import Any

from cjstats.reporting.plan import refuse as _refuse
from cjstats.reporting.sections._audit import items_of as _items


def _shown_rows(r: Any) -> list[int]:
    """Rows of the sequence table: the stopping row and the last 10."""
    t = r.table
    return sorted({*range(max(len(t) - 10, 0), len(t)), *([r.stop_at - 1] if r.stop_at else [])})


def sequence_decimals(r: Any) -> int:
    """One number of decimals for the sequence's paragraph and its table: two significant digits of the narrowest
    half-width shown (the interval's +- precision), more when needed to show that the stopping row's bound is off
    the null."""
    from cjstats.results.format import column_decimals, value_decimals

    show = r.table.iloc[_shown_rows(r)]
    dec = column_decimals(show["width"] / 2.0) or value_decimals(show["x"])
    if r.stop_at is not None:
        stop = r.table.iloc[r.stop_at - 1]
        gap = min(abs(float(stop["lower"]) - r.null), abs(float(stop["upper"]) - r.null))
        dec = max(dec, value_decimals([gap], sig=2))
    return dec


def sequence_paragraph(r: Any) -> str:
    """One paragraph: what the sequence is for, where it stands, STOP or CONTINUE and what that allows (its numbers
    with the decimals of the table below it, :func:`sequence_decimals`)."""
    from cjstats.results.format import fixed, format_interval

    last = r.last
    d = sequence_decimals(r)
    pct = f"{100 * (1 - r.alpha):g}%"
    now = (f"After {r.n} scenarios the {pct} confidence sequence ({r.method.replace('_', ' ')}) for {r._what()} is "
           f"{format_interval(last['lower'], last['upper'], d)} around {fixed(last['estimate'], d)}; the fixed-n t "
           f"interval {format_interval(r.t_lower, r.t_upper, d)} would hold only had n been fixed in advance.")
    if r.stop_at is not None:
        side = "above" if r.sign > 0 else "below"
        verdict = (f"STOP: it excluded {r.null:g} at n = {r.stop_at}, so the difference is {side} {r.null:g} with "
                   f"error at most {r.alpha:g}, although the data were watched after every scenario.")
    else:
        verdict = (f"CONTINUE: it still contains {r.null:g}; judging more scenarios and looking again keeps the "
                   f"error level {r.alpha:g}.")
    return f"{now} {verdict}"


def _sequence_table(r: Any) -> dict[str, Any]:
    """The stopping row and the last 10 rows; x, estimate and bounds share one number of decimals, the paragraph's
    (:func:`sequence_decimals`)."""
    from cjstats.reporting.items import format_table
    from cjstats.results.format import fixed

    t = r.table
    show = t.iloc[_shown_rows(r)][["n", "scenario", "x", "estimate", "lower", "upper", "width", "excludes_null"]].copy()
    dec = sequence_decimals(r)
    cols = ["x", "estimate", "lower", "upper", "width"]
    for c in cols:
        show[c] = [fixed(v, dec) for v in show[c]]
    item = format_table(show, caption="the sequence: stopping row and last 10 scenarios")
    item["text"] = [False if c in cols else flag for c, flag in zip(item["columns"], item["text"])]
    return item


def sequence_items(obj: Any) -> list[dict[str, Any]]:
    from cjstats import plots
    from cjstats.reporting.items import figure as _figure, format_table, heading as _heading, text as _text
    from cjstats.results.sequential import SequenceResult, SequentialPlan

    items: list[dict[str, Any]] = []
    for label, r in _items(obj):
        if label is not None:
            items.append(_heading(label))
        if isinstance(r, SequenceResult):
            items.append(_text(sequence_paragraph(r)))
            items.extend(_text(n) for n in r.notes)
            items.append(_figure(plots.sequence_plot(r), f"Estimate and {100 * (1 - r.alpha):g}% confidence "
                                 "sequence against the scenarios seen; dashed: the null; square: the fixed-n t "
                                 "interval at the last scenario.", "confidence sequence"))
            items.append(_sequence_table(r))
        elif isinstance(r, SequentialPlan):
            best = r.table.loc[r.table["expected_n"].idxmin()] if r.table["expected_n"].notna().any() else None
            items.append(_text(f"Scenarios needed to decide a difference of {r.delta:g} at error {r.alpha:g} "
                               f"({r.method.replace('_', ' ')}, {r.budget} call(s) per scenario and model), by "
                               f"judge strategy, from simulated stopping times ({r.replicates} runs)"
                               + (f"; {best['strategy']} stops first, after about {best['expected_n']:.0f} "
                                  f"scenarios against {best['n_fixed']:.0f} for a fixed-n test at 80% power."
                                  if best is not None else ".")))
            items.extend(_text(n) for n in r.notes)
            items.append(format_table(r.table, caption="sequential plan per strategy", se_column="expected_n_se",
                                      value_columns=("expected_n",)))
        else:
            raise _refuse("sequences", r, "a SequenceResult (cj.confidence_sequence) or a SequentialPlan "
                          "(cj.sequential_plan)")
    return items


def render(inputs: Any) -> list[dict[str, Any]]:
    given = inputs.sequences
    return [] if given is None else sequence_items(given)
