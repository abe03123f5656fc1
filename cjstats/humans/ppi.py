"""Each model's mean on the human scale from all judge scores plus human labels on a subset (PPI++).

For one model (and criterion) the units are its scenarios. n of them carry a human value Y (the mean of the
reference ratings) and the judges' prediction f (the panel mean, or one judge); N more carry f only. The
power-tuned prediction-powered estimate (PPI++, Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453) is

    theta = lambda mean_N(f) + mean_n(Y - lambda f),      lambda = Cov(Y - theta, f - theta) / ((1 + n/N) Var(f))

clipped to [0, 1] (lambda = 0 is the human-only mean, 1 is plain PPI), with the z interval on
SE^2 = Var(lambda f)_N / N + Var(Y - lambda f)_n / n. The numbers are computed by ``ppi_py``
(``ppi_mean_pointestimate``, ``ppi_mean_ci`` with ``lam=None``), which assumes the labelled and unlabelled
units are independent draws: that holds here because the unit is the scenario (one item per scenario and
model when m = 1). Where ``ppi_py`` does not fit, we say so in ``note``:

* m > 1 generations per scenario: generations are clustered in scenarios, so they are first averaged into
  their scenario (labelled scenarios over their labelled generations) and the scenario is the unit;
* every judged unit has a human label (N = 0): there is nothing for the judges to add, the estimate is the
  human-only mean (``method = "human-only"``).

Paired differences ``difference[a,b]`` use the same estimator on the per-scenario differences Y_a - Y_b and
f_a - f_b: labelled where both models have a human label on the scenario. Alongside: the human-only mean of
the labelled units, the judge-only mean of all units (on the judges' scale, biased by the judges' bias), and
``n_effective`` = Var(Y)/(n SE^2) * n, the number of human labels a human-only mean would need for the same SE.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cjstats._validate import check_positive_int, resolve_ci_level
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.humans._items import PANEL, paired_items
from cjstats.scores import Scores

__all__ = ["ppi_means", "PPIMeans", "ppi_mean_tuned"]

_COLS = ["estimate", "std_error", "lower", "upper", "ci_level", "method", "lam", "n_labeled", "n_unlabeled",
         "rho", "sigma2_human", "human_only", "human_only_se", "human_only_lower", "human_only_upper",
         "judge_only", "judge_only_se", "judge_only_lower", "judge_only_upper", "n_effective", "note"]


# ------------------------------------------------------------------------------------ pure formula layer
def ppi_mean_tuned(y: np.ndarray, f: np.ndarray, f_unlabeled: np.ndarray, *, lam: float | None = None
                   ) -> tuple[float, float, float]:
    """PPI++ mean, its SE and the tuning weight lambda, exactly as ``ppi_py`` computes them (numpy only).

    lambda = clip( (1/n) sum (Y-t)(f-t) / ((1 + n/N) Var_{n+N}(f)), 0, 1 ),  t = mean_N(f) + mean_n(Y - f),
    theta = lambda mean_N(f) + mean_n(Y - lambda f),  SE^2 = sd_N(lambda f)^2/N + sd_n(Y - lambda f)^2/n
    (sd with divisor n, as ``ppi_py``). Used for lambda and the SE; the reported estimate and interval come
    from ``ppi_py`` itself, and tests check the two agree to 1e-10.
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


@functools.lru_cache(maxsize=8)
def _z(ci_level: float) -> float:
    return float(stats.norm.ppf(0.5 + ci_level / 2))


def _z_interval(est: float, se: float, z: float) -> tuple[float, float]:
    return est - z * se, est + z * se


