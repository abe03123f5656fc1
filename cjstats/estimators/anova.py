r"""Method-of-moments backend: the crossed ANOVA of the paper's Appendix C, with calibrated intervals.

Model (paper Eq. 1, ``eq:model``), per evaluated model:

    X_ijl = mu + alpha_i + beta_ij + gamma_l + eps_ijl,   i = 1..n scenarios, j = 1..m generations, l = 1..K judges

on a balanced, complete design (every judge scores every (scenario, generation) cell once).

Mean squares (App. C, ``app:estimation``; App. G, ``app:anova``), with cell means C_ij, scenario means S_i,
judge means J_l and grand mean G:

    MS_W = sum (X_ijl - C_ij - J_l + G)^2 / ((nm - 1)(K - 1))          E = s2_eps
    MS_G = K sum (C_ij - S_i)^2 / (n(m - 1))                           E = s2_eps + K s2_beta
    MS_S = mK sum (S_i - G)^2 / (n - 1)                                E = s2_eps + K s2_beta + mK s2_alpha
    MS_J = nm sum (J_l - G)^2 / (K - 1)                                E = s2_eps + nm sum(gamma_l^2)/(K - 1)

Estimators: s2_eps = MS_W; s2_beta = (MS_G - MS_W)/K; s2_alpha = (MS_S - MS_G)/(mK) (with m = 1:
(MS_S - MS_W)/K, which holds s2_alpha + s2_beta); gamma_l = J_l - G; and the paper's corrected judge variance

    judge_panel = (1/K) sum gamma_l^2 - (MS_W/(nm)) (K - 1)/K  =  (K - 1)(MS_J - MS_W)/(K nm)
    judge_population = (MS_J - MS_W)/(nm)

Negative estimates are truncated to zero (the raw value is kept, ``at_boundary=True``).

Intervals (two-sided, level 1 - 2a):

- residual: exact chi-square, SS_W / chi2_{1-a, df_W} .. SS_W / chi2_{a, df_W}.
- scenario, generation, judge_population (differences of mean squares c1 MS_1 - c2 MS_2): the modified
  large-sample (MLS) interval of Ting, Burdick, Graybill, Jeyaratnam & Lu (1990), or Satterthwaite's.
- judge_panel (judges fixed): SS_J / s2_eps is noncentral chi2(K - 1, lambda) with
  lambda = nm sum(gamma_l^2)/s2_eps = nm K judge_panel / s2_eps. The interval inverts the noncentral
  chi-square of SS_J / MS_W for lambda and maps it back, judge_panel = lambda MS_W / (nm K). MS_W enters
  only at second order, because lambda MS_W ~ SS_J. (Inverting the noncentral F of MS_J/MS_W gives an exact
  interval for the *ratio* lambda, but multiplying it back by MS_W counts the denominator's noise twice: in
  simulation at the paper's design it covered 98.1%, not 95%. The F ratio is still reported as the test.)
- mu: t interval G +- t_{n-1} sqrt(MS_S/(nmK)) (Proposition 1 with K = K_tot: the panel mean).
- gamma_l: t interval with df_W and variance s2_eps (K - 1)/(K n m).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from scipy import special

from cjstats import _dist
from cjstats._drop import account_for_drop, check_max_drop, resolve_max_drop
from cjstats._validate import check_choice
from cjstats.results.components import ComponentRow, ParameterCovariance, VarianceComponents
from cjstats.estimators.base import (M1_NOTE, GroupFit, as_stats, fit_groups, location_params,
                                     resolve_scenario_judge)
from cjstats.estimators.intervals import noncentral_chi2_interval, noncentral_f_interval
from cjstats._warnings import warn
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io.scores import Scores, sparse_judge_message
from cjstats.stats import CellStats, ScoreStats
from cjstats.stats.scenario_judge import ScenarioJudgeStats
from cjstats.stats.views import MeanSquares

__all__ = [
    "MeanSquares", "mean_squares", "mls_interval", "satterthwaite_interval", "chi2_interval",
    "noncentral_f_interval", "noncentral_chi2_interval", "judge_f_test", "fit", "location_covariance",
    "mls_interval_general", "satterthwaite_general", "scenario_judge_ss", "scenario_judge_mean_square",
]

Interval = Literal["mls", "satterthwaite"]
_NAN = float("nan")


# ---------------------------------------------------------------------------------------- mean squares
# MeanSquares lives in the statistics layer (cjstats.stats.views: CellStats.for_anova builds it without rows);
# mean_squares below computes it from a dense balanced array (the reference the view is tested against).


def mean_squares(y: np.ndarray) -> MeanSquares:
    """Mean squares of a balanced (n scenarios, m generations, K judges) array.

    SS_S = mK sum_i (S_i - G)^2, SS_G = K sum_ij (C_ij - S_i)^2, SS_J = nm sum_l (J_l - G)^2 and
    SS_W = sum_ijl (X_ijl - C_ij - J_l + G)^2 (paper App. C, ``app:estimation``).

    The data are read about three times: cell sums and judge sums are two einsum reductions over the
    (nm, K) view and sum(X^2) one dot product; then SS_W = SS_T - SS_cells - SS_J. That identity loses
    relative precision of about eps * sum(X^2) / SS_W, so when SS_W < 1e-5 sum(X^2) (near-additive data) the
    residuals are summed directly instead, keeping SS_W accurate to about 1e-11 relative in every case.
    """
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 3:
        raise CjstatsError(f"mean_squares needs an (n, m, K) array. Got shape {y.shape} instead.")
    n, m, k = y.shape
    y2 = np.ascontiguousarray(y).reshape(n * m, k)
    cell = np.einsum("ij->i", y2) / k           # C_ij, flattened (einsum beats BLAS on a skinny matrix)
    judge = np.einsum("ij->j", y2) / (n * m)    # J_l
    scen = cell.reshape(n, m).mean(axis=1)      # S_i
    g = float(scen.mean())                      # G
    ds, dj = scen - g, judge - g
    dc = cell.reshape(n, m) - scen[:, None]
    dcell = cell - g
    flat = y2.reshape(-1)
    sum_sq = float(flat @ flat)
    ss_cells = float(k * (dcell @ dcell))
    ss_j = float(n * m * (dj @ dj))
    ss_w = sum_sq - n * m * k * g * g - ss_cells - ss_j
    if not ss_w > 1e-5 * sum_sq:
        resid = y2 - cell[:, None]
        resid -= dj                             # X - C_ij - (J_l - G)
        ss_w = float(np.einsum("ij,ij->", resid, resid))
    return MeanSquares(
        n=n, m=m, k=k, grand_mean=g, judge_means=judge,
        ss_scenario=float(m * k * (ds @ ds)), ss_generation=float(k * np.einsum("ij,ij->", dc, dc)),
        ss_judge=ss_j, ss_residual=ss_w,
    )


# --------------------------------------------------------------------------------------------- intervals
# scipy.special's ufuncs give the same quantiles as scipy.stats without its per-call dispatch overhead.
def _chi2_ppf(p: float, df: float) -> float:
    return float(special.chdtri(df, 1.0 - p))


def _f_ppf(p: float, df1: float, df2: float) -> float:
    return float(special.fdtri(df1, df2, p))


def _t_ppf(p: float, df: float) -> float:
    return float(special.stdtrit(df, p))


def chi2_interval(ss: float, df: int, level: float) -> tuple[float, float]:
    """Exact interval for a variance from SS ~ sigma^2 chi2_df: (SS/chi2_{1-a}, SS/chi2_{a})."""
    a = (1.0 - level) / 2.0
    return ss / _chi2_ppf(1 - a, df), ss / _chi2_ppf(a, df)


def mls_interval(c1: float, ms1: float, df1: float, c2: float, ms2: float, df2: float,
                 level: float) -> tuple[float, float]:
    """Modified large-sample interval for theta = c1 E[MS_1] - c2 E[MS_2] (c1, c2 > 0).

    Ting, Burdick, Graybill, Jeyaratnam & Lu (1990), J. Statist. Comput. Simul. 35:135-143; Burdick &
    Graybill (1992), *Confidence Intervals on Variance Components*, §3.3. With one-sided level a:

        L = theta_hat - sqrt(G1^2 c1^2 MS1^2 + H2^2 c2^2 MS2^2 + G12 c1 c2 MS1 MS2)
        U = theta_hat + sqrt(H1^2 c1^2 MS1^2 + G2^2 c2^2 MS2^2 + H12 c1 c2 MS1 MS2)

    with G_i = 1 - 1/F_{1-a; df_i, inf}, H_i = 1/F_{a; df_i, inf} - 1,
    G12 = ((F_{1-a; df1, df2} - 1)^2 - G1^2 F_{1-a}^2 - H2^2) / F_{1-a; df1, df2} and
    H12 = ((1 - F_{a; df1, df2})^2 - H1^2 F_a^2 - G2^2) / F_{a; df1, df2}, where F_{p; ...} is the quantile at
    probability p. The bounds are not truncated here.
    """
    a = (1.0 - level) / 2.0
    f1_hi, f1_lo = _chi2_ppf(1 - a, df1) / df1, _chi2_ppf(a, df1) / df1
    f2_hi, f2_lo = _chi2_ppf(1 - a, df2) / df2, _chi2_ppf(a, df2) / df2
    g1, h1 = 1 - 1 / f1_hi, 1 / f1_lo - 1
    g2, h2 = 1 - 1 / f2_hi, 1 / f2_lo - 1
    f12_hi, f12_lo = _f_ppf(1 - a, df1, df2), _f_ppf(a, df1, df2)
    g12 = ((f12_hi - 1) ** 2 - g1**2 * f12_hi**2 - h2**2) / f12_hi
    h12 = ((1 - f12_lo) ** 2 - h1**2 * f12_lo**2 - g2**2) / f12_lo
    t1, t2 = c1 * ms1, c2 * ms2
    est = t1 - t2
    vl = g1**2 * t1**2 + h2**2 * t2**2 + g12 * t1 * t2
    vu = h1**2 * t1**2 + g2**2 * t2**2 + h12 * t1 * t2
    return est - math.sqrt(max(vl, 0.0)), est + math.sqrt(max(vu, 0.0))


def mls_interval_general(pos: list[tuple[float, float, float]], neg: list[tuple[float, float, float]],
                         level: float) -> tuple[float, float]:
    """Modified large-sample interval for theta = sum_q c_q E[MS_q] - sum_r c_r E[MS_r] (all c > 0).

    Ting, Burdick, Graybill, Jeyaratnam & Lu (1990); Burdick & Graybill (1992), §3.3, for P positive and Q - P
    negative terms, each given as (c, MS, df). With one-sided level a, G_q = 1 - 1/F_{1-a; n_q, inf},
    H_q = 1/F_{a; n_q, inf} - 1, G_qr and H_qr as in :func:`mls_interval` and, for two terms of the same sign,

        G*_qt = ((1 - 1/F_{1-a; n_q+n_t, inf})^2 (n_q+n_t)^2/(n_q n_t) - G_q^2 n_q/n_t - G_t^2 n_t/n_q)/(P - 1),
        H*_ru = ((1/F_{a; n_r+n_u, inf} - 1)^2 (n_r+n_u)^2/(n_r n_u) - H_r^2 n_r/n_u - H_u^2 n_u/n_r)/(Q - P - 1),

        L = theta_hat - sqrt(sum G_q^2 T_q^2 + sum H_r^2 T_r^2 + sum G_qr T_q T_r + sum_{q<t} G*_qt T_q T_t),
        U = theta_hat + sqrt(sum H_q^2 T_q^2 + sum G_r^2 T_r^2 + sum H_qr T_q T_r + sum_{r<u} H*_ru T_r T_u),

    with T = c MS. With one positive and one negative term it is :func:`mls_interval`. Not truncated.
    """
    a = (1.0 - level) / 2.0

    def gh(df: float) -> tuple[float, float]:
        return 1 - df / _chi2_ppf(1 - a, df), df / _chi2_ppf(a, df) - 1

    tp = [(c * ms, df) + gh(df) for c, ms, df in pos]
    tn = [(c * ms, df) + gh(df) for c, ms, df in neg]
    est = sum(t for t, *_ in tp) - sum(t for t, *_ in tn)
    vl = sum(g * g * t * t for t, _, g, _ in tp) + sum(h * h * t * t for t, _, _, h in tn)
    vu = sum(h * h * t * t for t, _, _, h in tp) + sum(g * g * t * t for t, _, g, _ in tn)
    for tq, dq, gq, hq in tp:
        for tr, dr, gr, hr in tn:
            f_hi, f_lo = _f_ppf(1 - a, dq, dr), _f_ppf(a, dq, dr)
            vl += ((f_hi - 1) ** 2 - gq**2 * f_hi**2 - hr**2) / f_hi * tq * tr
            vu += ((1 - f_lo) ** 2 - hq**2 * f_lo**2 - gr**2) / f_lo * tq * tr

    def same_sign(terms: list, upper_tail: bool) -> float:
        out = 0.0
        if len(terms) < 2:
            return out
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                ti, di, gi, hi = terms[i]
                tj, dj, gj, hj = terms[j]
                dsum = di + dj
                if upper_tail:
                    lead = (1 - dsum / _chi2_ppf(1 - a, dsum)) ** 2
                    xi, xj = gi, gj
                else:
                    lead = (dsum / _chi2_ppf(a, dsum) - 1) ** 2
                    xi, xj = hi, hj
                coef = (lead * dsum**2 / (di * dj) - xi**2 * di / dj - xj**2 * dj / di) / (len(terms) - 1)
                out += coef * ti * tj
        return out

    vl += same_sign(tp, True)
    vu += same_sign(tn, False)
    return est - math.sqrt(max(vl, 0.0)), est + math.sqrt(max(vu, 0.0))


def satterthwaite_interval(c1: float, ms1: float, df1: float, c2: float, ms2: float, df2: float,
                           level: float) -> tuple[float, float]:
    """Satterthwaite interval for theta = c1 E[MS_1] - c2 E[MS_2]: nu theta_hat / chi2_{1-a..a, nu}.

    nu = theta_hat^2 / ((c1 MS1)^2/df1 + (c2 MS2)^2/df2). Undefined (NaN) when theta_hat <= 0.
    """
    est = c1 * ms1 - c2 * ms2
    if not est > 0:
        return _NAN, _NAN
    nu = est**2 / ((c1 * ms1) ** 2 / df1 + (c2 * ms2) ** 2 / df2)
    a = (1.0 - level) / 2.0
    return nu * est / _chi2_ppf(1 - a, nu), nu * est / _chi2_ppf(a, nu)


# ---------------------------------------------------------------------------------------------- F test
def _no_residual(ms: MeanSquares) -> bool:
    """SS_W <= 1e-12 (SS_J + SS_W): the residual is 0 up to rounding (the within-cell scores differ only by a judge
    offset), the rule REML's "no residual variation" uses. An exact judge shift added in floating point leaves
    SS_W ~ 1e-30, whose F ratio ~ 1e33 no distribution function evaluates."""
    return not ms.ss_residual > 1e-12 * (ms.ss_residual + ms.ss_judge)


def judge_f_test(ms: MeanSquares) -> dict[str, float]:
    """F test of the judge main effect (paper App. G, ``app:anova``): F = MS_J/MS_W on (K-1, (nm-1)(K-1)) df
    (infinite when the residual is 0 up to rounding)."""
    f = math.inf if _no_residual(ms) else ms.ms_judge / ms.ms_residual
    return {"F": f, "df1": ms.df_judge, "df2": ms.df_residual, "p_value": float(_dist.f_sf(f, ms.df_judge,
                                                                                           ms.df_residual))}


# ------------------------------------------------------------------------------------------- the fit
def _truncate(raw: float) -> tuple[float, bool]:
    return (0.0, True) if raw < 0 else (raw, False)


def _diff_row(component: str, c1: float, ms1: float, df1: int, c2: float, ms2: float, df2: int,
              level: float, interval: str, note: str = "", view: str = "panel") -> ComponentRow:
    raw = c1 * ms1 - c2 * ms2
    est, boundary = _truncate(raw)
    if interval == "mls":
        lo, hi = mls_interval(c1, ms1, df1, c2, ms2, df2, level)
        method = "MLS (Ting et al. 1990)"
    else:
        lo, hi = satterthwaite_interval(c1, ms1, df1, c2, ms2, df2, level)
        method = "Satterthwaite"
        if math.isnan(lo):
            note = (note + "; " if note else "") + "Satterthwaite interval undefined for a non-positive estimate"
    se = math.sqrt(2 * (c1 * ms1) ** 2 / df1 + 2 * (c2 * ms2) ** 2 / df2)
    return ComponentRow(component, est, max(lo, 0.0) if not math.isnan(lo) else lo,
                        max(hi, 0.0) if not math.isnan(hi) else hi, se, method, view, raw, boundary, True, note)


def scenario_judge_ss(y: np.ndarray) -> float:
    """SS_SJ = m sum_il (X_i.l - X_i.. - X_..l + X_...)^2 of a dense balanced (n, m, K) array (the reference that
    :func:`scenario_judge_mean_square` is tested against, and the fast path of simulation studies)."""
    y = np.asarray(y, dtype=np.float64)
    m = y.shape[1]
    sil = y.mean(axis=1)
    e = sil - sil.mean(axis=1, keepdims=True)
    e -= e.mean(axis=0, keepdims=True)
    return float(m * np.einsum("ij,ij->", e, e))


def scenario_judge_mean_square(sj: ScenarioJudgeStats, n: int, m: int, k: int) -> float | None:
    """SS_SJ = m sum_il (X_i.l - X_i.. - X_..l + X_...)^2 of a balanced complete table, from the scenario x judge
    statistics (None when they do not describe one balanced pattern of n scenarios x m generations x K judges).

    With S_il the scenario x judge sums and T_i the scenario sums (z_i), e_il = S_il/m - T_i/(mK) and
    SS_SJ = m (sum_il e_il^2 - n sum_l ebar_l^2), ebar_l = sum_i e_il/n: quadratic in z_i, so read from
    sum_i z_i z_i' and sum_i z_i (the judge centring of y0 cancels in e_il - ebar_l).
    """
    if sj.count.shape[0] != 1 or int(sj.count[0]) != n or sj.m != m or sj.k != k or not np.all(sj.incidence == 1):
        return None
    sc, zs = sj.zscat[0], sj.zsum[0]
    jl = slice(1 + m, 1 + m + k)
    sum_e2 = (np.trace(sc[jl, jl]) / m**2 - 2.0 * sc[jl, 0].sum() / (m * m * k) + k * sc[0, 0] / (m * k) ** 2)
    ebar = (zs[jl] / m - zs[0] / (m * k)) / n
    return float(max(m * (sum_e2 - n * float(ebar @ ebar)), 0.0))


def _group_rows(ms: MeanSquares, level: float, interval: str, ss_sj: float | None = None
                ) -> tuple[list[ComponentRow], list[dict]]:
    """Component rows and judge offsets of one balanced unit; with ``ss_sj`` (SS of the scenario x judge
    interaction, df (n-1)(K-1)) the model has the ``scenario_judge`` term (module docstring)."""
    n, m, k = ms.n, ms.m, ms.k
    nm = n * m
    a = (1 - level) / 2
    rows: list[ComponentRow] = []
    if ss_sj is not None:
        return _group_rows_sj(ms, level, interval, ss_sj)
    # mu: the panel mean, Var(G) = E[MS_S]/(nmK) (Proposition 1 at K = K_tot)
    se_mu = math.sqrt(ms.ms_scenario / (nm * k))
    t = _t_ppf(1 - a, ms.df_scenario)
    rows.append(ComponentRow("mu", ms.grand_mean, ms.grand_mean - t * se_mu, ms.grand_mean + t * se_mu, se_mu,
                             "t (MS_S)", "panel", ms.grand_mean))
    # scenario and generation
    if m > 1:
        rows.append(_diff_row("scenario", 1 / (m * k), ms.ms_scenario, ms.df_scenario, 1 / (m * k),
                              ms.ms_generation, ms.df_generation, level, interval))
        rows.append(_diff_row("generation", 1 / k, ms.ms_generation, ms.df_generation, 1 / k, ms.ms_residual,
                              ms.df_residual, level, interval))
    else:
        rows.append(_diff_row("scenario", 1 / k, ms.ms_scenario, ms.df_scenario, 1 / k, ms.ms_residual,
                              ms.df_residual, level, interval,
                              note="m = 1: holds sigma2_alpha + sigma2_beta (generation not separable)"))
        rows.append(ComponentRow.not_identifiable("generation", M1_NOTE))
    # residual
    lo, hi = chi2_interval(ms.ss_residual, ms.df_residual, level)
    se_w = ms.ms_residual * math.sqrt(2 / ms.df_residual)
    rows.append(ComponentRow("residual", ms.ms_residual, lo, hi, se_w, "chi-square (exact)", "panel",
                             ms.ms_residual))
    # judge_panel: fixed judges; lambda = nm K judge_panel / s2_eps
    raw_panel = (k - 1) * (ms.ms_judge - ms.ms_residual) / (k * nm)
    est_panel, b_panel = _truncate(raw_panel)
    if not _no_residual(ms):
        f_obs = ms.ms_judge / ms.ms_residual
        lam_lo, lam_hi = noncentral_chi2_interval(ms.ss_judge / ms.ms_residual, ms.df_judge, level)
        scale = ms.ms_residual / (nm * k)
        lam_hat = max(0.0, ms.df_judge * (f_obs - 1))
        var_msj = 2 * ms.ms_residual**2 * (ms.df_judge + 2 * lam_hat) / ms.df_judge**2
        var_msw = 2 * ms.ms_residual**2 / ms.df_residual
        se_panel = (k - 1) / (k * nm) * math.sqrt(var_msj + var_msw)
        rows.append(ComponentRow("judge_panel", est_panel, lam_lo * scale, lam_hi * scale, se_panel,
                                 "noncentral chi-square inversion", "panel", raw_panel, b_panel))
    else:
        rows.append(ComponentRow("judge_panel", est_panel, _NAN, _NAN, _NAN, "noncentral chi-square inversion", "panel",
                                 raw_panel, b_panel, True, "no residual variance: the F ratio is undefined"))
    # judge_population: random judges, (MS_J - MS_W)/(nm) on K-1 df
    rows.append(_diff_row("judge_population", 1 / nm, ms.ms_judge, ms.df_judge, 1 / nm, ms.ms_residual,
                          ms.df_residual, level, interval, view="population",
                          note=f"judges random: {k} judges give {k - 1} degrees of freedom"))
    # judge offsets
    se_g = math.sqrt(ms.ms_residual * (k - 1) / (k * nm))
    tg = _t_ppf(1 - a, ms.df_residual)
    offsets = ms.offsets
    return rows, [{"estimate": float(o), "std_error": se_g, "lower": float(o - tg * se_g),
                   "upper": float(o + tg * se_g), "ci_method": "t (MS_W)"} for o in offsets]


def _group_rows_sj(ms: MeanSquares, level: float, interval: str, ss_sj: float) -> tuple[list[ComponentRow], list[dict]]:
    r"""Rows of the balanced model with the scenario x judge interaction (unrestricted: (alpha gamma)_il iid).

    MS_SJ = SS_SJ/((n-1)(K-1)) and the within-cell residual MS_W' = (SS_W - SS_SJ)/(n(m-1)(K-1)) have
    E[MS_W'] = s2_eps, E[MS_SJ] = s2_eps + m s2_sj, E[MS_G] = s2_eps + K s2_beta, E[MS_J] = s2_eps + m s2_sj +
    nm sum(gamma^2)/(K-1) and E[MS_S] = s2_eps + m s2_sj + K s2_beta + mK s2_alpha, so

        scenario_judge = (MS_SJ - MS_W')/m,   generation = (MS_G - MS_W')/K,
        scenario = (MS_S + MS_W' - MS_G - MS_SJ)/(mK)   (general MLS interval, four mean squares),
        judge_panel = (K-1)(MS_J - MS_SJ)/(K nm),   judge_population = (MS_J - MS_SJ)/(nm),

    and the judge effects are tested against MS_SJ (F = MS_J/MS_SJ on (K-1, (n-1)(K-1)) df); gamma_l has variance
    E[MS_SJ](K-1)/(K nm) with t on (n-1)(K-1) df.
    """
    n, m, k = ms.n, ms.m, ms.k
    nm = n * m
    a = (1 - level) / 2
    df_sj = (n - 1) * (k - 1)
    df_w = n * (m - 1) * (k - 1)
    ss_w = max(ms.ss_residual - ss_sj, 0.0)
    ms_sj, ms_w = ss_sj / df_sj, ss_w / df_w
    rows: list[ComponentRow] = []
    se_mu = math.sqrt(ms.ms_scenario / (nm * k))
    t = _t_ppf(1 - a, ms.df_scenario)
    rows.append(ComponentRow("mu", ms.grand_mean, ms.grand_mean - t * se_mu, ms.grand_mean + t * se_mu, se_mu,
                             "t (MS_S)", "panel", ms.grand_mean))
    c = 1 / (m * k)
    raw = c * (ms.ms_scenario + ms_w - ms.ms_generation - ms_sj)
    est, boundary = _truncate(raw)
    terms_p = [(c, ms.ms_scenario, ms.df_scenario), (c, ms_w, df_w)]
    terms_n = [(c, ms.ms_generation, ms.df_generation), (c, ms_sj, df_sj)]
    if interval == "mls":
        lo, hi = mls_interval_general(terms_p, terms_n, level)
        method, note = "MLS (Ting et al. 1990), four mean squares", ""
    else:
        lo, hi = satterthwaite_general(terms_p + [(-cc, mm, dd) for cc, mm, dd in terms_n], level)
        method = "Satterthwaite"
        note = "Satterthwaite interval undefined for a non-positive estimate" if math.isnan(lo) else ""
    se = math.sqrt(sum(2 * (cc * mm) ** 2 / dd for cc, mm, dd in terms_p + terms_n))
    rows.append(ComponentRow("scenario", est, max(lo, 0.0) if not math.isnan(lo) else lo,
                             max(hi, 0.0) if not math.isnan(hi) else hi, se, method, "panel", raw, boundary, True, note))
    rows.append(_diff_row("generation", 1 / k, ms.ms_generation, ms.df_generation, 1 / k, ms_w, df_w, level, interval))
    rows.append(_diff_row("scenario_judge", 1 / m, ms_sj, df_sj, 1 / m, ms_w, df_w, level, interval,
                          note="residual is the within-cell residual"))
    lo, hi = chi2_interval(ss_w, df_w, level)
    rows.append(ComponentRow("residual", ms_w, lo, hi, ms_w * math.sqrt(2 / df_w), "chi-square (exact)", "panel",
                             ms_w))
    rows.extend(_judge_rows(ms, ms_sj, df_sj, level, interval, n, m, k))
    se_g = math.sqrt(ms_sj * (k - 1) / (k * nm))
    tg = _t_ppf(1 - a, df_sj)
    return rows, [{"estimate": float(o), "std_error": se_g, "lower": float(o - tg * se_g),
                   "upper": float(o + tg * se_g), "ci_method": "t (MS_SJ)"} for o in ms.offsets]


def _judge_rows(ms: MeanSquares, ms_err: float, df_err: int, level: float, interval: str, n: int, m: int,
                k: int) -> list[ComponentRow]:
    """judge_panel and judge_population against the error mean square of the judge effects (MS_W, or MS_SJ
    when the scenario x judge interaction is in the model)."""
    nm = n * m
    rows = []
    raw_panel = (k - 1) * (ms.ms_judge - ms_err) / (k * nm)
    est_panel, b_panel = _truncate(raw_panel)
    if ms_err > 0:
        f_obs = ms.ms_judge / ms_err
        lam_lo, lam_hi = noncentral_chi2_interval(ms.ss_judge / ms_err, ms.df_judge, level)
        scale = ms_err / (nm * k)
        lam_hat = max(0.0, ms.df_judge * (f_obs - 1))
        var_msj = 2 * ms_err**2 * (ms.df_judge + 2 * lam_hat) / ms.df_judge**2
        var_msw = 2 * ms_err**2 / df_err
        se_panel = (k - 1) / (k * nm) * math.sqrt(var_msj + var_msw)
        rows.append(ComponentRow("judge_panel", est_panel, lam_lo * scale, lam_hi * scale, se_panel,
                                 "noncentral chi-square inversion", "panel", raw_panel, b_panel))
    else:
        rows.append(ComponentRow("judge_panel", est_panel, _NAN, _NAN, _NAN, "noncentral chi-square inversion",
                                 "panel", raw_panel, b_panel, True, "no residual variance: the F ratio is undefined"))
    rows.append(_diff_row("judge_population", 1 / nm, ms.ms_judge, ms.df_judge, 1 / nm, ms_err, df_err, level,
                          interval, view="population", note=f"judges random: {k} judges give {k - 1} degrees of freedom"))
    return rows


def satterthwaite_general(terms: list[tuple[float, float, float]], level: float) -> tuple[float, float]:
    """Satterthwaite interval for theta = sum_q c_q E[MS_q] (signed c): nu theta_hat/chi2, NaN when theta_hat <= 0."""
    est = sum(c * ms for c, ms, _ in terms)
    if not est > 0:
        return _NAN, _NAN
    nu = est**2 / sum((c * ms) ** 2 / df for c, ms, df in terms)
    a = (1.0 - level) / 2.0
    return nu * est / _chi2_ppf(1 - a, nu), nu * est / _chi2_ppf(a, nu)


def location_covariance(ms: MeanSquares, judge_labels: tuple[str, ...],
                        ms_err: tuple[float, int] | None = None) -> ParameterCovariance:
    r"""Covariance of (mu_hat, gamma_hat) on a balanced table, with what Satterthwaite df need.

    mu_hat = G and gamma_hat = J - G are independent (G uses cell means, gamma within-cell contrasts):
    Var(G) = E[MS_S]/(nmK) and Cov(gamma_hat) = E[MS_W] L/(nm), L = I - 11'/K. Sigma is linear in
    phi = (E MS_S, E MS_W), whose estimates have Var(MS) = 2 MS^2/df, so a contrast's df is Welch-Satterthwaite's.
    """
    k, nm = ms.k, ms.n * ms.m
    err, df_err = (ms.ms_residual, ms.df_residual) if ms_err is None else ms_err
    p = k + 1
    d_s = np.zeros((p, p))
    d_s[0, 0] = 1.0 / (nm * k)
    d_w = np.zeros((p, p))
    d_w[1:, 1:] = (np.eye(k) - 1.0 / k) / nm
    dcov = np.stack((d_s, d_w))
    cov = ms.ms_scenario * d_s + err * d_w
    var_cov = np.diag([2.0 * ms.ms_scenario**2 / ms.df_scenario, 2.0 * err**2 / df_err])
    return ParameterCovariance(params=location_params(judge_labels), estimate=np.r_[ms.grand_mean, ms.offsets],
                               cov=cov, dcov=dcov, var_cov=var_cov, df_fallback=float(ms.df_scenario))


def fit(stats: ScoreStats | Scores, *, ci_level: float, seed: int | None = None, rows: Scores | None = None,
        interval: Interval = "mls", incomplete: Literal["error", "drop"] = "error",
        max_drop: float | None = None, scenario_judge: Any = "auto") -> VarianceComponents:
    """Method-of-moments fit of every model (x criterion) from its sufficient statistics.

    Parameters
    ----------
    stats : ScoreStats
        The statistics of every unit (:func:`cjstats.stats.build_stats`); a ``Scores`` table is reduced first.
    interval : {"mls", "satterthwaite"}
        Interval for components that are differences of mean squares (scenario, generation, judge_population).
    incomplete : {"error", "drop"}
        A missing judge call raises by default; ``"drop"`` keeps only complete (scenario, generation) cells,
        warns with what it removed (rows and scenarios per model and criterion) and reports it in the result's
        ``dropped`` table and in ``diagnostics``.
    max_drop : float, optional
        With ``incomplete="drop"``: the largest share of a model's scenarios that may be dropped (default 0.5,
        ``cjstats._defaults.MAX_DROP``; 1.0 allows any). A larger loss is refused, naming the model and the counts.
    scenario_judge : {"auto", True, False}
        Fit the scenario x judge interaction where it is identifiable (m >= 2 generations judged by the same
        judges; ``"auto"``), insist (``True``: refused where not identifiable or not balanced) or never
        (``False``: the residual holds it). With it, ``residual`` is the within-cell residual, judge effects are
        tested against MS_SJ and ``diagnostics[group]["scenario_judge_test"]`` is the F test MS_SJ/MS_W'.
    seed : ignored
        The method of moments uses no randomness; accepted for the common backend signature.
    rows : ignored
        Never read (the registry declares no row-reading options); accepted for the common backend signature.
    """
    check_choice("interval", interval, ("mls", "satterthwaite"), caller="estimate")
    check_choice("incomplete", incomplete, ("error", "drop"), caller="estimate")
    limit = resolve_max_drop(max_drop, caller="estimate")
    stats, _ = as_stats(stats, rows)

    def fit_one(g: CellStats) -> GroupFit:
        if incomplete == "drop" and not g.design.complete:
            # each judge scores a cell at most once, so its call count is the number of cells it scored
            msg = sparse_judge_message(g.label(), g.judge_labels, g.judge_n, g.n_cells)
            if msg:
                warn(msg, CjstatsWarning, stacklevel=4)
        ms, dropped = g.for_anova(incomplete)
        check_max_drop([{**g.key, **dropped}], max_drop=limit)
        if ms.n < 2:
            raise CjstatsError(f"{g.label(capital=True)} keeps only one scenario after dropping incomplete "
                               f"cells; the scenario variance needs at least 2.")
        ss_sj = None
        unsupported = None
        if dropped.get("dropped_rows", 0) > 0:
            unsupported = "the ANOVA kept only complete cells (incomplete='drop'); use method='reml' to fit it"
        elif g.sj is not None:
            ss_sj = scenario_judge_mean_square(g.sj, ms.n, ms.m, ms.k)
            if ss_sj is None:
                unsupported = "the table is not one balanced block; use method='reml' to fit it"
        sj_fit, sj_note = resolve_scenario_judge(g, scenario_judge, unsupported=unsupported)
        if not sj_fit:
            ss_sj = None
        rows_, offsets = _group_rows(ms, ci_level, interval, ss_sj)
        if not sj_fit:
            rows_.insert(3, ComponentRow.not_identifiable("scenario_judge", sj_note))
        for o, lab in zip(offsets, g.judge_labels):
            o["judge"] = lab
        diag = {**ms.as_dict(), "n": ms.n, "m": ms.m, "k": ms.k, "judge_f_test": judge_f_test(ms), **dropped,
                "scenario_judge": "fitted" if sj_fit else sj_note}
        cov = location_covariance(ms, g.judge_labels)
        if sj_fit:
            df_sj, df_w = (ms.n - 1) * (ms.k - 1), ms.n * (ms.m - 1) * (ms.k - 1)
            ms_sj, ms_w = ss_sj / df_sj, max(ms.ss_residual - ss_sj, 0.0) / df_w
            f = ms_sj / ms_w if ms_w > 0 else math.inf
            diag.update({"ms_scenario_judge": ms_sj, "df_scenario_judge": df_sj, "ms_residual": ms_w,
                         "df_residual": df_w, "ms_residual_paper": ms.ms_residual})
            diag["scenario_judge_test"] = {"test": "F = MS_SJ/MS_W (within-cell)", "statistic": f, "df1": df_sj,
                                           "df2": df_w, "p_value": float(special.fdtrc(df_sj, df_w, f)),
                                           "method": "anova"}
            fj = ms.ms_judge / ms_sj if ms_sj > 0 else math.inf
            diag["judge_f_test"] = {"F": fj, "df1": ms.df_judge, "df2": df_sj,
                                    "p_value": float(special.fdtrc(ms.df_judge, df_sj, fj))}
            cov = location_covariance(ms, g.judge_labels, (ms_sj, df_sj))
        return GroupFit(rows_, offsets, diag, cov, dropped=dropped if incomplete == "drop" else None)

    return fit_groups(stats, fit_one, method="anova", ci_level=ci_level, seed=seed,
                      options={"interval": interval, "incomplete": incomplete, "max_drop": limit,
                               "scenario_judge": scenario_judge},
                      account_drop=lambda recs: account_for_drop(recs, max_drop=limit, stacklevel=7))
