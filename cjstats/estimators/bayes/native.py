r"""The ordinal log density, and the marginal density of the Gaussian model with the scenario x judge term, handed
to nutpie as compiled C callbacks, so that their chains run in parallel.

nutpie calls a Python log density (``nutpie.compiled_pyfunc.from_pyfunc``) under the GIL: with 4 chains on 2
cores the chains then take turns, and the Python wrapper adds its own cost to every gradient. PyMC models avoid
both through nutpie's C interface: a numba ``cfunc`` with the signature

    logp(dim, x*, grad_out*, logp_out*, user_data*) -> int      (0: ok; > 0: a point of zero density)
    expand(dim, n_expanded, x*, out*, user_data*) -> int

called from nutpie's Rust threads with no Python in between. This module builds those two callbacks around the
ordinal model's compiled kernel (:func:`cjstats.estimators.bayes.ordinal._ordinal_loops`, the same code the
Python path calls) and wraps them in nutpie's own model class for compiled PyMC models. The data reach the
callbacks through ``user_data``: one int64 array holding the sizes and the addresses of the data arrays, which
the model object keeps alive. The callbacks are generic (no data inside), so numba compiles them once and caches
them on disk.

The scenario x judge marginal density (:class:`~cjstats.estimators.bayes.scenario_judge.SJMarginalDensity`) and the
paper model's (:class:`~cjstats.estimators.bayes.gaussian.MarginalDensity`) call their compiled kernels the same way
(:func:`native_sj_model`, :func:`native_marginal_model`). Their draws of (mu, gamma) are random given the scales,
and a C callback has no reproducible random stream, so its expand callback writes the scales and the exact
conditional normal of x = (mu - ybar, z) (mean and L_B^{-1}) as the variables ``conditional_mean`` and
``conditional_chol_inv``, as the Python callback does, and the density's ``conditional_draws`` then draws
(mu, gamma) from them after sampling, one seeded stream per chain
(:class:`~cjstats.estimators.bayes.gaussian._ConditionalDraws`).

It depends on nutpie's internals (``nutpie.compile_pymc.CompiledPyMCModel`` and its field names, nutpie 0.16):
:func:`native_model` returns ``None`` when they differ, or when numba is missing, and the caller then uses the
Python callback, which gives the same draws more slowly.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from cjstats.estimators.bayes.gaussian import LOG_SCALE_BOUND, NU, _marginal_kernel
from cjstats.estimators.bayes.ordinal import _ordinal_kernel
from cjstats.estimators.bayes.scenario_judge import _sj_marginal_kernel

__all__ = ["native_marginal_model", "native_model", "native_sj_model"]

# user_data layout (int64): sizes, then addresses of the data arrays
_N_OBS, _N_SIG, _HAS_GEN, _N_SCEN, _N_CELLS, _K, _N_CUT, _PROBIT, _NDIM = range(9)
_CATEGORY, _SCENARIO, _CELL, _JUDGE, _BASIS, _S_PRIOR, _FLOATS = range(9, 16)
_HEADER = 16


@intrinsic
def _as_pointer(typingctx, src):  # pragma: no cover - compiled; an address held in an int64 as a void pointer
    def codegen(cgctx, builder, sig, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return types.voidptr(src), codegen


def _source_stamp() -> str:
    """sha256 of the source files whose compiled code the cached callbacks below link in (the kernels, the
    constants they freeze, the compile options).

    numba keys a cached function by its own file's modification time and size and by its bytecode and closure, not
    by the functions it calls from other files: after an edit of a kernel (or a ``git pull`` that changes
    ``scenario_judge.py`` but not this file), the callbacks would load the old kernel's machine code from the disk
    cache and call it with the new arguments (a wrong answer or a crash). Each callback is therefore made in a
    factory that closes over this stamp, which numba's cache key includes: a changed source compiles again.
    """
    import hashlib
    from pathlib import Path

    from cjstats import _jit
    from cjstats.estimators.bayes import gaussian, ordinal, scenario_judge

    h = hashlib.sha256()
    for mod in (_jit, gaussian, ordinal, scenario_judge):
        h.update(Path(mod.__file__).read_bytes())
    return h.hexdigest()


_SOURCE_STAMP = _source_stamp()
_kernel = _ordinal_kernel()          # the dispatcher the Python path calls: one compiled kernel
_BOUND = float(LOG_SCALE_BOUND)
_SIG_LOGP = types.int64(types.uint64, types.CPointer(types.double), types.CPointer(types.double),
                        types.CPointer(types.double), types.voidptr)
_SIG_EXPAND = types.int64(types.uint64, types.uint64, types.CPointer(types.double), types.CPointer(types.double),
                          types.voidptr)


def _define_logp(stamp: str) -> Any:
    @numba.cfunc(_SIG_LOGP, nopython=True, error_model="numpy", cache=True)
    def _logp(dim, x_, out_, logp_, ud_):  # pragma: no cover - compiled
        if stamp is None:  # never: the stamp in the closure keys numba's cache (see _SOURCE_STAMP)
            return -1
        h = numba.carray(ud_, (_HEADER,), np.int64)
        ndim = h[_NDIM]
        if dim != ndim:
            return -1
        n_obs, n_sig, k, n_cut = h[_N_OBS], h[_N_SIG], h[_K], h[_N_CUT]
        x = numba.carray(x_, (ndim,))
        out = numba.carray(out_, (ndim,))
        lp_out = numba.carray(logp_, (1,))
        for i in range(ndim):
            out[i] = 0.0
            if not math.isfinite(x[i]):
                lp_out[0] = -math.inf
                return 4
        for i in range(n_sig):
            if abs(x[i]) > _BOUND:
                lp_out[0] = -math.inf
                return 4
        for i in range(ndim - n_cut + 1, ndim):
            if x[i] > _BOUND:
                lp_out[0] = -math.inf
                return 4
        category = numba.carray(_as_pointer(h[_CATEGORY]), (n_obs,), np.int64)
        scenario = numba.carray(_as_pointer(h[_SCENARIO]), (n_obs,), np.int64)
        cell = numba.carray(_as_pointer(h[_CELL]), (n_obs,), np.int64)
        judge = numba.carray(_as_pointer(h[_JUDGE]), (n_obs,), np.int64)
        basis = numba.carray(_as_pointer(h[_BASIS]), (k, k - 1), np.float64)
        s_prior = numba.carray(_as_pointer(h[_S_PRIOR]), (n_sig,), np.float64)
        fl = numba.carray(_as_pointer(h[_FLOATS]), (2,), np.float64)
        lp = _kernel(x, n_sig, h[_HAS_GEN] != 0, h[_N_SCEN], h[_N_CELLS], k, n_cut, basis, s_prior, fl[0],
                     category, scenario, cell, judge, fl[1], h[_PROBIT] != 0, out)
        lp_out[0] = lp
        if not math.isfinite(lp):
            return 4
        for i in range(ndim):
            if not math.isfinite(out[i]):
                return 3
        return 0
    return _logp


_logp = _define_logp(_SOURCE_STAMP)


@numba.cfunc(_SIG_EXPAND, nopython=True, error_model="numpy", cache=True)
def _expand(dim, n_expanded, x_, out_, ud_):  # pragma: no cover - compiled
    """The expanded draw, in the order of ``OrdinalDensity.expanded_names``: the sigmas, gamma, the
    cutpoints, scenario, [generation], judge_panel, judge_population."""
    h = numba.carray(ud_, (_HEADER,), np.int64)
    ndim = h[_NDIM]
    if dim != ndim:
        return -1
    n_sig, k, n_cut, n_scen = h[_N_SIG], h[_K], h[_N_CUT], h[_N_SCEN]
    nzb = h[_N_CELLS] if h[_HAS_GEN] != 0 else 0
    x = numba.carray(x_, (ndim,))
    out = numba.carray(out_, (n_expanded,))
    basis = numba.carray(_as_pointer(h[_BASIS]), (k, k - 1), np.float64)
    for i in range(n_sig):
        out[i] = math.exp(x[i])
    o = n_sig
    zg0 = n_sig + n_scen - 1 + nzb
    ss = 0.0
    for j in range(k):                                      # gamma = basis @ z_gamma
        g = 0.0
        for a in range(k - 1):
            g += basis[j, a] * x[zg0 + a]
        out[o + j] = g
        ss += g * g
    o += k
    x0 = zg0 + k - 1
    acc = x[x0]
    out[o] = acc
    for q in range(1, n_cut):                               # the ordered transform
        acc += math.exp(x[x0 + q])
        out[o + q] = acc
    o += n_cut
    out[o] = math.exp(2.0 * x[0])                           # scenario
    o += 1
    if h[_HAS_GEN] != 0:
        out[o] = math.exp(2.0 * x[1])                       # generation
        o += 1
    out[o] = ss / k                                         # judge_panel
    out[o + 1] = math.exp(2.0 * x[n_sig - 1])               # judge_population
    return 0


# user_data layout of the marginal densities (int64). A prefix both share: which density, its dimension, K and the
# coordinate sampled as |u| (sigma_sj; -1: none); then each density's sizes and the addresses of its data arrays.
_KIND, _NDIM_C, _K_C, _ABS = range(4)
_KIND_SJ, _KIND_MG = 0, 1
_SJ_R, _SJ_NPAT, _SJ_NCLS, _SJ_NPAIR, _SJ_LCLS, _SJ_LPAT = range(4, 10)
(_SJ_SCALES, _SJ_POS, _SJ_CLS, _SJ_PAIRS, _SJ_PAT, _SJ_OFF, _SJ_GRP, _SJ_BASE, _SJ_TMAT,
 _SJ_FLOATS) = range(10, 20)
_SJ_HEADER = 20
_sj_kernel = _sj_marginal_kernel()  # the dispatcher SJMarginalDensity.evaluate calls: one compiled kernel


def _define_sj_call(stamp: str) -> Any:
    @numba.njit(error_model="numpy", cache=True)
    def _sj_call(ud_, x, out, mean, lb_inv):  # pragma: no cover - compiled
        """The kernel on the arrays whose addresses ``user_data`` holds."""
        if stamp is None:  # never: the stamp in the closure keys numba's cache (see _SOURCE_STAMP)
            return -math.inf
        h = numba.carray(ud_, (_SJ_HEADER,), np.int64)
        ndim, k, r, n_pat = h[_NDIM_C], h[_K_C], h[_SJ_R], h[_SJ_NPAT]
        scales = numba.carray(_as_pointer(h[_SJ_SCALES]), (ndim,), np.float64)
        pos = numba.carray(_as_pointer(h[_SJ_POS]), (5,), np.int64)
        cls = numba.carray(_as_pointer(h[_SJ_CLS]), (h[_SJ_NCLS], h[_SJ_LCLS]), np.float64)
        pairs = numba.carray(_as_pointer(h[_SJ_PAIRS]), (h[_SJ_NPAIR], r * r), np.float64)
        pat = numba.carray(_as_pointer(h[_SJ_PAT]), (n_pat, h[_SJ_LPAT]), np.float64)
        off = numba.carray(_as_pointer(h[_SJ_OFF]), (n_pat + 1, 2), np.int64)
        grp = numba.carray(_as_pointer(h[_SJ_GRP]), (r + 1,), np.int64)
        base = numba.carray(_as_pointer(h[_SJ_BASE]), (k + 1, k + 1), np.float64)
        tmat = numba.carray(_as_pointer(h[_SJ_TMAT]), (k + 1, k + 1), np.float64)
        fl = numba.carray(_as_pointer(h[_SJ_FLOATS]), (4,), np.float64)
        return _sj_kernel(x, scales, pos, fl[0], fl[1], cls, pairs, pat, off, grp, base, tmat, fl[2], fl[3],
                          out, mean, lb_inv)
    return _sj_call


_sj_call = _define_sj_call(_SOURCE_STAMP)


# the paper model's marginal density: after the shared prefix, its sizes and the addresses of its data arrays
_MG_H, _MG_NSINGLE, _MG_NBLK, _MG_HAS_GEN = range(4, 8)
(_MG_SCALES, _MG_S_MAT, _MG_M_H, _MG_V, _MG_M_COUNT, _MG_SIZES, _MG_CPS, _MG_P_MAT, _MG_BLK_T, _MG_BLK_M, _MG_BLK_N,
 _MG_FLOATS) = range(8, 20)
_MG_HEADER = 20
_mg_kernel = _marginal_kernel()     # the dispatcher MarginalDensity.evaluate calls: one compiled kernel


def _define_mg_call(stamp: str) -> Any:
    @numba.njit(error_model="numpy", cache=True)
    def _mg_call(ud_, x, out, mean, lb_inv):  # pragma: no cover - compiled
        """The paper model's marginal kernel on the arrays whose addresses ``user_data`` holds."""
        if stamp is None:  # never: the stamp in the closure keys numba's cache (see _SOURCE_STAMP)
            return -math.inf
        h = numba.carray(ud_, (_MG_HEADER,), np.int64)
        ndim, k, nh, n_single, n_blk = h[_NDIM_C], h[_K_C], h[_MG_H], h[_MG_NSINGLE], h[_MG_NBLK]
        d = k + 2
        scales = numba.carray(_as_pointer(h[_MG_SCALES]), (ndim,), np.float64)
        s_mat = numba.carray(_as_pointer(h[_MG_S_MAT]), (d, d), np.float64)
        m_h = numba.carray(_as_pointer(h[_MG_M_H]), (nh, d, d), np.float64)
        v = numba.carray(_as_pointer(h[_MG_V]), (n_single, nh, d), np.float64)
        m_count = numba.carray(_as_pointer(h[_MG_M_COUNT]), (n_single, nh), np.float64)
        sizes = numba.carray(_as_pointer(h[_MG_SIZES]), (nh,), np.float64)
        cps = numba.carray(_as_pointer(h[_MG_CPS]), (nh,), np.float64)
        p_mat = numba.carray(_as_pointer(h[_MG_P_MAT]), (d, k), np.float64)
        blk_t = numba.carray(_as_pointer(h[_MG_BLK_T]), (n_blk, nh, nh, d, d), np.float64)
        blk_m = numba.carray(_as_pointer(h[_MG_BLK_M]), (n_blk, nh), np.float64)
        blk_n = numba.carray(_as_pointer(h[_MG_BLK_N]), (n_blk,), np.float64)
        fl = numba.carray(_as_pointer(h[_MG_FLOATS]), (5,), np.float64)
        return _mg_kernel(x, scales, h[_MG_HAS_GEN] != 0, fl[0], k, s_mat, m_h, v, m_count, sizes, cps, fl[1],
                          fl[2], p_mat, blk_t, blk_m, blk_n, fl[3], fl[4], out, mean, lb_inv)
    return _mg_call


