"""Each model's mean on the human scale from all judge scores plus human labels on a subset (PPI++).

For one model (and criterion) the units are its scenarios. n of them (L) carry a human value Y (the mean of
the reference ratings) and the judges' prediction f (the panel mean, or one judge); N more (U) carry f only.
The power-tuned prediction-powered estimate (PPI++, Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453) is

    theta = lambda mean_U(f) + mean_L(Y - lambda f),      lambda = Cov_L(Y, f) / ((1 + n/N) Var_{L+U}(f))

clipped to [0, 1] (lambda = 0 is the human-only mean, 1 is plain PPI); estimate and lambda are ``ppi_py``'s
(``ppi_mean_pointestimate`` with ``lam=None``, checked equal to 1e-10). The interval is not ``ppi_py``'s z
interval, which covers about 0.89-0.92 at 12 labels: the rectifier variance rests on n labels (so a t
reference, divisor n - 1), and lambda, tuned on the same labels, adds variance that the plug-in formula
does not see. It is

    theta ± t_{df} SE,    SE^2 = a + b + 2 a/(n - 1),    a = s2_L(Y - lambda f)/n,   b = lambda^2 s2_U(f)/N,

with divisors n - 1 and N - 1 and Welch-Satterthwaite df = (a + b)^2 / (a^2/(n - 1) + b^2/(N - 1)). The term
2 a/(n - 1) is there only for a tuned lambda (``lam=None``): for normal data and N >> n the plug-in a + b at the
tuned lambda is off from the variance at the best lambda by Var(Y)(3 rho^2 - 1)/(n(n - 1)), while the tuned
estimate's variance is larger than that by Var(Y)(1 + rho^2)/(n(n - 1)), so 2 Var(Y)(1 - rho^2)/(n(n - 1)),
about 2 a/(n - 1), is missing (:func:`ppi_contrast` for the derivation and the general formula).

Paired differences ``difference[a,b]`` are theta_a - theta_b with one lambda tuned for the difference
(``ppi_py``'s rule generalised, :func:`_tuned_lambda`). Their variance adds to the two models' terms the
covariances over the scenarios both blocks hold: -2 |L_a ∩ L_b| Cov(r_a, r_b) / (n_a n_b) for the two
rectifiers r = Y - lambda f on the labelled scenarios the models share, and likewise for the judge terms
(U_a ∩ U_b) and the mixed ones (L_a ∩ U_b, U_a ∩ L_b); the tuned-lambda term is 2 a/(n_lab - 1) with a the
rectifier part of the variance and n_lab the scenarios labelled for either model; df by Satterthwaite. When
the two models are labelled on the same scenarios this is ``ppi_py``'s estimate on the per-scenario
differences Y_a - Y_b, f_a - f_b with the t interval above; when they share few or no labelled scenarios the
difference is still estimated (and covers), without the pairing, and ``note`` says how many they share.

How many labels. In simulations (``tests/test_humans_ppi_coverage.py``: 3 models, 100 scenarios; normal,
1-5 and 0/1 labels and 1-5 labels piled up at 5; weak to strong judges; models labelled on the same
scenarios, on independent ones, or sharing 2; 600 replicates a setting) ``ppi_py``'s z interval of a mean
covers 0.86-0.93 at 10-20 labels per model (0.74-0.90 with 0/1 labels). These t intervals cover 0.93-0.96 for
means and 0.94-0.97 for differences at 10-20 labels when the labels are normal or spread over the 1-5 scale,
and 0.92-0.96 and 0.94-0.99 at 4-8 labels. Where the labels hardly vary they fall short: 1-5 labels piled up at
5 cover 0.84-0.89 with 4 labels and 0.91-0.95 with 10-20, 0/1 labels 0.76-0.94 with 10-20. So a model is
flagged (one :class:`~cjstats.exceptions.CjstatsWarning` per call, and the ``note`` of its mean and of its
paired differences; :func:`label_shortfall`) when it has fewer than ``MIN_LABELS`` = 10 human labels or fewer
than ``MIN_VARIED`` = 5 that differ from its most common label. In every setting the unflagged rows cover 0.93
or more at 10-20 labels (0.95-0.99 where many rows are flagged: those left are the draws whose labels happen to
vary more).

Where ``ppi_py``'s setting does not fit, we say so in ``note``:

* m > 1 generations per scenario: generations are clustered in scenarios, so they are first averaged into
  their scenario (labelled scenarios over their labelled generations) and the scenario is the unit;
* every judged unit has a human label (N = 0): there is nothing for the judges to add, the estimate is the
  human-only mean (``method = "human-only"``).

Alongside: the human-only mean of the labelled units (t interval; for a difference, mean_{L_a}(Y_a) -
mean_{L_b}(Y_b) with the covariance over shared labels), the judge-only mean of all units (on the judges'
scale, biased by the judges' bias), and ``n_effective`` = n SE_human^2 / SE^2, the number of human labels a
human-only estimate would need for the same SE.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cjstats import _dist
from cjstats._validate import check_positive_int, resolve_ci_level
from cjstats._warnings import warn
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.estimators.humans._items import PANEL, paired_items
from cjstats.io.scores import Scores
from cjstats.results.base import Result

__all__ = ["ppi_means", "PPIMeans", "ppi_contrast", "ppi_mean_tuned", "label_shortfall", "MIN_LABELS",
           "MIN_VARIED"]

#: Human labels per model below which the intervals fall short of their level in our simulations (module doc).
MIN_LABELS = 10
#: ... and labels that must differ from the model's most common label (0/1 or piled-up labels: module doc).
MIN_VARIED = 5

_COLS = ["estimate", "std_error", "lower", "upper", "ci_level", "df", "method", "lam", "n_labeled", "n_unlabeled",
         "rho", "sigma2_human", "human_only", "human_only_se", "human_only_lower", "human_only_upper",
         "judge_only", "judge_only_se", "judge_only_lower", "judge_only_upper", "n_effective", "note"]


# ------------------------------------------------------------------------------------ pure formula layer
def ppi_mean_tuned(y: np.ndarray, f: np.ndarray, f_unlabeled: np.ndarray, *, lam: float | None = None
                   ) -> tuple[float, float, float]:
    """PPI++ mean, its SE and the tuning weight lambda, exactly as ``ppi_py`` computes them (numpy only).

    lambda = clip( (1/n) sum (Y-t)(f-t) / ((1 + n/N) Var_{n+N}(f)), 0, 1 ),  t = mean_N(f) + mean_n(Y - f),
    theta = lambda mean_N(f) + mean_n(Y - lambda f),  SE^2 = sd_N(lambda f)^2/N + sd_n(Y - lambda f)^2/n
    (sd with divisor n, as ``ppi_py``); tests check it equals ``ppi_py`` to 1e-10. ``ppi_contrast`` gives the same
    estimate and lambda; this SE is ``ppi_py``'s z-interval SE, which ``ppi_means`` no longer reports because
    it undercovers at few labels (module doc). Kept as the reference formula.
    """
    y, f, fu = (np.asarray(a, dtype=np.float64) for a in (y, f, f_unlabeled))
    n, big_n = len(y), len(fu)
    if lam is None:
        t = fu.mean() + (y - f).mean()
        gy, gf = y - t, f - t
        cov = (1.0 / n) * 2.0 * float(((gy - gy.mean()) * (gf - gf.mean())).sum())
        var = float(np.var(np.concatenate([f, fu]), ddof=1))
        lam = float(np.clip(cov / (2.0 * (1.0 + n / big_n) * var), 0.0, 1.0)) if var > 0 else 0.0
    est = float(lam * fu.mean() + (y - lam * f).mean())
    se = float(np.sqrt((lam * fu).std() ** 2 / big_n + (y - lam * f).std() ** 2 / n))
    return est, se, float(lam)


def _cov(x: np.ndarray, y: np.ndarray, m: np.ndarray, ddof: int) -> float:
    """Covariance of x and y over the units in mask m (divisor k - ddof); 0 where k <= ddof."""
    k = int(m.sum())
    if k <= ddof:
        return 0.0
    xm, ym = x[m], y[m]
    return float(((xm - xm.mean()) * (ym - ym.mean())).sum() / (k - ddof))


def _tuned_lambda(y: np.ndarray, f: np.ndarray, lab: np.ndarray, unl: np.ndarray, signs: np.ndarray) -> float:
    """PPI++ lambda of sum_p sign_p theta_p: ``ppi_py``'s rule, generalised to contrasts.

    theta_p(lambda) = mean_{L_p}(Y_p) + lambda G_p with G_p = mean_{U_p}(f_p) - mean_{L_p}(f_p), so the contrast
    is H + lambda G (G = sum_p sign_p G_p) and lambda = -Cov(H, G) / Var(G) minimises its variance. Cov(Y_p, f_q)
    is taken over L_p ∩ J_q with divisor k (as ``ppi_py``), Cov(f_p, f_q) over J_p ∩ J_q (every judged unit,
    labelled or not) with divisor k - 1. For one model this is ``ppi_py``'s
    lambda = Cov_L(Y, f) / ((1 + n/N) Var_{L+U}(f)); for two models labelled and judged on the same units it is
    ``ppi_py``'s lambda on the paired differences. Clipped to [0, 1].
    """
    judged = lab | unl
    li, ui = lab.astype(np.float64), unl.astype(np.float64)
    n, big_n = li.sum(0), ui.sum(0)
    num = den = 0.0
    for p in range(lab.shape[1]):
        for q in range(lab.shape[1]):
            sgn = signs[p] * signs[q]
            # Cov(H, G) = sum_pq a_pq Cov(Y_p, f_q), a_pq = sum over L_p of (1/n_p)(1[U_q]/N_q - 1[L_q]/n_q)
            a = sgn * ((li[:, p] @ ui[:, q]) / big_n[q] - (li[:, p] @ li[:, q]) / n[q]) / n[p]
            if a:
                num += a * _cov(y[:, p], f[:, q], lab[:, p] & judged[:, q], ddof=0)
            # Var(G) = sum_pq b_pq Cov(f_p, f_q), b_pq = sum over units of g_p g_q, g_p = 1[U_p]/N_p - 1[L_p]/n_p
            b = sgn * ((ui[:, p] @ ui[:, q]) / (big_n[p] * big_n[q]) - (ui[:, p] @ li[:, q]) / (big_n[p] * n[q])
                       - (li[:, p] @ ui[:, q]) / (n[p] * big_n[q]) + (li[:, p] @ li[:, q]) / (n[p] * n[q]))
            if b:
                den += b * _cov(f[:, p], f[:, q], judged[:, p] & judged[:, q], ddof=1)
    return float(np.clip(-num / den, 0.0, 1.0)) if den > 0 else 0.0


def _block_variance(x: np.ndarray, obs: np.ndarray, w: np.ndarray) -> tuple[float, float, int]:
    """Variance of sum_i w_i mean_{B_i}(x_i) over iid units, and the variance of that estimate.

    Block i holds the units where ``obs[:, i]``; blocks may overlap (a scenario labelled for two models).
    V = sum_ij w_i w_j |B_i ∩ B_j| C_ij with C_ij the covariance of x_i and x_j over B_i ∩ B_j (divisor k - 1;
    0 over fewer than 2 units; correlations clipped to [-1, 1], which matters only over a handful of units):
    unbiased whatever the overlaps. Var(V) by normal theory: sample covariances are U-statistics, so
    Cov(C_ij, C_kl) = ov ((a - 1)(b - 1) + ov - 1) / (a (a - 1) b (b - 1)) (C_ik C_jl + C_il C_jk), with
    a = |B_i ∩ B_j|, b = |B_k ∩ B_l|, ov = |B_i ∩ B_j ∩ B_k ∩ B_l| (2 C^2/(k - 1) for a variance over k
    units).
    Returns V, Var(V) and the number of block pairs with a weight but a single shared unit.
    """
    m = obs.astype(np.float64)
    xc = np.where(obs, x - np.where(obs, x, 0.0).sum(0) / np.maximum(m.sum(0), 1), 0.0)
    k = m.T @ m
    with np.errstate(divide="ignore", invalid="ignore"):
        sx, sy = xc.T @ m, m.T @ xc
        c = np.where(k >= 2, (xc.T @ xc - sx * sy / k) / (k - 1), 0.0)
    sd = np.sqrt(np.maximum(np.diag(c), 0.0))
    c = np.clip(c, -np.outer(sd, sd), np.outer(sd, sd))
    a = np.outer(w, w) * k
    v = float((a * c).sum())
    single = int(np.triu((a != 0) & (k == 1), 1).sum())
    idx = [(i, j) for i in range(len(w)) for j in range(len(w)) if a[i, j] != 0 and k[i, j] >= 2]
    if not idx:
        return v, 0.0, single
    ii, jj = np.array(idx).T
    pm = m[:, ii] * m[:, jj]
    ov = pm.T @ pm
    ka, kb = k[ii, jj][:, None], k[ii, jj][None, :]
    mult = ov * ((ka - 1) * (kb - 1) + ov - 1) / (ka * (ka - 1) * kb * (kb - 1))
    q = (c[ii[:, None], ii[None, :]] * c[jj[:, None], jj[None, :]]
         + c[ii[:, None], jj[None, :]] * c[jj[:, None], ii[None, :]])
    ae = a[ii, jj]
    return v, float(ae @ (mult * q) @ ae), single


def ppi_contrast(y: np.ndarray, f: np.ndarray, signs: np.ndarray | list[float], *, lam: float | None = None
                 ) -> dict[str, Any]:
    """PPI++ estimate of sum_p sign_p theta_p (one model's mean, or a paired difference) with a t interval.

    ``y`` and ``f`` are (units x models) arrays: the human label (NaN where unlabelled) and the judges'
    prediction (NaN where the model was not judged on the unit). For model p, L_p (n_p units) is labelled,
    U_p (N_p) judged only, and

        theta_p = lambda mean_{U_p}(f_p) + mean_{L_p}(Y_p - lambda f_p)          (PPI++)

    with one lambda for the whole contrast (``lam``, or tuned as ``ppi_py`` tunes it: :func:`_tuned_lambda`).
    The contrast is sum_i w_i mean_{B_i}(x_i) over the blocks "rectifier r_p = Y_p - lambda f_p on L_p"
    (w = sign_p/n_p) and "lambda f_p on U_p" (w = sign_p/N_p), so for a given lambda its variance is estimated
    without bias (up to correlations clipped to [-1, 1] over a handful of shared units) by

        V = sum_p [s2(r_p)/n_p + lambda^2 s2_U(f_p)/N_p]
            + 2 sum_{p<q} sign_p sign_q [|L_p∩L_q| C(r_p, r_q)/(n_p n_q) + lambda^2 |U_p∩U_q| C(f_p, f_q)/(N_p N_q)
                                  + lambda |L_p∩U_q| C(r_p, f_q)/(n_p N_q) + lambda |U_p∩L_q| C(f_p, r_q)/(N_p n_q)]

    (divisor k - 1; each covariance over the units the two blocks share, so the two rectifiers' covariance
    over the labelled units the models share; :func:`_block_variance`). For a fixed lambda that is all. A
    tuned lambda adds variance (it is estimated from the same n labels) that V does not see: for one model
    with N >> n and normal data, to order 1/n^2, E[V(lambda_hat)] - V(lambda*) ≈ Var(Y)(3 rho^2 - 1)/(n (n - 1))
    (lambda_hat - lambda* and the sample moments in V are correlated) while Var(theta(lambda_hat)) - V(lambda*)
    ≈ Var(Y)(1 + rho^2)/(n (n - 1)) (the error of lambda_hat times G = mean_U(f) - mean_L(f)), a gap of
    2 Var(Y)(1 - rho^2)/(n (n - 1)) ≈ 2 V_L/(n - 1), V_L = s2(r)/n the rectifier part. So with a tuned lambda

        SE^2 = V + 2 V_L / (n_lab - 1),

    V_L the rectifier terms of V (the first term and the C(r_p, r_q) covariances), n_lab the units labelled
    for some model (for two models labelled on the same units this is the one-model rule on the differences;
    labelled on different units, it is an extension checked by simulation only, where it is mildly
    conservative). The interval is estimate ± t_{df} SE with Satterthwaite's df = 2 V^2 / Var(V) (normal-
    theory Var(V)): for one model and a fixed lambda that is Welch's (a + b)^2 / (a^2/(n - 1) + b^2/(N - 1)),
    a = s2(r)/n, b = lambda^2 s2_U(f)/N; for the human-only mean (lambda = 0) it is n - 1; for two models
    labelled on the same units and lambda = 0 it is the paired t's n - 1.

    Returns a dict: ``estimate, std_error, df, lam``, ``n_labeled`` and ``n_unlabeled`` (arrays, per model),
    ``n_shared`` (units labelled for every model), ``lam_term`` (2 V_L/(n_lab - 1), 0 for a fixed lambda) and
    ``single_overlaps`` (covariances over a single shared unit, taken as 0).
    """
    y = np.asarray(y, dtype=np.float64)
    f = np.asarray(f, dtype=np.float64)
    sg = np.asarray(signs, dtype=np.float64)
    judged = np.isfinite(f)
    lab = judged & np.isfinite(y)
    unl = judged & ~lab
    n, big_n = lab.sum(0), unl.sum(0)
    out: dict[str, Any] = {"estimate": np.nan, "std_error": np.nan, "df": np.nan, "lam": np.nan, "lam_term": 0.0,
                           "n_labeled": n, "n_unlabeled": big_n, "n_shared": int(lab.all(1).sum()),
                           "single_overlaps": 0}
    if (n < 2).any():
        return out
    fz = np.where(judged, f, 0.0)
    yz = np.where(lab, y, 0.0)
    tuned = lam is None
    if (big_n == 0).any() or all(np.var(f[judged[:, p], p]) == 0 for p in range(len(sg))):
        lam, tuned = 0.0, False                      # no judged-only unit (or constant judges): human labels only
    elif tuned:
        lam = _tuned_lambda(yz, fz, lab, unl, sg)
    lam = float(lam)
    x = np.concatenate([yz - lam * fz, lam * fz], axis=1)
    obs = np.concatenate([lab, unl], axis=1)
    w = np.concatenate([sg / n, sg / np.maximum(big_n, 1)])
    est = float((w * np.where(obs, x, 0.0).sum(0)).sum())
    v, var_v, single = _block_variance(x, obs, w)
    df = 2 * v * v / var_v if var_v > 0 else np.inf
    extra = 0.0
    if tuned:
        v_rect, _, _ = _block_variance(x[:, :len(sg)], lab, w[:len(sg)])
        extra = 2.0 * max(v_rect, 0.0) / (int(lab.any(1).sum()) - 1)
    total = v + extra
    out.update(estimate=est, std_error=float(np.sqrt(total)) if total > 0 else np.nan, df=float(max(df, 1.0)),
               lam=lam, lam_term=extra, single_overlaps=single)
    return out


def _t_interval(est: float, se: float, df: float, ci_level: float) -> tuple[float, float]:
    q = float(_dist.t_ppf(0.5 + ci_level / 2, df))
    return est - q * se, est + q * se


# ---------------------------------------------------------------------------------------- result type
@dataclass(frozen=True, slots=True)
class PPIMeans(Result):
    """Human-scale model means and paired differences by PPI++.

    Attributes
    ----------
    means : DataFrame
        ``model, [criterion], estimand ("human_mean[p]"), estimate, std_error, lower, upper, ci_level, df
        (of the t interval), method, lam, n_labeled, n_unlabeled, rho, sigma2_human, human_only(_se/_lower/
        _upper), judge_only(_se/_lower/_upper), n_effective, note``. ``note`` says when a model's labels are
        too few for its interval (:func:`label_shortfall`).
    differences : DataFrame
        The same columns for ``difference[a,b]`` with ``model_a, model_b`` instead of ``model``;
        ``n_labeled`` counts the scenarios labelled for either model, ``n_shared`` those labelled for both
        (``rho`` and ``sigma2_human`` are computed on them), ``n_unlabeled`` the judged scenarios labelled for
        neither.
    judge : str
        The prediction used: ``panel`` (mean of the judges on the unit) or one judge.
    judges_per_unit : int
        Judge calls behind one prediction (the panel size, or 1).
    """

    means: pd.DataFrame
    differences: pd.DataFrame
    judge: str
    judges_per_unit: int
    ci_level: float
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """Means and differences in one long table (``estimand`` tells them apart)."""
        return pd.concat([self.means, self.differences], ignore_index=True)

    def as_latex(self, digits: int = 3) -> str:
        """Human-scale means (and differences) as booktabs LaTeX tables (:func:`cjstats.results.tables.as_latex`)."""
        from cjstats.results.tables import as_latex

        cols = [c for c in ("model", "criterion", "estimate", "lower", "upper", "human_only", "judge_only",
                            "n_labeled", "n_effective") if c in self.means.columns]
        parts = [as_latex(self.means[cols], caption="Prediction-powered (PPI++) human-scale means", digits=digits)]
        if self.differences is not None and len(self.differences):
            dcols = [c for c in ("model_a", "model_b", "criterion", "estimate", "lower", "upper", "human_only",
                                 "n_effective") if c in self.differences.columns]
            parts.append(as_latex(self.differences[dcols], caption="PPI++ paired differences", digits=digits))
        return "\n\n".join(parts)

    def as_text(self, digits: int = 3) -> str:
        pct = f"{100 * self.ci_level:g}%"
        cols = ["model", "criterion", "estimate", "lower", "upper", "human_only", "human_only_lower",
                "human_only_upper", "judge_only", "lam", "n_labeled", "n_effective"]
        t = self.means[[c for c in cols if c in self.means.columns]]
        notes = list(dict.fromkeys(n for n in pd.concat([self.means["note"], self.differences["note"]]) if n))
        return (f"Human-scale means by PPI++ (judge prediction: {self.judge}; {pct} intervals)\n"
                + t.round(digits).to_string(index=False)
                + "".join(f"\nnote: {n}" for n in notes))

    def __str__(self) -> str:
        return self.as_text()


# ------------------------------------------------------------------------------------------- rows
def _join(*parts: str) -> str:
    return "; ".join(x for x in parts if x)


def label_shortfall(y: np.ndarray) -> str:
    """Why one model's human labels are too few for its PPI++ interval to be trusted, or "" when they suffice.

    Too few: fewer than ``MIN_LABELS`` (10) labels, or fewer than ``MIN_VARIED`` (5) labels that differ from
    the most common label (0/1 labels, or 1-5 labels piled up at 5). Both thresholds come from the simulations
    of ``tests/test_humans_ppi_coverage.py``: below them some settings cover under 93%; at or above them every
    setting covers 93-97%. ``y`` holds the labels (NaN ignored); fewer than 2 is reported elsewhere (NaN row).
    """
    n, varied, mode = _label_counts(y)
    if n < 2:
        return ""
    if n < MIN_LABELS:
        return (f"{n} human labels, fewer than the {MIN_LABELS} below which the PPI++ interval cannot be trusted "
                f"to reach its level")
    if varied < MIN_VARIED:
        return (f"{n} human labels of which only {varied} differ from the most common one ({mode:g}), fewer than "
                f"the {MIN_VARIED} below which the PPI++ interval cannot be trusted to reach its level")
    return ""


def _label_counts(y: np.ndarray) -> tuple[int, int, float]:
    """Number of labels (NaN ignored), how many differ from the most common label, and that label."""
    y = np.asarray(y, dtype=np.float64)
    y = y[np.isfinite(y)]
    if len(y) == 0:
        return 0, 0, np.nan
    values, counts = np.unique(y, return_counts=True)
    return len(y), len(y) - int(counts.max()), float(values[counts.argmax()])


def _row(y: np.ndarray, f: np.ndarray, f_all: np.ndarray, signs: list[float], *, lam: float | None,
         ci_level: float, note: str, names: list[str]) -> dict[str, Any]:
    """One row of ``means`` (one model) or ``differences`` (two models, signs +1, -1) from (units x models)
    arrays: y (NaN where unlabelled), f (the prediction on the unit), f_all (all the unit's judge scores)."""
    out: dict[str, Any] = dict.fromkeys(_COLS, np.nan)
    pair = len(signs) == 2
    judged = np.isfinite(f)
    lab = judged & np.isfinite(y)
    n = lab.sum(0)
    out.update(ci_level=ci_level, note=note, n_labeled=int(lab.any(1).sum()),
               n_unlabeled=int((judged.any(1) & ~lab.any(1)).sum()),
               method="ppi++" if lam is None else ("ppi" if lam == 1 else f"ppi(lam={lam:g})"))
    if pair:
        out["n_shared"] = int(lab.all(1).sum())
    common = np.isfinite(f_all).all(1)
    f_comb = f_all[common] @ np.asarray(signs, dtype=np.float64)
    if len(f_comb) >= 2:
        out["judge_only"] = float(f_comb.mean())
        out["judge_only_se"] = float(f_comb.std(ddof=1) / np.sqrt(len(f_comb)))
        out["judge_only_lower"], out["judge_only_upper"] = _t_interval(out["judge_only"], out["judge_only_se"],
                                                                       len(f_comb) - 1, ci_level)
    if (n < 2).any():
        out["method"] = "none"
        return out
    human = ppi_contrast(y, f, signs, lam=0.0)
    out["human_only"], out["human_only_se"] = human["estimate"], human["std_error"]
    out["human_only_lower"], out["human_only_upper"] = _t_interval(human["estimate"], human["std_error"],
                                                                   human["df"], ci_level)
    both = lab.all(1)                                # Var(Y) and Corr(Y, f) of the contrast: units labelled for all
    yc, fc = y[both] @ np.asarray(signs, dtype=np.float64), f[both] @ np.asarray(signs, dtype=np.float64)
    if len(yc) >= 2:
        out["sigma2_human"] = float(yc.var(ddof=1))
        out["rho"] = float(np.corrcoef(yc, fc)[0, 1]) if np.std(yc) > 0 and np.std(fc) > 0 else np.nan
    if not pair and np.std(yc) == 0:
        note = _join(note, f"every human label is {yc[0]:g}, so the human-only interval has zero width and does "
                           f"not cover the uncertainty")
    no_judged = (judged & ~lab).sum(0) == 0
    human_only = no_judged.any() or all(np.var(f[judged[:, p], p]) == 0 for p in range(len(signs)))
    res = human if human_only or lam == 0 else ppi_contrast(y, f, signs, lam=lam)    # same numbers: no recompute
    if human_only:
        out["method"] = "human-only"
        note = _join(note, "every judged unit has a human label, so the judges add nothing" if no_judged.any()
                     else "the judges give every unit the same score")
    out.update(estimate=res["estimate"], std_error=res["std_error"], df=res["df"], lam=res["lam"])
    if np.isfinite(res["std_error"]):
        out["lower"], out["upper"] = _t_interval(res["estimate"], res["std_error"], res["df"], ci_level)
        out["n_effective"] = float(out["n_labeled"] * human["std_error"] ** 2 / res["std_error"] ** 2)
    k = out.get("n_shared", 0)
    if pair and k < min(MIN_LABELS, *n):           # not labelled on the same scenarios, and few shared
        pair_name = f"models '{names[0]}' and '{names[1]}'"
        note = _join(note, f"{pair_name} share no labelled scenario, so the difference is not paired on the human "
                           f"side" if k == 0 else
                     f"{pair_name} share 1 labelled scenario ({n[0]} and {n[1]} labels): too few for the covariance "
                     f"of their rectifiers, taken as 0" if k == 1 else
                     f"{pair_name} share {k} labelled scenarios ({n[0]} and {n[1]} labels): the covariance of their "
                     f"rectifiers rests on those")
    if res["single_overlaps"] > (1 if pair and k == 1 else 0):
        note = _join(note, "a covariance over a single shared scenario is taken as 0")
    short = [(nm, label_shortfall(y[lab[:, i], i])) for i, nm in enumerate(names)]
    if not pair:
        note = _join(note, short[0][1])
    else:
        note = _join(note, *(f"model '{nm}' has {why}" for nm, why in short if why))
    out["note"] = note
    return out


def _warn_few(few: list[tuple[str, str | None, str]]) -> None:
    """One warning naming every (model, criterion) whose labels fall short (``label_shortfall``)."""
    if not few:
        return
    where = [f"'{m}'" + ("" if c is None else f" on '{c}'") + f" ({why})" for m, c, why in few]
    shown = ", ".join(where[:6]) + (f" and {len(where) - 6} more" if len(where) > 6 else "")
    head = f"Model {shown} has" if len(few) == 1 else f"Models {shown} have"
    warn(f"{head} too few human labels for the PPI++ intervals of the mean and of its paired differences "
         f"to be trusted to reach their level (at least {MIN_LABELS} labels, {MIN_VARIED} of them "
         f"differing from the most common one; see the note column); label more scenarios.",
         CjstatsWarning, stacklevel=3)


# ------------------------------------------------------------------------------------------ public API
def _units(part: pd.DataFrame, col: str, labeled: np.ndarray) -> tuple[pd.DataFrame, bool]:
    """Per-scenario units of one model: y (NaN if unlabelled), f_lab (over labelled cells), f_all."""
    f = part[col].to_numpy(dtype=np.float64)
    ok = np.isfinite(f)
    part = part.assign(_f=f, _lab=labeled & ok)[ok]
    if not part["scenario"].duplicated().any():
        u = pd.DataFrame({"scenario": part["scenario"].to_numpy(), "f_all": part["_f"].to_numpy(),
                          "f_lab": np.where(part["_lab"], part["_f"], np.nan),
                          "y": np.where(part["_lab"], part["human"], np.nan)})
        return u.set_index("scenario"), False
    lab = part[part["_lab"]]
    g_all = part.groupby("scenario", sort=True)["_f"].mean().rename("f_all")
    g_lab = lab.groupby("scenario", sort=True)[["_f", "human"]].mean().rename(columns={"_f": "f_lab", "human": "y"})
    return pd.concat([g_all, g_lab], axis=1), True


def _arrays(cube: np.ndarray, idx: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y, the prediction f (over the labelled cells where labelled) and f_all of the models ``idx``."""
    c = cube[idx]                                    # models x units x (y, f_lab, f_all)
    y, f_lab, f_all = c[:, :, 0].T, c[:, :, 1].T, c[:, :, 2].T
    f = np.where(np.isfinite(y), f_lab, f_all)
    keep = np.isfinite(f_all).any(1)
    return y[keep], f[keep], f_all[keep]


def ppi_means(scores: Scores, reference: str | list[str] | None = None, *, judge: str | None = None,
              n_labels: int | None = None, lam: float | None = None, differences: bool = True,
              ci_level: float | None = None, seed: int | None = None) -> PPIMeans:
    """Each model's human-scale mean (and paired differences) from all judge scores + human labels, by PPI++.

    Intervals are t intervals that hold at few labels (:func:`ppi_contrast`). A model with fewer than
    ``MIN_LABELS`` (10) human labels, or fewer than ``MIN_VARIED`` (5) that differ from its most common label,
    is named in one :class:`~cjstats.exceptions.CjstatsWarning`, and its rows (mean and paired differences)
    say so in ``note``: below that its intervals cannot be trusted to reach their level.

    Parameters
    ----------
    scores : Scores
        A table with reference raters (see :func:`cjstats.judge_agreement`).
    reference : str or list of str, optional
        The reference raters; by default the table's own.
    judge : str, optional
        The prediction f: one LLM judge's score; default the panel mean of the judges on the item.
    n_labels : int, optional
        Use human labels on only this many scenarios (drawn once with ``seed`` among the scenarios that have
        a label, the same for every model and criterion); the other labels are hidden, as if never bought.
        Default: every label in the table.
    lam : float, optional
        ``None`` (default) tunes lambda (PPI++); 1 gives plain PPI, 0 the human-only mean.
    differences : bool
        Also estimate every paired difference ``difference[a,b]`` between models (per criterion).
    ci_level : float, optional
        Interval level (default 0.95).
    seed : int, optional
        Seed of the label subsample (only with ``n_labels``).

    Returns
    -------
    PPIMeans
        ``.means`` and ``.differences`` (module docstring for the columns and formulas).

    Examples
    --------
    >>> import cjstats as cj
    >>> res = cj.ppi_means(cj.datasets.load("mentalalign", humans=True), n_labels=100, seed=0)
    >>> res.means[["model", "criterion", "estimate", "human_only", "n_effective"]]  # doctest: +SKIP
    """
    ci_level = resolve_ci_level(ci_level)
    if lam is not None and not (isinstance(lam, (int, float)) and 0.0 <= float(lam) <= 1.0):
        raise CjstatsError(f"The 'lam' argument of ppi_means must be None or a number in [0, 1]. Got {lam!r} instead.")
    paired = paired_items(scores, reference=reference, caller="ppi_means")
    col = PANEL if judge is None else str(judge)
    if col not in paired.judges and col != PANEL:
        raise CjstatsError(f"The 'judge' argument of ppi_means must be one of the LLM judges "
                           f"({', '.join(paired.judges)}) or None for the panel mean. Got {judge!r} instead.")
    items = paired.items
    labeled = (items["n_human"] > 0).to_numpy().copy()
    prov: dict[str, Any] = {"engine": "cjstats (PPI++ estimate and lambda as ppi_py)", "unit": "scenario",
                            "seed": seed, "interval": "t, Satterthwaite df, jackknife term for the tuned lambda",
                            "min_labels": MIN_LABELS, "min_varied_labels": MIN_VARIED}
    if n_labels is not None:
        n_labels = check_positive_int("n_labels", n_labels, caller="ppi_means", minimum=2)
        pool = np.sort(pd.unique(items.loc[labeled, "scenario"]))
        rng = np.random.default_rng(seed)
        chosen = rng.choice(pool, size=min(n_labels, len(pool)), replace=False)
        labeled = labeled & items["scenario"].isin(chosen).to_numpy()
        prov["n_labels"] = f"{min(n_labels, len(pool))} of {len(pool)} labelled scenarios used (seed {seed})"
    mean_rows, diff_rows = [], []
    few: list[tuple[str, str | None, str]] = []
    clustered = False
    for crit, part in items.assign(_lab=labeled).groupby("criterion", dropna=False, sort=True):
        crit = None if (isinstance(crit, float) and np.isnan(crit)) else crit
        units: dict[str, pd.DataFrame] = {}
        notes: dict[str, str] = {}
        for model, mp in part.groupby("model", sort=True):
            u, agg = _units(mp, col, mp["_lab"].to_numpy())
            clustered |= agg
            units[str(model)] = u
            notes[str(model)] = "generations averaged into their scenario (unit = scenario)" if agg else ""
        names = sorted(units)
        scen = pd.Index(sorted(set().union(*(u.index for u in units.values()))))
        cube = np.stack([units[m].reindex(scen)[["y", "f_lab", "f_all"]].to_numpy(dtype=np.float64) for m in names])
        for i, model in enumerate(names):
            note = notes[model]
            n_lab = int(units[model]["y"].notna().sum())
            if n_lab < 2:
                where = f"model '{model}'" + ("" if crit is None else f", criterion '{crit}'")
                what = "no human label" if n_lab == 0 else "a single human label"
                msg = (f"{where[0].upper() + where[1:]} has {what} among its judged items, so its human-scale "
                       f"mean is not estimable (NaN).")
                warn(msg, CjstatsWarning, stacklevel=2)
                note = _join(note, msg)
            else:
                y_m = units[model]["y"].to_numpy(dtype=np.float64)
                if label_shortfall(y_m):
                    varied = _label_counts(y_m)[1]
                    few.append((model, crit, f"{n_lab} labels" if n_lab < MIN_LABELS else
                                f"{n_lab} labels, {varied} differing from the most common"))
            mean_rows.append({"model": model, "criterion": crit, "estimand": f"human_mean[{model}]",
                              **_row(*_arrays(cube, [i]), [1.0], lam=lam, ci_level=ci_level, note=note,
                                     names=[model])})
        if not differences:
            continue
        for ia, ib in itertools.combinations(range(len(names)), 2):
            a, b = names[ia], names[ib]
            note = _join(notes[a], notes[b]) if notes[a] != notes[b] else notes[a]
            row = _row(*_arrays(cube, [ia, ib]), [1.0, -1.0], lam=lam, ci_level=ci_level, note=note, names=[a, b])
            if row["method"] == "none":
                row["note"] = _join(row["note"], "fewer than 2 human labels on one of the two models")
            diff_rows.append({"model_a": a, "model_b": b, "criterion": crit, "estimand": f"difference[{a},{b}]",
                              **row})
    if not any(r["method"] != "none" for r in mean_rows):
        raise CjstatsError("No model has human labels on 2 or more of its judged scenarios, so no human-scale "
                           "mean can be estimated; add reference ratings or raise n_labels.")
    _warn_few(few)
    means = pd.DataFrame(mean_rows, columns=["model", "criterion", "estimand", *_COLS])
    dcols = [*_COLS[:_COLS.index("n_labeled") + 1], "n_shared", *_COLS[_COLS.index("n_labeled") + 1:]]
    diffs = pd.DataFrame(diff_rows, columns=["model_a", "model_b", "criterion", "estimand", *dcols])
    if len(diffs):
        diffs["n_shared"] = diffs["n_shared"].astype(np.int64)
    if not scores.has_criterion:
        means, diffs = means.drop(columns="criterion"), diffs.drop(columns="criterion")
    if clustered:
        prov["clustered"] = "m > 1: generations averaged into scenarios before PPI (PPI assumes iid units)"
    k = 1 if judge is not None else len(paired.judges)
    return PPIMeans(means=means, differences=diffs, judge=col, judges_per_unit=k, ci_level=ci_level,
                    provenance=prov)
