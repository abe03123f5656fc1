"""An Inspect scorer that runs the CyclicJudge schedule: each sample is graded by the judges the schedule assigns.

The schedule is a decision (:func:`cjstats.cyclic_schedule`); this module carries it into an Inspect AI run
(``pip install 'cjstats[inspect]'``), and :func:`cjstats.read_inspect_log` reads the run back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from cjstats.decisions.schedules import cyclic_schedule
from cjstats.exceptions import CjstatsError
from cjstats.io.inspect import CYCLIC_SCORER, need_inspect

__all__ = ["cyclic_judge_scorer"]


def cyclic_judge_scorer(graders: Sequence[Any], samples: Sequence[Any] | int, *, epochs: int = 1, k: int = 1,
                        seed: int | None = None, scorer: Callable[..., Any] | None = None,
                        **scorer_args: Any) -> Any:
    """An Inspect scorer that grades each sample with the judges the CyclicJudge schedule assigns it.

    The schedule is :func:`cjstats.cyclic_schedule` over the samples and epochs (one rotation that never
    restarts per sample, ``k`` judges per (sample, epoch)), so an Inspect run spends k calls per generation
    instead of K_tot and its judge term shrinks as in the paper's Eq. 5. Each assigned judge grades through
    ``scorer(model=grader, **scorer_args)`` (``model_graded_qa`` by default). The score value is
    ``{judge: value}`` with NaN for the judges not assigned (Inspect's epoch reducer needs the same keys
    in every epoch); :func:`read_inspect_log` reads it back with the
    schedule's design.

    Parameters
    ----------
    graders : sequence of str or inspect_ai Model
        The judge panel (K_tot grader models).
    samples : sequence or int
        The dataset's sample ids (or the dataset itself), in order; an int n means ids 1..n (Inspect's
        default ids).
    epochs : int
        The task's epochs (generations per sample).
    k : int
        Judges per (sample, epoch).
    seed : int, optional
        Shuffles the sample and judge order of the schedule (:func:`cjstats.cyclic_schedule`).
    scorer : callable, optional
        The grading scorer factory, called once per judge with ``model=``; default ``model_graded_qa``.
    """
    need_inspect()
    from inspect_ai.scorer import Score, Target, mean, model_graded_qa, scorer as scorer_decorator
    from inspect_ai.solver import TaskState

    if not graders:
        raise CjstatsError("The 'graders' argument of cyclic_judge_scorer is empty: give the judge panel.")
    labels = [g if isinstance(g, str) else str(g) for g in graders]
    if len(set(labels)) != len(labels):
        raise CjstatsError(f"The 'graders' argument of cyclic_judge_scorer names a judge twice ({labels}).")
    if isinstance(samples, int):
        ids = list(range(1, samples + 1))
    else:
        ids = [getattr(s, "id", s) for s in samples]
        if any(i is None for i in ids):
            ids = [i if i is not None else n + 1 for n, i in enumerate(ids)]
    plan = cyclic_schedule([str(i) for i in ids], labels, generations=epochs, judges_per_generation=k, seed=seed)
    gens = sorted(plan["generation"].unique())
    assigned: dict[tuple[str, int], list[str]] = {}
    for sid, gen, judge in plan[["scenario", "generation", "judge"]].itertuples(index=False):
        assigned.setdefault((str(sid), gens.index(gen) + 1), []).append(judge)
    factory = scorer or model_graded_qa
    graders_by_label = dict(zip(labels, (factory(model=g, **scorer_args) for g in graders)))

    @scorer_decorator(metrics=[mean()], name=CYCLIC_SCORER)
    def cyclic_judge() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            key = (str(state.sample_id), int(state.epoch))
            if key not in assigned:
                raise CjstatsError(f"cyclic_judge_scorer has no schedule for sample {key[0]!r}, epoch {key[1]}: "
                                   f"pass the task's dataset as samples= and its epochs as epochs=.")
            # every judge key in every epoch (Inspect's epoch reducer needs the same keys): NaN = not scheduled
            grades: dict[str, Any] = dict.fromkeys(labels, math.nan)
            explanations = []
            for judge in assigned[key]:
                s = await graders_by_label[judge](state, target)
                grades[judge] = s.value if s is not None else None
                explanations.append(f"{judge}: {s.explanation if s is not None else 'no score'}")
            return Score(value=grades, explanation="\n".join(explanations),
                         metadata={"cyclicjudge_judges": assigned[key]})

        return score

    return cyclic_judge()