_mg_call = _define_mg_call(_SOURCE_STAMP)


def _define_cond_call(stamp: str) -> Any:
    @numba.njit(error_model="numpy", cache=True)
    def _cond_call(ud_, x, out, mean, lb_inv):  # pragma: no cover - compiled
        """The kernel of the marginal density ``user_data`` describes (its ``_KIND``)."""
        if stamp is None:  # never: the stamp in the closure keys numba's cache (see _SOURCE_STAMP)
            return -math.inf
        h = numba.carray(ud_, (_ABS + 1,), np.int64)
        if h[_KIND] == _KIND_SJ:
            return _sj_call(ud_, x, out, mean, lb_inv)
        return _mg_call(ud_, x, out, mean, lb_inv)
    return _cond_call


_cond_call = _define_cond_call(_SOURCE_STAMP)


def _define_cond_logp(stamp: str) -> Any:
    @numba.cfunc(_SIG_LOGP, nopython=True, error_model="numpy", cache=True)
    def _cond_logp(dim, x_, out_, logp_, ud_):  # pragma: no cover - compiled
        """The log density and its gradient (a marginal density's kernel: the paper model's or the scenario x
        judge one)."""
        if stamp is None:  # never: the stamp in the closure keys numba's cache (see _SOURCE_STAMP)
            return -1
        h = numba.carray(ud_, (_ABS + 1,), np.int64)
        ndim, k = h[_NDIM_C], h[_K_C]
        if dim != ndim:
            return -1
        x = numba.carray(x_, (ndim,))
        out = numba.carray(out_, (ndim,))
        lp_out = numba.carray(logp_, (1,))
        for i in range(ndim):
            out[i] = 0.0
        lp = _cond_call(ud_, x, out, np.empty(k), np.zeros((k, k)))
        lp_out[0] = lp
        if not math.isfinite(lp):                           # the kernel's -inf: outside the bounds, or not finite
            lp_out[0] = -math.inf
            for i in range(ndim):
                out[i] = 0.0
            return 4
        return 0
    return _cond_logp


