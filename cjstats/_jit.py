"""numba compilation of the package's optional loop kernels: the one copy of the lazy import and its fallback.

numba is optional (the ``reml`` and ``bayes`` extras bring it); every kernel has a numpy path that is used when
numba is not importable. Kernels are compiled on first use and cached on disk (``cache=True``), so a later
process loads them instead of compiling again.
"""

from __future__ import annotations

from typing import Any

__all__ = ["jit_kernel"]

_COMPILED: dict[str, Any] = {}


def jit_kernel(name: str, fn: Any, fastmath: bool | set[str] = False) -> Any:
    """``fn`` compiled by numba (cached on disk, GIL released, IEEE division), or ``None`` without numba.

    ``fastmath`` is numba's: False (IEEE arithmetic in the written order) or a set of LLVM flags, e.g.
    ``{"contract"}`` (a * b + c as one fused multiply-add, rounded once, as the BLAS kernels do)."""
    if name not in _COMPILED:
        try:
            import warnings

            import numba

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _COMPILED[name] = numba.njit(cache=True, nogil=True, fastmath=fastmath, error_model="numpy")(fn)
        except Exception:  # noqa: BLE001 - numba missing or unusable: the numpy path is exact, only slower
            _COMPILED[name] = None
    return _COMPILED[name]
