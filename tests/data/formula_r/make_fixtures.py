"""Write tests/data/formula_r/r_refits.json: R (lme4 / ordinal) refitting the formula each case's fit states.

Run from the repository root: ``python tests/data/formula_r/make_fixtures.py`` (needs Rscript with lme4, ordinal
and jsonlite). tests/test_formula_r.py reads the JSON (no R needed) and, when Rscript is present, reruns R live.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from formula_r_cases import CASES, run_case  # noqa: E402


def refit_in_r(names: list[str], workdir: Path) -> dict:
    manifest = []
    for name in names:
        table, fit = run_case(name)
        csv = workdir / f"{name}.csv"
        table.to_csv(csv, index=False, float_format="%.17g")
        manifest.append({"name": name, "kind": CASES[name][0], "formula": fit.formula, "csv": str(csv)})
    (workdir / "manifest.json").write_text(json.dumps(manifest))
    subprocess.run(["Rscript", str(HERE / "refit.R"), str(workdir / "manifest.json"), str(workdir / "out.json")],
                   check=True, capture_output=True, text=True)
    return json.loads((workdir / "out.json").read_text())


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        out = refit_in_r(list(CASES), Path(tmp))
    (HERE / "r_refits.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {HERE / 'r_refits.json'}")
