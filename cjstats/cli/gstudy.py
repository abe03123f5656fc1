"""``cjstats gstudy FILE``: how reliable the ranking of the models is, per benchmark design (a G and D study).

Mirrors :func:`cjstats.g_study` (and :func:`cjstats.replication` with ``--replication``) on the joint fit of the
models of FILE (:func:`cjstats.fit_joint`, the method chosen as ``cjstats compare`` chooses it). Formulas:
:mod:`cjstats.decisions.gstudy` and docs/gstudy.md.
"""

from __future__ import annotations

import click

from cjstats.cli._app import (
    METHODS, DataOptions, bayes_kwargs, bayes_options, data_options, emit_tables, engine_options,
    format_option, load_source, method_option, parse_list,
)
from cjstats.exceptions import CjstatsError

__all__ = ["gstudy"]

#: The strategies ``--strategy`` offers by default: the paper's A, B and C.
DEFAULT_STRATEGIES = "all,random,cyclic"


def _strategies(text: str) -> list[str]:
    """``--strategy all,cyclic``: the judge strategies, each one of the decision layer's schemes."""
    from cjstats.decisions.components import SCHEMES

    items = parse_list(text, option="--strategy") or []
    for s in items:
        if s not in SCHEMES:
            raise CjstatsError(f"The option --strategy names '{s}', which is not a judge strategy (known: "
                               f"{', '.join(SCHEMES)}).")
    return items


def _ints(text: str | None, option: str) -> list[int] | None:
    from cjstats.cli.study import _int_list

    return None if text is None else _int_list(text, option, 1)


@click.command(short_help="How reliable the ranking of models is: E rho^2 and Phi per design (G/D study).")
@click.argument("file", type=click.Path(dir_okay=False))
@method_option(choices=(*METHODS, "ordinal"))
@click.option("--link", type=click.Choice(["probit", "logit"]), default=None,
              help="--method ordinal (verdicts and ratings: the coefficients on the joint model's latent scale): "
                   "the link, probit (default) or logit.")
@click.option("--model-scenario", "model_scenario", type=click.Choice(["pooled", "per-model"]), default="pooled",
              show_default=True,
              help="One model x scenario variance for all models, or one per model (REML; the G study uses their "
                   "mean over the models).")
@click.option("--n", "n_text", default=None, metavar="N,...",
              help="Scenarios per model in the planned benchmark, e.g. 50,100,200 (default: the fit's).")
@click.option("--m", "m_text", default=None, metavar="M,...",
              help="Generations per (model, scenario) (default: the fit's).")
@click.option("--k", "k_text", default=None, metavar="K,...",
              help="Judges per generation for random, cyclic and fixed (default 1 for random and cyclic, the whole "
                   "panel for fixed; all uses every judge).")
@click.option("--strategy", "strategy_text", default=DEFAULT_STRATEGIES, show_default=True, metavar="S,...",
              help="Judge strategies: all (every judge on each generation), random (k random judges per "
                   "generation), cyclic (CyclicJudge), fixed (the same k judges throughout).")
@click.option("--population", is_flag=True,
              help="Judges drawn afresh from a population (Brennan's random facet) instead of the fit's panel as "
                   "the universe of judges; --replication then draws a new panel.")
@click.option("--k-total", "k_total", type=int, default=None,
              help="With --population: the size of the new panel (default: the fit's number of judges).")
@click.option("--replication", is_flag=True,
              help="Also simulate fresh benchmarks of each design: P(same top model) and the expected Kendall tau "
                   "between the observed and the replicated rankings.")
@click.option("--fixed-models", "fixed_models", is_flag=True,
              help="--replication: draw the true model means around their estimates (a flat prior; overconfident "
                   "when the models are close) instead of as models from a universe of models (the default, "
                   "calibrated).")
@click.option("--n-sims", "n_sims", type=int, default=None,
              help="--replication: simulated benchmarks per design (default 4000).")
