"""cjstats._dist gives the same bits as scipy.stats for every function the package uses (the reason it exists is
to skip importing scipy.stats on the common paths, tests/test_import_cost.py; the numbers must not move)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from cjstats import _dist

_EDGE_P = [np.nan, -np.inf, -1.0, -0.0, 0.0, 5e-324, 1e-300, 1e-16, 1e-8, 0.001, 0.025, 0.05, 0.1, 0.3, 0.5,
           0.7, 0.9, 0.95, 0.975, 0.999, 1 - 1e-12, 1 - 2 ** -53, 1.0, 1.5, np.inf]
_EDGE_X = [np.nan, -np.inf, -1e300, -40.0, -8.5, -1.0, -1e-300, -0.0, 0.0, 5e-324, 1e-300, 1e-10, 0.01, 0.5, 1.0,
           1.96, 2.5, 3.84, 10.0, 40.0, 1e6, 1e300, np.inf]
_EDGE_DF = [np.nan, -np.inf, -1.0, 0.0, 1e-300, 1e-3, 0.5, 1.0, 1.5, 2.0, 3.0, 7.0, 29.0, 120.0, 1e4, 1e10,
            np.inf]


def _grid(*axes: list[float], seed: int) -> tuple[np.ndarray, ...]:
    """Every combination of the edge values, plus random draws over the usual range."""
    mesh = [m.ravel() for m in np.meshgrid(*[np.asarray(a, dtype=float) for a in axes], indexing="ij")]
    rng = np.random.default_rng(seed)
    extra = [rng.uniform(size=4000) if i == 0 and axes[0] is _EDGE_P else
             (rng.lognormal(0, 2, 4000) * rng.choice([-1, 1], 4000) if i == 0 else rng.lognormal(1, 2, 4000))
             for i in range(len(axes))]
    return tuple(np.concatenate([m, e]) for m, e in zip(mesh, extra, strict=True))


def _same_bits(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


CASES = [
    ("norm_cdf", stats.norm.cdf, (_EDGE_X,)),
    ("norm_sf", stats.norm.sf, (_EDGE_X,)),
    ("norm_ppf", stats.norm.ppf, (_EDGE_P,)),
    ("norm_isf", stats.norm.isf, (_EDGE_P,)),
    ("chi2_ppf", stats.chi2.ppf, (_EDGE_P, _EDGE_DF)),
    ("chi2_sf", stats.chi2.sf, (_EDGE_X, _EDGE_DF)),
    ("t_ppf", stats.t.ppf, (_EDGE_P, _EDGE_DF)),
    ("f_sf", stats.f.sf, (_EDGE_X, _EDGE_DF, _EDGE_DF)),
]


@pytest.mark.parametrize(("name", "ref", "axes"), CASES, ids=[c[0] for c in CASES])
def test_same_bits_as_scipy_stats(name, ref, axes):
    args = _grid(*axes, seed=len(name))
    ours = getattr(_dist, name)
    _same_bits(ours(*args), ref(*args))                      # arrays, element by element
    for i in range(0, args[0].size, 97):                     # python floats in, numpy float64 0-d out
        one = tuple(float(a[i]) for a in args)
        got, want = ours(*one), ref(*one)
        assert type(got) is type(want), (one, type(got), type(want))
        _same_bits(got, want)


def test_broadcasting_and_integer_arguments():
    q = np.array([[0.9], [0.975]])
    df = np.array([1, 4, 30])
    _same_bits(_dist.t_ppf(q, df), stats.t.ppf(q, df))
    _same_bits(_dist.chi2_ppf(0.95, 1), stats.chi2.ppf(0.95, 1))
    _same_bits(_dist.f_sf(3, 2, 10), stats.f.sf(3, 2, 10))
    _same_bits(_dist.chi2_sf(np.float32(3.5), 2), stats.chi2.sf(np.float32(3.5), 2))
    _same_bits(_dist.norm_cdf(np.arange(-3, 4)), stats.norm.cdf(np.arange(-3, 4)))
