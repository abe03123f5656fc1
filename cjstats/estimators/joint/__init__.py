"""Comparisons of several models on one joint fit: paired differences, ranks, judge self-preference, designs.

- :func:`fit_joint`: the joint multi-model fit (``anova``, ``reml``, ``bayes``), with the components
  ``model_scenario`` and ``judge_model`` (docs/estimands.md, "Several models") in the tidy components table.
- :func:`compare_models`: paired differences, simultaneous rank intervals and ``p_best``.
- :func:`self_preference`: the interaction contrast of a judge and its own model family.
- (the design of a comparison is a decision, :mod:`cjstats.decisions.differences`): variance of a paired difference under strategies A/B/C and
  shared or independent judge schedules.
"""

from __future__ import annotations

from cjstats.estimators.joint._joint import JointFit
from cjstats.estimators.joint.models import ModelComparison, compare_models, fit_joint
from cjstats.estimators.joint.self_preference import SelfPreference, parse_families, self_preference

__all__ = ["JointFit", "ModelComparison", "SelfPreference", "compare_models", "fit_joint", "parse_families",
           "self_preference"]
