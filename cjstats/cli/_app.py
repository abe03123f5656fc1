"""Shared CLI plumbing: error handling, output formats, the data options every data subcommand shares.

numpy and pandas are imported inside the functions that need them, so ``cjstats --help`` stays fast.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from cjstats.exceptions import CjstatsError

if TYPE_CHECKING:
    import pandas as pd

    from cjstats.results.components import VarianceComponents
    from cjstats.io.scores import Scores

__all__ = ["run_group", "abort", "emit_frame", "emit_tables", "format_option", "fit_format_option", "data_options", "DataOptions",
           "load_scores", "parse_mapping", "parse_list", "method_option", "bayes_options", "resolve_method", "fit_scores",
           "anova_options", "refuse_drop_options", "accept_dataset", "parse_pairs", "bayes_kwargs", "as_flags", "scores_options", "select_model",
           "METHODS"]

FORMATS = ("table", "json", "csv")
#: The bundled tables (``cjstats.datasets.NAMES``, named here so that ``cjstats --help`` imports no pandas).
DATASETS = ("hanna", "mentalalign")

# Library argument spellings -> the flags a CLI user typed (so advice never names a Python argument).
_FLAGS: list[tuple[str, Any]] = [
    (r"The '([a-z_]+)' argument of [\w.]+", lambda m: f"The option --{m.group(1).replace('_', '-')}"),
    (r"read_scores\(path, columns=(\{[^{}]*\})\)", lambda m: "--columns " + ",".join(
        f"{k}={v}" for k, v in __import__("ast").literal_eval(m.group(1)).items())),
    (r"read_scores\(\.\.\., duplicates='mean'\)", "--duplicates mean"),
    (r"read_scores\(path, (?:--judge-columns |judge_columns=)('[^']*')\)", r"--judge-columns \1"),
    (r" before read_scores\(\)", " in the file first"),
    (r"read_scores\(\)", "cjstats"),
    (r"\bincomplete='(\w+)'", r"--incomplete \1"),
    (r"\bmax_drop=", "--max-drop "),
    (r"cj\.estimate\(scores, method=\"ordinal\"\) \(maximum likelihood\) or method=\"bayes\", likelihood=\"ordinal\"",
     "cjstats decompose FILE --method ordinal (maximum likelihood)"),
    (r"\bmethod='(\w+)'", r"--method \1"),
    (r"\bmethod=\"(\w+)\"", r"--method \1"),
    (r"\bmodel_scenario=['\"](\w+)['\"]", lambda m: f"--model-scenario {m.group(1).replace('_', '-')}"),
    (r"\bthresholds=['\"](\w+)['\"]", r"--thresholds \1"),
    (r"\blink=['\"](\w+)['\"]", r"--link \1"),
    (r"\bcj\.estimate\(scores, (--method \w+)\)", r"cjstats decompose FILE \1"),
    (r"\bduplicates='(\w+)'", r"--duplicates \1"),
    (r"\btarget_se=", "--target-se "),
    (r"\btarget_se\b", "--target-se"),
    (r"\bjudge_costs\b", "--costs"),
    (r"\bgeneration_cost\b", "--generation-cost"),
    (r"\bjudges_per_generation\b", "--judges-per-generation"),
    (r"\bn_max\b", "--n-max"),
    (r"\bm_max\b", "--m-max"),
    (r"\bci_level\b", "--ci-level"),
    (r"\bbudget=", "--budget "),
    (r"Increase draws and tune", "Increase --draws and --tune"),
]


def as_flags(message: str) -> str:
    """Rewrite library advice (``incomplete='drop'``, ``method='reml'``, ``judge_costs``) as CLI flags."""
    for pattern, repl in _FLAGS:
        message = re.sub(pattern, repl, message)
    return message


def abort(message: str) -> None:
    """Print one sentence to stderr and exit with code 1."""
    click.echo(message, err=True)
    sys.exit(1)


#: Exit code of an exception cjstats did not turn into a user-error sentence: a bug (user errors exit 1).
INTERNAL_ERROR = 2


def run_group(group: click.Group) -> None:
    """Run the CLI, turning user errors into one sentence on stderr (traceback only with CJSTATS_DEBUG=1).

    Any other exception is a bug: it ends in one sentence naming its type that says so, with exit code
    :data:`INTERNAL_ERROR` (``tests/test_cli_edges.py`` fails on that sentence, so it hides nothing)."""
    import warnings

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        text = as_flags(str(message)).replace("leave that judge out or", "leave that judge out with "
                                              "--exclude-judges or")
        click.echo(f"Warning: {text}", err=True)

    warnings.showwarning = show  # one line per warning, in the CLI's words, no source line
    try:
        group.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:  # bad option value, unknown option, missing argument: one sentence, exit 1
        msg = " ".join(exc.format_message().split())
        where = f" (see cjstats {exc.ctx.info_name} --help)" if exc.ctx is not None and exc.ctx.parent else ""
        abort(msg.rstrip(".") + where + ".")
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
        abort(as_flags(str(exc)))
    except Exception as exc:  # noqa: BLE001 - last resort only: every known bad input has its own sentence
        if os.environ.get("CJSTATS_DEBUG") == "1":
            raise
        what = " ".join(str(exc).split())[:200]
        click.echo(f"cjstats stopped on an internal error ({type(exc).__name__}{': ' + what if what else ''}), which "
                   f"is a bug in cjstats: please report it with the command you ran (CJSTATS_DEBUG=1 prints the "
                   f"traceback).", err=True)
        sys.exit(INTERNAL_ERROR)


# -------------------------------------------------------------------------------------------- output
_INT_COLUMNS = re.compile(r"^(rank|n|m|k|k_total|calls|count|df\d?|n_.*|.*_count|budget_per_scenario|"
                          r"judges_per_generation|generations(_min|_max)?|dropped_.*|generation)$")


def _json_value(v: Any, *, integer: bool = False) -> Any:
    import numpy as np

    if v is None or v is getattr(__import__("pandas"), "NA", None):
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        if math.isnan(v) or math.isinf(v):
            return None
        return int(v) if integer and float(v).is_integer() else float(v)
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    return v if isinstance(v, str) else str(v)


def frame_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Row objects: NaN and infinities become null; counts and ranks are integers."""
    ints = {c for c in df.columns if _INT_COLUMNS.match(str(c))}
    return [{str(k): _json_value(v, integer=k in ints) for k, v in row.items()} for row in df.to_dict(orient="records")]


