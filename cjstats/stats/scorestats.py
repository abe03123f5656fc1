"""The statistics of every analysis unit of a score table (:class:`ScoreStats`, what :func:`cjstats.stats.build_stats`
returns). Re-exported by :mod:`cjstats.stats`; kept here so that the engines (``stats/engines/``), which the
package imports through its engine registry, build one without importing the package."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.stats.cellstats import CellStats
from cjstats.stats.joint import JointStats

__all__ = ["ScoreStats"]


@dataclass(frozen=True, slots=True, eq=False)
class ScoreStats:
    """The statistics of every analysis unit of a score table, in the table's order.

    Attributes
    ----------
    units : tuple of CellStats
        One per unit (model, or model x criterion).
    has_criterion : bool
        Whether units are model x criterion.
    design : DataFrame
        The design summary, one row per unit (as :attr:`cjstats.Scores.design`).
    unit : tuple of str
        The columns that define a unit.
    engine : str
        The engine that computed the statistics.
    """

    units: tuple[CellStats, ...] | tuple[JointStats, ...]
    has_criterion: bool
    design: pd.DataFrame
    unit: tuple[str, ...] = ("model", "criterion")
    engine: str = "numpy"

    def __iter__(self) -> Iterator[CellStats]:
        return iter(self.units)

    def __len__(self) -> int:
        return len(self.units)

    @property
    def joint(self) -> bool:
        """Whether the units are joint (every model of a criterion, ``unit=("criterion",)``)."""
        return self.unit == ("criterion",)

    def get(self, model: str | None = None, criterion: str | None = None) -> CellStats | JointStats:
        """The statistics of one unit: a model (and criterion), or for joint units a criterion."""
        if self.joint:
            for u in self.units:
                if criterion is None or u.criterion == str(criterion):
                    return u if model is None else u.get(model)
            raise CjstatsError(f"These statistics have no criterion '{criterion}'.")
        if model is None:
            raise CjstatsError("ScoreStats.get needs a model for per-model statistics.")
        for u in self.units:
            if u.model == str(model) and (criterion is None or u.criterion == str(criterion)):
                return u
        raise CjstatsError(f"These statistics have no model '{model}'" + ("" if criterion is None else
                           f" with criterion '{criterion}'") + ".")
