"""Everything the report shows, computed once: :func:`compute_inputs` calls the library's public functions (the
fits, the judge tables and tests, the strategies, the allocation, the comparisons, the human agreement, the
diagnosis) and returns them as one :class:`ReportInputs`. The sections (:mod:`cjstats.reporting.sections`) only
format what is in it; no section fits, tests or optimises anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError

__all__ = ["ReportInputs", "GroupChoice", "compute_inputs", "resolve_methods", "check_audit"]


@dataclass(frozen=True)
class GroupChoice:
    """The (model, criterion) group the strategy, allocation and posterior sections draw, and why that one.

    ``reason`` is ``"only"`` (the table's one group), ``"asked"`` (named with ``model=`` / ``criterion=``) or
    ``"top"`` (no group named: the one with the highest panel mean ``mu`` among ``n_candidates``, the table's
    groups or the named model's criteria; ties go to the first in sorted order) or ``"first"`` (no mean was
    estimated). ``n_groups`` counts the table's groups, ``keys`` says whether groups have criteria.
    """

    model: str
    criterion: str | None
    reason: str
    n_groups: int
    n_candidates: int
    keys: tuple[str, ...]
    mu: float = math.nan

    @property
    def label(self) -> str:
        return self.model + (f" / {self.criterion}" if self.criterion else "")


@dataclass
class ReportInputs:
    """The computed results one report renders (built by :func:`compute_inputs`; each field is a library result or
    a plain value derived from one). A section added later may read ``extra``, where a caller can put results of its
    own."""

    scores: Any
    level: float
    seed: int | None
    methods: list[str]
    auto_why: str
    fits: dict[str, Any]
    group: GroupChoice
    judge_table: Any = None
    heat_table: Any = None
    heat_averaged: bool = False
    judge_tests: pd.DataFrame | None = None
    scenario_judge_verdict: str | None = None
    subsample: pd.DataFrame | None = None
    subsample_reps: int = 0
    latent_strategies: pd.DataFrame | None = None
    latent_strategies_refused: str | None = None
    allocation: Any = None
    allocation_refused: str | None = None
    allocation_ses: tuple[float, float] | None = None
    comparisons: Any = None
    comparison_run: dict[str, Any] | None = None
    human_agreement: Any = None
    diagnosis: Any = None
    drift: Any = None
    sequences: Any = None
    covariates: Any = None
    gstudy: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def main(self) -> Any:
        """The first backend's fit: the one the judge test, strategies and allocation use."""
        return self.fits[self.methods[0]]

    @property
    def latent(self) -> bool:
        return getattr(self.main, "scale", "score") == "latent"

    @property
    def design(self) -> pd.DataFrame:
        return self.main.design

    @property
    def group_design(self) -> pd.DataFrame:
        """The design row of the drawn group."""
        d, g = self.design, self.group
        return d[(d["model"].astype(str) == g.model) & ((d["criterion"].astype(str) == g.criterion)
                                                         if g.criterion else True)]


# ------------------------------------------------------------------------------------------------ arguments
def resolve_methods(method: str | Sequence[str], scores: Any) -> tuple[list[str], str]:
    """The backends to fit, with ``"auto"`` replaced by what it stands for, and the reason when it was used."""
    from cjstats._validate import check_choice
    from cjstats.estimators import BACKENDS, auto_method

    methods = [method] if isinstance(method, str) else list(method)
    if not methods:
        raise CjstatsError("The 'method' argument of report is empty; give at least one of "
                           f"{', '.join(sorted([*BACKENDS, 'auto']))}.")
    methods = [check_choice("method", m, [*BACKENDS, "auto"], caller="report") for m in methods]
    why = ""
    if "auto" in methods:
        chosen, reason = auto_method(scores)
        methods = [chosen if m == "auto" else m for m in methods]
        why = f"{chosen}, chosen by method 'auto': {reason}"
    return list(dict.fromkeys(methods)), why


def _items(obj: Any) -> list[tuple[str | None, Any]]:
    return [(str(k), v) for k, v in obj.items()] if isinstance(obj, Mapping) else [(None, obj)]


def refuse(arg: str, obj: Any, want: str) -> CjstatsError:
    return CjstatsError(f"The '{arg}' argument of report takes {want} (or a mapping of labelled ones); got "
                        f"{type(obj).__name__}.")


def check_audit(*, diagnosis: Any = None, drift: Any = None, sequences: Any = None, covariates: Any = None,
                gstudy: Any = None) -> None:
    """Refuse an audit argument of the wrong type in one sentence, before anything is fitted."""
    if diagnosis is not None and not (isinstance(diagnosis, str) and diagnosis == "auto"):
        from cjstats.results.diagnosis import Diagnosis

        for _, d in _items(diagnosis):
            if not isinstance(d, Diagnosis):
                raise refuse("diagnosis", d, "a Diagnosis (cj.diagnose(path), what cjstats doctor prints)")
    if drift is not None:
        from cjstats.estimators.drift import DriftResult

        for _, r in _items(drift):
            if not isinstance(r, DriftResult):
                raise refuse("drift", r, "a DriftResult (cj.judge_drift(before, after))")
    if sequences is not None:
        from cjstats.results.sequential import SequenceResult, SequentialPlan

        for _, r in _items(sequences):
            if not isinstance(r, SequenceResult | SequentialPlan):
                raise refuse("sequences", r, "a SequenceResult (cj.confidence_sequence) or a SequentialPlan "
                             "(cj.sequential_plan)")
    if covariates is not None:
        from cjstats.estimators.joint.covariates import CovariateFit

        for _, f in _items(covariates):
            if not isinstance(f, CovariateFit):
                raise refuse("covariates", f, "a covariate fit (cj.fit_joint(scores, covariates=['length']))")
    if gstudy is not None:
        from cjstats.results.gstudy import GStudy

        for _, g in _items(gstudy):
            if not isinstance(g, GStudy):
                raise refuse("gstudy", g, "a G study (cj.g_study(fit, n=[...], strategy=[...]))")


def choose_group(fit: Any, model: str | None, criterion: str | None) -> GroupChoice:
    """The group the strategy and allocation sections draw: the one named, else the one with the highest panel
    mean ``mu`` of the first backend's fit (the leading model, whose score the benchmark most needs to pin down);
    ties go to the first in sorted order."""
    t = fit.components
    keys = ("model", "criterion") if "criterion" in t.columns else ("model",)
    n_groups = len(t[list(keys)].drop_duplicates())
    named = model is not None and (criterion is not None or len(keys) == 1)
    cand = t[t["component"] == "mu"]
    if model is not None:
        cand = cand[cand["model"].astype(str) == str(model)]
    if criterion is not None and len(keys) > 1:
        cand = cand[cand["criterion"].astype(str) == str(criterion)]
    mu = pd.to_numeric(cand["estimate"], errors="coerce").to_numpy(dtype=float)
    value = math.nan
    if n_groups > 1 and not named and np.isfinite(mu).any():
        best = cand.iloc[int(np.nanargmax(mu))]          # the components are sorted by model (criterion): ties
        model = str(best["model"])                       # go to the first in that order
        criterion = str(best["criterion"]) if len(keys) > 1 else criterion
        value = float(np.nanmax(mu))
    else:                                                # the one group, the group asked for, or an unknown name
        if model is None:                                # (resolve_group says which names there are)
            model = str(t["model"].iloc[0])
        sel = t["model"].astype(str) == str(model)
        if criterion is None and len(keys) > 1 and sel.any():
            criterion = str(t.loc[sel, "criterion"].iloc[0])
    resolved_model, resolved_crit = fit.resolve_group(model, criterion)
    reason = "only" if n_groups == 1 else "asked" if named else "top" if value == value else "first"
    return GroupChoice(model=resolved_model, criterion=resolved_crit, reason=reason, n_groups=n_groups,
                       n_candidates=len(cand), keys=keys, mu=value)


def allocation_ses(alloc: Any) -> tuple[float, float] | None:
    """(SE including scenario sampling, SE on the table's scenarios) of the recommended design, both from
    :func:`cjstats.decisions.formulas.design_variance` with the allocation's components (the first is what the
    optimiser ranked; the second leaves out sigma2_alpha/n, as the strategy curves do). None for a weighted design,
    or for a latent-scale fit (its components are not score-scale variances: the optimiser simulated instead)."""
    from cjstats.decisions.formulas import design_variance

    r, c = alloc.recommendation, alloc.components
    if str(r["strategy"]) not in ("all", "random", "cyclic") or not {"scenario", "generation", "residual",
                                                                      "judge_panel"} <= set(c):
        return None
    if getattr(alloc, "scale", "score") == "latent" or any(
            not math.isfinite(float(c[k])) for k in ("scenario", "generation", "residual", "judge_panel")):
        return None
    kw = dict(n=int(r["n"]), m=int(r["m"]), k=int(r["judges_per_generation"]), k_total=int(alloc.k_total),
              assignment="random" if r["strategy"] == "random" else "cyclic")
    rest = (c["generation"], c["residual"], c["judge_panel"])
    return (math.sqrt(design_variance(c["scenario"], *rest, **kw)), math.sqrt(design_variance(0.0, *rest, **kw)))


def latent_strategies(fit: Any, model: str, criterion: str | None, n: int, seed: int | None) -> pd.DataFrame:
    """Strategies A, B, C of a latent-scale (ordinal) fit: the SE of the benchmark mean on the score scale by
    simulation from the fitted model (:func:`cjstats.decisions.predictive.predictive_design_variance`), n = the
    table's scenarios, one generation, k judges per scenario for k = 1..K (A: all K)."""
    from cjstats.decisions.predictive import predictive_design_variance

    k_total = int(fit.judge_offsets["judge"].nunique())
    designs = [{"strategy": "all", "n": n, "m": 1}]
    designs += [{"strategy": st, "n": n, "m": 1, "judges_per_generation": k}
                for k in range(1, k_total) for st in ("random", "cyclic")]
    t = predictive_design_variance(fit, model=model, criterion=criterion, designs=designs, n_sims=200, n_draws=50,
                                   seed=0 if seed is None else seed)
    return t[["strategy", "judges_per_generation", "n", "m", "calls", "se", "variance", "mc_se", "p_best"]]


def auto_comparison(scores: Any, level: float, seed: int | None) -> tuple[Any, dict[str, Any] | None]:
    """compare_models on the table when it has two or more models, with how it was run (or why it could not)."""
    from cjstats.estimators import auto_method
    from cjstats.estimators.joint import compare_models

    if len(scores.models) < 2:
        return None, None
    table = scores.composite() if scores.has_criterion else scores
    method, why = auto_method(table, joint=True, discrete=True)   # as cjstats compare: ordinal for verdicts
    where = "the composite of the criteria" if scores.has_criterion else "the scores"
    try:
        result = compare_models(table, method=method, ci_level=level, seed=seed)
    except CjstatsError as exc:
        return None, {"method": method, "why": why, "where": where, "error": str(exc)}
    return result, {"method": method, "why": why, "where": where, "error": None}


# ---------------------------------------------------------------------------------------------- computing
def compute_inputs(scores: Any, *, methods: list[str], auto_why: str, level: float, seed: int | None,
                   model: str | None = None, criterion: str | None = None, budget: float | None = None,
                   comparisons: Any = "auto", human_agreement: Any = "auto", subsample_reps: int = 1000,
                   backend_options: Mapping[str, Mapping[str, Any]] | None = None, diagnosis: Any = None,
                   drift: Any = None, sequences: Any = None, covariates: Any = None,
                   gstudy: Any = None) -> ReportInputs:
    """Every result the report renders, computed once by the library's public functions (arguments already
    checked by :func:`cjstats.reporting.report`)."""
    from cjstats.decisions.optimise import optimise, scenario_judge_verdict
    from cjstats.estimators import auto_method, estimate
    from cjstats.estimators.judges import judge_f_test, judge_table, judge_test

    if isinstance(diagnosis, str) and diagnosis == "auto":
        from cjstats.results.diagnosis import diagnose

        diagnosis = diagnose(scores)
    extra = dict(backend_options or {})
    fits = {m: estimate(scores, m, ci_level=level, seed=seed, **dict(extra.get(m, {}))) for m in methods}
    main = fits[methods[0]]
    group = choose_group(main, model, criterion)
    inputs = ReportInputs(scores=scores, level=level, seed=seed, methods=methods, auto_why=auto_why, fits=fits,
                          group=group, subsample_reps=subsample_reps, diagnosis=diagnosis, drift=drift,
                          sequences=sequences, covariates=covariates, gstudy=gstudy)
    if main.scenario_judge_lines():
        inputs.scenario_judge_verdict = scenario_judge_verdict(main, model=group.model, criterion=group.criterion)

    # judges and their tests
    heat = scores.composite() if scores.has_criterion and len(scores.criteria) > 1 else scores
    inputs.heat_averaged = heat is not scores
    inputs.heat_table = judge_table(heat)                # what the judge-bias heatmap draws
    inputs.judge_table = judge_table(scores, ci_level=level)
    if main.method in ("anova", "reml"):
        inputs.judge_tests = judge_test(main)
    else:   # a sampling backend has no F test: the one method 'auto' picks, which keeps every call
        inputs.judge_tests = judge_f_test(scores, method=auto_method(scores)[0])

    # strategies
    d = main.design
    grow = inputs.group_design
    gens = grow["generations"].iloc[0] if "generations" in grow.columns and len(grow) else float("nan")
    if (bool(d["complete"].all()) and isinstance(gens, int | float | np.integer | np.floating) and gens == gens
            and gens >= 2):
        from cjstats.decisions.subsample import subsample_strategies

        inputs.subsample = subsample_strategies(scores, model=group.model, criterion=group.criterion,
                                                reps=subsample_reps, seed=seed)
    if inputs.latent:       # no closed form on the score scale: the strategies simulated from the latent model
        try:
            inputs.latent_strategies = latent_strategies(main, group.model, group.criterion,
                                                         int(grow["n_scenarios"].iloc[0]), seed)
        except CjstatsError as exc:
            inputs.latent_strategies_refused = str(exc)

    # allocation
    try:
        inputs.allocation = optimise(main, budget=budget if budget is not None else float(grow["n_rows"].iloc[0]),
                                     model=group.model, criterion=group.criterion, seed=seed)
    except CjstatsError as exc:
        if not inputs.latent:
            raise
        inputs.allocation_refused = str(exc)
    if inputs.allocation is not None:
        inputs.allocation_ses = allocation_ses(inputs.allocation)

    # optional results
    if isinstance(comparisons, str) and comparisons == "auto":
        comparisons, inputs.comparison_run = auto_comparison(scores, level, seed)
    inputs.comparisons = comparisons
    if isinstance(human_agreement, str) and human_agreement == "auto":
        human_agreement = None
        if scores.has_reference:
            from cjstats.estimators.humans import judge_agreement

            human_agreement = judge_agreement(scores, ci_level=level)
    inputs.human_agreement = human_agreement
    return inputs