def frame_to_json(df: pd.DataFrame) -> str:
    """A JSON array of row objects; numbers that do not exist (NaN) become null."""
    return json.dumps(frame_records(df), indent=2)


def emit_frame(df: pd.DataFrame, fmt: str, *, text: str | None = None, long_text: str | None = None) -> None:
    """Write a result table to stdout in the chosen format (``text`` is the human rendering for ``table``,
    ``long_text`` the long one for ``long``: one row per model x component; without it ``long`` prints the frame)."""
    if fmt == "long":
        click.echo(long_text if long_text is not None else df.to_string(index=False))
    elif fmt == "json":
        click.echo(frame_to_json(df))
    elif fmt == "csv":
        click.echo(df.to_csv(index=False), nl=False)
    else:
        click.echo(text if text is not None else df.to_string(index=False))


def emit_tables(tables: dict[str, Any], fmt: str, *, text: str) -> None:
    """Several tables: JSON is one object keyed by table name; CSV stacks them with a ``table`` column."""
    import pandas as pd

    if fmt == "json":
        out = {name: frame_records(t) if isinstance(t, pd.DataFrame) else _json_value(t)
               for name, t in tables.items()}
        click.echo(json.dumps(out, indent=2))
    elif fmt == "csv":
        frames = [t.assign(table=name) for name, t in tables.items() if isinstance(t, pd.DataFrame)]
        click.echo(pd.concat(frames, ignore_index=True).to_csv(index=False), nl=False)
    else:
        click.echo(text)


def format_option(f: Callable) -> Callable:
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
                        help="table for people, json (row objects; null for numbers that do not exist) or csv.")(f)


def fit_format_option(f: Callable) -> Callable:
    """``--format`` of a command that prints a fit: ``table`` is the compact summary, ``long`` the long table."""
    return click.option("--format", "fmt", type=click.Choice((*FORMATS, "long")), default="table",
                        show_default=True,
                        help="table: the compact summary (variance, SD and interval per component; models side by "
                             "side); long: one row per model x component with its full interval method; json (row "
                             "objects; null for numbers that do not exist) or csv.")(f)


# ------------------------------------------------------------------------------------------- parsing
_QUOTE_HINT = ("""put a name that holds a comma or '=' in double quotes, e.g. '"org/model,v2"=judge'""")


def _split(text: str, sep: str, *, option: str, maxsplit: int = -1) -> list[str]:
    """Split ``text`` at ``sep`` outside double quotes (the quotes are kept; :func:`_unquote` removes them)."""
    parts: list[str] = []
    buf: list[str] = []
    quoted = False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif ch == sep and not quoted and (maxsplit < 0 or len(parts) < maxsplit):
            parts.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    if quoted:
        raise CjstatsError(f"The option {option} has an opening double quote without its closing one. Got {text!r}.")
    parts.append("".join(buf))
    return parts


