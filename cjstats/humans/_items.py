"""Pair every judged item with its reference (human) ratings: the one table agreement and PPI read.

An *item* is one (model, scenario, generation) cell of one criterion. Its reference value is the mean of the
reference raters' ratings of that cell (HANNA: the 3 crowd workers of the story; MentalAlign: the one expert);
its judge values are each LLM judge's score and ``panel``, the mean over the judges that scored the cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cjstats._warnings import warn
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.scores import Scores

__all__ = ["PairedItems", "paired_items", "PANEL"]

#: Name of the pseudo-judge that averages the panel's judges on each item.
PANEL = "panel"
_CELL = ["model", "scenario", "generation"]


@dataclass(frozen=True, slots=True)
class PairedItems:
    """Judge and reference values per item, in one wide table.

    Attributes
    ----------
    items : DataFrame
        One row per judged item: ``criterion`` (``None`` when the table has none), ``model, scenario,
        generation``, one column per LLM judge, ``panel``, ``human`` (reference mean, NaN when no reference
        rating) and ``n_human`` (number of reference ratings).
    judges : list of str
        The LLM judges (columns of ``items``).
    reference : list of str
        The reference raters used.
    ratings : DataFrame
        The reference ratings, long: ``criterion, model, scenario, generation, judge, score``.
    """

    items: pd.DataFrame
    judges: list[str]
    reference: list[str]
    ratings: pd.DataFrame


def _resolve(scores: Scores, reference: str | list[str] | None, caller: str) -> tuple[Scores, pd.DataFrame]:
    """The LLM-judge table and the reference ratings, from ``scores``' own reference or from named judges."""
    if not isinstance(scores, Scores):
        raise CjstatsError(f"{caller} takes a Scores table from read_scores. Got {type(scores).__name__} instead.")
    ref = scores.reference_frame()
    if reference is None:
        if not scores.has_reference:
            raise CjstatsError(f"scores has no reference raters: name the human raters with reference='<judge>' "
                               f"(command line: --reference) or mark them in a judge_type column "
                               f"(judges: {', '.join(scores.judges)}).")
        return scores, ref
    names = [reference] if isinstance(reference, str) else reference
    if not isinstance(names, (list, tuple)) or not names or not all(isinstance(x, str) for x in names):
        raise CjstatsError(f"The 'reference' argument of {caller} must be a rater name or a list of rater names. "
                           f"Got {reference!r} instead.")
    in_ref = [x for x in names if x in scores.reference_judges]
    in_llm = [x for x in names if x in scores.judges]
    unknown = [x for x in names if x not in in_ref and x not in in_llm]
    if unknown:
        known = ", ".join(scores.reference_judges + scores.judges)
        raise CjstatsError(f"The reference rater '{unknown[0]}' is not in scores (raters: {known}); name it "
                           f"exactly as in column 'judge'.")
    if in_llm:
        rest = [j for j in scores.judges if j not in in_llm]
        if not rest:
            raise CjstatsError(f"Every judge of scores is named as reference ({', '.join(in_llm)}): no LLM judge is "
                               f"left to compare with them.")
        moved = scores.to_frame()
        moved = moved[moved["judge"].isin(in_llm)]
        ref = pd.concat([ref[ref["judge"].isin(in_ref)], moved], ignore_index=True)
        scores = scores.subset(judges=rest)
    else:
        ref = ref[ref["judge"].isin(in_ref)]
    return scores, ref


def _check_scale(judged: pd.Series, ref: pd.Series) -> None:
    """Warn when the reference and the judges do not look like the same scale (spans differ by > 2x)."""
    jl, jh, rl, rh = float(judged.min()), float(judged.max()), float(ref.min()), float(ref.max())
    js, rs = jh - jl, rh - rl
    overlap = min(jh, rh) - max(jl, rl)
    small = min(js, rs)
    if max(js, rs) > 2 * max(small, 1e-12) or (small > 0 and overlap < 0.5 * small):
        warn(f"The reference ratings range over [{rl:g}, {rh:g}] but the judges' scores over "
             f"[{jl:g}, {jh:g}]: they look like different scales, so bias and calibration compare unlike "
             f"numbers; rescale one of them first.", CjstatsWarning, stacklevel=3)


def paired_items(scores: Scores, *, reference: str | list[str] | None = None,
                 caller: str = "paired_items") -> PairedItems:
    """Join each judged item's LLM scores with the mean of its reference ratings.

    Raises one sentence when no reference rater is named or found, or when the reference rates no item
    that the judges rated; warns when the two look like different scales (naming both ranges).
    """
    scores, ref = _resolve(scores, reference, caller)
    llm = scores.to_frame()
    has_crit = scores.has_criterion
    if not has_crit:  # one placeholder criterion, so one code path; set back to None at the end
        llm = llm.assign(criterion="")
        ref = ref.assign(criterion="")
    keys = ["criterion", *_CELL]
    ref = ref[[*keys, "judge", "score"]]
    wide = llm.set_index([*keys, "judge"])["score"].unstack("judge")  # one row per (judge, cell): validated
    judges = [str(c) for c in wide.columns]
    wide.columns = judges
    wide[PANEL] = wide[judges].mean(axis=1)
    agg = ref.groupby(keys, observed=True)["score"].agg(["mean", "size"])
    agg.columns = ["human", "n_human"]
    items = wide.join(agg, how="left").reset_index()
    items["n_human"] = items["n_human"].fillna(0).astype(np.int64)
    if not has_crit:
        items["criterion"] = None
        ref = ref.assign(criterion=None)
    names = sorted(set(ref["judge"].astype(str)))
    if int((items["n_human"] > 0).sum()) == 0:
        raise CjstatsError(f"The reference raters ({', '.join(names)}) rate no item that the judges rated: match "
                           f"their model, scenario, generation{' and criterion' if has_crit else ''} values to "
                           f"the judges' rows.")
    if int((items["n_human"] > 0).sum()) == 1:
        raise CjstatsError(f"The reference raters ({', '.join(names)}) rate a single judged item: agreement and "
                           f"human-scale means need human labels on at least 2 items.")
    _check_scale(llm["score"], ref["score"])
    ratings = ref.reset_index(drop=True)
    return PairedItems(items=items, judges=judges, reference=names, ratings=ratings)
