"""PyMC fits give the same bits whatever the state of PyTensor's compile cache (cjstats._pytensor).

PyTensor 3 compiles with numba and fastmath by default; a graph compiled in one piece (cold cache) and one
assembled from cached pieces (warm cache) then round differently, and the same seed gave different draws (the
joint fit of test_compare_bayes: generation upper bound 0.0933 cold, 0.1028 warm). The samplers now compile
without fastmath.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pymc")

import pytensor  # noqa: E402

import cjstats as cj  # noqa: E402
from cjstats._pytensor import reproducible_compile  # noqa: E402
from cjstats.studies.simulate_joint import simulate_joint  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class _Stop(Exception):
    pass


def _record_fastmath(seen):
    def sample(*args, **kwargs):
        seen.append(pytensor.config.numba__fastmath)
        raise _Stop
    return sample


def _table():
    return simulate_joint(n=6, m=2, mu=[0, .5], gamma=[-.3, 0, .3], s2_scenario=.5, s2_model_scenario=.2,
                          s2_generation=.1, s2_residual=.3, rng=1)


@pytest.mark.skipif(not hasattr(pytensor.config, "numba__fastmath"), reason="PyTensor without the numba backend")
def test_pymc_samplers_compile_without_fastmath(monkeypatch):
    import pymc as pm

    from cjstats.estimators.bayes import _sample_pymc

    seen: list[bool] = []
    monkeypatch.setattr(pm, "sample", _record_fastmath(seen))
    before = pytensor.config.numba__fastmath
    with pytest.raises(_Stop):
        cj.fit_joint(_table(), "bayes", seed=1)
    with pytest.raises(_Stop):
        _sample_pymc(None, draws=10, tune=10, chains=1, seed=1, progress=False, target_accept=.9, cores=1)
    assert seen == [False, False]
    assert pytensor.config.numba__fastmath == before           # the flag is restored afterwards
    with reproducible_compile():
        assert pytensor.config.numba__fastmath is False


_SCRIPT = """
import hashlib, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import pymc as pm
import cjstats as cj
sys.path.insert(0, {tests!r})
from estimators.test_reproducible_compile import _table
seen = {{}}
orig = pm.sample
def sample(*a, **k):
    seen["idata"] = orig(*a, **k)
    return seen["idata"]
pm.sample = sample
cj.fit_joint(_table(), "bayes", seed=1, draws=100, tune=100)
post = seen["idata"].posterior
print(hashlib.sha1(b"".join(np.ascontiguousarray(post[v].values).tobytes() for v in sorted(post.data_vars)))
      .hexdigest())
"""


@pytest.mark.slow
def test_joint_fit_bits_do_not_depend_on_the_compile_cache(tmp_path):
    # one process compiles everything (cold cache), the next loads it from disk (warm): same posterior bits
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTENSOR_FLAGS=f"base_compiledir={tmp_path / 'pt'}")
    code = _SCRIPT.format(tests=str(ROOT / "tests"))
    out = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900,
                          check=True).stdout.split()[-1] for _ in range(2)]
    assert out[0] == out[1]
