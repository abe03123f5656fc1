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
from cjstats.io.scores import Scores

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


def _where(crit: object) -> str:
    return "" if crit in (None, "") else f" on criterion '{crit}'"


def _n_more(n: int) -> str:
    return f"{n} more criteri{'a' if n > 1 else 'on'}"


def _check_reference(llm: pd.DataFrame, ref: pd.DataFrame, items: pd.DataFrame) -> None:
    """Warn, per criterion, when the reference ratings cannot be compared with the judges' scores.

    Checked within each criterion (a table may rate criteria on different scales, which pooled ranges hide), on
    the reference ratings of judged items only:

    - reference ratings that are constant: correlation, calibration and alpha against them are undefined (NaN)
      and a human-scale mean has no spread to estimate, whatever the judges do;
    - reference ratings and judge scores that look like different scales (spans differ by more than 2x, or
      ranges that barely overlap): bias and calibration then compare unlike numbers. Not tested when either
      side is constant (a constant has no span to compare; a constant judge is noted in the results).
    """
    rated = items.loc[items["n_human"] > 0, ["criterion", *_CELL]]
    ref = ref.merge(rated, on=["criterion", *_CELL], how="inner")
    constant, scales = [], []
    for crit, r in ref.groupby("criterion", sort=True, dropna=False):
        j = llm.loc[llm["criterion"] == crit, "score"]
        rl, rh = float(r["score"].min()), float(r["score"].max())
        jl, jh = float(j.min()), float(j.max())
        if rh == rl:
            constant.append((crit, rl))
            continue
        js, rs = jh - jl, rh - rl
        if js == 0:
            continue
        overlap = min(jh, rh) - max(jl, rl)
        if max(js, rs) > 2 * min(js, rs) or overlap < 0.5 * min(js, rs):
            scales.append((crit, rl, rh, jl, jh))
    if constant:
        crit, v = constant[0]
        more = f" (and on {_n_more(len(constant) - 1)})" if len(constant) > 1 else ""
        warn(f"Every reference rating{_where(crit)} is {v:g}{more}: with no variation among them, agreement "
             f"with the judges (correlation, calibration, alpha) is undefined and a human-scale mean has no spread "
             f"to estimate; check the reference raters' column, or add ratings of items that differ.",
             CjstatsWarning, stacklevel=4)
    if scales:
        crit, rl, rh, jl, jh = scales[0]
        more = f" (and on {_n_more(len(scales) - 1)})" if len(scales) > 1 else ""
        warn(f"The reference ratings{_where(crit)} range over [{rl:g}, {rh:g}] but the judges' scores over "
             f"[{jl:g}, {jh:g}]{more}: they look like different scales, so bias and calibration compare unlike "
             f"numbers; rescale one of them first.", CjstatsWarning, stacklevel=4)


def paired_items(scores: Scores, *, reference: str | list[str] | None = None,
                 caller: str = "paired_items") -> PairedItems:
    """Join each judged item's LLM scores with the mean of its reference ratings.

    Raises one sentence when no reference rater is named or found, or when the reference rates no item
    that the judges rated; warns, per criterion, when the reference ratings are constant or look like a
    different scale from the judges' scores (naming both ranges), see :func:`_check_reference`.
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
    names = sorted(set(ref["judge"].astype(str)))
    if int((items["n_human"] > 0).sum()) == 0:
        raise CjstatsError(f"The reference raters ({', '.join(names)}) rate no item that the judges rated: match "
                           f"their model, scenario, generation{' and criterion' if has_crit else ''} values to "
                           f"the judges' rows.")
    if int((items["n_human"] > 0).sum()) == 1:
        raise CjstatsError(f"The reference raters ({', '.join(names)}) rate a single judged item: agreement and "
                           f"human-scale means need human labels on at least 2 items.")
    _check_reference(llm, ref, items)
    if not has_crit:
        items["criterion"] = None
        ref = ref.assign(criterion=None)
    ratings = ref.reset_index(drop=True)
    return PairedItems(items=items, judges=judges, reference=names, ratings=ratings)
