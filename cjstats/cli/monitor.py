"""``cjstats monitor FILE --models a,b``: the anytime-valid confidence sequence so far, and STOP / CONTINUE.

Mirrors :func:`cjstats.confidence_sequence`. FILE goes through :func:`cjstats.read_scores` and its input rules
(separator, missing values with their line, a judge call twice, reference raters marked ``judge_type`` human
kept out of the judges); scenarios arrive in the order they first appear in FILE, or sorted by ``--order
COLUMN``, so the file can be re-read after every new batch of scenarios.
"""

from __future__ import annotations

import warnings

import click

from cjstats.cli._app import emit_frame, format_option

__all__ = ["monitor"]


def _arrival(path: str, scores, order: str | None, criterion: str | None, mapping: dict[str, str] | None) -> list[str]:
    """The scenarios of ``scores`` in the order they arrive in FILE: first appearance, or sorted by the first
    value of the ``--order`` COLUMN (numbers as numbers). Rows of reference raters (``judge_type`` human) are not
    judge calls, so they neither order nor enter the sequence (read_scores keeps them apart)."""
    from pathlib import Path

    import pandas as pd

    from cjstats.cli._app import _reference_rows
    from cjstats.exceptions import CjstatsError, CjstatsWarning
    from cjstats.io.read import ids_as_labels, read_file
    from cjstats.io.rules import file_kind

    raw, _ = read_file(Path(path))
    raw = raw.rename(columns=mapping) if mapping else raw
    human = _reference_rows(raw, None)
    if human is not None:
        raw = raw[~human.to_numpy(dtype=bool)]
    frame = scores.to_frame()
    if criterion is not None and "criterion" in raw.columns:
        raw = raw[raw["criterion"].astype(str) == str(criterion)]
        frame = frame[frame["criterion"].astype(str) == str(criterion)]
    with warnings.catch_warnings():  # read_scores has said it once
        warnings.simplefilter("ignore", CjstatsWarning)
        labels = ids_as_labels(raw["scenario"], "scenario", from_text=file_kind(Path(path)) != "parquet").astype(str)
    if order is None:
        arrival = labels.to_numpy()
    elif order in raw.columns:
        col = raw[order]
        numbers = pd.to_numeric(col, errors="coerce")
        col = numbers if numbers.notna().sum() == col.notna().sum() else col
        arrival = col.groupby(labels.to_numpy(), sort=False).min().sort_values(kind="stable").index
    else:
        raise CjstatsError(f"The option --order names column '{order}', which FILE does not have (found: "
                           f"{', '.join(map(str, raw.columns))}).")
    scored = set(frame["scenario"].astype(str))
    return [s for s in dict.fromkeys(arrival) if s in scored]


@click.command(short_help="Anytime-valid sequential comparison of two models: STOP or CONTINUE.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--models", required=True, metavar="A,B",
              help="The two models to compare (A - B), or one model to follow its mean.")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Error level of the whole sequence.")
@click.option("--method", type=click.Choice(["empirical_bernstein", "normal_mixture", "hedged_betting"]), default="empirical_bernstein",
              show_default=True, help="Bounded scores (needs --bounds) or the normal mixture with a pilot variance.")
@click.option("--bounds", default=None, metavar="LO,HI", help="Lowest and highest possible score, e.g. 1,5.")
@click.option("--order", default=None, metavar="COLUMN", help="Sort scenarios by this column (default: file order).")
@click.option("--null", type=float, default=0.0, show_default=True, help="The value the sequence must exclude.")
@click.option("--criterion", default=None, help="The criterion to monitor when the table has several.")
@click.option("--pilot", type=int, default=20, show_default=True,
              help="Normal mixture: scenarios whose variance sets the boundary.")
@click.option("--variance", type=float, default=None, help="Normal mixture: a known variance of x per scenario.")
@click.option("--tail", type=int, default=10, show_default=True, help="Rows of the sequence to print.")
@click.option("--duplicates", type=click.Choice(["error", "mean"]), default="error", show_default=True,
              help="Several rows for one judge call: fail, or average them.")
@click.option("--columns", "columns", default=None, metavar="THEIRS=OURS,...",
              help="Rename columns, e.g. rater=judge,item=scenario.")
@format_option
def monitor(file: str, models: str, alpha: float, method: str, bounds: str | None, order: str | None, null: float,
            criterion: str | None, pilot: int, variance: float | None, tail: int, duplicates: str,
            columns: str | None, fmt: str) -> None:
    """Print the confidence sequence for mean(A) - mean(B) over the scenarios of FILE so far, then STOP (it
    excludes --null) or CONTINUE. Checking after every new scenario keeps the error level."""
    from cjstats.cli._app import parse_mapping
    from cjstats.io.read import read_scores
    from cjstats.decisions.sequential import confidence_sequence
    from cjstats.exceptions import CjstatsError

    names = [m.strip() for m in models.split(",") if m.strip()]
    if len(names) not in (1, 2):
        raise CjstatsError(f"The option --models takes one or two model names separated by a comma, e.g. "
                           f"gpt-4o,llama. Got `{models}`.")
    pair = None
    if bounds is not None:
        try:
            pair = tuple(float(v) for v in bounds.split(","))
        except ValueError:
            pair = None
        if pair is None or len(pair) != 2:
            raise CjstatsError(f"The option --bounds takes two numbers LO,HI, e.g. 1,5. Got `{bounds}`.")
    if method in ("empirical_bernstein", "hedged_betting") and pair is None:
        raise CjstatsError("The empirical-Bernstein and hedged-betting sequences need the score scale: add --bounds LO,HI (e.g. 1,5), "
                           "or use --method normal_mixture.")
    mapping = parse_mapping(columns, option="--columns") or None
    scores = read_scores(file, columns=mapping, duplicates=duplicates)  # type: ignore[arg-type]
    for name in names:
        if name not in scores.models:
            raise CjstatsError(f"The option --models names '{name}', which FILE does not have (models: "
                               f"{', '.join(scores.models)}).")
    arrival = _arrival(file, scores, order, criterion, mapping)
    try:
        res = confidence_sequence(scores, names[0], names[1] if len(names) == 2 else None, alpha=alpha, order=arrival,
                                  bounds=pair, method=method, null=null, variance=variance, pilot=pilot,
                                  criterion=criterion)
    except CjstatsError as exc:     # library advice in the command line's words
        text = str(exc)
        for arg in ("bounds", "pilot", "variance", "criterion", "order", "alpha", "null"):
            text = text.replace(f"{arg}=", f"--{arg} ").replace(f"'{arg}' argument of confidence_sequence",
                                                                 f"option --{arg}")
        raise CjstatsError(text) from None
    text = str(res).replace(res.table[["n", "scenario", "x", "estimate", "lower", "upper", "width"]].tail(10)
                                 .to_string(index=False, float_format=lambda v: f"{v:.4g}"),
                                 res.table[["n", "scenario", "x", "estimate", "lower", "upper", "width"]].tail(tail)
                                 .to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    emit_frame(res.table.assign(decision=res.decision), fmt, text=text + f"\n\n{res.decision}")
