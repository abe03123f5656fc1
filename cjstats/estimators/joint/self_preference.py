r"""Judge self-preference: does a judge score its own model family higher than the other judges do?

``self_preference[l,p]`` (docs/estimands.md, "Several models"), for judge l and a model p of its family F(l), with O the models
outside the family and eta_pl the judge x model cell means of the joint fit:

    SP_lp = (eta_pl - mean_{l' != l} eta_pl') - mean_{q in O} (eta_ql - mean_{l' != l} eta_ql')

"how much more this judge scores its own model, relative to the other judges, than it scores the other
models, relative to the other judges". Its coefficients sum to zero over judges within every model and over
models within every judge, so mu_p, gamma_l, alpha_i, (alpha p)_pi and beta_pij all cancel: SP_lp is a
contrast of the judge x model interaction (gamma p) alone. On a complete balanced table its variance is
s2_eps/(nm) sum c^2 with sum c^2 = (1 + 1/|O|) K/(K - 1), on the residual df P(nm - 1)(K - 1) (ANOVA);
REML uses the GLS covariance of the cell means and the same containment df. Each row has a t interval and a
two-sided t test; ``p_adjusted`` is Holm over the rows.

The size of the whole interaction is the ``judge_model`` component (panel view: mean of (gamma p)^2 over the
P x K table, bias-corrected; population view: its random-effect variance), with its interval, and the test
of no interaction: F = MS_JM/MS_W (ANOVA) or the likelihood-ratio test of ``model * judge`` against
``model + judge`` with the same random effects, both fitted by ML (REML).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats._validate import resolve_ci_level
from cjstats.estimators.joint._joint import JointFit
from cjstats.estimators.intervals import adjust_p
from cjstats.estimators.joint.models import _t_ppf, _t_sf2, fit_joint
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io.scores import Scores
from cjstats.results.base import Result

__all__ = ["SelfPreference", "self_preference", "self_preference_contrast", "parse_families",
           "SELF_PREFERENCE_COLUMNS"]

SELF_PREFERENCE_COLUMNS = ("judge", "model", "estimate", "std_error", "df", "lower", "upper", "t", "p_value",
                           "p_adjusted", "ci_level", "method")


def parse_families(text: str | Sequence[str]) -> dict[str, list[str]]:
    """``"judge=model,judge2=model2"`` (repeat a judge to give it several models) -> ``{judge: [models]}``."""
    items = [text] if isinstance(text, str) else list(text)
    out: dict[str, list[str]] = {}
    for chunk in items:
        for part in str(chunk).split(","):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                raise CjstatsError(f"The 'families' entry {part!r} has no '='. Write judge=model, e.g. "
                                   f"gpt-4o=gpt-4o,gpt-4o=gpt-4o-mini.")
            j, m = (s.strip() for s in part.split("=", 1))
            out.setdefault(j, []).append(m)
    return out


def _normalise(families: Mapping[str, str | Sequence[str]], fit: Any) -> dict[str, list[str]]:
    """The families as {judge: [models]}, checked against the fit's judges and models. (A judge that never
    scored a model, its own or not, is refused before, by ``joint_stats``: no method can fit that table.)"""
    if not isinstance(families, Mapping) or not families:
        raise CjstatsError("The 'families' argument of self_preference must be a non-empty dict {judge: model or "
                           "[models]}. Got {families!r} instead.".replace("{families!r}", repr(families)))
    out = {}
    for judge, ms in families.items():
        ms = [ms] if isinstance(ms, str) else list(ms)
        if str(judge) not in fit.judges:
            raise CjstatsError(f"The 'families' argument names judge '{judge}', which is not in the data "
                               f"(judges: {', '.join(fit.judges)}).")
        for m in ms:
            if str(m) not in fit.models:
                raise CjstatsError(f"The 'families' argument maps judge '{judge}' to model '{m}', which is not in "
                                   f"the data (models: {', '.join(fit.models)}).")
        if len(set(map(str, ms))) >= len(fit.models):
            raise CjstatsError(f"The family of judge '{judge}' holds every model, so there is no other model to "
                               f"compare its own with. Leave at least one model out of the family.")
        out[str(judge)] = [str(m) for m in dict.fromkeys(ms)]
    return out


def self_preference_contrast(n_models: int, n_judges: int, judge: int, model: int,
                             others: Sequence[int]) -> np.ndarray:
    """The (P, K) coefficients of SP_lp (module docstring). Rows and columns each sum to zero."""
    k = n_judges
    c = np.zeros((n_models, k))
    row = np.full(k, -1.0 / (k - 1))
    row[judge] = 1.0
    c[model] = row
    for q in others:
        c[q] = -row / len(others)
    return c


@dataclass(frozen=True, slots=True)
class SelfPreference(Result):
    """Self-preference contrasts and the judge x model interaction.

    Attributes
    ----------
    contrasts : DataFrame
        One row per (judge, own model): ``judge, model, estimate, std_error, df, lower, upper, t, p_value,
        p_adjusted, ci_level, method``.
    interaction : DataFrame
        The ``judge_model`` rows of the joint components table (panel and population views).
    test : Mapping
        The test of no judge x model interaction: ``test`` ("F" or "LR"), ``statistic``, df, ``p_value``.
    families : Mapping
        The families used, ``{judge: [models]}``.
    """

    contrasts: pd.DataFrame
    interaction: pd.DataFrame
    test: Mapping[str, Any]
    families: Mapping[str, list[str]]
    fit: JointFit

    @property
    def dropped(self) -> pd.DataFrame | None:
        """What ``incomplete="drop"`` left out of the joint fit, per model (:attr:`JointFit.dropped`)."""
        return self.fit.dropped

    def to_frame(self) -> pd.DataFrame:
        """A copy of the self-preference contrasts table."""
        return self.contrasts.copy()

    def as_latex(self, *, digits: int = 3) -> str:
        """The self-preference contrasts as a booktabs LaTeX table (:func:`cjstats.results.tables.as_latex`)."""
        from cjstats.results.tables import as_latex

        return as_latex(self.contrasts, caption="Judge self-preference contrasts", digits=digits)

    def as_text(self) -> str:
        from cjstats.results.format import fixed, format_df, format_frame, format_p, value_decimals

        t = self.test
        if t:      # the package's formatting policy: integer df, p below the float floor as "< 1e-300"
            dfs = f"({format_df(t['df1'])}, {format_df(t['df2'])})" if "df2" in t else f"({format_df(t['df1'])})"
            stat = float(t["statistic"])
            test_line = (f"test of no interaction: {t['test']} = {fixed(stat, value_decimals([stat], sig=4))} on "
                         f"{dfs} df, p {'' if format_p(t['p_value']).startswith('<') else '= '}"
                         f"{format_p(t['p_value'])}")
        else:
            test_line = "no test of the interaction for this backend: read the judge_model interval"
        lines = [f"Judge self-preference ({self.fit.method})", "",
                 format_frame(self.contrasts.drop(columns=["ci_level", "method"]), na="-").to_string(index=False),
                 "", "Judge x model interaction (judge_model)",
                 format_frame(self.interaction[["view", "estimate", "lower", "upper", "ci_method"]], na="-")
                 .to_string(index=False),
                 test_line]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.as_text()


def self_preference(scores: Scores | pd.DataFrame, families: Mapping[str, str | Sequence[str]], *,
                    method: Literal["anova", "reml", "bayes"] = "anova", ci_level: float | None = None,
                    adjust: Literal["holm", "bonferroni", "none"] = "holm", fit: JointFit | None = None,
                    seed: int | None = 0, engine: str | None = None, engine_options: Mapping[str, Any] | None = None,
                    **options: Any) -> SelfPreference:
    """Self-preference of each judge for its own model family, and the judge x model interaction.

    Parameters
    ----------
    scores : Scores, DataFrame, ScoreStats or JointStats
        One score per (model, scenario, generation, judge); no criterion column. Or statistics, or with
        ``engine`` a file, folder or glob (see :func:`cjstats.fit_joint`).
    families : dict
        ``{judge: model}`` or ``{judge: [models]}``: the models of each judge's family. The other models
        (outside that judge's family) form the comparison group.
    method : {"anova", "reml", "bayes"}
        Joint fit (see :func:`cjstats.fit_joint`).
    ci_level, adjust
        Interval level; multiplicity adjustment of ``p_adjusted`` across the rows.
    fit : JointFit, optional
        Reuse a joint fit.
    engine, engine_options
        The engine that computes the joint statistics, and its options (see :func:`cjstats.fit_joint`).

    Examples
    --------
    >>> import cjstats as cj
    >>> s = cj.datasets.load("mentalalign", composite=True).subset(models=["gpt-4o", "qwen3-4b", "human-original"])
    >>> sp = cj.self_preference(s, {"gpt-4o": "gpt-4o"}, incomplete="drop")
    >>> list(sp.contrasts["judge"])
    ['gpt-4o']
    """
    level = resolve_ci_level(ci_level)
    if fit is None:
        from types import SimpleNamespace

        from cjstats.estimators.joint._joint import JointSource, joint_stats
        from cjstats.estimators.joint.models import joint_source

        source = joint_source(scores, engine, engine_options)
        js, rows = joint_stats(source, "self_preference")
        _normalise(families, SimpleNamespace(models=js.models, judges=js.judge_labels))
        source = js if rows is None else JointSource(js, rows)    # built once, rows kept for Bayes and drop
        fit = fit_joint(source, method, ci_level=level, seed=seed, **options)
    fam = _normalise(families, fit)
    p, k = fit.cell_means.shape
    everyone = [m for m in fit.models if all(m in fam.get(j, ()) for j in fit.judges)]
    if everyone:
        from cjstats._warnings import warn

        warn(f"Every judge of the panel belongs to the family of {', '.join(repr(m) for m in everyone)}: each "
             f"self-preference contrast compares a judge with other judges of the same family, who may prefer "
             f"{'that model' if len(everyone) == 1 else 'those models'} as well, so a contrast near 0 is no evidence "
             f"of fairness; add judges from outside the family to measure it.", CjstatsWarning, stacklevel=2)
    rows = []
    a = (1 - level) / 2
    for judge, own in fam.items():
        lj = fit.judges.index(judge)
        others = [q for q, m in enumerate(fit.models) if m not in own]
        for m in own:
            c = self_preference_contrast(p, k, lj, fit.models.index(m), others)
            r = fit.contrast(c, "panel")
            est, se, df = r.estimate, r.std_error, r.df
            tq = _t_ppf(1 - a, df)
            t = est / se if se > 0 else np.nan
            rows.append({"judge": judge, "model": m, "estimate": est, "std_error": se, "df": df,
                         "lower": est - tq * se, "upper": est + tq * se, "t": t,
                         "p_value": _t_sf2(t, df) if se > 0 else np.nan})
    out = pd.DataFrame(rows)
    out["p_adjusted"] = adjust_p(out["p_value"].to_numpy(), adjust)
    out["ci_level"] = level
    out["method"] = fit.method
    comp = fit.components
    inter = comp[comp["component"] == "judge_model"].reset_index(drop=True)
    return SelfPreference(contrasts=out[list(SELF_PREFERENCE_COLUMNS)], interaction=inter,
                          test=dict(fit.tests.get("judge_model", {})), families=fam, fit=fit)
