"""Write the tables of the per-pair degrees-of-freedom reference (run once; the CSVs and tables.json are checked in).

    python tests/data/lme4_pair_df/make_tables.py && Rscript tests/data/lme4_pair_df/fit_lmertest.R

Simulated with the lme4 joint suite's generator (``tests/data/lme4_joint_suite/make_suite.py``: same model, same
draw order, no cjstats import), plus one real subset: the first 20 scenarios of three models of
``tests/data/lme4_joint/real_mentalalign.csv``. Families: ``pd`` (20 scenarios x 3 models x 4 judges and a few
neighbours, per-model model x scenario variances well inside the parameter space, some unbalanced) for the
pair degrees of freedom; ``inc`` (60-70% of the judge calls removed) for the REML judge x model variance.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "lme4_joint_suite"))
from make_suite import design, simulate  # noqa: E402

BASE = {"s2_scenario": 0.1, "s2_generation": 0.05, "s2_residual": 0.26}
UNEQUAL = {**BASE, "s2_model_scenario": [0.02, 0.1, 0.3]}

DESIGNS = [
    design("pd", 3, 20, 4, 1, 11, UNEQUAL),
    design("pd", 3, 20, 4, 1, 12, UNEQUAL),
    design("pd", 3, 20, 4, 1, 13, {**BASE, "s2_model_scenario": [0.05, 0.05, 0.05]}),
    design("pd", 3, 20, 4, 2, 14, UNEQUAL),
    design("pd", 3, 20, 4, 1, 15, UNEQUAL, missing=0.20),
    design("pd", 4, 15, 3, 2, 16, {**BASE, "s2_model_scenario": [0.05, 0.1, 0.2, 0.4]}, missing=0.15),
    design("pd", 3, 12, 5, 1, 17, UNEQUAL, missing=0.10),
    design("inc", 3, 30, 4, 1, 18, UNEQUAL, missing=0.60),
    design("inc", 4, 40, 5, 1, 19, {**BASE, "s2_model_scenario": [0.05, 0.1, 0.2, 0.4]}, missing=0.70),
]


def real_subset() -> pd.DataFrame:
    d = pd.read_csv(HERE.parent / "lme4_joint" / "real_mentalalign.csv")
    keep = ["claude-3.5-haiku", "gpt-4o-mini", "llama-3.1-8b-instruct"]
    scen = sorted(d["scenario"].unique())[:20]
    return d[d["model"].isin(keep) & d["scenario"].isin(scen)].reset_index(drop=True)


if __name__ == "__main__":
    (HERE / "tables").mkdir(exist_ok=True)
    out = {}
    for d in DESIGNS:
        df = simulate(d)
        df.to_csv(HERE / "tables" / f"{d['name']}.csv", index=False, float_format="%.6g")
        out[d["name"]] = {**d, "n_rows": len(df)}
    df = real_subset()
    df.to_csv(HERE / "tables" / "real_p3_n20_k4_m1.csv", index=False)
    out["real_p3_n20_k4_m1"] = {"name": "real_p3_n20_k4_m1", "family": "real", "n_rows": len(df),
                                "source": "tests/data/lme4_joint/real_mentalalign.csv, first 20 scenarios"}
    (HERE / "tables.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"{len(out)} tables, {sum(v['n_rows'] for v in out.values())} rows")
