r"""Which model is better, and how sure: paired differences, simultaneous rank intervals and ``p_best``.

All numbers come from one joint fit of every model (:mod:`cjstats.estimators.joint._joint`), so differences are
paired: the scenario effects alpha_i are shared by the models and cancel. ``difference[a,b]`` (docs/estimands.md, "Several models")
is the panel mean of model a minus that of model b, the contrast c = (e_a - e_b)/K of the judge x model table.

- Panel view (``view="panel"``): the judges in the data are the population of interest, so the judge offsets
  cancel exactly and only their interaction with the model, (gamma p)_pl, stays in the difference as a fixed
  quantity. With two models on a complete balanced table the ANOVA difference and standard error are those
  of the paired t test on the per-scenario means (the identity is tested to 1e-10).
- Population view (``view="population"``): the judges are a sample of a population of judges, so
  2 s2_judge_model / K enters the variance of the difference.

Multiplicity: ``p_adjusted`` is Holm's step-down (or Bonferroni, or none) over the P(P - 1)/2 pairs.
Rank intervals are simultaneous: every pairwise difference gets a simultaneous interval d_ab +- q se_ab
with q the (1 - a) quantile of max_ab |t_ab| (ANOVA: Tukey's studentized range, exact for the balanced
design, q = q_{P, df}/sqrt 2; REML: the same max-t quantile by Monte Carlo from the joint covariance of the
model means, with the df of the pairwise differences); model p then ranks between
1 + #{b: b significantly above p} and P - #{b: b significantly below p} (rank 1 = highest mean). All the
pairwise intervals hold together with probability >= level, so the rank intervals do too.
``p_best`` is the probability that a model has the highest mean under the approximate sampling distribution
of the means (multivariate t with the joint covariance; a flat-prior posterior), by Monte Carlo with a fixed
seed; the probabilities sum to 1. The Bayes backend uses posterior draws for both: rank intervals are equal-tailed posterior rank
intervals widened until all of them hold jointly in ``level`` of the draws (simultaneous), ``p_best`` the
share of draws in which a model is best.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special

from cjstats._validate import check_choice, check_positive_int, resolve_ci_level
from cjstats.estimators.intervals import adjust_p
from cjstats.estimators.joint._joint import JointFit
from cjstats.exceptions import CjstatsError
from cjstats.io.scores import Scores
from cjstats.results.base import Result
from cjstats.results.model import Model

__all__ = ["ModelComparison", "compare_models", "fit_joint", "DIFFERENCE_COLUMNS", "RANK_COLUMNS"]

Method = Literal["anova", "reml", "bayes"]
Adjust = Literal["holm", "bonferroni", "none"]
View = Literal["panel", "population"]

DIFFERENCE_COLUMNS = ("model_a", "model_b", "difference", "std_error", "df", "lower", "upper", "p_value",
                      "p_adjusted", "ci_level", "method", "view")
RANK_COLUMNS = ("model", "mean", "rank", "rank_lower", "rank_upper", "p_best")


def _methods(names: list[str]) -> str:
    """``method='a'`` or ``method='a' or 'b'``: the registered backends that declare something, in words."""
    return "method=" + " or ".join(f"'{n}'" for n in names) if names else "no registered method"


def _check_joint_options(backend: Any, options: Mapping[str, Any]) -> None:
    """One sentence for an option the joint backend does not declare (``JointCapabilities.options``): the
    methods that take it, or the options it takes."""
    from cjstats.estimators import JOINT_BACKENDS, UnknownOptionError

    caps = backend.capabilities
    unknown = [o for o in options if o not in caps.options]
    if not unknown:
        return
    name = unknown[0]
    owners = [n for n, b in JOINT_BACKENDS.items() if name in b.capabilities.options]
    if owners:
        why = "keeps every call" if name in ("incomplete", "max_drop") else "does not take it"
        raise UnknownOptionError(f"The '{name}' argument of fit_joint applies to {_methods(owners)} only "
                                 f"(method='{backend.name}' {why}); leave it out.")
    raise UnknownOptionError(f"fit_joint has no option '{name}' for method='{backend.name}' (its options: "
                             f"{', '.join(caps.options) or 'none'}; engine options go in engine_options=).")


def fit_joint(scores: Scores | pd.DataFrame | Any, method: Method | None = None, *, ci_level: float | None = None,
              seed: int | None = None, engine: str | None = None, engine_options: Mapping[str, Any] | None = None,
              model_scenario: str = "pooled", model: Model | str | None = None, **options: Any) -> JointFit:
    """Joint fit of every model of ``scores`` (one table, no criterion) by ``method``.

    The table is reduced to its joint statistics (:func:`cjstats.stats.build_stats` with
    ``unit=("criterion",)``: every model's cell statistics on a shared scenario axis) and the ANOVA and REML
    backends fit from those alone; the Bayesian model reads the rows.

    Parameters
    ----------
    scores : Scores, DataFrame, ScoreStats or JointStats
        The table (one score per (model, scenario, generation, judge), no criterion column), or statistics
        from ``build_stats`` (per-model statistics of one criterion are stacked; joint ones used as they are),
        or with ``engine`` a file, folder, glob or list of paths.
    method : {"anova", "reml", "bayes"}, optional
        Joint fit: method of moments on a complete balanced table, REML (any missing cells), or PyMC. Default:
        ``"anova"``, or the first of ``"anova"``, ``"reml"`` that takes every option given (so ``"reml"`` with
        ``covariates``, the one backend that declares them).
    engine : {"numpy", "duckdb", "dask"}, optional
        The engine that computes the statistics; ``"duckdb"`` and ``"dask"`` never load the rows
        (``docs/scale.md``), so ``method="bayes"`` and ``incomplete="drop"`` are refused with them.
    engine_options : mapping, optional
        Passed to the engine (``memory_limit``, ``columns``, ``client``, ...).
    model_scenario : {"pooled", "per_model"}
        One variance of the model x scenario effects (alpha p)_pi for all models (the paper's joint model), or
        one per model (``method="reml"`` only): a ``model_scenario`` row per model, so that each pair's standard
        error reflects its two models (with two models on a complete table it is the paired t, off the variance
        boundary: a REML variance at 0 makes the SE differ from the paired t's). Either way the
        REML fit tests pooled against per-model (``fit.tests["model_scenario"]``, with a recommendation).
    model : Model or str, optional
        The joint model as a :class:`cjstats.Model` (``unit="joint"``) or an lme4-style formula, e.g.
        ``"score ~ model*judge + (1|scenario) + (0 + dummy(model, 'a')|scenario) + ..."`` (per-model
        variances) or ``"score ~ model*judge + judge*length + (1|scenario) + (1|scenario:model)"`` (a
        covariate); it sets ``model_scenario`` and ``covariates``, which are then left out. A backend that
        cannot fit it is refused in one sentence (:func:`cjstats.can_fit`).
    **options
        Passed to the backend (an option given as ``None`` is left out: the backend's default), refused in one
        sentence by a backend that does not declare it (``JointCapabilities.options``); options the backend also
        declares in ``JointCapabilities.stats_options`` are passed to the statistics too
        (:func:`cjstats.stats.build_stats`). ``covariates=["length"]`` (``method="reml"``): numeric item columns of
        the DataFrame (one value per model x scenario x generation); each judge's slope on each (``fit.slopes``,
        ``fit.contrast("slope[length, judge]")``), a test that the judges' slopes differ, and model means at the
        mean covariate (:mod:`cjstats.estimators.joint.covariates`, docs/covariates.md); the engine must build
        covariate statistics (``EngineCapabilities.covariates``). Also, e.g. ``incomplete="drop"`` for ANOVA (it drops the scenarios that are not complete
        for every model and judge, reports them in ``dropped`` and in a warning, and refuses to drop more than
        ``max_drop``, default 0.5, of a model's scenarios), ``draws=`` for Bayes.

    Returns
    -------
    JointFit
        The tidy ``components`` table (``model_scenario`` and ``judge_model`` besides the per-model names)
        and the judge x model cell means.

    Examples
    --------
    >>> import cjstats as cj
    >>> s = cj.datasets.load("hanna", composite=True).subset(models=["GPT-2", "Human"])
    >>> fit = cj.fit_joint(s, method="anova")
    >>> sorted(set(fit.components["component"]))[:3]
    ['generation', 'judge_model', 'judge_panel']
    """
    from cjstats.estimators import JOINT_BACKENDS, get_joint_backend, missing_packages
    from cjstats.estimators.joint._joint import joint_stats

    options = {k: v for k, v in options.items() if v is not None}
    if model is not None:
        model_scenario, covs = _from_model(model, method, engine, model_scenario, options.get("covariates"))
        if covs:
            options["covariates"] = covs
    if method is None:   # the ANOVA, unless an option given is one only the REML backend declares
        method = next((m for m in ("anova", "reml") if set(options) <= set(JOINT_BACKENDS[m].capabilities.options)),
                      "anova")
    backend = get_joint_backend(method, caller="fit_joint")
    caps = backend.capabilities
    model_scenario = check_choice("model_scenario", model_scenario, ("pooled", "per_model"), caller="fit_joint")
    if model_scenario not in caps.model_scenario:
        by = _methods([n for n, b in JOINT_BACKENDS.items() if model_scenario in b.capabilities.model_scenario])
        raise CjstatsError(f"model_scenario='{model_scenario}' is fitted by {by} only (got method='{backend.name}'); "
                           f"use {by}, or model_scenario='pooled'.")
    level = resolve_ci_level(ci_level)
    _check_joint_options(backend, options)
    missing = missing_packages(backend)
    if missing:
        raise CjstatsError(f"method='{backend.name}' requires package(s): {', '.join(missing)}. Install them with "
                           f"pip install 'cjstats[{backend.extra}]'.")
    for_stats = {o: options[o] for o in caps.stats_options if o in options}   # e.g. covariates: their statistics
    source = joint_source(scores, engine, engine_options, **for_stats)
    stats, rows = joint_stats(source, "compare_models", **for_stats)   # checked once, for every backend
    # rows only to option sets that declare they need them; a backend given none where it needs them says so
    rows = rows if caps.needs_rows(options) else None
    fit = backend.fit(stats, ci_level=level, seed=seed, rows=rows, model_scenario=model_scenario, **options)
    from cjstats.estimators.score_advice import with_score_shape

    return _with_model(with_score_shape(fit, source), backend, {**options, "model_scenario": model_scenario})


def _from_model(model: Model | str, method: str | None, engine: str | None, model_scenario: str,
                covariates: Sequence[str] | None) -> tuple[str, list[str] | None]:
    """``model_scenario`` and ``covariates`` from a joint model (one sentence when also given, or not fittable)."""
    from cjstats.estimators import check_fit
    from cjstats.results.model import as_model

    spec = as_model(model, unit="joint")
    if model_scenario != "pooled" or covariates is not None:
        given = "model_scenario" if model_scenario != "pooled" else "covariates"
        raise CjstatsError(f"fit_joint takes the model either as model= or as '{given}=', not both: put it in the "
                           f"model, or leave model= out.")
    if method is not None:
        check_fit(method, spec, engine=engine)
    return spec.model_scenario, (list(spec.covariates) or None)


def _with_model(fit: JointFit, backend: Any, options: Mapping[str, Any]) -> JointFit:
    """The fit with the model it fitted (:class:`cjstats.Model`, ``fit.formula``)."""
    import dataclasses

    from cjstats.estimators import model_for

    return dataclasses.replace(fit, model=model_for(backend, options))


def joint_source(scores: Any, engine: str | None, engine_options: Mapping[str, Any] | None,
                 **stats_options: Any) -> Any:
    """What the joint backends read: the table itself (numpy), or the joint statistics an engine computed (with
    ``stats_options`` such as ``covariates``)."""
    from cjstats.estimators import check_engine_options
    from cjstats.stats.engines import get_engine

    eng = get_engine(engine or "numpy", caller="fit_joint")
    if eng.capabilities.in_memory:   # the backends build the joint statistics from the table (and keep its rows)
        check_engine_options(eng.name, engine_options or {})
        if not engine_options:
            return scores
    from cjstats.stats import build_stats

    src = scores.to_frame() if isinstance(scores, Scores) else scores
    from cjstats.results.model import DEFAULT_TERMS

    # the joint model's terms: no engine builds the per-model scenario x judge sums it does not use
    return build_stats(src, unit=("criterion",), engine=engine, terms=DEFAULT_TERMS["joint"], **stats_options,
                       **dict(engine_options or {}))


def _t_sf2(t: float, df: float) -> float:
    """Two-sided p-value of a t statistic (normal when df is infinite)."""
    if not np.isfinite(df):
        return float(2 * special.ndtr(-abs(t)))
    return float(2 * special.stdtr(df, -abs(t)))


def _t_ppf(p: float, df: float) -> float:
    return float(special.ndtri(p)) if not np.isfinite(df) else float(special.stdtrit(df, p))


@dataclass(frozen=True, slots=True)
class ModelComparison(Result):
    """Paired differences and simultaneous ranks of several models from one joint fit.

    Attributes
    ----------
    differences : DataFrame
        One row per pair (a, b), a ranked above b: ``model_a, model_b, difference, std_error, df, lower,
        upper, p_value, p_adjusted, ci_level, method, view``. ``lower``/``upper`` are the per-pair interval
        at ``ci_level`` (not adjusted); ``p_adjusted`` is adjusted by ``adjust``.
    ranks : DataFrame
        ``model, mean, rank, rank_lower, rank_upper, p_best``; rank 1 is the highest mean.
    fit : JointFit
        The joint fit, with its tidy ``components`` table.
    score_means, score_differences : DataFrame or None
        For a fit on a latent scale whose backend declares the hook ``score_scale`` (``method="ordinal"``): each
        model's expected score (pass rate for 0/1) for a new scenario and the panel, and the pairwise differences
        of those, with delta-method intervals and ``p_value`` / ``p_adjusted`` (the same ``adjust`` as the latent
        differences); None otherwise.
    """

    differences: pd.DataFrame
    ranks: pd.DataFrame
    fit: JointFit
    method: str
    view: str
    ci_level: float
    adjust: str
    rank_method: str
    score_means: pd.DataFrame | None = None
    score_differences: pd.DataFrame | None = None

    @property
    def dropped(self) -> pd.DataFrame | None:
        """What ``incomplete="drop"`` left out of the joint fit, per model (:attr:`JointFit.dropped`)."""
        return self.fit.dropped

    def significance_matrix(self) -> pd.DataFrame:
        """P x P matrix: '>' row model significantly above column model (p_adjusted < 1 - ci_level), '<', or '='."""
        models = list(self.ranks["model"])
        mat = pd.DataFrame("", index=models, columns=models)
        alpha = 1 - self.ci_level
        for r in self.differences.itertuples(index=False):
            sig = r.p_adjusted < alpha
            mat.loc[r.model_a, r.model_b] = (">" if r.difference > 0 else "<") if sig else "="
            mat.loc[r.model_b, r.model_a] = ("<" if r.difference > 0 else ">") if sig else "="
        for m in models:
            mat.loc[m, m] = "."
        return mat

    def letters(self) -> pd.Series:
        """Compact letter display: models sharing a letter are not significantly different (insert-absorb).

        Piepho (2004), J. Comput. Graph. Stat. 13:456-466, on the adjusted p-values.
        """
        models = list(self.ranks["model"])
        idx = {m: i for i, m in enumerate(models)}
        alpha = 1 - self.ci_level
        diff = np.zeros((len(models), len(models)), dtype=bool)
        for r in self.differences.itertuples(index=False):
            if r.p_adjusted < alpha:
                diff[idx[r.model_a], idx[r.model_b]] = diff[idx[r.model_b], idx[r.model_a]] = True
        cols = [set(range(len(models)))]
        for a in range(len(models)):
            for b in range(a + 1, len(models)):
                if not diff[a, b]:
                    continue
                new = []
                for c in cols:
                    if a in c and b in c:
                        new += [c - {a}, c - {b}]
                    else:
                        new.append(c)
                # absorb: drop columns contained in another
                new = [c for i, c in enumerate(new) if c and not any(
                    (c < o) or (c == o and j < i) for j, o in enumerate(new) if j != i)]
                cols = new
        cols.sort(key=lambda c: min(c))
        letters = {m: "" for m in models}
        for li, c in enumerate(cols):
            for i in sorted(c):
                letters[models[i]] += chr(ord("a") + li) if li < 26 else f"[{li}]"
        return pd.Series(letters, name="letters")

    def to_frame(self) -> pd.DataFrame:
        """A copy of the pairwise differences table."""
        return self.differences.copy()

    def as_text(self) -> str:
        from cjstats.results.format import column_decimals, fixed, format_frame, format_interval, format_prob

        pct = f"{100 * self.ci_level:g}%"
        r = self.ranks.copy()
        r["letters"] = self.letters().reindex(r["model"]).to_numpy()
        r["rank interval"] = [f"[{lo}, {hi}]" for lo, hi in zip(r["rank_lower"], r["rank_upper"])]
        d = self.differences.copy()
        dec = column_decimals(d["std_error"]) or 3       # the package's formatting policy (docs/reports.md)
        r = format_frame(r[["model", "mean", "rank", "rank interval", "p_best", "letters"]], na="-")
        r["mean"] = [fixed(v, dec, na="-") for v in self.ranks["mean"]]      # to the precision of the differences
        r["p_best"] = [format_prob(v, na="-") for v in self.ranks["p_best"]]     # as every p_best printed
        d[f"{pct} interval"] = [format_interval(lo, hi, dec, na="-") for lo, hi in zip(d["lower"], d["upper"])]
        d = format_frame(d[["model_a", "model_b", "difference", "std_error", "df", f"{pct} interval", "p_value",
                            "p_adjusted"]], se_column="std_error", value_columns=("difference", "std_error"), na="-")
        head = (f"Model comparison ({self.method}, {self.view} view, {self.fit.diagnostics.get('n', '?')} "
                f"scenarios, {len(self.fit.judges)} judges)")
        link = self.fit.diagnostics.get("link") if self.score_differences is not None else None
        lines = [head, "=" * len(head), "", "Ranks (rank 1 = highest panel mean"
                 + (f"; mean and differences on the latent {link} scale)" if link else ")"),
                 r.to_string(index=False), "",
                 "Paired differences (a minus b)",
                 d.to_string(index=False), "",
                 "Significance matrix (row vs column; '>' significantly higher at adjusted p < "
                 f"{1 - self.ci_level:g})", self.significance_matrix().to_string(), "",
                 f"rank intervals: {self.rank_method}; p-values adjusted: {self.adjust}; models sharing a "
                 "letter are not significantly different."]
        if self.score_differences is not None:
            sm, sdf = self.score_means.copy(), self.score_differences.copy()
            what = "pass rate" if (sm["quantity"] == "pass_rate").all() else "expected score"
            sm[f"{pct} interval"] = [format_interval(lo, hi, 3, na="-") for lo, hi in zip(sm["lower"], sm["upper"])]
            sdf[f"{pct} interval"] = [format_interval(lo, hi, 3, na="-") for lo, hi in zip(sdf["lower"], sdf["upper"])]
            sm = format_frame(sm[["model", "estimate", "std_error", f"{pct} interval"]], na="-")
            sdf = format_frame(sdf[["model_a", "model_b", "difference", "std_error", f"{pct} interval", "p_value",
                                    *(["p_adjusted"] if "p_adjusted" in sdf.columns else [])]],
                               se_column="std_error", value_columns=("difference", "std_error"), na="-")
            lines += ["", f"Score scale: {what} of a new scenario scored by the panel (marginal over the scenario "
                      "effects; delta method)", sm.to_string(index=False), "", f"Differences in {what} (a minus b; p "
                      f"adjusted: {self.adjust})",
                      sdf.to_string(index=False)]
        notes = self.fit_notes()
        lines += [""] + notes if notes else []
        return "\n".join(lines)

    def fit_notes(self) -> list[str]:
        """What the summary says about the joint fit itself: a REML fit that did not converge, and the test of one
        pooled model x scenario variance against one per model, with its recommendation."""
        out = []
        diag = self.fit.diagnostics
        if diag.get("converged") is False:
            out.append(f"WARNING: the joint {self.method} fit did not converge ({diag.get('message', '')}).")
        if diag.get("covariate_note"):
            out.append(diag["covariate_note"])
        t = self.fit.tests.get("model_scenario")
        if t:
            form = "per model" if diag.get("model_scenario") == "per_model" else "pooled"
            out.append(f"model x scenario variance: {form}; {t['recommendation']}.")
        elif self.method == "anova":
            out.append("model x scenario variance: pooled over models (the REML fit tests whether it differs "
                       "between models, and can fit one per model).")
        out.extend(self.fit.score_notes())
        return out

    def as_latex(self, *, digits: int = 3) -> str:
        """The ranks and the paired differences as two booktabs LaTeX tables (:func:`cjstats.results.tables.as_latex`)."""
        from cjstats.results.tables import as_latex

        r = self.ranks.assign(letters=self.letters().reindex(self.ranks["model"]).to_numpy())
        return "\n\n".join([
            as_latex(r, caption=f"Model ranks ({self.method}; {self.rank_method})", digits=digits),
            as_latex(self.differences.drop(columns=["ci_level", "method", "view"]),
                     caption=f"Paired differences, {100 * self.ci_level:g}% intervals, p adjusted: {self.adjust}",
                     digits=digits)])

    def as_markdown(self) -> str:
        def md(t: pd.DataFrame) -> str:
            head = "| " + " | ".join(map(str, t.columns)) + " |"
            sep = "| " + " | ".join("---" for _ in t.columns) + " |"
            body = ["| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row) + " |"
                    for row in t.itertuples(index=False)]
            return "\n".join([head, sep, *body])

        r = self.ranks.copy()
        r["letters"] = self.letters().reindex(r["model"]).to_numpy()
        notes = ["", *fn] if (fn := self.fit_notes()) else []
        return "\n".join([f"**Model comparison ({self.method}, {self.view} view)**", "", md(r), "",
                          md(self.differences[list(DIFFERENCE_COLUMNS[:10])]), "",
                          f"Rank intervals: {self.rank_method}. p-values adjusted: {self.adjust}.",
                          *notes])

    def __str__(self) -> str:
        return self.as_text()


def _row_max(x: np.ndarray) -> np.ndarray:
    """max over each row of a 2-D array (the same numbers as ``x.max(axis=1)``: a maximum is exact); with few
    columns as one elementwise maximum over the columns, ~10x faster than numpy's row reduction on a tall array
    (the Monte Carlo draws below: 20,000 rows x a few models)."""
    if x.shape[1] == 0 or x.shape[1] > 8:
        return x.max(axis=1)
    return np.maximum.reduce(np.ascontiguousarray(x.T), axis=0)


def _max_t_quantile(cov: np.ndarray, df: float, level: float, rng: np.random.Generator,
                    n_draws: int) -> float:
    """(level) quantile of max_{a<b} |Z_a - Z_b| / se_ab, Z ~ t_df(0, cov) (multivariate t, Monte Carlo)."""
    p = cov.shape[0]
    chol = np.linalg.cholesky(cov + 1e-12 * np.trace(cov) / p * np.eye(p))
    z = rng.standard_normal((n_draws, p)) @ chol.T
    if np.isfinite(df):
        z /= np.sqrt(rng.chisquare(df, size=n_draws) / df)[:, None]
    a, b = np.triu_indices(p, 1)
    se = np.sqrt(cov[a, a] + cov[b, b] - 2 * cov[a, b])
    return float(np.quantile(_row_max(np.abs(z[:, a] - z[:, b]) / se), level))


def _p_best(means: np.ndarray, cov: np.ndarray, df: float, rng: np.random.Generator, n_draws: int) -> np.ndarray:
    """P(best): the share of draws means + z (z ~ N(0, cov), or multivariate t with ``df``) in which each model
    is highest; a tie (a singular or zero covariance, e.g. every model's mean estimated exactly) is shared equally
    among the tied models."""
    p = len(means)
    try:
        root = np.linalg.cholesky(cov + 1e-12 * np.trace(cov) / p * np.eye(p))
    except np.linalg.LinAlgError:          # positive semi-definite (or zero): the symmetric square root
        w, v = np.linalg.eigh(0.5 * (cov + cov.T))
        root = v * np.sqrt(np.clip(w, 0.0, None))
    z = rng.standard_normal((n_draws, p)) @ root.T
    if np.isfinite(df):
        z /= np.sqrt(rng.chisquare(df, size=n_draws) / df)[:, None]
    x = means[None, :] + z
    top = x >= _row_max(x)[:, None]
    return (top / np.count_nonzero(top, axis=1)[:, None]).mean(axis=0)


def _simultaneous_posterior_ranks(draws_means: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Rank intervals from posterior draws that contain every model's rank jointly in >= level of the draws.

    Equal-tailed marginal intervals at level 1 - 2t are widened (t decreasing) until the share of draws whose
    ranks all fall inside reaches ``level``.
    """
    ranks = (-draws_means).argsort(axis=1).argsort(axis=1) + 1
    lo = hi = None
    for tail in np.linspace((1 - level) / 2, 0.0, 51):
        lo = np.quantile(ranks, tail, axis=0, method="inverted_cdf")
        hi = np.quantile(ranks, 1 - tail, axis=0, method="inverted_cdf")
        if ((ranks >= lo) & (ranks <= hi)).all(axis=1).mean() >= level:
            break
    return lo.astype(int), hi.astype(int)


def _rank_bounds(order_models: list[int], sig_above: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sig_above[a, b] = True when a is significantly above b (simultaneous). Returns rank lower/upper per model."""
    p = sig_above.shape[0]
    lower = 1 + sig_above.sum(axis=0)   # models significantly above me
    upper = p - sig_above.sum(axis=1)   # minus models significantly below me
    return lower, upper


def _rank_intervals(fit: JointFit) -> str:
    """How simultaneous rank intervals are made from ``fit``: its backend's declared
    ``JointCapabilities.rank_intervals`` (posterior ranks only when the fit carries draws); the max-t from the
    covariance of the model means for a fit whose method is not registered."""
    from cjstats.estimators import JOINT_BACKENDS

    backend = JOINT_BACKENDS.get(fit.method)
    kind = backend.capabilities.rank_intervals if backend is not None else "max_t"
    return "max_t" if kind == "posterior" and fit.draws is None else kind


def compare_models(scores: Scores | pd.DataFrame | Any, method: Method | None = None, *, ci_level: float | None = None,
                   adjust: Adjust = "holm", view: View = "panel", seed: int | None = 0,
                   n_draws: int = 20_000, fit: JointFit | None = None, engine: str | None = None,
                   engine_options: Mapping[str, Any] | None = None, **options: Any) -> ModelComparison:
    """Paired differences of every pair of models, simultaneous rank intervals and the probability of being best.

    Parameters
    ----------
    scores : Scores, DataFrame, ScoreStats or JointStats
        One score per (model, scenario, generation, judge); no criterion column (use ``.composite()``). Or
        statistics from :func:`cjstats.stats.build_stats`, or with ``engine`` a file, folder or glob
        (see :func:`fit_joint`).
    method : {"anova", "reml", "bayes"}, optional
        Joint fit: method of moments on a complete balanced table, REML (any missing cells), or PyMC. Default:
        ``"anova"``, or ``"reml"`` with ``covariates=`` (see :func:`fit_joint`).
    ci_level : float, optional
        Level of the intervals (default 0.95) and the significance threshold 1 - ci_level.
    engine, engine_options
        The engine that computes the joint statistics, and its options (see :func:`fit_joint`).
    adjust : {"holm", "bonferroni", "none"}
        Multiplicity adjustment of ``p_adjusted`` over the P(P - 1)/2 pairs.
    view : {"panel", "population"}
        ``panel``: the judges in the data (judge x model interaction fixed); ``population``: judges as a
        sample (s2_judge_model enters every standard error).
    seed : int, optional
        Seed of the Monte Carlo draws behind ``p_best`` (and REML's max-t quantile). Default 0: reproducible.
    n_draws : int
        Monte Carlo draws (the MC standard error of ``p_best`` is at most 0.5/sqrt(n_draws)).
    fit : JointFit, optional
        A joint fit to reuse (from :func:`fit_joint`); otherwise one is made.
    **options
        Passed to the joint fit, e.g. ``incomplete="drop"`` and ``max_drop`` for ANOVA, or
        ``covariates=["length"]`` with ``method="reml"`` (differences at equal covariate values; see
        :func:`fit_joint`).

    Returns
    -------
    ModelComparison
        ``.differences``, ``.ranks``, ``.fit``; ``print()`` shows a table, letters and a significance matrix.

    Examples
    --------
    >>> import cjstats as cj
    >>> s = cj.datasets.load("hanna", composite=True).subset(models=["GPT-2", "Human", "GPT"])
    >>> res = cj.compare_models(s, method="reml")
    >>> round(float(res.ranks["p_best"].sum()), 6)
    1.0
    """
    level = resolve_ci_level(ci_level)
    check_choice("adjust", adjust, ("holm", "bonferroni", "none"), caller="compare_models")
    check_choice("view", view, ("panel", "population"), caller="compare_models")
    n_draws = check_positive_int("n_draws", n_draws, caller="compare_models", minimum=1000)
    if fit is None:
        fit = fit_joint(scores, method, ci_level=level, seed=seed, engine=engine, engine_options=engine_options,
                        **options)
    method = fit.method
    ranks_by = _rank_intervals(fit)
    from cjstats.estimators import JOINT_BACKENDS

    backend = JOINT_BACKENDS.get(method)
    if backend is not None and view not in backend.capabilities.views:
        raise CjstatsError(f"method='{method}' does not take view='{view}' (its views: "
                           f"{', '.join(backend.capabilities.views)}).")
    rng = np.random.default_rng(seed)
    p, k = fit.cell_means.shape
    means = fit.model_means()
    if not np.all(np.isfinite(means)):
        bad = [m for m, v in zip(fit.models, means) if not np.isfinite(v)]
        why = "; ".join(f["reason"] for f in fit.diagnostics.get("identification", [])[:2])
        raise CjstatsError(f"Model{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))} "
                           f"{'have' if len(bad) > 1 else 'has'} no finite mean on the latent scale ({why or 'not identified'}): "
                           f"its differences and ranks are not identified, so none are reported; the fit "
                           f"(compare_models(...) refits it: cj.fit_joint) marks what is identified, or use "
                           f"method='bayes', whose priors keep the effects finite, or the raw rates.")
    order = list(np.argsort(-means, kind="stable"))
    a_idx, b_idx, est, se, dfs = [], [], [], [], []
    for ia, a in enumerate(order):
        for b in order[ia + 1:]:
            c = np.zeros((p, k))
            c[a], c[b] = 1.0 / k, -1.0 / k
            r = fit.contrast(c, view)
            e, s, df = r.estimate, r.std_error, r.df
            a_idx.append(a)
            b_idx.append(b)
            est.append(e)
            se.append(s)
            dfs.append(df)
    est, se, dfs = np.array(est), np.array(se), np.array(dfs)
    a_ = (1 - level) / 2
    tq = np.array([_t_ppf(1 - a_, d) for d in dfs])
    pv = np.array([_t_sf2(e / s, d) if s > 0 else (0.0 if e != 0 else 1.0) for e, s, d in zip(est, se, dfs)])
    padj = adjust_p(pv, adjust)
    models = fit.models
    differences = pd.DataFrame({
        "model_a": [models[i] for i in a_idx], "model_b": [models[i] for i in b_idx], "difference": est,
        "std_error": se, "df": dfs, "lower": est - tq * se, "upper": est + tq * se, "p_value": pv,
        "p_adjusted": padj, "ci_level": level, "method": method, "view": view,
    })
    # simultaneous rank intervals and p_best
    if ranks_by == "posterior":
        draws_means = fit.draws.mean(axis=2)  # (S, P)
        r_lower, r_upper = _simultaneous_posterior_ranks(draws_means, level)
        p_best = np.bincount(np.argmax(draws_means, axis=1), minlength=p) / draws_means.shape[0]
        rank_method = ("posterior ranks: equal-tailed intervals widened until they hold jointly in "
                       f"{100 * level:g}% of the draws")
    else:
        cov, df_min = fit.model_mean_covariance(view)
        if ranks_by == "studentized_range":
            from scipy import stats

            q = float(stats.studentized_range.ppf(level, p, df_min)) / np.sqrt(2) if p > 2 else float(tq.max())
            rank_method = "Tukey HSD (studentized range), simultaneous over all pairs"
        else:
            q = _max_t_quantile(cov, df_min, level, rng, n_draws) if p > 2 else float(tq.max())
            rank_method = f"max-t over all pairs from the joint covariance (Monte Carlo, {n_draws} draws)"
        sig_above = np.zeros((p, p), dtype=bool)
        for a, b, e, s in zip(a_idx, b_idx, est, se):
            if e - q * s > 0:
                sig_above[a, b] = True
            elif e + q * s < 0:
                sig_above[b, a] = True
        r_lower, r_upper = _rank_bounds(order, sig_above)
        p_best = _p_best(means, cov, df_min, rng, n_draws)
    rank = np.empty(p, dtype=int)
    rank[order] = np.arange(1, p + 1)
    ranks = pd.DataFrame({"model": [models[i] for i in order], "mean": means[order], "rank": rank[order],
                          "rank_lower": np.asarray(r_lower)[order].astype(int),
                          "rank_upper": np.asarray(r_upper)[order].astype(int), "p_best": p_best[order]})
    score_means = score_differences = None
    if backend is not None and "score_scale" in backend.capabilities.hooks:   # a latent fit's score-scale answers
        score_means, score_differences = backend.hook("score_scale")(fit, level)
        if score_differences is not None and len(score_differences):   # the same multiplicity rule as the latent
            score_differences = score_differences.assign(p_adjusted=adjust_p(score_differences["p_value"]
                                                                             .to_numpy(), adjust))
    return ModelComparison(differences=differences, ranks=ranks, fit=fit, method=method, view=view,
                           ci_level=level, adjust=adjust, rank_method=rank_method, score_means=score_means,
                           score_differences=score_differences)
