"""cjstats: variance components, judge-bias intervals and CyclicJudge designs for LLM-judge evaluations.

Implements Zhu et al., "CyclicJudge: Mitigating Judge Bias Efficiently in LLM-based Evaluation".

Public names are imported on first use (PEP 562 module ``__getattr__`` over the name -> module table
``_LAZY``), so ``import cjstats`` does not import numpy, pandas or scipy. A new public name is one line in
``_LAZY`` and one in ``__all__``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from cjstats.exceptions import CjstatsError, CjstatsWarning, IdentificationWarning, NotEstimableWarning

__version__ = "0.1.0"

#: public name -> the module that defines it (a module itself when the name is a subpackage).
_LAZY: dict[str, str] = {
    "datasets": "cjstats.datasets",
    "io": "cjstats.io",
    "Allocation": "cjstats.decisions.optimise",
    "cost_weighted_allocation": "cjstats.decisions.optimise",
    "judge_residual_variances": "cjstats.decisions.optimise",
    "optimise": "cjstats.decisions.optimise",
    "poststratified_mean": "cjstats.decisions.optimise",
    "VarianceComponents": "cjstats.results.components",
    "Model": "cjstats.results.model",
    "can_fit": "cjstats.estimators",
    "Components": "cjstats.decisions.components",
    "VarianceDesign": "cjstats.decisions.components",
    "score_variance": "cjstats.decisions.components",
    "register_contribution": "cjstats.decisions.components",
    "g_study": "cjstats.decisions.gstudy",
    "replication": "cjstats.decisions.gstudy",
    "GStudy": "cjstats.results.gstudy",
    "Replication": "cjstats.results.gstudy",
    "BACKENDS": "cjstats.estimators",
    "compare": "cjstats.estimators",
    "estimate": "cjstats.estimators",
    "judge_f_test": "cjstats.estimators.judges",
    "judge_test": "cjstats.estimators.judges",
    "judge_table": "cjstats.estimators.judges",
    "predictive_design_variance": "cjstats.decisions.predictive",
    "all_judges_schedule": "cjstats.decisions.schedules",
    "cyclic_schedule": "cjstats.decisions.schedules",
    "random_schedule": "cjstats.decisions.schedules",
    "realised_variance": "cjstats.decisions.schedules",
    "schedule_audit": "cjstats.decisions.schedules",
    "GroupDesign": "cjstats.io.scores",
    "Scores": "cjstats.io.scores",
    "read_scores": "cjstats.io.read",
    "read_mtbench_judgments": "cjstats.io.fastchat",
    "read_inspect_log": "cjstats.io.inspect",
    "read_promptfoo": "cjstats.io.promptfoo",
    "read_deepeval": "cjstats.io.deepeval",
    "read_lm_eval_samples": "cjstats.io.lm_eval",
    "diagnose": "cjstats.results.diagnosis",
    "Diagnosis": "cjstats.results.diagnosis",
    "subsample_strategies": "cjstats.decisions.subsample",
    "design_variance": "cjstats.decisions.formulas",
    "grand_mean_variance": "cjstats.decisions.formulas",
    "minimum_detectable_difference": "cjstats.decisions.formulas",
    "pool_variance": "cjstats.decisions.formulas",
    "power_to_detect": "cjstats.decisions.formulas",
    "scenarios_for_target_se": "cjstats.decisions.formulas",
    "strategy_variance": "cjstats.decisions.formulas",
    "variance_contributions": "cjstats.decisions.formulas",
    "stats": "cjstats.stats",
    "plots": "cjstats.plots",
    "tables": "cjstats.results.tables",
    "report": "cjstats.reporting",
    "judge_agreement": "cjstats.estimators.humans",
    "Agreement": "cjstats.estimators.humans",
    "ppi_means": "cjstats.estimators.humans",
    "PPIMeans": "cjstats.estimators.humans",
    "label_budget": "cjstats.decisions.labels",
    "simulate_scores": "cjstats.studies",
    "Truth": "cjstats.studies",
    "Design": "cjstats.studies",
    "design_grid": "cjstats.studies",
    "simulation_study": "cjstats.studies",
    "StudyResult": "cjstats.studies",
    "compare_models": "cjstats.estimators.joint",
    "fit_joint": "cjstats.estimators.joint",
    "self_preference": "cjstats.estimators.joint",
    "ModelComparison": "cjstats.estimators.joint",
    "SelfPreference": "cjstats.estimators.joint",
    "JointFit": "cjstats.estimators.joint",
    "difference_variance": "cjstats.decisions.differences",
    "difference_components": "cjstats.decisions.differences",
    "optimise_difference": "cjstats.decisions.differences",
    "judge_drift": "cjstats.estimators.drift", "DriftResult": "cjstats.estimators.drift",
    "confidence_sequence": "cjstats.decisions.sequential",
    "sequential_plan": "cjstats.decisions.sequential",
    "CovariateFit": "cjstats.estimators.joint.covariates", "simulate_length_bias": "cjstats.studies.simulate_covariates",
}

#: public names that are modules (``cj.tables`` is :mod:`cjstats.results.tables`).
_MODULES = frozenset({"datasets", "io", "stats", "plots", "tables"})

__all__ = [
    "__version__", "datasets", "io", "read_scores", "read_mtbench_judgments", "read_inspect_log", "Scores",
    "GroupDesign", "estimate", "compare", "BACKENDS", "VarianceComponents", "Model", "can_fit",
    "Components", "VarianceDesign", "score_variance", "register_contribution",
    "g_study", "replication", "GStudy", "Replication", "judge_f_test", "judge_test", "judge_table",
    "CjstatsError", "CjstatsWarning", "NotEstimableWarning", "IdentificationWarning",
    "grand_mean_variance", "variance_contributions", "strategy_variance", "design_variance", "pool_variance",
    "scenarios_for_target_se", "minimum_detectable_difference", "power_to_detect",
    "cyclic_schedule", "random_schedule", "all_judges_schedule", "schedule_audit", "realised_variance",
    "optimise", "Allocation", "cost_weighted_allocation", "poststratified_mean", "judge_residual_variances",
    "subsample_strategies", "predictive_design_variance",
    "stats", "plots", "tables", "report",
    "judge_agreement", "Agreement", "ppi_means", "PPIMeans", "label_budget",
    "simulate_scores", "Truth", "Design", "design_grid", "simulation_study", "StudyResult",
    "compare_models", "fit_joint", "self_preference", "ModelComparison", "SelfPreference", "JointFit",
    "difference_variance", "difference_components", "optimise_difference",
    "judge_drift", "DriftResult",
    "read_promptfoo", "read_deepeval", "read_lm_eval_samples", "diagnose", "Diagnosis",
    "confidence_sequence", "sequential_plan",
    "CovariateFit", "simulate_length_bias",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cjstats' has no attribute '{name}'")
    mod = import_module(module)
    value = mod if name in _MODULES else getattr(mod, name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)   # the public API only: not the helpers above, nor the subpackages imported so far


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from cjstats import datasets, io, plots, stats
    from cjstats.results import tables
    from cjstats.decisions.differences import difference_components, difference_variance, optimise_difference
    from cjstats.decisions.sequential import confidence_sequence, sequential_plan
    from cjstats.estimators.joint import (
        JointFit, ModelComparison, SelfPreference, compare_models, fit_joint, self_preference,
    )
    from cjstats.decisions.labels import label_budget
    from cjstats.estimators.humans import Agreement, PPIMeans, judge_agreement, ppi_means
    from cjstats.reporting import report
    from cjstats.studies import Design, StudyResult, Truth, design_grid, simulate_scores, simulation_study
    from cjstats.decisions.optimise import (
        Allocation, cost_weighted_allocation, judge_residual_variances, optimise, poststratified_mean,
    )
    from cjstats.results.components import VarianceComponents
    from cjstats.estimators import BACKENDS, compare, estimate
    from cjstats.io.fastchat import read_mtbench_judgments
    from cjstats.io.inspect import read_inspect_log
    from cjstats.estimators.drift import DriftResult, judge_drift
    from cjstats.estimators.joint.covariates import CovariateFit
    from cjstats.studies.simulate_covariates import simulate_length_bias
    from cjstats.io.deepeval import read_deepeval
    from cjstats.io.lm_eval import read_lm_eval_samples
    from cjstats.io.promptfoo import read_promptfoo
    from cjstats.results.diagnosis import Diagnosis, diagnose
    from cjstats.estimators.judges import judge_f_test, judge_table, judge_test
    from cjstats.decisions.schedules import (
        all_judges_schedule, cyclic_schedule, random_schedule, realised_variance, schedule_audit,
    )
    from cjstats.decisions.predictive import predictive_design_variance
    from cjstats.io.read import read_scores
    from cjstats.io.scores import GroupDesign, Scores
    from cjstats.decisions.subsample import subsample_strategies
    from cjstats.decisions.formulas import (
        design_variance, grand_mean_variance, minimum_detectable_difference, pool_variance, power_to_detect,
        scenarios_for_target_se, strategy_variance, variance_contributions,
    )
