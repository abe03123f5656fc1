"""The sentence that says which group the strategy and allocation sections draw, why, and how to pick another."""

from __future__ import annotations

from typing import Any


def which_group(inputs: Any) -> str:
    g = inputs.group
    crits = len(g.keys) > 1
    if g.reason == "only":
        return f"Drawn for {g.label}, the only model{' / criterion' if crits else ''} of the table."
    if g.reason == "asked":
        return f"Drawn for {g.label}, as asked (model= / --model)."
    how = ("model= and criterion= (cjstats report --model NAME --criterion NAME)" if crits else
           "model= (cjstats report --model NAME)")
    if g.reason == "top":
        from cjstats.results.format import fixed, value_decimals

        among = (f"of {g.model}'s {g.n_candidates} criteria" if g.n_candidates < g.n_groups else
                 f"of the table's {g.n_groups} model/criterion groups" if crits else
                 f"of the table's {g.n_groups} models")
        mu = fixed(g.mu, value_decimals([g.mu], sig=3))
        return (f"Drawn for {g.label}, chosen as the highest panel mean {among} (mu = {mu}, {inputs.methods[0]}): "
                f"the leader, whose score a benchmark most needs to pin down; name another with {how}.")
    return f"Drawn for {g.label}, the table's first group (no group has an estimated mean); name another with {how}."
