"""Benchmark: the numpy engine's ``build_stats`` against a vectorised numpy reference, on loaded rows (issue 20).

Goal (issue 20, item 5): ``cjstats.stats.build_stats(scores)`` (engine ``"numpy"``) within 2x of a plain
vectorised numpy pass that computes the same sufficient statistics from the already-loaded arrays, on a
balanced table and on an unbalanced one (missing judge calls, ragged generations); and
``cj.estimate(scores, method="anova")`` on 1,000,000 loaded rows near 10-40 ms.
Run:  .venv/bin/python benchmarks/bench_numpy_engine.py [--rows 1000000] [--repeat 7]

Building the ``Scores`` table (simulation + ``read_scores``) is not timed: the rows are "loaded". The reference
(b) reads the group's arrays (scores, cell / judge / cell -> scenario codes) and computes every statistic of
:class:`~cjstats.stats.CellStats` the direct way: on a balanced table by reshaping the scores to the
(n, m, K) cube and summing over its axes; otherwise by ``np.bincount`` over the codes; the scenario x judge
statistics (per-scenario z_i = (scenario sum, cell sums, scenario x judge sums), summed and scattered per design
pattern) included, as the engine builds them whenever a judge scored two generations of a scenario. It does not
check its input nor build labels, so it is a floor, not a second engine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy import sparse

import cjstats as cj
from cjstats.stats import build_stats
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores


def _time(fn, repeat: int) -> tuple[float, float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out), statistics.median(out)


# ---------------------------------------------------------------------------------------- the reference
def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.einsum("i,i->", a, b))    # not a @ b: BLAS level-1 threads stall on a busy machine


def _reference_balanced(y: np.ndarray, n: int, m: int, k: int) -> dict[str, np.ndarray]:
    """Every statistic of a balanced unit from the (n, m, K) cube (one size class: K calls per cell)."""
    cube = y.reshape(n, m, k)
    shift = cube.sum(axis=(0, 1)) / (n * m)
    y0 = cube - shift
    ysum = y0.sum(axis=2)                                  # (n, m) cell sums
    flat, flat0 = ysum.reshape(-1), y0.reshape(-1)
    yw = (y0 - ysum[:, :, None] / k).reshape(-1)
    sjs = y0.sum(axis=1)                                   # (n, K) scenario x judge sums
    ys = ysum.sum(axis=1)
    z = np.concatenate([ys[:, None], ysum, sjs], axis=1)
    return {"shift": shift, "dd": np.full((k, k), n * m), "dy": np.full(k, flat.sum()), "yyc": _dot(flat, flat),
            "judge_sum": sjs.sum(axis=0), "yy": _dot(flat0, flat0), "ssw": _dot(yw, yw), "ys": ys,
            "y_min": cube.min(), "y_max": cube.max(), "zsum": z.sum(axis=0), "zscat": z.T @ z}


def _codes(a: np.ndarray) -> np.ndarray:
    """Ids of the distinct rows of a small non-negative integer matrix (each row read as one integer)."""
    base = int(a.max()) + 1
    code = a[:, 0].astype(np.int64)
    for j in range(1, a.shape[1]):
        code = code * base + a[:, j]
    return np.unique(code, return_inverse=True)[1].reshape(-1)


def _reference_general(y: np.ndarray, cell: np.ndarray, judge: np.ndarray, cell_scen: np.ndarray,
                       k: int) -> dict[str, np.ndarray]:
    """Every statistic of an unbalanced unit by bincount over the codes (cells grouped by size class, scenarios
    by their pattern of judge calls)."""
    n_cells = cell_scen.shape[0]
    n = int(cell_scen[-1]) + 1
    cell_n = np.bincount(cell, minlength=n_cells)
    sizes, sidx = np.unique(cell_n, return_inverse=True)
    n_s = sizes.shape[0]
    d_int = np.bincount(cell * k + judge, minlength=n_cells * k).reshape(n_cells, k)
    d = d_int.astype(np.float64)
    judge_n = np.bincount(judge, minlength=k)
    shift = np.bincount(judge, weights=y, minlength=k) / judge_n
    y0 = y - shift[judge]
    ysum = np.bincount(cell, weights=y0, minlength=n_cells)
    yw = y0 - (ysum / cell_n)[cell]
    row_s = sidx[cell]
    onehot = sparse.csr_matrix((np.ones(n_cells), (sidx, np.arange(n_cells))), shape=(n_s, n_cells))
    dd = onehot @ (d[:, :, None] * d[:, None, :]).reshape(n_cells, k * k)
    dy = onehot @ (ysum[:, None] * d)
    key = cell_scen * n_s + sidx
    s_isk = np.stack([np.bincount(key, weights=d[:, j], minlength=n * n_s) for j in range(k)], axis=1)
    rk = row_s * k + judge
    out = {"shift": shift, "dd": dd, "dy": dy, "yyc": np.bincount(sidx, weights=ysum * ysum, minlength=n_s),
           "judge_n_s": np.bincount(rk, minlength=n_s * k), "judge_sum_s": np.bincount(rk, weights=y0),
           "yy_s": np.bincount(row_s, weights=y0 * y0, minlength=n_s),
           "ssw_s": np.bincount(row_s, weights=yw * yw, minlength=n_s), "s_isk": s_isk,
           "cnt": np.bincount(key, minlength=n * n_s), "ys": np.bincount(key, weights=ysum, minlength=n * n_s),
           "y_min": y.min(), "y_max": y.max()}
    # scenario x judge: z_i with the cells of each scenario in a canonical order (by their judge calls), patterns
    # = distinct per-scenario sequences of judge calls; per-pattern sums by a sparse pattern x scenario matrix
    cid = _codes(d_int)
    order = np.lexsort((-cid, cell_scen))
    per = np.bincount(cell_scen, minlength=n)
    m = int(per.max())
    pos = np.arange(n_cells) - np.repeat(np.cumsum(per) - per, per)
    pat_key = np.zeros((n, m), dtype=np.int64)
    pat_key[cell_scen[order], pos] = cid[order] + 1
    pat = _codes(pat_key)
    z = np.zeros((n, 1 + m + k))
    z[:, 0] = np.bincount(cell_scen, weights=ysum, minlength=n)
    z[cell_scen[order], 1 + pos] = ysum[order]
    z[:, 1 + m:] = np.bincount(cell_scen[cell] * k + judge, weights=y0, minlength=n * k).reshape(n, k)
    by_pat = sparse.csr_matrix((np.ones(n), (pat, np.arange(n))), shape=(int(pat.max()) + 1, n))
    out["zsum"] = by_pat @ z
    out["zscat"] = by_pat @ (z[:, :, None] * z[:, None, :]).reshape(n, -1)
    return out


def reference_stats(scores: cj.Scores) -> list[dict[str, np.ndarray]]:
    """The reference statistics of every unit of ``scores``."""
    out = []
    for g in scores.groups():
        d = g.design
        if d.balanced:
            out.append(_reference_balanced(g.y, d.n_scenarios, d.generations, d.n_judges))
        else:
            out.append(_reference_general(g.y, g.cell, g.judge, g.cell_scenario, d.n_judges))
    return out


# ---------------------------------------------------------------------------------------- the tables
def _tables(rows: int) -> dict[str, cj.Scores]:
    k, m = 5, 10
    n = max(rows // (k * m), 2)
    c = TABLE3_MTBENCH["Qwen"]
    kw = dict(n=n, m=m, k=k, s2_scenario=c["scenario"], s2_generation=c["generation"], s2_residual=c["residual"],
              judge_offsets=panel_offsets(k, c["judge_panel"]))
    balanced = simulate_scores(**kw, seed=0)
    # about as many rows: 10% of the calls lost at random and 5..10 generations per scenario (mean 7.5)
    n_u = max(int(rows / (k * 0.9 * 7.5)), 2)
    ragged = simulate_scores(**{**kw, "n": n_u}, missing=0.1, seed=1)
    keep_m = np.random.default_rng(2).integers(5, m + 1, size=n_u)
    ragged = ragged[ragged["generation"].to_numpy() < keep_m[ragged["scenario"].to_numpy()]]
    return {"balanced": cj.read_scores(balanced), "unbalanced": cj.read_scores(ragged.reset_index(drop=True))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of each table (default 1,000,000; the "
                    "unbalanced one has about as many)")
    ap.add_argument("--repeat", type=int, default=7, help="timed repeats of each step (min and median shown)")
    args = ap.parse_args()
    tables = _tables(args.rows)
    print(f"{'table':<12}{'rows':>10}  {'step':<34}{'min ms':>9}{'median ms':>11}")
    for name, scores in tables.items():
        build_stats(scores)                                 # warm-up (imports, first-touch of the arrays)
        reference_stats(scores)
        if name == "balanced":
            cj.estimate(scores, "anova")
        a = _time(lambda: build_stats(scores), args.repeat)
        b = _time(lambda: reference_stats(scores), args.repeat)
        c = _time(lambda: cj.estimate(scores, "anova"), args.repeat) if name == "balanced" else None
        steps = [("(a) build_stats, numpy engine", a), ("(b) vectorised numpy reference", b)]
        if c is not None:
            steps.append(("(c) estimate(method='anova')", c))
        for step, (best, med) in steps:
            print(f"{name:<12}{len(scores):>10,}  {step:<34}{1e3 * best:>9.1f}{1e3 * med:>11.1f}")
        print(f"{name:<12}{'':>10}  {'(a)/(b), min and median':<34}{a[0] / b[0]:>9.2f}{a[1] / b[1]:>11.2f}")


if __name__ == "__main__":
    main()
