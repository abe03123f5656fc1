"""scenario_judge_verdict: does the fitted scenario x judge interaction change the recommended design?"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pandas as pd

import cjstats as cj
from cjstats.decisions.optimise import scenario_judge_verdict

sys.path.insert(0, str(Path(__file__).parent / "estimators"))
from test_scenario_judge import simulate  # noqa: E402

PRICES = dict(budget=400, generation_cost=5.0, judge_costs={f"j{i}": 1.0 for i in range(4)})


def _fit_with(values: dict[str, float]):
    """A real fit (20 scenarios, 3 generations, 4 judges) whose point estimates are set to ``values``."""
    fit = cj.estimate(simulate(n=20, m=3, k=4, seed=21, s2sj=1.0), method="anova")
    comp = fit.components.copy()
    for c, v in values.items():
        comp.loc[comp["component"] == c, ["estimate", "lower", "upper"]] = v
    return dataclasses.replace(fit, components=comp)


BASE = dict(scenario=0.5, generation=0.3, residual=0.2, judge_panel=0.4)


def test_a_large_interaction_changes_the_design():
    """The decision layer's example (tests/test_scenario_judge_decisions.py, checked by simulation there):
    generations cost 5, calls 1, budget 400: cyclic 1 x 3 without the term, all 4 judges x 2 with s2 = 2."""
    msg = scenario_judge_verdict(_fit_with({**BASE, "scenario_judge": 2.0}), **PRICES)
    assert msg.startswith("it changes the recommended design at 400 calls: all, 4 judge(s) per generation, n = 20 x m = 2")
    assert "cyclic, 1 judge(s) per generation, n = 20 x m = 3" in msg


def test_a_small_interaction_does_not():
    msg = scenario_judge_verdict(_fit_with({**BASE, "scenario_judge": 0.01}), **PRICES)
    assert msg.startswith("it does not change the recommended design")


def test_not_fitted_gives_none():
    fit = cj.estimate(simulate(n=10, m=1, k=4, seed=22), method="anova")
    assert scenario_judge_verdict(fit) is None
    fit = cj.estimate(simulate(n=10, m=2, k=4, seed=22), method="anova", scenario_judge=False)
    assert scenario_judge_verdict(fit) is None


def test_default_budget_is_the_data():
    fit = cj.estimate(simulate(n=20, m=3, k=4, seed=23, s2sj=1.0), method="anova")
    assert "at 240 calls" in scenario_judge_verdict(fit)
    assert isinstance(fit.components, pd.DataFrame)
