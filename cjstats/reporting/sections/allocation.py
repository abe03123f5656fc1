"""The allocation recommendation of :func:`cjstats.optimise` for the drawn group, the best design per strategy and
the frontier."""

from __future__ import annotations

from typing import Any

from cjstats.reporting.items import callout, figure, format_table, se_text, text
from cjstats.reporting.sections._group import which_group


def render(inputs: Any) -> list[dict[str, Any]]:
    from cjstats import plots
    from cjstats.results.format import format_prob

    alloc, g = inputs.allocation, inputs.group
    if alloc is None:
        return [text(which_group(inputs)), text(f"No allocation: {inputs.allocation_refused}")]
    r, both = alloc.recommendation, inputs.allocation_ses
    return [
        text(which_group(inputs)), *(text(n) for n in alloc.notes),
        callout(f"Recommended for {g.label} at budget {alloc.budget:g} {alloc.budget_unit}: {r['strategy']}, "
                f"{r['judges_per_generation']} judge(s) per generation, n = {r['n']} scenarios x m = {r['m']} "
                f"generations ({r['calls']} calls); predicted SE including scenario sampling {se_text(r['se'])}"
                + (f" (SE on these scenarios, the strategy curves' quantity: {se_text(both[1])})" if both else "")
                + f"; P(best) = {format_prob(r['p_best'])}." + (f" {s}" if (s := alloc.budget_sentence()) else "")),
        format_table(alloc.strategies, caption="best design per strategy (se: SE including scenario sampling)"),
        figure(plots.allocation_frontier(alloc), "Predicted SE including scenario sampling (sigma2_alpha/n) against "
               "cost; star: recommendation.", "allocation frontier"),
    ]
