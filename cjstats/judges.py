"""Judge tests and single-judge tables: the paper's App. G F-test and its Table 1.

:func:`judge_f_test` tests the judge main effect per model (F = MS_J/MS_W, App. G). :func:`judge_table`
gives each model's mean score under each single judge with an interval, the ranking each judge implies and
whether the top model changes from judge to judge (Table 1, ``tab:mean_scores``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from cjstats._validate import check_choice, resolve_ci_level
from cjstats.estimators.base import check_estimable
from cjstats.estimators.anova import complete_cells, judge_f_test as _f_test, mean_squares
from cjstats.scores import Scores

__all__ = ["judge_f_test", "judge_table", "JudgeTable"]


def judge_f_test(scores: Scores, *, incomplete: Literal["error", "drop"] = "error") -> pd.DataFrame:
    """ANOVA F-test of the judge main effect per model (and criterion), paper App. G (``app:anova``).

    F = MS_J / MS_W with K - 1 and (nm - 1)(K - 1) degrees of freedom; p = ``scipy.stats.f.sf(F, df1, df2)``.

    Returns
    -------
    DataFrame
        ``model, [criterion], F, df1, df2, p_value``.
    """
    check_choice("incomplete", incomplete, ("error", "drop"), caller="judge_f_test")
    rows = []
    for g in scores.groups():
        check_estimable(g)
        y, _ = complete_cells(g, incomplete)
        rows.append({**g.key, **_f_test(mean_squares(y))})
    return pd.DataFrame(rows)


@dataclass(frozen=True, slots=True)
class JudgeTable:
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
            t_q = stats.t.ppf(0.5 + level / 2, nn - 1) if nn > 1 else float("nan")
            recs.append({**g.key, "judge": judge, "mean": mean, "std_error": se, "lower": mean - t_q * se,
                         "upper": mean + t_q * se, "ci_level": level, "n_scenarios": nn})
    table = pd.DataFrame(recs)
    keys = (["criterion"] if scores.has_criterion else []) + ["judge"]
    table["rank"] = table.groupby(keys)["mean"].rank(ascending=False, method="min").astype(int)
    top = (table[table["rank"] == 1].groupby(keys, sort=False)["model"].first().rename("top_model")
           .reset_index())
    return JudgeTable(table=table, top_model=top)
