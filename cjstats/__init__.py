"""cjstats: variance components, judge-bias intervals and CyclicJudge designs for LLM-judge evaluations.

Implements Zhu et al., "CyclicJudge: Mitigating Judge Bias Efficiently in LLM-based Evaluation".
"""

from __future__ import annotations

__version__ = "0.1.0"

from cjstats import datasets, stats
from cjstats.allocate import (
    Allocation, cost_weighted_allocation, judge_residual_variances, optimise, poststratified_mean,
)
from cjstats.components import VarianceComponents
from cjstats.estimators import BACKENDS, compare, estimate
from cjstats.exceptions import CjstatsError, CjstatsWarning, NotEstimableWarning
from cjstats.judges import judge_f_test, judge_table
from cjstats.predictive import predictive_design_variance
from cjstats.plan import (
    all_judges_schedule, cyclic_schedule, random_schedule, realised_variance, schedule_audit,
)
from cjstats.scores import GroupDesign, Scores, read_mtbench_judgments, read_scores
from cjstats.subsample import subsample_strategies
from cjstats.variance import (
    design_variance, grand_mean_variance, minimum_detectable_difference, pool_variance, power_to_detect,
    scenarios_for_target_se, strategy_variance, variance_contributions,
)

__all__ = [
    "__version__", "datasets", "read_scores", "read_mtbench_judgments", "Scores", "GroupDesign",
    "estimate", "compare", "BACKENDS", "VarianceComponents", "judge_f_test", "judge_table",
    "CjstatsError", "CjstatsWarning", "NotEstimableWarning",
    "grand_mean_variance", "variance_contributions", "strategy_variance", "design_variance", "pool_variance",
    "scenarios_for_target_se", "minimum_detectable_difference", "power_to_detect",
    "cyclic_schedule", "random_schedule", "all_judges_schedule", "schedule_audit", "realised_variance",
    "optimise", "Allocation", "cost_weighted_allocation", "poststratified_mean", "judge_residual_variances",
    "subsample_strategies", "predictive_design_variance",
    "stats",
]
