"""Strategy curves (paper Fig. 1, Eqs. 3-5) for the drawn group, the App. F subsampling experiment when the table
has several generations per scenario, or for a latent-scale fit the strategies simulated from the fitted model."""

from __future__ import annotations

from typing import Any

from cjstats.reporting.items import figure, format_table, text
from cjstats.reporting.sections._group import which_group

_ABC = ("A: every judge scores each generation; B: one random judge per generation; C: CyclicJudge, judges in one "
        "rotation across scenarios.")


def render(inputs: Any) -> list[dict[str, Any]]:
    from cjstats import plots

    g, latent = inputs.group, inputs.latent
    how = (" The fit is on the latent scale of a cumulative-link model, where Eqs. 3-5 do not give the score "
           "scale's variance: the table simulates new studies of the table's size from the fitted model (scenario "
           "sampling included, as in the allocation section)." if latent else
           " The curves hold the table's scenarios fixed (paper Fig. 1): the y axis is the SE of the mean on these "
           "scenarios, without the scenario term sigma2_alpha/n; the allocation section below adds that term, "
           "because there the number of scenarios is a design choice.")
    items = [text(which_group(inputs)), text(_ABC + how)]
    if inputs.latent_strategies_refused:
        items.append(text(f"Not simulated: {inputs.latent_strategies_refused}"))
    if latent:
        if inputs.latent_strategies is not None:
            items.append(format_table(
                inputs.latent_strategies, caption=f"{g.label}: SE of the mean score (score scale, scenario sampling "
                "included) by strategy and judges per scenario, simulated from the latent model (the closed forms "
                "of Eqs. 3-5 hold for the linear model only)", se_column="mc_se", value_columns=("variance",)))
    else:
        items.append(figure(plots.strategy_curves(inputs.main, model=g.model, criterion=g.criterion),
                            f"SE of the mean of {g.label} on the table's scenarios (scenario set fixed) against judge "
                            "calls per scenario, from the fitted components (Eqs. 3-5, new generations from the fitted "
                            "population).", "strategy curves"))
    if inputs.subsample is not None:
        items.append(figure(plots.strategy_curves(inputs.subsample), "The subsampling experiment of App. F on this "
                            "table's own generations (points, +-2 Monte Carlo SE) and its exact predictions for this "
                            "finite pool (lines).", "subsampling experiment"))
        items.append(format_table(inputs.subsample, caption=f"subsampling experiment, {g.label}, "
                                  f"{inputs.subsample_reps} repetitions"))
    return items
