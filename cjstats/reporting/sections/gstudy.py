"""How reliable the ranking is (:class:`~cjstats.results.gstudy.GStudy`): the coefficients' figure, their table and
one paragraph. Renders only what :func:`cjstats.g_study` computed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["gstudy_items", "render"]


def gstudy_items(obj: Any) -> list[dict[str, Any]]:
    from cjstats import plots
    from cjstats.reporting.items import figure, format_table, heading, text

    items: list[dict[str, Any]] = []
    given = [(str(k), v) for k, v in obj.items()] if isinstance(obj, Mapping) else [(None, obj)]
    for label, g in given:
        if label is not None:
            items.append(heading(label))
        t = g.table
        best = t.loc[t["phi"].idxmax()]
        items.append(text(f"Models as the object of measurement ({len(g.models)} models, {g.scale} scale): E rho^2 is "
                          f"the reliability of their ranking, Phi of their absolute scores, for a benchmark of the "
                          f"design in each row. The highest Phi here is {best['phi']:.3f} "
                          f"[{best['phi_lower']:.3f}, {best['phi_upper']:.3f}] ({best['strategy']} judges, "
                          f"n = {int(best['n'])}, m = {int(best['m'])}, k = {int(best['k'])})."))
        items.append(figure(plots.gstudy_plot(g), "E rho^2 and Phi against the number of scenarios, per judge "
                            "strategy, with intervals from the fit's uncertainty.", "G study coefficients"))
        cols = ["strategy", "n", "m", "k", "e_rho2", "e_rho2_lower", "e_rho2_upper", "phi", "phi_lower", "phi_upper"]
        items.append(format_table(t[cols].reset_index(drop=True), caption="generalizability (E rho^2) and "
                                  "dependability (Phi) per design"))
    return items


def render(inputs: Any) -> list[dict[str, Any]]:
    given = inputs.gstudy
    return [] if given is None else gstudy_items(given)
