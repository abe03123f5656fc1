"""The closed-form elimination of the generation effects in the scenario x judge REML core
(:class:`~cjstats.estimators.reml.scenario_judge.SJEvaluator`, K x K per pattern) against the previous algebra,
kept here as the reference: Woodbury on all 1 + m + K random effects of a scenario pattern (``_FullWoodbury``),
and, for A and log|H|, the dense H_i = I + Z_i Lambda Z_i' of every scenario built from the rows.

Criterion (A, log|H|), gradient and Hessian agree to 1e-10 relative on unbalanced, balanced, missing-generation
(ragged) and m = 1 (repeated calls) tables, at interior and boundary theta, for the fixed- and random-judge forms.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.estimators.reml.scenario_judge import SJEvaluator, _kernel
from cjstats.stats import build_stats
from cjstats.stats.scenario_judge import build_sj_stats


class _FullWoodbury(SJEvaluator):
    r"""The previous core: per pattern, C = I + Lambda W (q x q, q = 1 + m + K), T = C^{-1}, R = T Lambda,
    A = A_0 - sum_p M_p(R_p), log|H| = sum_p n_p log|C_p|, dR/dtheta_k = T E_k T', d2R = -(T E_j W Q_k + Q_k W E_j T'),
    dlog|C| = tr(T E_k W), d2log|C| = -tr(E_j X E_k X) with X = W T."""

    def __init__(self, d, ys, sj):
        super().__init__(d, ys, sj)
        w, g = self.sj.blocks()
        self._w, self._g = w, g
        m, q = self.sj.m, self.sj.q
        self._sel = [np.array([0]), np.arange(1, 1 + m), np.arange(1 + m, q)]
        self._lam_pattern = np.zeros((3, q))
        for j, idx in enumerate(self._sel):
            self._lam_pattern[j, idx] = 1.0
        self._eye_q = np.eye(q)
        self._base0 = self._base
        self._np = np.asarray(self.sj.count, dtype=float)

    def _m(self, r):
        g, n, s, sc = self._g, self._np, self.sj.zsum, self.sj.zscat
        k = self.k
        rg = r @ g
        out = np.empty(r.shape[:-3] + (k + 1, k + 1))
        gs = np.einsum("...pak,pa->...k", rg, s)
        out[..., :k, :k] = np.einsum("pak,...pal->...kl", g * n[:, None, None], rg)
        out[..., :k, k] = gs
        out[..., k, :k] = gs
        out[..., k, k] = np.einsum("...pab,pab->...", r, sc)
        return out

    def _core(self, theta, grad=False, which="fixed", hess=False):
        th = np.asarray(theta, dtype=float)[:3]
        lam = th @ self._lam_pattern
        w = self._w
        c = self._eye_q + lam[:, None] * w
        t = np.linalg.inv(c)
        r = t * lam[None, None, :]
        r = 0.5 * (r + r.transpose(0, 2, 1))
        logc = np.linalg.slogdet(c)[1]
        lm = self._lmat if which == "random" else np.eye(self.k + 1)
        amat = lm.T @ (self._base0 - self._m(r)) @ lm
        ld = float(self._np @ logc)
        qk = np.stack([t[:, :, idx] @ t[:, :, idx].transpose(0, 2, 1) for idx in self._sel])
        x = w @ t
        diag_x = np.diagonal(x, axis1=1, axis2=2)
        dld = np.array([float(self._np @ diag_x[:, idx].sum(axis=1)) for idx in self._sel])
        da = lm.T @ -self._m(qk) @ lm
        d2r = np.empty((3, 3) + t.shape)
        d2ld = np.empty((3, 3))
        for j, jdx in enumerate(self._sel):
            tew = t[:, :, jdx] @ w[:, jdx, :]
            for kk, kdx in enumerate(self._sel):
                v = tew @ qk[kk]
                d2r[j, kk] = -(v + v.transpose(0, 2, 1))
                d2ld[j, kk] = -float(self._np @ np.einsum("pab,pba->p", x[:, jdx][:, :, kdx], x[:, kdx][:, :, jdx]))
        d2a = lm.T @ -self._m(d2r) @ lm
        d2a = 0.5 * (d2a + d2a.transpose(1, 0, 2, 3))
        if hess:
            return amat, ld, (da, d2a), (dld, 0.5 * (d2ld + d2ld.T))
        return (amat, ld, da, dld) if grad else (amat, ld, None, None)


def _table(kind: str, seed: int) -> pd.DataFrame:
    """unbalanced (calls missing at random), balanced, ragged (generations missing), m1 (one generation,
    calls missing at random)."""
    rng = np.random.default_rng(seed)
    n, k = 14, 4
    m = {"m1": 1, "balanced": 3}.get(kind, 4)
    a = rng.normal(0, 1.0, n)
    sj = rng.normal(0, 0.7, (n, k))
    rows = []
    for i in range(n):
        mi = int(rng.integers(1, m + 1)) if kind == "ragged" else m
        for j in range(mi):
            b = rng.normal(0, 0.5)
            for ll in range(k):
                if kind in ("unbalanced", "m1") and rng.random() < 0.25:
                    continue
                rows.append(("A", f"s{i:02d}", f"g{j}", f"j{ll}", a[i] + b + 0.2 * ll + sj[i, ll]
                             + rng.normal(0, 1.0)))
    return pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])


def _evaluators(kind: str, seed: int):
    df = _table(kind, seed)
    u = next(iter(build_stats(cj.read_scores(df))))
    d, ys = u.for_reml()
    sj = u.sj
    if sj is None:   # m = 1: the engine leaves the statistics out (the term is not identifiable); build them
        cells = df["scenario"] + "/" + df["generation"]
        cell = pd.factorize(cells, sort=True)[0]
        judge = pd.factorize(df["judge"], sort=True)[0]
        cell_scen = pd.factorize(cells.drop_duplicates().sort_values().str.split("/").str[0], sort=True)[0]
        sj = build_sj_stats(df["score"].to_numpy() - ys.shift[judge], cell, judge, cell_scen, d.k, ys.shift)
    return SJEvaluator(d, ys, sj), _FullWoodbury(d, ys, sj), df, d, ys


def _close(new, ref, rel=1e-10):
    """Equal to ``rel`` relative to the largest entry (a derivative of A in one direction can be many orders
    below that in another, e.g. in theta_a at theta_a = 12; both are rounded on the scale of the largest)."""
    new, ref = np.asarray(new, dtype=float), np.asarray(ref, dtype=float)
    assert np.abs(new - ref).max() <= rel * max(np.abs(ref).max(), 1e-300)


def _assert_same_criteria(new, ref, *, rel):
    """The profiled criterion (to 1e-12), its gradient and every part with its first and second derivatives (to
    ``rel``, :func:`_close`) equal for both judge models at every theta of THETAS."""
    for model, extra in (("fixed", ()), ("random", (0.8,))):
        for theta in THETAS:
            th = np.array(theta + extra)
            v1, g1 = new.profiled(model, th, grad=True)
            v0, g0 = ref.profiled(model, th, grad=True)
            assert v1 == pytest.approx(v0, rel=1e-12)
            _close(g1, g0, rel=rel)
            p1 = new.parts(model, th, grad=True, hess=True)
            p0 = ref.parts(model, th, grad=True, hess=True)
            for key in ("rss", "drss", "d2rss", "logdet", "dlogdet", "d2logdet"):
                _close(p1[key], p0[key], rel=rel)


KINDS = ["unbalanced", "balanced", "ragged", "m1"]
THETAS = [(0.7, 0.3, 0.4), (0.0, 0.2, 1.5), (2.0, 0.0, 0.0), (0.0, 0.0, 0.0), (1e-3, 5.0, 1e-4), (12.0, 0.05, 3.0)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", ["fixed", "random"])
def test_core_equals_the_full_woodbury(kind, which):
    new, ref, *_ = _evaluators(kind, seed=KINDS.index(kind))
    for theta in THETAS:
        th = np.array(theta)
        a1, l1, (da1, d2a1), (dl1, d2l1) = new._core(th, hess=True, which=which)
        a0, l0, (da0, d2a0), (dl0, d2l0) = ref._core(th, hess=True, which=which)
        _close(a1, a0)
        assert l1 == pytest.approx(l0, rel=1e-10, abs=1e-10)
        _close(da1, da0)
        _close(d2a1, d2a0)
        _close(dl1, dl0)
        _close(d2l1, d2l0)
        # the gradient-only and value-only paths return the same numbers as the Hessian path
        a2, l2, da2, dl2 = new._core(th, grad=True, which=which)
        a3, l3, _, _ = new._core(th, which=which)
        np.testing.assert_array_equal(a2, a1)
        np.testing.assert_array_equal(a3, a1)
        np.testing.assert_array_equal(da2, da1)
        np.testing.assert_array_equal(dl2, dl1)
        assert l2 == l1 == l3


@pytest.mark.parametrize("kind", KINDS)
def test_criterion_and_gradient_equal_the_full_woodbury(kind):
    new, ref, *_ = _evaluators(kind, seed=10 + KINDS.index(kind))
    _assert_same_criteria(new, ref, rel=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_a_and_logdet_equal_the_dense_model(kind):
    """A = [J y0]'H^{-1}[J y0] and log|H| from H_i = I + Z_i Lambda Z_i' built row by row."""
    new, _, df, d, ys = _evaluators(kind, seed=20 + KINDS.index(kind))
    judges = sorted(df["judge"].unique())
    k = len(judges)
    jcol = df["judge"].map({j: i for i, j in enumerate(judges)}).to_numpy()
    y0 = df["score"].to_numpy() - ys.shift[jcol]
    for theta in THETAS[:3]:
        ta, tb, ts = theta
        amat = np.zeros((k + 1, k + 1))
        ld = 0.0
        for _, rows in df.groupby("scenario").groups.items():
            rows = np.asarray(rows)
            gen = df["generation"].to_numpy()[rows]
            jl = jcol[rows]
            h = (np.eye(len(rows)) + ta + tb * (gen[:, None] == gen[None, :])
                 + ts * (jl[:, None] == jl[None, :]))
            x = np.column_stack((np.eye(k)[jl], y0[rows]))
            amat += x.T @ np.linalg.solve(h, x)
            ld += np.linalg.slogdet(h)[1]
        a1, l1, _, _ = new._core(np.array(theta))
        _close(a1, amat, rel=1e-11)
        assert l1 == pytest.approx(ld, rel=1e-12)


def _numpy_twin(ev: SJEvaluator) -> SJEvaluator:
    """The same evaluator on the numpy path (the compiled kernel switched off)."""
    twin = SJEvaluator(ev.d, ev.ys, ev.sj)
    twin._kernel = None
    return twin


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", ["fixed", "random"])
def test_compiled_kernel_equals_the_numpy_path(kind, which):
    """The numba kernel (:func:`~cjstats.estimators.reml.scenario_judge._sj_loops`) against the numpy path:
    A, log|H|, their gradients and Hessians to 1e-12 relative, on every case above; value-only, gradient and
    Hessian requests in both orders (the kernel recomputes the lower levels)."""
    new, *_ = _evaluators(kind, seed=KINDS.index(kind))
    new._kernel = _kernel()                                               # (a short process would not load it)
    if new._kernel is None:
        pytest.skip("numba is not installed: the numpy path is the only one")
    ref = _numpy_twin(new)
    for theta in THETAS:
        th = np.array(theta)
        ref._recent.clear()
        a0, l0, (da0, d2a0), (dl0, d2l0) = ref._core(th, hess=True, which=which)
        a3, l3, _, _ = new._core(th, which=which)                         # value first, then gradient, Hessian
        a2, l2, da2, dl2 = new._core(th, grad=True, which=which)
        a1, l1, (da1, d2a1), (dl1, d2l1) = new._core(th, hess=True, which=which)
        for x1, x0 in ((a1, a0), (da1, da0), (d2a1, d2a0), (dl1, dl0), (d2l1, d2l0)):
            _close(x1, x0, rel=1e-12)
        assert l1 == pytest.approx(l0, rel=1e-12)
        np.testing.assert_array_equal(a2, a1)
        np.testing.assert_array_equal(a3, a1)
        np.testing.assert_array_equal(da2, da1)
        np.testing.assert_array_equal(dl2, dl1)
        assert l2 == l1 == l3
        new._recent.clear()                                               # the Hessian first
        a4, l4, (da4, d2a4), (dl4, d2l4) = new._core(th, hess=True, which=which)
        for x4, x1 in ((a4, a1), (da4, da1), (d2a4, d2a1), (dl4, dl1), (d2l4, d2l1)):
            np.testing.assert_array_equal(x4, x1)
        assert l4 == l1
    # a negative theta (a difference quotient at the boundary) takes the numpy path's pivoted inverse
    th = np.array([-1e-6, 0.2, 0.3])
    a1, l1, da1, dl1 = new._core(th, grad=True, which=which)
    a0, l0, da0, dl0 = ref._core(th, grad=True, which=which)
    np.testing.assert_array_equal(a1, a0)
    np.testing.assert_array_equal(da1, da0)
    assert l1 == l0


@pytest.mark.parametrize("kind", KINDS)
def test_compiled_kernel_profiled_criterion(kind):
    """The REML criteria and their gradients, fixed and random judges, on both paths (1e-12 relative)."""
    new, *_ = _evaluators(kind, seed=10 + KINDS.index(kind))
    new._kernel = _kernel()
    if new._kernel is None:
        pytest.skip("numba is not installed: the numpy path is the only one")
    _assert_same_criteria(new, _numpy_twin(new), rel=1e-12)


def test_kernel_is_loaded_once_the_numpy_work_pays(monkeypatch):
    """A short process (a one-off fit) stays on the numpy path and does not import numba; once its numpy
    evaluations reach KERNEL_AFTER unit-evaluations, new evaluators load and use the kernel."""
    import cjstats._jit as jit
    import cjstats.estimators.reml.scenario_judge as sjm

    monkeypatch.setattr(jit, "_COMPILED", {k: v for k, v in jit._COMPILED.items() if k != "sj_reml"})
    monkeypatch.setattr(sjm, "_COMPILED", jit._COMPILED)
    monkeypatch.setattr(sjm, "_NUMPY_WORK", [0])
    new, *_ = _evaluators("unbalanced", seed=0)
    assert new._kernel is None
    new._core(np.array(THETAS[0]))
    new._core(np.array(THETAS[1]), grad=True)
    assert sjm._NUMPY_WORK[0] == 2 * new._units_n
    sjm._NUMPY_WORK[0] = sjm.KERNEL_AFTER
    again, *_ = _evaluators("unbalanced", seed=0)
    assert again._kernel is sjm._kernel()
    if again._kernel is not None:
        again._core(np.array(THETAS[0]))
        assert sjm._NUMPY_WORK[0] == sjm.KERNEL_AFTER                     # the kernel's evaluations not counted


def test_a_theta_asked_for_again_gives_its_first_numbers_without_an_evaluation(monkeypatch):
    """The kept results (:meth:`SJEvaluator._keep`): after more thetas than the four kept with their work arrays,
    asking for an earlier one again returns exactly (bit for bit) what it returned the first time and evaluates
    nothing; asking for more than was computed there (a Hessian after a gradient) evaluates again, and gives the
    numbers of an evaluator that never saw it."""
    new, *_ = _evaluators("unbalanced", seed=0)
    new._kernel = None
    first = {th: new._core(np.array(th), grad=True, which="random") for th in THETAS}
    calls = []
    value = SJEvaluator._value
    monkeypatch.setattr(SJEvaluator, "_value", lambda self, key, level=0: calls.append(key) or value(self, key, level))
    for th in THETAS[:2]:
        again = new._core(np.array(th), grad=True, which="random")
        for x, y in zip(again, first[th]):
            assert np.array_equal(x, y)
        new._core(np.array(th))                                          # a value only: kept as well
    assert calls == []
    hess = new._core(np.array(THETAS[0]), hess=True)
    assert calls == [THETAS[0]]
    fresh = _numpy_twin(new)._core(np.array(THETAS[0]), hess=True)
    for x, y in zip(hess[:2] + hess[2] + hess[3], fresh[:2] + fresh[2] + fresh[3]):
        assert np.array_equal(x, y)


def test_kept_random_judge_transforms_are_those_of_a_fresh_evaluator():
    """The random-judge A = L'AL is formed once per kept state (:meth:`SJEvaluator._core`): fixed and random,
    value, gradient and Hessian requests interleaved at one theta, on two tables through one code path, give bit
    for bit the numbers of a fresh evaluator asked once, and a caller writing into what it got changes nothing
    that is kept."""
    for kind, seed in (("unbalanced", 0), ("ragged", 3)):
        new, *_ = _evaluators(kind, seed=seed)
        new._kernel = None
        for th in THETAS[:3]:
            th = np.array(th)
            for which, grad, hess in (("fixed", False, False), ("random", False, False), ("random", True, False),
                                      ("fixed", True, False), ("random", True, True), ("random", False, False)):
                got = new._core(th, grad=grad, which=which, hess=hess)
                ref = _numpy_twin(new)._core(th, grad=grad, which=which, hess=hess)
                def flat(r, grad=grad, hess=hess):
                    return [r[0], r[1]] + (list(r[2]) + list(r[3]) if hess else [r[2], r[3]] if grad else [])

                for x, y in zip(flat(got), flat(ref), strict=True):
                    assert np.array_equal(x, y)
                got[0][...] = np.nan                                   # the caller's copy, not the kept one
                if grad:
                    (got[2][0] if hess else got[2])[...] = np.nan
            again = new._core(th, grad=True, which="random")
            ref = _numpy_twin(new)._core(th, grad=True, which="random")
            for x, y in zip(again, ref):
                assert np.array_equal(x, y)
