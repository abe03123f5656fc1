"""The reference simulation study of the docs: writes ``docs/study.md``.

The three backends on the paper's Table 3 components (MT-Bench, model Qwen: the largest components), at a
small design (n = 20, m = 2, K = 5) and the paper's design (n = 80, m = 10, K = 5), each balanced, with 10%
of judge calls missing completely at random, with scores cut to the 1..10 scale (ordinal), and with a scenario
x judge interaction of variance 0.5 (the truth's ``scenario_judge``; 0 in the other designs). Judges are drawn
from a population in every replicate, so that both judge_panel (the replicate's own mean(gamma^2)) and
judge_population have a truth.

Run:  .venv/bin/python benchmarks/reference_study.py [--reps 400] [--bayes-reps 100] [--jobs 2] [--save S.parquet]
      .venv/bin/python benchmarks/reference_study.py --render S.parquet   (rewrite the page from a saved run)
      .venv/bin/python benchmarks/reference_study.py --ordinal-only --ordinal-reps 100   (only the ML ordinal
      backend on the ordinal designs, scored on the latent truth; prints its table, leaves the page alone)

anova and REML run in one study (paired, ``--reps`` replicates), each twice: with the ``scenario_judge`` term
(the default, fitted where identifiable) and as the paper's model (``scenario_judge=False``). Bayes runs in a
second study of ``--bayes-reps`` replicates with the same seed, so its first replicates are the same data sets
as theirs: the designs are listed with the scenario x judge ones last, and a Bayes backend without the
``scenario_judge`` option (it fits the paper's model) is left out of those, keeping the design numbers, and so
the data, of the others.
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import math
import os
import platform
import time
import warnings
from pathlib import Path

import pandas as pd

import cjstats as cj

OUT = Path(__file__).resolve().parents[1] / "docs" / "study.md"
FIGURE = OUT.parent / "figures" / "study_coverage.png"
FIGURE_SJ = OUT.parent / "figures" / "study_coverage_scenario_judge.png"
MISSPECS = {"balanced": {}, "10% MCAR": {"mcar": 0.1}, "ordinal 1..10": {"ordinal": 10},
            "scenario x judge": {"scenario_judge": 0.5}}
SIZES = {"small": (20, 2, 5), "paper": (80, 10, 5)}
SJ = "scenario x judge"
BAYES = ("bayes", {"draws": 500, "tune": 500, "chains": 2, "cores": 1})
#: The ML cumulative-probit backend, latent scale: run on the ordinal designs only (simulation_study skips a
#: latent-scale method on the others, keeping every design's number and so its data), scored on the latent truth.
ORDINAL = "ordinal"
ORDINAL_LABEL = "ordinal ML probit [latent truth]"
#: The Bayesian cumulative-probit model, on the ordinal designs only like the ML one, scored on the same latent
#: truth; the Gaussian Bayes settings (tune: the ordinal model's default, 500).
BAYES_ORDINAL = ("bayes", {"likelihood": "ordinal", "link": "probit", "draws": 500, "chains": 2, "cores": 1})
BAYES_ORDINAL_LABEL = "bayes ordinal probit [latent truth]"
#: anova and REML, each with the scenario_judge term (the default) and as the paper's model.
FREQ = [("anova", {"incomplete": "drop"}), ("anova", {"incomplete": "drop", "scenario_judge": False}),
        "reml", ("reml", {"scenario_judge": False})]
#: The study's method labels -> the page's, which say which methods fit the scenario_judge term.
LABELS = {"anova(incomplete=drop)": "anova(drop) [+scenario_judge]",
          "anova(incomplete=drop, scenario_judge=False)": "anova(drop) [paper model]",
          "reml": "reml [+scenario_judge]", "reml(scenario_judge=False)": "reml [paper model]"}


def _bayes_fits_sj() -> bool:
    """Whether this version's Bayes backend has the ``scenario_judge`` option (else it fits the paper's model)."""
    from cjstats.estimators import bayes

    return "scenario_judge" in inspect.signature(bayes.fit).parameters


def _designs() -> list[cj.Design]:
    """The designs, the scenario x judge ones last (so that a study of the others keeps their numbers)."""
    out = []
    for last in (False, True):
        for size, (n, m, k) in SIZES.items():
            for name, spec in MISSPECS.items():
                if (name == SJ) == last:
                    out.append(cj.Design(n=n, m=m, k=k, misspec=spec, label=f"{size} (n={n}, m={m}), {name}"))
    return out


def _display_order() -> dict[str, int]:
    """Design label -> its place on the page: size first, then the misspecifications in the order of MISSPECS."""
    labels = [f"{size} (n={n}, m={m}), {name}" for size, (n, m, _) in SIZES.items() for name in MISSPECS]
    return {label: i for i, label in enumerate(labels)}


def _mcse(reps: int) -> float:
    """The Monte Carlo SE of a 95% coverage at ``reps`` replicates."""
    return math.sqrt(0.95 * 0.05 / reps)


def _status(row: pd.Series) -> str | None:
    """What a cell without a number means: every fit failed, or the method does not fit this row."""
    if row["failure_rate"] == 1:
        return "failed"
    if row["replicates"] == 0:
        return "not fitted" if not math.isnan(row["truth"]) else "-"
    return None


def _cov(row: pd.Series) -> str:
    if _status(row):
        return _status(row)
    if math.isnan(row["coverage"]):
        return "-"
    flag = " **low**" if row["coverage"] < 0.95 - 3 * row["coverage_mcse"] - 1e-12 else ""
    return f"{row['coverage']:.3f} ± {row['coverage_mcse']:.3f}{flag}"


def _bias(row: pd.Series) -> str:
    if _status(row):
        return _status(row)
    if math.isnan(row["bias"]):
        return "-"
    rel = row["bias"] / row["truth"] if row["truth"] else math.nan
    return f"{row['bias']:+.3g} ({rel:+.0%})" if not math.isnan(rel) and row["component"] != "mu" else f"{row['bias']:+.3g}"


def _matrix(summary: pd.DataFrame, cell) -> str:
    s = summary.copy()
    s["value"] = s.apply(cell, axis=1)
    t = s.pivot_table(index=["design", "component"], columns="method", values="value", aggfunc="first", sort=False)
    t = t.reset_index().fillna("not run")
    head = "| " + " | ".join(t.columns) + " |"
    sep = "|" + "|".join("---" for _ in t.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in t.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--bayes-reps", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--save", type=Path, help="also write the summary (Parquet) and the run's facts (.json beside "
                    "it), so that --render can rewrite the page without rerunning the study")
    ap.add_argument("--render", type=Path, help="write the page from a summary saved by --save; run nothing")
    ap.add_argument("--ordinal-reps", type=int, default=200, help="replicates of the ordinal ML backend")
    ap.add_argument("--ordinal-only", action="store_true", help="run only the ordinal backends (ML at "
                    "--ordinal-reps, Bayes at --bayes-reps) on the ordinal designs and print their coverage table "
                    "(Markdown); the page is not rewritten")
    args = ap.parse_args()
    if args.ordinal_only:
        summary, minutes = _run_ordinal(args)
        print(_ordinal_table(summary))
        print(f"\n{args.ordinal_reps} (ML) and {args.bayes_reps} (Bayes) replicates, jobs={args.jobs}, seed "
              f"{args.seed}, {minutes:.1f} min, "
              f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at the end")
        return
    if args.render is not None:
        summary = pd.read_parquet(args.render)
        run = json.loads(args.render.with_suffix(".json").read_text(encoding="utf-8"))
    else:
        summary, run = _run(args)
        if args.save is not None:
            summary.to_parquet(args.save, index=False)
            args.save.with_suffix(".json").write_text(json.dumps(run, indent=1), encoding="utf-8")
    OUT.write_text(_page(summary, run), encoding="utf-8")
    _figure(summary)
    print(f"wrote {OUT}, {FIGURE} and {FIGURE_SJ} ({run['minutes']:.1f} min of study)")


def _run(args: argparse.Namespace) -> tuple[pd.DataFrame, dict]:
    """Run the two studies; the page's summary (page labels, page order) and the facts of the run."""
    warnings.simplefilter("ignore")
    truth = cj.Truth.table3(["Qwen"], judges="population")
    designs = _designs()
    bayes_sj = _bayes_fits_sj()
    bayes_designs = designs if bayes_sj else [d for d in designs if SJ not in d.label]
    bayes_label = f"bayes [{'+scenario_judge' if bayes_sj else 'paper model'}]"
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    freq = cj.simulation_study(truth, designs, FREQ, args.reps, seed=args.seed, jobs=args.jobs)
    t1 = time.perf_counter()
    bayes = cj.simulation_study(truth, bayes_designs, [BAYES], args.bayes_reps, seed=args.seed, jobs=args.jobs)
    t2 = time.perf_counter()
    ordinal, ordinal_min = _run_ordinal(args)
    t3 = time.perf_counter()
    bayes_m = bayes.measures.assign(method=bayes_label)
    summary = pd.concat([freq.measures, bayes_m, ordinal], ignore_index=True)
    summary["method"] = summary["method"].map(lambda m: LABELS.get(m, m))
    order = _display_order()
    summary = summary.sort_values("design", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)
    run = {"reps": args.reps, "bayes_reps": args.bayes_reps, "jobs": args.jobs, "seed": args.seed,
           "bayes_sj": bayes_sj, "bayes_label": bayes_label, "load": load, "minutes": (t3 - t0) / 60,
           "freq_min": (t1 - t0) / 60, "bayes_min": (t2 - t1) / 60, "ordinal_min": ordinal_min,
           "ordinal_reps": args.ordinal_reps, "date": dt.date.today().isoformat(),
           "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    return summary, run


def _run_ordinal(args: argparse.Namespace) -> tuple[pd.DataFrame, float]:
    """The ordinal backends (probit; ML at ``--ordinal-reps``, Bayes at ``--bayes-reps`` replicates) on the
    ordinal designs, the same data sets as the others (same seed and design numbers; simulation_study skips a
    latent-scale method on the other designs), scored on the latent truth (cjstats.studies.latent); their
    measures and the minutes they took."""
    warnings.simplefilter("ignore")
    truth = cj.Truth.table3(["Qwen"], judges="population")
    t0 = time.perf_counter()
    ml = cj.simulation_study(truth, _designs(), [ORDINAL], args.ordinal_reps, seed=args.seed, jobs=args.jobs)
    bayes = cj.simulation_study(truth, _designs(), [BAYES_ORDINAL], args.bayes_reps, seed=args.seed,
                                jobs=args.jobs)
    out = pd.concat([ml.measures.assign(method=ORDINAL_LABEL), bayes.measures.assign(method=BAYES_ORDINAL_LABEL)],
                    ignore_index=True)
    return out, (time.perf_counter() - t0) / 60


def _ordinal_table(summary: pd.DataFrame) -> str:
    """Coverage, bias and seconds per fit of the ordinal backend, one row per design x component (Markdown)."""
    s = summary[summary["truth"].notna()]
    lines = ["| method | design | component | truth (latent; mu: score) | coverage ± MCSE | bias | median width | "
             "sec/fit |", "|---|---|---|---|---|---|---|---|"]
    for r in s.itertuples():
        lines.append(f"| {r.method} | {r.design} | {r.component} | {r.truth:.3f} | {_cov(pd.Series(r._asdict()))} | "
                     f"{r.bias:+.3f} | {r.median_width:.3f} | {r.seconds_per_fit:.2f} |")
    return "\n".join(lines)


def _page(summary: pd.DataFrame, run: dict) -> str:
    """The Markdown page of a run."""
    reps, bayes_reps = run["reps"], run["bayes_reps"]
    low = summary[summary["coverage"] < 0.95 - 3 * summary["coverage_mcse"] - 1e-12]
    fail = summary[summary["failure_rate"] > 0].drop_duplicates(["design", "method"])
    low_lines = [f"- {r.method}, {r.component}, {r.design}: {r.coverage:.3f} ± {r.coverage_mcse:.3f}"
                 for r in low.itertuples()] or ["- none"]
    fail_lines = [f"- {r.method}, {r.design}: {r.failure_rate:.0%} of fits failed"
                  for r in fail.itertuples()] or ["- none"]
    secs = summary.drop_duplicates(["design", "method"]).assign(component="all")
    # the time at the usual 400 and 100 replicates, scaled from this run's (which includes the start-up)
    usual = run["freq_min"] * 400 / reps + run["bayes_min"] * 100 / bayes_reps
    reps_note = ("" if reps >= 400 and bayes_reps >= 100 else
                 f" **Fewer replicates than this page's usual 400 (anova, REML) and 100 (Bayes)**, to bound the run "
                 f"time on this shared machine, whose load varies (at this run's pace the usual counts would take "
                 f"about {usual:.0f} min), so differences smaller than about 3 x {_mcse(reps):.3f} (anova, REML) and "
                 f"3 x {_mcse(bayes_reps):.3f} (Bayes) on a coverage are within Monte Carlo error here.")
    bayes_note = ("" if run["bayes_sj"] else " This version's Bayes backend has no `scenario_judge` option (it "
                  "fits the paper's model), so it is left out of the scenario x judge designs (\"not run\").")
    return PAGE.format(
        reps=reps, bayes_reps=bayes_reps, jobs=run["jobs"], seed=run["seed"], bayes_note=bayes_note,
        reps_note=reps_note, bayes_label=run["bayes_label"], mcse=_mcse(reps), bayes_mcse=_mcse(bayes_reps),
        minutes=run["minutes"], freq_min=run["freq_min"], bayes_min=run["bayes_min"], load=run["load"],
        date=run["date"], machine=run["machine"],
        bayes_opts=", ".join(f"{k}={v}" for k, v in BAYES[1].items()),
        ordinal_label=ORDINAL_LABEL, bayes_ordinal_label=BAYES_ORDINAL_LABEL, ordinal_reps=run["ordinal_reps"],
        ordinal_min=run["ordinal_min"],
        bayes_ordinal_opts=", ".join(f"{k}={v}" for k, v in BAYES_ORDINAL[1].items() if k not in ("likelihood",
                                                                                                   "link")),
        coverage=_matrix(summary, _cov), bias=_matrix(summary, _bias),
        low="\n".join(low_lines), fail="\n".join(fail_lines),
        seconds=_matrix(secs, lambda r: f"{r['seconds_per_fit']:.3f}"),
        full=_full_markdown(summary),
    )


def _figure(summary: pd.DataFrame) -> None:
    """The coverage of every method, design and component with Monte Carlo bands (cj.plots.coverage_plot): the
    paper's components in one figure, scenario_judge (which coverage_plot does not draw beside them) in a
    second."""
    import matplotlib

    matplotlib.use("Agg")
    cj.plots.set_style()
    sj = summary[(summary["component"] == "scenario_judge") & summary["coverage"].notna()]
    for path, part in ((FIGURE, summary), (FIGURE_SJ, sj)):
        study = cj.StudyResult(measures=part.reset_index(drop=True), replicates=pd.DataFrame(), settings={})
        fig = cj.plots.coverage_plot(study)
        fig.savefig(path, dpi=110, bbox_inches="tight")


def _full_markdown(summary: pd.DataFrame) -> str:
    return cj.StudyResult(measures=summary, replicates=pd.DataFrame(), settings={}).as_markdown()


PAGE = """# Reference simulation study

This page is generated by `benchmarks/reference_study.py` (do not edit it by hand). It runs
`cj.simulation_study` on the paper's Table 3 components for MT-Bench model **Qwen** (scenario 1.530,
generation 0.266, judge_panel 0.947, residual 1.486, mu 7.13), with the judges drawn afresh from a population
in every replicate (`judges="population"`, judge_population = 0.947 x 5/4), so that both judge rows have a
truth: judge_panel is the replicate's own mean(gamma^2), judge_population the population variance.

- Designs: *small* (n = 20, m = 2, K = 5) and *paper* (n = 80, m = 10, K = 5), each **balanced**, with
  **10% MCAR** missing judge calls, with scores rounded and cut to **1..10** (ordinal; the latent truth is
  compared with estimates on the score scale), and with a **scenario x judge** interaction (alpha gamma)_il of
  variance 0.5: judge l's own deviation on scenario i, shared by the scenario's generations. It is a component
  of the truth: `scenario_judge` = 0.5 in those designs and 0 in the others, and `residual` is the
  within-cell residual 1.486 in every design (m >= 2, so the term is identifiable everywhere).
- Methods, on the same {reps} replicates per design (paired): `("anova", {{"incomplete": "drop"}})` (method
  of moments, complete cells only) and `reml` (profile-likelihood intervals), each twice. **[+scenario_judge]**
  is the default (`scenario_judge="auto"`: the term is fitted wherever it is identifiable, so in every design
  here); **[paper model]** is `scenario_judge=False`, the paper's model without the term, whose residual then
  holds s2_residual + s2_scenario_judge and is still compared with the within-cell truth (its
  `scenario_judge` row is "not fitted"). `{bayes_label}` ({bayes_opts}) runs on {bayes_reps} replicates per
  design with the same seed, i.e. on the first {bayes_reps} of the same data sets.{bayes_note} On the two
  ordinal designs only, the latent-scale ordinal backends, scored on the **latent truth** of the data (the
  cumulative probit that rounding and cutting a normal score is: scenario / s2_residual, generation /
  s2_residual, judge_panel / s2_residual, residual 1; mu on the score scale, the expected clipped score; see
  `cjstats.studies.latent`): `{ordinal_label}` (`method="ordinal"`, {ordinal_reps} replicates) and
  `{bayes_ordinal_label}` (`("bayes", {{"likelihood": "ordinal", "link": "probit"}})`, {bayes_ordinal_opts},
  {bayes_reps} replicates). Intervals are 95%.
- Size and time: this run took {minutes:.1f} min ({freq_min:.1f} min anova + REML, {bayes_min:.1f} min
  Bayes, {ordinal_min:.1f} min the two ordinal backends) with `jobs={jobs}` on a shared {machine} (load average {load:.1f} at the start), seed {seed},
  {date}. The Monte Carlo SE of a 95% coverage is about {mcse:.3f} at {reps} replicates and {bayes_mcse:.3f}
  at {bayes_reps}; raise `--reps` for finer answers.{reps_note}

Reproduce: `python benchmarks/reference_study.py --reps {reps} --bayes-reps {bayes_reps} --ordinal-reps {ordinal_reps} --jobs {jobs}`.

## Which estimator and which interval to trust where

{guidance}

Coverage more than 3 Monte Carlo SEs below 95% in this run (flagged **low** in the table):

{low}

Designs where fits failed (recorded, never fatal; see `StudyResult.replicates["error"]`):

{fail}

## Coverage of 95% intervals (estimate ± Monte Carlo SE)

![Coverage of every method, design and component, with +-2 Monte Carlo SE and the nominal band](figures/study_coverage.png)

![Coverage of the scenario_judge intervals of the methods that fit the term](figures/study_coverage_scenario_judge.png)

"not fitted": the method does not have the term (the paper's model); "not run": the method was not run on the
design; "failed": every fit raised.

{coverage}

## Bias (relative to the truth)

{bias}

## Seconds per fit

{seconds}

## Speed

Measured with `python benchmarks/bench_study.py` on this 2-core machine while other jobs shared it (the load
average, printed per line, was 4 to 8, so a study had well under one core to itself). These measurements
predate the `scenario_judge` term (the paper's model); REML with the term, now the default where it is
identifiable, takes 2 to 10 times as long per fit (see "Seconds per fit" above):

| study | wall time | goal |
|---|---|---|
| anova, 1,000 replicates, n = 80, m = 1, K = 5, `jobs=1` | 3.6 s (CPU time; 4.4-8.2 s wall under load 5) | < 5 s |
| REML, 1,000 replicates, same design, `jobs=1` | 48.9 s (load 5.2) | < 60 s |
| REML, the same with `jobs=2` | 60.5 s (load 7.0: no free core for the second worker) | |
| Bayes (default 4 chains x 1,000 draws, `cores=1`), 200 replicates of a 1,000-row design, `jobs=2` | 350 s (load 3.8-7) | < 300 s |

How the cost grows: anova costs 3.5 to 5 ms per replicate almost whatever n (250 replicates: 0.86 s at n = 20,
1.12 s at n = 80, 1.28 s at n = 320): simulating the table, building `Scores` and assembling the result
dominate, not the mean squares. REML costs about 16 ms per fit from n = 20 to n = 320 at m = 1 and about
50 ms at the paper's 4,000-row design; Bayes about 0.5 s per fit with 2 chains x 500 draws and 1.75 s with the
defaults at 1,000 rows (plus one compilation per worker). All of them are linear in the number of replicates
(1,000 anova replicates take four times 250). `jobs=k` divides the wall time by at most k when k cores are
free; on a loaded machine it gains nothing (REML above), and for anova the start of the worker processes
(about 1 s) outweighs the gain below a few thousand replicates. The numbers never depend on `jobs`.

## Full summary

Columns: bias and coverage ± Monte Carlo SE (Morris, White & Crowther 2019), RMSE, median interval width,
share of fits at the boundary (a variance estimated as 0), share of failed fits, seconds per fit, replicates
used.

{full}
"""

GUIDANCE = """Read the tables below with their Monte Carlo SEs (about {mcse:.3f} on a coverage at {reps} replicates,
{bayes_mcse:.3f} at {bayes_reps}). The numbers quoted here are those of the run on this page.

- **A scenario x judge interaction (variance 0.5): keep the default, which fits it.** With the term
  (**[+scenario_judge]**, anova and REML alike) every component covers 92-97% at both sizes: scenario_judge
  itself 0.952-0.960, the within-cell residual 0.956-0.968, generation 0.940-0.952, judge_panel 0.948-0.956,
  and no bias exceeds 6%. The paper's model (**[paper model]**, `scenario_judge=False`) puts the interaction
  into its residual (+0.48 to +0.49, +32-33%), whose interval then covers the within-cell truth 0.30-0.31 of the
  time at n = 20 and never (0.000) at the paper's design; at m = 10 it also drains generation (-0.10, -38%;
  coverage 0.14), and its judge_panel interval is too narrow (coverage 0.70; median width 0.156 against 0.280
  with the term, which counts the scenario x judge noise in the judge means). At n = 20 its scenario is 8-9%
  high. mu and judge_population are unaffected either way. `bayes [+scenario_judge]` (60 replicates) covers
  0.92-0.98 on these designs, scenario_judge 0.950 and 0.983, except judge_population at the paper's design
  (0.867 ± 0.044).
- **Bayes and a variance of 0.** Where the data have no interaction (truth 0), Bayes's scenario_judge interval
  never contains 0 (coverage 0.000 in the table): a posterior with a continuous prior on the scale puts no mass
  at 0 itself, so its equal-tailed interval starts above it. Read the interval as an upper bound: its posterior
  mean is 0.11-0.14 at n = 20, m = 2 (median width 0.31-0.40) and 0.008-0.014 at the paper's design, against
  0.5 where the interaction is there; anova and REML report such a term as 0 with an interval from 0.
- **What fitting the term costs when the data have none** (truth 0: the balanced and MCAR designs; ordinal
  below). scenario_judge is estimated at 0 in 49-58% of the fits and its interval covers 0 in 97-98% of them
  (conservative on the boundary). At the paper's design nothing else changes (residual interval 0.149-0.159
  wide against 0.146-0.156, coverage 0.95-0.98 against 0.97). At n = 20, m = 2 the within-cell residual keeps only the
  n (m - 1)(K - 1) = 80 degrees of freedom of the 156 the paper's model pools, so its interval is wider
  (anova 0.97 against 0.68, REML 0.75 against 0.67), and REML's residual is 4% low (-0.05 to -0.07, while
  scenario_judge is +0.07 high: the truncation at 0 moves variance from the residual to the term); coverage
  stays 0.93-0.96. REML with the term also takes 2 to 10 times as long per fit (0.31 against 0.14 s on the
  balanced designs here, 1.3 against 0.13 s with 10% MCAR at the paper's design). Not fitting a term that is
  there breaks three components; fitting one that is not there costs precision at m = 2 and time.
- **Balanced data: use `anova`.** anova and REML give the same point estimates on interior fits (a tested
  property) and both intervals cover 93-98% for every component at both sizes, with or without the term, at a
  fraction of REML's cost. Bias is within a few Monte Carlo SEs of 0 for every component except
  scenario_judge itself (truncated at its truth 0) and REML's residual at n = 20 with the term (above).
- **Missing judge calls (10% MCAR): use `reml`.** With m > 1, `anova(incomplete="drop")` failed in every
  replicate (dropping incomplete cells leaves scenarios with different numbers of generations, which the
  ANOVA cannot take; with m = 1 it would drop whole scenarios). REML stays nearly unbiased and covers
  93-98% (with or without the term); its judge_population interval is at the low edge (0.920 ± 0.017 at
  n = 20, 0.928 ± 0.016 at the paper's design).
- **judge_population (judges as a random sample) is weakly determined with K = 5**: 4 degrees of freedom,
  RMSE 0.68-0.87 on a truth of 1.18 (anova, REML; 1.2-2.0 for Bayes's posterior mean) and intervals 5 to 9
  units wide, whatever the backend. The intervals are honest (0.92-0.98) but say little; REML's profile
  interval is the narrowest (4.8-6.6 wide against 6.6-9.1 for anova's MLS). For statements about the judges
  you used, use judge_panel, which is estimated well.
  In an exploratory run with K = 4 (3 degrees of freedom, n = 20, m = 2, 400 replicates, an earlier version)
  REML's judge_population interval under-covered: 0.912 ± 0.014.
- **Bayes point estimates are posterior means, and for variances they are biased upwards**: judge_population
  is +55% to +104% of its truth in every design (the posterior of a variance with 4 degrees of freedom is
  right-skewed), scenario 9-14% and generation about 46% high at n = 20 (balanced, MCAR), nearly unbiased at
  n = 80. Its credible intervals covered within Monte Carlo error in the balanced and MCAR designs
  ({bayes_reps} replicates, 2 chains x 500 draws). Use its intervals, or the median of `fit.draws`, rather
  than the mean for small variances.
- **Ordinal scores (1..10): no Gaussian backend is right, and larger designs make it worse.** Rounding and
  the ceiling at 10 (Qwen's mean is 7.1) shrink every variance by 5-17% and mu by 0.06-0.07. At n = 20 the
  wide intervals hide it (judge_panel under-covers, 0.85-0.86; REML's residual with the term 0.89), but at
  the paper's design intervals tighten around the biased values: judge_panel covers 0.31-0.32, residual
  0.53 (paper model) and 0.42-0.43 (with the term, whose scenario_judge reads the rounding as an interaction:
  it covers its truth 0 only 0.71-0.72 of the time), generation 0.66-0.70, scenario 0.86, mu 0.93. On
  bounded scores, read the components as a description of the score scale, not of the latent model.
- **On ordinal scores, fit the latent model: both ordinal backends cover the latent truth.** The data are a
  cumulative probit (rounding and cutting a normal score), so `method="ordinal"` (ML, probit) and
  `("bayes", {{"likelihood": "ordinal", "link": "probit"}})` fit the model that generated them, and every
  component is scored on its latent truth (scenario / s2_residual, ...; mu on the score scale). ML (200
  replicates): every coverage within 3 Monte Carlo SEs of 95%, at the paper's design 0.935-0.965 (judge_panel
  0.965 where the Gaussian backends give 0.31-0.32), bias of scenario, generation and judge_panel within 1.4%; at
  n = 20 mu's Wald interval (normal quantile, 20 scenarios) covers 0.905 ± 0.021 and generation 0.920, the
  lowest, and judge_panel is 12% high (a mean of squared estimated offsets). Bayes (60 replicates, 2 chains x
  500 draws): 0.92-0.98 everywhere; at n = 20 its posterior mean of scenario is 33% high (the right-skewed
  posterior of a variance at 20 scenarios; its interval covers 0.92) and judge_population's mean is more than
  twice its truth (4 degrees of freedom), as for the Gaussian Bayes backend. Both take seconds per fit (table
  below, one core each: ML 1-3 s in this run, whose nested fit still took its gradient by finite differences,
  about 0.1 s at 4,000 rows with the analytic gradient it has now; Bayes 1.3-8 s), so on bounded 1-5 or 1-10
  ratings the latent model costs little; its variances are latent (residual fixed at 1), and `mu` and the decision layer
  (`cj.optimise`, `cj.predictive_design_variance`) turn them back into score-scale quantities (docs/ordinal.md,
  docs/discrete_scores.md)."""

PAGE = PAGE.replace("{guidance}", GUIDANCE)

if __name__ == "__main__":
    main()
