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
from cjstats.humans import Agreement, PPIMeans, judge_agreement, label_budget, ppi_means
from cjstats.predictive import predictive_design_variance
from cjstats.plan import (
    all_judges_schedule, cyclic_schedule, random_schedule, realised_variance, schedule_audit,
)
from cjstats.scores import GroupDesign, Scores, read_mtbench_judgments, read_scores
from cjstats.subsample import subsample_strategies
from cjstats.studies import Design, StudyResult, Truth, design_grid, simulate_scores, simulation_study
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
    "judge_agreement", "Agreement", "ppi_means", "PPIMeans", "label_budget",
    "simulate_scores", "Truth", "Design", "design_grid", "simulation_study", "StudyResult",
    "stats",
]

# figures, the HTML report and paper tables (issue 12); matplotlib and jinja2 load only when used
from cjstats import plots, tables  # noqa: E402
__all__ += ["plots", "report", "tables"]

# ``report`` names the HTML-report function; the text-report module cjstats.report stays importable by its full
# name (``from cjstats.report import demo_report``) because it is loaded first.
from cjstats import report as _text_report  # noqa: E402,F401
from cjstats.reporting import report  # noqa: E402

from cjstats.comparisons import (  # noqa: E402  (issue 10: model comparisons)
    JointFit, ModelComparison, SelfPreference, compare_models, difference_components, difference_variance, fit_joint,
    optimise_difference, self_preference,
)

__all__ += ["compare_models", "fit_joint", "self_preference", "ModelComparison", "SelfPreference", "JointFit",
            "difference_variance", "difference_components", "optimise_difference"]
