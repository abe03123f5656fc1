"""Draw docs/figures/sequence_plot.png: ``python docs/scripts/sequential_figure.py`` (deterministic).

MentalAlign, criterion Empathy: gpt-4o against human-original, scenarios in a seeded random arrival order,
the empirical-Bernstein confidence sequence on the 1-5 scale.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

import cjstats as cj  # noqa: E402
from cjstats.plots import sequence_plot  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "figures"

if __name__ == "__main__":
    f = cj.datasets.load("mentalalign").to_frame()
    f = f[f["criterion"] == "Empathy"]
    order = list(np.random.default_rng(0).permutation(f["scenario"].astype(str).unique()))
    res = cj.confidence_sequence(f, "gpt-4o", "human-original", bounds=(1, 5), order=order)
    fig = sequence_plot(res)
    fig.savefig(OUT / "sequence_plot.png", dpi=120, bbox_inches="tight")
    print(res.summary().as_text())
