r"""Central differences: the one numerical derivative of the ML ordinal backend.

For fn: R^n -> R (or R^m) and a step h_j per coordinate,

    d fn / d x_j  ~=  (fn(x + h_j e_j) - fn(x - h_j e_j)) / (2 h_j),

e_j the j-th unit vector; the error is O(h_j^2) (plus rounding ~eps |fn| / h_j). The step is h_j = h (absolute,
the default) or, with ``relative=True``, h_j = h (1 + |x_j|). Used for the panel score's gradient and the
Jacobian of the reported parameters (:mod:`cjstats.estimators.ordinal_ml`), the nested model's Hessian from its
analytic gradient (and its gradient with ``gradient="fd"``: :mod:`.nested`) and the m = 1 Hessian from the
analytic gradient (:mod:`.optimise`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["pinv_held", "central_difference"]


def central_difference(fn: Callable[[np.ndarray], Any], x: np.ndarray, h: float, *, relative: bool = False,
                       after_each: Callable[[], None] | None = None) -> np.ndarray:
    r"""The central-difference derivative of ``fn`` at ``x``: column j is
    (fn(x + h_j e_j) - fn(x - h_j e_j)) / (2 h_j), h_j = h, or h (1 + |x_j|) with ``relative``.

    Returns the gradient, shape (n,), for a scalar ``fn`` and the Jacobian, shape (m, n), for an ``fn`` with
    values of shape (m,). ``fn`` is called 2n times, in the order x + h_0 e_0, x - h_0 e_0, x + h_1 e_1, ...,
    and never at x itself (a caller that needs fn(x) evaluates it). ``after_each``, if given, is called after
    the two evaluations of each coordinate (e.g. to restore a warm-start state that they moved)."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for j in range(x.size):
        hj = h * (1.0 + abs(x[j])) if relative else h
        e = np.zeros_like(x)
        e[j] = hj
        cols.append((np.asarray(fn(x + e), dtype=np.float64) - np.asarray(fn(x - e), dtype=np.float64))
                    / (2.0 * hj))
        if after_each is not None:
            after_each()
    if not cols:
        return np.empty((*np.shape(fn(x)), 0))
    return np.stack(cols, axis=-1)


def pinv_held(h: np.ndarray, held: Any = ()) -> np.ndarray:
    """Moore-Penrose inverse of the observed information on the entries not ``held`` (those fixed at a limit:
    rows and columns 0); NaN where the Hessian is not finite."""
    h = np.asarray(h, dtype=np.float64)
    if not np.all(np.isfinite(h)):
        return np.full_like(h, np.nan)
    free = np.array([i for i in range(h.shape[0]) if i not in set(held)], dtype=np.int64)
    out = np.zeros_like(h)
    out[np.ix_(free, free)] = np.linalg.pinv(h[np.ix_(free, free)])
    return out
