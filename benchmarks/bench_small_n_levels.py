"""Levels and coverage at small n (issue 31): the threshold test, the model_scenario LR test, ordinal ``mu``.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_small_n_levels.py [--reps 400] [--jobs 2] [--quick]
        [--boot-reps 200] [--n-boot 19] [--parts threshold threshold_boot model_scenario mu] [--out small_n_levels.json]

- ``threshold``: :func:`cjstats.estimators.ordinal_ml.threshold_test` under shared thresholds (4 judges, 5
  categories, cutpoints (-1.2, -0.4, 0.4, 1.2), offsets (-0.3, 0, 0.1, 0.2), s2_a = 0.8, one generation; probit
  and logit; n = 20 and 80): rejection rate at 5% of the chi2 reference (``--reps``), and of the bootstrap
  reference (``--boot-reps`` tables, each with ``--n-boot`` bootstrap tables; probit, n = 20); also counts the
  replicates that emitted a RuntimeWarning.
- ``model_scenario``: the pooled vs per-model REML LR test (``fit_joint``'s ``tests["model_scenario"]``) on
  tables of the pooled model (P = 3 models x 4 judges, s2 scenario 0.5, residual 1; ``MS_DESIGNS``: m = 2 with
  model x scenario 0.2 and generation 0.1, and m = 1 with model x scenario 0.05, where per-model variances sit
  at 0 often; n = 20 and 80): chi2 (``--reps``) and bootstrap (``--boot-reps`` x ``--n-boot``) levels.
- ``mu``: coverage of the 95% ``mu`` interval of ``cj.estimate(..., method="ordinal")`` on probit tables (the
  design of ``threshold``), truth = the panel's expected score for a new scenario at the true parameters
  (:func:`cjstats.estimators.bayes.ordinal.expected_score`).

A bootstrap test with B tables is a Monte Carlo test: its level is exact for any B when the bootstrap null is
the true one, so a small ``--n-boot`` measures its level honestly (only its power falls). Monte Carlo SE of a
level a from R replicates: sqrt(a (1 - a) / R). Prints a table and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

GAMMA = (-0.3, 0.0, 0.1, 0.2)
CUTS = (-1.2, -0.4, 0.4, 1.2)
S2A = 0.8
JOINT = dict(mu=[0.0, 0.3, 0.1], gamma=[-0.2, 0.0, 0.1, 0.2], s2_scenario=0.5, s2_residual=1.0)
#: model_scenario designs: (m, s2_model_scenario, s2_generation); the second puts per-model variances at 0 often
MS_DESIGNS = {"m2 ms0.2": (2, 0.2, 0.1), "m1 ms0.05": (1, 0.05, 0.0)}


def ordinal_table(n: int, link: str, seed: int):
    from ordinal_sim import simulate_latent

    return simulate_latent(n, GAMMA, CUTS, S2A, link=link, seed=seed)


def joint_table(n: int, seed: int, design: str = "m2 ms0.2"):
    from cjstats.studies.simulate_joint import simulate_joint

    m, ms, gen = MS_DESIGNS[design]
    return simulate_joint(n=n, m=m, s2_model_scenario=ms, s2_generation=gen, rng=seed, **JOINT)


def true_mu(link: str) -> float:
    from cjstats.estimators.bayes.ordinal import expected_score

    g = np.asarray(GAMMA)
    return float(expected_score(np.asarray(CUTS)[None, :], np.arange(1.0, 6.0), g[None, :], np.array([S2A]),
                                link=link, nodes=80)[0])


def _threshold(args: tuple) -> dict:
    from cjstats.estimators.ordinal_ml import threshold_test
    from cjstats.exceptions import CjstatsWarning

    n, link, seed, reference, n_boot = args
    d = ordinal_table(n, link, seed)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", CjstatsWarning)
        r = threshold_test(d, link=link, reference=reference, n_boot=n_boot, seed=seed)[0]
    return {"p": r["p_value"], "lr": r["statistic"], "warned": any(issubclass(x.category, RuntimeWarning) for x in w)}


def _model_scenario(args: tuple) -> dict:
    from cjstats.estimators.joint.reml import model_scenario_test

    n, seed, reference, n_boot, design = args
    r = model_scenario_test(joint_table(n, seed, design), reference=reference, n_boot=n_boot, seed=seed)
    return {"p": r["p_value"], "lr": r["statistic"], "warned": False}


def _mu(args: tuple) -> dict:
    import cjstats as cj

    n, seed, truth = args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = cj.estimate(ordinal_table(n, "probit", seed), method="ordinal", link="probit").components
    row = c[c.component == "mu"].iloc[0]
    return {"covered": bool(row.lower <= truth <= row.upper), "width": float(row.upper - row.lower)}


def _level(res: list[dict]) -> dict:
    p = np.array([r["p"] for r in res], dtype=float)
    ok = np.isfinite(p)
    a = float(np.mean(p[ok] <= 0.05 + 1e-12))     # a Monte Carlo p-value k/(B+1) rejects at <= 0.05
    return {"level": a, "mc_se": math.sqrt(0.05 * 0.95 / ok.sum()), "reps": int(ok.sum()),
            "mean_lr": float(np.mean([r["lr"] for r in res])),
            "warned": int(sum(r["warned"] for r in res)), "p_values": p.tolist()}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--boot-reps", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=19, help="(n_boot + 1) x 0.05 an integer: 19, 39, 199")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="40 replicates, 20 bootstrap tables: a smoke run")
    ap.add_argument("--parts", nargs="+", default=["threshold", "threshold_boot", "model_scenario", "mu"])
    ap.add_argument("--out", default="small_n_levels.json")
    a = ap.parse_args(argv)
    if a.quick:
        a.reps, a.boot_reps, a.n_boot = 40, 20, 19
    out: dict = {"settings": vars(a).copy(), "rows": []}
    t0 = time.time()
    with ProcessPoolExecutor(a.jobs) as ex:
        def run(fn, jobs):
            return list(ex.map(fn, jobs, chunksize=max(1, len(jobs) // (8 * a.jobs))))

        if "threshold" in a.parts:
            for n in (20, 80):
                for link in ("probit", "logit"):
                    r = _level(run(_threshold, [(n, link, 10_000 + i, "chi2", 0) for i in range(a.reps)]))
                    out["rows"].append({"part": "threshold", "n": n, "link": link, "reference": "chi2", **r})
        if "threshold_boot" in a.parts:
            r = _level(run(_threshold, [(20, "probit", 20_000 + i, "bootstrap", a.n_boot)
                                        for i in range(a.boot_reps)]))
            out["rows"].append({"part": "threshold", "n": 20, "link": "probit",
                                "reference": f"bootstrap ({a.n_boot})", **r})
        if "model_scenario" in a.parts:
            for design in MS_DESIGNS:
                for n in (20, 80):
                    r = _level(run(_model_scenario, [(n, 30_000 + i, "chi2", 1, design) for i in range(a.reps)]))
                    out["rows"].append({"part": "model_scenario", "n": n, "link": design, "reference": "chi2", **r})
                    r = _level(run(_model_scenario, [(n, 40_000 + i, "bootstrap", a.n_boot, design)
                                                     for i in range(a.boot_reps)]))
                    out["rows"].append({"part": "model_scenario", "n": n, "link": design,
                                        "reference": f"bootstrap ({a.n_boot})", **r})
        if "mu" in a.parts:
            truth = true_mu("probit")
            for n in (20, 80):
                res = run(_mu, [(n, 50_000 + i, truth) for i in range(a.reps)])
                cov = float(np.mean([r["covered"] for r in res]))
                out["rows"].append({"part": "mu coverage", "n": n, "link": "probit", "reference": "95% interval",
                                    "level": cov, "mc_se": math.sqrt(0.95 * 0.05 / len(res)), "reps": len(res),
                                    "mean_width": float(np.mean([r["width"] for r in res]))})
    out["seconds"] = time.time() - t0
    print(f"{'part':<15}{'n':>4} {'link':<10}{'reference':<16}{'rate':>7}{'MC SE':>7}{'reps':>6}{'warned':>8}")
    for r in out["rows"]:
        print(f"{r['part']:<15}{r['n']:>4} {r['link']:<10}{r['reference']:<16}{r['level']:>7.3f}{r['mc_se']:>7.3f}"
              f"{r['reps']:>6}{r.get('warned', ''):>8}")
    print(f"{out['seconds']:.0f} s")
    Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