def _unquote(text: str) -> str:
    """A name as given: surrounding spaces dropped, the double quotes that protect a comma or '=' removed."""
    return text.strip().replace('"', "").strip() if '"' in text else text.strip()


def parse_pairs(text: str | None, *, option: str, example: str = "rater=judge,item=scenario") -> list[tuple[str, str]]:
    """Parse ``a=b,c=d`` into pairs; a name holding ',' or '=' is written in double quotes (``"a,b"=c``)."""
    if not text:
        return []
    out = []
    for item in _split(text, ",", option=option):
        pair = _split(item, "=", option=option, maxsplit=1)
        if len(pair) != 2 or not _unquote(pair[0]) or not _unquote(pair[1]):
            raise CjstatsError(f"The option {option} takes name=value pairs separated by commas, such as "
                               f"'{example}' ({_QUOTE_HINT}). Got {item.strip()!r}.")
        out.append((_unquote(pair[0]), _unquote(pair[1])))
    return out


def parse_mapping(text: str | None, *, option: str) -> dict[str, str]:
    """Parse ``a=b,c=d`` into a dict, with one clear sentence on a malformed item (quotes as in :func:`parse_pairs`)."""
    out: dict[str, str] = {}
    for k, v in parse_pairs(text, option=option):
        if k in out:
            raise CjstatsError(f"The option {option} names '{k}' twice ({k}={out[k]} and {k}={v}); give each once.")
        out[k] = v
    return out


def parse_list(text: str | None, *, option: str) -> list[str] | None:
    """Parse ``a,b,c``; an empty item is an error naming the option; ``"a,b"`` (in double quotes) is one name."""
    if text is None:
        return None
    items = [_unquote(x) for x in _split(text, ",", option=option)]
    if not items or any(not x for x in items):
        raise CjstatsError(f"The option {option} takes names separated by commas, such as 'a,b'. Got {text!r}.")
    return list(dict.fromkeys(items))


# -------------------------------------------------------------------------------------- data options
@dataclass(frozen=True)
class DataOptions:
    """The data options every data subcommand shares (see :func:`data_options`)."""

    columns: str | None
    judge_columns: str | None
    composite: bool
    incomplete: str | None
    duplicates: str
    judges: str | None
    exclude_judges: str | None
    criteria: str | None
    where: tuple[str, ...]
    max_drop: float | None = None
    dataset: str | None = None


def data_options(f: Callable) -> Callable:
    """Add the shared data options and pass them to the command as one ``data: DataOptions`` argument."""
    import functools

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        names = ("columns", "judge_columns", "composite", "incomplete", "max_drop", "duplicates", "judges",
                 "exclude_judges", "criteria", "where", "dataset")
        kwargs["data"] = DataOptions(**{n: kwargs.pop(n) for n in names})
        return f(*args, **kwargs)

    opts = [
        click.option("--dataset", "dataset", type=click.Choice(DATASETS), default=None,
                     help="Read a bundled table instead of FILE: one row per judge call, human ratings kept as "
                          "reference raters (what `cjstats datasets export` writes; hanna: judge-prompt variant 1)."),
        click.option("--where", "where", multiple=True, metavar="COLUMN=VALUE",
                     help="Keep only rows whose COLUMN equals VALUE (any column of FILE); repeat it: the same COLUMN "
                          "keeps rows with any of its VALUEs, different COLUMNs must all match."),
        click.option("--criteria", default=None, metavar="A,B", help="Keep only these criteria."),
        click.option("--exclude-judges", "exclude_judges", default=None, metavar="A,B",
                     help="Leave these judges out."),
        click.option("--judges", "judges", default=None, metavar="A,B", help="Keep only these judges."),
        click.option("--max-drop", "max_drop", type=click.FloatRange(0.0, 1.0), default=None, metavar="SHARE",
                     help="With --incomplete drop: the largest share of a model's scenarios it may drop before "
                          "refusing (default 0.5; 1 allows all)."),
        click.option("--incomplete", type=click.Choice(["error", "drop"]), default=None,
                     help="Missing judge calls, for the ANOVA: fail, or drop incomplete (scenario, generation) cells "
                          "and say how many (unset: an incomplete table is fitted by REML, which keeps every call)."),
        click.option("--duplicates", type=click.Choice(["error", "mean"]), default="error", show_default=True,
                     help="Several rows for one judge call: fail, or average them."),
        click.option("--composite", is_flag=True, help="Average the criteria of each cell into one score."),
        click.option("--judge-columns", "judge_columns", default=None, metavar="A,B or PREFIX*",
                     help="Wide table: one score column per judge (a list, or a pattern such as 'score_*')."),
        click.option("--columns", "columns", default=None, metavar="THEIRS=OURS,...",
                     help="Rename columns, e.g. rater=judge,item=scenario."),
    ]
    for opt in opts:
        wrapper = opt(wrapper)
    return wrapper


