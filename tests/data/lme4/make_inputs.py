"""Write the score tables that ``fit_lme4.R`` fits (run from the repository root; deterministic).

    .venv/bin/python tests/data/lme4/make_inputs.py && Rscript tests/data/lme4/fit_lme4.R

Simulated tables come from the paper's model (``cjstats.studies.simulate``) with the Table 3 MT-Bench components;
the real ones are slices of ``../shared/data`` (HANNA, MIT licence; MentalAlign-70k, MIT licence).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores

HERE = Path(__file__).parent
DATA = Path(__file__).resolve().parents[4] / "shared" / "data"


def _sim(n, m, k, model, seed, **kw):
    c = TABLE3_MTBENCH[model]
    return simulate_scores(n=n, m=m, k=k, s2_scenario=kw.pop("s2_scenario", c["scenario"]),
                           s2_generation=kw.pop("s2_generation", c["generation"]), s2_residual=c["residual"],
                           judge_offsets=panel_offsets(k, c["judge_panel"]), mu=c["mu"], model=model, seed=seed,
                           **kw)


def balanced() -> pd.DataFrame:
    return _sim(30, 3, 4, "Qwen", 101)


def unbalanced() -> pd.DataFrame:
    """Random calls missing, whole generations missing, a judge missing for some scenarios, m from 2 to 4."""
    df = _sim(40, 4, 5, "Llama", 202)
    rng = np.random.default_rng(203)
    keep = rng.random(len(df)) >= 0.10                                   # 10% of judge calls lost
    keep &= ~((df["scenario"] < 10) & (df["generation"] == 3))             # generation 3 lost in 10 scenarios
    keep &= ~((df["scenario"].between(10, 14)) & (df["generation"] >= 2))  # m = 2 in 5 scenarios
    keep &= ~((df["scenario"] >= 30) & (df["judge"] == "judge_4"))         # judge_4 never saw 10 scenarios
    return df[keep].reset_index(drop=True)


def boundary() -> pd.DataFrame:
    """Scenario variance truly zero: every scenario has the same mean of its cell means."""
    df = _sim(20, 3, 4, "GPT", 303, s2_scenario=0.0)
    cell_mean = df.groupby(["scenario", "generation"])["score"].transform("mean")
    scen_mean = df.assign(c=cell_mean).groupby("scenario")["c"].transform("mean")
    df["score"] = df["score"] - scen_mean + df["score"].mean()
    return df


def one_generation() -> pd.DataFrame:
    return _sim(50, 1, 4, "Claude", 404, missing=0.05)


def real_hanna() -> pd.DataFrame:
    """HANNA, story source GPT, criterion Coherence, the 4 judge prompt variants as generations (m = 4)."""
    df = pd.read_csv(DATA / "hanna" / "hanna.csv.gz")
    df = df[(df["model"] == "GPT") & (df["criterion"] == "Coherence") & (df["judge_type"] == "llm")]
    df = df.assign(generation=df["eval_prompt"])
    return df[["model", "scenario", "generation", "judge", "score"]].reset_index(drop=True)


def real_mentalalign() -> pd.DataFrame:
    """MentalAlign-70k, responses of human-original, criterion Guidance, the 4 LLM judges (2 calls unparsed)."""
    df = pd.read_csv(DATA / "mentalalign70k" / "mentalalign70k.csv.gz")
    df = df[(df["model"] == "human-original") & (df["criterion"] == "Guidance") & (df["judge_type"] == "llm")]
    return df[["model", "scenario", "generation", "judge", "score"]].reset_index(drop=True)


CASES = {"balanced": balanced, "unbalanced": unbalanced, "boundary": boundary, "one_generation": one_generation,
         "real_hanna": real_hanna, "real_mentalalign": real_mentalalign}

if __name__ == "__main__":
    for name, make in CASES.items():
        df = make()
        df.to_csv(HERE / f"{name}.csv", index=False, float_format="%.17g")
        print(name, len(df))
