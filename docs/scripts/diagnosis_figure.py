"""Write docs/figures/diagnosis.png: `cjstats doctor`'s figure for the bundled MentalAlign table (docs/doctor.md).

Run from the repository root: python docs/scripts/diagnosis_figure.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import cjstats as cj
from cjstats.datasets import export
from cjstats.plots import diagnosis_plot, set_style

ROOT = Path(__file__).resolve().parents[2]

if __name__ == "__main__":
    set_style()
    with tempfile.TemporaryDirectory() as tmp:
        path = export("mentalalign", Path(tmp) / "mentalalign.csv")
        diag = cj.diagnose(path)
    diagnosis_plot(diag).savefig(ROOT / "docs" / "figures" / "diagnosis.png")
