"""The figures of cjstats: each function takes the result it draws and returns a matplotlib Figure.

Drawing only: plots and reports draw and render results and never compute a statistic;
every number on a figure comes from a result object or from a formula function of :mod:`cjstats.decisions.formulas`.
Nothing here calls ``show()``; matplotlib is imported inside the functions.
"""

from __future__ import annotations


import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from cjstats._defaults import CI_LEVEL
from cjstats.results.estimands import COMPONENTS
from cjstats.exceptions import CjstatsError
from cjstats.plots._style import (
    PALETTE, STRATEGY_COLOURS, label_inches, new_axes, require_columns, require_packages,
)

__all__ = ["judge_bias_heatmap", "strategy_curves", "components_forest", "allocation_frontier", "posterior",
           "rank_plot", "coverage_plot"]

_STRATEGY_LABEL = {"all": "A: all judges", "random": "B: random judge", "cyclic": "C: CyclicJudge",
                   "weighted": "weighted (Neyman)"}
_VARIANCE_COMPONENTS = tuple(c for c in COMPONENTS if c != "mu")
_SYMBOL = {"mu": "mu", "scenario": "sigma2_alpha", "generation": "sigma2_beta", "scenario_judge": "sigma2_alpha.gamma",
           "residual": "sigma2_eps",
           "judge_panel": "sigma2_gamma (panel)", "judge_population": "sigma2_gamma (population)"}


def _is_fit(obj: Any) -> bool:
    from cjstats.results.components import VarianceComponents

    return isinstance(obj, VarianceComponents)


def _group_label(key: Mapping[str, Any]) -> str:
    return " / ".join(str(v) for v in key.values() if v is not None and v == v)


# ------------------------------------------------------------------------------------------- heatmap
def judge_bias_heatmap(scores_or_fit: Any, *, criterion: str | None = None, ax: Any = None,
                       cmap: str = "RdBu_r", digits: int = 2) -> Any:
    """Models x judges heatmap of judge bias: each model's mean under each judge minus the panel mean (paper Fig. 2).

    The cell for model p and judge l is gamma[l] = (mean score of p under judge l) - (panel mean of p), the
    judge offsets (``fit.judge_offsets``). From a :class:`~cjstats.io.scores.Scores` table the values come from
    :func:`cjstats.judge_table` (judge mean minus the ``panel`` pseudo-judge); from a
    :class:`~cjstats.results.components.VarianceComponents` they are ``fit.judge_offsets["estimate"]`` (equal on
    complete, balanced data). A diverging colour map is centred at 0 and every cell is annotated.

    Parameters
    ----------
    scores_or_fit : JudgeTable, VarianceComponents or Scores
        A result (:func:`cjstats.judge_table` or :func:`cjstats.estimate`); a Scores table is first turned into
        its :func:`cjstats.judge_table` result.
    criterion : str, optional
        Which criterion to draw when the table has several (default: refuse, naming them).
    ax : matplotlib Axes, optional
        Draw here; otherwise a new figure.
    cmap : str
        A diverging matplotlib colour map (``RdBu_r`` is colour-blind safe).
    digits : int
        Decimals of the annotations.

    Returns
    -------
    matplotlib.figure.Figure
    """
    caller = "judge_bias_heatmap"
    require_packages(caller, "matplotlib")
    from matplotlib.colors import TwoSlopeNorm

    from cjstats.io.scores import Scores

    from cjstats.estimators.judges import JudgeTable, judge_table

    if isinstance(scores_or_fit, (Scores, JudgeTable)):
        # a table is turned into its result by the builder (judge_table); the plot only draws the result
        t = (judge_table(scores_or_fit) if isinstance(scores_or_fit, Scores) else scores_or_fit).table
        keys = ["model"] + (["criterion"] if "criterion" in t.columns else [])
        panel = t[t["judge"] == "panel"].set_index(keys)["mean"]
        t = t[t["judge"] != "panel"].copy()
        t["estimate"] = t["mean"].to_numpy() - panel.reindex(pd.MultiIndex.from_frame(t[keys])
                                                             if len(keys) > 1 else t["model"]).to_numpy()
        source = "judge mean - panel mean (judge_table)"
    elif _is_fit(scores_or_fit):
        t = scores_or_fit.judge_offsets
        source = f"gamma[l], {scores_or_fit.method} judge_offsets"
    else:
        raise CjstatsError(f"{caller} draws judge offsets of a JudgeTable (cj.judge_table), a VarianceComponents fit or a Scores table; got "
                           f"{type(scores_or_fit).__name__}.")
    if t.empty:
        raise CjstatsError(f"{caller} has no judge offsets to draw: this result has none (one judge per model?).")
    if "criterion" in t.columns:
        crits = list(pd.unique(t["criterion"]))
        if criterion is None and len(crits) > 1:
            raise CjstatsError(f"{caller} draws one criterion at a time; name one with criterion= (one of "
                               f"{', '.join(map(str, crits))}) or pass scores.composite().")
        crit = crits[0] if criterion is None else criterion
        if crit not in crits:
            raise CjstatsError(f"The 'criterion' argument of {caller} must be one of {', '.join(map(str, crits))}. "
                               f"Got {criterion!r} instead.")
        t = t[t["criterion"] == crit]
    grid = t.pivot_table(index="model", columns="judge", values="estimate", aggfunc="first", sort=False)
    values = grid.to_numpy(dtype=float)
    lim = float(np.nanmax(np.abs(values[np.isfinite(values)]))) if np.isfinite(values).any() else 1.0
    if not lim > 0:     # every offset is 0 (judges that agree call for call): any symmetric scale shows it
        lim = 1.0
    # room for the model labels at the left and the judge labels (turned 30 degrees, so about half their
    # length stands below the axes)
    size = (1.6 + 0.95 * grid.shape[1] + label_inches(grid.index),
            1.4 + 0.36 * grid.shape[0] + 0.5 * label_inches(grid.columns))
    fig, ax = new_axes(ax, figsize=size)
    im = ax.imshow(values, cmap=cmap, norm=TwoSlopeNorm(vcenter=0.0, vmin=-lim, vmax=lim), aspect="auto")
    ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns], rotation=30, ha="right")
    ax.set_yticks(range(grid.shape[0]), [str(i) for i in grid.index])
    ax.grid(False)
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = values[i, j]
            if math.isfinite(v):
                ax.text(j, i, f"{v:+.{digits}f}", ha="center", va="center", fontsize=7,
                        color="white" if abs(v) > 0.6 * lim else "black")
    ax.set_xlabel("judge l")
    ax.set_ylabel("model p")
    bar = fig.colorbar(im, ax=ax, shrink=0.85)
    bar.set_label("gamma[l]: judge mean - panel mean (score points)")
    ax.set_title(f"Judge bias ({source})" + (f", criterion {crit}" if "criterion" in t.columns else ""))
    return fig


