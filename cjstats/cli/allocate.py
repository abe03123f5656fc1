"""``cjstats allocate FILE --budget B``: the recommended design per model (mirrors :func:`cjstats.optimise`)."""

from __future__ import annotations

import click

from cjstats.cli._app import (
    DataOptions, bayes_options, select_model, data_options, emit_tables, fit_scores, format_option, load_scores, method_option,
    formula_option, scenario_judge_option, parse_mapping,
)
from cjstats.cli._ordinal import ORDINAL_METHODS, fit_ordinal, ordinal_kwargs, ordinal_options

__all__ = ["allocate"]


@click.command("allocate", short_help="Recommend a judge allocation for a budget, per model.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--budget", type=float, default=None, help="Total budget: calls, or money when --costs is given.")
@click.option("--target-se", "target_se", type=float, default=None,
              help="Find the cheapest design reaching this standard error instead (within --budget if given).")
@click.option("--costs", default=None, metavar="JUDGE=PRICE,...", help="Price per call of every panel judge.")
@click.option("--generation-cost", "generation_cost", type=float, default=0.0, show_default=True,
              help="Price of producing one generation.")
@click.option("--n-max", "n_max", type=int, default=None, help="Scenarios available (default: as in FILE).")
@click.option("--m-max", "m_max", type=int, default=None, help="Most generations per scenario.")
@method_option(choices=ORDINAL_METHODS)
@ordinal_options
@scenario_judge_option
@formula_option
@click.option("--model", default=None, help="Only this model.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed (an integer >= 0) of the uncertainty draws.")
@bayes_options
@data_options
@format_option
def allocate(file: str, budget: float | None, target_se: float | None, costs: str | None, generation_cost: float,
             n_max: int | None, m_max: int | None, method: str, link: str | None, thresholds: str | None,
             scenario_judge: str, formula: str | None, model: str | None, seed: int,
             draws: int | None, chains: int | None, tune: int | None,
             data: DataOptions, fmt: str) -> None:
    """Rank designs (strategy, scenarios, generations, judges per generation) for a budget or a target SE.

    JSON output is one object: ``designs`` (the ranked designs of every model), ``recommendation`` (one row
    per model, the design to run) and ``shares`` (the judge shares of the weighted strategy, when costs
    differ). ``cjstats plan --from-allocation`` reads it back.

    --method ordinal fits the cumulative-link model (latent scale) and ranks designs by the variance of the mean
    score it predicts, by simulation (a call budget only: no --costs, --target-se or --generation-cost).
    """
    import pandas as pd

    from cjstats.decisions.optimise import optimise
    from cjstats.exceptions import CjstatsError

    if budget is None and target_se is None:
        raise CjstatsError("The option --budget (or --target-se) is required: allocate needs a budget (calls or "
                           "money) or a target SE to aim for.")
    if seed < 0:
        raise CjstatsError(f"The option --seed must be an integer >= 0. Got {seed}.")
    ordinal_kwargs(method, link, thresholds)       # --link / --thresholds without --method ordinal: one sentence
    if method == "ordinal":
        given = [flag for flag, used in (("--target-se", target_se is not None), ("--costs", bool(costs)),
                                         ("--generation-cost", generation_cost != 0)) if used]
        if given:
            raise CjstatsError(f"The option {given[0]} cannot be used with --method ordinal, whose designs are "
                               f"simulated for a budget of equal-price judge calls; give --budget in calls, or use "
                               f"--method auto for the Gaussian fit's closed forms.")
    prices = None
    if costs:
        prices = {}
        for judge, value in parse_mapping(costs, option="--costs").items():
            try:
                prices[judge] = float(value)
            except ValueError:
                raise CjstatsError(f"The option --costs needs a number for judge '{judge}'. Got {value!r}.") from None
    scores = load_scores(file, data)
    scores = select_model(scores, model)
    if method == "ordinal":
        fit = fit_ordinal(scores, link=link, thresholds=thresholds, incomplete=data.incomplete,
                          max_drop=data.max_drop, seed=seed, draws=draws, chains=chains, tune=tune,
                          scenario_judge=scenario_judge, model=formula)
        note = f"Method: ordinal (cumulative {link or 'probit'}, latent scale); designs ranked by the simulated SE " \
               f"of the mean score."
    else:
        fit, note = fit_scores(scores, method, incomplete=data.incomplete, max_drop=data.max_drop, seed=seed,
                               draws=draws, chains=chains, tune=tune, scenario_judge=scenario_judge, model=formula)
    keys = ["model", "criterion"] if fit.has_criterion else ["model"]
    frames, texts, recs, shares = [], [], [], []
    for key in fit.components[keys].drop_duplicates().itertuples(index=False):
        sel = dict(zip(keys, key))
        res = optimise(fit, budget=budget, target_se=target_se, judge_costs=prices, generation_cost=generation_cost,
                       n_max=n_max, m_max=m_max, model=sel["model"], criterion=sel.get("criterion"), seed=seed)
        frames.append(res.table.assign(**sel)[[*keys, *res.table.columns]])
        texts.append(res.as_text())
        recs.append({**sel, **dict(res.recommendation), "method": fit.method, "judges": ",".join(scores.group(
            sel["model"], sel.get("criterion")).judge_labels)})
        if res.frequencies:
            shares.extend({**sel, "judge": j, "share": float(v)} for j, v in res.frequencies.items())
    tables = {"designs": pd.concat(frames, ignore_index=True), "recommendation": pd.DataFrame(recs),
              "shares": pd.DataFrame(shares, columns=[*keys, "judge", "share"])}
    emit_tables(tables, fmt, text=(note + "\n" if note else "") + "\n\n".join(texts))
