r"""Anytime-valid confidence sequences over scenarios, and how many scenarios a sequential comparison needs.

A confidence sequence (CS) is a sequence of intervals C_1, C_2, ... with P(mu in C_n for EVERY n) >= 1 - alpha,
so a comparison may be looked at after every scenario and stopped as soon as C_n excludes 0, without the
inflated error of repeatedly applied fixed-n tests. Per scenario i (in arrival order) the observation is

    x_i = (panel mean of model a on scenario i) - (panel mean of model b on scenario i)       (paired), or
    x_i = panel mean of model a on scenario i                                               (one model).

When the same judges score both models on a scenario (a shared schedule, as CyclicJudge's), each judge's offset
gamma_l enters both panel means and cancels from x_i.

Two constructions (formulas pure, arrays in, arrays out; each accepts a leading axis of replicates):

(a) ``"empirical_bernstein"``: the predictable plug-in empirical-Bernstein CS (PrPl-EB) of Waudby-Smith & Ramdas
    (2024, JRSS-B 86(1), "Estimating means of bounded random variables by betting", Thm 2 and eq. (13)-(15)).
    For y_i in [0, 1] (x rescaled from its known range) with constant conditional mean m:

        mu_t = (1/2 + sum_{i<=t} y_i)/(t + 1),   s2_t = (1/4 + sum_{i<=t} (y_i - mu_i)^2)/(t + 1)
        lambda_t = min( sqrt(2 log(2/alpha) / (s2_{t-1} t log(1 + t))), c ),   c = 3/4 (``truncation``)
        v_t = 4 (y_t - mu_{t-1})^2,   psi_E(lambda) = (-log(1 - lambda) - lambda)/4
        C_t = sum lambda_i y_i / sum lambda_i  +/-  (log(2/alpha) + sum v_i psi_E(lambda_i)) / sum lambda_i

    (mu_0 = 1/2, s2_0 = 1/4), intersected with [0, 1] and with C_{t-1} (the running intersection is valid too).
    Valid for any bounded sequence; no variance needs to be known.

(b) ``"normal_mixture"``: the two-sided normal-mixture boundary of Howard, Ramdas, McAuliffe & Sekhon (2021,
    Ann. Statist. 49(2), "Time-uniform, nonparametric, nonasymptotic confidence sequences", eq. (14)). For
    sigma^2-sub-Gaussian increments, S_t = sum (x_i - mu) and V_t = sigma^2 t,

        |S_t| <= sqrt( (V_t + rho) log( (V_t + rho) / (rho alpha^2) ) )   for all t, w.p. >= 1 - alpha,

    so C_t = mean_t +/- that radius / t. rho is chosen to make the boundary tightest at V = sigma^2 n_opt: with
    L = 2 log(1/alpha), rho = sigma^2 n_opt / r where r solves r = L + log(1 + r). The variance proxy sigma^2 is
    given, or estimated from a pilot of the first scenarios, which the CS then does not use (with an estimated
    proxy the guarantee is approximate).

(c) ``"hedged_betting"``: the hedged-capital CS of Waudby-Smith & Ramdas (2024, Sec. 4.3, Thm 3 and eq. (26)-(27)).
    For each candidate mean m in [0, 1] two bettors play against H0: mean = m,

        K+_t(m) = prod_{i<=t} (1 + lambda+_i(m) (y_i - m)),   K-_t(m) = prod_{i<=t} (1 - lambda-_i(m) (y_i - m)),
        lambda+_t(m) = min(lambda_t, c/m),   lambda-_t(m) = min(lambda_t, c/(1 - m)),   c = 1/2,
        lambda_t = sqrt(2 log(2/alpha) / (s2_{t-1} t log(1 + t)))      (s2 as in (a), predictable),

    and K_t(m) = max(theta K+_t(m), (1 - theta) K-_t(m)) with theta = 1/2 is a nonnegative supermartingale
    under H0 with K_0 = 1 (the truncation keeps every factor >= 1 - c > 0), so by Ville's inequality
    C_t = {m : K_t(m) < 1/alpha} covers the mean at every t at once with probability >= 1 - alpha. C_t is found
    on a grid of m (``grid`` + 1 points) and widened by one grid step at each end, then intersected over time.
    Never wider than needed for bounded data and typically narrower than (a), at the cost of a grid search.

:func:`sequential_plan` predicts the scenarios needed to decide a difference delta under each judge strategy from
the per-scenario variance of x (the decision layer's Eqs. 3-5 at n = 1, :func:`difference_variance`): the
deterministic "oracle" radius (the CS's radius when the empirical variance equals the true one) gives
``n_width``, the first n at which it is <= |delta|; a seeded simulation of the CS on x_i ~ N(delta, v) gives the
expected stopping time ``expected_n`` and its Monte Carlo error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from cjstats import _dist
from cjstats._validate import check_choice, check_number, check_positive_int
from cjstats._warnings import warn
from cjstats.exceptions import CjstatsError

__all__ = ["METHODS", "eb_sequence", "hedged_sequence", "eb_oracle_radius", "normal_mixture_rho", "normal_mixture_radius",
           "normal_mixture_sequence", "t_interval", "first_exclusion", "scenario_differences",
           "confidence_sequence", "per_scenario_variance", "sequential_plan"]

METHODS: tuple[str, ...] = ("empirical_bernstein", "normal_mixture", "hedged_betting")
#: The methods :func:`sequential_plan` simulates (the hedged CS's grid search is too slow for its replicates).
PLAN_METHODS: tuple[str, ...] = ("empirical_bernstein", "normal_mixture")
HEDGED_TRUNCATION = 0.5     # c of the hedged-capital bets (WSR 2024, Sec. 4.3)
GRID = 1000                 # grid steps of [0, 1] for the hedged-capital CS
TRUNCATION = 0.75           # c of lambda_t (WSR 2024 suggest 1/2 or 3/4; 3/4 is narrower for n <~ 800 on 1-5 scales)
PILOT = 20                  # scenarios of the normal-mixture pilot when no variance is given
N_OPT = 100                 # where the normal-mixture boundary is tightest (in scenarios), by default


def _alpha(alpha: Any, caller: str) -> float:
    a = check_number("alpha", alpha, caller=caller)
    if not 0.0 < a < 1.0:
        raise CjstatsError(f"The 'alpha' argument of {caller} must lie in (0, 1), e.g. 0.05. Got {alpha!r} instead.")
    return a


def _truncation(c: Any, caller: str) -> float:
    c = check_number("truncation", c, caller=caller)
    if not 0.0 < c < 1.0:
        raise CjstatsError(f"The 'truncation' argument of {caller} must lie in (0, 1) (the cap of the bets; 0.5 or "
                           f"0.75). Got {c!r} instead.")
    return c


# ---------------------------------------------------------------------------------- (a) PrPl-EB, WSR 2024
def eb_sequence(y: np.ndarray, alpha: float, *, truncation: float = TRUNCATION,
                intersect: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PrPl-EB confidence sequence of Waudby-Smith & Ramdas (2024, eq. (13)-(15)) for y in [0, 1].

    Returns (center, lower, upper) along the last axis (module docstring for the formulas). ``intersect`` takes
    the running intersection (and [0, 1]), as the paper allows.

    Examples
    --------
    >>> c, lo, hi = eb_sequence(np.array([0.5, 0.5]), 0.05)   # lambda_1 = 1/2: radius (log 40 + 0)/0.5 = 7.4
    >>> float(c[1]), float(lo[1]), float(hi[1])                # so the interval is all of [0, 1]
    (0.5, 0.0, 1.0)
    """
    y = np.asarray(y, dtype=float)
    t = np.arange(1, y.shape[-1] + 1, dtype=float)
    mu = (0.5 + np.cumsum(y, axis=-1)) / (t + 1)
    s2 = (0.25 + np.cumsum((y - mu) ** 2, axis=-1)) / (t + 1)
    pad = [(0, 0)] * (y.ndim - 1) + [(1, 0)]
    mu_prev = np.pad(mu[..., :-1], pad, constant_values=0.5)
    s2_prev = np.pad(s2[..., :-1], pad, constant_values=0.25)
    la = np.minimum(np.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * np.log1p(t))), truncation)
    v = 4 * (y - mu_prev) ** 2
    psi = (-np.log1p(-la) - la) / 4
    sl = np.cumsum(la, axis=-1)
    center = np.cumsum(la * y, axis=-1) / sl
    radius = (math.log(2 / alpha) + np.cumsum(v * psi, axis=-1)) / sl
    lo, hi = np.maximum(center - radius, 0.0), np.minimum(center + radius, 1.0)
    if intersect:
        lo, hi = np.maximum.accumulate(lo, axis=-1), np.minimum.accumulate(hi, axis=-1)
    return center, lo, hi