# ------------------------------------------------------------------------------------- strategy curves
def strategy_curves(fit_or_subsampling: Any, *, subsampling: pd.DataFrame | None = None,
                    budgets: Sequence[int] | None = None, model: str | None = None, criterion: str | None = None,
                    scenarios: str = "fixed", ax: Any = None) -> Any:
    """Standard deviation of the grand mean against judge calls per scenario, strategies A, B, C (paper Fig. 1).

    Lines are the exact predictions of App. F / Eqs. 3-5: from a fit,
    sd = sqrt(:func:`cjstats.strategy_variance`) with the fit's n and K_tot (leftover judge term included):
    with ``scenarios="fixed"`` (default, the paper's Fig. 1) conditional on the table's scenario set, the SE of
    the mean on these scenarios; with ``scenarios="sampled"`` σ²_α/n is added, the SE including scenario
    sampling that :func:`cjstats.optimise` and the allocation frontier use. The y axis names which.
    From a :func:`cjstats.subsample_strategies` table, sd = sqrt(``predicted``),
    the pool's exact :func:`~cjstats.decisions.formulas.pool_variance`. The subsampling experiment is drawn as points,
    sqrt(``variance``), with error bars +-2 Monte Carlo SE of the sd (delta method: mc_se / (2 sd)).

    Points over a fit compare two different things: the fit's lines predict new generations drawn from the
    fitted population, the points resample the table's own finite pool of generations (whose exact predictions
    are the table's ``predicted`` column; pass the table alone to draw those as the lines).

    With one generation per scenario in the fit (m = 1) sigma2_beta is not identifiable; the lines then use
    sigma2_beta = 0, a lower bound, and the title says so (the optimiser does the same). A and C then coincide
    (V_A - V_C = (K_tot - 1) sigma2_beta / (nB)); A is drawn dashed over C so both stay visible.

    Parameters
    ----------
    fit_or_subsampling : VarianceComponents or DataFrame
        A fit (one model/criterion picked with ``model=``/``criterion=``) or the subsampling table.
    subsampling : DataFrame, optional
        With a fit: the subsampling table to overlay as points.
    budgets : sequence of int, optional
        Calls per scenario B drawn (default 1, 2, ..., K_tot, then K_tot x 2..10: the paper's grid and the budgets
        below one call per judge, where CyclicJudge matters most; with a table: its budgets).
    model, criterion : str, optional
    scenarios : {"fixed", "sampled"}
        With a fit: the scenario set held fixed (default) or resampled (adds σ²_α/n).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    caller = "strategy_curves"
    sub_cols = ("strategy", "budget", "variance", "mc_se", "predicted")
    note = ""
    lines: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    from cjstats._validate import check_choice

    scenarios = check_choice("scenarios", scenarios, ("fixed", "sampled"), caller=caller)
    quantity = "SE of X-bar on these scenarios" if scenarios == "fixed" else \
        "SE of X-bar including scenario sampling"
    if _is_fit(fit_or_subsampling):
        from cjstats.decisions.inputs import group_components
        from cjstats.decisions.formulas import strategy_variance

        g = group_components(fit_or_subsampling, model, criterion, caller)
        kt, n = int(g.n_judges or 0), int(g.n_scenarios or 0)
        if kt < 2:
            raise CjstatsError(f"{caller} compares judge-assignment strategies, which needs at least 2 judges; this "
                               f"VarianceComponents ({_group_label({'m': g.model, 'c': g.criterion})}) has "
                               f"{kt} judge, so fit a design scored by several judges.")
        est = g.estimates
        s2b = est["generation"] if g.generation_identifiable else 0.0
        if not g.generation_identifiable:
            note = "\nm = 1: sigma2_beta not identifiable, drawn at 0 (a lower bound); A then coincides with C"
        default = sorted({*range(1, kt + 1), *(kt * j for j in range(1, 11))})
        grid = np.array(list(budgets) if budgets is not None else default, dtype=int)
        s2a = est["scenario"] if scenarios == "sampled" else None
        for s in ("all", "random", "cyclic"):
            sd = [math.sqrt(strategy_variance(s, s2_generation=s2b, s2_residual=est["residual"],
                                              s2_judge_panel=est["judge_panel"], budget=int(b), n=n, k_total=kt,
                                              s2_scenario=s2a))
                  for b in grid]
            lines[s] = (grid, np.array(sd))
        title = (f"{g.model}" + (f" / {g.criterion}" if g.criterion else "") + f": n = {n}, K_tot = {kt}; "
                 + ("scenario set fixed" if scenarios == "fixed" else "scenarios resampled (+ sigma2_alpha/n)"))
    elif isinstance(fit_or_subsampling, pd.DataFrame):
        require_columns(fit_or_subsampling, sub_cols, what="a subsample_strategies table", caller=caller)
        subsampling = fit_or_subsampling
        for s, part in subsampling.sort_values("budget").groupby("strategy", sort=False):
            lines[str(s)] = (part["budget"].to_numpy(), np.sqrt(part["predicted"].to_numpy(dtype=float)))
        title = "subsampling experiment (App. F) and exact predictions"
    else:
        raise CjstatsError(f"{caller} draws a VarianceComponents fit or a subsample_strategies table; got "
                           f"{type(fit_or_subsampling).__name__}.")
    if subsampling is not None and subsampling is not fit_or_subsampling:
        require_columns(subsampling, sub_cols, what="a subsample_strategies table", caller=caller)
    fig, ax = new_axes(ax, figsize=(5.6, 3.6))
    style = {"all": dict(ls=(0, (5, 3)), lw=1.8, marker="o", ms=3, zorder=4),     # dashed, on top: visible over C
             "random": dict(ls=":", lw=1.8, marker="s", ms=2.5, zorder=3),
             "cyclic": dict(ls="-", lw=3.0, alpha=0.8, zorder=2)}
    for s, (x, y) in lines.items():
        ax.plot(x, y, color=STRATEGY_COLOURS.get(s, PALETTE[-1]), label=f"{_STRATEGY_LABEL.get(s, s)} (exact)",
                gid=f"line:{s}", **style.get(s, {}))
    if subsampling is not None:
        for s, part in subsampling.sort_values("budget").groupby("strategy", sort=False):
            sd = np.sqrt(part["variance"].to_numpy(dtype=float))
            err = part["mc_se"].to_numpy(dtype=float) / sd          # 2 x MC SE of sd = 2 x mc_se / (2 sd)
            eb = ax.errorbar(part["budget"].to_numpy(), sd, yerr=err, fmt="o", ms=3.5, capsize=2, lw=1,
                             color=STRATEGY_COLOURS.get(str(s), PALETTE[-1]),
                             label=f"{_STRATEGY_LABEL.get(s, s)} (subsampled, +-2 MC SE)")
            eb.lines[0].set_gid(f"points:{s}")
    kt_line = None
    if _is_fit(fit_or_subsampling):
        kt_line = kt
        ax.axvline(kt, color="0.6", lw=0.8, ls="--", zorder=1, gid="k_total")
        ax.annotate("B = K_tot", (kt, 1), xycoords=("data", "axes fraction"), xytext=(3, -10),
                    textcoords="offset points", fontsize=7, color="0.35")
    ax.set_xlabel("judge calls per scenario B" + (" (left of the dashed line: fewer than one per judge)"
                                                  if kt_line else ""))
    ax.set_ylabel(quantity + " (score points)" if _is_fit(fit_or_subsampling) else
                  "SE of X-bar on these scenarios, this pool\n(score points)")
    ax.set_ylim(bottom=0)
    ax.set_title(title + note, fontsize=8)
    ax.legend(fontsize=7)
    return fig


# --------------------------------------------------------------------------------------------- forest
def _forest_rows(fits: Mapping[str, Any], components: Sequence[str] | None) -> pd.DataFrame:
    parts = []
    for label, fit in fits.items():
        t = fit.components.copy()
        group = t["model"].astype(str)
        if "criterion" in t.columns:
            group = group + " / " + t["criterion"].astype(str)
        t["row"] = (group + " · " + label) if len(fits) > 1 else group
        t["_group"] = group
        t["_fit"] = len(parts)
        parts.append(t)
    t = pd.concat(parts, ignore_index=True)
    order = pd.unique(pd.concat([p["_group"] for p in parts], ignore_index=True))
    rank = {g: i for i, g in enumerate(order)}
    t = t.assign(_g=t["_group"].map(rank)).sort_values(["_g", "_fit"], kind="stable")   # fits side by side
    if components is not None:
        t = t[t["component"].isin(components)]
    return t


def _variance_unit(fits: Any) -> str:
    """The axis unit of the variance components of ``fits``: score points squared, or the latent scale of an
    ordinal fit (its residual fixed by the link: 1 for probit, pi^2/3 for logit); a mixture says both."""
    units = []
    for f in fits:
        if getattr(f, "scale", "score") == "latent":
            link = str(f.provenance.get("options", {}).get("link", "logit"))
            units.append(f"latent units² ({link})")
        else:
            units.append("score points²")
    units = list(dict.fromkeys(units))
    return units[0] if len(units) == 1 else " / ".join(units)


def components_forest(fit_or_fits: Any, *, components: Sequence[str] | None = None, ax: Any = None,
                      by_scale: bool = False) -> Any:
    """Forest plot: every component's estimate with its interval, several fits side by side.

    One panel per component (their scales differ: ``mu`` in score points, the variances in score points
    squared). Each row is a (model, [criterion]) of a fit; pass several fits (a list or a ``{label: fit}``
    mapping: backends, models, criteria) to compare estimators. Points are ``estimate`` and bars
    ``[lower, upper]`` of ``fit.components``; hollow points are at the boundary (truncated at 0); a
    component the data cannot identify gets no point and its row says "n/a".

    Parameters
    ----------
    fit_or_fits : VarianceComponents, sequence or mapping of them
    components : sequence of str, optional
        Which components (default: every identifiable one present).
    ax : Axes or sequence of Axes, optional
        One axes per component drawn.
    by_scale : bool
        When the fits are on different scales (an ordinal fit's latent-scale variances beside score-scale ones),
        draw one row of panels per scale, so no axis mixes the two (``ax`` must then be left out). Without it the
        panels are shared and the axis label names both units.

    Returns
    -------
    matplotlib.figure.Figure
    """
    caller = "components_forest"
    if _is_fit(fit_or_fits):
        fits = {fit_or_fits.method: fit_or_fits}
    elif isinstance(fit_or_fits, Mapping):
        fits = {str(k): v for k, v in fit_or_fits.items()}
    elif isinstance(fit_or_fits, Sequence) and not isinstance(fit_or_fits, str):
        fits = {}
        for i, f in enumerate(fit_or_fits):
            fits[f.method if _is_fit(f) and f.method not in fits else f"fit {i + 1}"] = f
    else:
        fits = {}
    if not fits or not all(_is_fit(f) for f in fits.values()):
        raise CjstatsError(f"{caller} draws VarianceComponents fits (one, a list or a {{label: fit}} mapping); got "
                           f"{type(fit_or_fits).__name__}.")
    scales = {label: getattr(f, "scale", "score") for label, f in fits.items()}
    if by_scale and len(set(scales.values())) > 1:
        return _forest_by_scale(fits, scales, components, ax)
    t = _forest_rows(fits, components)
    comps = [c for c in (components or ("mu", *_VARIANCE_COMPONENTS)) if
             c in set(t.loc[t["identifiable"], "component"])]
    if not comps:
        raise CjstatsError(f"{caller} found no identifiable component to draw among {list(components or [])}.")
    rows = list(pd.unique(t["row"]))
    height = 0.9 + 0.22 * len(rows)
    if ax is None:
        require_packages(caller, "matplotlib")
        from matplotlib.figure import Figure

        fig = Figure(figsize=(min(2.3 * len(comps) + 1.4, 14), height), layout="constrained")
        axes = list(np.atleast_1d(fig.subplots(1, len(comps), sharey=True)))
    else:
        axes = list(np.atleast_1d(ax))
        if len(axes) != len(comps):
            raise CjstatsError(f"The 'ax' argument of {caller} must hold one Axes per component drawn "
                               f"({len(comps)}: {', '.join(comps)}). Got {len(axes)} instead.")
        fig = axes[0].figure
    colours = {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(fits)}
    y_of = {r: i for i, r in enumerate(rows)}
    for a, comp in zip(axes, comps):
        part = t[t["component"] == comp]
        for label in fits:
            p = part[(part["method"] == fits[label].method) & part["row"].isin(
                [r for r in rows if len(fits) == 1 or r.endswith(" · " + label)])]
            p = p[p["identifiable"]]
            y = p["row"].map(y_of).to_numpy(dtype=float)
            est = p["estimate"].to_numpy(dtype=float)
            lo = p["lower"].to_numpy(dtype=float)
            hi = p["upper"].to_numpy(dtype=float)
            ok = np.isfinite(lo) & np.isfinite(hi)
            a.hlines(y[ok], lo[ok], hi[ok], color=colours[label], lw=1.4, gid=f"interval:{comp}:{label}")
            bound = p["at_boundary"].to_numpy(dtype=bool)
            a.plot(est[~bound], y[~bound], "o", color=colours[label], ms=4, gid=f"estimate:{comp}:{label}")
            if bound.any():
                a.plot(est[bound], y[bound], "o", mfc="white", color=colours[label], ms=4,
                       gid=f"boundary:{comp}:{label}")
        unit = "score points" if comp == "mu" else _variance_unit(fits.values())
        a.set_title(f"{comp}\n{_SYMBOL[comp]}", fontsize=8)
        a.set_xlabel(unit)
        a.grid(True, axis="x")
    axes[0].set_yticks(range(len(rows)), rows)
    axes[0].invert_yaxis()
    lvl = t["ci_level"].dropna()
    pct = f"{100 * float(lvl.iloc[0]):g}%" if len(lvl) else ""
    fig.suptitle(f"Variance components with {pct} intervals ({', '.join(fits)}); hollow = at boundary",
                 fontsize=9)
    return fig


def _forest_by_scale(fits: dict[str, Any], scales: dict[str, str], components: Sequence[str] | None,
                     ax: Any) -> Any:
    """:func:`components_forest` with one row of panels per scale (latent first, in the order of the fits)."""
    caller = "components_forest"
    if ax is not None:
        raise CjstatsError(f"The 'ax' argument of {caller} cannot be combined with by_scale=True when the fits are on "
                           "different scales (one row of panels per scale is drawn); leave ax out.")
    require_packages(caller, "matplotlib")
    from matplotlib.figure import Figure

    groups: dict[str, dict[str, Any]] = {}
    for label, f in fits.items():
        groups.setdefault(scales[label], {})[label] = f
    rows = []
    for scale, part in groups.items():
        t = _forest_rows(part, components)
        comps = [c for c in (components or ("mu", *_VARIANCE_COMPONENTS)) if
                 c in set(t.loc[t["identifiable"], "component"])]
        if comps:
            rows.append((scale, part, comps, len(pd.unique(t["row"]))))
    if not rows:
        raise CjstatsError(f"{caller} found no identifiable component to draw among {list(components or [])}.")
    widest = max(len(c) for _, _, c, _ in rows)
    heights = [1.3 + 0.22 * n for *_, n in rows]
    fig = Figure(figsize=(min(2.3 * widest + 1.4, 14), sum(heights)), layout="constrained")
    subs = np.atleast_1d(fig.subfigures(len(rows), 1, height_ratios=heights))
    for sub, (scale, part, comps, _) in zip(subs, rows):
        axes = list(np.atleast_1d(sub.subplots(1, len(comps), sharey=True)))
        components_forest(part, components=comps, ax=axes)
        drawn = sub._suptitle.get_text() if sub._suptitle is not None else ""
        sub.suptitle(f"{'Latent' if scale == 'latent' else 'Score'} scale, variances in "
                     f"{_variance_unit(part.values())}. {drawn}", fontsize=9)
    return fig


# ------------------------------------------------------------------------------------------- frontier
def allocation_frontier(allocation: Any, *, ax: Any = None) -> Any:
    """Predicted standard error of the benchmark score against cost for the designs the optimiser considered.

    The SE is the optimiser's: it includes the scenario term σ²_α/n (n is a design choice), so it is larger than
    the SE on a fixed scenario set that :func:`strategy_curves` draws by default; the y axis says which.

    Grey points: every feasible design (``allocation.designs``: ``se`` against ``max_cost``). Lines: for each
    strategy the lowest SE reachable at each cost (the frontier, a running minimum over the enumerated
    designs). Bars: the interval of the SE of each strategy's best design (``allocation.table``:
    sqrt(``variance_lower``), sqrt(``variance_upper``), from the component intervals or posterior draws as
    ``allocation.uncertainty`` says). Star: the recommendation.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from cjstats.decisions.optimise import Allocation

    caller = "allocation_frontier"
    if not isinstance(allocation, Allocation):
        raise CjstatsError(f"{caller} draws an Allocation from cj.optimise(fit, budget=...); got "
                           f"{type(allocation).__name__}.")
    d = allocation.designs
    paired = "schedule" in d.columns          # target="difference": one frontier per strategy and schedule
    fig, ax = new_axes(ax, figsize=(7.4, 3.6))
    ax.scatter(d["max_cost"], d["se"], s=4, color="0.75", label="feasible designs", gid="designs", zorder=1)
    keys = ["strategy", "schedule"] if paired else ["strategy"]
    for key, part in d.groupby(keys, sort=False):
        s, sched = (key if paired else (key[0] if isinstance(key, tuple) else key, None))
        part = part.sort_values("max_cost")
        front = np.minimum.accumulate(part["se"].to_numpy(dtype=float))
        label = _STRATEGY_LABEL.get(str(s), str(s)) + (f", {sched} schedule" if sched else "")
        ax.step(part["max_cost"].to_numpy(), front, where="post", color=STRATEGY_COLOURS.get(str(s), PALETTE[-1]),
                ls="--" if sched == "independent" else "-", label=label,
                gid=f"frontier:{s}" + (f":{sched}" if sched else ""), zorder=2)
    tab = allocation.table
    lo = np.sqrt(tab["variance_lower"].to_numpy(dtype=float))
    hi = np.sqrt(tab["variance_upper"].to_numpy(dtype=float))
    se = tab["se"].to_numpy(dtype=float)
    ok = np.isfinite(lo) & np.isfinite(hi)
    for i in np.flatnonzero(ok):
        base = str(tab["strategy"].iloc[i]).split(" (")[0]      # "cyclic (shared)" -> "cyclic"
        ax.vlines(tab["max_cost"].iloc[i], lo[i], hi[i], color=STRATEGY_COLOURS.get(base, PALETTE[-1]), lw=3,
                  alpha=0.45, gid=f"band:{i}", zorder=3)
    r = allocation.recommendation
    ax.plot([r["max_cost"]], [r["se"]], marker="*", ms=13, color="black", ls="none", zorder=4, gid="recommended",
            label=f"recommended: {r['strategy']}, k = {r['judges_per_generation']}, n = {r['n']}, m = {r['m']}")
    unit = allocation.budget_unit or "cost"
    ax.set_xlabel(f"cost ({unit}; most a design can cost)")
    ax.set_ylabel("predicted SE of the difference (score points)" if paired else
                  "SE of X-bar including scenario sampling\n(score points)")
    pct = f"{100 * allocation.ci_level:g}%"
    who = f" for {allocation.model}" if allocation.model else ""
    ax.set_title(f"Allocation frontier{who}\nbars: {pct} SE interval ({allocation.uncertainty})", fontsize=8)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)   # beside, not over
    if np.isfinite(se).all() and len(se):
        ax.set_ylim(0, float(np.nanmax(np.concatenate([se, hi[ok]]))) * 1.3)
    return fig


