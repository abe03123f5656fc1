"""Real multi-judge score tables bundled with cjstats, so examples and the demo need no download.

``hanna``: HANNA story ratings (Chhun et al., COLING 2022; TACL 2024; MIT licence, see
``data/LICENSE-hanna.txt``). 11 story sources (``model``) x 96 WritingPrompts prompts (``scenario``) x
5 LLM judges (Beluga-13B, ChatGPT, Llama-13B, Mistral-7B, OrcaPlatypus) x 6 criteria, each under 4 judge
prompt variants (``eval_prompt``); one story per source and prompt (m = 1). Each score is the mean of 3
sampled LLM ratings on a 1-5 scale (0.8% are below 1 because the authors coded unparsed answers 0 or -1).
"""

from __future__ import annotations

from importlib import resources
from typing import Literal

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.scores import Scores, read_scores

__all__ = ["load", "load_frame", "NAMES"]

#: Bundled datasets: name -> file in ``cjstats/datasets/data``.
NAMES: dict[str, str] = {"hanna": "hanna_llm.csv.gz"}


def _check_name(name: str) -> str:
    if name not in NAMES:
        raise CjstatsError(f"There is no bundled dataset '{name}' (available: {', '.join(sorted(NAMES))}).")
    return name


def load_frame(name: str = "hanna") -> pd.DataFrame:
    """The bundled table as a plain DataFrame, every column as shipped."""
    path = resources.files("cjstats.datasets") / "data" / NAMES[_check_name(name)]
    with resources.as_file(path) as p:
        return pd.read_csv(p)


def load(name: str = "hanna", *, eval_prompt: int | Literal["as_generation"] = 1,
         composite: bool = False) -> Scores:
    """A bundled dataset as a validated :class:`~cjstats.scores.Scores` table.

    Parameters
    ----------
    eval_prompt : int or "as_generation"
        HANNA rates every story under 4 judge prompt variants. An int (1-4) keeps one variant, giving the
        m = 1 design of the source. ``"as_generation"`` keeps all four and uses the variant as the
        ``generation`` index (m = 4): a pool of repeated measurements per (scenario, judge) for subsampling
        experiments (paper App. F), not four generated stories.
    composite : bool
        Average the 6 criteria of each cell into one composite score (as the paper does for MindEval).
    """
    df = load_frame(name)
    if eval_prompt == "as_generation":
        df = df.assign(generation=df["eval_prompt"])
    elif eval_prompt in (1, 2, 3, 4):
        df = df[df["eval_prompt"] == eval_prompt]
    else:
        raise CjstatsError(f"The 'eval_prompt' argument of load must be 1, 2, 3, 4 or 'as_generation'. "
                           f"Got {eval_prompt!r} instead.")
    scores = read_scores(df.drop(columns="eval_prompt"))
    return scores.composite() if composite else scores