_cond_logp = _define_cond_logp(_SOURCE_STAMP)


def _define_cond_expand(stamp: str) -> Any:
    @numba.cfunc(_SIG_EXPAND, nopython=True, error_model="numpy", cache=True)
    def _cond_expand(dim, n_expanded, x_, out_, ud_):  # pragma: no cover - compiled
        """The scales (exp of the log scales; |u| for the coordinate ``_ABS`` names), then the conditional mean of
        x (K) and L^{-1} (K x K, row-major): the variables of
        :meth:`~cjstats.estimators.bayes.gaussian._ConditionalDraws.conditional_layout`, in order."""
        if stamp is None:  # never: the stamp in the closure keys numba's cache (see _SOURCE_STAMP)
            return -1
        h = numba.carray(ud_, (_ABS + 1,), np.int64)
        ndim, k, i_abs = h[_NDIM_C], h[_K_C], h[_ABS]
        if dim != ndim:
            return -1
        x = numba.carray(x_, (ndim,))
        o = numba.carray(out_, (n_expanded,))
        mean = np.empty(k)
        lb_inv = np.zeros((k, k))
        lp = _cond_call(ud_, x, np.empty(ndim), mean, lb_inv)
        ok = math.isfinite(lp)
        for i in range(ndim):
            o[i] = abs(x[i]) if i == i_abs else math.exp(x[i])
        for i in range(k):
            o[ndim + i] = mean[i] if ok else math.nan
            for j in range(k):
                o[ndim + k + i * k + j] = lb_inv[i, j] if ok else math.nan
        return 0
    return _cond_expand