# ------------------------------------------------------------------------------------------ posterior
def posterior(fit: Any, components: Sequence[str] | None = None, *, model: str | None = None,
              criterion: str | None = None, figsize: tuple[float, float] | None = None) -> Any:
    """Posterior densities of the Bayesian variance components with their credible interval (arviz-plots).

    Draws ``arviz_plots.plot_dist`` on the group's ArviZ DataTree (``fit.posterior``): a KDE per component,
    the ``ci_level`` interval of the fit (ETI or HDI, as its ``ci_method``) and the posterior mean.
    arviz-plots lays out its own grid, so this function takes ``figsize`` instead of ``ax``.

    Parameters
    ----------
    fit : VarianceComponents
        A ``method="bayes"`` fit.
    components : sequence of str, optional
        Default: every identifiable variance component of the group.
    model, criterion : str, optional
        The group (default: the only one; otherwise refused with the choices).

    Returns
    -------
    matplotlib.figure.Figure
    """
    caller = "posterior"
    if not _is_fit(fit):
        raise CjstatsError(f"{caller} draws a VarianceComponents fit from cj.estimate(scores, method='bayes'); "
                           f"got {type(fit).__name__}.")
    if not fit.posterior:
        raise CjstatsError(f"{caller} needs posterior draws, which a VarianceComponents from the '{fit.method}' "
                           "backend does not have; fit with cj.estimate(scores, method='bayes') or draw the "
                           "intervals with components_forest(fit).")
    require_packages(caller, "matplotlib", "arviz_plots")
    import arviz_plots as azp

    model, criterion = fit.resolve_group(model, criterion)
    key = model if criterion in (None, "") else f"{model} / {criterion}"
    if key not in fit.posterior:
        key = next(k for k in fit.posterior if str(k).startswith(model))
    dt = fit.posterior[key]
    t = fit.components
    sel = (t["model"].astype(str) == model) & t["identifiable"]
    if criterion not in (None, "") and "criterion" in t.columns:
        sel &= t["criterion"].astype(str) == criterion
    available = [c for c in _VARIANCE_COMPONENTS if c in set(t.loc[sel, "component"]) and c in dt["posterior"]]
    comps = list(components) if components is not None else available
    bad = [c for c in comps if c not in available]
    if bad:
        raise CjstatsError(f"The 'components' argument of {caller} must name components with posterior draws "
                           f"({', '.join(available)}). Got {bad[0]!r} instead.")
    kind = "hdi" if t.loc[sel, "ci_method"].astype(str).str.contains("HDI", case=False).any() else "eti"
    size = figsize or (2.6 * len(comps), 2.4)
    pc = azp.plot_dist(dt, var_names=comps, backend="matplotlib", ci_kind=kind, ci_prob=fit.ci_level,
                       point_estimate="mean", figure_kwargs={"figsize": size, "layout": "constrained"})
    fig = pc.viz["figure"].item()
    for c in comps:
        a = pc.viz["plot"][c].item()
        a.set_title(f"{c}\n{_SYMBOL[c]}", fontsize=9)
        a.set_xlabel(_variance_unit([fit]))
    fig.suptitle(f"Posterior of {key} ({100 * fit.ci_level:g}% {kind.upper()}, dot = posterior mean)", fontsize=9)
    return fig


