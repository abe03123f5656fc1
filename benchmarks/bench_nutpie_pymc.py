"""Benchmark: the PyMC model of record compiled once by nutpie and reused across groups, against the
hand-written log densities that the Bayesian backend samples by default.

    .venv/bin/python benchmarks/bench_nutpie_pymc.py                 # 3 groups, 2 chains x 500 draws
    .venv/bin/python benchmarks/bench_nutpie_pymc.py --groups 3 --draws 1000 --chains 4

Both paths sample the same posterior (the joint model over mu, the log scales and gamma, with the random
effects integrated out; tests/estimators/test_bayes.py checks the densities equal). Timed:

- ``hand``: ``cj.estimate(..., method="bayes", sampler="nutpie", parametrisation="joint")`` per group (the
  hand-written density, compiled by numba once and cached on disk), and the default
  ``parametrisation="marginal"``;
- ``pymc+nutpie``: ``nutpie.compile_pymc_model(model, backend="numba")`` once on the first group, then
  ``compiled.with_data(...)`` for every further group (the statistics enter the PyMC model as ``pm.Data``)
  and ``nutpie.sample``. The JAX backend is timed when jax is installed.

Data: the paper's shape (n = 80 scenarios, m = 10 generations, K = 5 judges, Table 3 Qwen components), one
group per seed. Prior scales follow the first group's score SD for every group (a fixed graph; the backend
scales them per group), which does not change the cost.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings


def _data(seed: int):
    import cjstats as cj
    from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores

    c = TABLE3_MTBENCH["Qwen"]
    df = simulate_scores(n=80, m=10, k=5, s2_scenario=c["scenario"], s2_generation=c["generation"],
                         s2_residual=c["residual"], judge_offsets=panel_offsets(5, c["judge_panel"]), mu=c["mu"],
                         model="Qwen", seed=seed)
    return cj.read_scores(df)


def _pymc_model(st, pr, labels):
    """build_pymc_gaussian with the statistics as pm.Data, so one compiled model takes any group's data."""
    import pymc as pm
    import pytensor.tensor as pt

    from cjstats.estimators.bayes.gaussian import NU

    with pm.Model(coords={"judge": list(labels)}) as model:
        d = {name: pm.Data(name, getattr(st, name)) for name in
             ("sizes", "m_h", "v", "m_count", "b_w", "g_w", "cells_per_size")}
        ybar = pm.Data("ybar", st.ybar)
        ssw0 = pm.Data("ssw0", st.ssw0)
        n_within = pm.Data("n_within", float(st.n_obs - st.n_cells))
        mu = pm.Normal("mu", mu=ybar, sigma=pr.mu)
        s_a = pm.HalfStudentT("sigma_scenario", nu=NU, sigma=pr.sigma_scenario)
        s_b = pm.HalfStudentT("sigma_generation", nu=NU, sigma=pr.sigma_generation)
        s_e = pm.HalfStudentT("sigma_residual", nu=NU, sigma=pr.sigma_residual)
        s_g = pm.HalfStudentT("sigma_judge", nu=NU, sigma=pr.sigma_judge)
        gamma = pm.ZeroSumNormal("gamma", sigma=s_g, dims="judge")
        s2a, s2b, s2e = s_a**2, s_b**2, s_e**2
        beta = pt.concatenate([pt.ones(1), -(mu - ybar)[None], -gamma])
        dh = s2b + s2e / d["sizes"]
        eh = 1.0 / dh
        qh = pt.dot(pt.dot(d["m_h"], beta), beta)
        q = pt.dot(pt.dot(d["v"], beta), eh)
        w = pt.dot(d["m_count"], eh)
        u = 1.0 + s2a * w
        ssw = ssw0 - 2.0 * pt.dot(gamma, d["b_w"]) + pt.dot(gamma, pt.dot(d["g_w"], gamma))
        big_l = (n_within * pt.log(s2e) + ssw / s2e + pt.dot(d["cells_per_size"], pt.log(dh))
                 + pt.dot(qh, eh) + pt.sum(pt.log(u)) - s2a * pt.sum(q * q / u))
        pm.Potential("collapsed_loglik", -0.5 * big_l)
    return model


def _data_of(st) -> dict:
    return {"sizes": st.sizes, "m_h": st.m_h, "v": st.v, "m_count": st.m_count, "b_w": st.b_w, "g_w": st.g_w,
            "cells_per_size": st.cells_per_size, "ybar": st.ybar, "ssw0": st.ssw0,
            "n_within": float(st.n_obs - st.n_cells)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=3)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--chains", type=int, default=2)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import nutpie

    import cjstats as cj
    from cjstats.estimators.bayes import GAUSSIAN_PRIORS
    from cjstats.estimators.bayes.gaussian import GaussianPriors
    from cjstats.stats import build_stats

    tables = [_data(seed) for seed in range(args.groups)]
    out: dict = {"groups": args.groups, "draws": args.draws, "tune": args.tune, "chains": args.chains, "rows": len(tables[0])}
    kw = {"draws": args.draws, "tune": args.tune, "chains": args.chains, "cores": args.chains}
    cj.estimate(tables[0], "bayes", seed=0, **{**kw, "draws": 20, "tune": 20})       # numba cache warm
    cj.estimate(tables[0], "bayes", seed=0, parametrisation="joint", **{**kw, "draws": 20, "tune": 20})
    for par in ("marginal", "joint"):
        times = []
        for i, t in enumerate(tables):
            t0 = time.perf_counter()
            cj.estimate(t, "bayes", seed=i, parametrisation=par, **kw)
            times.append(time.perf_counter() - t0)
        out[f"hand_{par}_per_group_s"] = times
    units = [build_stats(t).units[0] for t in tables]
    sts = [u.for_gaussian() for u in units]
    sd = sts[0].sd
    pr = GaussianPriors(**{k: v * sd for k, v in GAUSSIAN_PRIORS.items()})
    backends = ["numba"]
    try:
        import jax  # noqa: F401
        backends.append("jax")
    except ImportError:
        out["jax"] = "not installed"
    for backend in backends:
        t0 = time.perf_counter()
        model = _pymc_model(sts[0], pr, units[0].judge_labels)
        compiled = nutpie.compile_pymc_model(model, backend=backend)
        out[f"pymc_{backend}_compile_s"] = time.perf_counter() - t0
        times = []
        for i, st in enumerate(sts):
            t0 = time.perf_counter()
            c = compiled if i == 0 else compiled.with_data(**_data_of(st))
            nutpie.sample(c, draws=args.draws, tune=args.tune, chains=args.chains, cores=args.chains, seed=i,
                          progress_bar=False)
            times.append(time.perf_counter() - t0)
        out[f"pymc_{backend}_sample_per_group_s"] = times
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
