"""Real multi-judge score tables bundled with cjstats, so examples and the demo need no download.

``hanna``: HANNA story ratings (Chhun et al., COLING 2022; TACL 2024; MIT licence, see
``data/LICENSE-hanna.txt``). 11 story sources (``model``) x 96 WritingPrompts prompts (``scenario``) x
5 LLM judges (Beluga-13B, ChatGPT, Llama-13B, Mistral-7B, OrcaPlatypus) x 6 criteria, each under 4 judge
prompt variants (``eval_prompt``); one story per source and prompt (m = 1). Each LLM score is the mean of 3
sampled LLM ratings on a 1-5 scale; 0.8% are below 1 (down to -1) because the authors coded unparsed answers
0 or -1 and averaged them in. :func:`table`, :func:`load` and :func:`export` drop those parse-failure sentinels
(:data:`SCALES`; 346 of the 31,680 LLM calls of prompt variant 1, counted in ``provenance['dropped_sentinels']``),
``keep_sentinels=True`` keeps them, and :func:`load_frame` returns every row as shipped. The table also holds 3 human rater slots per story (``judge_type == "human"``; different crowd workers per
story, so humans are raters nested in stories, not crossed judges).

``mentalalign``: MentalAlign-70k (Badawi et al. 2025, arXiv:2510.19032; MIT licence, see
``data/LICENSE-mentalalign.txt``). 10 response sources (``model``) x 1,000 mental-health contexts
(``scenario``) x 4 LLM judges (claude-3-7-sonnet, gemini-2.5-flash, gpt-4o, o4-mini) x 7 criteria on 1-5,
plus ``Overall`` (LLM judges only, derived) and one ``human-expert`` rating per item on 981 contexts. The
judges belong to evaluated model families (gpt-4o judges gpt-4o), so self-preference is possible.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.io.read import read_scores
from cjstats.io.scores import Scores

__all__ = ["load", "load_frame", "table", "export", "NAMES", "DESCRIPTIONS", "SCALES"]

#: Bundled datasets: name -> file in ``cjstats/datasets/data``.
NAMES: dict[str, str] = {"hanna": "hanna.csv.gz", "mentalalign": "mentalalign.csv.gz"}

#: One line per bundled dataset (``cjstats datasets list``).
DESCRIPTIONS: dict[str, str] = {
    "hanna": "HANNA stories: 11 models x 96 prompts x 5 LLM judges x 6 criteria (judge-prompt variant 1), m = 1; "
             "346 parse-failure scores (below 1) dropped, so a few judge calls are missing; 3 human rater slots "
             "per story",
    "mentalalign": "MentalAlign-70k: 10 models x 1,000 contexts x 4 LLM judges x 7 criteria, m = 1, a few judge "
                   "calls missing; one human-expert rating per item on 981 contexts",
}


#: The rubric of each bundled dataset's scores (lowest, highest). A score outside it is not a rating: HANNA's
#: authors coded an unparsed LLM answer 0 or -1 and averaged it with the other samples of the call, so its
#: means below 1 are parse-failure sentinels, which :func:`table` and :func:`load` drop unless
#: ``keep_sentinels=True``. (A mean inside 1-5 may still hold one such answer among its 3 samples; the
#: released file does not say which, so those stay.)
SCALES: dict[str, tuple[float, float]] = {"hanna": (1.0, 5.0), "mentalalign": (1.0, 5.0)}


def _check_name(name: str) -> str:
    if name not in NAMES:
        raise CjstatsError(f"There is no bundled dataset '{name}' (available: {', '.join(sorted(NAMES))}).")
    return name


def load_frame(name: str = "hanna") -> pd.DataFrame:
    """The bundled table as a plain DataFrame, every column and every rater (LLM and human) as shipped."""
    path = resources.files("cjstats.datasets") / "data" / NAMES[_check_name(name)]
    with resources.as_file(path) as p:
        return pd.read_csv(p)


def table(name: str = "hanna", *, eval_prompt: int | Literal["as_generation"] = 1,
          humans: bool = True, keep_sentinels: bool = False) -> pd.DataFrame:
    """The long table that :func:`load` reads: one row per judge call, with a ``judge_type`` column.

    Unlike :func:`load_frame` (every row as shipped: HANNA has 4 judge-prompt variants per call, so reading it
    needs ``duplicates="mean"`` or a filter) this has one row per call, and unlike ``load(...).to_frame()`` (the
    LLM judges only) it keeps the human ratings, marked ``judge_type == "human"``. So
    ``read_scores(table(name))``, or ``read_scores`` of the file :func:`export` writes, gives
    ``load(name, humans=True)`` with no option: the human rows become reference raters.

    Parameters
    ----------
    name : {"hanna", "mentalalign"}
        The dataset.
    eval_prompt : int or "as_generation"
        HANNA only: the judge-prompt variant to keep (1-4), as in :func:`load`.
    humans : bool
        Keep the human ratings (default); ``False`` keeps the LLM judges only.
    keep_sentinels : bool
        Keep the scores outside the dataset's rubric (:data:`SCALES`, 1-5): HANNA's parse-failure sentinels,
        LLM means below 1 (down to -1) that average in answers the authors coded 0 or -1. By default they are
        dropped, each one a missing judge call (346 rows of HANNA's prompt variant 1, 1,051 over the 4
        variants); how many is in ``DataFrame.attrs['dropped_sentinels']`` and, after :func:`load`, in
        ``provenance['dropped_sentinels']``. MentalAlign has none.

    Returns
    -------
    DataFrame
        Columns ``model, scenario, generation, judge, criterion, score, judge_type``.
    """
    df = load_frame(name)
    human = df["judge_type"] == "human"
    df = df[(df["judge_type"] == "llm") | human] if humans else df[~human]
    if name == "hanna":
        if eval_prompt == "as_generation":
            if humans:
                raise CjstatsError("HANNA's human ratings need one eval_prompt (1-4): the humans rated each story "
                                   "once, so the prompt variants cannot act as generations they rated; pass "
                                   "humans=False with eval_prompt='as_generation'.")
            df = df.assign(generation=df["eval_prompt"])
        elif eval_prompt in (1, 2, 3, 4):
            df = df[(df["eval_prompt"] == eval_prompt) | (df["judge_type"] == "human")]
        else:
            raise CjstatsError(f"The 'eval_prompt' argument of load must be 1, 2, 3, 4 or 'as_generation'. "
                               f"Got {eval_prompt!r} instead.")
        df = df.drop(columns=["eval_prompt", "n_samples_averaged", "in_scale"])
    else:
        df = df[df["criterion"] != "Overall"]
    dropped = 0
    if not keep_sentinels:
        lo, hi = SCALES[name]
        outside = ~df["score"].between(lo, hi) & df["score"].notna()
        dropped = int(outside.sum())
        df = df[~outside]
    df = df.reset_index(drop=True)
    df.attrs["dropped_sentinels"] = dropped
    return df


#: File endings :func:`export` writes (the formats :func:`cjstats.read_scores` reads).
_EXPORT_KINDS = (".csv", ".csv.gz", ".tsv", ".parquet", ".jsonl")


def export(name: str, path: str | Path, *, eval_prompt: int = 1, keep_sentinels: bool = False) -> Path:
    """Write :func:`table` ``(name, eval_prompt=..., keep_sentinels=...)`` to ``path`` (``.csv``, ``.csv.gz``,
    ``.tsv``, ``.parquet`` or ``.jsonl``), ready for ``cjstats <subcommand> FILE`` and ``read_scores(path)`` with
    no option.

    The human ratings are kept with ``judge_type == "human"``, so ``cjstats humans FILE`` finds them and every
    other analysis leaves them out; HANNA's parse-failure sentinels (scores below 1) are left out unless
    ``keep_sentinels=True``. Returns the path written.
    """
    out = Path(path)
    kind = next((k for k in sorted(_EXPORT_KINDS, key=len, reverse=True) if out.name.lower().endswith(k)), None)
    if kind is None:
        raise CjstatsError(f"export writes {', '.join(_EXPORT_KINDS)}; `{out}` has none of these endings.")
    if not out.parent.is_dir():
        raise CjstatsError(f"The folder of `{out}` does not exist; create it first.")
    df = table(name, eval_prompt=eval_prompt, keep_sentinels=keep_sentinels)
    if kind == ".parquet":
        try:
            df.to_parquet(out, index=False)
        except ImportError as exc:
            raise CjstatsError("Writing Parquet needs pyarrow: pip install 'cjstats[parquet]'.") from exc
    elif kind == ".jsonl":
        df.to_json(out, orient="records", lines=True)
    else:
        df.to_csv(out, index=False, sep="\t" if kind == ".tsv" else ",")
    return out


def load(name: str = "hanna", *, eval_prompt: int | Literal["as_generation"] = 1,
         composite: bool = False, humans: bool = False, keep_sentinels: bool = False) -> Scores:
    """A bundled dataset as a validated :class:`~cjstats.io.scores.Scores` table of its LLM judges.

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
    keep_sentinels : bool
        HANNA's parse-failure sentinels, LLM scores below the rubric's 1 (down to -1, where the authors coded an
        unparsed answer 0 or -1 and averaged it in), are dropped by default: 346 of the 31,680 LLM calls of
        prompt variant 1, so the per-criterion tables miss a few calls (REML fits them as they are; the ANOVA
        asks for ``incomplete="drop"``) and ``composite=True`` averages the criteria left in each cell (5 cells
        lose all six). The count is in ``scores.provenance['dropped_sentinels']``; no warning is given, since
        the loss is fixed and documented here and in docs/data.md. ``True`` keeps them as shipped.
    """
    df = table(name, eval_prompt=eval_prompt, humans=humans, keep_sentinels=keep_sentinels)
    scores = read_scores(df)
    scores._provenance["dropped_sentinels"] = int(df.attrs.get("dropped_sentinels", 0))
    return scores.composite() if composite else scores