# ------------------------------------------------------------------------------------ ranks, coverage
def rank_plot(comparison: Any, *, ax: Any = None) -> Any:
    """Rank intervals of the models of a comparison: rank[p] with [rank_lower, rank_upper], and P(best).

    Draws ``comparison.ranks`` (columns ``model, mean, rank, rank_lower, rank_upper, p_best``), models ordered
    by rank, 1 = best at the top.

    Returns
    -------
    matplotlib.figure.Figure
    """
    caller = "rank_plot"
    ranks = getattr(comparison, "ranks", None)
    require_columns(ranks, ("model", "mean", "rank", "rank_lower", "rank_upper", "p_best"),
                    what="a comparison's .ranks table", caller=caller)
    r = ranks.sort_values(["rank", "mean"], ascending=[True, False]).reset_index(drop=True)
    # wide enough for one tick per rank and the model labels (plus the mean / P(best) notes at the right)
    width = 3.2 + 0.22 * len(r) + label_inches(r["model"])
    fig, ax = new_axes(ax, figsize=(min(width, 14.0), 0.9 + 0.3 * len(r)))
    y = np.arange(len(r))
    ax.hlines(y, r["rank_lower"], r["rank_upper"], color=PALETTE[0], lw=2.5, alpha=0.7, gid="rank_interval")
    ax.plot(r["rank"], y, "o", color=PALETTE[3], gid="rank")
    from cjstats.results.format import fixed, value_decimals

    dec = value_decimals(r["mean"])               # one decimals setting for every label, as in the ranks table
    for yi, (p, m) in enumerate(zip(r["p_best"], r["mean"])):
        ax.annotate(f"mean {fixed(m, dec)}, P(best) {p:.2f}", (1, yi), xycoords=("axes fraction", "data"),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(y, r["model"].astype(str))
    ax.invert_yaxis()
    n = len(r)
    ax.set_xlim(0.5, n + 0.5)
    ax.set_xticks(range(1, n + 1))
    ax.set_xlabel("rank[p] (1 = highest mean) with interval")
    ax.set_ylabel("model p")
    ax.set_title("Model ranks")
    return fig


def coverage_plot(study: Any, *, nominal: float | None = None, ax: Any = None) -> Any:
    """Coverage of each method's intervals by design and component, with Monte Carlo bands.

    Draws ``study.measures`` (one row per design x method x component with ``coverage``, ``coverage_mcse`` and
    ``replicates``): one panel per component, one row per design, methods side by side in colour, each point
    with +-2 ``coverage_mcse``. The grey band is the nominal level +-2 sqrt(level (1 - level) / replicates),
    where a correct interval's coverage falls 95% of the time.

    Parameters
    ----------
    study : StudyResult, or an object with a ``measures`` DataFrame
    nominal : float, optional
        The intervals' nominal level (default the package's ``CI_LEVEL``, or ``study.ci_level`` if present).

    Returns
    -------
    matplotlib.figure.Figure
    """
    caller = "coverage_plot"
    require_packages(caller, "matplotlib")
    from matplotlib.ticker import MaxNLocator, StrMethodFormatter

    s = getattr(study, "measures", None)
    require_columns(s, ("design", "method", "component", "coverage", "coverage_mcse", "replicates"),
                    what="a study's .measures table", caller=caller)
    level = float(nominal if nominal is not None else getattr(study, "ci_level", CI_LEVEL))
    comps = [c for c in ("mu", *_VARIANCE_COMPONENTS) if c in set(s["component"])] or list(pd.unique(s["component"]))
    designs = [str(d) for d in pd.unique(s["design"])]
    methods = [str(m) for m in pd.unique(s["method"])]
    if ax is None:
        require_packages(caller, "matplotlib")
        from matplotlib.figure import Figure

        fig = Figure(figsize=(min(2.4 * len(comps) + 1.5, 14), 1.6 + 0.3 * len(designs) * max(1, len(methods))),
                     layout="constrained")
        axes = list(np.atleast_1d(fig.subplots(1, len(comps), sharey=True)))
    else:
        axes = list(np.atleast_1d(ax))
        if len(axes) != len(comps):
            raise CjstatsError(f"The 'ax' argument of {caller} must hold one Axes per component ({len(comps)}). "
                               f"Got {len(axes)} instead.")
        fig = axes[0].figure
    width = 0.7 / max(len(methods), 1)
    # the band is for rows that have a coverage at all (a method that failed in every replicate has none)
    counted = s.loc[s["coverage"].notna(), "replicates"].to_numpy(dtype=float)
    counted = counted[counted > 0]
    reps = float(np.min(counted)) if counted.size else 0.0
    half = 2.0 * math.sqrt(level * (1 - level) / reps) if reps > 0 else float("nan")
    for a, comp in zip(axes, comps):
        a.axvspan(level - half, level + half, color="0.88", zorder=0, gid="mc_band")
        a.axvline(level, color="0.4", lw=1, zorder=1)
        part = s[s["component"] == comp]
        for j, m in enumerate(methods):
            p = part[part["method"].astype(str) == m]
            y = np.array([designs.index(str(d)) for d in p["design"]], dtype=float) - 0.35 + width * (j + 0.5)
            cov = p["coverage"].to_numpy(dtype=float)
            half2 = 2 * p["coverage_mcse"].to_numpy(dtype=float)
            # a coverage is a proportion: the +-2 MC SE bar stops at 0 and 1 instead of running past them
            xerr = np.vstack([cov - np.clip(cov - half2, 0.0, 1.0), np.clip(cov + half2, 0.0, 1.0) - cov])
            eb = a.errorbar(cov, y, xerr=xerr, fmt="o", ms=4, capsize=2, clip_on=False,
                            color=PALETTE[j % len(PALETTE)], label=m if comp == comps[0] else None)
            eb.lines[0].set_gid(f"cov:{comp}:{m}")
        a.set_title(comp, fontsize=9)
        a.xaxis.set_major_locator(MaxNLocator(nbins=4 if len(comps) <= 4 else 2))   # narrow panels: few ticks
        a.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    lows = np.concatenate([np.asarray(s["coverage"], dtype=float) - 2 * np.asarray(s["coverage_mcse"], dtype=float),
                           [level - half if math.isfinite(half) else level]])
    left = float(np.nanmin(lows)) if np.isfinite(lows).any() else 0.0
    left = max(0.0, min(left, level) - 0.02)
    for a in axes:                                      # a coverage cannot pass 1: neither does the axis
        a.set_xlim(left, 1.0)
    axes[0].set_yticks(range(len(designs)), designs)
    axes[0].set_ylim(len(designs) - 0.5, -0.5)
    axes[0].set_ylabel("design")
    fig.supxlabel(f"coverage of {100 * level:g}% intervals", fontsize=9)   # one label: panels sit close together
    fig.legend(loc="outside right upper")
    fig.suptitle(f"Interval coverage (+-2 MC SE); band: nominal +-2 sqrt(p(1-p)/{reps:g})", fontsize=9)
    return fig
