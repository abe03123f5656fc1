"""``cjstats humans FILE --reference NAME``: judges against human raters, human-scale means and label budgets.

Mirrors :func:`cjstats.judge_agreement`, :func:`cjstats.ppi_means` and, with ``--label-cost``,
:func:`cjstats.decisions.labels.label_budgets` (how many human labels and judge calls to buy).
"""

from __future__ import annotations

import click

from cjstats.cli._app import DataOptions, data_options, emit_frame, format_option, load_scores, refuse_drop_options

__all__ = ["humans"]

_SHOW = ("all", "agreement", "means", "differences")


@click.command("humans", short_help="Judges against human raters: bias, agreement, PPI++ human-scale means.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--reference", default=None, metavar="RATER[,RATER...]",
              help="The human (reference) raters in column 'judge' (default: rows with judge_type=human).")
@click.option("--show", type=click.Choice(_SHOW), default="all", show_default=True,
              help="Agreement table, PPI++ means, paired differences, or agreement + means.")
@click.option("--by-model", "by_model", is_flag=True, help="Agreement per model x criterion, not pooled over models.")
@click.option("--judge", default=None, help="Predict with this judge instead of the panel mean (PPI).")
@click.option("--labels", "n_labels", type=int, default=None,
              help="Use human labels on only this many scenarios (drawn with --seed).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the label subsample.")
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--label-cost", type=float, default=None, help="Price of one human label: adds the label budget.")
@click.option("--judge-cost", type=float, default=None, help="Price of one judge call (with --label-cost).")
@click.option("--target-se", "target_se", type=float, default=None, help="Budget question: SE to reach.")
@click.option("--budget", type=float, default=None, help="Budget question: money to spend.")
@data_options
@format_option
def humans(file: str, reference: str | None, show: str, by_model: bool, judge: str | None, n_labels: int | None, seed: int,
           ci_level: float | None, label_cost: float | None, judge_cost: float | None, target_se: float | None,
           budget: float | None, data: DataOptions, fmt: str) -> None:
    """Bias (judge - human) with scenario-clustered intervals, calibration, alpha; PPI++ means per model."""
    import pandas as pd

    from cjstats.exceptions import CjstatsError
    from cjstats.decisions.labels import label_budgets
    from cjstats.estimators.humans import judge_agreement, ppi_means
    refuse_drop_options(data, "humans", "it compares every judge call with the human ratings and drops none")
    names = [x.strip() for x in reference.split(",") if x.strip()] if reference else None
    scores = load_scores(file, data, reference=names)
    if label_cost is not None and (judge_cost is None or (target_se is None) == (budget is None)):
        raise CjstatsError("The option --label-cost needs --judge-cost and exactly one of --target-se and --budget.")
    frames: list[pd.DataFrame] = []
    texts: list[str] = []
    if show in ("all", "agreement"):
        agr = judge_agreement(scores, by_model=by_model, ci_level=ci_level)
        frames += [agr.table.assign(table="agreement"), agr.humans.assign(table="human_ceiling")]
        texts.append(agr.as_text())
    if show in ("all", "means", "differences") or label_cost is not None:
        res = ppi_means(scores, judge=judge, n_labels=n_labels, seed=seed, ci_level=ci_level,
                        differences=show in ("all", "differences"))
        if show in ("all", "means"):
            frames.append(res.means.assign(table="means"))
            texts.append(res.as_text())
        if show in ("all", "differences"):
            frames.append(res.differences.assign(table="differences"))
            if show == "differences":
                cols = [c for c in ("model_a", "model_b", "criterion", "estimate", "lower", "upper", "human_only",
                                    "n_labeled", "n_effective") if c in res.differences.columns]
                texts.append("Paired differences on the human scale (PPI++)\n"
                             + res.differences[cols].round(3).to_string(index=False))
        if label_cost is not None:
            plan = label_budgets(res, label_cost=label_cost, judge_cost=judge_cost, target_se=target_se,
                                     budget=budget, differences=show == "differences")
            frames.append(plan.assign(table="label_budget"))
            cols = [c for c in ("model", "model_a", "model_b", "criterion", "rho", "n_labels", "n_judged", "cost",
                                "se", "human_only_labels", "human_only_cost", "note") if c in plan.columns]
            texts.append("Labels and judged units to buy (PPI++ closed form)\n"
                         + plan[cols].round(3).to_string(index=False))
    frames = [f for f in frames if len(f)]
    emit_frame(pd.concat(frames, ignore_index=True), fmt, text="\n\n".join(texts))
