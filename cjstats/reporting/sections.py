"""Report sections of the audit results: what a file holds (:class:`~cjstats.results.diagnosis.Diagnosis`), judge
drift (:class:`~cjstats.estimators.drift.DriftResult`), anytime-valid sequential comparisons
(:class:`~cjstats.results.sequential.SequenceResult`, :class:`~cjstats.results.sequential.SequentialPlan`) and
what judges reward besides quality (:class:`~cjstats.estimators.joint.covariates.CovariateFit`).

Each builder turns a result (or a mapping of labelled results) into the report's section items, the same
``figure`` / ``table`` / ``text`` items :func:`cjstats.reporting.report` renders for every other section: the
result's figure from :mod:`cjstats.plots`, its table through :func:`cjstats.reporting.format_table` (the package's
one number format), and one paragraph that says what it means. Every number comes from the result object.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from cjstats.exceptions import CjstatsError

__all__ = ["AUDIT_SECTIONS", "audit_section"]


def _items(obj: Any) -> list[tuple[str | None, Any]]:
    return [(str(k), v) for k, v in obj.items()] if isinstance(obj, Mapping) else [(None, obj)]


def _refuse(arg: str, obj: Any, want: str) -> CjstatsError:
    return CjstatsError(f"The '{arg}' argument of report takes {want} (or a mapping of labelled ones); got "
                        f"{type(obj).__name__}.")


def _p(p: float) -> str:
    from cjstats.results.format import format_p

    return format_p(p)


# ------------------------------------------------------------------------------------------------ diagnosis
def diagnosis_items(obj: Any) -> list[dict[str, Any]]:
    """What the file holds (facts table), the commands that analyse it, how each judge uses the scale."""
    from cjstats import plots
    from cjstats.reporting.blocks import _figure, _heading, _text, format_table
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
            items.append(_text("cjstats doctor FILE prints the commands that analyse the file this table was read "
                               "from."))
        elif d.commands:
            items.append(format_table(pd.DataFrame({"step": range(1, len(d.commands) + 1), "command": d.commands}),
                                      caption="commands that analyse it, in order"))
        if len(d.score_counts):
            items.append(_figure(plots.diagnosis_plot(d), "Each judge's share of its calls at each score value: "
                                 "a pile at the top value is a ceiling; judges using the scale differently are the "
                                 "judge variance the analysis estimates.", "score use by judge"))
    return items


# ---------------------------------------------------------------------------------------------------- drift
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
    from cjstats.reporting.blocks import _figure, _heading, _text, format_table

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


# ----------------------------------------------------------------------------------------------- sequences
def sequence_paragraph(r: Any) -> str:
    """One paragraph: what the sequence is for, where it stands, STOP or CONTINUE and what that allows."""
    last = r.last
    pct = f"{100 * (1 - r.alpha):g}%"
    now = (f"After {r.n} scenarios the {pct} confidence sequence ({r.method.replace('_', ' ')}) for {r._what()} is "
           f"[{last['lower']:.3g}, {last['upper']:.3g}] around {last['estimate']:.3g}; the fixed-n t interval "
           f"[{r.t_lower:.3g}, {r.t_upper:.3g}] would hold only had n been fixed in advance.")
    if r.stop_at is not None:
        side = "above" if r.sign > 0 else "below"
        verdict = (f"STOP: it excluded {r.null:g} at n = {r.stop_at}, so the difference is {side} {r.null:g} with "
                   f"error at most {r.alpha:g}, although the data were watched after every scenario.")
    else:
        verdict = (f"CONTINUE: it still contains {r.null:g}; judging more scenarios and looking again keeps the "
                   f"error level {r.alpha:g}.")
    return f"{now} {verdict}"


def _sequence_table(r: Any) -> dict[str, Any]:
    """The stopping row and the last 10 rows; x, estimate and bounds share one number of decimals: two significant
    digits of the narrowest width, more when needed to show that the stopping row's bound is off the null."""
    from cjstats.reporting.blocks import format_table
    from cjstats.results.format import column_decimals, fixed, value_decimals

    t = r.table
    rows = sorted({*range(max(len(t) - 10, 0), len(t)), *([r.stop_at - 1] if r.stop_at else [])})
    show = t.iloc[rows][["n", "scenario", "x", "estimate", "lower", "upper", "width", "excludes_null"]].copy()
    dec = column_decimals(show["width"]) or value_decimals(show["x"])
    if r.stop_at is not None:
        stop = t.iloc[r.stop_at - 1]
        gap = min(abs(float(stop["lower"]) - r.null), abs(float(stop["upper"]) - r.null))
        dec = max(dec, value_decimals([gap], sig=2))
    cols = ["x", "estimate", "lower", "upper", "width"]
    for c in cols:
        show[c] = [fixed(v, dec) for v in show[c]]
    item = format_table(show, caption="the sequence: stopping row and last 10 scenarios")
    item["text"] = [False if c in cols else flag for c, flag in zip(item["columns"], item["text"])]
    return item


