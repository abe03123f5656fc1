"""Per-judge and shared thresholds on clinician-like edge tables (20 profiles x 4 raters on 1-6, one rater alone in
an extreme category), against ordinal::clmm and clmm2(nominal = ~judge).

Fixture: tests/data/ordinal_ml/edge/r_edge.json, made by fit_edge.R from the CSVs of make_edge.py. Before the
identification check and the per-judge threshold limits, these fits stopped up to 10.4 log-likelihood units below
clmm2 (thresholds running off to +-inf for the categories a rater never uses) and said converged.

clmm2 does not keep a judge's thresholds increasing. Where its thresholds increase for every judge its
log-likelihood is that of the proper model, and ours must reach it. Where they do not, clmm2 has left the model
(a threshold below the one before it gives some category a negative probability, and the categories a judge uses
get probabilities that sum past 1), so its number exceeds the supremum of the proper model; ours stays below it.
"""

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cjstats as cj

DATA = Path(__file__).parent.parent / "data" / "ordinal_ml" / "edge"
REF = json.loads((DATA / "r_edge.json").read_text())
NAMES = sorted(REF)


def _fit(name, link, thresholds):
    d = pd.read_csv(DATA / f"{name}.csv")
    d["model"] = "m"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cj.IdentificationWarning)
        return cj.estimate(d, method="ordinal", link=link, thresholds=thresholds)


def _increasing(th):
    return all(np.all(np.diff(row) > 0) for row in np.asarray(th, dtype=float))


@pytest.mark.parametrize("link", ["probit", "logit"])
@pytest.mark.parametrize("name", NAMES)
def test_per_judge_thresholds_reach_clmm2_where_clmm2_is_a_proper_model(name, link):
    r = REF[name][f"nominal_{link}"]
    d = _fit(name, link, "judge").diagnostics["m"]
    assert d["converged"], d["message"]
    if _increasing(r["thresholds"]):
        assert d["loglik"] >= r["loglik"] - 1e-4
        assert d["loglik"] <= r["loglik"] + 1e-2
    else:
        assert d["loglik"] <= r["loglik"] + 1e-4


def test_the_fixture_holds_both_kinds():
    kinds = [_increasing(REF[n][f"nominal_{link}"]["thresholds"]) for n in NAMES for link in ("probit", "logit")]
    assert any(kinds) and not all(kinds)


@pytest.mark.parametrize("link", ["probit", "logit"])
@pytest.mark.parametrize("name", NAMES)
def test_shared_thresholds_equal_clmm(name, link):
    r = REF[name][f"clmm_{link}"]
    fit = _fit(name, link, "shared")
    d = fit.diagnostics["m"]
    assert d["converged"], d["message"]
    assert d["loglik"] == pytest.approx(r["loglik"], abs=2e-4)
    c = fit.components.set_index("component")
    assert np.isfinite(c.loc["judge_panel", ["estimate", "lower", "upper"]].astype(float)).all()
    assert c.loc["judge_panel", "upper"] < 20