def accept_dataset(cmd: click.Command) -> click.Command:
    """Make FILE optional (``--dataset NAME`` reads a bundled table instead) and let a folder through to
    :func:`load_scores`, which says how to read one, for a subcommand with the data options."""
    names = {p.name for p in cmd.params}
    if "dataset" not in names:
        return cmd
    for p in cmd.params:
        if isinstance(p, click.Argument) and p.name == "file":
            p.required = False
            p.type = click.Path()
    return cmd


def scores_options(f: Callable) -> Callable:
    """The three reading options of earlier versions (``columns, duplicates, composite`` keyword arguments).

    Kept so subcommands written against it keep working; new subcommands use :func:`data_options`.
    """
    f = click.option("--composite", is_flag=True, help="Average the criteria of each cell into one score.")(f)
    f = click.option("--duplicates", type=click.Choice(["error", "mean"]), default="error", show_default=True,
                     help="Several rows for one judge call: fail, or average them.")(f)
    f = click.option("--columns", "columns", default=None, metavar="THEIRS=OURS,...",
                     help="Rename columns, e.g. rater=judge,item=scenario.")(f)
    return f


def _where(df: pd.DataFrame, where: tuple[str, ...], reference: Any = None) -> pd.DataFrame:
    """``--where COLUMN=VALUE``: a COLUMN given several times keeps any of its VALUEs; COLUMNs all must match.

    ``reference`` (a boolean Series on ``df``: the human rows) is used to say when the filter removes every one
    of them (:func:`_reference_removed`).
    """
    wanted: dict[str, list[str]] = {}
    for item in where:
        if "=" not in item:
            raise CjstatsError(f"The option --where takes COLUMN=VALUE, such as 'task=math'. Got {item!r}.")
        col, value = (x.strip() for x in item.split("=", 1))
        if col not in df.columns:
            raise CjstatsError(f"The option --where names column '{col}', which FILE does not have "
                               f"(found: {', '.join(map(str, df.columns))}).")
        wanted.setdefault(col, []).append(value)
    for col, values in wanted.items():
        text = df[col].astype(str).str.strip()
        for value in values:
            if not (text == value).any():
                known = sorted(set(text))[:8]
                raise CjstatsError(f"The option --where {col}={value} matches no row (values of '{col}' include: "
                                   f"{', '.join(known)}).")
        keep = text.isin(values)
        if reference is not None:
            _reference_removed(df, keep, reference, col, values)
            reference = reference[keep]
        df = df[keep]
    return df


def _reference_removed(df: pd.DataFrame, keep: Any, reference: Any, col: str, values: list[str]) -> None:
    """Say when ``--where`` removes every reference (human) rating: ``humans`` refuses, ``report`` warns."""
    from cjstats.exceptions import CjstatsWarning

    ref = reference.to_numpy(dtype=bool)
    if not ref.any() or (ref & keep.to_numpy(dtype=bool)).any():
        return
    theirs = sorted(set(df.loc[ref, col].astype(str).str.strip()))
    given = " ".join(f"--where {col}={v}" for v in values)
    what = (f"{given} removes all {int(ref.sum()):,} reference (human) ratings, whose '{col}' is "
            f"{', '.join(theirs[:3])}{' ...' if len(theirs) > 3 else ''}")
    fix = f"keep them too by adding --where {col}={theirs[0]} (the same column keeps either value)"
    ctx = click.get_current_context(silent=True)
    command = ctx.info_name if ctx is not None else None
    if command == "humans":
        raise CjstatsError(f"The option {what}, so there is no human to compare the judges with; {fix}.")
    if command == "report":
        from cjstats._warnings import warn

        warn(f"{what[0].upper()}{what[1:]}, so the report has no human section; {fix}.", CjstatsWarning, stacklevel=2)


def _reference_rows(df: pd.DataFrame, names: list[str] | None) -> Any:
    """The rows ``read_scores`` would treat as reference raters: ``names`` in 'judge', else judge_type human."""
    if names:
        return df["judge"].astype(str).isin(names) if "judge" in df.columns else None
    if "judge_type" in df.columns:
        return df["judge_type"].astype(str).str.strip().str.lower() == "human"
    return None


