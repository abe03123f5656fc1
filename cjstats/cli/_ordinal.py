"""``--method ordinal`` on the command line: the maximum-likelihood cumulative-link backend (issue 22).

The backend (:mod:`cjstats.estimators.ordinal_ml`) fits, per model (x criterion),

    P(Y <= k | alpha_i) = F(theta_k - gamma_l - alpha_i),   alpha_i ~ N(0, s_a^2),

with F the normal (``--link probit``) or logistic (``--link logit``) distribution and one set of thresholds
(``--thresholds shared``) or one per judge (``--thresholds judge``); see docs/ordinal.md and Agresti, *Analysis of
Ordinal Categorical Data* (2010), ch. 10. Its components are on the latent scale (the residual is the link's unit:
1 or pi^2/3), so only the subcommands that read latent fits offer it: ``decompose`` (prints them, saying so),
``allocate`` (the optimiser simulates designs on the score scale) and ``report``. The closed forms of
``variance``, the joint fits of ``compare`` and the F tests of ``judges`` need score-scale components, and refuse
``--method ordinal`` in one sentence naming what to use instead (:func:`refuse_ordinal`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from cjstats.cli._app import METHODS, anova_options, bayes_kwargs
from cjstats.cli._ordinal_choice import ordinal_advice, refuse_ordinal
from cjstats.exceptions import CjstatsError

if TYPE_CHECKING:
    from cjstats.io.scores import Scores
    from cjstats.results.components import VarianceComponents

__all__ = ["ORDINAL_METHODS", "LINKS", "THRESHOLDS", "ordinal_options", "ordinal_kwargs", "fit_ordinal",
           "latent_note", "refuse_ordinal", "ordinal_advice"]

#: ``--method`` of the subcommands that read latent fits: the usual choices plus the ML ordinal backend.
ORDINAL_METHODS: tuple[str, ...] = (*METHODS, "ordinal")
LINKS: tuple[str, ...] = ("probit", "logit")
THRESHOLDS: tuple[str, ...] = ("shared", "judge")


def ordinal_options(f: Callable) -> Callable:
    """Add ``--link`` and ``--thresholds`` (``--method ordinal`` only; unset: probit, shared)."""
    f = click.option("--thresholds", type=click.Choice(list(THRESHOLDS)), default=None,
                     help="--method ordinal: one set of score thresholds for every judge (shared, the default) or "
                          "one per judge (judge: a judge that uses the scale differently; no judge_panel then).")(f)
    return click.option("--link", type=click.Choice(list(LINKS)), default=None,
                        help="--method ordinal: the cumulative link, probit (default; latent residual 1) or logit "
                             "(residual pi^2/3). Binary verdicts are the two-category case.")(f)


def ordinal_kwargs(method: str, link: str | None, thresholds: str | None) -> dict[str, str]:
    """The backend options from ``--link``/``--thresholds``, or one sentence when given without ``--method
    ordinal``."""
    given = [(name, value) for name, value in (("link", link), ("thresholds", thresholds)) if value is not None]
    if given and method != "ordinal":
        name, value = given[0]
        raise CjstatsError(f"The option --{name} applies to --method ordinal only (got --method {method}); add "
                           f"--method ordinal or leave --{name} {value} out.")
    return dict(given)


def fit_ordinal(scores: Scores, *, link: str | None, thresholds: str | None, incomplete: str | None = None,
                max_drop: float | None = None, ci_level: float | None = None, seed: int | None = None,
                draws: int | None = None, chains: int | None = None, tune: int | None = None,
                scenario_judge: str = "auto", model: str | None = None) -> VarianceComponents:
    """``cj.estimate(scores, method="ordinal", link=..., thresholds=...)`` with the CLI's refusals of the options
    that belong to other backends (``--incomplete``, ``--draws``, ``--scenario-judge on``)."""
    from cjstats.estimators import estimate

    anova_options("ordinal", incomplete, max_drop)       # --incomplete / --max-drop: one sentence
    bayes_kwargs(False, draws=draws, chains=chains, tune=tune)
    if scenario_judge == "on":
        raise CjstatsError("The option --scenario-judge on asks for the scenario x judge interaction, which --method "
                           "ordinal does not fit; leave it out (or use --method reml for the Gaussian fit with it).")
    if model is not None:
        if link is not None or thresholds is not None:
            raise CjstatsError("The options --formula and --link/--thresholds both describe the model; the formula "
                               "'ordered(score) ~ judge + (1|scenario)' takes the probit link, so give --link and "
                               "--thresholds without --formula.")
        return estimate(scores, "ordinal", ci_level=ci_level, seed=seed, model=model)
    return estimate(scores, "ordinal", ci_level=ci_level, seed=seed, **ordinal_kwargs("ordinal", link, thresholds))


def latent_note(link: str | None) -> str:
    """One line for the top of ``decompose``'s output: which scale each row is on (``link``: ``--link``)."""
    link = link or "probit"
    unit = "1" if link == "probit" else "pi^2/3"
    return (f"Latent scale: scenario, generation and judge_panel are variances of the cumulative-{link} model's "
            f"latent score (residual fixed at {unit} by the link), not score points; mu is on the score scale (for "
            f"0/1 verdicts, the pass rate). Score-scale decisions: cjstats allocate --method ordinal.")
