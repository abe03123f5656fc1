"""The reference simulation study of the docs: writes ``docs/study.md``.

The three backends on the paper's Table 3 components (MT-Bench, model Qwen: the largest components), at a
small design (n = 20, m = 2, K = 5) and the paper's design (n = 80, m = 10, K = 5), each balanced, with 10%
of judge calls missing completely at random, with scores cut to the 1..10 scale (ordinal), and with a scenario
x judge interaction of variance 0.5. Judges are drawn from a population in every replicate, so that both
judge_panel (the replicate's own mean(gamma^2)) and judge_population have a truth.

Run:  .venv/bin/python benchmarks/reference_study.py [--reps 400] [--bayes-reps 100] [--jobs 2]

anova and REML run in one study (paired, ``--reps`` replicates); Bayes in a second study of ``--bayes-reps``
replicates with the same seed, so its first replicates are the same data sets as theirs.
"""

from __future__ import annotations

import argparse
import datetime as dt
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
MISSPECS = {"balanced": {}, "10% MCAR": {"mcar": 0.1}, "ordinal 1..10": {"ordinal": 10},
            "scenario x judge": {"scenario_judge": 0.5}}
SIZES = {"small": (20, 2, 5), "paper": (80, 10, 5)}
BAYES = ("bayes", {"draws": 500, "tune": 500, "chains": 2, "cores": 1})


def _designs() -> list[cj.Design]:
    out = []
    for size, (n, m, k) in SIZES.items():
        for name, spec in MISSPECS.items():
            out.append(cj.Design(n=n, m=m, k=k, misspec=spec, label=f"{size} (n={n}, m={m}), {name}"))
    return out


def _cov(row: pd.Series) -> str:
    if math.isnan(row["coverage"]):
        return "-"
    flag = " **low**" if row["coverage"] < 0.95 - 3 * row["coverage_mcse"] - 1e-12 else ""
    return f"{row['coverage']:.3f} ± {row['coverage_mcse']:.3f}{flag}"


def _bias(row: pd.Series) -> str:
    if math.isnan(row["bias"]):
        return "-"
    rel = row["bias"] / row["truth"] if row["truth"] else math.nan
    return f"{row['bias']:+.3g} ({rel:+.0%})" if not math.isnan(rel) and row["component"] != "mu" else f"{row['bias']:+.3g}"


def _matrix(summary: pd.DataFrame, cell) -> str:
    s = summary.copy()
    s["value"] = s.apply(cell, axis=1)
    t = s.pivot_table(index=["design", "component"], columns="method", values="value", aggfunc="first", sort=False)
    t = t.reset_index()
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
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    truth = cj.Truth.table3(["Qwen"], judges="population")
    designs = _designs()
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    freq = cj.simulation_study(truth, designs, [("anova", {"incomplete": "drop"}), "reml"], args.reps,
                               seed=args.seed, jobs=args.jobs)
    t1 = time.perf_counter()
    bayes = cj.simulation_study(truth, designs, [BAYES], args.bayes_reps, seed=args.seed, jobs=args.jobs)
    t2 = time.perf_counter()
    summary = pd.concat([freq.summary, bayes.summary], ignore_index=True)
    order = {d.label: i for i, d in enumerate(designs)}
    summary = summary.sort_values("design", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)
    low = summary[summary["coverage"] < 0.95 - 3 * summary["coverage_mcse"] - 1e-12]
    fail = summary[summary["failure_rate"] > 0].drop_duplicates(["design", "method"])
    low_lines = [f"- {r.method}, {r.component}, {r.design}: {r.coverage:.3f} ± {r.coverage_mcse:.3f}"
                 for r in low.itertuples()] or ["- none"]
    fail_lines = [f"- {r.method}, {r.design}: {r.failure_rate:.0%} of fits failed"
                  for r in fail.itertuples()] or ["- none"]
    secs = summary.drop_duplicates(["design", "method"]).assign(component="all")
    text = PAGE.format(
        reps=args.reps, bayes_reps=args.bayes_reps, jobs=args.jobs, seed=args.seed,
        minutes=(t2 - t0) / 60, freq_min=(t1 - t0) / 60, bayes_min=(t2 - t1) / 60, load=load,
        date=dt.date.today().isoformat(), machine=f"{platform.machine()}, {os.cpu_count()} cores",
        bayes_opts=", ".join(f"{k}={v}" for k, v in BAYES[1].items()),
        coverage=_matrix(summary, _cov), bias=_matrix(summary, _bias),
        low="\n".join(low_lines), fail="\n".join(fail_lines),
        seconds=_matrix(secs, lambda r: f"{r['seconds_per_fit']:.3f}"),
        full=_full_markdown(summary),
    )
    OUT.write_text(text, encoding="utf-8")
    _figure(summary)
    print(f"wrote {OUT} and {FIGURE} in {(t2 - t0) / 60:.1f} min")


def _figure(summary: pd.DataFrame) -> None:
    """The coverage of every method, design and component with Monte Carlo bands (cj.plots.coverage_plot)."""
    import matplotlib

    matplotlib.use("Agg")
    cj.plots.set_style()
    study = cj.StudyResult(summary=summary, replicates=pd.DataFrame(), settings={})
    fig = cj.plots.coverage_plot(study)
    fig.savefig(FIGURE, dpi=110, bbox_inches="tight")


def _full_markdown(summary: pd.DataFrame) -> str:
    return cj.StudyResult(summary=summary, replicates=pd.DataFrame(), settings={}).as_markdown()