def _folder_message(path: str) -> str:
    glob = f"{path.rstrip('/')}/*.parquet"
    return (f"FILE `{path}` is a folder; give one score file, or fit every file in it without loading the rows, "
            f"with a quoted glob: cjstats decompose '{glob}' --engine duckdb (or cjstats compare).")


def _source(path: str | None, data: DataOptions) -> Any:
    """FILE as given (a path) or the bundled table of ``--dataset`` (a DataFrame); one sentence when it is
    neither, both, or a folder."""
    from pathlib import Path

    dataset = getattr(data, "dataset", None)
    if dataset is not None:
        if path is not None:
            raise CjstatsError(f"Give FILE or --dataset, not both (got `{path}` and --dataset {dataset}).")
        from cjstats.datasets import table

        return table(dataset)
    if path is None:
        raise CjstatsError("Give a score FILE, or --dataset hanna (or mentalalign) for a bundled table.")
    if Path(path).is_dir():
        raise CjstatsError(_folder_message(path))
    return path


def load_scores(path: str | None, data: DataOptions | None = None, *legacy: Any,
                reference: list[str] | None = None) -> Scores:
    """Read FILE (or ``--dataset NAME``) with the shared data options: rename, filter rows, select judges and
    criteria, composite.

    ``reference`` names the human (reference) raters in column 'judge' (``read_scores(..., reference=)``).
    """
    from pathlib import Path

    from cjstats.io.read import read_file, read_scores

    if data is None or not isinstance(data, DataOptions):  # load_scores(path, columns, duplicates, composite)
        columns, duplicates, composite = (data, *legacy) if legacy else (data, "error", False)
        data = DataOptions(columns=columns, judge_columns=None, composite=composite, incomplete=None,
                           duplicates=duplicates, judges=None, exclude_judges=None, criteria=None, where=())
    mapping = parse_mapping(data.columns, option="--columns") or None
    judge_cols: Any = None
    if data.judge_columns:
        judge_cols = data.judge_columns if "*" in data.judge_columns else \
            parse_list(data.judge_columns, option="--judge-columns")
    source: Any = _source(path, data)
    if data.where:
        from cjstats.io.read import ids_as_labels
        from cjstats.io.rules import file_kind

        if isinstance(source, str):
            df, _ = read_file(Path(source))
        else:
            df = source
        renamed = df.rename(columns=mapping) if mapping else df
        df = _where(df, data.where, _reference_rows(renamed, reference))
        if isinstance(source, str) and file_kind(Path(source)) != "parquet":
            # text ids that are all plain integers stay integers, as in read_scores
            df = df.apply(lambda col: ids_as_labels(col, str(col.name), from_text=True))
        source = df
    try:
        scores = read_scores(source, columns=mapping, duplicates=data.duplicates, judge_columns=judge_cols,
                             reference=reference)
    except CjstatsError as exc:
        msg = str(exc).replace("judge_columns=", "--judge-columns ").replace("judge_columns", "--judge-columns")
        msg = msg.replace("columns maps", "--columns maps")
        raise CjstatsError(msg) from None
    keep = parse_list(data.judges, option="--judges")
    drop = parse_list(data.exclude_judges, option="--exclude-judges")
    crit = parse_list(data.criteria, option="--criteria")
    for option, names, known in (("--judges", keep, scores.judges), ("--exclude-judges", drop, scores.judges),
                                 ("--criteria", crit, scores.criteria)):
        if names is None:
            continue
        if option == "--criteria" and not scores.has_criterion:
            raise CjstatsError("The option --criteria needs a 'criterion' column, and FILE has none.")
        unknown = [x for x in names if x not in known]
        if unknown:
            raise CjstatsError(f"The option {option} names '{unknown[0]}', which is not in FILE "
                               f"(found: {', '.join(known)}).")
    if keep is not None or drop is not None:
        chosen = [j for j in (keep or scores.judges) if j not in (drop or [])]
        if not chosen:
            raise CjstatsError("The options --judges and --exclude-judges leave no judge; keep at least one.")
        scores = scores.subset(judges=chosen)
    if crit is not None:
        scores = scores.subset(criteria=crit)
    if data.composite and not scores.has_criterion:
        raise CjstatsError("The option --composite averages criteria, and FILE has no 'criterion' column; leave "
                           "it out.")
    return scores.composite() if data.composite else scores


def select_model(scores: Scores, model: str | None) -> Scores:
    """``--model NAME``: the table restricted to one model, or one sentence naming the option."""
    if model is None:
        return scores
    if model not in scores.models:
        raise CjstatsError(f"The option --model names '{model}', which is not in FILE (found: "
                           f"{', '.join(scores.models)}).")
    return scores.subset(models=[model])


