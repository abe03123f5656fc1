"""Real multi-judge score tables bundled with cjstats, so examples and the demo need no download.

``hanna``: HANNA story ratings (Chhun et al., COLING 2022; TACL 2024; MIT licence, see
``data/LICENSE-hanna.txt``). 11 story sources (``model``) x 96 WritingPrompts prompts (``scenario``) x
5 LLM judges (Beluga-13B, ChatGPT, Llama-13B, Mistral-7B, OrcaPlatypus) x 6 criteria, each under 4 judge
prompt variants (``eval_prompt``); one story per source and prompt (m = 1). Each LLM score is the mean of 3
sampled LLM ratings on a 1-5 scale (0.8% are below 1 because the authors coded unparsed answers 0 or -1).
The table also holds 3 human rater slots per story (``judge_type == "human"``; different crowd workers per
story, so humans are raters nested in stories, not crossed judges).

``mentalalign``: MentalAlign-70k (Badawi et al. 2025, arXiv:2510.19032; MIT licence, see
``data/LICENSE-mentalalign.txt``). 10 response sources (``model``) x 1,000 mental-health contexts
(``scenario``) x 4 LLM judges (claude-3-7-sonnet, gemini-2.5-flash, gpt-4o, o4-mini) x 7 criteria on 1-5,
plus ``Overall`` (LLM judges only, derived) and one ``human-expert`` rating per item on 981 contexts. The
judges belong to evaluated model families (gpt-4o judges gpt-4o), so self-preference is possible.
"""

from __future__ import annotations

from importlib import resources
from typing import Literal

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.scores import Scores, read_scores

__all__ = ["load", "load_frame", "NAMES"]

#: Bundled datasets: name -> file in ``cjstats/datasets/data``.
NAMES: dict[str, str] = {"hanna": "hanna.csv.gz", "mentalalign": "mentalalign.csv.gz"}


def _check_name(name: str) -> str:
    if name not in NAMES:
        raise CjstatsError(f"There is no bundled dataset '{name}' (available: {', '.join(sorted(NAMES))}).")
    return name


def load_frame(name: str = "hanna") -> pd.DataFrame:
    """The bundled table as a plain DataFrame, every column and every rater (LLM and human) as shipped."""
    path = resources.files("cjstats.datasets") / "data" / NAMES[_check_name(name)]
    with resources.as_file(path) as p:
        return pd.read_csv(p)


def load(name: str = "hanna", *, eval_prompt: int | Literal["as_generation"] = 1,
         composite: bool = False, humans: bool = False) -> Scores:
    """A bundled dataset as a validated :class:`~cjstats.scores.Scores` table of its LLM judges.

    Parameters
    ----------
    name : {"hanna", "mentalalign"}
        The dataset. Only LLM-judge rows are kept unless ``humans=True`` (all rows are in :func:`load_frame`);
        for ``"mentalalign"`` the derived ``Overall`` criterion is dropped, leaving the 7 rated attributes.
    eval_prompt : int or "as_generation"
        HANNA only. HANNA rates every story under 4 judge prompt variants. An int (1-4) keeps one variant,
        giving the m = 1 design of the source. ``"as_generation"`` keeps all four and uses the variant as the
        ``generation`` index (m = 4): a pool of repeated measurements per (scenario, judge) for subsampling
        experiments (paper App. F), not four generated stories.
    composite : bool
        Average the criteria of each cell into one composite score (as the paper does for MindEval).
    humans : bool
        Also keep the human ratings, as reference raters (:meth:`Scores.reference_frame`); every analysis of
        the table still sees only the LLM judges. HANNA: 3 crowd-worker slots per story (different workers per
        story); MentalAlign: one ``human-expert`` rating per item on 981 of the 1,000 contexts.
    """
    df = load_frame(name)
    human = df["judge_type"] == "human"
    df = df[(df["judge_type"] == "llm") | human] if humans else df[~human]
    if name == "hanna":
        if eval_prompt == "as_generation":
            if humans:
                raise CjstatsError("load('hanna', humans=True) needs one eval_prompt (1-4): the humans rated each "
                                   "story once, so the prompt variants cannot act as generations they rated.")
            df = df.assign(generation=df["eval_prompt"])
        elif eval_prompt in (1, 2, 3, 4):
            df = df[(df["eval_prompt"] == eval_prompt) | (df["judge_type"] == "human")]
        else:
            raise CjstatsError(f"The 'eval_prompt' argument of load must be 1, 2, 3, 4 or 'as_generation'. "
                               f"Got {eval_prompt!r} instead.")
        df = df.drop(columns=["eval_prompt", "n_samples_averaged", "in_scale"])
    else:
        df = df[df["criterion"] != "Overall"]
    scores = read_scores(df.reset_index(drop=True))
    return scores.composite() if composite else scores
