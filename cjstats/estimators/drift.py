r"""Judge drift: has a judge's offset changed between two runs on the same anchor items?

Both runs score the same anchor items i = (model, scenario, generation) with the same judges l. The stacked
table follows

    y_ril = mu + tau_r + gamma_l + (tau gamma)_rl                       fixed: run x judge cells
            + a_s + b_sg + (a gamma)_sl + (b gamma)_sgl                  item effects shared by both runs
            + c_rs + d_rsg + (c gamma)_rsl + e_rsgl                      run-specific effects and residual

(s the anchor scenario, here model x scenario; g its generation). The drift of judge l is
Delta_l = eta[after, l] - eta[before, l], the change in its cell mean; the panel mean changes by
Delta = mean_l Delta_l. Every item effect shared by the runs cancels in the paired difference
D_sgl = y_after,sgl - y_before,sgl, which follows the per-model model of the package

    D_sgl = Delta_l + c_s + d_sg + (c gamma)_sl + e_sgl,

so ONE REML (or ANOVA) fit of the table of differences (:func:`cjstats.estimate`: ``mu`` = Delta,
``gamma[l]`` = Delta_l - Delta) gives every Delta_l with a standard error that uses the pairing, and
Satterthwaite degrees of freedom. Its REML criterion is the stacked model's with the shared variances free
(the run sum and the run difference are orthogonal, and the sum's likelihood carries only the shared
variances): the estimates equal lme4's ``lmer(score ~ 0 + run:judge + (1|s) + (1|s:g) + (1|s:judge) +
(1|run:s) + ...)`` off the boundary (``tests/test_drift.py``). In a complete balanced table
Delta_l_hat = mean_sg D_sgl and, without generations, SE_l^2 = (pooled within-judge variance of D)/n.

The change of the judge x scenario pattern is the ``scenario_judge`` component of the differences'
fit, Var((c gamma)_sl): identifiable when some judge scored two generations of a scenario.

Tests: per judge, t = Delta_l_hat / SE_l on the Satterthwaite df, p-values adjusted across judges (Holm 1979,
Bonferroni, or Benjamini and Hochberg 1995); globally, no judge drifted (H0: Delta_l = 0 for all l) by the
Wald statistic W = Delta_hat' V^+ Delta_hat (V the covariance of the Delta_l_hat, rank K) referred to
F(K, nu) with nu the smallest df of the Delta_l and of Delta (conservative; the chi-square p-value is reported too), and the
judges drifted alike (H0: Delta_l all equal: the same on the K - 1 contrasts gamma[l]).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats._validate import resolve_ci_level
from cjstats._warnings import warn
from cjstats.exceptions import CjstatsError
from cjstats.io.read import read_scores
from cjstats.io.scores import Scores
from cjstats.results.base import Result, freeze_plain
from cjstats.results.components import VarianceComponents

__all__ = ["DriftResult", "judge_drift", "adjust_p", "DRIFT_COLUMNS", "DRIFT_TEST_COLUMNS"]

DRIFT_COLUMNS = ("group", "judge", "estimate", "std_error", "df", "t", "p_value", "p_adjusted", "lower", "upper",
                 "verdict", "n_items", "ci_level", "method")
DRIFT_TEST_COLUMNS = ("group", "test", "statistic", "df1", "df2", "p_value", "p_chisq")
PANEL = "(panel mean)"
_SEP = " | "


def adjust_p(p: np.ndarray, adjust: str = "holm") -> np.ndarray:
    """Adjusted p-values across a family: Holm's step-down max_{j<=i} min(1, (m - j + 1) p_(j)) (Holm 1979),
    Bonferroni min(1, m p), Benjamini-Hochberg min_{j>=i} min(1, m p_(j) / j) (``"bh"``; 1995), or ``"none"``."""
    p = np.asarray(p, dtype=np.float64)
    m = p.size
    if adjust == "none" or m == 0:
        return p.copy()
    if adjust == "bonferroni":
        return np.minimum(1.0, m * p)
    order = np.argsort(p)
    if adjust == "bh":
        ranked = m * p[order] / np.arange(1, m + 1)
        adj = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    else:
        adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def _as_frame(scores: Any, name: str) -> pd.DataFrame:
    if scores is None:
        raise CjstatsError(f"judge_drift needs two runs of the same anchor items; the '{name}' run is missing. "
                           f"Pass judge_drift(before, after) with a score table for each run.")
    if isinstance(scores, pd.DataFrame):
        scores = read_scores(scores)
    if not isinstance(scores, Scores):
        raise CjstatsError(f"The '{name}' argument of judge_drift takes a Scores table (from read_scores) or a "
                           f"DataFrame. Got {type(scores).__name__} instead.")
    return scores.to_frame()


def _differences(before: pd.DataFrame, after: pd.DataFrame, *, unshared: str, by_model: bool) -> pd.DataFrame:
    """The table of paired differences after - before, one row per (item, judge), as an ``estimate`` input."""
    crit = "criterion" in before.columns
    if crit != ("criterion" in after.columns):
        raise CjstatsError("One run has a 'criterion' column and the other does not; judge both runs on the same "
                           "criteria (or pass scores.composite() for both).")
    jb, ja = set(before["judge"]), set(after["judge"])
    if jb != ja:
        only_b, only_a = sorted(jb - ja), sorted(ja - jb)
        what = "; ".join(s for s in (f"only before: {', '.join(only_b)}" if only_b else "",
                                     f"only after: {', '.join(only_a)}" if only_a else "") if s)
        raise CjstatsError(f"The two runs have different judges ({what}); drift is measured on the judges of both "
                           f"runs, so subset both tables to the same judges.")
    item = ["model", "scenario", "generation"] + (["criterion"] if crit else [])
    ib = before[item].drop_duplicates()
    ia = after[item].drop_duplicates()
    both = ib.merge(ia, on=item, how="inner")
    n_b, n_a, n_both = len(ib), len(ia), len(both)
    if n_both == 0:
        raise CjstatsError(f"The two runs share no anchor item (model, scenario, generation): before has {n_b}, "
                           f"after {n_a}. Drift needs the same items judged twice.")
    if n_both < max(n_b, n_a):
        msg = (f"{n_b - n_both} of the {n_b} items of 'before' and {n_a - n_both} of the {n_a} items of 'after' "
               f"are not in the other run")
        if unshared != "drop":
            raise CjstatsError(f"{msg}; drift compares the same anchor items, so pass unshared='drop' to keep the "
                               f"{n_both} shared ones.")
        warn(f"judge_drift: {msg}; kept the {n_both} shared items.")
    keys = item + ["judge"]
    m = before[keys + ["score"]].merge(after[keys + ["score"]], on=keys, suffixes=("_before", "_after"))
    if m.empty:
        raise CjstatsError("No judge scored the same item in both runs; drift needs each judge's score of an item "
                           "in both runs.")
    out = pd.DataFrame({"model": m["model"].astype(str) if by_model else "drift",
                        "scenario": m["scenario"].astype(str) if by_model
                        else m["model"].astype(str) + _SEP + m["scenario"].astype(str),
                        "generation": m["generation"].astype(str), "judge": m["judge"].astype(str),
                        "score": m["score_after"].to_numpy(float) - m["score_before"].to_numpy(float)})
    if crit:
        out.insert(1, "criterion", m["criterion"].astype(str))
    return out


@dataclass(frozen=True, slots=True)
class DriftResult(Result):
    """Per judge, the change of its offset between two runs on the same anchor items, with tests.

    Attributes
    ----------
    drift : DataFrame
        One row per group and judge, and one ``judge == "(panel mean)"`` row per group (the change of the panel
        mean): ``group, judge, estimate, std_error, df, t, p_value, p_adjusted, lower, upper, verdict, n_items,
        ci_level, method``. ``p_adjusted`` is adjusted across the judges of a group (not the panel row).
    tests : DataFrame
        Per group, ``no_drift`` (H0: every Delta_l = 0) and ``equal_drift`` (H0: the Delta_l are equal): Wald F
        with ``df1, df2``, its p-value and the chi-square p-value.
    components : DataFrame
        The variance components of the paired differences (``scenario_judge``: the change of the judge x
        scenario pattern; ``residual``: twice the noise variance of one call).
    fit : VarianceComponents
        The fit of the differences (``fit.contrast("gamma[a] - gamma[b]", model=...)`` compares two drifts).
    labels : tuple of str
        The names of the two runs.
    adjust : str
        The multiplicity adjustment.
    diagnostics : Mapping
        Item counts.
    """

    drift: pd.DataFrame
    tests: pd.DataFrame
    components: pd.DataFrame
    fit: VarianceComponents
    labels: tuple[str, str]
    method: str
    ci_level: float
    adjust: str
    diagnostics: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        freeze_plain(self, "diagnostics")

    def to_frame(self) -> pd.DataFrame:
        """A copy of the per-judge drift table."""
        return self.drift.copy()

    def flagged(self) -> list[str]:
        """The judges (``group | judge`` when there are several groups) whose adjusted test rejects."""
        d = self.drift[(self.drift["judge"] != PANEL) & (self.drift["p_adjusted"] < 1 - self.ci_level)]
        multi = self.drift["group"].nunique() > 1
        return [f"{g}{_SEP}{j}" if multi else str(j) for g, j in zip(d["group"], d["judge"])]

    def as_text(self) -> str:
        from cjstats.results.format import format_frame

        t = self.tests.copy()
        lines = [f"Judge drift, {self.labels[1]} - {self.labels[0]} ({self.method}; p adjusted: {self.adjust})", "",
                 format_frame(self.drift.drop(columns=["ci_level", "method"]), na="-").to_string(index=False), "",
                 "Global tests (Wald F)", format_frame(t, na="-").to_string(index=False)]
        flagged = self.flagged()
        lines += ["", f"drifted at level {1 - self.ci_level:g}: {', '.join(flagged) if flagged else 'none'}"]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.as_text()


def _wald(est: np.ndarray, cov: np.ndarray) -> tuple[float, int]:
    """W = est' cov^+ est and the rank of cov."""
    w, v = np.linalg.eigh((cov + cov.T) / 2)
    keep = w > w.max() * 1e-10 if w.size and w.max() > 0 else np.zeros(w.size, bool)
    z = v[:, keep].T @ est
    return float(np.sum(z * z / w[keep])), int(keep.sum())


