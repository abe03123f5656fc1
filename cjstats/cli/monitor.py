"""``cjstats monitor FILE --models a,b``: the anytime-valid confidence sequence so far, and STOP / CONTINUE.

Mirrors :func:`cjstats.confidence_sequence`. Rows are read in file order (scenarios arrive in the order they
first appear, or sorted by ``--order COLUMN``), so the file can be re-read after every new batch of scenarios.
"""

from __future__ import annotations

import click

from cjstats.cli._app import emit_frame, format_option

__all__ = ["monitor"]


def _read(path: str):
    """The long table in file order (CSV, TSV, JSONL or Parquet)."""
    from pathlib import Path

    import pandas as pd

    from cjstats.exceptions import CjstatsError

    p = Path(path)
    if not p.is_file():
        raise CjstatsError(f"FILE `{path}` is not an existing file; give a CSV, TSV, JSONL or Parquet score table.")
    name = p.name.lower()
    try:
        if name.endswith(".parquet"):
            return pd.read_parquet(p)
        if name.endswith(".jsonl"):
            return pd.read_json(p, lines=True, dtype=False)
        return pd.read_csv(p, sep="\t" if name.endswith(".tsv") else ",", dtype={"scenario": str, "model": str})
    except (ValueError, ImportError) as exc:
        reason = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else type(exc).__name__
        raise CjstatsError(f"Could not read `{path}`: {reason}.") from None


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
@format_option
def monitor(file: str, models: str, alpha: float, method: str, bounds: str | None, order: str | None, null: float,
            criterion: str | None, pilot: int, variance: float | None, tail: int, fmt: str) -> None:
    """Print the confidence sequence for mean(A) - mean(B) over the scenarios of FILE so far, then STOP (it
    excludes --null) or CONTINUE. Checking after every new scenario keeps the error level."""
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
    table = _read(file)
    known = set(table["model"].astype(str)) if "model" in table.columns else set()
    for name in names:
        if known and name not in known:
            raise CjstatsError(f"The option --models names '{name}', which FILE does not have (models: "
                               f"{', '.join(sorted(known))}).")
    try:
        res = confidence_sequence(table, names[0], names[1] if len(names) == 2 else None, alpha=alpha, order=order,
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
