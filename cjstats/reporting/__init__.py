"""A self-contained HTML report of a score table: design, components, judges, strategies, allocation.

:func:`report` fits the backends asked for, draws the figures of :mod:`cjstats.plots`, and renders one HTML file
with the Jinja2 template ``templates/report.html.j2`` shipped with the package: figures are embedded as base64
PNG, the style is inline, and nothing is loaded from elsewhere, so the file opens offline and can be mailed.
This module renders results; every number comes from the library's result objects.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.reporting.blocks import _figure, _heading, _text, format_table
from cjstats.reporting.writing import atomic_write, default_mode  # noqa: F401  (default_mode: re-exported)

__all__ = ["report", "write_html", "format_table", "SECTION_TITLES"]

#: The report's sections, in order (``comparisons`` and ``human_agreement`` appear only when given).
SECTION_TITLES: dict[str, str] = {
    "design": "Design summary",
    "components": "Variance components",
    "judges": "Judge tables and judge-bias heatmap",
    "f_tests": "F tests of the judge effect",
    "strategies": "Strategy curves",
    "allocation": "Allocation recommendation and frontier",
    "comparisons": "Model comparisons",
    "human_agreement": "Human agreement",
    "diagnosis": "What the file holds (doctor)",
    "drift": "Judge drift",
    "sequences": "Sequential comparisons",
    "covariates": "Judge slopes on covariates",
}

# ------------------------------------------------------------------------------------------------ sections
def _components_table(fit: Any) -> pd.DataFrame:
    """Components with standard deviations beside variances (:func:`cjstats.results.tables.long`), notes as markers."""
    from cjstats.results.tables import long

    t = fit.components
    out = long(fit).drop(columns=["method", "ci_level", "identifiable"])
    out["ci_method"] = t["ci_method"].to_numpy()
    notes = list(dict.fromkeys(n for n in t["note"] if n))
    if notes:                                   # no column of empty markers when nothing has a note
        out["note"] = [f"[{notes.index(n) + 1}]" if n else "" for n in t["note"]]
    return out


def _component_notes(fit: Any) -> list[dict[str, Any]]:
    notes = list(dict.fromkeys(n for n in fit.components["note"] if n))
    return [_text(f"[{i}] {n}") for i, n in enumerate(notes, 1)]


def _scenario_judge_items(fit: Any, model: str, criterion: str | None, group: str) -> list[dict[str, Any]]:
    """The scenario x judge interaction where it was fitted: each group's estimate, interval and test, and whether
    it changes the recommended design of the group the report draws (:func:`cjstats.decisions.optimise.scenario_judge_verdict`)."""
    lines = fit.scenario_judge_lines()
    if not lines:
        return []
    from cjstats.decisions.optimise import scenario_judge_verdict

    items = [_heading("Judges who disagree about scenarios (scenario x judge interaction)"),
             _text("A judge scored several generations of a scenario, so its own deviation on each scenario "
                   "(scenario_judge) is separated from the within-cell residual.")]
    items.extend(_text(line + ".") for line in lines)
    verdict = scenario_judge_verdict(fit, model=model, criterion=criterion)
    if verdict:
        items.append(_text(f"For {group}: {verdict}."))
    return items


def _frames_of(obj: Any) -> list[tuple[str, pd.DataFrame]]:
    """The tidy frames a result object carries (a DataFrame itself, its DataFrame attributes, or to_frame())."""
    if isinstance(obj, pd.DataFrame):
        return [("table", obj)]
    frames: list[tuple[str, pd.DataFrame]] = []
    names = ([f.name for f in dataclasses.fields(obj)] if dataclasses.is_dataclass(obj)
             else [n for n in vars(obj)] if hasattr(obj, "__dict__") else [])
    for n in names:
        v = getattr(obj, n, None)
        if isinstance(v, pd.DataFrame) and not n.startswith("_"):
            frames.append((n, v))
    if not frames and callable(getattr(obj, "to_frame", None)):
        frames.append(("table", obj.to_frame()))
    return frames


def _generic_section(obj: Any, what: str) -> list[dict[str, Any]]:
    objs = obj.items() if isinstance(obj, Mapping) else [(None, obj)]
    items: list[dict[str, Any]] = []
    for label, o in objs:
        frames = _frames_of(o)
        if not frames:
            raise CjstatsError(f"The '{what}' argument of report must be a DataFrame or a result with DataFrame "
                               f"attributes; got {type(o).__name__}.")
        if label is not None:
            items.append(_heading(str(label)))
        shown = [(name, frame) for name, frame in frames if not frame.empty]
        for name, frame in shown:
            items.append(format_table(frame, caption=name))
        for name, _ in frames:
            if name in _EMPTY_REASONS and all(n != name for n, _ in shown):
                items.append({"kind": "note", "text": _EMPTY_REASONS[name]})
        if not shown:
            items.append({"kind": "note", "text": f"The {what.replace('_', ' ')} result has no rows to show."})
    return items


#: Why a known table of a result can be empty (an empty table is left out; these say what is missing and why).
_EMPTY_REASONS = {"humans": "No human ceiling: it needs items rated by two or more reference raters, and no item "
                            "of this table has two human ratings."}


def _group_of(fit: Any, model: str | None, criterion: str | None) -> tuple[str, str | None]:
    t = fit.components
    if model is None:
        model = str(t["model"].iloc[0])
    sel = t["model"].astype(str) == str(model)
    if criterion is None and "criterion" in t.columns and sel.any():
        criterion = str(t.loc[sel, "criterion"].iloc[0])
    return fit.resolve_group(model, criterion)


def _which_group(fit: Any, group: str, model: str | None, criterion: str | None) -> str:
    """The sentence that says which group the strategy and allocation sections draw, and how to pick another."""
    t = fit.components
    keys = ["model", "criterion"] if "criterion" in t.columns else ["model"]
    n = len(t[keys].drop_duplicates())
    if n == 1:
        return f"Drawn for {group}, the only model{' / criterion' if len(keys) > 1 else ''} of the table."
    if model is not None and (criterion is not None or len(keys) == 1):
        return f"Drawn for {group}, as asked (model= / --model)."
    how = ("model= and criterion= (cjstats report --model NAME --criterion NAME)" if len(keys) > 1 else
           "model= (cjstats report --model NAME)")
    return (f"Drawn for {group}, the first of the table's {n} model{'/criterion groups' if len(keys) > 1 else 's'} "
            f"in sorted order, not a choice of the data; name another with {how}.")


def _se_text(se: float) -> str:
    """A standard error in a sentence: three significant digits, fixed notation."""
    from cjstats.results.format import fixed, value_decimals

    return fixed(se, value_decimals([se], sig=3))


def _two_ses(alloc: Any) -> tuple[float, float] | None:
    """(SE including scenario sampling, SE on the table's scenarios) of the recommended design, both from
    :func:`cjstats.decisions.formulas.design_variance` with the allocation's components (the first is what the optimiser
    ranked; the second leaves out sigma2_alpha/n, as the strategy curves do). None for a weighted design, or for
    a latent-scale fit (its components are not score-scale variances: the optimiser simulated instead)."""
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


def _resolve_methods(method: str | Sequence[str], scores: Any) -> tuple[list[str], str]:
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


#: The file types report writes, by extension.
OUTPUT_SUFFIXES = (".html", ".htm", ".pdf")


def check_output(output: str | os.PathLike[str], force: bool) -> Path:
    path = Path(output)
    if path.suffix.lower() not in OUTPUT_SUFFIXES:
        got = f"the extension '{path.suffix}'" if path.suffix else "no extension"
        raise CjstatsError(f"The output `{path}` has {got}, which report cannot write; name it "
                           f"`{path.with_suffix('.html').name}` (HTML) or `{path.with_suffix('.pdf').name}` (PDF).")
    if not path.parent.is_dir():
        raise CjstatsError(f"The folder `{path.parent}` of the output `{path}` does not exist; create it first or "
                           "choose another path.")
    if path.is_dir():
        raise CjstatsError(f"The output `{path}` is a folder; give a file name such as `{path / 'report.html'}`.")
    if path.exists() and not force:
        raise CjstatsError(f"The output `{path}` already exists; pass force=True (--force) to overwrite it.")
    return path


def write_html(text: str, output: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write ``text`` to ``output`` atomically: a temporary file in the same folder, then a rename.

    Nothing is half-written: a missing folder or an existing file (without ``force``) is refused before
    anything is written, and a failure while writing leaves no file behind.
    """
    path = check_output(output, force)
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _auto_comparison(scores: Any, level: float, seed: int | None) -> tuple[Any, list[str]]:
    """compare_models on the table when it has two or more models; the reason in words when it cannot run."""
    from cjstats.estimators.joint import compare_models
    from cjstats.estimators import auto_method

    if len(scores.models) < 2:
        return None, []
    table = scores.composite() if scores.has_criterion else scores
    method, why = auto_method(table, joint=True)
    where = "the composite of the criteria" if scores.has_criterion else "the scores"
    try:
        result = compare_models(table, method=method, ci_level=level, seed=seed)
    except CjstatsError as exc:
        return None, [f"The models could not be compared on {where}: {exc}"]
    return result, [f"Joint fit of every model ({method}) on {where}: paired differences (the models share "
                    f"scenarios and judges) and simultaneous rank intervals; method 'auto' chose {method}: {why}.",
                    *result.fit_notes()]


