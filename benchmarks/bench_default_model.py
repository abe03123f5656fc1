"""Benchmark the default per-model REML model (with the scenario x judge term) against the paper's model
(issue 34, first row); a script, not a test.

    .venv/bin/python benchmarks/bench_default_model.py            # cjstats only
    .venv/bin/python benchmarks/bench_default_model.py --lme4     # also lmer fit + profile of the same model

Data: 600 scenarios x 10 generations x 5 judges (m = 10, K = 5) from the model with the interaction
(s2_scenario 1, s2_generation 0.3, s2_scenario_judge 0.2, s2_residual 0.5, judge offsets), "unbalanced" with
15% of the judge calls dropped at random (25,479 rows: nearly every scenario its own design pattern) and
"balanced" (30,000 rows, one pattern). The table is read once (``read_scores``); the timed calls are
``cj.estimate(scores, method="reml", interval=...)`` with the default model (``scenario_judge`` fitted:
lmer(score ~ judge + (1|scenario) + (1|scenario:generation) + (1|scenario:judge))) and with
``scenario_judge=False`` (the paper's model), each with ``interval="none"`` (the fits) and ``"profile"`` (the
default: fits plus profile-likelihood intervals for every variance). Every figure is the median of
``--repeats`` warm runs in this one process, and the ratios (default / paper model) are what to compare
across machines: the machine is shared, so absolute times move with its load (each ratio is given on the wall
clock and, in parentheses, on this process's CPU time, which other processes move less). The default model is
timed with its REML core on both paths, the numba kernel (``cjstats[reml]`` brings numba; loaded up front here,
as a long process would) and the numpy fallback, in the same run. The one-off column is what a single call in a
new process (one CLI call) sees: ``--oneoff-repeats`` fresh processes per model, each timing its first
``cj.estimate`` after reading the table, on the numpy path (a new process does not load numba for one fit:
``KERNEL_AFTER``); the median of the default model over the median of the paper model. The last column counts
the default model's evaluations of its REML core (distinct values, gradients and Hessians) in one call.
lme4 is timed inside R around
``lmer`` (contr.sum, REML) and ``profile(fit, which = "theta_", signames = FALSE)`` of the same model.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import cjstats as cj
from cjstats.studies.simulate import simulate_scores

N_SCEN, M, K = 600, 10, 5
S2 = {"scenario": 1.0, "generation": 0.3, "scenario_judge": 0.2, "residual": 0.5}

R_SCRIPT = r"""
suppressPackageStartupMessages(library(lme4))
options(contrasts = c("contr.sum", "contr.poly"))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1]); reps <- as.integer(args[2])
d$judge <- factor(d$judge); d$scenario <- factor(d$scenario); d$generation <- factor(d$generation)
tf <- numeric(reps); tp <- numeric(reps)
for (i in seq_len(reps)) {
  tf[i] <- system.time(f <- lmer(score ~ judge + (1|scenario) + (1|scenario:generation) + (1|scenario:judge),
                                 data = d, REML = TRUE))[["elapsed"]]
  tp[i] <- system.time(p <- profile(f, which = "theta_", signames = FALSE))[["elapsed"]]
}
cat(median(tf), median(tp), format(REMLcrit(f), digits = 15), "\n")
"""


def make_table(balanced: bool, seed: int = 1) -> pd.DataFrame:
    """The benchmark table: the paper's model plus a scenario x judge effect; 15% of calls dropped unless
    ``balanced``."""
    df = simulate_scores(n=N_SCEN, m=M, k=K, s2_scenario=S2["scenario"], s2_generation=S2["generation"],
                         s2_residual=S2["residual"], judge_offsets=[0.0, 0.2, -0.1, 0.3, -0.4],
                         missing=0.0 if balanced else 0.15, seed=seed)
    rng = np.random.default_rng(seed + 4)
    sj = rng.normal(0.0, np.sqrt(S2["scenario_judge"]), (N_SCEN, K))
    judge = df["judge"].str.removeprefix("judge_").astype(int).to_numpy()
    df["score"] = df["score"] + sj[df["scenario"].to_numpy(), judge]
    return df


_LOADED: dict = {}


def use_compiled_core(compiled: bool) -> bool:
    """Switch the scenario x judge REML core between the numba kernel and the numpy path; False when numba is
    not importable (then only the numpy path is timed). The kernel is loaded once and kept (a new dispatcher
    would load it from the disk cache again at its first call)."""
    from cjstats._jit import _COMPILED
    from cjstats.estimators.reml import scenario_judge as sjm

    if "kernel" not in _LOADED:
        _COMPILED.pop("sj_reml", None)
        _LOADED["kernel"] = sjm._kernel()
    _COMPILED["sj_reml"] = _LOADED["kernel"] if compiled else None
    return _LOADED["kernel"] is not None if compiled else True


def median_times(calls: dict, repeats: int) -> dict:
    """Median wall-clock and CPU (this process) seconds of each of ``calls`` (name -> (set-up, call)), over
    ``repeats`` rounds that run every call once in turn, so that a change of the machine's load falls on all of
    them alike."""
    times: dict = {name: ([], []) for name in calls}
    for _ in range(repeats):
        for name, (setup, fn) in calls.items():
            setup()
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            times[name][0].append(time.perf_counter() - t0)
            times[name][1].append(time.process_time() - c0)
    return {name: (statistics.median(w), statistics.median(c)) for name, (w, c) in times.items()}


def count_evaluations(scores, interval: str) -> str:
    """Evaluations of the default model's REML core in one call: distinct values / gradients / Hessians."""
    from cjstats.estimators.reml import scenario_judge as sjm

    counts = {"_value": 0, "_grad": 0, "_hess": 0}
    saved = {name: getattr(sjm.SJEvaluator, name) for name in counts}

    def counting(name):
        def fn(self, *args):
            counts[name] += 1
            return saved[name](self, *args)
        return fn

    try:
        for name in counts:
            setattr(sjm.SJEvaluator, name, counting(name))
        cj.estimate(scores, method="reml", interval=interval)
    finally:
        for name, fn in saved.items():
            setattr(sjm.SJEvaluator, name, fn)
    return "/".join(str(counts[n]) for n in ("_value", "_grad", "_hess"))


