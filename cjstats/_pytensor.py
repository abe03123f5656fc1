"""Reproducible PyTensor compiles for the PyMC samplers: the one copy of this guard (per-model and joint fits).

PyTensor 3 compiles PyMC's log density with numba and, by default, ``fastmath=True``, caching the compiled
pieces on disk (``<base_compiledir>/numba``). With fastmath LLVM may reassociate and fuse (FMA) floating-point
operations, and it does so differently when a graph's pieces are compiled together in one process (cold cache)
than when some are loaded from the on-disk cache (warm): the same fit with the same seed then gives different
bits, and NUTS, being chaotic, turns those into different draws. Measured on the joint fit of
``tests/comparisons/test_compare_bayes.py`` (seed 1, 300 + 300 draws): the generation interval's upper bound was
0.0933 with a cold cache and 0.1028 with a warm one, every time. With ``fastmath=False`` cold and warm give the
same bits (0.09844485970328415 both), at about the same speed. Without PyTensor's numba flag this is a no-op.
"""

from __future__ import annotations

import contextlib

__all__ = ["reproducible_compile"]


def reproducible_compile() -> contextlib.AbstractContextManager:
    """A context manager under which PyTensor compiles without fastmath (IEEE semantics), so a fit's bits do not
    depend on the state of the compile cache."""
    try:
        import pytensor
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    if not hasattr(pytensor.config, "numba__fastmath"):  # pragma: no cover - a PyTensor without the numba backend
        return contextlib.nullcontext()
    return pytensor.config.change_flags(numba__fastmath=False)
