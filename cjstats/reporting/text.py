"""Human-readable reports built from results (text only; the CLI prints them, the library never does)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from cjstats.results.estimands import COMPONENTS
from cjstats.results.components import VarianceComponents
from cjstats.exceptions import CjstatsError
from cjstats.estimators.judges import JudgeTable

__all__ = ["components_wide", "offsets_wide", "render_judges", "demo_report"]


def _num(x: float, d: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{d}f}"


def components_wide(fit: VarianceComponents, digits: int = 3) -> pd.DataFrame:
    """One row per model (x criterion), one column per component: ``estimate [lower, upper]``."""
    t = fit.components
    cells = []
    for r in t.itertuples(index=False):
        if not r.identifiable:
            s = "n/a"
        else:
            s = f"{_num(r.estimate, digits)}{'*' if r.at_boundary else ''} [{_num(r.lower, digits)}, " \
                f"{_num(r.upper, digits)}]"
        cells.append(s)
    t = t.assign(cell=cells)
    index = ["model", "criterion"] if "criterion" in t.columns else ["model"]
    wide = t.pivot_table(index=index, columns="component", values="cell", aggfunc="first")
    order = [c for c in COMPONENTS if c in wide.columns]
    return wide[order]


def offsets_wide(fit: VarianceComponents, digits: int = 3) -> pd.DataFrame:
    """Judge offsets gamma[l] as a model x judge table of estimates."""
    t = fit.judge_offsets
    index = ["model", "criterion"] if "criterion" in t.columns else ["model"]
    return t.pivot_table(index=index, columns="judge", values="estimate", aggfunc="first").round(digits)


_TEST_TITLES = {
    "anova": "Judge main effect, F-test (paper App. G): F = MS_J / MS_W",
    "reml": "Judge main effect, Wald F-test of the judge offsets (REML: every call kept; Satterthwaite df)\n"
            "(on a complete balanced table it is the F = MS_J / MS_W of paper App. G)",
}


def render_judges(tests: pd.DataFrame, table: JudgeTable) -> str:
    """The F-tests and the per-judge table as text."""
    from cjstats.results.format import DF_COLUMNS, fixed, format_df, format_p

    t = tests.copy()
    t["F"] = t["F"].map(lambda v: fixed(v, 1, na="n/a"))
    t["p_value"] = t["p_value"].map(lambda v: format_p(v, na="n/a"))   # "< 1e-300", never "0"
    for c in t.columns:
        if c in DF_COLUMNS:
            t[c] = t[c].map(lambda v: format_df(v, na="n/a"))          # 29790, never 2.979e+04
    methods = list(dict.fromkeys(t["method"])) if "method" in t.columns else ["anova"]
    lvl = int(round(100 * table.table["ci_level"].iloc[0]))
    changes = "yes" if table.top_model_changes else "no"
    top = table.top_model.to_string(index=False)
    return "\n".join([
        *(_TEST_TITLES.get(m, f"Judge main effect ({m})") for m in methods),
        t.drop(columns=["method"], errors="ignore").to_string(index=False), "",
        f"Mean score ± {lvl}% half-width under each single judge; (1) marks the judge's top model "
        f"(paper Table 1); 'panel' averages all judges",
        table.wide().to_string(), "",
        "Rank of each model under each single judge (1 = highest mean), sorted by the panel's ranking",
        table.rankings().to_string(), "",
        "Top model by judge:", top, f"Does the top model change across single judges? {changes}",
    ])


def _design_line(fit: VarianceComponents) -> str:
    d = fit.design
    m = d["generations"].dropna().unique()
    return (f"{len(d)} models x {int(d['n_scenarios'].max())} scenarios x "
            f"{', '.join(str(int(x)) for x in m) or 'varying'} generation(s) x {int(d['n_judges'].max())} judges; "
            f"complete and balanced: {'yes' if d['balanced'].all() else 'no'}")


#: What the demo says about each bundled dataset: its source, what one score is, what one generation is.
_DEMO_DATA = {
    "hanna": ("HANNA story ratings, MIT licence", "composite of 6 criteria, judge prompt variant 1",
              "one story per prompt"),
    "mentalalign": ("MentalAlign-70k responses to mental-health contexts, MIT licence", "composite of 7 criteria",
                    "one response per context"),
}


def demo_report(dataset: str = "hanna", *, method: str = "auto", **options: Any) -> str:
    """The whole pipeline on a bundled dataset, as a readable text report.

    ``method="auto"`` (default) fits the ANOVA when every model is complete and balanced and REML otherwise
    (:func:`cjstats.estimators.auto_method`; MentalAlign misses a few judge calls, so REML) and says why.
    ``method="anova"`` is refused on a dataset with missing calls (the demo drops nothing). ``options`` go to the
    backend (e.g. ``draws`` for ``"bayes"``).
    """
    from cjstats import datasets
    from cjstats._validate import check_choice
    from cjstats.estimators import BACKENDS, auto_method, estimate
    from cjstats.estimators.judges import judge_f_test, judge_table, judge_test

    check_choice("dataset", dataset, _DEMO_DATA, caller="demo_report")
    check_choice("method", method, [*BACKENDS, "auto"], caller="demo_report")
    scores = datasets.load(dataset, composite=True)
    chosen, why = auto_method(scores) if method == "auto" else (method, "")
    if chosen == "anova" and not bool(scores.design["balanced"].all()):
        raise CjstatsError(f"The bundled '{dataset}' table misses judge calls, and the demo drops nothing, so "
                           f"method='anova' cannot fit it; use method='auto' or method='reml', which keep every call.")
    fit = estimate(scores, chosen, **options)
    source, what, one_generation = _DEMO_DATA[dataset]
    k = len(scores.judges)
    width = 100
    ms = fit.design["generations"].dropna().unique()
    parts = [
        "=" * width,
        f"cjstats demo: '{dataset}' (bundled; {source}), {what}.",
        f"Judges are fixed: the {k}-judge panel mean is the reference (paper §3.1).",
        "=" * width,
        "Design: " + _design_line(fit),
        *([f"Method: {chosen} (auto: {why})."] if why else []), "",
        f"Variance components, {chosen} backend, estimate [{int(round(100 * fit.ci_level))}% interval]"
        + ("; * = truncated at 0" if bool(fit.components["at_boundary"].astype(bool).any()) else ""),
        components_wide(fit).to_string(), "",
        *([f"generation: n/a because m = 1 ({one_generation}): 'scenario' then holds scenario + generation."]
          if len(ms) == 1 and ms[0] == 1 else []),
        "judge_panel: the paper's sigma2_gamma of this fixed panel; judge_population: judges as random draws.", "",
        "Judge offsets gamma[l] = judge mean - panel mean",
        offsets_wide(fit).to_string(), "",
        render_judges(judge_test(fit) if fit.method in ("anova", "reml") else
                      judge_f_test(scores, method=auto_method(scores)[0]), judge_table(scores)),
    ]
    from cjstats.decisions.optimise import allocation_section

    parts += ["", allocation_section(fit), "", comparison_section(scores)]
    if dataset == "hanna":
        try:
            parts += ["", human_section(datasets.load(dataset, composite=True, humans=True))]
        except CjstatsError as exc:  # e.g. the humans extra is not installed: say so, keep the rest
            parts += ["", f"Judges against the human raters: not shown ({exc})"]
    return "\n".join(parts)


def comparison_section(scores) -> str:
    """Which model is better: ranks with simultaneous intervals, P(best) and a compact letter display."""
    from cjstats.estimators.joint import compare_models
    from cjstats.estimators import auto_method

    method, _ = auto_method(scores, joint=True)
    c = compare_models(scores, method=method)
    r = c.ranks.copy()
    r["rank interval"] = [f"[{int(lo)}, {int(hi)}]" for lo, hi in zip(r["rank_lower"], r["rank_upper"])]
    letters = c.letters()
    r["letters"] = r["model"].map(letters).fillna("") if letters.index.dtype == object else letters.to_numpy()
    table = r[["model", "mean", "rank", "rank interval", "p_best", "letters"]].round({"mean": 3, "p_best": 3})
    title = "Which model is better: paired comparisons on one joint fit (cj.compare_models)"
    return "\n".join([title, "-" * len(title), table.to_string(index=False),
                      f"Rank intervals are simultaneous ({c.rank_method}); models sharing a letter do not differ at "
                      f"{c.adjust}-adjusted p < 0.05. All {len(c.differences)} paired differences: cjstats compare.",
                      *c.fit_notes()])


def human_section(scores) -> str:
    """The judges against the human raters: bias with a scenario-clustered interval, correlation, the ceiling."""
    from cjstats.estimators.humans import judge_agreement

    a = judge_agreement(scores)
    t = a.table
    lvl = f"{int(round(100 * float(t['ci_level'].iloc[0])))}%"
    shown = t.assign(**{f"bias [{lvl} interval]": [f"{b:+.3f} [{lo:+.3f}, {hi:+.3f}]" for b, lo, hi in
                                                   zip(t["bias"], t["bias_lower"], t["bias_upper"])]})
    shown = shown[["judge", f"bias [{lvl} interval]", "pearson", "r_single"]].round({"pearson": 3, "r_single": 3})
    h = a.humans.iloc[0]
    title = f"Judges against the human raters ({', '.join(a.reference)}; cj.judge_agreement)"
    return "\n".join([title, "-" * len(title), shown.to_string(index=False),
                      "bias = judge minus the mean human rating of the same story (interval clustered by scenario); "
                      "r_single = correlation with one human.",
                      f"Human ceiling: two humans rating the same story correlate r = {h['human_r']:.3f} "
                      f"(Krippendorff's alpha {h['human_alpha']:.3f}); a judge cannot be checked more finely than "
                      f"that. More: cjstats humans."])