@click.option("--n-draws", "n_draws", type=int, default=4000, show_default=True,
              help="Parametric draws behind the intervals of E rho^2 and Phi.")
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the intervals' draws, the replications and a Bayesian fit.")
@bayes_options
@engine_options
@data_options
@format_option
def gstudy(file: str | None, method: str, link: str | None, model_scenario: str, n_text: str | None, m_text: str | None,
           k_text: str | None, strategy_text: str, population: bool, k_total: int | None, replication: bool,
           fixed_models: bool, n_sims: int | None, n_draws: int, ci_level: float | None, seed: int, draws: int | None, chains: int | None,
           tune: int | None, engine: str, memory_limit: str | None, data: DataOptions, fmt: str) -> None:
    """E rho^2 (ranking the models) and Phi (their scores) of FILE's benchmark, per design.

    The models of FILE are fitted jointly (--method auto: the ANOVA when every model is complete and balanced on
    the same scenarios and judges, else REML), and each design (the product of --n, --m, --k and --strategy)
    gets its generalizability coefficient E rho^2 and dependability coefficient Phi with intervals. A table with
    criteria is studied per criterion (add --composite for their mean). docs/gstudy.md gives the formulas.
    """
    from cjstats.decisions.gstudy import g_study, replication as replicate
    from cjstats.estimators.joint.models import fit_joint

    from cjstats.cli.compare import check_joint_options, criterion_parts, joint_method

    per_model = check_joint_options(method, link, model_scenario, engine)
    if k_total is not None and not population:
        raise CjstatsError(f"The option --k-total sets the size of a new panel of judges, which needs --population "
                           f"(otherwise the fit's panel is the universe of judges); add --population or leave "
                           f"--k-total {k_total} out.")
    for flag, given in (("--n-sims", n_sims is not None), ("--fixed-models", fixed_models)):
        if given and not replication:
            raise CjstatsError(f"The option {flag} applies to --replication only; add --replication or leave it "
                               f"out.")
    ns, ms, ks = _ints(n_text, "--n"), _ints(m_text, "--m"), _ints(k_text, "--k")
    strategies = _strategies(strategy_text)
    for name, value in (("--n-sims", n_sims), ("--n-draws", n_draws), ("--k-total", k_total)):
        if value is not None and value < 1:
            raise CjstatsError(f"The option {name} must be an integer >= 1. Got {value}.")
    scores = load_source(file, data, engine, memory_limit)
    runs = []
    for criterion, part in criterion_parts(scores):                  # one study per criterion, stacked
        chosen, note, options = joint_method(part, method, data, per_model=per_model, link=link)
        options.update(bayes_kwargs(chosen == "bayes", draws=draws, chains=chains, tune=tune))
        fit = fit_joint(part, chosen, ci_level=ci_level, seed=seed, **options)
        g = g_study(fit, n=ns, m=ms, k=ks, strategy=strategies, k_total=k_total,
                    judges="population" if population else "panel", n_draws=n_draws, seed=seed)
        r = (replicate(fit, n=ns, m=ms, k=ks, strategy=strategies, k_total=k_total,
                       judges="new" if population else "same", models="fixed" if fixed_models else "random",
                       n_sims=4000 if n_sims is None else n_sims,
                       seed=seed) if replication else None)
        runs.append((criterion, note, g, r))
    _emit(runs, fmt)


def _emit(runs, fmt: str) -> None:
    """Write the studies: one per criterion (a ``criterion`` column when the table has criteria). JSON: one object
    with the tables ``gstudy``, ``components`` and, with --replication, ``replication`` and ``top``."""
    import pandas as pd

    by_criterion = runs[0][0] is not None

    def tag(df, criterion):
        return df.assign(criterion=criterion)[["criterion", *df.columns]] if by_criterion else df

    def stack(get):
        frames = [tag(get(g, r), c) for c, _, g, r in runs]
        return pd.concat(frames, ignore_index=True)

    tables = {"gstudy": stack(lambda g, r: g.table.assign(method=g.method)),
              "components": stack(lambda g, r: g.components)}
    if runs[0][3] is not None:
        tables["replication"] = stack(lambda g, r: r.table.assign(method=r.method))
        tables["top"] = stack(lambda g, r: r.top)
    lines = []
    for i, (c, note, g, r) in enumerate(runs):
        if i:
            lines.append("")
        if by_criterion:
            lines.append(f"Criterion '{c}'")
        if note:
            lines.append(note)
        lines.append(g.as_text())
        if r is not None:
            lines += ["", r.as_text()]
    emit_tables(tables, fmt, text="\n".join(lines))
