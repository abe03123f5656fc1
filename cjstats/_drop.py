"""What ``incomplete="drop"`` removed, said the same way by every caller: one table, one warning, one limit.

The ANOVA backends fit complete, balanced tables, and ``incomplete="drop"`` makes one from an incomplete
table by leaving data out: the per-model fit (:func:`cjstats.estimate`, :func:`cjstats.judge_f_test`) drops
the (scenario, generation) cells some judge did not score (:meth:`cjstats.stats.CellStats.for_anova`), the
joint fit (:func:`cjstats.fit_joint`, :func:`cjstats.compare_models`, :func:`cjstats.self_preference`)
drops the scenarios that are not complete for every model and judge. Both hand their counts, one record per
model (x criterion), to :func:`account_for_drop`, which

- refuses (:class:`~cjstats.exceptions.CjstatsError`) when a model would lose more than ``max_drop`` of its
  scenarios, naming the model, the counts and the fix;
- warns (:class:`~cjstats.exceptions.CjstatsWarning`, one sentence) with the rows and scenarios removed per
  model (x criterion), the largest losses first (five named, then how many more);
- returns the table (:data:`DROPPED_COLUMNS`) that the result carries as ``dropped``.

A dropped scenario is one left out entirely; with several generations per scenario a drop may also remove
single cells (``dropped_cells``) and keep the scenario.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import pandas as pd

from cjstats._defaults import MAX_DROP
from cjstats._warnings import warn
from cjstats.exceptions import CjstatsError, CjstatsWarning

__all__ = ["DROPPED_COLUMNS", "resolve_max_drop", "check_max_drop", "account_for_drop"]

#: Columns of the ``dropped`` table (``criterion`` only when the table has criteria).
DROPPED_COLUMNS: tuple[str, ...] = ("model", "criterion", "dropped_rows", "n_rows", "dropped_cells", "n_cells",
                                    "dropped_scenarios", "n_scenarios", "share_scenarios")

#: How many groups the warning names before it points to the table.
_NAMED = 5


def resolve_max_drop(max_drop: float | None, *, caller: str) -> float:
    """Fill in the default (:data:`cjstats._defaults.MAX_DROP`) and check that ``max_drop`` lies in [0, 1]."""
    if max_drop is None:
        return MAX_DROP
    if isinstance(max_drop, bool) or not isinstance(max_drop, Real) or not 0.0 <= float(max_drop) <= 1.0:
        raise CjstatsError(f"The 'max_drop' argument of {caller} must be a share of scenarios between 0 and 1 "
                           f"(1 allows dropping all). Got {max_drop!r} instead.")
    return float(max_drop)


def _label(rec: Mapping[str, Any]) -> str:
    crit = rec.get("criterion")
    return f"model '{rec['model']}'" + ("" if crit is None or crit != crit else f", criterion '{crit}'")


def _allowing(share: float) -> float:
    """The smallest two-decimal max_drop that allows ``share`` (0.8 for 16 of 20 scenarios)."""
    return min(1.0, math.ceil(share * 100 - 1e-9) / 100)


def _share(rec: Mapping[str, Any]) -> float:
    n = int(rec.get("n_scenarios") or 0)
    return int(rec.get("dropped_scenarios") or 0) / n if n else 0.0


def check_max_drop(records: Sequence[Mapping[str, Any]], *, max_drop: float) -> None:
    """Refuse, in one sentence naming the worst model (x criterion), a drop over ``max_drop`` of its scenarios."""
    over = [r for r in records if _share(r) > max_drop + 1e-12]
    if not over:
        return
    worst = max(over, key=_share)
    share = _share(worst)
    more = f" (and {len(over) - 1} more)" if len(over) > 1 else ""
    raise CjstatsError(
        f"incomplete='drop' would remove {int(worst['dropped_scenarios']):,} of {int(worst['n_scenarios']):,} "
        f"scenarios ({share:.0%}) and {int(worst['dropped_rows']):,} of {int(worst['n_rows']):,} rows of "
        f"{_label(worst)}{more}, more than max_drop={max_drop:g} allows; use method='reml', which keeps every "
        f"call, or pass max_drop={_allowing(share):g} to accept the loss.")


def account_for_drop(records: Sequence[Mapping[str, Any]], *, max_drop: float, what: str = "incomplete cells",
                     unit: str = "group", stacklevel: int = 3) -> pd.DataFrame:
    """Refuse a drop that removes more than ``max_drop`` of a model's scenarios, warn about any other, return the table.

    Parameters
    ----------
    records : sequence of mappings
        One per model (x criterion): ``model``, ``criterion`` (absent or None without criteria),
        ``dropped_rows``, ``n_rows``, ``dropped_cells``, ``n_cells``, ``dropped_scenarios``, ``n_scenarios``.
    max_drop : float
        The share of a model's scenarios that may be dropped (checked by :func:`resolve_max_drop`).
    what : str
        What the drop removes, for the warning.
    unit : str
        What one record is, for the warning (``"group"``: a model x criterion; ``"model"``).

    Returns
    -------
    DataFrame
        :data:`DROPPED_COLUMNS`, one row per record (``criterion`` left out when no record has one).
    """
    check_max_drop(records, max_drop=max_drop)
    rows = [{**{c: rec.get(c) for c in DROPPED_COLUMNS[:-1]}, "share_scenarios": _share(rec)} for rec in records]
    table = pd.DataFrame(rows, columns=list(DROPPED_COLUMNS))
    if table["criterion"].isna().all():
        table = table.drop(columns="criterion")
    for col in DROPPED_COLUMNS[2:-1]:
        table[col] = table[col].astype("int64")
    hit = sorted((r for r in rows if r["dropped_rows"]), key=lambda r: (-r["share_scenarios"], -r["dropped_rows"]))
    if hit:
        named = "; ".join(f"{_label(r)}: {int(r['dropped_rows']):,} of {int(r['n_rows']):,} rows and "
                          f"{int(r['dropped_scenarios']):,} of {int(r['n_scenarios']):,} scenarios"
                          for r in hit[:_NAMED])
        rest = f"; and {len(hit) - _NAMED} more" if len(hit) > _NAMED else ""
        warn(f"incomplete='drop' removed {what} from {len(hit)} of {len(rows)} "
             f"{unit}{'s' if len(rows) != 1 else ''}: {named}{rest}.", CjstatsWarning,
             stacklevel=stacklevel)
    return table