# ------------------------------------------------------------------------------------------ fitting
def bayes_options(f: Callable) -> Callable:
    """``--draws``, ``--chains`` and ``--tune`` for ``--method bayes`` (``--seed`` is each command's own)."""
    f = click.option("--tune", type=int, default=None, help="bayes: tuning iterations per chain (default 1000).")(f)
    f = click.option("--chains", type=int, default=None, help="bayes: number of chains (default 4).")(f)
    f = click.option("--draws", type=int, default=None, help="bayes: posterior draws per chain (default 1000).")(f)
    return f


#: The estimators a fitting subcommand offers: ``auto`` and the backends.
METHODS: tuple[str, ...] = ("auto", "anova", "reml", "bayes")


def method_option(f: Callable | None = None, *, choices: tuple[str, ...] = METHODS) -> Callable:
    """``--method``, default ``auto``: the ANOVA when every group is complete and balanced, else REML."""
    def add(f: Callable) -> Callable:
        return click.option("--method", type=click.Choice(list(choices)), default="auto", show_default=True,
                            help="Estimator: auto = anova when every group is complete and balanced, else reml "
                                 "(which keeps every judge call); the output says which and why.")(f)

    return add(f) if f is not None else add


def formula_option(f: Callable) -> Callable:
    """``--formula TEXT``: the model as an lme4-style formula (the library's ``model=``; :class:`cjstats.Model`)."""
    return click.option("--formula", "formula", default=None, metavar="TEXT",
                        help="The model as an lme4-style formula, e.g. 'score ~ judge + (1|scenario) + "
                             "(1|scenario:generation)'; the fit prints the formula it fitted.")(f)


def scenario_judge_option(f: Callable) -> Callable:
    """``--scenario-judge auto|on|off``: the library's ``scenario_judge="auto"|True|False``."""
    return click.option("--scenario-judge", "scenario_judge", type=click.Choice(["auto", "on", "off"]), default="auto",
                        show_default=True,
                        help="Fit the scenario x judge interaction (judges disagreeing about which scenarios are "
                             "hard): auto = where a judge scored several generations of a scenario; on = insist; "
                             "off = the paper's model (the residual holds it).")(f)


def scenario_judge_value(flag: str) -> Any:
    """The library value of ``--scenario-judge``."""
    return {"auto": "auto", "on": True, "off": False}[flag]


def scenario_judge_text(fit: VarianceComponents) -> str:
    """For each group whose fit has the interaction: does it change the recommended design (one line each)."""
    from cjstats.decisions.optimise import scenario_judge_verdict

    t = fit.components
    sel = t[(t["component"] == "scenario_judge") & t["identifiable"]]
    lines = []
    for _, r in sel.iterrows():
        crit = r["criterion"] if "criterion" in t.columns else None
        verdict = scenario_judge_verdict(fit, model=r["model"], criterion=crit)
        if verdict:
            name = r["model"] if crit is None else f"{r['model']} / {crit}"
            lines.append(f"scenario_judge ({name}) and the design: {verdict}.")
    return "\n".join(lines)


def resolve_method(scores: Scores, method: str, incomplete: str | None, *, joint: bool = False) -> tuple[str, str]:
    """The backend ``--method auto`` stands for (:func:`cjstats.estimators.auto_method`), and one line saying why."""
    if method != "auto":
        return method, ""
    from cjstats.estimators import auto_method

    chosen, why = auto_method(scores, incomplete=incomplete, joint=joint, discrete=True)
    flag = f" with --incomplete {incomplete}" if incomplete else ""
    from cjstats.cli._ordinal_choice import ordinal_advice  # issue 22: name --method ordinal where the command offers it
    return chosen, ordinal_advice(f"Method: {chosen} (--method auto{flag}: {why}).")


def anova_options(chosen: str, incomplete: str | None, max_drop: float | None) -> dict[str, Any]:
    """The ANOVA's ``incomplete``/``max_drop`` options from ``--incomplete``/``--max-drop``, refused elsewhere."""
    if max_drop is not None and incomplete != "drop":
        raise CjstatsError("The option --max-drop limits what --incomplete drop removes; add --incomplete drop or "
                           "leave it out.")
    if incomplete is None:
        return {}
    if chosen != "anova":
        raise CjstatsError("The option --incomplete applies to --method anova only (REML and Bayes keep every "
                           "call); leave it out or add --method anova.")
    return {"incomplete": incomplete, **({"max_drop": max_drop} if max_drop is not None else {})}


