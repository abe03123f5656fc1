r"""The joint multi-model fit: its result type, the input table it reads, and linear contrasts of it.

Joint model (docs/estimands.md, "Several models"), for models p, scenarios i, generations j (nested in p x i) and judges l::

    X_pijl = mu_p + alpha_i + (alpha p)_pi + beta_pij + gamma_l + (gamma p)_pl + eps_pijl

with alpha_i ~ N(0, s2_scenario), (alpha p)_pi ~ N(0, s2_model_scenario), beta_pij ~ N(0, s2_generation),
eps ~ N(0, s2_residual) (all independent; the *unrestricted* mixed model, which is what lme4's
``(1|scenario) + (1|scenario:model) + (1|scenario:model:generation)`` fits). Model and judge are fixed:
eta_pl = mu_p + gamma_l + (gamma p)_pl are the P x K "cell means" of the judge x model table. Every
question of the comparison layer (a difference of two models' panel means, a self-preference contrast) is a
linear contrast sum_pl c_pl eta_pl of that table, so a fit only has to say how to compute the variance and
degrees of freedom of a contrast (:meth:`JointFit.contrast`, docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
import math
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats._defaults import JOINT_LABEL
from cjstats.results.base import Result
from cjstats.results.components import ComponentRow, build_components_frame
from cjstats.results.model import Model
from cjstats.results.contrast import ContrastResult, JointCovariance, contrast_result, parse_contrast, spec_label
from cjstats.estimators.anova import mls_interval
from cjstats.exceptions import CjstatsError
from cjstats.io.read import read_scores
from cjstats.io.scores import Scores
from cjstats.stats import ScoreStats, build_stats
from cjstats.stats.joint import JointStats, stack_models

__all__ = ["JointFit", "JointData", "JointSource", "joint_data", "joint_stats", "as_scores",
           "components_frame", "check_judges_scored", "check_not_constant", "check_residual", "JOINT_LABEL"]

View = Literal["panel", "population"]



def mls_row(component: str, c: float, ms1: float, df1: float, ms2: float, df2: float, level: float,
            view: str = "panel", note: str = "") -> ComponentRow:
    """c (E[MS_1] - E[MS_2]), truncated at 0, with the MLS interval (Ting et al. 1990; bounds floored at 0) and the
    large-sample standard error sqrt(2 (c MS_1)^2/df1 + 2 (c MS_2)^2/df2). The joint ANOVA passes mean squares;
    the joint REML passes the same quantities built from GLS effects (df1 may be a Satterthwaite value)."""
    raw = c * (ms1 - ms2)
    est, boundary = (0.0, True) if raw < 0 else (raw, False)
    lo, hi = mls_interval(c, ms1, df1, c, ms2, df2, level)
    se = math.sqrt(2 * (c * ms1) ** 2 / df1 + 2 * (c * ms2) ** 2 / df2)
    return ComponentRow(component, est, max(lo, 0.0), max(hi, 0.0), se, "MLS (Ting et al. 1990)", view, raw,
                        boundary, True, note)


def as_scores(scores: Any, caller: str) -> Scores:
    """A validated :class:`Scores` with one score per (model, scenario, generation, judge) and no criterion."""
    if isinstance(scores, pd.DataFrame):
        scores = read_scores(scores)
    if not isinstance(scores, Scores):
        raise CjstatsError(f"{caller} takes a Scores table (from read_scores) or a DataFrame. "
                           f"Got {type(scores).__name__} instead.")
    if scores.has_criterion:
        raise CjstatsError(f"scores has a 'criterion' column ({len(scores.criteria)} criteria), but {caller} "
                           f"compares models on one score. Pass scores.composite() or "
                           f"scores.subset(criteria=[...]).")
    if len(scores.models) < 2:
        raise CjstatsError(f"scores has only one model ('{scores.models[0]}'); {caller} needs at least 2 "
                           f"models to compare.")
    return scores


@dataclass(frozen=True, slots=True)
class JointData:
    """Integer-coded arrays of a multi-model table, sorted by (model, scenario, generation, judge).

    ``cell`` indexes (model, scenario, generation) triples; ``ms`` indexes (model, scenario) pairs.
    """

    y: np.ndarray
    model: np.ndarray
    scenario: np.ndarray
    judge: np.ndarray
    cell: np.ndarray
    ms: np.ndarray
    models: tuple[str, ...]
    scenarios: np.ndarray
    judges: tuple[str, ...]

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_judges(self) -> int:
        return len(self.judges)


def joint_data(scores: Scores) -> JointData:
    """Code the long table of ``scores`` for the joint fit (checks: 2+ judges, 2+ scenarios)."""
    f = scores.to_frame()
    models = tuple(str(m) for m in scores.models)
    mcode = pd.Categorical(f["model"].astype(str), categories=list(models)).codes.astype(np.int64)
    scode, scen = pd.factorize(f["scenario"], sort=True)
    jcode, judges = pd.factorize(f["judge"].astype(str), sort=True)
    gcode, _ = pd.factorize(f["generation"], sort=True)
    if len(judges) < 2:
        raise CjstatsError(f"scores has only one judge ('{judges[0]}'): judge x model terms need at least 2 judges.")
    if len(scen) < 2:
        raise CjstatsError("scores has only one scenario: the joint fit needs at least 2.")
    ms = mcode * len(scen) + scode
    cell_key = ms.astype(np.int64) * (gcode.max() + 1) + gcode
    cell, _ = pd.factorize(cell_key, sort=True)
    ms_code, _ = pd.factorize(ms, sort=True)
    order = np.lexsort((jcode, cell))
    return JointData(y=f["score"].to_numpy(np.float64)[order], model=mcode[order],
                     scenario=scode.astype(np.int64)[order],
                     judge=jcode.astype(np.int64)[order], cell=cell.astype(np.int64)[order],
                     ms=ms_code.astype(np.int64)[order], models=models, scenarios=np.asarray(scen, dtype=object),
                     judges=tuple(str(j) for j in judges))


def check_shared_scenarios(d: JointStats) -> None:
    """Every pair of models must share at least one scenario (else their difference rests on no pairing)."""
    seen = d.presence()
    shared = seen.astype(np.int64) @ seen.T.astype(np.int64)
    a, b = np.nonzero(shared == 0)
    if a.size:
        raise CjstatsError(f"Models '{d.models[a[0]]}' and '{d.models[b[0]]}' share no scenario, so their "
                           f"difference cannot be paired. Score both on common scenarios, or compare them "
                           f"separately with cj.estimate.")


@dataclass(frozen=True, slots=True)
class JointSource:
    """Joint statistics already built (and checked) from a table, with the table, so that they are not built
    again and a backend that needs rows still has them."""

    stats: JointStats
    rows: Scores


def joint_stats(source: Any, caller: str, *, covariates: Any = None) -> tuple[JointStats, Scores | None]:
    """The :class:`~cjstats.stats.JointStats` a joint backend fits from, and the rows when the source has them.

    ``source`` is a Scores table or DataFrame (one score per row, no criterion), a joint unit
    (``cj.stats.build_stats(..., unit=("criterion",))``, or its ``ScoreStats`` when it holds one criterion),
    or per-model statistics of one criterion (stacked here). Checks: 2+ models, 2+ judges, 2+ scenarios, and
    every pair of models shares a scenario. With ``covariates`` a table is reduced with its covariate statistics
    (``build_stats(..., covariates=...)``, read from the DataFrame's columns; the rows are not kept).
    """
    if isinstance(source, JointSource):
        return source.stats, source.rows
    scores = None
    if covariates is not None and not isinstance(source, (JointStats, ScoreStats)):
        source = build_stats(source, unit=("criterion",), covariates=covariates)
        if source.has_criterion:
            raise CjstatsError(f"scores has a 'criterion' column ({len(source)} criteria), but {caller} "
                               f"compares models on one score. Pass scores.composite() or "
                               f"scores.subset(criteria=[...]).")
    if isinstance(source, JointStats):
        js = source
    elif isinstance(source, ScoreStats):
        units = source.units if source.joint else tuple(
            stack_models([u for u in source.units if u.criterion == c])
            for c in dict.fromkeys(u.criterion for u in source.units))
        if len(units) != 1:
            crits = ", ".join(repr(u.criterion) for u in units)
            raise CjstatsError(f"These statistics hold {len(units)} criteria ({crits}), but {caller} compares "
                               f"models on one score. Pass one unit: stats.get(criterion=...).")
        js = units[0]
    else:
        scores = as_scores(source, caller)
        js = build_stats(scores, unit=("criterion",)).units[0]
    if js.n_models < 2:
        raise CjstatsError(f"scores has only one model ('{js.models[0]}'); {caller} needs at least 2 "
                           f"models to compare.")
    if js.k < 2:
        raise CjstatsError(f"scores has only one judge ('{js.judge_labels[0]}'): judge x model terms need at "
                           f"least 2 judges.")
    if js.n_scenarios < 2:
        raise CjstatsError("scores has only one scenario: the joint fit needs at least 2.")
    check_shared_scenarios(js)
    check_not_constant(js)
    check_judges_scored(js.judge_counts(), js.models, js.judge_labels)
    return js, scores


def check_not_constant(js: JointStats) -> None:
    """Refuse, as :func:`cjstats.estimate` does, a table whose scores never vary (every variance would be 0)."""
    lo = min(float(u.y_min) for u in js.units)
    hi = max(float(u.y_max) for u in js.units)
    if hi == lo:
        raise CjstatsError(f"Column 'score' is constant ({lo:g} in every row of every model): there is no variance "
                           f"to compare the models by.")


def score_range(js: JointStats) -> float:
    """max - min of the scores over every model (the scale a residual variance is judged against)."""
    return max(float(u.y_max) for u in js.units) - min(float(u.y_min) for u in js.units)


def check_residual(s2_residual: float, js: JointStats) -> None:
    """Refuse a joint fit whose residual variance is 0 to rounding (every score is its model x scenario x
    generation mean plus a judge offset): every standard error would be 0, and the intervals, tests and rank
    intervals are undefined (the REML criterion divides by it, the ANOVA intervals by the residual mean square).
    """
    scale = score_range(js)
    if not s2_residual > 1e-12 * scale * scale:
        raise CjstatsError("Column 'score' has no residual variation: every score equals its (model, scenario, "
                           "generation) mean plus a fixed judge offset, so the residual variance is 0 and no "
                           "standard error can be computed; check that 'score' holds the judges' individual "
                           "scores, not a summary of them.")


def check_judges_scored(counts: np.ndarray, models: tuple[str, ...], judges: tuple[str, ...]) -> None:
    """Every (model, judge) cell mean must have data: one sentence naming the first empty cell and the subset
    that removes every empty cell.

    Checked before any method-specific check (``joint_stats``), because no method can fit such a table: the
    ANOVA's ``incomplete='drop'`` would drop every scenario and REML cannot estimate the empty cell, so the fix
    offered is the one that works, a subset of the judges (or, if that leaves fewer than 2, of the models).
    """
    empty = np.asarray(counts).reshape(len(models), len(judges)) == 0
    if not empty.any():
        return
    pm, lj = (int(x[0]) for x in np.nonzero(empty))
    keep_judges = [j for j, e in zip(judges, empty.any(axis=0)) if not e]
    keep_models = [m for m, e in zip(models, empty.any(axis=1)) if not e]
    n = int(empty.sum())
    more = f" (and {n - 1} more model x judge pair{'s' if n > 2 else ''})" if n > 1 else ""
    out_j = [j for j in judges if j not in keep_judges]
    out_m = [m for m in models if m not in keep_models]
    if len(keep_judges) >= 2:
        fix = (f"leave out judge{'s' if len(out_j) > 1 else ''} {', '.join(map(repr, out_j))}: "
               f"scores.subset(judges={keep_judges!r})")
    elif len(keep_models) >= 2:
        fix = (f"leave out model{'s' if len(out_m) > 1 else ''} {', '.join(map(repr, out_m))}: "
               f"scores.subset(models={keep_models!r})")
    else:
        fix = "score every model with at least 2 common judges"
    raise CjstatsError(f"Judge '{judges[lj]}' never scored model '{models[pm]}'{more}, so the model x judge cell "
                       f"means are not estimable by any method (dropping incomplete scenarios would drop them "
                       f"all, and REML has no data for that cell); {fix}.")


def components_frame(rows: list[tuple[str, ComponentRow]], *, method: str, ci_level: float) -> pd.DataFrame:
    """The tidy joint components table: the per-model fits' frame builder, one ``model`` key per row."""
    return build_components_frame([({"model": model}, r) for model, r in rows], method=method, ci_level=ci_level,
                                  has_criterion=False)


@dataclass(frozen=True, slots=True)
class JointFit(Result):
    """A joint fit of several models: components with intervals, the judge x model table and its contrasts.

    Attributes
    ----------
    method : str
        ``"anova"``, ``"reml"`` or ``"bayes"``.
    models, judges : tuple of str
        Row and column labels of ``cell_means``.
    cell_means : ndarray, shape (P, K)
        Estimated eta_pl = mu_p + gamma_l + (gamma p)_pl (GLS for REML, posterior means for Bayes).
    components : DataFrame
        Tidy, the columns of ``VarianceComponents.components``. Rows ``mu`` carry each model's panel mean;
        the shared components (``scenario``, ``model_scenario``, ``generation``, ``residual``, ``judge_panel``,
        ``judge_population``, ``judge_model``) have ``model == "(joint)"``.
    tests : Mapping
        ``{"judge_model": {...}}``: the test of no judge x model interaction (F for ANOVA, likelihood ratio for
        REML), with its statistic, degrees of freedom and p-value.
    ci_level : float
        Level of every interval.
    diagnostics : Mapping
        Mean squares, dropped scenarios, optimiser state, as the backend reports them.
    covariance : JointCovariance
        The covariance of the cell means, as data (:class:`~cjstats.results.contrast.JointCovariance`): every
        contrast's variance and degrees of freedom in either view come from it.
    draws : ndarray or None
        (S, P, K) posterior draws of eta (Bayes only).
    dropped : DataFrame or None
        What ``incomplete="drop"`` left out, one row per model: rows, cells and scenarios dropped of each
        (``cjstats._drop.DROPPED_COLUMNS``); ``None`` when the fit was not asked to drop anything.
    """

    method: str
    models: tuple[str, ...]
    judges: tuple[str, ...]
    cell_means: np.ndarray
    components: pd.DataFrame
    tests: Mapping[str, Any]
    ci_level: float
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    covariance: JointCovariance | None = None
    draws: np.ndarray | None = None  # (S, P, K) posterior draws of eta (Bayes only)
    dropped: pd.DataFrame | None = None
    model: Model | None = None      # the specification fitted (cjstats.results.model)

    @property
    def fitted_model(self) -> Model | None:
        """:attr:`model` with the terms the data identified (the generation term only with m >= 2)."""
        if self.model is None:
            return None
        has_gen = self.diagnostics.get("has_generation")
        if has_gen is None:          # backends that do not record it: the generation row says
            gen = self.components[self.components["component"] == "generation"]
            has_gen = bool(gen["identifiable"].astype(bool).any()) if len(gen) else False
        return self.model.with_terms(t for t in self.model.terms if t != "generation" or has_gen)

    @property
    def scale(self) -> str:
        """``"latent"`` for the cumulative (ordinal) joint model, whose variances are on its latent scale, else
        ``"score"`` (read from :attr:`model`)."""
        return self.model.scale if self.model is not None else "score"

    @property
    def formula(self) -> str:
        """The exact R (lme4) formula of what was fitted; per-model variances as ``dummy()`` terms."""
        from cjstats.results.model import formula

        fm = self.fitted_model
        return "" if fm is None else formula(fm, models=self.models)

    def _weights(self, spec: Any) -> tuple[np.ndarray, str]:
        """The P x K weights over ``cell_means`` of a contrast spec, and its label."""
        p, k = self.cell_means.shape
        if isinstance(spec, str):
            terms = parse_contrast(spec)
            label = spec.strip()
        elif isinstance(spec, Mapping):
            if not spec:
                raise CjstatsError("The 'spec' argument of contrast is an empty mapping; give weights such as "
                                   "{'mu[x]': 1, 'mu[y]': -1}.")
            terms = []
            for key, w in spec.items():
                (w1, name, parts), = parse_contrast(str(key))
                terms.append((w1 * float(w), name, parts))
            label = spec_label(spec)
        else:
            c = np.asarray(spec, dtype=np.float64)
            if c.size != p * k:
                raise CjstatsError(f"A contrast array needs shape {self.cell_means.shape} (models x judges). "
                                   f"Got {c.shape}.")
            return c.reshape(p, k), "c'eta"
        c = np.zeros((p, k))
        for w, name, parts in terms:
            want = {"mu": 1, "gamma": 1, "eta": 2, "gp": 2}.get(name)
            if want is None or len(parts) != want:
                raise CjstatsError(f"The contrast names '{name}{'[' + ', '.join(parts) + ']' if parts else ''}', "
                                   f"which a joint fit does not have: use mu[model], gamma[judge], eta[model, judge] "
                                   f"or gp[model, judge].")
            idx = []
            for part, labels, what in zip(parts, (self.models, self.judges) if name != "gamma" else (self.judges,),
                                          ("model", "judge") if name != "gamma" else ("judge",)):
                if part not in labels:
                    raise CjstatsError(f"The contrast names {what} '{part}', which this fit does not have "
                                       f"({what}s: {', '.join(labels)}).")
                idx.append(labels.index(part))
            if name == "mu":
                c[idx[0]] += w / k
            elif name == "gamma":
                c[:, idx[0]] += w / p
                c -= w / (p * k)
            elif name == "eta":
                c[idx[0], idx[1]] += w
            else:
                c[idx[0], idx[1]] += w
                c[idx[0]] -= w / k
                c[:, idx[1]] -= w / p
                c += w / (p * k)
        return c, label

    def contrast(self, spec: Any, view: View = "panel", *, level: float | None = None,
                 name: str | None = None) -> ContrastResult:
        r"""Any linear contrast sum_pl c_pl eta_pl of the judge x model cell means, with its test and interval.

        ``spec`` is a string such as ``"mu[x] - mu[y]"`` or ``"gamma[a] - gamma[b]"`` (parameters ``mu[model]``:
        the panel mean, a row mean of eta; ``gamma[judge]``: the judge's offset, its column mean minus the grand
        mean; ``eta[model, judge]``: one cell mean; ``gp[model, judge]``: the judge x model interaction
        eta_pl - row mean - column mean + grand mean), a mapping of those names to weights, or a P x K array c.

        ``view="panel"``: the judges in the data are fixed. ``view="population"``: the judges are a sample, so
        the judge x model variance (and, unless the contrast sums to zero within each model, the judge
        variance) enters the standard error: Var = c'(Sigma + s2_jm I + s2_j J_P (x) I_K)c
        (:class:`~cjstats.results.contrast.JointCovariance` says how each backend gets the degrees of freedom).
        """
        from cjstats._validate import check_choice, resolve_ci_level

        check_choice("view", view, ("panel", "population"), caller="contrast")
        lvl = float(self.ci_level) if level is None else resolve_ci_level(level)
        c, label = self._weights(spec)
        if self.covariance is None:
            raise CjstatsError("This joint fit carries no covariance of its cell means; refit it with "
                               "cjstats.fit_joint.")
        var, df = self.covariance.variance_df(c[None], view)
        est, var = self._on_cells(c[None], var)
        return contrast_result(name or label, float(est[0]), float(var[0]), float(df[0]),
                               lvl, view=view, method="t" if math.isfinite(df[0]) else "normal")

    def _on_cells(self, cs: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The estimates sum_pl c_pl eta_pl of a stack (N, P, K) of contrasts, and their variances ``var``, where
        some cell means are +-inf (an ordinal fit's separated cells, :mod:`cjstats.estimators.identification`): a
        cell with weight 0 takes no part (0 * inf is not NaN), and a contrast that weighs a separated cell is not
        identified, its estimate the signed limit (+-inf, NaN when limits of both signs meet) and its variance NaN,
        so no finite interval or p-value is reported around it. Every cell finite: sum_pl c_pl eta_pl as it is."""
        eta = self.cell_means
        if np.isfinite(eta).all():
            return np.einsum("npk,pk->n", cs, eta), var
        finite = np.isfinite(eta)
        est = np.einsum("npk,pk->n", cs, np.where(finite, eta, 0.0))
        hits = (cs != 0) & ~finite[None]
        with np.errstate(invalid="ignore"):
            limit = np.where(hits, cs * np.where(finite, 0.0, eta)[None], 0.0).sum(axis=(1, 2))
        bad = hits.any(axis=(1, 2))
        return np.where(bad, limit, est), np.where(bad, np.nan, var)

    def t_test(self, spec: Any, view: View = "panel", *, level: float | None = None,
               name: str | None = None) -> ContrastResult:
        """:meth:`contrast` under statsmodels' name."""
        return self.contrast(spec, view, level=level, name=name)

    def contrasts(self, cs: np.ndarray, view: View = "panel") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Estimates, standard errors and degrees of freedom of a stack of P x K contrasts (N, P, K) at once (the
        arrays behind :meth:`contrast`, for callers that need many)."""
        cs = np.asarray(cs, dtype=np.float64).reshape(-1, *self.cell_means.shape)
        var, df = self.covariance.variance_df(cs, view)
        est, var = self._on_cells(cs, var)
        return est, np.sqrt(np.maximum(var, 0.0)), df

    def model_means(self) -> np.ndarray:
        """Panel means mu_p + mean_l(gamma_l + (gamma p)_pl): the row means of ``cell_means``."""
        return self.cell_means.mean(axis=1)

    def model_mean_covariance(self, view: View = "panel") -> tuple[np.ndarray, float]:
        """Covariance of the model panel means and one df.

        The covariance is L Sigma L' with L = I_P (x) 1_K'/K (one matrix product,
        :meth:`JointCovariance.model_mean_covariance`); the df is the smallest df of the pairwise differences
        (conservative for max-t), computed for all pairs at once.
        """
        p, k = self.cell_means.shape
        cov = self.covariance.model_mean_covariance(view)
        a, b = np.triu_indices(p, 1)
        cs = np.zeros((a.size, p, k))
        cs[np.arange(a.size), a] = 1.0 / k
        cs[np.arange(a.size), b] = -1.0 / k
        _, dfs = self.covariance.variance_df(cs, view)
        return cov, float(np.min(dfs))

    def to_frame(self) -> pd.DataFrame:
        """A copy of the tidy components table."""
        return self.components.copy()

    def summary(self) -> Any:
        """A printable summary (text, markdown, LaTeX, HTML) of the joint components."""
        from cjstats.results.components import Summary

        notes = tuple(f"note: {n}" for n in dict.fromkeys(self.components["note"]) if n) + tuple(self.score_notes())
        head = (("formula", self.formula),) if self.formula else ()
        n = self.diagnostics.get("n")
        dev = self.reml_criterion
        data = (f"{int(self.cell_counts_total()):,} obs; " if self.cell_counts_total() else "") + (
            f"groups: scenario {int(n)}, model {len(self.models)}, judge {len(self.judges)}" if n else "")
        if dev is not None:
            data += f"; REML criterion {float(dev):.2f}"
        elif self.diagnostics.get("loglik") is not None:
            data += f"; log-likelihood {float(self.diagnostics['loglik']):.2f}"
        head += (("data", data),) if data else ()
        return Summary(title=f"Joint variance components ({self.method})",
                       header=(*head, ("models", str(len(self.models))), ("judges", str(len(self.judges)))),
                       table=self.components, offsets=pd.DataFrame(), footnotes=notes)

    @property
    def reml_criterion(self) -> float | None:
        """The REML criterion (-2 log restricted likelihood) as ``lme4::REMLcrit`` reports it for :attr:`formula`
        with sum-to-zero contrasts for model and judge (``contr.sum``), or None for a fit without one.

        The fit's own deviance (``diagnostics["reml_deviance"]``) parametrises the fixed part by the P K cell means;
        lme4's ``model*judge`` columns with ``contr.sum`` are those times a matrix C = C_P (x) C_K whose
        determinant is P^K K^P, and the criterion's log|X'V^-1 X| term moves by 2 log|det C| =
        2 (K log P + P log K). (With R's default ``contr.treatment``, det C = 1 and REMLcrit is the deviance.)
        """
        dev = self.diagnostics.get("reml_deviance")
        if dev is None or getattr(self, "covariates", None):
            return None
        p, k = len(self.models), len(self.judges)
        return float(dev) + 2.0 * (k * np.log(p) + p * np.log(k))

    def cell_counts_total(self) -> int:
        """The number of score rows behind the fit (0 when the fit does not record it)."""
        counts = self.diagnostics.get("cell_counts")
        try:
            return int(np.asarray(counts).sum()) if counts is not None else 0
        except (TypeError, ValueError):
            return 0

    def score_notes(self) -> list[str]:
        """One line when the scores are discrete or piled at a bound and the fit is on the score scale (a Gaussian
        backend; :func:`cjstats.io.score_kind.discrete_note`): the ordinal joint fit is the model the note advises."""
        from cjstats.io.score_kind import discrete_note

        note = discrete_note(self.diagnostics.get("score_shape")) if self.scale == "score" else None
        return [f"note: {note}"] if note else []

    def summary_text(self) -> str:
        return self.summary().as_text()

    def __str__(self) -> str:
        return self.summary_text()
