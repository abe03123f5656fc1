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
                df = pd.read_json(path, lines=True, dtype=False)
            elif name.endswith(".parquet"):
                df = pd.read_parquet(path)
            else:
                # labels are text: 1.1 and 1.10 are two scenarios, not one number
                df = pd.read_csv(path, sep="\t" if name.endswith(".tsv") else ",", dtype=str,
                                 skipinitialspace=True)
                df.columns = [str(c).strip() for c in df.columns]
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


def _from_allocation(path: str, model: str | None) -> dict:
    """The recommended design of one model in the JSON that ``cjstats allocate --format json`` wrote."""
    import json
    from pathlib import Path

    from cjstats.exceptions import CjstatsError

    p = Path(path)
    if not p.is_file():
        raise CjstatsError(f"The option --from-allocation names `{path}`, which is not an existing file.")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CjstatsError(f"The option --from-allocation needs the JSON of `cjstats allocate --format json`; "
                           f"`{path}` is not valid JSON ({getattr(exc, 'msg', exc)}).") from None
    recs = doc.get("recommendation") if isinstance(doc, dict) else None
    if not isinstance(recs, list) or not recs:
        raise CjstatsError(f"The option --from-allocation needs the JSON of `cjstats allocate --format json`; "
                           f"`{path}` has no 'recommendation' table.")
    if model is not None:
        recs = [r for r in recs if str(r.get("model")) == model]
        if not recs:
            raise CjstatsError(f"The option --allocation-model names '{model}', which `{path}` has no "
                               f"recommendation for.")
    if len(recs) > 1:
        names = ", ".join(str(r.get("model")) for r in recs)
        raise CjstatsError(f"The allocation in `{path}` recommends a design for several models ({names}); pick one "
                           f"with --allocation-model.")
    rec = dict(recs[0])
    shares = [s for s in doc.get("shares") or [] if s.get("model") == rec.get("model")
              and s.get("criterion") == rec.get("criterion")]
    rec["shares"] = {s["judge"]: float(s["share"]) for s in shares} if shares else None
    return rec


@click.command("plan", short_help="Write a judge schedule: CyclicJudge or a baseline.")
@click.option("--scenarios", default=None, metavar="FILE_OR_COUNT",
              help="Number of scenarios, or a file of labels (a 'scenario' column, or one label per line).")
@click.option("--judges", default=None, metavar="A,B,C", help="The judge panel, comma-separated.")
@click.option("--from-allocation", "from_allocation", type=click.Path(dir_okay=False), default=None,
              help="Take the design (strategy, n, m, judges per generation, shares, panel) from the JSON of "
                   "`cjstats allocate --format json`; other options override it.")
@click.option("--allocation-model", "allocation_model", default=None,
              help="With --from-allocation: the model whose recommendation to use.")
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
def plan(scenarios: str | None, judges: str | None, from_allocation: str | None, allocation_model: str | None,
         generations: int, seed: int | None, strategy: str, k: int, unit: str,
         models: str | None, shares: str | None, out: str | None, audit: bool, fmt: str) -> None:
    """Assign judges to (scenario, generation) cells; the rotation never restarts per scenario."""
    from cjstats.exceptions import CjstatsError
    from cjstats.decisions.schedules import all_judges_schedule, cyclic_schedule, random_schedule

    given = {name for name in ("k", "unit", "generations", "strategy") if click.get_current_context()
             .get_parameter_source(name) not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)}
    share_map = None
    if from_allocation is not None:
        rec = _from_allocation(from_allocation, allocation_model)
        rec_strategy = str(rec.get("strategy", "cyclic"))
        if "strategy" not in given:
            strategy = "cyclic" if rec_strategy == "weighted" else rec_strategy
        if "generations" not in given and rec.get("m") is not None:
            generations = int(rec["m"])
        if "k" not in given and rec.get("judges_per_generation") is not None and strategy != "all":
            k = int(rec["judges_per_generation"])
        if scenarios is None and rec.get("n") is not None:
            scenarios = str(int(rec["n"]))
        if judges is None and rec.get("judges"):
            judges = str(rec["judges"])
        if shares is None and rec_strategy == "weighted" and rec.get("shares"):
            share_map = dict(rec["shares"])
    elif allocation_model is not None:
        raise CjstatsError("The option --allocation-model works with --from-allocation only.")
    if scenarios is None:
        raise CjstatsError("The option --scenarios is required (a count or a file of labels), unless "
                           "--from-allocation gives it.")
    if judges is None:
        raise CjstatsError("The option --judges is required (the panel, comma-separated), unless "
                           "--from-allocation gives it.")
    if strategy == "all" and "k" in given:
        _not_applicable("--judges-per-generation", "all", "every judge scores every generation")
    if strategy != "cyclic" and "unit" in given:
        _not_applicable("--unit", strategy, "only the cyclic rotation has a unit to advance over")
    if seed is not None and seed < 0:
        raise CjstatsError(f"The option --seed must be an integer >= 0. Got {seed}.")
    panel = [j.strip() for j in judges.split(",") if j.strip()]
    model_list = [x.strip() for x in models.split(",") if x.strip()] if models else None
    scen = _scenarios(scenarios)
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
    per_judge, text = _audit(schedule, panel, model_list)
    if out is not None:
        schedule.to_csv(out, index=False)
        emit_frame(per_judge, fmt, text=f"Wrote {len(schedule)} calls to {out}.\n{text}")
    elif audit:
        emit_frame(per_judge, fmt, text=text)
    else:
        emit_frame(schedule, fmt)


def _audit(schedule, panel: list[str], models: list[str] | None):
    """Calls per judge, for every model of the schedule (one audit per model, stacked with a model column)."""
    import pandas as pd

    from cjstats.decisions.schedules import schedule_audit

    if not models:
        report = schedule_audit(schedule, judges=panel)
        return report.per_judge, report.as_text()
    frames, texts = [], []
    for name in models:
        report = schedule_audit(schedule, judges=panel, model=name)
        frames.append(report.per_judge.assign(model=name)[["model", *report.per_judge.columns]])
        texts.append(f"Model '{name}':\n{report.as_text()}")
    total = len(schedule)
    texts.append(f"All {len(models)} models: {total} calls.")
    return pd.concat(frames, ignore_index=True), "\n\n".join(texts)
