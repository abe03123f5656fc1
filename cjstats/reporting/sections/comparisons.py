"""Model comparisons: the comparison given, or the one :func:`cjstats.compare_models` made of a table with two or
more models (paired differences, simultaneous rank intervals), with its rank plot.

A comparison on a latent scale (the joint ordinal model, ``method="ordinal"``: verdicts and ratings) is read on
the score scale first: each model's pass rate (expected rating for ratings) of a new scenario scored by the panel
and the pairwise differences of those, with their delta-method intervals (``score_means``,
``score_differences``); then the latent differences and ranks, said to be on the probit (logit) scale. Any other
comparison is rendered generically (every tidy frame it carries).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from cjstats.reporting.items import figure, format_table, heading, text
from cjstats.reporting.sections.generic import generic_items

__all__ = ["render", "latent_comparison_items"]

#: The latent scale's unit in words, by link (the residual of the cumulative model: Var 1 or pi^2/3).
_LATENT_UNIT = {"probit": "probit scale (the latent residual SD is 1: a latent difference of 0.5 is half a latent "
                          "standard deviation)",
                "logit": "logit scale (the latent residual SD is pi/sqrt(3), about 1.81: a latent difference of 1 is "
                         "0.55 latent standard deviations, and exp(difference) an odds ratio)"}


def _on_latent_scale(one: Any) -> bool:
    return isinstance(getattr(one, "score_means", None), pd.DataFrame) and \
        isinstance(getattr(one, "score_differences", None), pd.DataFrame)


def latent_comparison_items(one: Any) -> list[dict[str, Any]]:
    """A joint ordinal comparison (:class:`~cjstats.estimators.joint.models.ModelComparison` with ``score_means``):
    the pass rates (expected ratings) and their differences with intervals, then the latent differences and ranks
    on the link's scale."""
    pct = f"{100 * float(one.ci_level):g}%"
    link = str(one.fit.diagnostics.get("link", "probit"))
    unit = _LATENT_UNIT.get(link, f"{link} scale")
    sm, sd = one.score_means, one.score_differences
    rate = bool((sm["quantity"] == "pass_rate").all())
    what, whats = ("pass rate", "pass rates") if rate else ("expected rating", "expected ratings")
    items = [text(f"Joint cumulative-link ({link}) model of the {'verdicts' if rate else 'ratings'}: each model's "
                  f"{what} is that of a new scenario scored by the panel of judges (marginal over the scenario "
                  f"effects), on the score scale, with {pct} delta-method intervals. The paired differences and "
                  f"the ranks below them are on the latent {unit}, not in score points.")]
    order = {m: i for i, m in enumerate(one.ranks["model"])}          # the models in rank order, as the ranks
    means = sm.iloc[sm["model"].map(order).argsort(kind="stable")]
    means = means[["model", "estimate", "std_error", "lower", "upper"]].rename(columns={"estimate": what})
    items.append(format_table(means.reset_index(drop=True), caption=f"{what} of each model ({pct} interval)",
                              se_column="std_error", value_columns=(what, "std_error", "lower", "upper")))
    adjusted = "p_adjusted" in sd.columns
    diffs = sd[["model_a", "model_b", "difference", "std_error", "lower", "upper", "p_value",
                *(["p_adjusted"] if adjusted else [])]]
    items.append(format_table(diffs.reset_index(drop=True), caption=f"differences in {what} (a minus b, {pct} "
                              f"interval; p " + (f"adjusted: {one.adjust})" if adjusted else "not adjusted)"),
                              se_column="std_error",
                              value_columns=("difference", "std_error", "lower", "upper")))
    lat = one.differences[["model_a", "model_b", "difference", "std_error", "lower", "upper", "p_value",
                           "p_adjusted"]]
    items.append(format_table(lat.reset_index(drop=True), caption=f"latent differences on the {link} scale (a "
                              f"minus b, {pct} interval; p adjusted: {one.adjust})", se_column="std_error",
                              value_columns=("difference", "std_error", "lower", "upper")))
    items.append(format_table(one.ranks.rename(columns={"mean": f"latent mean ({link})"}).reset_index(drop=True),
                              caption=f"ranks by the latent mean ({one.rank_method})"))
    return items


def render(inputs: Any) -> list[dict[str, Any]]:
    from cjstats import plots

    c, run = inputs.comparisons, inputs.comparison_run
    items: list[dict[str, Any]] = []
    if run is not None and run["error"]:
        items.append(text(f"The models could not be compared on {run['where']}: {run['error']}"))
    elif run is not None:
        items.append(text(f"Joint fit of every model ({run['method']}) on {run['where']}: paired differences (the "
                          f"models share scenarios and judges) and simultaneous rank intervals; method 'auto' chose "
                          f"{run['method']}: {run['why']}."))
        items.extend(text(n) for n in c.fit_notes())
    if c is None:
        return items
    given = [(str(k), v) for k, v in c.items()] if isinstance(c, Mapping) else [(None, c)]
    if not any(_on_latent_scale(one) for _, one in given):
        items.extend(generic_items(c, "comparisons"))
    else:
        for label, one in given:
            if label is not None:
                items.append(heading(label))
            items.extend(latent_comparison_items(one) if _on_latent_scale(one) else generic_items(one, "comparisons"))
    for _, one in given:
        if isinstance(getattr(one, "ranks", None), pd.DataFrame):
            latent = " (latent mean)" if _on_latent_scale(one) else ""
            items.append(figure(plots.rank_plot(one), f"Rank of each model with its interval{latent}.", "rank plot"))
    return items
