r"""Joint method-of-moments fit of several models on a complete, balanced table (model x scenario x judge).

Three-factor mixed ANOVA: model p fixed (P levels), scenario i random (n), judge l fixed (K), generation j
random and nested in model x scenario (m per cell). With G the grand mean and dotted means over the dropped
indices (Y_p, Y_i, Y_pi, Y_pij, Y_l, Y_pl):

    SS_M  = nmK sum_p (Y_p - G)^2                               df P - 1
    SS_S  = PmK sum_i (Y_i - G)^2                               df n - 1
    SS_MS = mK sum_pi (Y_pi - Y_p - Y_i + G)^2                  df (P - 1)(n - 1)
    SS_G  = K sum_pij (Y_pij - Y_pi)^2                          df P n (m - 1)
    SS_J  = Pnm sum_l (Y_l - G)^2                               df K - 1
    SS_JM = nm sum_pl (Y_pl - Y_p - Y_l + G)^2                  df (P - 1)(K - 1)
    SS_W  = the rest                                            df P (nm - 1)(K - 1)

Expected mean squares in the unrestricted model (the one lme4 fits):

    E MS_W = s2_eps                 E MS_G = s2_eps + K s2_beta
    E MS_MS = s2_eps + K s2_beta + mK s2_ms            E MS_S = E MS_MS + PmK s2_alpha
    E MS_JM = s2_eps + nm sum_pl (gamma p)_pl^2 / ((P - 1)(K - 1))
    E MS_J = s2_eps + Pnm sum_l gamma_l^2 / (K - 1)

so ``scenario`` = (MS_S - MS_MS)/(PmK), ``model_scenario`` = (MS_MS - MS_G)/(mK) (m = 1: (MS_MS - MS_W)/K,
holding s2_ms + s2_beta), ``generation`` = (MS_G - MS_W)/K, ``residual`` = MS_W,
``judge_panel`` = (K - 1)(MS_J - MS_W)/(K P nm) (the paper's App. C correction on the pooled table),
``judge_model`` panel view = (P - 1)(K - 1)(MS_JM - MS_W)/(PK nm) (mean of (gamma p)^2 over the P x K table,
bias-corrected like ``judge_panel``), population view = (MS_JM - MS_W)/(nm); ``judge_population`` (judges and
judge x model random) = (MS_J - MS_JM)/(Pnm). Intervals reuse the per-model backend's: MLS for differences
of mean squares, exact chi-square for the residual, noncentral chi-square inversion (of SS/MS_W) for the
panel views. The judge x model test is F = MS_JM/MS_W on ((P - 1)(K - 1), P(nm - 1)(K - 1)) df.

Agreement with the per-model ANOVA (exact identities, tested): SS_W is the sum of the per-model SS_W, so the
joint ``residual`` is the pooled per-model residual; each ``mu`` row is the per-model ANOVA's ``mu`` row; the
mean over models of the per-model raw ``judge_panel`` equals joint raw ``judge_panel`` + raw ``judge_model``
(panel), and the mean of the per-model raw ``scenario`` equals joint raw ``scenario`` + raw ``model_scenario``.

Contrasts. Var(sum c_pl Y_pl) = A (MS_S - MS_MS)/(PnmK) + B (MS_MS - MS_W)/(nmK) + C MS_W/(nm) with
A = (sum c)^2, B = sum_p (sum_l c_pl)^2, C = sum c^2 (panel view); the population view adds
D (MS_J - MS_JM)/(Pnm) + C (MS_JM - MS_W)/(nm) with D = sum_l (sum_p c_pl)^2 (each added variance truncated
at 0). Degrees of freedom: Satterthwaite over the mean squares, which gives exactly (P - 1)(n - 1) for a
difference of two model means (the paired t on per-scenario means when P = 2) and P(nm - 1)(K - 1) for an
interaction contrast (self-preference).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special

from cjstats import _dist
from cjstats._drop import account_for_drop, resolve_max_drop
from cjstats._validate import check_choice
from cjstats.results.components import ComponentRow
from cjstats.results.contrast import JointCovariance
from cjstats.estimators.joint._joint import (
    JOINT_LABEL, JointFit, check_residual, components_frame, joint_stats, mls_row,
)
from cjstats.estimators.anova import chi2_interval
from cjstats.estimators.intervals import noncentral_chi2_interval
from cjstats.exceptions import CjstatsError
from cjstats.io.scores import Scores
from cjstats.stats import JointBalanced, build_stats

__all__ = ["JointMeanSquares", "fit_joint"]

_NAN = float("nan")


class JointMeanSquares:
    """Sums of squares and means of a balanced joint table (see the module docstring).

    Built from the joint statistics' balanced view (:class:`cjstats.stats.JointBalanced`: per-model and
    per-(model, scenario) means, the judge x model means and the pooled per-model generation and residual sums
    of squares), or with :meth:`from_array` from a dense (P, n, m, K) array.
    """

    def __init__(self, b: JointBalanced) -> None:
        p, n, m, k = b.p, b.n, b.m, b.k
        self.p, self.n, self.m, self.k = p, n, m, k
        y_p = np.asarray(b.model_means, dtype=np.float64)
        y_pi = np.asarray(b.scenario_means, dtype=np.float64)
        y_pl = np.asarray(b.cell_means, dtype=np.float64)
        g = float(y_p.mean())
        y_i = y_pi.mean(axis=0)
        y_l = y_pl.mean(axis=0)
        self.grand_mean = g
        self.model_means = y_p
        self.cell_means = y_pl
        self.scenario_means = y_pi  # (P, n): per-model scenario means
        self.ss = {
            "M": n * m * k * float(((y_p - g) ** 2).sum()),
            "S": p * m * k * float(((y_i - g) ** 2).sum()),
            "MS": m * k * float(((y_pi - y_p[:, None] - y_i[None, :] + g) ** 2).sum()),
            "G": float(b.ss_generation),
            "J": p * n * m * float(((y_l - g) ** 2).sum()),
            "JM": n * m * float(((y_pl - y_p[:, None] - y_l[None, :] + g) ** 2).sum()),
            # residual of the per-model crossed fits X - Y_pij - Y_pl + Y_p, pooled over models
            "W": float(b.ss_residual),
        }
        self.df = {"M": p - 1, "S": n - 1, "MS": (p - 1) * (n - 1), "G": p * n * (m - 1), "J": k - 1,
                   "JM": (p - 1) * (k - 1), "W": p * (n * m - 1) * (k - 1)}
        self.ms = {key: (self.ss[key] / self.df[key] if self.df[key] > 0 else _NAN) for key in self.ss}

    @classmethod
    def from_array(cls, y: np.ndarray) -> JointMeanSquares:
        """The mean squares of a dense (P, n, m, K) array (the definitions, summed directly)."""
        y = np.asarray(y, dtype=np.float64)
        p, n, m, k = y.shape
        y_pij = y.mean(axis=3)
        y_pi = y.mean(axis=(2, 3))
        y_pl = y.mean(axis=(1, 2))
        y_p = y.mean(axis=(1, 2, 3))
        r = y - y_pij[..., None] - (y_pl - y_p[:, None])[:, None, None, :]
        return cls(JointBalanced(p=p, n=n, m=m, k=k, model_means=y_p, scenario_means=y_pi, cell_means=y_pl,
                                 ss_generation=k * float(((y_pij - y_pi[:, :, None]) ** 2).sum()),
                                 ss_residual=float(np.einsum("pijl,pijl->", r, r))))


def _t_ppf(p: float, df: float) -> float:
    return float(special.stdtrit(df, p))


def _truncate(raw: float) -> tuple[float, bool]:
    return (0.0, True) if raw < 0 else (raw, False)


def _panel_row(component: str, ss: float, df: int, ms_w: float, df_w: int, scale_n: float, level: float,
               note: str = "") -> ComponentRow:
    """Fixed-effects 'mean square' (sum of squared effects / count) with its noncentral chi-square interval.

    raw = (SS - df MS_W)/scale_n; SS/s2_eps ~ chi2'(df, lambda) with lambda = scale_n * value / s2_eps.
    """
    raw = (ss - df * ms_w) / scale_n
    est, boundary = _truncate(raw)
    if not ms_w > 0:
        return ComponentRow(component, est, _NAN, _NAN, _NAN, "noncentral chi-square inversion", "panel", raw,
                            boundary, True, "no residual variance: the interval is undefined")
    lam_lo, lam_hi = noncentral_chi2_interval(ss / ms_w, df, level)
    scale = ms_w / scale_n
    lam_hat = max(0.0, ss / ms_w - df)
    var1 = 2 * ms_w**2 * (df + 2 * lam_hat) / df**2
    se = df / scale_n * math.sqrt(var1 + 2 * ms_w**2 / df_w)
    return ComponentRow(component, est, lam_lo * scale, lam_hi * scale, se, "noncentral chi-square inversion",
                        "panel", raw, boundary, True, note)


def _rows(t: JointMeanSquares, level: float, models: tuple[str, ...]) -> list[tuple[str, ComponentRow]]:
    p, n, m, k = t.p, t.n, t.m, t.k
    ms, df, ss = t.ms, t.df, t.ss
    nm = n * m
    rows: list[tuple[str, ComponentRow]] = []
    a = (1 - level) / 2
    tq = _t_ppf(1 - a, n - 1)
    for q, name in enumerate(models):
        s_q = t.scenario_means[q]
        ms_s_q = m * k * float(((s_q - s_q.mean()) ** 2).sum()) / (n - 1)
        se = math.sqrt(ms_s_q / (nm * k))
        g = float(t.model_means[q])
        rows.append((name, ComponentRow("mu", g, g - tq * se, g + tq * se, se, "t (per-model MS_S)", "panel", g)))
    J = JOINT_LABEL
    rows.append((J, mls_row("scenario", 1 / (p * m * k), ms["S"], df["S"], ms["MS"], df["MS"], level)))
    if m > 1:
        rows.append((J, mls_row("model_scenario", 1 / (m * k), ms["MS"], df["MS"], ms["G"], df["G"], level)))
        rows.append((J, mls_row("generation", 1 / k, ms["G"], df["G"], ms["W"], df["W"], level)))
    else:
        rows.append((J, mls_row("model_scenario", 1 / k, ms["MS"], df["MS"], ms["W"], df["W"], level,
                                 note="m = 1: holds s2_model_scenario + s2_generation (generation not separable)")))
        rows.append((J, ComponentRow.not_identifiable(
            "generation", "not identifiable: one generation per (model, scenario) (m = 1)")))
    lo, hi = chi2_interval(ss["W"], df["W"], level)
    rows.append((J, ComponentRow("residual", ms["W"], lo, hi, ms["W"] * math.sqrt(2 / df["W"]),
                                 "chi-square (exact)", "panel", ms["W"])))
    rows.append((J, _panel_row("judge_panel", ss["J"], df["J"], ms["W"], df["W"], p * nm * k, level)))
    rows.append((J, mls_row("judge_population", 1 / (p * nm), ms["J"], df["J"], ms["JM"], df["JM"], level,
                             view="population", note=f"judges random: {k} judges give {k - 1} degrees of freedom")))
    rows.append((J, _panel_row("judge_model", ss["JM"], df["JM"], ms["W"], df["W"], p * k * nm, level)))
    rows.append((J, mls_row("judge_model", 1 / nm, ms["JM"], df["JM"], ms["W"], df["W"], level, view="population")))
    return rows


def _joint_drop_records(frame: pd.DataFrame, kept: set, criterion: str | None) -> list[dict[str, Any]]:
    """Per model: the rows, cells and scenarios of the table, and how many of them the scenarios not kept hold."""
    out = ~frame["scenario"].isin(kept).to_numpy(bool)
    recs = []
    for model, g in frame.assign(_out=out).groupby("model", sort=False, observed=True):
        cells = g.drop_duplicates(["scenario", "generation"])
        scen = g.drop_duplicates("scenario")
        recs.append({"model": str(model), "criterion": criterion,
                     "dropped_rows": int(g["_out"].sum()), "n_rows": len(g),
                     "dropped_cells": int(cells["_out"].sum()), "n_cells": len(cells),
                     "dropped_scenarios": int(scen["_out"].sum()), "n_scenarios": len(scen)})
    return recs


def fit_joint(source: Any, *, ci_level: float, incomplete: Literal["error", "drop"] = "error",
              max_drop: float | None = None) -> JointFit:
    """Joint ANOVA fit (module docstring) of a complete, balanced multi-model table, from its joint statistics.

    ``source`` is a table or a joint unit of :func:`cjstats.stats.build_stats`. ``incomplete="drop"`` drops the
    scenarios that are not complete for every model and judge; that needs the score rows (a table), since
    statistics summed over every scenario cannot be split again. What it drops (rows, cells and scenarios per
    model) is in the fit's ``dropped`` table and in one warning, and a drop of more than ``max_drop`` of a
    model's scenarios (default 0.5) is refused (:func:`cjstats._drop.account_for_drop`).
    """
    check_choice("incomplete", incomplete, ("error", "drop"), caller="fit_joint")
    limit = resolve_max_drop(max_drop, caller="fit_joint")
    js, scores = joint_stats(source, "compare_models")
    if not js.presence().all(axis=0).any():
        raise CjstatsError("No scenario was scored for every model, so the ANOVA joint fit has nothing to pair. "
                           "Use method='reml', which handles models that do not share scenarios.")
    keep, _, _ = js.complete_scenarios()
    n_bad = int((~keep).sum())
    dropped = None
    if incomplete == "drop":
        if n_bad and scores is None:
            raise CjstatsError(f"incomplete='drop' needs the score rows: {n_bad} scenarios are not complete for "
                               f"every model and judge, and statistics summed over all scenarios cannot be split. "
                               f"Pass the table itself, or use method='reml'.")
        if scores is None:   # nothing to drop: every model has every scenario complete
            records = [{"model": u.model, "criterion": js.criterion, "dropped_rows": 0, "n_rows": int(u.n_obs),
                        "dropped_cells": 0, "n_cells": int(u.n_cells), "dropped_scenarios": 0,
                        "n_scenarios": u.n_scenarios} for u in js.units]
        else:
            frame = scores.to_frame()
            kept = set(js.scenario_labels[keep].tolist())
            records = _joint_drop_records(frame, kept, js.criterion)
        dropped = account_for_drop(records, max_drop=limit, unit="model", stacklevel=5,
                                   what="the scenarios not complete for every model and judge")
        if n_bad:
            if int(keep.sum()) < 2:
                raise CjstatsError("Fewer than 2 scenarios are complete for every model and judge, so the ANOVA "
                                   "joint fit cannot estimate the scenario variance. Use method='reml'.")
            js = build_stats(Scores(frame[frame["scenario"].isin(kept)].reset_index(drop=True),
                                    provenance=dict(scores.provenance)), unit=("criterion",)).units[0]
    jb = js.for_joint_anova()
    t = JointMeanSquares(jb)
    check_residual(t.ms["W"], js)
    rows = _rows(t, ci_level, js.models)
    f = t.ms["JM"] / t.ms["W"] if t.ms["W"] > 0 else math.inf
    test = {"test": "F", "statistic": f, "df1": t.df["JM"], "df2": t.df["W"],
            "p_value": float(_dist.f_sf(f, t.df["JM"], t.df["W"]))}
    drop_diag = {"dropped_scenarios": n_bad if incomplete == "drop" else 0, "n_scenarios": t.n}
    diag = {"ms": dict(t.ms), "ss": dict(t.ss), "df": dict(t.df), "n": t.n, "m": t.m, "k": t.k, "p": t.p,
            **drop_diag}
    return JointFit(method="anova", models=js.models, judges=js.judge_labels, cell_means=t.cell_means,
                    components=components_frame(rows, method="anova", ci_level=ci_level),
                    tests={"judge_model": test}, ci_level=ci_level, diagnostics=diag, covariance=JointCovariance.anova(t.p, t.n, t.m, t.k, t.ms, t.df),
                    dropped=dropped)


def fit(stats: Any, *, ci_level: float, seed: int | None = None, rows: Any = None, model_scenario: str = "pooled",
        incomplete: Literal["error", "drop"] = "error", max_drop: float | None = None) -> JointFit:
    """The joint backend protocol (:class:`cjstats.estimators.Backend`, registered in
    :data:`cjstats.estimators.JOINT_BACKENDS`): :func:`fit_joint` of the joint statistics ``stats`` (checked by
    :func:`cjstats.estimators.joint._joint.joint_stats`), with the score rows when ``incomplete="drop"`` needs
    them. The ANOVA is deterministic (``seed`` is unused) and pools the model x scenario variance."""
    if model_scenario != "pooled":   # fit_joint refuses it first, from the capabilities
        raise CjstatsError(f"model_scenario={model_scenario!r} is not fitted by method='anova'; use 'pooled'.")
    from cjstats.estimators.joint._joint import JointSource

    return fit_joint(JointSource(stats, rows), ci_level=ci_level, incomplete=incomplete, max_drop=max_drop)
