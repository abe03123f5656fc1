"""``cjstats variance FILE --n N --m M --k K``: Proposition 1 at a design, term by term.

Mirrors :func:`cjstats.decisions.formulas.variance_contributions` / :func:`cjstats.decisions.formulas.grand_mean_variance` applied
to the components that :func:`cjstats.estimate` finds in FILE.
"""

from __future__ import annotations

import click

from cjstats.cli._app import (
    DataOptions, bayes_options, select_model, data_options, emit_frame, fit_scores, format_option, load_scores, method_option,
    formula_option, scenario_judge_option,
)
from cjstats.cli._ordinal_choice import refuse_ordinal

__all__ = ["variance"]


@click.command("variance", short_help="Variance of the benchmark score at a design (Prop. 1), term by term.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--n", "n", type=int, default=None, help="Scenarios (default: as many as in FILE).")
@click.option("--m", "m", type=int, default=1, show_default=True, help="Generations per scenario.")
@click.option("--k", "k", type=int, default=1, show_default=True,
              help="Judges scoring every cell (the same K judges throughout).")
@click.option("--k-total", "k_total", type=int, default=None, help="Panel size (default: the judges in FILE).")
@method_option
@scenario_judge_option
@formula_option
@click.option("--seed", type=int, default=None, help="Seed (an integer >= 0) for backends that use randomness.")
@bayes_options
@click.option("--model", default=None, help="Only this model.")
@data_options
@format_option
def variance(file: str, n: int | None, m: int, k: int, k_total: int | None, method: str, scenario_judge: str, formula: str | None, seed: int | None,
             draws: int | None, chains: int | None, tune: int | None, model: str | None,
             data: DataOptions, fmt: str) -> None:
    """Var(X̄) = σ²_α/n + σ²_β/(nm) + σ²_ε/(nmK) + (σ²_γ/K)(K_tot − K)/(K_tot − 1) per model of FILE."""
    import math

    import pandas as pd

    from cjstats.exceptions import CjstatsError
    from cjstats.decisions.inputs import group_components
    from cjstats.decisions.formulas import variance_contributions

    scores = load_scores(file, data)
    scores = select_model(scores, model)
    if seed is not None and seed < 0:
        raise CjstatsError(f"The option --seed must be an integer >= 0. Got {seed}.")
    fit, method_note = fit_scores(scores, method, incomplete=data.incomplete, max_drop=data.max_drop, seed=seed,
                                  draws=draws, chains=chains, tune=tune, scenario_judge=scenario_judge, model=formula)
    keys = ["model", "criterion"] if fit.has_criterion else ["model"]
    rows, folded, interaction = [], False, False
    for key in fit.components[keys].drop_duplicates().itertuples(index=False):
        sel = dict(zip(keys, key))
        group = group_components(fit, sel["model"], sel.get("criterion"), "cjstats variance")
        est = group.estimates
        nn = group.n_scenarios if n is None else n
        kt = group.n_judges if k_total is None else k_total
        s2b = est["generation"]
        if math.isnan(s2b):
            if m > 1:
                raise CjstatsError(f"FILE has one generation per scenario, so the generation variance is not "
                                   f"identifiable and --m {m} cannot be evaluated; use --m 1.")
            s2b, folded = 0.0, True
        c = variance_contributions(est["scenario"], s2b, est["residual"], est["judge_panel"], n=nn, m=m, k=k,
                                   k_total=kt, s2_scenario_judge=group.scenario_judge)
        total = sum(c.values())
        if group.scenario_judge > 0:
            interaction = True
        rows.append({**sel, "method": fit.method, "n": nn, "m": m, "k": k, "k_total": kt, "variance": total,
                     "se": math.sqrt(total), **c, "judge_share": c["judge_panel"] / total if total else math.nan})
    out = pd.DataFrame(rows)
    if interaction:
        out["scenario_judge"] = out["scenario_judge"].fillna(0.0)
    note = ("\nscenario holds scenario + generation (m = 1 in FILE: generation not identifiable)." if folded else "")
    if interaction:
        note += ("\nscenario_judge = sigma2_scenario_judge/(nK): the scenario x judge interaction, shared by the "
                 "m generations a judge scores on a scenario (0 where the fit has no such term).")
    from cjstats.results.format import format_frame

    head = "Proposition 1: Var(X̄) and its terms (the same K judges score every cell)\n"
    text = ((method_note + "\n" if method_note else "") + head
            + format_frame(out, na="-").to_string(index=False) + note)
    emit_frame(out, fmt, text=text)


# --method ordinal: one sentence saying why not here and what to use instead (issue 22)
refuse_ordinal(variance,
               "Proposition 1's closed forms need score-scale components and the ordinal fit's are latent; cjstats "
               'allocate FILE --method ordinal --budget B simulates the score-scale SE of designs from it')
