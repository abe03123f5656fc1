"""``cjstats monitor FILE --models a,b``: the anytime-valid confidence sequence so far, and STOP / CONTINUE.

Mirrors :func:`cjstats.confidence_sequence`. FILE (or ``--dataset NAME``) is read as every data subcommand reads
it, with the shared data options (``--columns``, ``--judge-columns``, ``--where``, ``--judges``,
``--exclude-judges``, ``--criteria``, ``--composite``, ``--duplicates``) and :func:`cjstats.read_scores`' input
rules (separator, missing values with their line, a judge call twice, reference raters marked ``judge_type``
human kept out of the judges). Scenarios arrive in the order they first appear in FILE, or sorted by ``--order
COLUMN``, so the file can be re-read after every new batch of scenarios. ``--criterion NAME``, the option of
earlier versions, is ``--criteria NAME``.
"""

from __future__ import annotations

import warnings

import click

from cjstats.cli._app import DataOptions, data_options, emit_frame, format_option

__all__ = ["monitor"]


def _raw(file: str | None, data: DataOptions, mapping: dict[str, str] | None):
    """The rows ``load_scores`` read, before read_scores sorts them: FILE (or the bundled table), filtered by
    ``--where`` and renamed by ``--columns``; and whether its ids were read as text."""
    from pathlib import Path

    from cjstats.cli._app import _source, _where
    from cjstats.io.read import read_file
    from cjstats.io.rules import file_kind

    source = _source(file, data)
    if isinstance(source, str):
        raw, _ = read_file(Path(source))
        from_text = file_kind(Path(source)) != "parquet"
    else:
        raw, from_text = source, False
    if data.where:
        raw = _where(raw, data.where)
    return (raw.rename(columns=mapping) if mapping else raw), from_text


def _arrival(raw, from_text: bool, scores, order: str | None, criterion: str | None) -> list[str]:
    """The scenarios of ``scores`` in the order they arrive in ``raw`` (the rows of FILE): first appearance, or
    sorted by the first value of the ``--order`` COLUMN (numbers as numbers). Rows of reference raters
    (``judge_type`` human) and of judges or criteria the data options left out are not calls of this sequence,
    so they do not order it (read_scores keeps the human rows apart)."""
    import pandas as pd

    from cjstats.cli._app import _reference_rows
    from cjstats.exceptions import CjstatsError, CjstatsWarning
    from cjstats.io.read import ids_as_labels

    human = _reference_rows(raw, None)
    if human is not None:
        raw = raw[~human.to_numpy(dtype=bool)]
    if "judge" in raw.columns:
        raw = raw[raw["judge"].astype(str).isin(set(map(str, scores.judges)))]
    if criterion is not None and "criterion" in raw.columns:
        raw = raw[raw["criterion"].astype(str) == str(criterion)]
    elif scores.has_criterion and "criterion" in raw.columns:
        raw = raw[raw["criterion"].astype(str).isin(set(map(str, scores.criteria)))]
    with warnings.catch_warnings():  # read_scores has said it once
        warnings.simplefilter("ignore", CjstatsWarning)
        labels = ids_as_labels(raw["scenario"], "scenario", from_text=from_text).astype(str)
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
    frame = scores.to_frame()
    if criterion is not None and "criterion" in frame.columns:
        frame = frame[frame["criterion"].astype(str) == str(criterion)]
    scored = set(frame["scenario"].astype(str))
    return [s for s in dict.fromkeys(arrival) if s in scored]


