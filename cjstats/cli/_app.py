"""Shared CLI plumbing: error handling, output formats and the common options."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from typing import Any

import click
import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError

__all__ = ["run_group", "abort", "emit_frame", "format_option", "scores_options", "load_scores",
           "parse_mapping"]

FORMATS = ("table", "json", "csv")


def abort(message: str) -> None:
    """Print one sentence to stderr and exit with code 1."""
    click.echo(message, err=True)
    sys.exit(1)


def run_group(group: click.Group) -> None:
    """Run the CLI, turning user errors into one sentence on stderr (traceback only with CJSTATS_DEBUG=1)."""
    try:
        group.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        abort("Aborted.")
    except (CjstatsError, OSError) as exc:
        if os.environ.get("CJSTATS_DEBUG") == "1":
            raise
        if isinstance(exc, OSError) and not isinstance(exc, CjstatsError):
            where = f" `{exc.filename}`" if getattr(exc, "filename", None) else ""
            abort(f"Could not use{where}: {exc.strerror or exc}.")
        abort(str(exc))


def _json_value(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if (math.isnan(v) or math.isinf(v)) else float(v)
    return v if isinstance(v, str) else str(v)


def frame_to_json(df: pd.DataFrame) -> str:
    """A JSON array of row objects; numbers that do not exist (NaN) become null."""
    records = [{str(k): _json_value(v) for k, v in row.items()} for row in df.to_dict(orient="records")]
    return json.dumps(records, indent=2)


def emit_frame(df: pd.DataFrame, fmt: str, *, text: str | None = None) -> None:
    """Write a result table to stdout in the chosen format (``text`` is the human rendering for ``table``)."""
    if fmt == "json":
        click.echo(frame_to_json(df))
    elif fmt == "csv":
        click.echo(df.to_csv(index=False), nl=False)
    else:
        click.echo(text if text is not None else df.to_string(index=False))


def format_option(f: Callable) -> Callable:
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
                        help="table for people, json (array of row objects) or csv for machines.")(f)


def parse_mapping(text: str | None, *, option: str) -> dict[str, str]:
    """Parse ``a=b,c=d`` into a dict, with one clear sentence on a malformed item."""
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        if "=" not in item:
            raise CjstatsError(f"The option {option} takes name=value pairs separated by commas, such as "
                               f"'rater=judge,item=scenario'. Got {item!r}.")
        k, v = (x.strip() for x in item.split("=", 1))
        if k in out:
            raise CjstatsError(f"The option {option} names '{k}' twice ({k}={out[k]} and {k}={v}); give each once.")
        out[k] = v
    return out


def scores_options(f: Callable) -> Callable:
    """The options every command that reads a score file shares."""
    f = click.option("--composite", is_flag=True, help="Average the criteria of each cell into one score.")(f)
    f = click.option("--duplicates", type=click.Choice(["error", "mean"]), default="error", show_default=True,
                     help="Several rows for one judge call: fail, or average them.")(f)
    f = click.option("--columns", "columns", default=None, metavar="THEIRS=OURS,...",
                     help="Rename columns, e.g. rater=judge,item=scenario.")(f)
    return f


def load_scores(path: str, columns: str | None, duplicates: str, composite: bool):
    from cjstats.scores import read_scores

    scores = read_scores(path, columns=parse_mapping(columns, option="--columns") or None, duplicates=duplicates)
    return scores.composite() if composite else scores
