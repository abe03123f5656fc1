"""Judge tables (paper Table 1), rankings under each single judge, the judge offsets and the judge-bias heatmap
(paper Fig. 2)."""

from __future__ import annotations

from typing import Any

from cjstats.reporting.items import callout, figure, format_table


def render(inputs: Any) -> list[dict[str, Any]]:
    from cjstats import plots

    jt, off = inputs.judge_table, inputs.main.judge_offsets
    return [
        callout("The top model changes across single judges." if jt.top_model_changes else
                "Every single judge puts the same model first."),
        format_table(jt.wide().reset_index(), caption="mean ± half-width under each single judge; (1) marks the "
                     "judge's top model; panel averages all judges"),
        format_table(jt.rankings().reset_index(), caption="rank under each single judge (1 = highest)"),
        format_table(off.drop(columns=["method"]), caption=f"judge offsets gamma[l] ({inputs.methods[0]})",
                     se_column="std_error", value_columns=("estimate", "std_error", "lower", "upper")),
        figure(plots.judge_bias_heatmap(inputs.heat_table), "Each model's mean under each judge minus its panel "
               "mean" + (" (criteria averaged)" if inputs.heat_averaged else "") + "; red: the judge scores the model "
               "higher than the panel does.", "judge bias heatmap"),
    ]
