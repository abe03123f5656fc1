"""Design summary: how many scores, groups, scenarios and judges; whether the table is complete and balanced; which
backend 'auto' chose and why."""

from __future__ import annotations

from typing import Any

from cjstats.reporting.items import format_table, text


def render(inputs: Any) -> list[dict[str, Any]]:
    scores, d = inputs.scores, inputs.design
    items = [text(f"{scores.design['n_rows'].sum():,} scores: {len(d)} model/criterion groups, up to "
                  f"{int(d['n_scenarios'].max())} scenarios and {int(d['n_judges'].max())} judges "
                  f"({', '.join(map(str, scores.judges))}). Complete and balanced: "
                  f"{'yes' if bool(d['balanced'].all()) else 'no'}.")]
    if inputs.auto_why:
        items.append(text(f"Backend: {inputs.auto_why}."))
    items.append(format_table(d.drop(columns=["judges"], errors="ignore"), caption="design"))
    return items