def refuse_drop_options(data: DataOptions, command: str, why: str) -> None:
    """One sentence when ``--incomplete`` or ``--max-drop`` is given to a subcommand that drops nothing."""
    given = [flag for flag, value in (("--incomplete", data.incomplete), ("--max-drop", data.max_drop))
             if value is not None]
    if given:
        raise CjstatsError(f"The option {given[0]} is not used by {command}: {why}; leave it out.")


def fit_scores(scores: Scores, method: str, *, incomplete: str | None = None, max_drop: float | None = None,
               ci_level: float | None = None, seed: int | None = None, draws: int | None = None,
               chains: int | None = None, tune: int | None = None,
               scenario_judge: str = "auto", model: str | None = None) -> tuple[VarianceComponents, str]:
    """Estimate with the CLI's conventions; returns the fit and the method note (empty unless auto).

    What ``--incomplete drop`` removes is said by the library's warning (shown on stderr) and carried in
    ``fit.dropped``.
    """
    from cjstats.estimators import estimate
    chosen, note = resolve_method(scores, method, incomplete)
    options: dict[str, Any] = anova_options(chosen, incomplete, max_drop)
    if scenario_judge != "auto":
        if model is not None:
            raise CjstatsError("The options --formula and --scenario-judge both say which terms to fit; keep one "
                               "(write (1|scenario:judge) in the formula, or leave it out).")
        options["scenario_judge"] = scenario_judge_value(scenario_judge)
    if model is not None:
        options["model"] = model
    sampling = bayes_kwargs(chosen == "bayes", draws=draws, chains=chains, tune=tune)
    if chosen == "bayes":
        return _fit_bayes_with_progress(scores, ci_level=ci_level, seed=seed, options={**options, **sampling}), note
    return estimate(scores, chosen, ci_level=ci_level, seed=seed, **options), note


def bayes_kwargs(bayes: bool, *, draws: int | None, chains: int | None, tune: int | None) -> dict[str, int]:
    """The Bayesian backend's ``draws``/``chains``/``tune`` from ``--draws``/``--chains``/``--tune`` (checked), or
    one sentence when they are given without a Bayesian fit."""
    given = {name: value for name, value in (("draws", draws), ("chains", chains), ("tune", tune)) if value is not None}
    if given and not bayes:
        raise CjstatsError(f"The option --{next(iter(given))} applies to --method bayes only; leave it out.")
    for name, value in given.items():
        if value < (0 if name == "tune" else 1):
            raise CjstatsError(f"The option --{name} must be an integer >= {0 if name == 'tune' else 1}. Got {value}.")
    return given


def _fit_bayes_with_progress(scores: Scores, *, ci_level: float | None, seed: int | None,
                             options: dict[str, Any]) -> VarianceComponents:
    """Fit Bayes one group at a time behind a progress bar on stderr (click.progressbar), then join them."""
    import dataclasses

    import pandas as pd

    from cjstats.estimators import estimate

    groups = list(scores.groups())
    if len(groups) == 1:
        click.echo(f"Bayes: sampling {groups[0].label()} (1/1) ...", err=True)
        return estimate(scores, "bayes", ci_level=ci_level, seed=seed, **options)
    fits = []

    def one(i: int, g: Any) -> None:
        part = scores.subset(models=[g.model], criteria=None if g.criterion is None else [g.criterion])
        # each group gets its own seed stream, as estimate(seed=...) gives each group inside one call
        fits.append(estimate(part, "bayes", ci_level=ci_level, seed=None if seed is None else seed + i, **options))

    if sys.stderr.isatty():  # a live bar on a terminal, one line per group in logs and pipes
        with click.progressbar(list(enumerate(groups)), label="Bayes", file=sys.stderr, show_pos=True,
                               item_show_func=lambda x: x[1].label() if x is not None else "") as bar:
            for i, g in bar:
                one(i, g)
    else:
        for i, g in enumerate(groups):
            click.echo(f"Bayes: sampling {g.label()} ({i + 1}/{len(groups)}) ...", err=True)
            one(i, g)
    first = fits[0]
    cat = lambda attr: pd.concat([getattr(f, attr) for f in fits], ignore_index=True)  # noqa: E731
    merged: dict[str, Any] = {}
    for f in fits:
        merged.update(dict(f.diagnostics))
    changes: dict[str, Any] = {"components": cat("components"), "judge_offsets": cat("judge_offsets"),
                               "design": scores.design, "diagnostics": merged}
    if getattr(first, "draws", None) is not None:
        changes["draws"] = pd.concat([f.draws for f in fits if f.draws is not None], ignore_index=True)
    from collections.abc import Mapping

    if all(isinstance(getattr(f, "posterior", None), Mapping) for f in fits):
        post: dict[str, Any] = {}
        for f in fits:
            post.update(f.posterior)
        changes["posterior"] = post
    else:  # a posterior of another shape cannot be joined here: leave it out rather than keep one group's
        changes["posterior"] = None
    fields = {f.name for f in dataclasses.fields(first)}
    return dataclasses.replace(first, **{k: v for k, v in changes.items() if k in fields})


