"""``cjstats study``: a simulation study comparing estimators (mirrors :func:`cjstats.simulation_study`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cjstats.cli._app import emit_frame, format_option
from cjstats.exceptions import CjstatsError

__all__ = ["study"]

#: Parameter used when --misspec names a misspecification without a value.
MISSPEC_DEFAULTS: dict[str, float] = {
    "scenario_judge": 0.5, "judge_model": 0.5, "t_df": 5, "judge_residual_ratio": 4, "ordinal": 10,
    "unequal_generations": 1, "mcar": 0.1, "mnar": 0.1,
}


def _int_list(text: str, option: str, minimum: int) -> list[int]:
    out = []
    for item in text.split(","):
        item = item.strip()
        try:
            value = int(item)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise CjstatsError(f"The option {option} takes integers >= {minimum} separated by commas, such as "
                               f"'20,80'. Got {item!r}.")
        out.append(value)
    return out


def _number(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def _methods(text: str) -> list[Any]:
    """``anova,reml:interval=bootstrap:n_boot=199`` -> ['anova', ('reml', {...})]."""
    from cjstats.estimators import BACKENDS

    out: list[Any] = []
    for item in text.split(","):
        name, *opts = [p.strip() for p in item.split(":")]
        if name not in BACKENDS:
            raise CjstatsError(f"The option --methods names '{name}', which is not a method (known: "
                               f"{', '.join(sorted(BACKENDS))}).")
        options = {}
        for o in opts:
            if "=" not in o:
                raise CjstatsError(f"The option --methods takes options as name:key=value, such as "
                                   f"'reml:interval=bootstrap'. Got {o!r} for '{name}'.")
            k, v = o.split("=", 1)
            options[k.strip()] = _number(v.strip())
        out.append((name, options) if options else name)
    return out


def _misspec(texts: tuple[str, ...]) -> list[dict[str, float]]:
    """Each --misspec is one setting: ``none``, ``ordinal``, ``mcar=0.2`` or ``ordinal+mcar=0.1``."""
    from cjstats.studies.data import MISSPECIFICATIONS

    settings = []
    for text in texts or ("none",):
        spec: dict[str, float] = {}
        if text.strip() != "none":
            for part in text.split("+"):
                name, _, value = part.strip().partition("=")
                if name not in MISSPECIFICATIONS:
                    raise CjstatsError(f"The option --misspec names '{name}', which is not a misspecification "
                                       f"(known: none, {', '.join(MISSPECIFICATIONS)}).")
                try:
                    spec[name] = float(value) if value else MISSPEC_DEFAULTS[name]
                except ValueError:
                    raise CjstatsError(f"The option --misspec gives '{name}' the value {value!r}; it takes the "
                                       f"{MISSPECIFICATIONS[name]}.") from None
        settings.append(spec)
    return settings


def _truth(text: str, judges: str, models: str | None):
    from cjstats.studies.data import Truth

    if text == "paper-table3":
        return Truth.table3(None if not models else [m.strip() for m in models.split(",")], judges=judges)
    path = Path(text)
    if not path.exists():
        raise CjstatsError(f"The option --truth takes paper-table3, a components .json file or a score file; "
                           f"`{text}` does not exist.")
    if path.suffix.lower() == ".json":
        import json

        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise CjstatsError(f"The option --truth names `{text}`, which is not valid JSON ({exc.msg}).") from None
        if not isinstance(data, dict):
            raise CjstatsError(f"The option --truth names `{text}`, which must hold an object such as "
                               f"{{\"model\": {{\"mu\": 7, \"scenario\": 1, ...}}}}.")
        return Truth.from_dict(data if "groups" in data else {"groups": data, "judges": judges})
    from cjstats.estimators import estimate
    from cjstats.io.read import read_scores

    return Truth.from_components(estimate(read_scores(path), "reml"), judges=judges)


@click.command(short_help="Compare estimators in a simulation study with known components.")
@click.option("--truth", "truth_text", default="paper-table3", show_default=True,
              help="paper-table3, a components .json file ({model: {mu, scenario, generation, residual, "
                   "judge_panel}}) or a score file to simulate more data like.")
@click.option("--models", default=None, help="With paper-table3: the models to use (default all five).")
@click.option("--judges", type=click.Choice(["panel", "population"]), default="panel", show_default=True,
              help="Judges fixed (the panel) or redrawn per replicate from a population.")
@click.option("--n", "n_text", default="20,80", show_default=True, help="Scenarios, comma-separated.")
@click.option("--m", "m_text", default="1", show_default=True, help="Generations per scenario, comma-separated.")
@click.option("--k", "k_text", default="5", show_default=True, help="Judges in the panel (K >= 2), comma-separated.")
@click.option("--k-per-item", "kpi_text", default=None,
              help="Judges per generation, comma-separated (default: all; needs --strategy cyclic or random).")
@click.option("--strategy", type=click.Choice(["all", "random", "cyclic"]), default="all", show_default=True,
              help="Strategy A (all), B (random) or C (cyclic).")
@click.option("--methods", "methods_text", default="anova,reml", show_default=True,
              help="Methods, comma-separated; options as name:key=value, e.g. reml:interval=bootstrap.")
@click.option("--misspec", "misspec_texts", multiple=True, metavar="SPEC",
              help="Repeatable: none, a name (ordinal, mcar, mnar, t_df, judge_residual_ratio, scenario_judge, "
                   "judge_model, unequal_generations), name=value, or several joined by +.")
@click.option("--replicates", type=click.IntRange(min=1), default=200, show_default=True, help="Replicates per design.")
@click.option("--ci-level", type=float, default=None, help="Interval level (default 0.95).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Root seed.")
@click.option("--jobs", "jobs_text", default="1", show_default=True,
              help="Worker processes (-1: every core), or 'dask' for the current Dask cluster.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Parquet checkpoint of the replicates; an interrupted study resumes from it.")
@click.option("--progress/--no-progress", default=False, show_default=True, help="Show a progress bar on stderr.")
@format_option
def study(truth_text: str, models: str | None, judges: str, n_text: str, m_text: str, k_text: str,
          kpi_text: str | None, strategy: str, methods_text: str, misspec_texts: tuple[str, ...], replicates: int,
          ci_level: float | None, seed: int, jobs_text: str, out: str | None, progress: bool, fmt: str) -> None:
    """Simulate score tables from known components and compare the estimators on them.

    Prints the summary (bias, RMSE, coverage with Monte Carlo SEs, widths, boundary and failure rates) per
    design, method and component.
    """
    from cjstats.studies.data import MISSPECIFICATIONS, Design, check_misspec
    from cjstats.studies.study import simulation_study

    ns = _int_list(n_text, "--n", 2)
    ms = _int_list(m_text, "--m", 1)
    ks = _int_list(k_text, "--k", 2)
    kpis: list[int | None] = [None] if kpi_text is None else list(_int_list(kpi_text, "--k-per-item", 1))
    methods = _methods(methods_text)
    misspecs = _misspec(misspec_texts)
    if jobs_text == "dask":
        jobs: Any = "dask"
    else:
        try:
            jobs = int(jobs_text)
        except ValueError:
            jobs = None
        if jobs is None or jobs == 0 or jobs < -1:
            raise CjstatsError(f"The option --jobs takes a number of processes (-1: every core) or 'dask'. "
                               f"Got {jobs_text!r}.")
    designs = []
    for n in ns:
        for m in ms:
            for k in ks:
                for kpi in kpis:
                    if kpi is not None and kpi > k:
                        raise CjstatsError(f"The option --k-per-item gives {kpi} judges per generation, more than "
                                           f"the panel --k {k}.")
                    if strategy == "all" and kpi is not None and kpi != k:
                        raise CjstatsError(f"The option --k-per-item {kpi} needs --strategy cyclic or random (with "
                                           f"--strategy all every one of the --k {k} judges scores each generation).")
                    for spec in misspecs:
                        for name, value in spec.items():
                            try:
                                check_misspec({name: value}, m, "study")
                            except CjstatsError:
                                raise CjstatsError(f"The option --misspec gives '{name}' the value {value:g}; it "
                                                   f"takes the {MISSPECIFICATIONS[name]}.") from None
                        designs.append(Design(n=n, m=m, k=k, k_per_item=kpi, strategy=strategy, misspec=spec))
    truth = _truth(truth_text, judges, models)
    try:
        result = simulation_study(truth, designs, methods, replicates, ci_level=ci_level, seed=seed, jobs=jobs,
                                  checkpoint=out, progress=progress)
    except CjstatsError as exc:
        msg = str(exc)
        for arg, option in (("'methods' argument", "--methods"), ("'checkpoint' argument", "--out"),
                            ("'jobs' argument", "--jobs"), ("ci_level", "--ci-level")):
            if arg in msg:
                raise CjstatsError(f"The option {option} is invalid: {msg[0].lower()}{msg[1:]}") from None
        raise
    emit_frame(result.measures, fmt, text=result.as_text())
