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

Tests (all at alpha = 1 - ci_level):

* per judge, t = Delta_l_hat / SE_l on its Satterthwaite df, two-sided; p-values adjusted across the judges of a
  group (Holm 1979 by default: familywise error <= alpha; Bonferroni; or Benjamini and Hochberg 1995);
* ``panel_mean`` (H0: Delta = 0): t^2 of the panel-mean change on its Satterthwaite df (balanced: n - 1, exact);
* ``equal_drift`` (H0: Delta_1 = ... = Delta_K, the judges moved together): Wald F = W/q over the q = K - 1
  centred contrasts gamma[l] - mean gamma, with the denominator df of lmerTest: the Satterthwaite df nu_i of
  each decorrelated contrast (eigenvectors of their covariance) combined by Fai and Cornelius (1996),
  E = sum nu_i/(nu_i - 2), ddf = 2E/(E - q) (the common nu when all are equal). In a complete balanced table
  without generations this is the exact ANOVA F = MS_J / MS_W of the differences on (K-1, (K-1)(n-1)) df;
* ``no_drift`` (H0: every Delta_l = 0, i.e. both of the above): p = min(1, 2 min(p_panel, p_equal)), the
  Bonferroni combination of the two. The panel mean lives in the item stratum and the judge contrasts in the
  within-item stratum, so in a balanced table the two tests are independent and exact and the level is
  1 - (1 - alpha/2)^2 (0.0494 at alpha = 0.05); never above alpha in general. No single exact F exists
  (the two parts have different error strata). The ``statistic`` column shows the K-df Wald F of all
  Delta_l for reference (its chi-square p-value in ``p_chisq``), not the statistic of the test.