def engine_options(f: Callable) -> Callable:
    """Add ``--engine`` (who reduces the rows) and ``--memory-limit`` (DuckDB's) to a data subcommand."""
    f = click.option("--memory-limit", default=None, metavar="SIZE",
                     help="duckdb only: its memory limit, e.g. 2GB.")(f)
    return click.option("--engine", type=click.Choice(["numpy", "duckdb", "dask"]), default="numpy",
                        show_default=True,
                        help="Who reduces the rows: numpy (in memory), duckdb (files larger than memory; FILE may "
                             "be a quoted glob such as 'scores/*.parquet') or dask (the active cluster, or local "
                             "threads).")(f)


def load_source(file: str | None, data: DataOptions, engine: str, memory_limit: str | None, *,
                likelihood: str = "gaussian") -> Any:
    """FILE read in memory (``--engine numpy``: a Scores table) or reduced by an out-of-core engine to statistics
    (those of ``likelihood``: ``"cumulative"`` adds the ordinal model's per-pattern counts)."""
    from cjstats.exceptions import CjstatsError

    if engine == "numpy":
        if memory_limit is not None:
            raise CjstatsError("--memory-limit is a DuckDB setting, but --engine is numpy; use --engine duckdb.")
        return load_scores(file, data)
    return load_stats(file, engine, data, memory_limit, likelihood=likelihood)


def _header(file: str) -> list[str]:
    """The column names of FILE (or of the first file a glob or folder matches); empty when unknown."""
    import glob
    import gzip
    from pathlib import Path

    path = Path(file)
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file())
    else:
        found = [Path(p) for p in sorted(glob.glob(file))] if any(c in file for c in "*?[") else [path]
    if not found or not found[0].is_file():
        return []
    first = found[0]
    name = first.name.lower()
    try:
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq

            return list(pq.read_schema(first).names)
        if name.endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz")):
            opener = gzip.open if name.endswith(".gz") else open
            with opener(first, "rt", encoding="utf-8-sig") as fh:
                line = fh.readline()
            return [c.strip().strip('"') for c in re.split("[,;\t]", line.rstrip("\r\n"))]
    except Exception:  # noqa: BLE001 - the engine reads the file and words its own errors
        return []
    return []


def load_stats(file: str | None, engine: str, data: DataOptions, memory_limit: str | None, *,
               likelihood: str = "gaussian"):
    """The statistics of FILE (a path or a quoted glob) computed by an out-of-core engine; the rows stay out."""
    from cjstats.exceptions import CjstatsError
    from cjstats.stats import build_stats

    if getattr(data, "dataset", None) is not None:
        raise CjstatsError(f"--dataset {data.dataset} is a bundled table read in memory; leave out --engine {engine} "
                           f"(the default, numpy, reads it).")
    if file is None:
        raise CjstatsError("Give a score FILE (or a quoted glob such as 'scores/*.parquet') with --engine "
                           f"{engine}.")
    row_options = [flag for flag, used in (
        ("--duplicates mean", data.duplicates != "error"), ("--composite", data.composite),
        ("--judge-columns", bool(data.judge_columns)), ("--judges", bool(data.judges)),
        ("--exclude-judges", bool(data.exclude_judges)), ("--criteria", bool(data.criteria)),
        ("--where", bool(data.where)), ("--incomplete drop", data.incomplete == "drop")) if used]
    if row_options:
        raise CjstatsError(f"{row_options[0]} changes rows, which --engine {engine} never loads; use --engine numpy "
                           f"for it, or filter the files first.")
    if memory_limit is not None and engine != "duckdb":
        raise CjstatsError(f"--memory-limit is a DuckDB setting, but --engine is {engine}; use --engine duckdb.")
    if "judge_type" in _header(file):
        raise CjstatsError(f"FILE has a judge_type column (human reference raters), which --engine {engine} would "
                           f"count as judges; use --engine numpy, which keeps them apart, or drop the human rows.")
    opts = {"memory_limit": memory_limit} if memory_limit else {}
    return build_stats(file, engine=engine, columns=parse_mapping(data.columns, option="--columns") or None,
                       likelihood=likelihood, **opts)
