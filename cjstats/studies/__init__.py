"""Simulation studies: known-truth data (:mod:`cjstats.studies.data`) and the estimator-comparison workbench
(:mod:`cjstats.studies.study`)."""

from __future__ import annotations

from cjstats.studies.data import MISSPECIFICATIONS, Design, Truth, design_grid, simulate_scores
from cjstats.studies.study import StudyResult, simulation_study, summarise_replicates

__all__ = ["MISSPECIFICATIONS", "Design", "Truth", "design_grid", "simulate_scores", "StudyResult",
           "simulation_study", "summarise_replicates"]