Degenerate differences. When sum_l sum_sg (D_sgl - mean_sg D_sgl)^2 <= 1e-20 sum(y^2) in a group (every judge's
D is one number, to rounding), Delta_l = that number exactly: SE 0, interval [Delta_l, Delta_l], no test
(NaN), verdict ``"exact: no spread in the differences"``, one warning. When only the residual e_sgl is zero (the
REML backend's RSS <= 1e-12 x within-cell SS), REML is refused and ANOVA tests Delta_l and Delta against the item
stratum while ``equal_drift`` and ``no_drift`` are NaN (the judge contrasts are exact).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats import _dist
from cjstats._validate import resolve_ci_level
from cjstats._warnings import warn
from cjstats.estimators.intervals import adjust_p
from cjstats.exceptions import CjstatsError
from cjstats.io.read import read_scores
from cjstats.io.scores import Scores
from cjstats.results.base import Result, freeze_plain
from cjstats.results.components import VarianceComponents

__all__ = ["DriftResult", "judge_drift", "DRIFT_COLUMNS", "DRIFT_TEST_COLUMNS"]

DRIFT_COLUMNS = ("group", "judge", "estimate", "std_error", "df", "t", "p_value", "p_adjusted", "lower", "upper",
                 "verdict", "n_items", "ci_level", "method")
DRIFT_TEST_COLUMNS = ("group", "test", "statistic", "df1", "df2", "p_value", "p_chisq")
PANEL = "(panel mean)"
#: The verdict of a drift measured without error: every difference of a judge is the same number.
EXACT = "exact: no spread in the differences"
_SEP = " | "
#: Differences whose within-judge sum of squares is below this share of sum(y_before^2 + y_after^2) are exact:
#: the rounding of one difference is about 1e-16 |y|, so its square about 1e-32 y^2, far below; a real spread
#: of relative size 1e-10 is above it.
_EXACT_TOL = 1e-20


def _as_frame(scores: Any, name: str) -> pd.DataFrame:
    if scores is None:
        raise CjstatsError(f"judge_drift needs two runs of the same anchor items; the '{name}' run is missing. "
                           f"Pass judge_drift(before, after) with a score table for each run.")
    if isinstance(scores, pd.DataFrame):
        try:                                 # the package's input rules (duplicates, missing values, columns)
            scores = read_scores(scores)
        except CjstatsError as exc:
            raise CjstatsError(f"The '{name}' run: {exc}") from None
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
    if not by_model:                # the pooled item label model | scenario must stay one label per item
        pooled = m["model"].astype(str) + _SEP + m["scenario"].astype(str)
        pairs = pd.DataFrame({"pooled": pooled, "model": m["model"].astype(str),
                              "scenario": m["scenario"].astype(str)}).drop_duplicates()
        clash = pairs[pairs.duplicated("pooled", keep=False)]
        if len(clash):
            a, b = clash.iloc[0], clash.iloc[1]
            raise CjstatsError(f"Model '{a['model']}' scenario '{a['scenario']}' and model '{b['model']}' scenario "
                               f"'{b['scenario']}' both become the anchor item '{a['pooled']}' when the models are "
                               f"pooled; pass by_model=True or rename labels that contain '{_SEP.strip()}'.")
    out = pd.DataFrame({"model": m["model"].astype(str) if by_model else "drift",
                        "scenario": m["scenario"].astype(str) if by_model
                        else m["model"].astype(str) + _SEP + m["scenario"].astype(str),
                        "generation": m["generation"].astype(str), "judge": m["judge"].astype(str),
                        "score": m["score_after"].to_numpy(float) - m["score_before"].to_numpy(float)})
    if crit:
        out.insert(1, "criterion", m["criterion"].astype(str))
    if not out["score"].to_numpy().any():
        raise CjstatsError(f"The two runs give the same score on all {len(out)} shared judge calls: no judge changed, "
                           "and identical runs leave no variance to test; check that 'after' is the new run.")
    return out


def _check_labels(labels: Any) -> tuple[str, str]:
    """The two run names: a pair of distinct non-empty strings (a string such as "may" is refused: it would
    iterate to 'm', 'a', 'y')."""
    names: tuple[Any, ...] | None = None
    if not isinstance(labels, (str, bytes)):
        try:
            names = tuple(labels)
        except TypeError:
            names = None
    if names is None or len(names) != 2 or not all(str(x).strip() for x in names) \
            or str(names[0]).strip() == str(names[1]).strip():
        raise CjstatsError(f"labels must be two run names, e.g. labels=('may', 'june'); got {labels!r}.")
    return str(names[0]).strip(), str(names[1]).strip()


def _group_name(mod: str, crit: str, *, by_model: bool, has_criterion: bool) -> str:
    return _SEP.join([*([mod] if by_model else []), *([crit] if has_criterion else [])]) or "all"


def _exact_groups(diff: pd.DataFrame, size: float) -> list[tuple[str, str]]:
    """The groups (model, criterion or "") in which every judge's differences D_sgl are one number: the
    within-judge sum of squares of D is at most ``_EXACT_TOL * size`` (``size`` = sum of y^2 over both runs)."""
    keys = ["model"] + (["criterion"] if "criterion" in diff.columns else [])
    dev = diff["score"] - diff.groupby([*keys, "judge"], sort=False)["score"].transform("mean")
    ss = (dev * dev).groupby([diff[k] for k in keys], sort=False).sum()
    out = []
    for key, value in ss.items():
        key = key if isinstance(key, tuple) else (key,)
        if value <= _EXACT_TOL * size:
            out.append((str(key[0]), str(key[1]) if len(key) > 1 else ""))
    return out


def _exact_rows(sub: pd.DataFrame, group: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows of a group whose differences have no spread: Delta_l is the common difference of judge l, exactly
    (standard error 0, interval [Delta_l, Delta_l]); Delta = mean_l Delta_l; no test applies (NaN)."""
    n_items = int(sub[["scenario", "generation"]].drop_duplicates().shape[0])
    per = sub.groupby(sub["judge"].astype(str))["score"].mean().sort_index()
    rows = []
    for name, est in [*per.items(), (PANEL, float(per.mean()))]:
        rows.append({"group": group, "judge": name, "estimate": float(est), "std_error": 0.0, "df": math.nan,
                     "t": math.nan, "p_value": math.nan, "p_adjusted": math.nan, "lower": float(est),
                     "upper": float(est), "verdict": EXACT, "n_items": n_items})
    k = len(per)
    tests = [{"group": group, "test": t, "statistic": math.nan, "df1": df1, "df2": math.nan, "p_value": math.nan,
              "p_chisq": math.nan} for t, df1 in (("panel_mean", 1), ("equal_drift", k - 1), ("no_drift", k))]
    return rows, tests


def _zero_residual_groups(diff: pd.DataFrame, groups: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The ``groups`` whose differences have no residual variation: within every (scenario, generation) cell
    they differ only by a constant judge offset (the REML backend's test, RSS <= 1e-12 x within-cell SS)."""
    from cjstats.stats import build_stats

    out = []
    for u in build_stats(diff).units:
        key = (str(u.model), "" if u.criterion is None else str(u.criterion))
        if key in groups:
            rss, within = u.within_cell_rss()
            if not rss > 1e-12 * within:
                out.append(key)
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
        Per group, ``panel_mean`` (H0: Delta = 0; t^2 on (1, df)), ``equal_drift`` (H0: the Delta_l are equal;
        Wald F, Fai-Cornelius ddf; exact ANOVA F when balanced) and ``no_drift`` (H0: every Delta_l = 0;
        Bonferroni over the other two, ``df2`` NaN): ``statistic, df1, df2, p_value, p_chisq``.
    components : DataFrame
        The variance components of the paired differences (``scenario_judge``: the change of the judge x
        scenario pattern; ``residual``: twice the noise variance of one call).
    fit : VarianceComponents or None
        The fit of the differences (``fit.contrast("gamma[a] - gamma[b]", model=...)`` compares two drifts);
        None when every group's differences have no spread (the drift is exact and nothing is fitted).
    labels : tuple of str
        The names of the two runs.
    adjust : str
        The multiplicity adjustment.
    diagnostics : Mapping
        Item counts; ``exact_groups`` and ``zero_residual_groups`` (the degenerate groups) and ``notes`` (the
        sentences that explain their NaN p-values).
    """

    drift: pd.DataFrame
    tests: pd.DataFrame
    components: pd.DataFrame
    fit: VarianceComponents | None
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
        exact = (self.drift["verdict"] == EXACT) & (self.drift["estimate"] != 0)
        d = self.drift[(self.drift["judge"] != PANEL) & ((self.drift["p_adjusted"] < 1 - self.ci_level) | exact)]
        multi = self.drift["group"].nunique() > 1
        return [f"{g}{_SEP}{j}" if multi else str(j) for g, j in zip(d["group"], d["judge"])]

    def as_text(self) -> str:
        from cjstats.results.format import P_COLUMNS, format_frame

        t = self.tests.copy()
        lines = [f"Judge drift, {self.labels[1]} - {self.labels[0]} ({self.method}; p adjusted: {self.adjust})", "",
                 format_frame(self.drift.drop(columns=["ci_level", "method"]), na="-").to_string(index=False), "",
                 "Global tests (no_drift: Bonferroni over panel_mean and equal_drift)",
                 format_frame(t, na="-", p_columns=(*P_COLUMNS, "p_chisq")).to_string(index=False)]
        flagged = self.flagged()
        lines += ["", f"drifted at level {1 - self.ci_level:g}: {', '.join(flagged) if flagged else 'none'}"]
        lines += [str(n) for n in self.diagnostics.get("notes", ())]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.as_text()


def _wald(est: np.ndarray, cov: np.ndarray) -> tuple[float, int]:
    """W = est' cov^+ est and the rank of cov."""
    w, v = np.linalg.eigh((cov + cov.T) / 2)
    keep = w > w.max() * 1e-10 if w.size and w.max() > 0 else np.zeros(w.size, bool)
    z = v[:, keep].T @ est
    return float(np.sum(z * z / w[keep])), int(keep.sum())


def _fai_cornelius_ddf(nu: np.ndarray) -> float:
    """Denominator df of a q-df Wald F from the Satterthwaite dfs nu_i of its q decorrelated contrasts (Fai and
    Cornelius 1996, as lmerTest's ``get_Fstat_ddf``): E = sum nu_i / (nu_i - 2), ddf = 2E / (E - q); the common
    value when the nu_i are equal (then F is exact in a balanced table), 2 when some nu_i <= 2."""
    nu = np.asarray(nu, dtype=np.float64)
    if nu.size == 1:
        return float(nu[0])
    if np.all(np.abs(np.diff(nu)) < 1e-8):
        return float(nu.mean())
    if np.any(nu <= 2) or not np.all(np.isfinite(nu)):
        return 2.0 if np.all(np.isfinite(nu)) else math.inf
    e = float(np.sum(nu / (nu - 2.0)))
    return 2.0 * e / (e - nu.size)


def _global_tests(fit: VarianceComponents, pc: Any, cells: np.ndarray, panel: Mapping[str, Any], *, group: str,
                  model: str, criterion: str | None) -> list[dict[str, Any]]:
    """``panel_mean`` (t^2 of Delta on its df), ``equal_drift`` (multi-df Wald F, Fai-Cornelius ddf) and
    ``no_drift`` (Bonferroni over the two: p = min(1, 2 min(p_panel, p_equal))); module docstring."""
    k = cells.shape[0]
    center = np.eye(k) - 1.0 / k
    lg = center @ cells                                   # rows: gamma_l - mean gamma, rank k - 1
    w, v = np.linalg.eigh(lg @ pc.cov @ lg.T)
    keep = w > (w.max() * 1e-10 if w.size and w.max() > 0 else np.inf)
    rows_ = v[:, keep].T @ lg                              # decorrelated contrasts, variances w[keep]
    q = int(keep.sum())
    t2, nu = [], []
    for row in rows_:
        r = fit.contrast(row, model=model, criterion=criterion, name="equal_drift")
        t2.append(r.statistic ** 2)
        nu.append(r.df)
    out = []
    p_eq = f_eq = ddf = w_eq = math.nan
    if q:
        w_eq = float(np.sum(t2))
        f_eq = w_eq / q
        ddf = _fai_cornelius_ddf(np.array(nu))
        p_eq = float(_dist.f_sf(f_eq, q, ddf)) if math.isfinite(ddf) else float(_dist.chi2_sf(w_eq, q))
    t_p, df_p = float(panel["t"]), float(panel["df"])
    p_pan = float(panel["p_value"])
    out.append({"group": group, "test": "panel_mean", "statistic": t_p ** 2, "df1": 1, "df2": df_p,
                "p_value": p_pan, "p_chisq": float(_dist.chi2_sf(t_p ** 2, 1))})
    out.append({"group": group, "test": "equal_drift", "statistic": f_eq, "df1": q, "df2": ddf, "p_value": p_eq,
                "p_chisq": float(_dist.chi2_sf(w_eq, q)) if q else math.nan})
    w_all, rank = _wald(cells @ pc.estimate, cells @ pc.cov @ cells.T)
    p_all = min(1.0, 2.0 * min(p_pan, p_eq)) if q else p_pan
    out.append({"group": group, "test": "no_drift", "statistic": w_all / rank if rank else math.nan,
                "df1": rank, "df2": math.nan, "p_value": p_all,
                "p_chisq": float(_dist.chi2_sf(w_all, rank)) if rank else math.nan})
    return out


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
        Names of the two runs, for the tables: two distinct non-empty strings (a string such as "may" is
        refused, since it would iterate to its letters).
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
    names = _check_labels(labels)
    level = resolve_ci_level(ci_level)
    fb, fa = _as_frame(before, "before"), _as_frame(after, "after")
    diff = _differences(fb, fa, unshared=unshared, by_model=by_model)
    has_crit = "criterion" in diff.columns
    gkey = diff["model"].astype(str) + "\0" + (diff["criterion"].astype(str) if has_crit else "")
    size = float(np.sum(fb["score"].to_numpy(float) ** 2) + np.sum(fa["score"].to_numpy(float) ** 2))
    exact = _exact_groups(diff, size)
    notes: list[str] = []
    rows, tests = [], []
    what = f"the differences {names[1]} - {names[0]}"

    def where(keys: list[tuple[str, str]]) -> str:
        groups = [_group_name(m, c, by_model=by_model, has_criterion=has_crit) for m, c in keys]
        return "" if groups == ["all"] else f" in group{'s' if len(groups) > 1 else ''} {', '.join(groups)}"

    if exact:
        note = (f"{what[0].upper()}{what[1:]} have no spread within any judge{where(exact)} (each judge changed "
                f"by the same amount on every anchor item), so the drift is exact: standard error 0, no test "
                f"applies (p-values NaN), rows marked '{EXACT}'.")
        notes.append(note)
        warn(f"judge_drift: {note}", stacklevel=2)
        for mod, crit in exact:
            sub = diff[gkey == f"{mod}\0{crit}"]
            r_, t_ = _exact_rows(sub, _group_name(mod, crit, by_model=by_model, has_criterion=has_crit))
            rows += r_
            tests += t_
    keep = ~gkey.isin([f"{m}\0{c}" for m, c in exact])
    fit = None
    flat: list[tuple[str, str]] = []
    if keep.any():
        diff_fit = diff[keep]
        flat = _zero_residual_groups(diff_fit, {(str(m), str(c)) for m, c in
                                                zip(diff_fit["model"], diff_fit["criterion"] if has_crit
                                                    else [""] * len(diff_fit))})
        if flat and method == "reml":
            raise CjstatsError(f"{what[0].upper()}{what[1:]} have no residual variation{where(flat)}: on every "
                               f"anchor item the judges' changes differ by the same constants, so REML is "
                               f"undefined; method='anova' (every judge on every item) tests the changes against "
                               f"the spread between items.")
        if flat:
            note = (f"{what[0].upper()}{what[1:]} have no residual variation{where(flat)}: on every anchor item the "
                    f"judges' changes differ by the same constants, so the judges moved by exactly different "
                    f"amounts; the per-judge and panel tests use the spread between items, and equal_drift and "
                    f"no_drift have no p-value (NaN).")
            notes.append(note)
            warn(f"judge_drift: {note}", stacklevel=2)
        fit = estimate(diff_fit, method, ci_level=level, **options)
    alpha = 1.0 - level
    for gk, pc in ((fit.covariance or {}) if fit is not None else {}).items():
        mod, _, crit = str(gk).partition(" / ")
        group = _group_name(mod, crit, by_model=by_model, has_criterion=fit.has_criterion)
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
        g_tests = _global_tests(fit, pc, cmat[:k], grp_rows[k], group=group, model=mod, criterion=crit or None)
        if (str(mod), str(crit)) in flat:       # no within-item error: the judge contrasts are exact
            for t in g_tests:
                if t["test"] != "panel_mean":
                    t.update(statistic=math.nan, df2=math.nan, p_value=math.nan, p_chisq=math.nan,
                             df1=k - 1 if t["test"] == "equal_drift" else k)
        tests += g_tests
    out = pd.DataFrame(rows)
    out["ci_level"] = level
    out["method"] = fit.method if fit is not None else method
    if fit is not None:
        comps = fit.components.copy()
    else:
        from cjstats.results.components import COMPONENT_COLUMNS

        comps = pd.DataFrame(columns=list(COMPONENT_COLUMNS))
    diag = {"n_pairs": int(len(diff)), "n_items_before": int(fb[["model", "scenario", "generation"]]
                                                               .drop_duplicates().shape[0]),
            "n_items_after": int(fa[["model", "scenario", "generation"]].drop_duplicates().shape[0]),
            "exact_groups": tuple(_group_name(m, c, by_model=by_model, has_criterion=has_crit) for m, c in exact),
            "zero_residual_groups": tuple(_group_name(m, c, by_model=by_model, has_criterion=has_crit)
                                          for m, c in flat),
            "notes": tuple(notes)}
    return DriftResult(drift=out[list(DRIFT_COLUMNS)], tests=pd.DataFrame(tests)[list(DRIFT_TEST_COLUMNS)],
                       components=comps, fit=fit, labels=names, method=str(out["method"].iloc[0]),
                       ci_level=level, adjust=adjust, diagnostics=diag)