def _estimate(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray, *, lam: float | None, ci_level: float,
              note: str) -> dict[str, Any]:
    """One PPI++ row with its human-only and judge-only companions (y, f_lab: labelled units; f_unl: others)."""
    z = _z(ci_level)
    n, big_n = len(y), len(f_unl)
    out: dict[str, Any] = dict.fromkeys(_COLS, np.nan)
    out.update(ci_level=ci_level, n_labeled=n, n_unlabeled=big_n, note=note, method="ppi++" if lam is None else
               ("ppi" if lam == 1 else f"ppi(lam={lam:g})"))
    f_all = np.concatenate([f_lab, f_unl])
    if len(f_all) >= 2:
        out["judge_only"] = float(f_all.mean())
        out["judge_only_se"] = float(f_all.std() / np.sqrt(len(f_all)))
        out["judge_only_lower"], out["judge_only_upper"] = _z_interval(out["judge_only"], out["judge_only_se"], z)
    if n < 2:
        out["method"] = "none"
        return out
    out["human_only"] = float(y.mean())
    out["human_only_se"] = float(y.std() / np.sqrt(n))
    out["human_only_lower"], out["human_only_upper"] = _z_interval(out["human_only"], out["human_only_se"], z)
    out["sigma2_human"] = float(y.var(ddof=1))
    if np.std(y) == 0:
        note = "; ".join(x for x in (note, f"every human label is {y[0]:g}, so the normal interval has zero "
                                           f"width and does not cover the uncertainty") if x)
        out["note"] = note
    out["rho"] = float(np.corrcoef(y, f_lab)[0, 1]) if np.std(y) > 0 and np.std(f_lab) > 0 else np.nan
    if big_n == 0 or np.var(f_all) == 0:
        out.update(estimate=out["human_only"], std_error=out["human_only_se"], lower=out["human_only_lower"],
                   upper=out["human_only_upper"], lam=0.0, method="human-only", n_effective=float(n))
        reason = ("every judged unit has a human label, so the judges add nothing" if big_n == 0 else
                  "the judges give every unit the same score")
        out["note"] = "; ".join(x for x in (note, reason) if x)
        return out
    import ppi_py

    alpha = 1.0 - ci_level
    yl, fl, fu = y.reshape(-1, 1), f_lab.reshape(-1, 1), f_unl.reshape(-1, 1)
    est = float(np.squeeze(ppi_py.ppi_mean_pointestimate(yl, fl, fu, lam=lam)))
    lo, hi = (float(np.squeeze(v)) for v in ppi_py.ppi_mean_ci(yl, fl, fu, alpha=alpha, lam=lam))
    _, se, lam_used = ppi_mean_tuned(y, f_lab, f_unl, lam=lam)
    out.update(estimate=est, std_error=se, lower=lo, upper=hi, lam=lam_used)
    out["n_effective"] = float(out["human_only_se"] ** 2 * n / se ** 2) if se > 0 else np.nan
    return out


