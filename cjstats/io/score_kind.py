"""What kind of scores a table holds, and whether the Gaussian model suits them: one pure rule, no file opened.

:func:`score_kind` names the kind (``binary``, ``ordinal``, ``continuous``); :func:`score_shape` counts the facts
the advice needs (distinct values, the bounds and the share of scores at each); :func:`discrete_note` turns them
into the one line every summary of a Gaussian fit prints when the scores are discrete or piled at a bound, and
:func:`prefers_discrete_model` is the same rule as a yes/no for ``--method auto``.

The rule (docs/discrete_scores.md): a table is flagged when its scores take at most :data:`FEW_LEVELS` distinct
values (two values: pass/fail verdicts; 3-5: a short rating scale), or when at least :data:`BOUND_SHARE` of them
sit at the lowest or the highest value (a floor or a ceiling). On such data the linear model of the paper (Eq. 1)
is misspecified: rounding and a bound shrink every variance component (5-18% in the reference study,
docs/study.md) and a judge that piles its scores at the ceiling is not a constant shift. The cumulative-link
(ordinal) model fits ordered categories on a latent scale instead (Agresti, *Analysis of Ordinal Categorical
Data*, 2010, ch. 10; ``ordinal::clmm`` in R).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["ORDINAL_MAX_LEVELS", "FEW_LEVELS", "BOUND_SHARE", "score_kind", "score_shape", "discrete_note",
           "prefers_discrete_model", "discrete_models", "shape_phrase"]

#: At most this many distinct values in whole or half points make a score ordinal (more: continuous).
ORDINAL_MAX_LEVELS = 11
#: At most this many distinct values: the scores are a short scale (or verdicts), flagged whatever their spread.
FEW_LEVELS = 5
#: At least this share of the scores at the lowest or the highest value is a floor or a ceiling, flagged.
BOUND_SHARE = 0.30


def _kind_of_levels(levels: np.ndarray) -> str:
    """The kind of scores whose distinct finite values, sorted, are ``levels`` (the rule of :func:`score_kind`)."""
    if len(levels) <= 2:
        return "binary"
    if len(levels) <= ORDINAL_MAX_LEVELS and np.all(2 * levels == np.round(2 * levels)):
        return "ordinal"
    return "continuous"


def _finite(values: Any) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values)]


def score_kind(values: Any) -> str:
    """``binary`` (at most two values), ``ordinal`` (at most :data:`ORDINAL_MAX_LEVELS` distinct values in whole or
    half points: a 1-5 rubric, or Inspect's C/P/I grades read as 1/0.5/0) or ``continuous``. Missing and infinite
    values are ignored."""
    return _kind_of_levels(np.unique(_finite(values)))


def score_shape(values: Any) -> dict[str, Any]:
    """The facts of a score column the advice reads: ``kind``, ``n_values`` (distinct values), ``n_rows``,
    ``min``/``max``, ``floor_share``/``ceiling_share`` (share of rows at the min/max). Plain numbers (they
    travel in a result's ``provenance`` and pickle/save as they are). Missing and infinite values are ignored.

    One sort of the finite values: ``np.unique`` gives the sorted levels v_1 < ... < v_L with counts c_1 .. c_L out
    of N = sum_l c_l rows, so n_values = L, min = v_1, max = v_L, floor_share = c_1 / N and
    ceiling_share = c_L / N. A :class:`~cjstats.io.scores.Scores` table computes this once
    (``Scores.score_shape``)."""
    values = _finite(values)
    if values.size == 0:
        return {"kind": "continuous", "n_values": 0, "n_rows": 0, "min": float("nan"), "max": float("nan"),
                "floor_share": float("nan"), "ceiling_share": float("nan")}
    levels, counts = np.unique(values, return_counts=True)
    n = int(values.size)
    # min/max from the values, not the levels: the same signed zero as ever when a column holds both 0.0 and -0.0
    return {"kind": _kind_of_levels(levels), "n_values": int(len(levels)), "n_rows": n,
            "min": float(values.min()), "max": float(values.max()), "floor_share": float(counts[0] / n),
            "ceiling_share": float(counts[-1] / n)}


def prefers_discrete_model(shape: Mapping[str, Any] | None) -> bool:
    """Whether the scores are discrete or bounded enough that an ordinal/binary model suits them better than the
    Gaussian one: at most :data:`FEW_LEVELS` distinct values, or at least :data:`BOUND_SHARE` of rows at one bound
    (a table whose scores are all equal is left alone: no model separates anything there)."""
    if not shape or shape.get("n_values", 0) < 2:
        return False
    if shape["n_values"] <= FEW_LEVELS:
        return True
    return max(shape["floor_share"], shape["ceiling_share"]) >= BOUND_SHARE


def discrete_models() -> str:
    """The models to suggest, as a phrase: the maximum-likelihood cumulative-link backend ``method="ordinal"`` and
    the Bayesian ordinal likelihood (two categories: the binary, pass/fail case)."""
    return 'cj.estimate(scores, method="ordinal") (maximum likelihood) or method="bayes", likelihood="ordinal"'


def _num(x: float) -> str:
    return f"{x:g}"


def shape_phrase(shape: Mapping[str, Any]) -> str:
    """The facts of a flagged score column in a few words, e.g. ``"scores take 5 values and 68% sit at the top
    (5)"`` or ``"scores are binary (0/1, 23% at 1)"``."""
    n, lo, hi = shape["n_values"], shape["min"], shape["max"]
    floor, ceil = shape["floor_share"], shape["ceiling_share"]
    if n == 2:
        return f"scores are binary ({_num(lo)}/{_num(hi)}, {ceil:.0%} at {_num(hi)})"
    what = f"scores take {n} values"
    if max(floor, ceil) >= BOUND_SHARE:
        share, where, at = (ceil, "top", hi) if ceil >= floor else (floor, "bottom", lo)
        what += f" and {share:.0%} sit at the {where} ({_num(at)})"
    return what


def discrete_note(shape: Mapping[str, Any] | None) -> str | None:
    """The one line a Gaussian fit's summary prints on discrete or bounded scores (None when they are not).

    E.g. ``"scores take 5 values and 68% sit at the top (5): the Gaussian model shrinks variances on such data and
    an ordinal model fits ordered categories; consider cj.estimate(scores, method="ordinal") (maximum
    likelihood) or method="bayes", likelihood="ordinal" (docs/discrete_scores.md)."``

    The models are named as Python calls (double quotes), which the command line does not rewrite into
    ``--method`` flags: the note is printed by commands with no ``--method`` (plan, humans, doctor) or whose
    ``--method`` has no ordinal choice (drift, judges). ``--method auto``'s reason names ``--method ordinal`` where
    the command offers it (``cjstats.cli._ordinal_choice.ordinal_advice``).
    """
    if not prefers_discrete_model(shape):
        return None
    assert shape is not None
    model = ("a binary (logit/probit) model fits pass rates" if shape["n_values"] == 2 else
             "an ordinal model fits ordered categories")
    return (f"{shape_phrase(shape)}: the Gaussian model shrinks variances on such data and {model}; consider "
            f"{discrete_models()} (docs/discrete_scores.md).")
