"""The joint REML backend of the registry (:data:`cjstats.estimators.JOINT_BACKENDS`, ``method="reml"``): the
joint REML fit of :mod:`cjstats.estimators.joint.reml`, and with ``covariates`` the same criterion with each
judge's slope on each covariate in its fixed effects (:mod:`cjstats.estimators.joint.covariates`). One module
above both, so that neither imports the other's caller."""

from __future__ import annotations

from typing import Any

from cjstats.estimators.joint._joint import JointFit, JointSource

__all__ = ["fit"]


def fit(stats: Any, *, ci_level: float, seed: int | None = None, rows: Any = None,
        model_scenario: str = "pooled", covariates: Any = None) -> JointFit:
    """The joint backend protocol (:class:`cjstats.estimators.Backend`): the joint REML fit of the joint statistics
    ``stats``. REML reads no rows (``rows`` is unused) and is deterministic (``seed`` is unused). ``covariates``
    (declared in its ``JointCapabilities.options`` and ``stats_options``, so ``stats`` carry their statistics) adds
    each judge's slope on each covariate to the fixed effects: the same criterion through
    :func:`cjstats.estimators.joint.reml.fit_nested`, returning a
    :class:`~cjstats.estimators.joint.covariates.CovariateFit`."""
    source = JointSource(stats, rows)
    if covariates is not None:
        from cjstats.estimators.joint.covariates import fit_joint_covariates

        return fit_joint_covariates(source, covariates, ci_level=ci_level, model_scenario=model_scenario)
    from cjstats.estimators.joint.reml import fit_joint

    return fit_joint(source, ci_level=ci_level, model_scenario=model_scenario)
