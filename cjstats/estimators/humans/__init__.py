"""LLM judges against human (reference) raters: agreement, bias, prediction-powered means, label budgets.

:func:`judge_agreement` compares each LLM judge and the panel mean with the reference raters;
:func:`ppi_means` estimates each model's mean on the human scale from all judge scores plus human labels on
a subset (PPI++). The closed-form label budgets are a decision: :mod:`cjstats.decisions.labels`.
"""

from __future__ import annotations

from cjstats.estimators.humans.agreement import Agreement, judge_agreement
from cjstats.estimators.humans.ppi import PPIMeans, ppi_means

__all__ = ["judge_agreement", "Agreement", "ppi_means", "PPIMeans"]
