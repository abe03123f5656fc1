"""cjstats: variance components, judge-bias intervals and CyclicJudge designs for LLM-judge evaluations.

Implements Zhu et al., "CyclicJudge: Mitigating Judge Bias Efficiently in LLM-based Evaluation".
"""

from __future__ import annotations

__version__ = "0.1.0"

from cjstats import datasets
from cjstats.components import VarianceComponents
from cjstats.estimators import BACKENDS, compare, estimate
from cjstats.exceptions import CjstatsError, CjstatsWarning, NotEstimableWarning
from cjstats.judges import judge_f_test, judge_table
from cjstats.scores import GroupDesign, Scores, read_mtbench_judgments, read_scores

__all__ = [
    "__version__", "datasets", "read_scores", "read_mtbench_judgments", "Scores", "GroupDesign",
    "estimate", "compare", "BACKENDS", "VarianceComponents", "judge_f_test", "judge_table",
    "CjstatsError", "CjstatsWarning", "NotEstimableWarning",
]