def _latent_strategies(fit: Any, model: str, criterion: str | None, group: str, n: int,
                       seed: int | None) -> dict[str, Any]:
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
    t = t[["strategy", "judges_per_generation", "n", "m", "calls", "se", "variance", "mc_se", "p_best"]]
    return format_table(t, caption=f"{group}: SE of the mean score (score scale, scenario sampling included) by "
                        "strategy and judges per scenario, simulated from the latent model (the closed forms of "
                        "Eqs. 3-5 hold for the linear model only)", se_column="mc_se", value_columns=("variance",))


def _audit_sections(scores: Any, **given: Any) -> list[dict[str, Any]]:
    """The sections of the audit results given to report (:mod:`cjstats.reporting.sections`), in report order."""
    from cjstats.reporting.sections import AUDIT_SECTIONS, audit_section

    if isinstance(given.get("diagnosis"), str) and given["diagnosis"] == "auto":
        from cjstats.results.diagnosis import diagnose

        given["diagnosis"] = diagnose(scores)
    return [audit_section(k, given[k]) for k in AUDIT_SECTIONS if given.get(k) is not None]


def report(scores: Any, *, output: str | os.PathLike[str] | None = None, method: str | Sequence[str] = "auto",
           budget: float | None = None, model: str | None = None, criterion: str | None = None,
           comparisons: Any = "auto", human_agreement: Any = "auto", ci_level: float | None = None,
           seed: int | None = 0, title: str | None = None, force: bool = False,
           subsample_reps: int = 1000, browser: str | None = None,
           backend_options: Mapping[str, Mapping[str, Any]] | None = None, diagnosis: Any = None,
           drift: Any = None, sequences: Any = None, covariates: Any = None) -> str:
    """Render a self-contained HTML report of a score table (and write it when ``output`` is given).

    Sections: design summary; the components of every backend asked for, with intervals and standard
    deviations beside variances, and a forest plot; the judge tables (paper Table 1), judge offsets and the
    judge-bias heatmap (paper Fig. 2); the judge F tests (App. G); strategy curves (paper Fig. 1, exact
    Eqs. 3-5, with the App. F subsampling experiment when the table has several generations per scenario);
    the allocation recommendation (:func:`cjstats.optimise`) and its frontier; for a Bayesian fit, posterior
    densities; and, when given, model comparisons and human agreement (their tidy frames, rendered generically).

    Parameters
    ----------
    scores : Scores
        A validated score table (:func:`cjstats.read_scores`, :func:`cjstats.datasets.load`).
    output : path, optional
        Write the HTML here (atomically; the folder must exist; an existing file needs ``force=True``). A path
        ending in ``.pdf`` writes the report as PDF instead, printed by headless Chromium (A4 landscape;
        :mod:`cjstats.reporting.pdf`); the HTML is still returned. Other extensions than ``.html``, ``.htm`` and
        ``.pdf`` are refused before anything is fitted.
    browser : str, optional
        For a PDF: the Chromium or Chrome executable (default: the first of ``chromium``, ``chromium-browser``,
        ``google-chrome`` on PATH).
    method : str or sequence of str
        Backends to fit (``anova``, ``reml``, ``bayes``); the first drives the judge test, strategy and
        allocation sections. ``"auto"`` (default) stands for ``anova`` when every group is complete and balanced
        and ``reml`` otherwise (:func:`cjstats.estimators.auto_method`); the design section says which and why.
    budget : float, optional
        Judge-call budget for the allocation (default: the calls in the data for the chosen model).
    model, criterion : str, optional
        The group drawn in the strategy, allocation and posterior sections (default: the first in sorted order;
        both sections say which group they draw and how to choose another). The strategy curves give the SE of
        the mean on the table's scenarios, the allocation the SE including scenario sampling (sigma2_alpha/n);
        the allocation callout gives both for the recommended design.
    comparisons, human_agreement : result object, DataFrame, mapping of them, "auto" or None
        Rendered as tables (every DataFrame attribute); a comparison with ``.ranks`` also gets a rank plot.
        ``"auto"`` (default): with two or more models, :func:`cjstats.compare_models` on the table (on the
        composite of the criteria when there are several; anova when complete and balanced, else reml); with
        reference (human) raters in the table, :func:`cjstats.judge_agreement`. A comparison the data cannot
        support is reported in its section with the reason. ``None`` leaves the section out.
    ci_level : float, optional
        Interval level (default 0.95).
    seed : int, optional
        Seed of the backends and the subsampling experiment.
    subsample_reps : int
        Repetitions per (strategy, budget) of the subsampling experiment.
    backend_options : mapping, optional
        Options of a backend's fit, by method, e.g. ``{"bayes": {"draws": 500, "tune": 500}}``.
    diagnosis, drift, sequences, covariates : result, mapping of labelled results, or None
        The audit sections (:mod:`cjstats.reporting.sections`), each with its figure, table and one paragraph
        saying what it means: a :class:`~cjstats.results.diagnosis.Diagnosis` (``diagnosis="auto"``:
        :func:`cjstats.diagnose` of ``scores``), a :class:`~cjstats.estimators.drift.DriftResult`
        (:func:`cjstats.judge_drift`), and :class:`~cjstats.results.sequential.SequenceResult` /
        :class:`~cjstats.results.sequential.SequentialPlan` (:func:`cjstats.confidence_sequence`,
        :func:`cjstats.sequential_plan`), and a covariate fit (``cj.fit_joint(scores, covariates=["length"])``:
        each judge's slope and the model means at the mean covariate). None (default) leaves a section out.

    Returns
    -------
    str
        The HTML text.

    Examples
    --------
    >>> import cjstats as cj
    >>> html = cj.report(cj.datasets.load("hanna", composite=True))      # doctest: +SKIP
    >>> cj.report(scores, output="report.html", method=["anova", "reml"])  # doctest: +SKIP
    """
    from cjstats._validate import require_packages

    require_packages("report", "jinja2", "matplotlib", extra="report")
    import jinja2

    from cjstats import __version__, plots
    from cjstats._validate import resolve_ci_level
    from cjstats.decisions.optimise import optimise
    from cjstats.estimators import auto_method, estimate
    from cjstats.estimators.judges import judge_f_test, judge_table, judge_test
    from cjstats.io.scores import Scores

    if not isinstance(scores, Scores):
        raise CjstatsError(f"report takes a Scores table (cj.read_scores(path) or cj.datasets.load(name)); got "
                           f"{type(scores).__name__}.")
    methods, auto_why = _resolve_methods(method, scores)
    level = resolve_ci_level(ci_level)
    audit = _audit_sections(scores, diagnosis=diagnosis, drift=drift, sequences=sequences,   # bad input: before fitting
                            covariates=covariates)
    if output is not None:
        check_output(output, force)                 # refuse before the (slow) fitting starts
        if _is_pdf(output):
            from cjstats.reporting.pdf import require_browser

            require_browser(browser)                 # no Chromium: say so before fitting
    extra = dict(backend_options or {})
    fits = {m: estimate(scores, m, ci_level=level, seed=seed, **dict(extra.get(m, {}))) for m in methods}
    main = fits[methods[0]]
    gmodel, gcrit = _group_of(main, model, criterion)
    group = gmodel + (f" / {gcrit}" if gcrit else "")
    which = _which_group(main, group, model, criterion)
    sections = []

    # design --------------------------------------------------------------------------------------------
    d = main.design
    sections.append({"id": "design", "title": SECTION_TITLES["design"], "intro": [
        f"{scores.design['n_rows'].sum():,} scores: {len(d)} model/criterion groups, up to "
        f"{int(d['n_scenarios'].max())} scenarios and {int(d['n_judges'].max())} judges "
        f"({', '.join(map(str, scores.judges))}). Complete and balanced: "
        f"{'yes' if bool(d['balanced'].all()) else 'no'}."] + ([f"Backend: {auto_why}."] if auto_why else []),
        "items": [format_table(d.drop(columns=["judges"], errors="ignore"), caption="design")]})

    # components ----------------------------------------------------------------------------------------
    items: list[dict[str, Any]] = []
    for m, fit in fits.items():
        items.append(_heading(f"Backend {m}"))
        items.append(format_table(_components_table(fit), caption=f"{m}: estimate, sd = sqrt(variance), "
                                  f"{100 * level:g}% interval", se_column="std_error",
                                  value_columns=("estimate", "std_error", "lower", "upper", "sd", "sd_lower",
                                                 "sd_upper")))
        items.extend(_component_notes(fit))
    items.extend(_scenario_judge_items(main, gmodel, gcrit, group))
    items.append(_figure(plots.components_forest(fits), "Every component with its interval, backends side by side "
                         "(hollow: at the boundary, reported as 0).", "forest plot of variance components"))
    if "bayes" in fits:
        items.append(_figure(plots.posterior(fits["bayes"], model=gmodel, criterion=gcrit),
                             f"Posterior densities of the Bayesian components of {group}.", "posterior densities"))
    latent = getattr(main, "scale", "score") == "latent"
    if main.method == "ordinal":
        items.append(_figure(plots.ordinal_plot(main, model=gmodel, criterion=gcrit), f"Each judge's category "
                             f"boundaries on the latent scale and its offset, {group}: a judge whose boundaries sit "
                             "apart from the others uses the score scale differently.", "ordinal fit"))
    scale_text = ("Variances on the latent scale of the cumulative-link model (the residual is fixed by the link: "
                  "1 for probit, pi^2/3 for logit); mu is the panel's expected score in score points."
                  if latent else "Variances in score points squared, sd and mu in score points.")
    sections.append({"id": "components", "title": SECTION_TITLES["components"], "intro": [
        "mu is the panel-mean score; scenario, generation, residual are variances; judge_panel is the paper's "
        "sigma2_gamma of this panel (judges fixed); judge_population treats judges as drawn from a population. "
        + scale_text], "items": items})

    # judges --------------------------------------------------------------------------------------------
    heat_scores = scores.composite() if scores.has_criterion and len(scores.criteria) > 1 else scores
    jt = judge_table(scores, ci_level=level)
    off = main.judge_offsets
    items = [format_table(jt.wide().reset_index(), caption="mean ± half-width under each single judge; (1) marks "
                          "the judge's top model; panel averages all judges"),
             format_table(jt.rankings().reset_index(), caption="rank under each single judge (1 = highest)"),
             format_table(off.drop(columns=["method"]), caption=f"judge offsets gamma[l] ({methods[0]})",
                          se_column="std_error", value_columns=("estimate", "std_error", "lower", "upper")),
             _figure(plots.judge_bias_heatmap(heat_scores), "Each model's mean under each judge minus its panel mean"
                     + (" (criteria averaged)" if heat_scores is not scores else "") + "; red: the judge scores "
                     "the model higher than the panel does.", "judge bias heatmap")]
    sections.append({"id": "judges", "title": SECTION_TITLES["judges"], "intro": [],
                     "callout": "The top model changes across single judges." if jt.top_model_changes else
                     "Every single judge puts the same model first.", "items": items})

    # F tests -------------------------------------------------------------------------------------------
    complete = bool(d["complete"].all())
    if main.method in ("anova", "reml"):
        ft = judge_test(main)
    else:   # a sampling backend has no F test: the one method 'auto' picks, which keeps every call
        ft = judge_f_test(scores, method=auto_method(scores)[0])
    how = {"anova": "F = MS_J / MS_W with (K - 1, (n m - 1)(K - 1)) degrees of freedom (paper App. G)",
           "reml": "Wald F of the judge offsets from the REML fit, which keeps every call, with Satterthwaite "
                   "denominator degrees of freedom (lmerTest); on a balanced table it is the F of paper App. G"}
    sections.append({"id": "f_tests", "title": SECTION_TITLES["f_tests"],
                     "intro": [how[m] + "." for m in dict.fromkeys(ft["method"])],
                     "items": [format_table(ft, caption="judge main effect")]})

    # strategies ----------------------------------------------------------------------------------------
    items = []
    sub = None
    grow = d[(d["model"].astype(str) == gmodel) & ((d["criterion"].astype(str) == gcrit) if gcrit else True)]
    gens = grow["generations"].iloc[0] if "generations" in grow.columns and len(grow) else float("nan")
    if complete and isinstance(gens, int | float | np.integer | np.floating) and gens == gens and gens >= 2:
        from cjstats.decisions.subsample import subsample_strategies

        sub = subsample_strategies(scores, model=gmodel, criterion=gcrit, reps=subsample_reps, seed=seed)
        items.append(format_table(sub, caption=f"subsampling experiment, {group}, {subsample_reps} repetitions"))
    refused: list[str] = []   # a latent fit with unidentified parameters cannot be simulated: say so, keep the rest
    if latent:        # no closed form on the score scale: the strategies simulated from the latent model
        try:
            items.insert(0, _latent_strategies(main, gmodel, gcrit, group, int(grow["n_scenarios"].iloc[0]), seed))
        except CjstatsError as exc:
            refused.append(f"Not simulated: {exc}")
    else:
        items.insert(0, _figure(plots.strategy_curves(main, model=gmodel, criterion=gcrit),
                                f"SE of the mean of {group} on the table's scenarios (scenario set fixed) against "
                                "judge calls per scenario, from the fitted components (Eqs. 3-5, new generations "
                                "from the fitted population).",
                                "strategy curves"))
    if sub is not None:
        items.insert(1, _figure(plots.strategy_curves(sub), "The subsampling experiment of App. F on this table's "
                                "own generations (points, +-2 Monte Carlo SE) and its exact predictions for this "
                                "finite pool (lines).", "subsampling experiment"))
    abc = ("A: every judge scores each generation; B: one random judge per generation; C: CyclicJudge, judges "
           "in one rotation across scenarios.")
    how = (" The fit is on the latent scale of a cumulative-link model, where Eqs. 3-5 do not give the score "
           "scale's variance: the table simulates new studies of the table's size from the fitted model (scenario "
           "sampling included, as in the allocation section)." if latent else
           " The curves hold the table's scenarios fixed (paper Fig. 1): the y axis is the SE of the mean on these "
           "scenarios, without the scenario term sigma2_alpha/n; the allocation section below adds that term, "
           "because there the number of scenarios is a design choice.")
    sections.append({"id": "strategies", "title": SECTION_TITLES["strategies"], "intro": [which, abc + how, *refused],
                     "items": items})

    # allocation ----------------------------------------------------------------------------------------
    try:
        alloc = optimise(main, budget=budget if budget is not None else float(grow["n_rows"].iloc[0]),
                         model=gmodel, criterion=gcrit, seed=seed)
    except CjstatsError as exc:
        if not latent:
            raise
        alloc = None
        sections.append({"id": "allocation", "title": SECTION_TITLES["allocation"],
                         "intro": [which, f"No allocation: {exc}"], "items": []})
    if alloc is not None:
        r = alloc.recommendation
        both = _two_ses(alloc)
        items = [format_table(alloc.strategies, caption="best design per strategy (se: SE including scenario "
                              "sampling)"),
                 _figure(plots.allocation_frontier(alloc), "Predicted SE including scenario sampling (sigma2_alpha/n) "
                         "against cost; star: recommendation.", "allocation frontier")]
        sections.append({"id": "allocation", "title": SECTION_TITLES["allocation"], "intro": [which, *alloc.notes],
                         "callout": f"Recommended for {group} at budget {alloc.budget:g} {alloc.budget_unit}: "
                         f"{r['strategy']}, {r['judges_per_generation']} judge(s) per generation, n = {r['n']} "
                         f"scenarios x m = {r['m']} generations ({r['calls']} calls); predicted SE including scenario "
                         f"sampling {_se_text(r['se'])}"
                         + (f" (SE on these scenarios, the strategy curves' quantity: {_se_text(both[1])})"
                            if both else "") + f"; P(best) = {r['p_best']:.2f}.", "items": items})

    # optional ------------------------------------------------------------------------------------------
    comparison_intro: list[str] = []
    if isinstance(comparisons, str) and comparisons == "auto":
        comparisons, comparison_intro = _auto_comparison(scores, level, seed)
    if isinstance(human_agreement, str) and human_agreement == "auto":
        human_agreement = None
        if scores.has_reference:
            from cjstats.estimators.humans import judge_agreement

            human_agreement = judge_agreement(scores, ci_level=level)
    if comparisons is not None or comparison_intro:
        items = _generic_section(comparisons, "comparisons") if comparisons is not None else []
        for c in ([] if comparisons is None else comparisons.values() if isinstance(comparisons, Mapping)
                  else [comparisons]):
            if isinstance(getattr(c, "ranks", None), pd.DataFrame):
                items.append(_figure(plots.rank_plot(c), "Rank of each model with its interval.", "rank plot"))
        sections.append({"id": "comparisons", "title": SECTION_TITLES["comparisons"], "intro": comparison_intro,
                         "items": items})
    if human_agreement is not None:
        items = _generic_section(human_agreement, "human_agreement")
        for a in (human_agreement.values() if isinstance(human_agreement, Mapping) else [human_agreement]):
            if isinstance(getattr(a, "table", None), pd.DataFrame) and "bias" in a.table.columns:
                items.append(_figure(plots.agreement_plot(a), "bias[l] of each judge and the panel against the "
                                     "reference raters, with its scenario-clustered interval.", "agreement plot"))
        sections.append({"id": "human_agreement", "title": SECTION_TITLES["human_agreement"], "intro": [],
                         "items": items})

    sections.extend(audit)

    env = jinja2.Environment(loader=jinja2.PackageLoader("cjstats.reporting", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), trim_blocks=True,
                             lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    source = scores.provenance.get("source", "score table") if isinstance(scores.provenance, Mapping) else "scores"
    html = env.get_template("report.html.j2").render(
        title=title or "cjstats report", version=__version__, sections=sections, level=f"{100 * level:g}%",
        created=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), source=str(source))
    if output is not None and _is_pdf(output):
        from cjstats.reporting.pdf import write_pdf

        write_pdf(html, check_output(output, force), browser=browser)
    elif output is not None:
        write_html(html, output, force=force)
    return html


def _is_pdf(output: str | os.PathLike[str]) -> bool:
    return Path(output).suffix.lower() == ".pdf"
