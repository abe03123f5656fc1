"""How many human labels and judge calls to buy: closed forms from the PPI++ variance (pure formulas).

Setting. A unit (an item for a model's mean; a scenario for a paired difference) has a human value Y and a
judge prediction f (the panel mean). n units get a human label (and judge scores, needed to correct the
judges), N more units get judge scores only; T = n + N units are judged in all. With the power-tuned
weight lambda* = Cov(Y, f) / (Var(f) (1 + n/N)) (Angelopoulos, Duchi & Zrnic 2023, PPI++, Example 6.1), the
variance of the PPI++ mean is

    V(n, T) = sigma2 (1 - rho^2) / n + sigma2 rho^2 / T,        sigma2 = Var(Y), rho = Corr(Y, f),

the variance of classical double sampling with a regression estimator (Cochran 1977, section 12.6). A human-
only mean from n labels has sigma2 / n, so the judges are worth

    n_eff = sigma2 / V = n T / (n + (1 - rho^2) (T - n))     human labels.

With prices c_h per labelled unit and c_f per judged unit (cost C = n c_h + T c_f), minimising C for a target
V (or V for a budget C) gives, with A = sigma2 (1 - rho^2) and B = sigma2 rho^2 (Lagrange),

    n = sqrt(A / c_h) S / V,   T = sqrt(B / c_f) S / V,   C = S^2 / V,   S = sqrt(A c_h) + sqrt(B c_f),

so n / T = sqrt((1 - rho^2) c_f / (rho^2 c_h)). When that ratio is >= 1 (judges too noisy or too dear:
(1 - rho^2) c_f >= rho^2 c_h), the judges do not pay and the answer is human labels only. When T would exceed
the units available (``n_max``), T = n_max and n = A / (V - B / n_max). These agree with ``ppi_py``'s
``ppi_power`` (tested), which follows Broska, Howes & van Loon (2024).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from cjstats._validate import check_number
from cjstats.exceptions import CjstatsError

__all__ = ["ppi_variance", "effective_labels", "label_budget", "label_budgets"]


def ppi_variance(sigma2: float, rho: float, *, n: float, n_total: float) -> float:
    """Variance of the PPI++ mean with the optimal lambda: sigma2 (1 - rho^2)/n + sigma2 rho^2 / T.

    ``n`` labelled units out of ``n_total`` = T judged units (T >= n; T = n gives sigma2/n, the human-only
    variance, because the judges then carry no information beyond the labels).
    """
    if n <= 0 or n_total < n:
        raise CjstatsError(f"ppi_variance needs 0 < n <= n_total. Got n={n!r}, n_total={n_total!r}.")
    r2 = min(max(rho, -1.0), 1.0) ** 2
    return sigma2 * (1.0 - r2) / n + sigma2 * r2 / n_total


def effective_labels(n: float, n_total: float, rho: float) -> float:
    """Human labels a human-only mean would need for the PPI++ variance: n T / (n + (1 - rho^2)(T - n))."""
    r2 = min(max(rho, -1.0), 1.0) ** 2
    return n * n_total / (n + (1.0 - r2) * (n_total - n))


def _design(n: int, t: int, sigma2: float, rho: float, c_h: float, c_f: float) -> dict[str, Any]:
    v = ppi_variance(sigma2, rho, n=n, n_total=t) if t > 0 else sigma2 / n
    return {"n_labels": n, "n_judged": t, "cost": n * c_h + t * c_f, "se": math.sqrt(v)}


def label_budget(*, sigma2: float, rho: float, label_cost: float, judge_cost: float,
                 target_se: float | None = None, budget: float | None = None, n_max: int | None = None,
                 judges_per_unit: int = 1, labels_per_unit: int = 1) -> dict[str, Any]:
    """Cheapest (n labels, T judged units) for a target SE, or the smallest SE for a budget (module formulas).

    Parameters
    ----------
    sigma2, rho : float
        Var(Y) of the human value per unit and Corr(Y, f) with the judges' prediction (estimated on data).
    label_cost, judge_cost : float
        Price of one human label and of one judge call.
    target_se, budget : float
        Exactly one: the standard error to reach, or the money to spend.
    n_max : int, optional
        Units available (scenarios in the dataset); caps T.
    judges_per_unit : int
        Judge calls per unit (the panel size K when f is the panel mean); c_f = judge_cost * judges_per_unit.
    labels_per_unit : int
        Labels (and judged responses) per unit: 1 for a model's mean, 2 for a paired difference of two
        models on the same scenario. Multiplies both prices.

    Returns
    -------
    dict
        ``n_labels, n_judged, cost, se`` of the PPI++ design; ``human_only_labels, human_only_cost,
        human_only_se`` of the best human-only design; ``saving`` (1 - cost / human-only cost, target mode)
        and ``note`` (why the design is human-only or infeasible, else empty).
    """
    sigma2 = check_number("sigma2", sigma2, caller="label_budget", minimum=0.0)
    rho = check_number("rho", rho, caller="label_budget")
    c_h = check_number("label_cost", label_cost, caller="label_budget", minimum=0.0) * labels_per_unit
    c_f = check_number("judge_cost", judge_cost, caller="label_budget", minimum=0.0) * judges_per_unit * labels_per_unit
    if (target_se is None) == (budget is None):
        raise CjstatsError("label_budget needs exactly one of target_se= and budget=. Got "
                           f"target_se={target_se!r}, budget={budget!r}.")
    if c_h <= 0:
        raise CjstatsError(f"The 'label_cost' argument of label_budget must be > 0. Got {label_cost!r} instead.")
    if c_f == 0 and n_max is None:
        raise CjstatsError("label_budget with free judge calls (judge_cost=0) needs n_max, the number of units "
                           "available: otherwise it would judge infinitely many.")
    r2 = min(rho * rho, 1.0)
    a, b = sigma2 * (1 - r2), sigma2 * r2
    s = math.sqrt(a * c_h) + math.sqrt(b * c_f)
    judges_pay = r2 > 0 and (1 - r2) * c_f < r2 * c_h
    cap = float("inf") if n_max is None else float(n_max)
    note = "" if judges_pay else "the judges do not pay at these prices and this correlation: human labels only"
    if target_se is not None:
        v = check_number("target_se", target_se, caller="label_budget", minimum=0.0) ** 2
        if v <= 0:
            raise CjstatsError("The 'target_se' argument of label_budget must be > 0. Got 0 instead.")
        h_n = math.ceil(sigma2 / v)
        human = {"human_only_labels": h_n, "human_only_cost": h_n * c_h, "human_only_se": math.sqrt(sigma2 / h_n)}
        if h_n > cap and (not judges_pay or sigma2 / cap > v):
            return {"n_labels": math.nan, "n_judged": math.nan, "cost": math.nan, "se": math.nan, **human,
                    "saving": math.nan, "note": f"target_se {target_se:g} is out of reach with {n_max} units: "
                                                f"even labelling all gives {math.sqrt(sigma2 / cap):.4g}"}
        if not judges_pay:
            return {**_design(h_n, 0, sigma2, rho, c_h, c_f), **human, "saving": 0.0, "note": note}
        t = math.sqrt(b / c_f) * s / v if c_f > 0 else cap
        if t >= cap:
            t = cap
            n = a / (v - b / t)
        else:
            n = math.sqrt(a / c_h) * s / v
        n_i = max(2, math.ceil(n - 1e-9))
        t_i = max(n_i, math.ceil(t - 1e-9)) if math.isfinite(t) else n_i
        out = _design(n_i, t_i, sigma2, rho, c_h, c_f)
        return {**out, **human, "saving": 1 - out["cost"] / human["human_only_cost"], "note": note}
    budget = check_number("budget", budget, caller="label_budget", minimum=0.0)
    h_n = int(min(budget // c_h, cap))
    human = {"human_only_labels": h_n, "human_only_cost": h_n * c_h,
             "human_only_se": math.sqrt(sigma2 / h_n) if h_n > 0 else math.nan}
    if h_n < 2:
        return {"n_labels": math.nan, "n_judged": math.nan, "cost": math.nan, "se": math.nan, **human,
                "saving": math.nan, "note": f"budget {budget:g} buys fewer than 2 human labels"}
    if not judges_pay:
        return {**_design(h_n, 0, sigma2, rho, c_h, c_f), **human, "saving": math.nan, "note": note}
    n = budget * math.sqrt(a / c_h) / s
    t = budget * math.sqrt(b / c_f) / s if c_f > 0 else cap
    if t >= cap:
        t = cap
        n = min((budget - t * c_f) / c_h, t)
    n_i = max(2, math.floor(n + 1e-9))
    t_i = max(n_i, math.floor(t + 1e-9)) if math.isfinite(t) else n_i
    return {**_design(n_i, t_i, sigma2, rho, c_h, c_f), **human, "saving": math.nan, "note": note}


def label_budgets(ppi: Any, *, label_cost: float, judge_cost: float, target_se: float | None = None,
                  budget: float | None = None, n_max: int | None = None,
                  differences: bool = False) -> pd.DataFrame:
    """For every mean (or difference) of a :func:`cjstats.ppi_means` result: human labels and judged units to buy.

    Applies :func:`label_budget` to each row with sigma2 = ``sigma2_human`` and
    rho = ``rho``; ``n_max`` defaults to the row's units (n_labeled + n_unlabeled).
    """
    src = ppi.differences if differences else ppi.means
    keys = [c for c in ("model", "model_a", "model_b", "criterion", "estimand") if c in src.columns]
    rows = []
    for r in src.itertuples(index=False):
        r = r._asdict()
        base = {k: r[k] for k in keys}
        if not (np.isfinite(r["sigma2_human"]) and np.isfinite(r["rho"])):
            rows.append({**base, "note": "no estimate of Var(Y) and rho: fewer than 2 labelled units or "
                                         "labels (or judge predictions) that never vary"})
            continue
        cap = n_max if n_max is not None else int(r["n_labeled"] + r["n_unlabeled"])
        res = label_budget(sigma2=r["sigma2_human"], rho=r["rho"], label_cost=label_cost, judge_cost=judge_cost,
                           target_se=target_se, budget=budget, n_max=cap, judges_per_unit=ppi.judges_per_unit,
                           labels_per_unit=2 if differences else 1)
        rows.append({**base, "rho": r["rho"], "sigma2_human": r["sigma2_human"], **res})
    return pd.DataFrame(rows)

