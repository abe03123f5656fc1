"""Judge tests and single-judge tables: the paper's App. G F-test and its Table 1.

:func:`judge_f_test` tests the judge main effect per model (F = MS_J/MS_W, App. G, on a complete balanced table;
or, with ``method="reml"``, the Wald F of the judge offsets, which keeps every call). :func:`judge_test` reads
the same test off a fit. :func:`judge_table` gives each model's mean score under each single judge with an
interval, the ranking each judge implies and whether the top model changes from judge to judge (Table 1,
``tab:mean_scores``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from cjstats import _dist
from cjstats._validate import check_choice, resolve_ci_level
from cjstats.exceptions import CjstatsError
from cjstats.io.scores import Scores
from cjstats.results.base import Result

if TYPE_CHECKING:
    from cjstats.results.components import ParameterCovariance, VarianceComponents

__all__ = ["judge_f_test", "judge_test", "judge_table", "JudgeTable", "JUDGE_TEST_COLUMNS"]

#: Columns of :func:`judge_f_test` and :func:`judge_test` (``criterion`` after ``model`` when present).
JUDGE_TEST_COLUMNS: tuple[str, ...] = ("model", "F", "df1", "df2", "p_value", "method")


def judge_f_test(scores: Scores, *, method: Literal["anova", "reml"] = "anova",
                 incomplete: Literal["error", "drop"] = "error", max_drop: float | None = None,
                 scenario_judge: Any = "auto") -> pd.DataFrame:
    """Test of the judge main effect per model (and criterion): are the judges' offsets gamma_l all zero?

    ``method="anova"``: the F test of paper App. G (``app:anova``), F = MS_J / MS_W with K - 1 and
    (nm - 1)(K - 1) degrees of freedom, on a complete balanced table; a missing call raises unless
    ``incomplete="drop"``, which keeps the complete cells as :func:`cjstats.estimate` does (it warns with what it
    removed and refuses to remove more than ``max_drop`` of a model's scenarios).

    ``method="reml"``: the Wald F of the judge offsets from the REML fit, which keeps every call:
    F = gamma_hat' (L Cov L')^{-1} gamma_hat / (K - 1) over K - 1 independent contrasts L, with the denominator
    degrees of freedom of lmerTest (Satterthwaite df of each eigen-contrast, combined as
    2E/(E - (K - 1)), E = sum nu/(nu - 2)). On a balanced table it equals the ANOVA F and its df.

    Where the scenario x judge interaction is fitted (``scenario_judge``, passed to :func:`cjstats.estimate`;
    by default wherever a judge scored several generations of a scenario), the judge effect is tested against
    it: F = MS_J / MS_SJ on (K - 1, (n - 1)(K - 1)) df for the ANOVA, and the REML Wald F then uses the
    covariance of the offsets under that model. ``scenario_judge=False`` gives the paper's test.

    Returns
    -------
    DataFrame
        ``model, [criterion], F, df1, df2, p_value, method``.
    """
    from cjstats.estimators import estimate

    check_choice("method", method, ("anova", "reml"), caller="judge_f_test")
    check_choice("incomplete", incomplete, ("error", "drop"), caller="judge_f_test")
    if method == "anova":
        fit = estimate(scores, "anova", incomplete=incomplete, max_drop=max_drop, scenario_judge=scenario_judge)
    else:
        if incomplete == "drop" or max_drop is not None:
            raise CjstatsError("The 'incomplete' and 'max_drop' arguments of judge_f_test apply to method='anova' "
                               "only (REML keeps every call); leave them out.")
        fit = estimate(scores, "reml", scenario_judge=scenario_judge)
    return judge_test(fit)


def judge_test(fit: VarianceComponents) -> pd.DataFrame:
    """The judge main-effect test of every group of a fit (see :func:`judge_f_test`).

    An ANOVA fit gives its App. G F test (``diagnostics``); a fit that carries the covariance of its judge
    offsets (REML) gives the Wald F with lmerTest's denominator degrees of freedom.
    """
    keys = ["model", "criterion"] if fit.has_criterion else ["model"]
    groups = fit.components[keys].drop_duplicates()
    rows = []
    for key in groups.itertuples(index=False):
        sel = dict(zip(keys, key))
        name = sel["model"] if "criterion" not in sel else f"{sel['model']} / {sel['criterion']}"
        diag = dict(fit.diagnostics).get(name, {})
        if "judge_f_test" in diag and fit.scale == "score":          # the method of moments' F test
            test = dict(diag["judge_f_test"])
        elif fit.method == "reml" and fit.covariance and name in fit.covariance:
            test = _wald_judge_f(fit.covariance[name])
        else:
            raise CjstatsError(f"judge_test reads the judge test of a fit by method='anova' or method='reml'; this fit "
                               f"(method '{fit.method}') has none for '{name}'.")
        rows.append({**sel, "F": test["F"], "df1": test["df1"], "df2": test["df2"], "p_value": test["p_value"],
                     "method": fit.method})
    return pd.DataFrame(rows, columns=[*keys, *JUDGE_TEST_COLUMNS[1:]])


def _ddf(nu: np.ndarray) -> float:
    """lmerTest's denominator df of an F built from q t-statistics with Satterthwaite df ``nu`` (get_Fstat_ddf)."""
    nu = nu[nu > 1e-8]
    if nu.size == 1:
        return float(nu[0])
    if np.all(np.abs(np.diff(nu)) < 1e-8 * max(1.0, float(nu.max()))):
        return float(nu.mean())
    if np.any(nu <= 2):
        return 2.0
    e = float(np.sum(nu / (nu - 2.0)))
    return 2.0 * e / (e - nu.size)


