"""How far each LLM judge, and the panel mean, is from the reference (human) raters.

For every judge ``l`` (and the pseudo-judge ``panel``, the mean of the judges on the item) and every criterion,
over the items i = (model, scenario, generation) that both the judge and at least one reference rater scored,
with h_i the mean of the reference ratings of item i and x_i the judge's score:

* ``bias[l]`` = mean_i (x_i - h_i), the judge minus the humans on the same items (DESIGN §4 name);
* linear calibration h_i = a + b x_i (OLS): ``intercept`` a and ``slope`` b map the judge to the human scale;
* ``pearson`` and ``spearman`` correlations, and Krippendorff's alpha between x and h (``krippendorff``
  package; ordinal when both are whole numbers, interval otherwise: ``alpha_level`` says which);
* ``r_single``: the mean correlation of the judge with ONE human rater, comparable with ``human_r`` of the
  human ceiling table (mean correlation between two human raters of the same item), where items have
  several human ratings (HANNA).

Intervals respect the crossed design: the models share their scenarios, so items of one scenario are
correlated (a scenario a judge over-rates is over-rated for every model). Standard errors are cluster-robust
by scenario (CR1 sandwich, Cameron & Miller 2015), with a t interval on G - 1 degrees of freedom (G = number
of scenarios). The models are fixed: the bias is the bias averaged over these models' items, and scenarios
are the random sample. Coverage is checked by simulation in ``tests/test_humans_agreement.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cjstats import _dist
from cjstats._validate import resolve_ci_level
from cjstats.estimators.humans._items import PANEL, PairedItems, paired_items
from cjstats.io.scores import Scores
from cjstats.results.base import Result

__all__ = ["judge_agreement", "Agreement", "cluster_ols", "cluster_mean", "interval_alpha_two"]

_MIN_CLUSTERS = 3


# ------------------------------------------------------------------------------------ pure formula layer
def cluster_ols(x: np.ndarray | None, y: np.ndarray, cluster: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """OLS of ``y`` on an intercept (and ``x``) with the cluster-robust CR1 covariance.

    V = c (X'X)^-1 [sum_g X_g' u_g u_g' X_g] (X'X)^-1,  c = G/(G-1) * (N-1)/(N-p)

    (Cameron & Miller 2015, eq. 11 with Stata's small-sample factor c).

    Parameters
    ----------
    x : array or None
        The regressor; ``None`` fits the mean only (then the coefficient is mean(y)).
    y : array
        The response.
    cluster : array of int
        Cluster codes 0..G-1 (the scenario of each item).

    Returns
    -------
    beta, cov, G
        Coefficients (intercept first), their CR1 covariance and the number of clusters.
    """
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    X = np.ones((n, 1)) if x is None else np.column_stack([np.ones(n), np.asarray(x, dtype=np.float64)])
    p = X.shape[1]
    codes, cluster = np.unique(cluster, return_inverse=True)
    g = len(codes)
    xtx_inv = np.linalg.pinv(X.T @ X)
    beta = xtx_inv @ (X.T @ y)
    u = y - X @ beta
    score = np.zeros((g, p))
    for k in range(p):
        score[:, k] = np.bincount(cluster, weights=X[:, k] * u, minlength=g)
    meat = score.T @ score
    c = (g / (g - 1)) * ((n - 1) / (n - p)) if g > 1 and n > p else np.nan
    return beta, c * (xtx_inv @ meat @ xtx_inv), g


def cluster_mean(d: np.ndarray, cluster: np.ndarray, *, ci_level: float) -> dict[str, float]:
    """Mean of ``d`` with its cluster-robust SE and t interval on G - 1 df (CR1, see :func:`cluster_ols`)."""
    beta, cov, g = cluster_ols(None, d, cluster)
    se = float(np.sqrt(cov[0, 0])) if g >= _MIN_CLUSTERS else np.nan
    q = _dist.t_ppf(0.5 + ci_level / 2, g - 1) if g >= _MIN_CLUSTERS else np.nan
    return {"estimate": float(beta[0]), "std_error": se, "lower": float(beta[0] - q * se),
            "upper": float(beta[0] + q * se), "n_clusters": g}


def interval_alpha_two(a: np.ndarray, b: np.ndarray) -> float:
    """Krippendorff's interval alpha of two raters who both rated every unit (closed form).

    alpha = 1 - D_o / D_e,  D_o = (2/M) sum_u (a_u - b_u)^2,  D_e = 2 sum_v (v - mean)^2 / (M - 1),

    with M = 2N pooled values (Krippendorff 2011, "Computing Krippendorff's alpha", interval metric, no missing
    values). Equal to ``krippendorff.alpha(..., level_of_measurement="interval")`` (tested), which builds a
    units x V x V array and cannot hold thousands of distinct averaged scores.
    """
    v = np.concatenate([a, b])
    m = len(v)
    d_e = 2.0 * float(((v - v.mean()) ** 2).sum()) / (m - 1)
    d_o = 2.0 * float(((a - b) ** 2).sum()) / m
    return 1.0 - d_o / d_e if d_e > 0 else np.nan


_MAX_ORDINAL_VALUES = 21


def _alpha(a: np.ndarray | None, b: np.ndarray | None = None, *, data: np.ndarray | None = None
           ) -> tuple[float, str]:
    """Ordinal alpha (``krippendorff`` package) on whole-number scales, interval alpha otherwise."""
    data = np.vstack([a, b]) if data is None else data
    finite = data[np.isfinite(data)]
    values = np.unique(finite)
    if values.size < 2:
        return np.nan, ""
    if np.all(values == np.round(values)) and values.size <= _MAX_ORDINAL_VALUES:
        import krippendorff

        return float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")), "ordinal"
    if data.shape[0] == 2 and np.isfinite(data).all():
        return interval_alpha_two(data[0], data[1]), "interval"
    import krippendorff

    return float(krippendorff.alpha(reliability_data=np.round(data, 2), level_of_measurement="interval")), "interval"


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.std(a[ok]) == 0 or np.std(b[ok]) == 0:
        return np.nan
    return float(np.corrcoef(a[ok], b[ok])[0, 1])


def _spearmanr(a: np.ndarray, b: np.ndarray) -> Any:
    """``scipy.stats.spearmanr``, imported here so that importing this module does not import scipy.stats."""
    from scipy.stats import spearmanr

    return spearmanr(a, b)


# ---------------------------------------------------------------------------------------- result type
@dataclass(frozen=True, slots=True)
class Agreement(Result):
    """Judges against the reference raters, per judge (and ``panel``) and criterion.

    Attributes
    ----------
    table : DataFrame
        ``criterion, judge, estimand ("bias[l]"), n_items, n_scenarios, bias, bias_se, bias_lower,
        bias_upper, slope, slope_lower, slope_upper, intercept, intercept_lower, intercept_upper, pearson,
        spearman, r_single, alpha, alpha_level, ci_level, note``. ``judge == "panel"`` is the mean over the judges of each item.
    humans : DataFrame
        The human ceiling where items have several reference ratings: ``criterion, n_raters_max, n_items,
        human_alpha, human_alpha_level, human_r``; empty otherwise.
    reference : tuple of str
        The reference raters used.
    ci_level : float
        Level of every interval.
    """

    table: pd.DataFrame
    humans: pd.DataFrame
    reference: tuple[str, ...]
    ci_level: float
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def closest_judge(self) -> pd.DataFrame:
        """Per criterion, the LLM judge with the highest correlation with the humans and the least |bias|."""
        t = self.table[self.table["judge"] != PANEL]
        rows = []
        for crit, part in t.groupby("criterion", dropna=False, sort=False):
            rows.append({"criterion": crit,
                         "highest_pearson": part.loc[part["pearson"].idxmax(), "judge"],
                         "smallest_abs_bias": part.loc[part["bias"].abs().idxmin(), "judge"]})
        return pd.DataFrame(rows)

    def as_latex(self, digits: int = 3) -> str:
        """Bias, calibration and agreement per judge as a booktabs LaTeX table (:func:`cjstats.results.tables.as_latex`)."""
        from cjstats.results.tables import as_latex

        cols = [c for c in ("model", "criterion", "judge", "n_items", "bias", "bias_lower", "bias_upper", "slope",
                            "intercept", "pearson", "r_single", "alpha") if c in self.table.columns]
        return as_latex(self.table[cols], caption=f"Judges against {', '.join(self.reference)}", digits=digits)

    def as_text(self, digits: int = 3) -> str:
        pct = f"{100 * self.ci_level:g}%"
        cols = ["model", "criterion", "judge", "n_items", "bias", "bias_lower", "bias_upper", "slope", "intercept",
                "pearson", "r_single", "alpha"]
        t = self.table[[c for c in cols if c in self.table.columns]].copy()
        if t["criterion"].isna().all():
            t = t.drop(columns="criterion")
        lines = [f"Judges against the reference raters ({', '.join(self.reference)}); bias = judge - human, "
                 f"{pct} intervals cluster-robust by scenario", t.round(digits).to_string(index=False)]
        if len(self.humans):
            h = self.humans.copy()
            if h["criterion"].isna().all():
                h = h.drop(columns="criterion")
            lines += ["", "Human ceiling (agreement between two human raters of the same item)",
                      h.round(digits).to_string(index=False)]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.as_text()


# ------------------------------------------------------------------------------------------ public API
def _judge_rows(items: pd.DataFrame, wide_ratings: np.ndarray, judges: list[str], crit: Any,
                ci_level: float) -> list[dict[str, Any]]:
    h = items["human"].to_numpy(dtype=np.float64)
    scen = pd.factorize(items["scenario"])[0]
    q_cache: dict[int, float] = {}
    rows = []
    for judge in [*judges, PANEL]:
        x = items[judge].to_numpy(dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(h)
        xo, ho, so = x[ok], h[ok], scen[ok]
        row: dict[str, Any] = {"criterion": crit, "judge": judge, "estimand": f"bias[{judge}]",
                               "n_items": int(ok.sum())}
        note = ""
        g = int(np.unique(so).size)
        row["n_scenarios"] = g
        if g < _MIN_CLUSTERS:
            note = f"only {g} scenarios with both a judge score and a human rating: no interval"
        b = cluster_mean(xo - ho, so, ci_level=ci_level)
        row.update(bias=b["estimate"], bias_se=b["std_error"], bias_lower=b["lower"], bias_upper=b["upper"])
        if g >= _MIN_CLUSTERS and np.std(xo) > 0:
            beta, cov, _ = cluster_ols(xo, ho, so)
            q = q_cache.setdefault(g, float(_dist.t_ppf(0.5 + ci_level / 2, g - 1)))
            se = np.sqrt(np.diag(cov))
            row.update(slope=beta[1], slope_lower=beta[1] - q * se[1], slope_upper=beta[1] + q * se[1],
                       intercept=beta[0], intercept_lower=beta[0] - q * se[0], intercept_upper=beta[0] + q * se[0])
        else:
            row.update(slope=np.nan, slope_lower=np.nan, slope_upper=np.nan, intercept=np.nan,
                       intercept_lower=np.nan, intercept_upper=np.nan)
            note = note or "the judge gives every item the same score: no calibration line"
        row["pearson"] = _corr(xo, ho)
        row["spearman"] = (float(_spearmanr(xo, ho).statistic)
                           if len(xo) >= 3 and np.std(xo) > 0 and np.std(ho) > 0 else np.nan)
        singles = [_corr(x, wide_ratings[:, r]) for r in range(wide_ratings.shape[1])]
        singles = [s for s in singles if np.isfinite(s)]
        row["r_single"] = float(np.mean(singles)) if singles else np.nan
        row["alpha"], row["alpha_level"] = _alpha(xo, ho)
        row["ci_level"] = ci_level
        row["note"] = note
        rows.append(row)
    return rows


def _slot_matrix(items: pd.DataFrame, ratings: pd.DataFrame) -> np.ndarray:
    """(n_items, R) reference ratings, one column per reference rater (NaN where that rater did not rate)."""
    keys = ["model", "scenario", "generation"]
    wide = ratings.set_index([*keys, "judge"])["score"].unstack("judge")
    return wide.reindex(pd.MultiIndex.from_frame(items[keys])).to_numpy(dtype=np.float64)


def _ceiling_row(slots: np.ndarray, crit: Any) -> dict[str, Any] | None:
    counts = np.isfinite(slots).sum(axis=1)
    if slots.shape[1] < 2 or counts.max(initial=0) < 2:
        return None
    multi = slots[counts >= 2]
    alpha, level = _alpha(None, None, data=multi.T)
    rs = [_corr(multi[:, a], multi[:, b]) for a in range(slots.shape[1]) for b in range(a + 1, slots.shape[1])]
    rs = [r for r in rs if np.isfinite(r)]
    return {"criterion": crit, "n_raters_max": int(counts.max()), "n_items": int(len(multi)),
            "human_alpha": alpha, "human_alpha_level": level, "human_r": float(np.mean(rs)) if rs else np.nan}


def judge_agreement(scores: Scores, reference: str | list[str] | None = None, *, by_model: bool = False,
                    ci_level: float | None = None) -> Agreement:
    """Bias, calibration, correlation and Krippendorff's alpha of every LLM judge (and the panel) vs humans.

    Parameters
    ----------
    scores : Scores
        A table with reference raters (``read_scores(..., reference=...)``, a ``judge_type`` column, or
        ``cj.datasets.load(name, humans=True)``).
    reference : str or list of str, optional
        The reference raters; by default the table's own. A name of an LLM judge of ``scores`` moves that
        judge to the reference side.
    by_model : bool
        Also split by model: one row per model x criterion x judge (a judge's bias can differ by model, e.g.
        for its own family); the items of one model are still clustered by scenario.
    ci_level : float, optional
        Interval level (default 0.95).

    Returns
    -------
    Agreement
        ``.table`` per criterion x judge (bias = judge - human with a cluster-robust interval, calibration
        h = a + b x, correlations, alpha) and ``.humans`` the human ceiling where items have several raters.

    Notes
    -----
    Items are pooled over the models within a criterion; SEs are cluster-robust by scenario (CR1) with a
    t_{G-1} interval, because the models share their scenarios (module docstring).

    Examples
    --------
    >>> import cjstats as cj
    >>> agr = cj.judge_agreement(cj.datasets.load("hanna", humans=True))
    >>> agr.table.query("judge == 'panel'")[["criterion", "bias", "pearson"]]  # doctest: +SKIP
    """
    from cjstats._validate import require_packages

    require_packages("judge_agreement", "krippendorff", extra="humans")
    ci_level = resolve_ci_level(ci_level)
    paired: PairedItems = paired_items(scores, reference=reference, caller="judge_agreement")
    items = paired.items[paired.items["n_human"] > 0]
    rows, ceil = [], []
    keys = ["criterion", "model"] if by_model else ["criterion"]
    for key, part in items.groupby(keys, dropna=False, sort=True):
        crit = key[0] if isinstance(key, tuple) else key
        crit = None if (isinstance(crit, float) and np.isnan(crit)) else crit
        rat = paired.ratings if crit is None else paired.ratings[paired.ratings["criterion"] == crit]
        slots = _slot_matrix(part, rat)
        extra = {"model": key[1]} if by_model else {}
        rows += [{**extra, **r} for r in _judge_rows(part, slots, paired.judges, crit, ci_level)]
        c = _ceiling_row(slots, crit)
        if c is not None:
            ceil.append({**extra, **c})
    table = pd.DataFrame(rows)
    humans = pd.DataFrame(ceil, columns=[*(["model"] if by_model else []), "criterion", "n_raters_max", "n_items",
                                         "human_alpha", "human_alpha_level", "human_r"])
    pooled = "per model and criterion" if by_model else "pooled over models within criterion"
    prov = {"items": pooled, "se": "cluster-robust (CR1) by scenario",
            "alpha": "krippendorff package"}
    return Agreement(table=table, humans=humans, reference=tuple(paired.reference), ci_level=ci_level,
                     provenance=prov)
