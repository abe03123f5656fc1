"""What judges reward besides quality (:class:`~cjstats.estimators.joint.covariates.CovariateFit`): each
judge's slope on a covariate and the model means at the mean covariate."""

from __future__ import annotations

from typing import Any

from cjstats.reporting.plan import refuse as _refuse
from cjstats.reporting.sections._audit import items_of as _items, p_text as _p


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
    from cjstats.reporting.items import figure as _figure, format_table, heading as _heading, text as _text

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


def render(inputs: Any) -> list[dict[str, Any]]:
    given = inputs.covariates
    return [] if given is None else covariate_items(given)
