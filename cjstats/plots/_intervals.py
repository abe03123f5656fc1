"""Interval figures of the comparison and human-reference results: each row an estimate with its interval."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cjstats.plots._style import PALETTE, label_inches, new_axes, require_columns

__all__ = ["agreement_plot", "ppi_plot", "self_preference_plot"]


def _labels(frame: pd.DataFrame, first: str) -> list[str]:
    """Row labels: ``first`` (and the criterion when the table has several)."""
    crit = frame["criterion"] if "criterion" in frame.columns and frame["criterion"].notna().any() else None
    return [str(v) if crit is None else f"{v} / {c}" for v, c in zip(frame[first], crit if crit is not None
                                                                        else [None] * len(frame))]


def _rows(ax: Any, y: np.ndarray, est: Any, lo: Any, hi: Any, *, colour: str, label: str, gid: str) -> None:
    est, lo, hi = (np.asarray(v, dtype=float) for v in (est, lo, hi))
    ax.errorbar(est, y, xerr=np.vstack([est - lo, hi - est]), fmt="o", color=colour, ms=4, capsize=2,
                label=label, gid=gid)


def _few_ticks(ax: Any) -> None:
    """At most five x ticks, so the labels of a narrow interval figure do not run together."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))


def agreement_plot(agreement: Any, *, ax: Any = None) -> Any:
    """``bias[l]`` of every judge and the panel against the reference raters, with its interval.

    Draws ``agreement.table`` (:func:`cjstats.judge_agreement`): one row per judge (and criterion), the
    judge's mean minus the reference mean on the same items, with the scenario-clustered interval; 0 marks
    no bias.

    Returns
    -------
    matplotlib.figure.Figure
    """
    t = getattr(agreement, "table", None)
    require_columns(t, ("judge", "bias", "bias_lower", "bias_upper"), what="an agreement's .table",
                    caller="agreement_plot")
    labels = _labels(t, "judge")
    fig, ax = new_axes(ax, figsize=(min(3.6 + label_inches(labels), 12.0), 0.9 + 0.28 * len(t)))
    y = np.arange(len(t))[::-1]
    _rows(ax, y, t["bias"], t["bias_lower"], t["bias_upper"], colour=PALETTE[0], label="bias[l]", gid="bias")
    ax.axvline(0.0, color="0.4", lw=0.8)
    ax.set_yticks(y, labels)
    ref = ", ".join(getattr(agreement, "reference", ()) or ("reference",))
    sep = "\n" if len(ref) > 24 else " "           # a long list of raters wraps instead of outrunning the axes
    ax.set_xlabel(f"bias[l] = judge minus{sep}{ref} (score units)")
    _few_ticks(ax)
    ax.set_title("Judges against the reference raters", fontsize=10)
    return fig


def ppi_plot(ppi: Any, *, ax: Any = None) -> Any:
    """``human_mean[p]`` of every model: PPI++, human labels only and judges only, each with its interval.

    Draws ``ppi.means`` (:func:`cjstats.ppi_means`); the PPI++ interval is never much wider than the
    human-only one and is centred on the human scale, unlike the judge-only mean.

    Returns
    -------
    matplotlib.figure.Figure
    """
    m = getattr(ppi, "means", None)
    require_columns(m, ("model", "estimate", "lower", "upper", "human_only", "human_only_lower",
                        "human_only_upper", "judge_only", "judge_only_lower", "judge_only_upper"),
                    what="a PPI result's .means", caller="ppi_plot")
    fig, ax = new_axes(ax, figsize=(5.6, 1.0 + 0.42 * len(m)))
    y = np.arange(len(m))[::-1].astype(float)
    for off, (col, name, colour) in zip((0.22, 0.0, -0.22), (
            ("estimate", "PPI++ (labels + judges)", PALETTE[0]), ("human_only", "human labels only", PALETTE[1]),
            ("judge_only", "judges only (judge scale)", PALETTE[2]))):
        lo, hi = (f"{col}_lower", f"{col}_upper") if col != "estimate" else ("lower", "upper")
        _rows(ax, y + off, m[col], m[lo], m[hi], colour=colour, label=name, gid=f"ppi:{col}")
    ax.set_yticks(y, _labels(m, "model"))
    ax.set_xlabel("human_mean[p] (score units)")
    ax.legend(fontsize=7, loc="best", frameon=False)
    ax.set_title("Model means on the human scale", fontsize=10)
    return fig


def self_preference_plot(preference: Any, *, ax: Any = None) -> Any:
    """``self_preference[l,p]`` of every judge for its own model(s), with its interval; 0 marks none.

    Draws ``preference.contrasts`` (:func:`cjstats.self_preference`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    c = getattr(preference, "contrasts", None)
    require_columns(c, ("judge", "model", "estimate", "lower", "upper"), what="a self-preference's .contrasts",
                    caller="self_preference_plot")
    labels = [f"{j} -> {mo}" for j, mo in zip(c["judge"], c["model"])]
    fig, ax = new_axes(ax, figsize=(min(3.6 + label_inches(labels), 12.0), 0.9 + 0.3 * len(c)))
    y = np.arange(len(c))[::-1]
    _rows(ax, y, c["estimate"], c["lower"], c["upper"], colour=PALETTE[0], label="self_preference",
          gid="self_preference")
    ax.axvline(0.0, color="0.4", lw=0.8)
    ax.set_yticks(y, labels)
    ax.set_xlabel("self_preference[l,p] (score units)")
    ax.set_title("Judge self-preference for its own family", fontsize=10)
    return fig
