"""Benchmark the Bayesian ordinal model (``estimate(..., method="bayes", likelihood="ordinal")``) on 4,000 rows.

Goal (issue 22): 4,000 rows in under 10 s, so that the ordinal model fits in the reference study and in
``simulation_study``. Data: the cumulative-logit model of record (``simulate_ordinal_scores``): 200 scenarios x
m = 4 generations x K = 5 judges, latent scenario variance 1, generation variance 0.3, judge offsets with panel
variance 0.16 (``panel_offsets(5, 0.4)``), and either a 1-5 scale with a ceiling (cutpoints -2.5, -1.2, 0, 0.6:
about 40% of scores at 5) or binary verdicts (one cutpoint, 0.3); and real ratings, MentalAlign's Empathy
criterion for one model (claude-3.5-haiku; 1,000 scenarios x 4 LLM judges, one generation, 3,999 rows, 1-5 with
most scores at 5).

Both links (logit, probit) on each table; the data are logit, so the probit fit is the same model on its own
latent scale (variances about 1/1.7^2 of the logit ones). For each table, link and sampler setting, in one warm
process (numba's compiled log density loaded first): the wall
time of ``estimate``, the sampling time alone, the smallest bulk and tail ESS over the free parameters and
components (``diagnostics['ess_bulk_min']``), the ESS per second of the worst variable, max r_hat and
divergences; and the cost of one evaluation of the log density with its gradient, with the mean number of
leapfrog steps per draw (the two factors of the sampling time).

    .venv/bin/python benchmarks/bench_bayes_ordinal.py                 # all three tables and both links, every setting
    .venv/bin/python benchmarks/bench_bayes_ordinal.py --quick         # the likert table, logit, defaults only

The machine is shared (2 cores, other workers): wall times vary by a factor up to 2 between runs; the ESS per
second and steps per draw are the stable figures.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

#: name -> (draws, tune, chains). "default" is estimate()'s (tune None: 500 for the ordinal model); "lean" keeps
#: the 4 chains (r_hat needs them) with fewer draws and nutpie's own default tuning length (300); "tune1000" is
#: the Gaussian model's tuning length, to show that the ordinal model does not need it.
SETTINGS = {"default": (1000, None, 4), "lean": (500, 300, 4), "tune1000": (1000, 1000, 4)}


def table(kind: str, seed: int = 0):
    if kind == "mentalalign":                  # real ratings: one model's Empathy, LLM judges only (m = 1)
        import cjstats as cj

        df = cj.datasets.load("mentalalign").to_frame()
        df = df[(df["criterion"] == "Empathy") & (df["model"] == "claude-3.5-haiku")]
        return df[~df["judge"].astype(str).str.contains("human", case=False)].drop(columns="criterion")
    from cjstats.studies.simulate import panel_offsets, simulate_ordinal_scores

    cuts = np.array([0.3]) if kind == "binary" else np.array([-2.5, -1.2, 0.0, 0.6])
    df = simulate_ordinal_scores(200, 4, 5, s2a=1.0, s2b=0.3, gamma=panel_offsets(5, 0.4), cuts=cuts, seed=seed)
    if kind == "binary":
        df["score"] = df["score"] - 1
    return df


def eval_cost(df, link: str, repeats: int = 2000) -> float:
    """Microseconds per call of the log density with its gradient, as nutpie's threads call it: the compiled C
    callback (:mod:`cjstats.estimators.bayes.native`) through ctypes; best of 3 rounds."""
    import ctypes

    import cjstats as cj
    from cjstats.estimators.bayes import ORDINAL_PRIORS
    from cjstats.estimators.bayes.native import native_model
    from cjstats.estimators.bayes.ordinal import OrdinalDensity, ordinal_data

    g = next(iter(cj.read_scores(df).groups()))
    dens = OrdinalDensity(ordinal_data(g), dict(ORDINAL_PRIORS), link=link)
    names = dens.expanded_names()
    x = dens.initial_point(np.random.default_rng(0))
    probe = dens.expand(x)
    model = native_model(dens, names=names, shapes=[tuple(np.shape(probe[nm])) for nm in names], coords={},
                         dims={}, init=None)
    ptr = ctypes.POINTER(ctypes.c_double)
    out, lp = np.zeros_like(x), np.zeros(1)
    args = (dens.ndim, x.ctypes.data_as(ptr), out.ctypes.data_as(ptr), lp.ctypes.data_as(ptr),
            ctypes.c_void_p(model.user_data.ctypes.data))
    f = model.compiled_logp_func.ctypes
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeats):
            f(*args)
        best = min(best, (time.perf_counter() - t0) / repeats * 1e6)
    return best


def run(kind: str, setting: str, link: str) -> dict:
    import cjstats as cj

    draws, tune, chains = SETTINGS[setting]
    df = table(kind)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = cj.estimate(df, "bayes", likelihood="ordinal", link=link, seed=1, draws=draws, tune=tune,
                          chains=chains)
    tune = fit.provenance["options"]["tune"]
    wall = time.perf_counter() - t0
    c = fit.components.set_index("component")
    d = next(iter(fit.diagnostics.values()))
    steps = next(iter(fit.posterior.values())).sample_stats["n_steps"].values
    return {"table": kind, "link": link, "setting": setting, "rows": len(df), "draws": draws, "tune": tune, "chains": chains,
            "wall_s": round(wall, 1), "sampling_s": round(float(d.get("seconds", np.nan)), 1),
            "ess_bulk_min": round(d["ess_bulk_min"]), "ess_tail_min": round(d["ess_tail_min"]),
            "ess_per_s": round(min(d["ess_bulk_min"], d["ess_tail_min"]) / wall, 1),
            "r_hat_max": round(d["r_hat_max"], 3), "worst": d["r_hat_worst"], "divergences": d["divergences"],
            "steps_per_draw": round(float(np.mean(steps)), 1),
            "scenario": [round(float(c.loc["scenario", k]), 3) for k in ("estimate", "lower", "upper")]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tables", default="likert,binary,mentalalign",
                    help="comma-separated: likert, binary, mentalalign (real ratings, 3,999 rows)")
    ap.add_argument("--settings", default=",".join(SETTINGS), help="comma-separated: " + ", ".join(SETTINGS))
    args = ap.parse_args()
    kinds = ["likert"] if args.quick else args.tables.split(",")
    settings = ["default"] if args.quick else args.settings.split(",")
    links = ["logit"] if args.quick else ["logit", "probit"]
    import cjstats as cj  # noqa: F401 - import time is not the fit's

    run("likert", "lean", "logit")                          # warm-up: numba cache, nutpie, arviz imports
    for kind in kinds:
        for link in links:
            print(json.dumps({"table": kind, "link": link, "eval_us": round(eval_cost(table(kind), link), 1)}),
                  flush=True)
            for setting in settings:
                print(json.dumps(run(kind, setting, link)), flush=True)


if __name__ == "__main__":
    main()