def judge_drift(before: Scores | pd.DataFrame, after: Scores | pd.DataFrame | None = None, *,
                method: Literal["reml", "anova"] = "reml", ci_level: float | None = None,
                adjust: Literal["holm", "bonferroni", "bh", "none"] = "holm",
                labels: tuple[str, str] = ("before", "after"), unshared: Literal["error", "drop"] = "error",
                by_model: bool = False, **options: Any) -> DriftResult:
    """Per judge, the change of its offset between two runs on the same anchor items (module docstring).

    Parameters
    ----------
    before, after : Scores or DataFrame
        The two runs: the same anchor items (model, scenario, generation), the same judges.
    method : {"reml", "anova"}
        The fit of the paired differences (:func:`cjstats.estimate`); ANOVA needs a complete table.
    ci_level : float, optional
        Interval level; the verdict tests at 1 - ci_level.
    adjust : {"holm", "bonferroni", "bh", "none"}
        Adjustment of the per-judge p-values across the judges of a group.
    labels : (str, str)
        Names of the two runs, for the tables.
    unshared : {"error", "drop"}
        Items judged in one run only: refuse (default) or keep the shared items with a warning.
    by_model : bool
        One drift per anchor model (groups), instead of the anchor models' items pooled.
    **options
        Passed to :func:`cjstats.estimate` (e.g. ``incomplete="drop"`` for ANOVA).

    Returns
    -------
    DriftResult

    Examples
    --------
    >>> import numpy as np, cjstats as cj
    >>> s = cj.datasets.load("hanna").subset(criteria=["Coherence"]).to_frame()
    >>> noise = np.random.default_rng(0).normal(0, 0.5, len(s))      # re-judging is noisy
    >>> later = s.assign(score=s["score"] + noise + 0.5 * (s["judge"] == "ChatGPT"))
    >>> cj.judge_drift(s, later).flagged()
    ['ChatGPT']
    """
    from cjstats._validate import check_choice
    from cjstats.estimators import estimate

    check_choice("method", method, ("reml", "anova"), caller="judge_drift")
    check_choice("adjust", adjust, ("holm", "bonferroni", "bh", "none"), caller="judge_drift")
    check_choice("unshared", unshared, ("error", "drop"), caller="judge_drift")
    level = resolve_ci_level(ci_level)
    fb, fa = _as_frame(before, "before"), _as_frame(after, "after")
    diff = _differences(fb, fa, unshared=unshared, by_model=by_model)
    fit = estimate(diff, method, ci_level=level, **options)
    alpha = 1.0 - level
    rows, tests = [], []
    for gk, pc in (fit.covariance or {}).items():
        mod, _, crit = str(gk).partition(" / ")
        group = _SEP.join([*([mod] if by_model else []), *([crit] if fit.has_criterion else [])]) or "all"
        judges = [p[len("gamma["):-1] for p in pc.params if p.startswith("gamma[")]
        k = len(judges)
        sub = diff
        if by_model or fit.has_criterion:
            sub = diff[(diff["model"] == mod) & ((diff["criterion"] == crit) if fit.has_criterion else True)]
        n_items = int(sub[["scenario", "generation"]].drop_duplicates().shape[0])
        cmat = np.zeros((k + 1, len(pc.params)))
        cmat[:, pc.params.index("mu")] = 1.0
        for i, j in enumerate(judges):
            cmat[i, pc.params.index(f"gamma[{j}]")] = 1.0
        grp_rows = []
        for i, name in enumerate([*judges, PANEL]):
            r = fit.contrast(cmat[i], model=mod, criterion=crit or None, name=name)
            grp_rows.append({"group": group, "judge": name, "estimate": r.estimate, "std_error": r.std_error,
                             "df": r.df, "t": r.statistic, "p_value": r.p_value, "lower": r.lower,
                             "upper": r.upper, "n_items": n_items})
        padj = adjust_p(np.array([r["p_value"] for r in grp_rows[:k]]), adjust)
        for r, pa in zip(grp_rows, [*padj, grp_rows[k]["p_value"]]):
            r["p_adjusted"] = float(pa)
            if not (pa < alpha):
                r["verdict"] = "no drift detected"
            else:
                r["verdict"] = "drifted up" if r["estimate"] > 0 else "drifted down"
        rows += grp_rows
        # global tests from the covariance of the Delta_l
        d_est = cmat[:k] @ pc.estimate
        d_cov = cmat[:k] @ pc.cov @ cmat[:k].T
        df2 = float(min(r["df"] for r in grp_rows))      # the panel mean's df too (its direction is in W)
        for test, est_, cov_ in (("no_drift", d_est, d_cov),
                                 ("equal_drift", d_est - d_est.mean(),
                                  (np.eye(k) - 1.0 / k) @ d_cov @ (np.eye(k) - 1.0 / k))):
            from scipy import stats as st

            w, rank = _wald(est_, cov_)
            f = w / rank if rank else math.nan
            tests.append({"group": group, "test": test, "statistic": f, "df1": rank, "df2": df2,
                          "p_value": float(st.f.sf(f, rank, df2)) if math.isfinite(df2) else float(st.chi2.sf(w, rank)),
                          "p_chisq": float(st.chi2.sf(w, rank)) if rank else math.nan})
    out = pd.DataFrame(rows)
    out["ci_level"] = level
    out["method"] = fit.method
    comps = fit.components.copy()
    diag = {"n_pairs": int(len(diff)), "n_items_before": int(fb[["model", "scenario", "generation"]]
                                                               .drop_duplicates().shape[0]),
            "n_items_after": int(fa[["model", "scenario", "generation"]].drop_duplicates().shape[0])}
    return DriftResult(drift=out[list(DRIFT_COLUMNS)], tests=pd.DataFrame(tests)[list(DRIFT_TEST_COLUMNS)],
                       components=comps, fit=fit, labels=(str(labels[0]), str(labels[1])), method=fit.method,
                       ci_level=level, adjust=adjust, diagnostics=diag)
