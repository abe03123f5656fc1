"""Shared fixtures: small real and simulated score tables."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from cjstats.io.read import read_scores
from sim_helpers import table3_frame as _sim


@pytest.fixture(autouse=True)
def _reml_path_as_in_a_new_process(monkeypatch):
    """Every test starts on the default REML model's numpy path, as a new process does.

    A process switches to the compiled kernel once its numpy-path work reaches ``KERNEL_AFTER``
    (:func:`cjstats.estimators.reml.scenario_judge._kernel_for_fit`); the two paths agree to ~1e-12, which a fit
    can amplify past a 1e-12 comparison. Without this, whether two fits compared in one test straddle the switch
    depends on which tests ran before in the same worker (pytest-xdist schedules them dynamically), so such a test
    could pass or fail from run to run. Now each test's path depends on the test alone. The kernel itself is tested
    against the numpy path in tests/estimators/test_scenario_judge_algebra.py.
    """
    try:
        import cjstats.estimators.reml.scenario_judge as sjm
    except ImportError:  # pragma: no cover - a reduced install
        return
    monkeypatch.setattr(sjm, "_NUMPY_WORK", [0])
    if "sj_reml" in sjm._COMPILED:
        monkeypatch.delitem(sjm._COMPILED, "sj_reml")


@pytest.fixture
def small_balanced_frame() -> pd.DataFrame:
    """Two models, 12 scenarios x 3 generations x 4 judges, from Table 3 components."""
    return pd.concat([_sim(12, 3, 4, seed=1, model="Qwen"), _sim(12, 3, 4, seed=2, model="GPT")],
                     ignore_index=True)


@pytest.fixture
def small_balanced_scores(small_balanced_frame):
    return read_scores(small_balanced_frame)


@pytest.fixture
def one_generation_scores():
    """m = 1: generation is not identifiable."""
    return read_scores(_sim(15, 1, 4, seed=3))


@pytest.fixture
def criterion_scores():
    """A table with a criterion column (two criteria)."""
    a = _sim(10, 2, 3, seed=4).assign(criterion="helpful")
    b = _sim(10, 2, 3, seed=5).assign(criterion="safe")
    return read_scores(pd.concat([a, b], ignore_index=True))


@pytest.fixture
def runner():
    """click's in-process CLI runner."""
    return CliRunner()


@pytest.fixture
def score_file(tmp_path, small_balanced_frame):
    """The small balanced table written to a CSV file."""
    p = tmp_path / "scores.csv"
    small_balanced_frame.to_csv(p, index=False)
    return p