def one_off(balanced: bool, interval: str, paper: bool) -> None:
    """The first ``cj.estimate`` of a new process (run by :func:`time_one_off`): prints wall and CPU seconds."""
    from cjstats._jit import _COMPILED

    scores = cj.read_scores(make_table(balanced))
    t0, c0 = time.perf_counter(), time.process_time()
    cj.estimate(scores, method="reml", interval=interval, **({"scenario_judge": False} if paper else {}))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if _COMPILED.get("sj_reml") is not None:
        sys.exit("the one-off fit loaded the numba kernel")
    print(wall, cpu)


def time_one_off(balanced: bool, interval: str, repeats: int) -> tuple[float, float]:
    """Default / paper model ratio of one-off calls (wall, CPU): medians over ``repeats`` fresh processes each."""
    med = {}
    for paper in (False, True):
        runs = []
        for _ in range(repeats):
            cmd = [sys.executable, __file__, "--one-off", "balanced" if balanced else "unbalanced", interval,
                   "paper" if paper else "default"]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
            runs.append((float(out[0]), float(out[1])))
        med[paper] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
    return med[False][0] / med[True][0], med[False][1] / med[True][1]


def time_lme4(df: pd.DataFrame, repeats: int) -> tuple[float, float, float]:
    """lmer fit and profile times (medians) and REMLcrit of the default model, via Rscript."""
    with tempfile.TemporaryDirectory() as tmp:
        csv, script = Path(tmp) / "d.csv", Path(tmp) / "fit.R"
        df.to_csv(csv, index=False)
        script.write_text(R_SCRIPT)
        out = subprocess.run(["Rscript", str(script), str(csv), str(repeats)], capture_output=True, text=True,
                             check=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lme4", action="store_true", help="time lmer fit + profile of the default model too")
    ap.add_argument("--repeats", type=int, default=7, help="warm runs per timing (median reported)")
    ap.add_argument("--lme4-repeats", type=int, default=1, help="lmer fit + profile runs (the profile takes ~45 s)")
    ap.add_argument("--oneoff-repeats", type=int, default=3,
                    help="fresh processes per model for the one-off ratio (0: skip it)")
    ap.add_argument("--one-off", nargs=3, metavar=("DESIGN", "INTERVAL", "MODEL"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one_off:
        one_off(args.one_off[0] == "balanced", args.one_off[1], args.one_off[2] == "paper")
        return
    if args.lme4 and shutil.which("Rscript") is None:
        sys.exit("Rscript not found: install r-base-core and r-cran-lme4, or drop --lme4.")
    has_kernel = use_compiled_core(True)
    print("| design | rows | interval | default (scenario_judge) s, numba core | default s, numpy core | paper model s "
          "| ratio numba core (cpu) | ratio numpy core (cpu) | ratio one-off: new process, numpy core (cpu) "
          "| core evaluations value/gradient/Hessian |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for balanced in (False, True):
        df = make_table(balanced)
        scores = cj.read_scores(df)
        cj.estimate(scores, method="reml", interval="none")            # warm-up (imports, caches)
        cj.estimate(scores, method="reml", interval="none", scenario_judge=False)
        for interval in ("none", "profile"):
            use_compiled_core(False)
            evals = count_evaluations(scores, interval)
            fit = cj.estimate(scores, method="reml", interval=interval)

            def default(s=scores, i=interval):
                return cj.estimate(s, method="reml", interval=i)

            def paper(s=scores, i=interval):
                return cj.estimate(s, method="reml", interval=i, scenario_judge=False)

            med = median_times({"numpy": (lambda: use_compiled_core(False), default),
                                "kernel": (lambda: use_compiled_core(has_kernel), default),
                                "paper": (lambda: None, paper)}, args.repeats)
            (t_np, c_np), (t_def, c_def), (t_pap, c_pap) = med["numpy"], med["kernel"], med["paper"]
            t_k = f"{t_def:.3g}" if has_kernel else "(no numba)"
            r_k = f"{t_def / t_pap:.2f} ({c_def / c_pap:.2f})" if has_kernel else "-"
            r_one = "-"
            if args.oneoff_repeats > 0:
                r_wall, r_cpu = time_one_off(balanced, interval, args.oneoff_repeats)
                r_one = f"{r_wall:.2f} ({r_cpu:.2f})"
            print(f"| {'balanced' if balanced else 'unbalanced'} | {len(df):,} | {interval} | {t_k} | {t_np:.3g} | "
                  f"{t_pap:.3g} | {r_k} | {t_np / t_pap:.2f} ({c_np / c_pap:.2f}) | {r_one} | {evals} |", flush=True)
            if interval == "profile":
                t_prof_def = t_def
        if args.lme4:
            t_f, t_p, crit_l = time_lme4(df, args.lme4_repeats)
            crit = fit.diagnostics[next(iter(fit.diagnostics))]["reml_criterion"]
            print(f"| {'balanced' if balanced else 'unbalanced'} | {len(df):,} | lme4 | fit {t_f:.3g} s, "
                  f"profile {t_p:.3g} s | cjstats default + profile intervals {t_prof_def:.3g} s | "
                  f"lme4 fit + profile / cjstats = {(t_f + t_p) / t_prof_def:.0f}x | criterion "
                  f"{crit - crit_l:+.2e} vs REMLcrit |", flush=True)


if __name__ == "__main__":
    main()
