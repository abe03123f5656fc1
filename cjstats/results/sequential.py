"""The results of :func:`cjstats.confidence_sequence` (:class:`SequenceResult`) and :func:`cjstats.sequential_plan`
(:class:`SequentialPlan`); the formulas are in :mod:`cjstats.decisions.sequential`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from cjstats.results.base import Result

__all__ = ["SequenceResult", "SequentialPlan"]


@dataclass(frozen=True)
class SequenceResult(Result):
    """An anytime-valid confidence sequence over scenarios, and the decision it supports so far.

    Attributes
    ----------
    table : DataFrame
        One row per scenario in arrival order: ``n, scenario, x`` (that scenario's difference of panel means, or
        the one model's panel mean), ``mean`` (running mean of x), ``estimate`` (the CS's centre: the
        lambda-weighted mean for the empirical-Bernstein CS, the post-pilot mean for the normal mixture),
        ``lower, upper, width`` (NaN during a normal-mixture pilot) and ``excludes_null``.
    stop_at : int or None
        The first n at which the CS excludes ``null`` (None: not yet). Stopping there keeps the level.
    sign : int
        +1 (a above b, or above ``null``), -1, or 0 (no decision yet).
    t_estimate, t_lower, t_upper : float
        The fixed-n t interval at the last scenario (valid only if n had been fixed in advance), for comparison.
    """

    table: pd.DataFrame
    model_a: str
    model_b: str | None
    alpha: float
    method: str
    null: float
    bounds: tuple[float, float]
    variance: float
    pilot: int
    stop_at: int | None
    sign: int
    t_estimate: float
    t_lower: float
    t_upper: float
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def n(self) -> int:
        """Scenarios seen so far."""
        return len(self.table)

    @property
    def decision(self) -> str:
        """``"STOP"`` once the CS has excluded ``null``, else ``"CONTINUE"``."""
        return "STOP" if self.stop_at is not None else "CONTINUE"

    @property
    def last(self) -> dict:
        """The last row of the table as a dict."""
        return self.table.iloc[-1].to_dict()

    def to_frame(self) -> pd.DataFrame:
        """A copy of the per-scenario table."""
        return self.table.copy()

    def _what(self) -> str:
        return (f"mean('{self.model_a}') - mean('{self.model_b}')" if self.model_b is not None
                else f"mean('{self.model_a}')")

    def as_text(self) -> str:
        pct = f"{100 * (1 - self.alpha):g}%"
        r = self.last
        lines = [f"Confidence sequence ({self.method}, {pct}, anytime-valid) for {self._what()} over "
                 f"{self.n} scenarios",
                 f"Now: estimate {r['estimate']:.4g}, CS [{r['lower']:.4g}, {r['upper']:.4g}] (width {r['width']:.4g})",
                 f"Fixed-n t interval at n = {self.n} (not valid under optional stopping): "
                 f"[{self.t_lower:.4g}, {self.t_upper:.4g}]"]
        if self.stop_at is not None:
            side = "above" if self.sign > 0 else "below"
            lines.append(f"STOP: the CS excluded {self.null:g} at n = {self.stop_at} (difference {side} "
                         f"{self.null:g}).")
        else:
            lines.append(f"CONTINUE: the CS still contains {self.null:g}.")
        show = self.table[["n", "scenario", "x", "estimate", "lower", "upper", "width"]].tail(10)
        lines += ["", show.to_string(index=False, float_format=lambda v: f"{v:.4g}")]
        return "\n".join([*lines, *([""] + list(self.notes) if self.notes else [])])

    def __str__(self) -> str:
        return self.as_text()


@dataclass(frozen=True)
class SequentialPlan(Result):
    """Scenarios a sequential comparison is expected to need, per judge strategy (:func:`cjstats.sequential_plan`).

    ``table`` has one row per strategy: ``strategy, variance`` (per-scenario variance of x), ``sd, n_width``
    (where the CS's oracle radius reaches |delta|), ``expected_n, expected_n_se, median_n, p_stop`` (simulated
    stopping of the CS on x ~ N(delta, variance)) and ``n_fixed`` (a fixed-n z test with 80% power).
    """

    table: pd.DataFrame
    delta: float
    alpha: float
    method: str
    budget: int
    schedule: str
    bounds: tuple[float, float]
    replicates: int
    n_max: int
    seed: int
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def as_text(self) -> str:
        lines = [f"Sequential plan ({self.method}, alpha {self.alpha:g}): scenarios to decide a difference of "
                 f"{self.delta:g}, {self.budget} call(s) per scenario and model, {self.schedule} schedule",
                 self.table.to_string(index=False, float_format=lambda v: f"{v:.4g}" if math.isfinite(v) else "-")]
        return "\n".join([*lines, *([""] + list(self.notes) if self.notes else [])])

    def __str__(self) -> str:
        return self.as_text()
