"""Per-evaluation cost of the two Bayes marginal densities' compiled kernels (a script, not a test).

    .venv/bin/python benchmarks/bench_bayes_kernels.py            # 4,000 rows, the data of bench_bayes_default.py

Times the numba kernel of the model with the scenario x judge term (``_sj_marginal_loops``) and of the paper
model (``_marginal_loops``) as nutpie's C callbacks call them: from compiled code (an ``njit`` loop over 2,000
points near the posterior), so no Python dispatch is counted; best of 5 passes, ratio within the run. The Python
call ``density.evaluate`` (dispatch and unboxing of the arguments included) is shown for comparison.
"""

from __future__ import annotations

import time

import numba
import numpy as np

import cjstats as cj
from cjstats.estimators.bayes.gaussian import LOG_SCALE_BOUND, GaussianPriors, MarginalDensity
from cjstats.estimators.bayes.scenario_judge import SJMarginalDensity, sj_data
from cjstats.stats import build_stats


@numba.njit
def _loop_sj(kern, pts, args, k):  # noqa: ANN001, ANN201
    out = np.empty(pts.shape[1])
    mean = np.empty(k)
    lbi = np.zeros((k, k))
    s = 0.0
    for i in range(pts.shape[0]):
        s += kern(pts[i], *args, out, mean, lbi)
    return s


@numba.njit
def _loop_mg(kern, pts, k, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, b0, b1, b2, lo, hi):  # noqa
    out = np.empty(pts.shape[1])
    mean = np.empty(k)
    lbi = np.zeros((k, k))
    s = 0.0
    for i in range(pts.shape[0]):
        s += kern(pts[i], a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, b0, b1, b2, lo, hi, out, mean, lbi)
    return s


def _best(fn, n: int, passes: int = 5) -> float:
    fn()
    best = np.inf
    for _ in range(passes):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best / n


def main() -> None:
    scores = cj.simulate_scores(cj.Truth.table3(), n=80, m=10, k=5, seed=3).subset(models=["Qwen"])
    g = next(iter(build_stats(scores)))
    st = g.for_gaussian()
    sd = st.sd
    pri = GaussianPriors(10 * sd, sd, sd, sd, sd, sd)
    sj = SJMarginalDensity(sj_data(g), pri)
    mg = MarginalDensity(st, pri)
    rng = np.random.default_rng(0)
    n = 2000
    pts_sj = np.array([sj.initial_point(rng) for _ in range(n)])
    pts_mg = np.array([mg.initial_point(rng) for _ in range(n)])
    mg_args = (*mg._args(blocks=True), st.blk_t, st.blk_m, st.blk_n,
               mg._log_sd - LOG_SCALE_BOUND, mg._log_sd + LOG_SCALE_BOUND)
    t_sj = _best(lambda: _loop_sj(sj.kernel, pts_sj, sj._kargs, sj.k), n)
    t_mg = _best(lambda: _loop_mg(mg.kernel, pts_mg, mg.k, *mg_args), n)
    t_sj_py = _best(lambda: [sj.evaluate(t) for t in pts_sj], n)
    t_mg_py = _best(lambda: [mg.evaluate(t) for t in pts_mg], n)
    print(f"patterns={sj._kargs[6].shape[0]}, K={sj.k}; per evaluation, best of 5 x {n:,} points:")
    print(f"  kernel from compiled code:  SJ {1e6 * t_sj:6.2f} us   paper {1e6 * t_mg:6.2f} us   "
          f"ratio {t_sj / t_mg:.2f}x")
    print(f"  density.evaluate (Python):  SJ {1e6 * t_sj_py:6.2f} us   paper {1e6 * t_mg_py:6.2f} us   "
          f"ratio {t_sj_py / t_mg_py:.2f}x")


if __name__ == "__main__":
    main()
