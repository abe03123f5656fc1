"""``cjstats plan``: who judges what (mirrors :func:`cjstats.cyclic_schedule` and its two baselines)."""

from __future__ import annotations

import click
from click.core import ParameterSource

from cjstats.cli._app import emit_frame, format_option, parse_mapping

__all__ = ["plan"]


def _scenarios(value: str):
    """An integer count, or the labels in a file (a 'scenario' column, a one-column table or one per line)."""
    from pathlib import Path

    import pandas as pd

    from cjstats.exceptions import CjstatsError

    text = value.strip()
    if text.isdigit():
        return int(text)
    path = Path(text)
    if not path.is_file():
        raise CjstatsError(f"--scenarios takes a number or a file of scenario labels; `{text}` is neither a "
                           f"number nor an existing file.")
    name = path.name.lower()
    try:
        if name.endswith((".csv", ".csv.gz", ".tsv", ".jsonl", ".parquet")):
            if name.endswith(".jsonl"):
                df = pd.read_json(path, lines=True)
            elif name.endswith(".parquet"):
                df = pd.read_parquet(path)
            else:
                df = pd.read_csv(path, sep="\t" if name.endswith(".tsv") else ",")
            if "scenario" in df.columns:
                col = df["scenario"]
            elif df.shape[1] == 1:
                col = df.iloc[:, 0]
            else:
                raise CjstatsError(f"The scenario file `{path}` has no column 'scenario' (found: "
                                   f"{', '.join(map(str, df.columns))}).")
            labels = list(dict.fromkeys(col.dropna().tolist()))
        else:
            labels = list(dict.fromkeys(line.strip() for line in path.read_text().splitlines() if line.strip()))
    except pd.errors.EmptyDataError:
        raise CjstatsError(f"The scenario file `{path}` is empty; it must list at least one scenario.") from None
    except CjstatsError:
        raise
    except (ValueError, ImportError) as exc:      # parser errors, bad encodings, missing parquet engine
        reason = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else type(exc).__name__
        raise CjstatsError(f"Could not read the scenario file `{path}`: {reason}.") from None
    if not labels:
        raise CjstatsError(f"The scenario file `{path}` lists no scenarios.")
    return labels


def _not_applicable(option: str, strategy: str, why: str) -> None:
    from cjstats.exceptions import CjstatsError

    raise CjstatsError(f"The option {option} does not apply to --strategy {strategy} ({why}); leave it out.")


@click.command("plan", short_help="Write a judge schedule: CyclicJudge or a baseline.")
@click.option("--scenarios", required=True, metavar="FILE_OR_COUNT",
              help="Number of scenarios, or a file of labels (a 'scenario' column, or one label per line).")
@click.option("--judges", required=True, metavar="A,B,C", help="The judge panel, comma-separated.")
@click.option("--generations", type=int, default=1, show_default=True, help="Generations per scenario.")
@click.option("--seed", type=int, default=None, help="Seed (an integer >= 0) of the scenario and judge shuffles.")
@click.option("--strategy", type=click.Choice(["cyclic", "random", "all"]), default="cyclic", show_default=True)
@click.option("--judges-per-generation", "k", type=int, default=1, show_default=True,
              help="cyclic and random: judges scoring each generation (all: every judge).")
@click.option("--unit", type=click.Choice(["generation", "scenario"]), default="generation", show_default=True,
              help="cyclic: advance the rotation per generation or per scenario.")
@click.option("--models", default=None, metavar="X,Y", help="Same assignment for each of these models.")
@click.option("--shares", default=None, metavar="JUDGE=SHARE,...",
              help="cyclic: judge frequencies for a weighted round robin.")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
              help="Write the schedule to this CSV; stdout then gets the audit.")
@click.option("--audit", is_flag=True, help="Print the audit (calls per judge) instead of the schedule.")
@format_option
def plan(scenarios: str, judges: str, generations: int, seed: int | None, strategy: str, k: int, unit: str,
         models: str | None, shares: str | None, out: str | None, audit: bool, fmt: str) -> None:
    """Assign judges to (scenario, generation) cells; the rotation never restarts per scenario."""
    from cjstats.exceptions import CjstatsError
    from cjstats.plan import all_judges_schedule, cyclic_schedule, random_schedule, schedule_audit

    given = {name for name in ("k", "unit") if click.get_current_context().get_parameter_source(name)
             not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)}
    if strategy == "all" and "k" in given:
        _not_applicable("--judges-per-generation", "all", "every judge scores every generation")
    if strategy != "cyclic" and "unit" in given:
        _not_applicable("--unit", strategy, "only the cyclic rotation has a unit to advance over")
    if seed is not None and seed < 0:
        raise CjstatsError(f"The option --seed must be an integer >= 0. Got {seed}.")
    panel = [j.strip() for j in judges.split(",") if j.strip()]
    model_list = [x.strip() for x in models.split(",") if x.strip()] if models else None
    scen = _scenarios(scenarios)
    share_map = None
    if shares:
        if strategy != "cyclic":
            raise CjstatsError("The option --shares works with --strategy cyclic only.")
        share_map = {}
        for judge, value in parse_mapping(shares, option="--shares").items():
            try:
                share_map[judge] = float(value)
            except ValueError:
                raise CjstatsError(f"The option --shares needs a number for judge '{judge}'. Got {value!r}.") from None
    if strategy == "cyclic":
        schedule = cyclic_schedule(scen, panel, generations=generations, seed=seed, unit=unit,
                                   judges_per_generation=k, models=model_list, shares=share_map)
    elif strategy == "random":
        schedule = random_schedule(scen, panel, generations=generations, judges_per_generation=k, seed=seed,
                                   models=model_list)
    else:
        schedule = all_judges_schedule(scen, panel, generations=generations, seed=seed, models=model_list)
    report = schedule_audit(schedule, judges=panel)
    if out is not None:
        schedule.to_csv(out, index=False)
        emit_frame(report.per_judge, fmt, text=f"Wrote {len(schedule)} calls to {out}.\n{report.as_text()}")
    elif audit:
        emit_frame(report.per_judge, fmt, text=report.as_text())
    else:
        emit_frame(schedule, fmt)