def _wald_judge_f(pc: ParameterCovariance) -> dict[str, float]:
    """Wald F of H0: gamma = 0 from the covariance of (mu, gamma): q = K - 1 eigen-contrasts of the offsets."""
    idx = [i for i, p in enumerate(pc.params) if p.startswith("gamma[")]
    q = len(idx) - 1
    lmat = np.zeros((q, len(pc.params)))
    lmat[np.arange(q), idx[:q]] = 1.0           # gamma_1..gamma_{K-1}; gamma_K = -sum of the others
    v = lmat @ pc.cov @ lmat.T
    d, u = np.linalg.eigh(v)
    if d.min() <= 1e-14 * max(float(d.max()), 1e-300):
        return {"F": math.inf, "df1": q, "df2": math.nan, "p_value": 0.0}
    contrasts = u.T @ lmat                      # rows: independent contrasts with variances d
    t2 = (contrasts @ pc.estimate) ** 2 / d
    f = float(t2.sum() / q)
    ddf = _ddf(np.array([pc.df(c) for c in contrasts]))
    return {"F": f, "df1": q, "df2": ddf, "p_value": float(_dist.f_sf(f, q, ddf))}


@dataclass(frozen=True, slots=True)
class JudgeTable(Result):
    """Each model's mean score under each single judge (paper Table 1).

    Attributes
    ----------
    table : DataFrame
        Long: ``model, [criterion], judge, mean, std_error, lower, upper, ci_level, n_scenarios, rank``; the
        pseudo-judge ``panel`` is the mean over all judges (the paper's reference). ``rank`` 1 is the highest
        mean among the models under that judge.
    top_model : DataFrame
        ``[criterion], judge, top_model``: the model each judge ranks first.
    """

    table: pd.DataFrame
    top_model: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        """A copy of the long model x judge table."""
        return self.table.copy()

    @property
    def top_model_changes(self) -> bool:
        """True when at least two single judges put different models first (for some criterion)."""
        t = self.top_model[self.top_model["judge"] != "panel"]
        keys = ["criterion"] if "criterion" in t.columns else []
        if keys:
            return bool((t.groupby(keys)["top_model"].nunique() > 1).any())
        return bool(t["top_model"].nunique() > 1)

    def rankings(self) -> pd.DataFrame:
        """Model x judge table of the rank each single judge gives each model (1 = highest mean)."""
        index = ["criterion", "model"] if "criterion" in self.table.columns else ["model"]
        out = self.table.pivot_table(index=index, columns="judge", values="rank", aggfunc="first")
        cols = [c for c in out.columns if c != "panel"] + (["panel"] if "panel" in out.columns else [])
        return out[cols].sort_values("panel")

    def wide(self, digits: int = 2) -> pd.DataFrame:
        """Model x judge strings ``mean +- half-width`` as in the paper's Table 1."""
        t = self.table.copy()
        t["cell"] = [f"{m:.{digits}f} ± {(u - lo) / 2:.{digits}f}" + (" (1)" if r == 1 else "")
                     for m, lo, u, r in zip(t["mean"], t["lower"], t["upper"], t["rank"])]
        index = ["criterion", "model"] if "criterion" in t.columns else ["model"]
        out = t.pivot_table(index=index, columns="judge", values="cell", aggfunc="first")
        cols = [c for c in out.columns if c != "panel"] + (["panel"] if "panel" in out.columns else [])
        return out[cols]


def judge_table(scores: Scores, *, ci_level: float | None = None) -> JudgeTable:
    """Mean score +- interval of each model under each single judge, and the ranking each judge implies.

    For judge l the benchmark score is the mean over scenarios of the judge's per-scenario mean
    (over generations); its interval is the t interval from the spread of those n per-scenario means
    (n - 1 degrees of freedom), the uncertainty of a single-judge evaluation with that judge fixed.
    The pseudo-judge ``panel`` averages every judge first: the panel mean the paper takes as reference.
    """
    level = resolve_ci_level(ci_level)
    t_q = None
    recs = []
    for g in scores.groups():
        n, k = g.design.n_scenarios, g.design.n_judges
        sums = np.zeros((n, k))
        counts = np.zeros((n, k))
        np.add.at(sums, (g.scenario, g.judge), g.y)
        np.add.at(counts, (g.scenario, g.judge), 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_scen = sums / counts                      # (n, K) per-scenario mean of each judge
        cols = list(g.judge_labels) + ["panel"]
        panel = np.nanmean(per_scen, axis=1)
        per_scen = np.column_stack([per_scen, panel])
        for j, judge in enumerate(cols):
            x = per_scen[:, j]
            x = x[~np.isnan(x)]
            nn = len(x)
            mean = float(x.mean()) if nn else float("nan")
            se = float(x.std(ddof=1) / np.sqrt(nn)) if nn > 1 else float("nan")
            t_q = _dist.t_ppf(0.5 + level / 2, nn - 1) if nn > 1 else float("nan")
            recs.append({**g.key, "judge": judge, "mean": mean, "std_error": se, "lower": mean - t_q * se,
                         "upper": mean + t_q * se, "ci_level": level, "n_scenarios": nn})
    table = pd.DataFrame(recs)
    keys = (["criterion"] if scores.has_criterion else []) + ["judge"]
    table["rank"] = table.groupby(keys)["mean"].rank(ascending=False, method="min").astype(int)
    top = (table[table["rank"] == 1].groupby(keys, sort=False)["model"].first().rename("top_model")
           .reset_index())
    return JudgeTable(table=table, top_model=top)
