"""Coverage of the joint REML fit's intervals (issue: "right on real data"), judges drawn afresh per replicate.

    PYTHONPATH=. .venv/bin/python benchmarks/coverage_joint.py [--replicates 1000] [--jobs 2] [--design NAME ...]

Each replicate draws a table from the joint model (``cjstats.studies.simulate_joint.simulate_joint``) with new judge
offsets gamma_l ~ N(0, s2_judge) and new judge x model effects (gamma p)_pl ~ N(0, s2_judge_model), fits it with
``cj.fit_joint(method="reml")`` (``model_scenario="per_model"`` for the per-model designs) and records whether each
95% interval covers its true value:

- ``scenario``, ``model_scenario`` (per model for the per-model designs), ``generation``, ``residual``: the
  planted variances (profile-likelihood intervals);
- ``judge_model`` (population view) and ``judge_population``: s2_judge_model and s2_judge (MLS intervals);
- ``difference``: every pair's paired difference (panel view), whose truth is mu_a - mu_b + mean_l (gamma p)_al -
  (gamma p)_bl for the judges drawn.

Monte Carlo SE of a 95% coverage from R replicates: sqrt(0.95 x 0.05 / R) (0.69 points at R = 1000). The test
``tests/comparisons/test_joint_coverage.py`` runs a few designs with fewer replicates; this script gives the
figures in ``docs/comparisons.md``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import cjstats as cj
from cjstats.studies.simulate_joint import simulate_joint

DESIGNS = {
    # the collapse case of the issue: 3 models x 20 scenarios x 4 judges, one generation
    "small_m1": dict(p=3, n=20, m=1, k=4, s2=dict(scenario=0.0126, model_scenario=0.0438, generation=0.0,
                                                  residual=0.2613), judge=0.05, judge_model=0.01, missing=0.0),
    # the simulation: 4 models x 40 scenarios x 4 judges, m = 2
    "balanced_m2": dict(p=4, n=40, m=2, k=4, s2=dict(scenario=0.05, model_scenario=0.05, generation=0.05,
                                                     residual=0.3), judge=0.05, judge_model=0.01, missing=0.0),
    "missing_m2": dict(p=4, n=40, m=2, k=4, s2=dict(scenario=0.05, model_scenario=0.05, generation=0.05,
                                                    residual=0.3), judge=0.05, judge_model=0.01, missing=0.15),
    # no generation variance: where REML stopped on the boundary in 97% of the fits
    "balanced_nogen": dict(p=4, n=40, m=2, k=4, s2=dict(scenario=0.05, model_scenario=0.05, generation=0.0,
                                                        residual=0.3), judge=0.05, judge_model=0.01, missing=0.0),
    # unequal model x scenario variances, fitted per model
    "per_model": dict(p=4, n=40, m=2, k=4, s2=dict(scenario=0.05, model_scenario=(0.02, 0.05, 0.1, 0.2),
                                                   generation=0.05, residual=0.3), judge=0.05, judge_model=0.01,
                      missing=0.1),
}


def _table(d: dict, rng: np.random.Generator):
    """One table of design ``d`` with new judges, and the truths that depend on the draw."""
    p, k = d["p"], d["k"]
    mu = np.linspace(0.0, 0.3, p)
    gamma = rng.normal(0.0, np.sqrt(d["judge"]), k)
    gp = rng.normal(0.0, np.sqrt(d["judge_model"]), (p, k))
    ms = np.broadcast_to(np.asarray(d["s2"]["model_scenario"], dtype=float), (p,))
    # per-model variances: draw with the largest and rescale each model's (alpha p) column afterwards
    df = simulate_joint(n=d["n"], m=d["m"], mu=mu, gamma=gamma, s2_scenario=d["s2"]["scenario"],
                        s2_model_scenario=0.0, s2_generation=d["s2"]["generation"],
                        s2_residual=d["s2"]["residual"], judge_model=gp, missing=d["missing"], rng=rng)
    ap = rng.normal(0.0, 1.0, (p, d["n"])) * np.sqrt(ms)[:, None]
    model_idx = df["model"].str[1:].astype(int).to_numpy()
    df["score"] = df["score"].to_numpy() + ap[model_idx, df["scenario"].to_numpy()]
    truth_mean = mu + gp.mean(axis=1)
    return df, truth_mean, ms


def one(args: tuple[str, int]) -> dict[str, list[bool]]:
    """Coverage indicators of one replicate of design ``name`` (seeded by ``seed``)."""
    name, seed = args
    d = DESIGNS[name]
    rng = np.random.default_rng(seed)
    df, truth_mean, ms = _table(d, rng)
    per_model = isinstance(d["s2"]["model_scenario"], tuple)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = cj.fit_joint(df, method="reml", model_scenario="per_model" if per_model else "pooled")
        cmp = cj.compare_models(df, method="reml", fit=fit)
    t = fit.components
    out: dict[str, list[bool]] = {}

    def hit(key: str, row, value: float) -> None:
        out.setdefault(key, []).append(bool(row["lower"] <= value <= row["upper"]))

    for comp in ("scenario", "generation", "residual"):
        if d["m"] == 1 and comp == "generation":
            continue
        row = t[(t.component == comp) & (t.view == "panel")].iloc[0]
        hit(comp, row, d["s2"][comp])
    ms_rows = t[(t.component == "model_scenario") & (t.view == "panel")]
    if per_model:
        for q in range(d["p"]):
            hit(f"model_scenario[m{q}]", ms_rows[ms_rows.model == f"m{q}"].iloc[0], ms[q])
    else:
        true_ms = ms[0] + (d["s2"]["generation"] if d["m"] == 1 else 0.0)
        hit("model_scenario", ms_rows.iloc[0], true_ms)
    hit("judge_model (random)", t[(t.component == "judge_model") & (t.view == "population")].iloc[0], d["judge_model"])
    hit("judge_population", t[t.component == "judge_population"].iloc[0], d["judge"])
    for r in cmp.differences.itertuples(index=False):
        a, b = int(r.model_a[1:]), int(r.model_b[1:])
        out.setdefault("difference", []).append(bool(r.lower <= truth_mean[a] - truth_mean[b] <= r.upper))
    out.setdefault("converged", []).append(bool(fit.diagnostics["converged"]))
    return out


def coverage(name: str, replicates: int, seed: int = 2026, jobs: int = 1) -> dict[str, tuple[float, int]]:
    """{estimand: (coverage, number of intervals)} over ``replicates`` tables of design ``name``."""
    args = [(name, seed + i) for i in range(replicates)]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as ex:
            results = list(ex.map(one, args, chunksize=8))
    else:
        results = [one(a) for a in args]
    pooled: dict[str, list[bool]] = {}
    for r in results:
        for key, v in r.items():
            pooled.setdefault(key, []).extend(v)
    return {key: (float(np.mean(v)), len(v)) for key, v in pooled.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--design", nargs="*", default=list(DESIGNS))
    a = ap.parse_args()
    mcse = np.sqrt(0.95 * 0.05 / a.replicates)
    print(f"{a.replicates} replicates per design; Monte Carlo SE of a 95% coverage {mcse:.4f}")
    for name in a.design:
        t0 = time.time()
        res = coverage(name, a.replicates, jobs=a.jobs)
        body = ", ".join(f"{key} {c:.3f}" for key, (c, _) in res.items())
        print(f"{name} ({time.time() - t0:.0f} s): {body}")


if __name__ == "__main__":
    main()