# ---------------------------------------------------------------------------------------- result type
@dataclass(frozen=True, slots=True)
class PPIMeans:
    """Human-scale model means and paired differences by PPI++.

    Attributes
    ----------
    means : DataFrame
        ``model, [criterion], estimand ("human_mean[p]"), estimate, std_error, lower, upper, ci_level, method,
        lam, n_labeled, n_unlabeled, rho, sigma2_human, human_only(_se/_lower/_upper), judge_only(_se/_lower/
        _upper), n_effective, note``.
    differences : DataFrame
        The same columns for ``difference[a,b]`` with ``model_a, model_b`` instead of ``model``.
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

    def label_budgets(self, *, label_cost: float, judge_cost: float, target_se: float | None = None,
                      budget: float | None = None, n_max: int | None = None,
                      differences: bool = False) -> pd.DataFrame:
        """For every mean (or difference): human labels and judged units to buy, from the estimated rho.

        Applies :func:`cjstats.humans.design.label_budget` to each row with sigma2 = ``sigma2_human`` and
        rho = ``rho``; ``n_max`` defaults to the row's units (n_labeled + n_unlabeled).
        """
        from cjstats.humans.design import label_budget

        src = self.differences if differences else self.means
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
                               target_se=target_se, budget=budget, n_max=cap, judges_per_unit=self.judges_per_unit,
                               labels_per_unit=2 if differences else 1)
            rows.append({**base, "rho": r["rho"], "sigma2_human": r["sigma2_human"], **res})
        return pd.DataFrame(rows)

    def as_latex(self, digits: int = 3) -> str:
        """Human-scale means (and differences) as booktabs LaTeX tables (:func:`cjstats.tables.as_latex`)."""
        from cjstats.tables import as_latex

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
        return (f"Human-scale means by PPI++ (judge prediction: {self.judge}; {pct} intervals)\n"
                + t.round(digits).to_string(index=False))

    def __str__(self) -> str:
        return self.as_text()


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


def _split(u: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lab = u["y"].notna().to_numpy()
    return (u["y"].to_numpy()[lab], u["f_lab"].to_numpy()[lab], u["f_all"].to_numpy()[~lab])


def ppi_means(scores: Scores, reference: str | list[str] | None = None, *, judge: str | None = None,
              n_labels: int | None = None, lam: float | None = None, differences: bool = True,
              ci_level: float | None = None, seed: int | None = None) -> PPIMeans:
    """Each model's human-scale mean (and paired differences) from all judge scores + human labels, by PPI++.

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
    try:
        import ppi_py  # noqa: F401
    except ImportError as exc:
        raise CjstatsError("ppi_means needs the ppi-python package: pip install 'cjstats[humans]'.") from exc
    paired = paired_items(scores, reference=reference, caller="ppi_means")
    col = PANEL if judge is None else str(judge)
    if col not in paired.judges and col != PANEL:
        raise CjstatsError(f"The 'judge' argument of ppi_means must be one of the LLM judges "
                           f"({', '.join(paired.judges)}) or None for the panel mean. Got {judge!r} instead.")
    items = paired.items
    labeled = (items["n_human"] > 0).to_numpy().copy()
    prov: dict[str, Any] = {"engine": "ppi_py", "unit": "scenario", "seed": seed}
    if n_labels is not None:
        n_labels = check_positive_int("n_labels", n_labels, caller="ppi_means", minimum=2)
        pool = np.sort(pd.unique(items.loc[labeled, "scenario"]))
        rng = np.random.default_rng(seed)
        chosen = rng.choice(pool, size=min(n_labels, len(pool)), replace=False)
        labeled = labeled & items["scenario"].isin(chosen).to_numpy()
        prov["n_labels"] = f"{min(n_labels, len(pool))} of {len(pool)} labelled scenarios used (seed {seed})"
    mean_rows, diff_rows = [], []
    clustered = False
    for crit, part in items.assign(_lab=labeled).groupby("criterion", dropna=False, sort=True):
        crit = None if (isinstance(crit, float) and np.isnan(crit)) else crit
        units: dict[str, pd.DataFrame] = {}
        for model, mp in part.groupby("model", sort=True):
            u, agg = _units(mp, col, mp["_lab"].to_numpy())
            clustered |= agg
            units[str(model)] = u
            note = "generations averaged into their scenario (unit = scenario)" if agg else ""
            y, fl, fu = _split(u)
            if len(y) < 2:
                where = f"model '{model}'" + ("" if crit is None else f", criterion '{crit}'")
                what = "no human label" if len(y) == 0 else "a single human label"
                msg = (f"{where[0].upper() + where[1:]} has {what} among its judged items, so its human-scale "
                       f"mean is not estimable (NaN).")
                warnings.warn(msg, CjstatsWarning, stacklevel=2)
                note = "; ".join(x for x in (note, msg) if x)
            mean_rows.append({"model": str(model), "criterion": crit, "estimand": f"human_mean[{model}]",
                              **_estimate(y, fl, fu, lam=lam, ci_level=ci_level, note=note)})
        if not differences:
            continue
        names = sorted(units)
        scen = pd.Index(sorted(set().union(*(u.index for u in units.values()))))
        cube = np.stack([units[m].reindex(scen)[["y", "f_lab", "f_all"]].to_numpy(dtype=np.float64) for m in names])
        for ia, ib in itertools.combinations(range(len(names)), 2):
            a, b = names[ia], names[ib]
            d = cube[ia] - cube[ib]                      # NaN wherever either model lacks the value
            common = np.isfinite(d[:, 2])
            lab = common & np.isfinite(d[:, 0])
            y, fl, fu = d[lab, 0], d[lab, 1], d[common & ~lab, 2]
            note = "" if len(y) >= 2 else "fewer than 2 scenarios with a human label on both models"
            diff_rows.append({"model_a": a, "model_b": b, "criterion": crit, "estimand": f"difference[{a},{b}]",
                              **_estimate(y, fl, fu, lam=lam, ci_level=ci_level, note=note)})
    if not any(r["n_labeled"] >= 2 for r in mean_rows):
        raise CjstatsError("No model has human labels on 2 or more of its judged scenarios, so no human-scale "
                           "mean can be estimated; add reference ratings or raise n_labels.")
    means = pd.DataFrame(mean_rows)
    diffs = pd.DataFrame(diff_rows, columns=["model_a", "model_b", "criterion", "estimand", *_COLS])
    if not scores.has_criterion:
        means, diffs = means.drop(columns="criterion"), diffs.drop(columns="criterion")
    if clustered:
        prov["clustered"] = "m > 1: generations averaged into scenarios before PPI (ppi_py assumes iid units)"
    k = 1 if judge is not None else len(paired.judges)
    return PPIMeans(means=means, differences=diffs, judge=col, judges_per_unit=k, ci_level=ci_level,
                    provenance=prov)
