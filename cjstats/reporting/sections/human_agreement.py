"""Human agreement: the judges against the reference raters (:func:`cjstats.judge_agreement`), bias with its
scenario-clustered interval, and the agreement plot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from cjstats.reporting.items import figure
from cjstats.reporting.sections.generic import generic_items


def render(inputs: Any) -> list[dict[str, Any]]:
    from cjstats import plots

    a = inputs.human_agreement
    if a is None:
        return []
    items = generic_items(a, "human_agreement")
    for one in (a.values() if isinstance(a, Mapping) else [a]):
        if isinstance(getattr(one, "table", None), pd.DataFrame) and "bias" in one.table.columns:
            items.append(figure(plots.agreement_plot(one), "bias[l] of each judge and the panel against the "
                                "reference raters, with its scenario-clustered interval.", "agreement plot"))
    return items