def _criterion(data: DataOptions, criterion: str | None) -> tuple[DataOptions, str | None]:
    """``--criterion NAME`` (earlier versions) as ``--criteria NAME``; the one criterion to monitor, if one."""
    from dataclasses import replace

    from cjstats.cli._app import parse_list
    from cjstats.exceptions import CjstatsError

    if criterion is None:
        return data, None
    given = parse_list(data.criteria, option="--criteria")
    if given is not None and given != [criterion]:
        raise CjstatsError(f"The options --criterion {criterion} and --criteria {data.criteria} disagree; "
                           f"--criterion is the earlier spelling of --criteria: give one of them.")
    return replace(data, criteria=f'"{criterion}"' if "," in criterion or "=" in criterion else criterion), criterion


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
@click.option("--criterion", default=None, metavar="NAME",
              help="Deprecated: the earlier spelling of --criteria NAME (the criterion to monitor).")
@click.option("--pilot", type=int, default=20, show_default=True,
              help="Normal mixture: scenarios whose variance sets the boundary.")
@click.option("--variance", type=float, default=None, help="Normal mixture: a known variance of x per scenario.")
@click.option("--tail", type=int, default=10, show_default=True, help="Rows of the sequence to print.")
@data_options
@format_option
def monitor(file: str | None, models: str, alpha: float, method: str, bounds: str | None, order: str | None,
            null: float, criterion: str | None, pilot: int, variance: float | None, tail: int, data: DataOptions,
            fmt: str) -> None:
    """Print the confidence sequence for mean(A) - mean(B) over the scenarios of FILE so far, then STOP (it
    excludes --null) or CONTINUE. Checking after every new scenario keeps the error level.

    A table with several criteria is monitored on one: --criteria NAME (or their mean: --composite).
    """
    from cjstats.cli._app import load_scores, parse_mapping, refuse_drop_options
    from cjstats.decisions.sequential import confidence_sequence
    from cjstats.exceptions import CjstatsError

    refuse_drop_options(data, "monitor", "the sequence uses every judge call and drops none")
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
    data, criterion = _criterion(data, criterion)
    mapping = parse_mapping(data.columns, option="--columns") or None
    scores = load_scores(file, data)
    where = f"--dataset {data.dataset}" if data.dataset is not None else "FILE"
    for name in names:
        if name not in scores.models:
            raise CjstatsError(f"The option --models names '{name}', which {where} does not have (models: "
                               f"{', '.join(scores.models)}).")
    if criterion is None and scores.has_criterion and len(scores.criteria) == 1:
        criterion = str(scores.criteria[0])
    if criterion is None and scores.has_criterion:
        crits = ", ".join(map(str, scores.criteria[:5])) + (", ..." if len(scores.criteria) > 5 else "")
        raise CjstatsError(f"{'FILE' if where == 'FILE' else 'The table of ' + where} has {len(scores.criteria)} "
                           f"criteria ({crits}); monitor one with --criteria NAME, or their mean with --composite.")
    raw, from_text = _raw(file, data, mapping)
    arrival = _arrival(raw, from_text, scores, order, criterion)
    try:
        res = confidence_sequence(scores, names[0], names[1] if len(names) == 2 else None, alpha=alpha, order=arrival,
                                  bounds=pair, method=method, null=null, variance=variance, pilot=pilot,
                                  criterion=criterion)
    except CjstatsError as exc:     # library advice in the command line's words
        text = str(exc)
        for arg, flag in (("bounds", "bounds"), ("pilot", "pilot"), ("variance", "variance"),
                          ("criterion", "criteria"), ("order", "order"), ("alpha", "alpha"), ("null", "null")):
            text = text.replace(f"{arg}=", f"--{flag} ").replace(f"'{arg}' argument of confidence_sequence",
                                                                  f"option --{flag}")
        raise CjstatsError(text) from None
    text = str(res).replace(res.table[["n", "scenario", "x", "estimate", "lower", "upper", "width"]].tail(10)
                                 .to_string(index=False, float_format=lambda v: f"{v:.4g}"),
                                 res.table[["n", "scenario", "x", "estimate", "lower", "upper", "width"]].tail(tail)
                                 .to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    emit_frame(res.table.assign(decision=res.decision), fmt, text=text + f"\n\n{res.decision}")