def sequence_items(obj: Any) -> list[dict[str, Any]]:
    from cjstats import plots
    from cjstats.reporting.blocks import _figure, _heading, _text, format_table
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


# ---------------------------------------------------------------------------------------------- covariates
def covariate_paragraph(fit: Any) -> str:
    """One paragraph per fit: which judges reward each covariate, the panel slope, the test that the judges'
    slopes differ, and that the model means are compared at the mean covariate."""
    alpha = 1.0 - fit.ci_level
    s = fit.slopes
    parts = []
    for c in fit.covariates:
        sc = s[s["covariate"] == c]
        judges = sc[sc["judge"] != "(panel)"]
        panel = sc[sc["judge"] == "(panel)"].iloc[0]
        pos = judges.loc[(judges["lower"] > 0), "judge"].astype(str).tolist()
        neg = judges.loc[(judges["upper"] < 0), "judge"].astype(str).tolist()
        test = fit.tests.get(f"slopes[{c}]", {})
        who = (f"{', '.join(pos)} give{'s' if len(pos) == 1 else ''} higher scores to answers with more {c}"
               if pos else f"no judge's score rises detectably with {c}")
        if neg:
            who += f"; {', '.join(neg)} give{'s' if len(neg) == 1 else ''} lower ones"
        parts.append(f"{who} (intervals excluding 0 at level {alpha:g}). The panel's slope is {panel['slope']:.3g} "
                     f"per unit of {c} ([{panel['lower']:.3g}, {panel['upper']:.3g}])"
                     + (f"; the test that every judge has the same slope gives {test.get('test', 'F')} = "
                        f"{test['statistic']:.3g} on ({test['df1']:g}, {test['df2']:g}) df, p = {_p(test['p_value'])}"
                        if test else "") + ".")
    return (" ".join(parts) + f" Model means and differences below are {fit.at_mean_text()}: a model that writes "
            "more is not credited with what the judges give for length alone.")


def covariate_items(obj: Any) -> list[dict[str, Any]]:
    from cjstats import plots
    from cjstats.estimators.joint.covariates import CovariateFit
    from cjstats.reporting.blocks import _figure, _heading, _text, format_table

    items: list[dict[str, Any]] = []
    for label, fit in _items(obj):
        if not isinstance(fit, CovariateFit):
            raise _refuse("covariates", fit, "a covariate fit (cj.fit_joint(scores, covariates=['length']))")
        if label is not None:
            items.append(_heading(label))
        items.append(_text(covariate_paragraph(fit)))
        for c in fit.covariates:
            items.append(_figure(plots.slopes_plot(fit, covariate=c), f"Each judge's slope on {c} with its "
                                 f"{100 * fit.ci_level:g}% interval (orange: excludes 0); dashed line and band: the "
                                 "panel's slope (the mean of the judges').", f"slopes on {c}"))
        items.append(format_table(fit.slopes.drop(columns=["ci_level"]), caption="slope of each judge and of the "
                                  "panel (score units per covariate unit)", se_column="std_error",
                                  value_columns=("slope", "std_error", "lower", "upper")))
        frame = fit.to_frame()
        mu = frame[frame["component"] == "mu"][["model", "estimate", "std_error", "lower", "upper"]]
        items.append(format_table(mu.reset_index(drop=True), caption=f"model means {fit.at_mean_text()}",
                                  se_column="std_error", value_columns=("estimate", "std_error", "lower", "upper")))
    return items


#: The audit sections: report argument -> (section title, builder of its items), in report order.
AUDIT_SECTIONS: dict[str, tuple[str, Callable[[Any], list[dict[str, Any]]]]] = {
    "diagnosis": ("What the file holds (doctor)", diagnosis_items),
    "drift": ("Judge drift", drift_items),
    "sequences": ("Sequential comparisons", sequence_items),
    "covariates": ("Judge slopes on covariates", covariate_items),
}


def audit_section(key: str, obj: Any) -> dict[str, Any]:
    """The report section of ``obj`` under ``key`` of :data:`AUDIT_SECTIONS`."""
    title, build = AUDIT_SECTIONS[key]
    return {"id": key, "title": title, "intro": [], "items": build(obj)}