PAGE = """# Reference simulation study

This page is generated by `benchmarks/reference_study.py` (do not edit it by hand). It runs
`cj.simulation_study` on the paper's Table 3 components for MT-Bench model **Qwen** (scenario 1.530,
generation 0.266, judge_panel 0.947, residual 1.486, mu 7.13), with the judges drawn afresh from a population
in every replicate (`judges="population"`, judge_population = 0.947 x 5/4), so that both judge rows have a
truth: judge_panel is the replicate's own mean(gamma^2), judge_population the population variance.

- Designs: *small* (n = 20, m = 2, K = 5) and *paper* (n = 80, m = 10, K = 5), each **balanced**, with
  **10% MCAR** missing judge calls, with scores rounded and cut to **1..10** (ordinal; the latent truth is
  compared with estimates on the score scale), and with a **scenario x judge** interaction of variance 0.5
  (a term the model does not have; the truth is the model's components).
- Methods: `("anova", {{"incomplete": "drop"}})` (method of moments, complete cells only) and `reml`
  (profile-likelihood intervals) on the same {reps} replicates per design (paired); `bayes` ({bayes_opts})
  on {bayes_reps} replicates per design with the same seed, i.e. on the first {bayes_reps} of the same data
  sets. Intervals are 95%.
- Size and time: this run took {minutes:.1f} min ({freq_min:.1f} min anova + REML, {bayes_min:.1f} min
  Bayes) with `jobs={jobs}` on a shared {machine} (load average {load:.1f} at the start), seed {seed},
  {date}. The Monte Carlo SE of a 95% coverage is about 0.011 at {reps} replicates and 0.022 at {bayes_reps};
  raise `--reps` for finer answers.

Reproduce: `python benchmarks/reference_study.py --reps {reps} --bayes-reps {bayes_reps} --jobs {jobs}`.

## Which estimator and which interval to trust where

{guidance}

Coverage more than 3 Monte Carlo SEs below 95% in this run (flagged **low** in the table):

{low}

Designs where fits failed (recorded, never fatal; see `StudyResult.replicates["error"]`):

{fail}

## Coverage of 95% intervals (estimate ± Monte Carlo SE)

![Coverage of every method, design and component, with +-2 Monte Carlo SE and the nominal band](figures/study_coverage.png)

{coverage}

## Bias (relative to the truth)

{bias}

## Seconds per fit

{seconds}

## Speed

Measured with `python benchmarks/bench_study.py` on this 2-core machine while other jobs shared it (the load
average, printed per line, was 4 to 8, so a study had well under one core to itself):

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

GUIDANCE = """Read the tables below with their Monte Carlo SEs (about 0.011 on a coverage at 400 replicates, 0.022 at 100).

- **Balanced data, the paper's model holds: use `anova`.** anova and REML give the same point estimates (equal
  to 1e-6 on every interior fit, a tested property) and both intervals cover 93-97% for every component at
  both sizes, at a fraction of REML's cost. Bias is within a few Monte Carlo SEs of 0 for every component.
- **Missing judge calls (10% MCAR): use `reml`.** With m > 1, `anova(incomplete="drop")` failed in every
  replicate (dropping incomplete cells leaves scenarios with different numbers of generations, which the
  ANOVA cannot take; with m = 1 it would drop whole scenarios). REML stays unbiased and covers 93-96%;
  its judge_population interval is at the low edge at n = 20 (0.922 ± 0.013).
- **judge_population (judges as a random sample) is weakly determined with K = 5**: 4 degrees of freedom,
  RMSE about 0.86 on a truth of 1.18 and intervals 5 to 9 units wide, whatever the backend. The intervals are
  honest (93-97%) but say little; REML's profile interval is the narrowest (5.5-6.5 wide against 7.8-9.0 for
  anova's MLS). For statements about the judges you used, use judge_panel, which is estimated well
  (coverage 94-97%). In an exploratory run with K = 4 (3 degrees of freedom, n = 20, m = 2, 400 replicates)
  REML's judge_population interval under-covered: 0.912 ± 0.014.
- **Bayes point estimates are posterior means, and for variances they are biased upwards**: judge_population
  about doubles its truth (+86% to +112% in every design: the posterior of a variance with 4 degrees of
  freedom is right-skewed), scenario and generation are 11-47% high at n = 20 and nearly unbiased at n = 80.
  Its credible intervals covered within Monte Carlo error in the balanced and MCAR designs (100 replicates,
  2 chains x 500 draws). Use its intervals, or the median of `fit.draws`, rather than the mean for small
  variances.
- **Ordinal scores (1..10): no Gaussian backend is right, and larger designs make it worse.** Rounding and
  the ceiling at 10 (Qwen's mean is 7.1) shrink every variance by 5-18% and mu by about 0.08. At n = 20 the
  wide intervals hide it (only judge_panel under-covers, 0.85), but at the paper's design intervals tighten
  around the biased values: judge_panel covers 0.25-0.28, residual 0.53, generation 0.70, scenario 0.84-0.90,
  mu 0.91. On bounded scores, read the components as a description of the score scale, not of the latent
  model, and compare with `("bayes", {{"likelihood": "ordinal"}})` (latent scale; not run in this reference
  study because of its cost) in a study of your own.
- **A scenario x judge interaction (variance 0.5) breaks residual and generation.** The model has no such term,
  so the interaction ends in the residual (+0.49, +33%) and, at m = 10, drains generation (-37%): residual
  coverage falls to 0.25-0.28 at n = 20 and to 0 at the paper's design, generation to 0.08-0.17, judge_panel
  to 0.68-0.71. mu, scenario and judge_population stay fine. If judges disagree about which scenarios are
  hard, do not trust generation and residual from any of the three backends."""

PAGE = PAGE.replace("{guidance}", GUIDANCE)

if __name__ == "__main__":
    main()