def hedged_sequence(y: np.ndarray, alpha: float, *, truncation: float = HEDGED_TRUNCATION, theta: float = 0.5,
                    grid: int = GRID, intersect: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hedged-capital confidence sequence of Waudby-Smith & Ramdas (2024, Sec. 4.3) for y in [0, 1] (one sequence).

    Returns (center, lower, upper) per t: ``center`` is the grid point with the smallest hedged capital (the
    mean the bettors find least implausible), ``lower, upper`` the ends of {m : K_t(m) < 1/alpha} on a grid of
    ``grid`` + 1 points, widened by one step (module docstring (c)). When no grid point survives (probability
    <= alpha) the interval shrinks to the centre.

    Examples
    --------
    >>> c, lo, hi = hedged_sequence(np.full(200, 0.5), 0.05)     # constant data: the CS closes in on 0.5
    >>> bool(lo[-1] < 0.5 < hi[-1]) and bool(hi[-1] - lo[-1] < 0.1)
    True
    """
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise CjstatsError("hedged_sequence takes one sequence (a 1-D array); loop over replicates.")
    n = y.size
    t = np.arange(1, n + 1, dtype=float)
    mu = (0.5 + np.cumsum(y)) / (t + 1)
    s2 = (0.25 + np.cumsum((y - mu) ** 2)) / (t + 1)
    s2_prev = np.r_[0.25, s2[:-1]]
    lam = np.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * np.log1p(t)))          # (n,)
    m = np.linspace(0.0, 1.0, grid + 1)[:, None]                                  # (G, 1)
    with np.errstate(divide="ignore"):
        lam_pos = np.minimum(lam, truncation / m)
        lam_neg = np.minimum(lam, truncation / (1.0 - m))
    dev = y - m                                                                   # (G, n)
    log_pos = np.cumsum(np.log1p(lam_pos * dev), axis=1)
    log_neg = np.cumsum(np.log1p(-lam_neg * dev), axis=1)
    log_k = np.maximum(math.log(theta) + log_pos, math.log1p(-theta) + log_neg)
    inside = log_k < math.log(1 / alpha)
    grid_m = m[:, 0]
    center = grid_m[np.argmin(log_k, axis=0)]
    any_in = inside.any(axis=0)
    first = np.argmax(inside, axis=0)
    last = grid - np.argmax(inside[::-1], axis=0)
    step = 1.0 / grid
    lo = np.where(any_in, np.maximum(grid_m[first] - step, 0.0), center)
    hi = np.where(any_in, np.minimum(grid_m[last] + step, 1.0), center)
    if intersect:
        lo, hi = np.maximum.accumulate(lo), np.minimum.accumulate(hi)
        hi = np.maximum(hi, lo)
    return center, lo, hi


def eb_oracle_radius(s2: float, alpha: float, n: int, *, truncation: float = TRUNCATION) -> np.ndarray:
    """The PrPl-EB radius for n = 1..N when the plug-in variances equal the true s2 (y scale, [0, 1]).

    lambda_t = min(sqrt(2 log(2/alpha)/(s2 t log(1+t))), c), v_t = 4 s2:
    radius_t = (log(2/alpha) + sum_{i<=t} 4 s2 psi_E(lambda_i)) / sum_{i<=t} lambda_i. For small lambda,
    psi_E(lambda) ~ lambda^2/8, so the radius shrinks like sqrt(s2 log(2/alpha)/2) log log t sqrt(log t / t).
    """
    t = np.arange(1, n + 1, dtype=float)
    la = np.minimum(np.sqrt(2 * math.log(2 / alpha) / (max(s2, 1e-300) * t * np.log1p(t))), truncation)
    psi = (-np.log1p(-la) - la) / 4
    return (math.log(2 / alpha) + np.cumsum(4 * s2 * psi)) / np.cumsum(la)


# --------------------------------------------------------------------- (b) normal mixture, Howard et al. 2021
def normal_mixture_rho(v_opt: float, alpha: float) -> float:
    """rho that makes the two-sided normal-mixture boundary tightest at intrinsic time V = v_opt.

    Minimising (v + rho) log((v + rho)/(rho alpha^2)) over rho at v = v_opt gives rho = v_opt / r with
    r = L + log(1 + r), L = 2 log(1/alpha) (solved by fixed-point iteration; a contraction since d/dr < 1).

    >>> r = 1000 / normal_mixture_rho(1000, 0.05); abs(r - 2 * math.log(20) - math.log(1 + r)) < 1e-12
    True
    """
    big_l = 2 * math.log(1 / alpha)
    r = big_l
    for _ in range(200):
        r = big_l + math.log1p(r)
    return float(v_opt) / r


def normal_mixture_radius(v: np.ndarray, rho: float, alpha: float) -> np.ndarray:
    """Howard et al. (2021) eq. (14): sqrt((v + rho) log((v + rho)/(rho alpha^2))), the bound on |S_t| at V_t = v.

    >>> round(float(normal_mixture_radius(np.array(1.0), 1.0, math.exp(-1))), 12)     # sqrt(2 (log 2 + 2))
    2.320839150204
    """
    v = np.asarray(v, dtype=float)
    return np.sqrt((v + rho) * np.log((v + rho) / (rho * alpha * alpha)))


def normal_mixture_sequence(x: np.ndarray, sigma2: float, alpha: float, *, n_opt: int = N_OPT,
                            intersect: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, lower, upper) of the normal-mixture CS along the last axis: mean_t +/- radius(sigma2 t)/t."""
    x = np.asarray(x, dtype=float)
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    mean = np.cumsum(x, axis=-1) / t
    rho = normal_mixture_rho(sigma2 * n_opt, alpha)
    rad = normal_mixture_radius(sigma2 * t, rho, alpha) / t
    lo, hi = mean - rad, mean + rad
    if intersect:
        lo, hi = np.maximum.accumulate(lo, axis=-1), np.minimum.accumulate(hi, axis=-1)
    return mean, lo, hi


def t_interval(x: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """The fixed-n two-sided t interval: mean -/+ t_{n-1, 1-alpha/2} sd / sqrt(n) (NaN bounds when n < 2)."""
    x = np.asarray(x, dtype=float)
    m = float(x.mean()) if x.size else float("nan")
    if x.size < 2:
        return m, float("nan"), float("nan")
    h = float(_dist.t_ppf(1 - alpha / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - h, m + h


def first_exclusion(lower: np.ndarray, upper: np.ndarray, null: float = 0.0) -> np.ndarray:
    """The first n (1-based) at which [lower_n, upper_n] excludes ``null`` along the last axis; 0 when never."""
    out = (np.asarray(lower) > null) | (np.asarray(upper) < null)
    hit = out.any(axis=-1)
    return np.where(hit, out.argmax(axis=-1) + 1, 0)


# ------------------------------------------------------------------------------------------ data -> x_i
def _frame(scores: Any, caller: str, order: Any = None) -> tuple[pd.DataFrame, Any]:
    """The long table of ``scores`` and the arrival ``order`` to use on it.

    A DataFrame goes through :func:`cjstats.read_scores` (the package's input rules: duplicate judge calls,
    missing values and column names are refused with its sentences, exactly as for a Scores table). Its rows
    arrive in table order, or sorted by the column ``order``: both are read off the DataFrame before
    read_scores sorts it and drops its other columns, and passed on as a list of scenario labels.
    """
    from cjstats.io.read import read_scores
    from cjstats.io.scores import Scores

    if isinstance(scores, Scores):
        return scores.to_frame(), order
    if not isinstance(scores, pd.DataFrame):
        raise CjstatsError(f"The 'scores' argument of {caller} must be a Scores table (cj.read_scores) or a pandas "
                           f"DataFrame with columns model, scenario, judge, score. Got {type(scores).__name__} "
                           f"instead.")
    df = read_scores(scores).to_frame()
    if order is None or (isinstance(order, str) and order in scores.columns and order not in df.columns):
        raw = scores.assign(_scenario=scores["scenario"].astype(str))
        arrival = list(dict.fromkeys(raw["_scenario"])) if order is None else \
            list(raw.groupby("_scenario", sort=False)[order].min().sort_values(kind="stable").index)
        have = list(dict.fromkeys(df["scenario"].astype(str)))
        known = set(have)
        order = [x for x in arrival if x in known]
        order += [x for x in have if x not in set(order)]
    return df, order


def scenario_differences(scores: Any, model_a: str, model_b: str | None = None, *, order: Any = None,
                         criterion: str | None = None, caller: str = "scenario_differences") -> pd.DataFrame:
    """Per scenario in arrival order: the panel means of a (and b) and x = mean_a - mean_b (or mean_a).

    Only scenarios scored for both models are kept (paired). Arrival order is ``order``: None (first appearance
    in the table), the name of a column (scenarios sorted by its first value, e.g. a timestamp) or a sequence
    of scenario labels. A DataFrame is read by :func:`cjstats.read_scores` first. Returns columns
    ``scenario, mean_a, [mean_b,] x``.
    """
    df, order = _frame(scores, caller, order)
    return _scenario_differences(df, model_a, model_b, order=order, criterion=criterion, caller=caller)


def _scenario_differences(df: pd.DataFrame, model_a: str, model_b: str | None, *, order: Any,
                          criterion: str | None, caller: str) -> pd.DataFrame:
    """:func:`scenario_differences` of a validated long table ``df`` (from :func:`_frame`)."""
    if "criterion" in df.columns:
        crits = list(dict.fromkeys(df["criterion"].dropna().astype(str)))
        if criterion is None and len(crits) > 1:
            raise CjstatsError(f"The scores have {len(crits)} criteria ({', '.join(crits[:5])}); pass criterion= to "
                               f"{caller} to say which one to monitor.")
        if criterion is not None:
            if str(criterion) not in crits:
                raise CjstatsError(f"The 'criterion' argument of {caller} is '{criterion}', which the scores do not "
                                   f"have (criteria: {', '.join(crits)}).")
            df = df[df["criterion"].astype(str) == str(criterion)]
    models = list(dict.fromkeys(df["model"].astype(str)))
    for name, m in (("model_a", model_a), ("model_b", model_b)):
        if m is not None and str(m) not in models:
            raise CjstatsError(f"The '{name}' argument of {caller} is '{m}', which the scores do not have (models: "
                               f"{', '.join(models)}).")
    if model_b is not None and str(model_a) == str(model_b):
        raise CjstatsError(f"The 'model_a' and 'model_b' arguments of {caller} are both '{model_a}'; name two "
                           f"different models (or leave model_b out to follow one model's mean).")
    y = pd.to_numeric(df["score"], errors="coerce")
    if y.isna().any() or not np.isfinite(y.to_numpy(dtype=float)).all():
        raise CjstatsError(f"The 'score' column passed to {caller} has {int((~np.isfinite(y.fillna(np.nan))).sum())} "
                           f"missing or non-numeric value(s); drop or fix those rows.")
    df = df.assign(score=y.astype(float), scenario=df["scenario"].astype(str), model=df["model"].astype(str))
    if order is None:
        arrival = list(dict.fromkeys(df["scenario"]))
    elif isinstance(order, str) and order in df.columns:
        arrival = list(df.groupby("scenario", sort=False)[order].min().sort_values(kind="stable").index)
    elif isinstance(order, str) or not isinstance(order, (Sequence, np.ndarray, pd.Index, pd.Series)):
        raise CjstatsError(f"The 'order' argument of {caller} must be None (table order), a column name or a list "
                           f"of scenario labels. Got {order!r}, which is neither a column nor a list.")
    else:
        arrival = [str(s) for s in order]
        scored = set(df["scenario"])
        unknown = [s for s in arrival if s not in scored]
        if unknown:
            raise CjstatsError(f"The 'order' argument of {caller} names scenario '{unknown[0]}', which the scores do "
                               f"not have; list only scored scenarios.")
    means = df.groupby(["model", "scenario"], sort=False)["score"].mean()
    a = means.loc[str(model_a)]
    out = pd.DataFrame({"scenario": arrival})
    out["mean_a"] = out["scenario"].map(a)
    if model_b is not None:
        out["mean_b"] = out["scenario"].map(means.loc[str(model_b)])
        out = out.dropna(subset=["mean_a", "mean_b"])
        out["x"] = out["mean_a"] - out["mean_b"]
    else:
        out = out.dropna(subset=["mean_a"])
        out["x"] = out["mean_a"]
    if len(out) < 2:
        both = "both models" if model_b is not None else f"model '{model_a}'"
        raise CjstatsError(f"{caller} needs at least 2 scenarios scored for {both}; the scores have {len(out)}.")
    return out.reset_index(drop=True)


def _bounds_pair(bounds: Any, caller: str) -> tuple[float, float]:
    """``bounds`` as two finite floats lowest < highest, or one sentence naming the argument and the fix."""
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise CjstatsError(f"The 'bounds' argument of {caller} must be a pair (lowest, highest) possible score, e.g. "
                           f"(1, 5). Got {bounds!r} instead.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise CjstatsError(f"The 'bounds' argument of {caller} must be two finite numbers with lowest < highest, "
                           f"e.g. (1, 5). Got {bounds!r} instead.")
    return lo, hi


def _bounds(bounds: Any, df: pd.DataFrame, caller: str) -> tuple[float, float]:
    if bounds is None:
        lo, hi = float(df["score"].min()), float(df["score"].max())
        warn(f"{caller}: no bounds given, so the score range [{lo:g}, {hi:g}] is taken from the data; pass "
             f"bounds=(lowest, highest) possible score (e.g. (1, 5)) for a CS that is valid whatever arrives next.")
        if hi <= lo:
            raise CjstatsError(f"Every score passed to {caller} equals {lo:g}; pass bounds=(lowest, highest) "
                               f"possible score.")
        return lo, hi
    lo, hi = _bounds_pair(bounds, caller)
    y = pd.to_numeric(df["score"], errors="coerce")
    if (y < lo).any() or (y > hi).any():
        raise CjstatsError(f"The 'bounds' argument of {caller} is ({lo:g}, {hi:g}), but scores run from "
                           f"{y.min():g} to {y.max():g}; give the scale's true end points.")
    return lo, hi


def confidence_sequence(scores: Any, model_a: str, model_b: str | None = None, *, alpha: float = 0.05,
                        order: Any = None, bounds: Any = None, method: str = "empirical_bernstein",
                        null: float = 0.0, variance: float | None = None, pilot: int = PILOT, n_opt: int = N_OPT,
                        truncation: float | None = None, criterion: str | None = None):
    """An anytime-valid confidence sequence over scenarios for a paired difference of two models (or one mean).

    Per scenario i in arrival order (``order``), x_i = panel mean of ``model_a`` - panel mean of ``model_b``
    (or model a's panel mean when ``model_b`` is None); with a shared schedule the judge offsets cancel in x_i.
    ``method``:

    * ``"empirical_bernstein"`` (default): Waudby-Smith & Ramdas (2024, JRSS-B) PrPl-EB (eq. (13)); needs the
      score range ``bounds=(lo, hi)`` (x then lies in [lo - hi, hi - lo], or [lo, hi] for one model).
      Valid for any bounded sequence whose conditional mean is constant; ``truncation`` is the cap c < 1 of
      the bets lambda_t (default 0.75).
    * ``"hedged_betting"``: Waudby-Smith & Ramdas (2024) hedged capital (Sec. 4.3): the set of means against which
      two hedged bettors have not yet multiplied their capital by 1/alpha; needs ``bounds`` as above; typically
      narrower than the empirical-Bernstein CS. ``truncation`` caps the bets at c/m (default 0.5).
    * ``"normal_mixture"``: Howard et al. (2021, Ann. Statist.) eq. (14) with variance proxy ``variance``, or
      the upper (1 - alpha) chi-square bound (n-1) s^2 / chi2_{n-1}(alpha) of the variance of the first ``pilot``
      scenarios (which the CS then skips; approximate), tightest near ``n_opt`` scenarios after the pilot.

    The CS stops the comparison at ``stop_at``, the first n at which it excludes ``null``; checking after every
    scenario is allowed. The result also holds the fixed-n t interval at the last scenario, for comparison.
    Returns a :class:`cjstats.results.sequential.SequenceResult`.
    """
    from cjstats.results.sequential import SequenceResult

    caller = "confidence_sequence"
    a = _alpha(alpha, caller)
    method = check_choice("method", method, METHODS, caller=caller)
    null = check_number("null", null, caller=caller)
    n_opt = check_positive_int("n_opt", n_opt, caller=caller)
    df, order = _frame(scores, caller, order)
    d = _scenario_differences(df, model_a, model_b, order=order, criterion=criterion, caller=caller)
    x = d["x"].to_numpy(dtype=float)
    n = len(x)
    notes: list[str] = []
    table = pd.DataFrame({"n": np.arange(1, n + 1), "scenario": d["scenario"], "x": x,
                          "mean": np.cumsum(x) / np.arange(1, n + 1)})
    lo_b = hi_b = float("nan")
    proxy = float("nan")
    start = 0
    if method == "empirical_bernstein":
        if variance is not None:
            raise CjstatsError(f"The 'variance' argument of {caller} applies to method='normal_mixture' only; the "
                               f"empirical-Bernstein CS estimates the variance itself. Leave it out.")
        lo_b, hi_b = _bounds(bounds, df, caller)
        low, span = (lo_b - hi_b, 2 * (hi_b - lo_b)) if model_b is not None else (lo_b, hi_b - lo_b)
        c, lo, hi = eb_sequence((x - low) / span, a, truncation=_truncation(
            TRUNCATION if truncation is None else truncation, caller))
        est, lower, upper = low + span * c, low + span * lo, low + span * hi
    elif method == "hedged_betting":
        if variance is not None:
            raise CjstatsError(f"The 'variance' argument of {caller} applies to method='normal_mixture' only; the "
                               f"hedged-betting CS needs no variance. Leave it out.")
        lo_b, hi_b = _bounds(bounds, df, caller)
        low, span = (lo_b - hi_b, 2 * (hi_b - lo_b)) if model_b is not None else (lo_b, hi_b - lo_b)
        c, lo, hi = hedged_sequence((x - low) / span, a, truncation=_truncation(
            HEDGED_TRUNCATION if truncation is None else truncation, caller))
        est, lower, upper = low + span * c, low + span * lo, low + span * hi
    else:
        if bounds is not None:
            lo_b, hi_b = _bounds(bounds, df, caller)
        if variance is None:
            pilot = check_positive_int("pilot", pilot, caller=caller, minimum=2)
            if n <= pilot:
                raise CjstatsError(f"{caller}(method='normal_mixture') estimates the variance from the first "
                                   f"{pilot} scenarios, but only {n} have arrived; wait for more, lower pilot= or "
                                   f"pass variance=.")
            # the upper (1 - alpha) chi-square bound of the pilot variance, so an unlucky pilot rarely shrinks the CS
            proxy = float(np.var(x[:pilot], ddof=1) * (pilot - 1) / _dist.chi2_ppf(a, pilot - 1))
            start = pilot
            notes.append(f"Variance proxy {proxy:.4g}: the upper {100 * (1 - a):g}% bound of the variance of the first "
                         f"{pilot} scenarios (a pilot; the CS starts after it; the guarantee is approximate).")
        else:
            proxy = check_number("variance", variance, caller=caller, minimum=0.0)
        if proxy <= 0:
            raise CjstatsError(f"The variance of x passed to or estimated by {caller} is 0; pass variance= > 0.")
        m, lo, hi = normal_mixture_sequence(x[start:], proxy, a, n_opt=n_opt)
        pad = np.repeat(np.nan, start)
        est, lower, upper = np.r_[pad, m], np.r_[pad, lo], np.r_[pad, hi]
    table["estimate"], table["lower"], table["upper"] = est, lower, upper
    table["width"] = upper - lower
    table["excludes_null"] = (lower > null) | (upper < null)
    stop = int(first_exclusion(np.nan_to_num(lower, nan=-np.inf), np.nan_to_num(upper, nan=np.inf), null))
    sign = 0 if stop == 0 else (1 if lower[stop - 1] > null else -1)
    t_est, t_lo, t_hi = t_interval(x, a)
    return SequenceResult(table=table, model_a=str(model_a), model_b=None if model_b is None else str(model_b),
                          alpha=a, method=method, null=null, bounds=(lo_b, hi_b), variance=proxy, pilot=start,
                          stop_at=stop if stop else None, sign=sign, t_estimate=t_est, t_lower=t_lo, t_upper=t_hi,
                          notes=tuple(notes))


# ------------------------------------------------------------------------------------------- planning
def per_scenario_variance(components: Any, strategy: str, *, budget: int = 1, k_total: int | None = None,
                          schedule: str = "shared", model_a: str | None = None, model_b: str | None = None,
                          caller: str = "per_scenario_variance") -> float:
    """Var(x_i) of one scenario's x under a judge strategy with ``budget`` calls per scenario and model.

    The decision layer's variance at n = 1 (one scenario, T = budget calls per model):
    :func:`cjstats.decisions.differences.difference_variance` for a pair (a joint fit from ``cj.fit_joint``
    with ``model_a``/``model_b``, or a mapping of its inputs ``s2_model_scenario, s2_generation, s2_residual,
    s2_judge_panel, s2_judge_difference``), or :func:`cjstats.decisions.formulas.strategy_variance` with the
    scenarios resampled for one model (a VarianceComponents or a mapping of its four components). At n = 1 a
    CyclicJudge rotation is a random start, so its judge term is the leftover R(K - R)/((K - 1) B^2) of one
    scenario: the cancellation *across* scenarios that lowers the variance of a fixed-n mean does not narrow a
    CS, whose width follows the per-scenario spread.
    """
    from cjstats.decisions.differences import difference_components, difference_variance

    budget = check_positive_int("budget", budget, caller=caller)
    diff_keys = ("s2_model_scenario", "s2_generation", "s2_residual", "s2_judge_panel", "s2_judge_difference")
    if isinstance(components, Mapping) and all(k in components for k in diff_keys):
        comps = {k: components[k] for k in diff_keys}
        if k_total is None:
            raise CjstatsError(f"{caller} needs k_total (judges in the panel) when the components are a mapping.")
    elif hasattr(components, "cell_means"):
        models = list(components.models)
        if model_a is None or model_b is None:
            order = np.argsort(-components.model_means())
            model_a, model_b = models[order[0]], models[order[1]]
        comps = difference_components(components, model_a, model_b)
        k_total = len(components.judges) if k_total is None else k_total
    else:
        from cjstats.decisions.formulas import strategy_variance
        from cjstats.decisions.inputs import group_components

        g = group_components(components, model_a, caller=caller)
        kt = k_total or g.n_judges
        if kt is None:
            raise CjstatsError(f"{caller} needs k_total (judges in the panel) when the components are a mapping.")
        gen = g.estimates["generation"]
        return strategy_variance(strategy, s2_generation=0.0 if math.isnan(gen) else gen,
                                 s2_residual=g.estimates["residual"], s2_judge_panel=g.estimates["judge_panel"],
                                 budget=budget, n=1, k_total=int(kt), s2_scenario=g.estimates["scenario"],
                                 s2_scenario_judge=g.scenario_judge)
    kt = check_positive_int("k_total", k_total, caller=caller)
    return difference_variance(strategy, budget=budget, n=1, k_total=kt, schedule=schedule, **comps)


def _stopping_times(v: float, delta: float, alpha: float, method: str, *, n_max: int, replicates: int, seed: int,
                    span: tuple[float, float] | None, n_opt: int) -> np.ndarray:
    """Simulated stopping times of the CS on x_i ~ N(delta, v) (clipped to ``span`` for the bounded CS)."""
    rng = np.random.default_rng(seed)
    out = np.empty(replicates, dtype=int)
    for i in range(0, replicates, 50):
        r = min(50, replicates - i)
        x = delta + math.sqrt(v) * rng.standard_normal((r, n_max))
        if method == "empirical_bernstein":
            low, high = span
            y = (np.clip(x, low, high) - low) / (high - low)
            _, lo, hi = eb_sequence(y, alpha)
            null = -low / (high - low)
        else:
            _, lo, hi = normal_mixture_sequence(x, v, alpha, n_opt=n_opt)
            null = 0.0
        out[i:i + r] = first_exclusion(lo, hi, null)
    return out


def _observed_range(fit: Any) -> tuple[float, float] | None:
    """(min, max) of the scores a fit saw, from its recorded score shape (``diagnostics`` of a joint fit,
    ``provenance`` of a VarianceComponents); None for a mapping of variances or a fit without one."""
    for name in ("diagnostics", "provenance"):
        info = getattr(fit, name, None)
        shape = info.get("score_shape") if isinstance(info, Mapping) else None
        if isinstance(shape, Mapping):
            lo, hi = shape.get("min"), shape.get("max")
            if lo is not None and hi is not None and math.isfinite(float(lo)) and math.isfinite(float(hi)):
                return float(lo), float(hi)
    return None


def _plan_bounds(bounds: Any, fit: Any, method: str, caller: str) -> tuple[float, float, tuple[str, ...]]:
    """The score scale (lo, hi) of a plan: ``bounds`` when given (refused when it does not contain the fit's
    observed scores), else the fit's observed range; a mapping without bounds is refused for the
    empirical-Bernstein CS, which needs the scale (the normal mixture does not: NaN)."""
    seen = _observed_range(fit)
    if bounds is None:
        if seen is None or not seen[1] > seen[0]:
            if method == "empirical_bernstein":
                raise CjstatsError(f"{caller} needs the score scale for the empirical-Bernstein CS, and "
                                   f"{'a mapping of variances' if isinstance(fit, Mapping) else 'this fit'} does not "
                                   f"record it; pass bounds=(lowest, highest) possible score, e.g. bounds=(1, 5).")
            return math.nan, math.nan, ()
        return seen[0], seen[1], (f"Score scale [{seen[0]:g}, {seen[1]:g}]: the range of the scores the fit saw; pass "
                                  f"bounds=(lowest, highest) for the scale's end points.",)
    lo, hi = _bounds_pair(bounds, caller)
    if seen is not None and (seen[0] < lo or seen[1] > hi):
        raise CjstatsError(f"The 'bounds' argument of {caller} is ({lo:g}, {hi:g}), but the fit's scores run from "
                           f"{seen[0]:g} to {seen[1]:g}; give the scale's true end points, which contain "
                           f"[{seen[0]:g}, {seen[1]:g}].")
    return lo, hi, ()


def sequential_plan(components_or_fit: Any, *, delta: float, alpha: float = 0.05,
                    strategies: Sequence[str] = ("all", "random", "cyclic"), budget: int = 1,
                    k_total: int | None = None, schedule: str = "shared", models: tuple[str, str] | None = None,
                    method: str = "empirical_bernstein", bounds: tuple[float, float] | None = None,
                    n_max: int = 5000, replicates: int = 400, seed: int = 0, n_opt: int = N_OPT):
    """Scenarios a sequential comparison needs to decide a difference ``delta`` at level ``alpha``, per strategy.

    For each judge strategy (paper Eqs. 3-5) the per-scenario variance v of x (:func:`per_scenario_variance`,
    ``budget`` calls per scenario and model) gives

    * ``n_width``: the first n at which the CS's oracle radius (:func:`eb_oracle_radius`, or the normal-mixture
      radius at V = v n) is <= |delta|: where the CS around an estimate at delta stops touching 0;
    * ``expected_n``: the mean stopping time of the CS on x_i ~ N(delta, v) (``replicates`` seeded runs,
      truncated at ``n_max``; ``expected_n_se`` its Monte Carlo error, ``p_stop`` the share stopped by n_max);
    * ``n_fixed``: the fixed-n sample size of a two-sided z test with 80% power, (z_{1-alpha/2} + z_0.8)^2 v/delta^2.

    ``bounds = (lo, hi)``, the score scale, sets the range [lo - hi, hi - lo] of x for the empirical-Bernstein
    CS. Without it the scale is the range of the scores the fit saw (a joint fit records it,
    ``fit.diagnostics["score_shape"]``; the plan's notes say so); a mapping of variances carries no scale, so
    the empirical-Bernstein plan then needs ``bounds=``. Bounds that do not contain the fit's scores are
    refused. Returns a :class:`cjstats.results.sequential.SequentialPlan`.
    """
    from cjstats.decisions.formulas import STRATEGIES
    from cjstats.results.sequential import SequentialPlan

    caller = "sequential_plan"
    a = _alpha(alpha, caller)
    delta = check_number("delta", delta, caller=caller)
    if delta == 0:
        raise CjstatsError(f"The 'delta' argument of {caller} is 0; a CS never decides a zero difference. Pass the "
                           f"smallest difference worth detecting, e.g. 0.1.")
    method = check_choice("method", method, PLAN_METHODS, caller=caller)
    check_choice("schedule", schedule, ("shared", "independent"), caller=caller)
    n_max = check_positive_int("n_max", n_max, caller=caller, minimum=2)
    replicates = check_positive_int("replicates", replicates, caller=caller)
    if isinstance(strategies, str):
        strategies = (strategies,)
    for s in strategies:
        check_choice("strategies", s, STRATEGIES, caller=caller)
    if not (hasattr(components_or_fit, "cell_means") or (isinstance(components_or_fit, Mapping)
                                                            and "s2_model_scenario" in components_or_fit)):
        raise CjstatsError(f"The first argument of {caller} must be a joint fit (cj.fit_joint) or a mapping of "
                           f"difference_variance inputs (s2_model_scenario, s2_generation, s2_residual, "
                           f"s2_judge_panel, s2_judge_difference). Got {type(components_or_fit).__name__} instead.")
    lo, hi, bound_notes = _plan_bounds(bounds, components_or_fit, method, caller)
    span = (lo - hi, hi - lo)
    ma, mb = (None, None) if models is None else models
    z = _dist.norm_ppf(1 - a / 2) + _dist.norm_ppf(0.8)
    rows = []
    for k, s in enumerate(strategies):
        v = per_scenario_variance(components_or_fit, s, budget=budget, k_total=k_total, schedule=schedule,
                                  model_a=ma, model_b=mb, caller=caller)
        if method == "empirical_bernstein":
            w = span[1] - span[0]
            rad = w * eb_oracle_radius(v / (w * w), a, n_max)
        else:
            t = np.arange(1, n_max + 1, dtype=float)
            rad = normal_mixture_radius(v * t, normal_mixture_rho(v * n_opt, a), a) / t
        ok = np.nonzero(rad <= abs(delta))[0]
        n_width = int(ok[0] + 1) if ok.size else None
        st = _stopping_times(v, delta, a, method, n_max=n_max, replicates=replicates, seed=seed + k, span=span,
                             n_opt=n_opt)
        stopped = st > 0
        tt = np.where(stopped, st, n_max).astype(float)
        rows.append({"strategy": s, "variance": v, "sd": math.sqrt(v), "n_width": n_width,
                     "expected_n": float(tt.mean()), "expected_n_se": float(tt.std(ddof=1) / math.sqrt(len(tt))),
                     "median_n": float(np.median(tt)), "p_stop": float(stopped.mean()),
                     "n_fixed": int(math.ceil(z * z * v / (delta * delta)))})
    table = pd.DataFrame(rows)
    notes = list(bound_notes)
    if (table["p_stop"] < 1).any():
        notes.append(f"Some runs had not stopped by n_max = {n_max}; their expected_n counts them at n_max (a lower "
                     f"bound). Raise n_max.")
        warn(f"{caller}: some simulated comparisons had not stopped by n_max = {n_max}; expected_n is a lower bound "
             f"there. Raise n_max.")
    return SequentialPlan(table=table, delta=delta, alpha=a, method=method, budget=int(budget),
                          schedule=schedule, bounds=(lo, hi), replicates=replicates, n_max=n_max,
                          seed=int(seed), notes=tuple(notes))
