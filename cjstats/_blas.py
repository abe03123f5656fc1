"""One BLAS thread while a fit runs: the one copy of this guard (REML per-model and joint fits, the ordinal ML fit).

Those fits work on small matrices (K x K, a few dozen parameters); OpenBLAS's threads cost more than they save
there, and on a busy machine waking them made each evaluation or optimiser step 3 to 50 times slower (measured:
41 ms against 2 ms per joint REML evaluation on MentalAlign; 0.15 s against 0.003 s for 15 L-BFGS-B steps of an
ordinal fit). Without threadpoolctl installed this is a no-op.
"""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = ["single_thread_blas"]

_CONTROLLER: list[Any] = []


def single_thread_blas() -> contextlib.AbstractContextManager:
    """A context manager limiting BLAS to one thread (threadpoolctl), or a null context without it."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")
