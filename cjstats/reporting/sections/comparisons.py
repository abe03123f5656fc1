"""Model comparisons: the comparison given, or the one :func:`cjstats.compare_models` made of a table with two or
more models (paired differences, simultaneous rank intervals), with its rank plot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from cjstats.reporting.items import figure, text
from cjstats.reporting.sections.generic import generic_items


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
    items.extend(generic_items(c, "comparisons"))
    for one in (c.values() if isinstance(c, Mapping) else [c]):
        if isinstance(getattr(one, "ranks", None), pd.DataFrame):
            items.append(figure(plots.rank_plot(one), "Rank of each model with its interval.", "rank plot"))
    return items