_cond_expand = _define_cond_expand(_SOURCE_STAMP)


def _compiled_model(ndim: int, logp: Any, expand: Any, *, names: list[str], shapes: list[tuple[int, ...]],
                    coords: dict[str, Any], dims: dict[str, tuple[str, ...]], init: Any, keep: dict[str, Any],
                    ud: np.ndarray) -> Any | None:
    """nutpie's compiled-model object around two callbacks, or ``None`` where nutpie's C interface differs."""
    try:
        from nutpie.compile_pymc import CompiledPyMCModel
    except ImportError:  # pragma: no cover - another nutpie layout
        return None
    sizes = [int(np.prod(s)) for s in shapes]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    slices = [slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
    try:
        return CompiledPyMCModel(
            _n_dim=ndim, dims=dims, _coords=coords, _shapes=dict(zip(names, shapes)),
            compiled_logp_func=logp, compiled_expand_func=expand, initial_point_func=init,
            shared_data=keep, shared_var_keys={}, user_data=ud, n_expanded=int(starts[-1]),
            shape_info=(names, slices, shapes), logp_func=None, expand_func=None)
    except TypeError:  # pragma: no cover - nutpie changed the class's fields
        return None


def native_sj_model(density: Any, *, init: Any) -> Any | None:
    """nutpie's compiled-model object for an :class:`~cjstats.estimators.bayes.scenario_judge.SJMarginalDensity`
    (variables: :meth:`~cjstats.estimators.bayes.gaussian._ConditionalDraws.conditional_layout`'s, which its
    ``conditional_draws`` turns into the model's), or ``None`` when its kernel or nutpie's C interface is not
    usable."""
    if density.kernel is None:
        return None
    (scales, pos, s_mu, n_obs, cls, pairs, pat, off, grp, base, tmat, lo, hi) = density._kargs
    keep = {"scales": scales, "pos": pos, "cls": cls, "pairs": pairs, "pat": pat, "off": off,
            "grp": grp, "base": np.ascontiguousarray(base), "tmat": np.ascontiguousarray(tmat),
            "floats": np.array([s_mu, n_obs, lo, hi], dtype=np.float64)}
    ud = np.zeros(_SJ_HEADER, dtype=np.int64)
    ud[[_KIND, _NDIM_C, _K_C, _ABS, _SJ_R, _SJ_NPAT, _SJ_NCLS, _SJ_NPAIR, _SJ_LCLS, _SJ_LPAT]] = [
        _KIND_SJ, density.ndim, density.k, int(pos[2]), len(grp) - 1, pat.shape[0], cls.shape[0], pairs.shape[0],
        cls.shape[1], pat.shape[1]]
    for slot, key in zip(range(_SJ_SCALES, _SJ_FLOATS + 1), keep):
        ud[slot] = keep[key].ctypes.data
    names, shapes, coords, dims = density.conditional_layout()
    return _compiled_model(density.ndim, _cond_logp, _cond_expand, names=names, shapes=shapes, coords=coords,
                           dims=dims, init=init, keep=keep, ud=ud)


def native_model(density: Any, *, names: list[str], shapes: list[tuple[int, ...]], coords: dict[str, Any],
                 dims: dict[str, tuple[str, ...]], init: Any) -> Any | None:
    """nutpie's compiled-model object for an :class:`~cjstats.estimators.bayes.ordinal.OrdinalDensity`, or
    ``None`` when numba or nutpie's C interface is not usable (the caller falls back to the Python callback)."""
    if density.kernel is None or list(names) != density.expanded_names():
        return None                                         # the expand callback writes exactly that order
    od = density.od
    keep = {"category": np.ascontiguousarray(od.category, dtype=np.int64),
            "scenario": np.ascontiguousarray(od.scenario, dtype=np.int64),
            "cell": np.ascontiguousarray(od.cell, dtype=np.int64),
            "judge": np.ascontiguousarray(od.judge, dtype=np.int64),
            "basis": np.ascontiguousarray(density.basis, dtype=np.float64),
            "s_prior": np.ascontiguousarray(density.s_prior, dtype=np.float64),
            "floats": np.array([density.cut_prior, NU], dtype=np.float64)}
    ud = np.zeros(_HEADER, dtype=np.int64)
    ud[[_N_OBS, _N_SIG, _HAS_GEN, _N_SCEN, _N_CELLS, _K, _N_CUT, _PROBIT, _NDIM]] = [
        od.n_obs, density.n_sig, int(od.has_generation), od.n_scenarios, od.n_cells, od.k, density.n_cut,
        int(density.link == "probit"), density.ndim]
    for slot, key in zip((_CATEGORY, _SCENARIO, _CELL, _JUDGE, _BASIS, _S_PRIOR, _FLOATS), keep):
        ud[slot] = keep[key].ctypes.data
    return _compiled_model(density.ndim, _logp, _expand, names=names, shapes=shapes, coords=coords, dims=dims,
                           init=init, keep=keep, ud=ud)


def native_marginal_model(density: Any, *, init: Any) -> Any | None:
    """nutpie's compiled-model object for the paper model's
    :class:`~cjstats.estimators.bayes.gaussian.MarginalDensity` (variables: its ``conditional_layout``, which its
    ``conditional_draws`` turns into the model's), or ``None`` when its kernel or nutpie's C interface is not
    usable."""
    if density.kernel is None:
        return None
    st = density.st
    (scales, has_gen, s_mu, k, s_mat, m_h, v, m_count, sizes, cps, n_obs, n_cells, p_mat) = density._args(blocks=True)
    f64 = np.float64
    keep = {"scales": np.ascontiguousarray(scales, dtype=f64), "s_mat": np.ascontiguousarray(s_mat, dtype=f64),
            "m_h": np.ascontiguousarray(m_h, dtype=f64), "v": np.ascontiguousarray(v, dtype=f64),
            "m_count": np.ascontiguousarray(m_count, dtype=f64), "sizes": np.ascontiguousarray(sizes, dtype=f64),
            "cps": np.ascontiguousarray(cps, dtype=f64), "p_mat": np.ascontiguousarray(p_mat, dtype=f64),
            "blk_t": np.ascontiguousarray(st.blk_t, dtype=f64), "blk_m": np.ascontiguousarray(st.blk_m, dtype=f64),
            "blk_n": np.ascontiguousarray(st.blk_n, dtype=f64),
            "floats": np.array([s_mu, n_obs, n_cells, density._log_sd - _BOUND, density._log_sd + _BOUND], dtype=f64)}
    ud = np.zeros(_MG_HEADER, dtype=np.int64)
    ud[[_KIND, _NDIM_C, _K_C, _ABS, _MG_H, _MG_NSINGLE, _MG_NBLK, _MG_HAS_GEN]] = [
        _KIND_MG, density.ndim, k, -1, len(keep["sizes"]), keep["v"].shape[0], keep["blk_n"].shape[0],
        int(bool(has_gen))]
    for slot, key in zip(range(_MG_SCALES, _MG_FLOATS + 1), keep):
        ud[slot] = keep[key].ctypes.data
    names, shapes, coords, dims = density.conditional_layout()
    return _compiled_model(density.ndim, _cond_logp, _cond_expand, names=names, shapes=shapes, coords=coords,
                           dims=dims, init=init, keep=keep, ud=ud)
