"""The report's sections: one module each, registered below in report order (one line per section).

Each module has ``render(inputs) -> list[item]``: it formats the results :func:`cjstats.reporting.plan.compute_inputs`
computed (figures from :mod:`cjstats.plots`, tables through :func:`cjstats.reporting.items.format_table`, sentences)
and computes nothing itself. A section that returns no items is left out (an optional result not given). A new
section is one module here and one :func:`~cjstats.reporting.registry.register_section` line;
``tests/test_report_sections.py`` checks it from its first commit.
"""

from __future__ import annotations

from cjstats.reporting.registry import Section, register_section
from cjstats.reporting.sections import (
    allocation, comparisons, components, covariates, design, diagnosis, drift, f_tests, gstudy, human_agreement, judges,
    sequences, strategies,
)
from cjstats.reporting.sections.covariates import covariate_items, covariate_paragraph
from cjstats.reporting.sections.diagnosis import diagnosis_items
from cjstats.reporting.sections.drift import drift_items, drift_paragraph
from cjstats.reporting.sections.sequences import sequence_items, sequence_paragraph

__all__ = ["diagnosis_items", "drift_items", "drift_paragraph", "sequence_items", "sequence_paragraph",
           "covariate_items", "covariate_paragraph"]

register_section(Section("diagnosis", "What the file holds (doctor)", 10, diagnosis.render))
register_section(Section("design", "Design summary", 20, design.render))
register_section(Section("components", "Variance components", 30, components.render))
register_section(Section("judges", "Judge tables and judge-bias heatmap", 40, judges.render))
register_section(Section("f_tests", "F tests of the judge effect", 50, f_tests.render))
register_section(Section("strategies", "Strategy curves", 60, strategies.render))
register_section(Section("allocation", "Allocation recommendation and frontier", 70, allocation.render))
register_section(Section("comparisons", "Model comparisons", 80, comparisons.render))
register_section(Section("human_agreement", "Human agreement", 90, human_agreement.render))
register_section(Section("drift", "Judge drift", 100, drift.render))
register_section(Section("sequences", "Sequential comparisons", 110, sequences.render))
register_section(Section("covariates", "Judge slopes on covariates", 120, covariates.render))
register_section(Section("gstudy", "How reliable the ranking is (G study)", 130, gstudy.render))
