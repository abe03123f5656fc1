"""The identification check (cjstats.estimators.identification): separation, unanimity, too few scenarios for a
per-model variance, run-off and singular information, and the convergence policy of the ordinal ML fits.

Every case here gave confident nonsense, an overflow or a traceback before the check existed (issue: "No number
the data cannot support"): e.g. a judge that passes every item got offset 6.75 with SE 133,554 and judge_panel
15.2 [0, 1.2e6]; a strong model's pass rate got an interval above 1.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.estimators import identification as ident
from cjstats.estimators.ordinal_ml.optimise import kkt_check


def _table(n=40, k=4, binary=False, sep_judge=None, sep_val=None, seed=1, shift=0.0, m=1):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        a = rng.normal()
        for gen in range(m):
            b = rng.normal(0, 0.5) if m > 1 else 0.0
            for l in range(k):
                z = a + b + (l - (k - 1) / 2) * 0.3 + shift + rng.logistic()
                y = int(z > 0) if binary else int(np.clip(np.round(z + 3), 1, 5))
                if sep_judge == l:
                    y = sep_val
                rows.append(("m", f"s{i}", f"g{gen}", f"j{l}", y))
    return pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])


def _fit(df, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fit = cj.estimate(df, method="ordinal", **kw)
    return fit, [x for x in w if issubclass(x.category, cj.IdentificationWarning)]


def _row(fit, comp):
    return fit.components.set_index("component").loc[comp]


CASES = [pytest.param(dict(binary=True, sep_judge=0, sep_val=1), 1.0, id="binary-judge-passes-all"),
         pytest.param(dict(binary=True, sep_judge=2, sep_val=0), 0.0, id="binary-judge-fails-all"),
         pytest.param(dict(sep_judge=0, sep_val=5), 5.0, id="1to5-judge-gives-5"),
         pytest.param(dict(sep_judge=3, sep_val=1), 1.0, id="1to5-judge-gives-1")]


@pytest.mark.parametrize("link", ["probit", "logit"])
@pytest.mark.parametrize(("spec", "value"), CASES)
def test_a_separated_judge_has_no_finite_offset_and_the_rest_is_its_exact_limit(spec, value, link):
    df = _table(**spec)
    judge = f"j{spec['sep_judge']}"
    fit, w = _fit(df, link=link)
    assert len(w) == 1 and judge in str(w[0].message) and "separation" in str(w[0].message)
    for comp in ("judge_panel", "judge_population"):
        r = _row(fit, comp)
        assert not r["identifiable"] and math.isnan(r["estimate"]) and math.isnan(r["upper"])
        assert judge in r["note"]
    off = fit.judge_offsets.set_index("judge")
    assert off.loc[judge, "estimate"] == (math.inf if value == df.score.max() else -math.inf)
    assert math.isnan(off.loc[judge, "std_error"])
    # every other number is the fit without the separated judge's rows (the exact limit of the MLE)
    sub, w_sub = _fit(df[df.judge != judge], link=link)
    assert not w_sub
    for comp in ("scenario",):
        assert _row(fit, comp)["estimate"] == pytest.approx(_row(sub, comp)["estimate"], rel=1e-6)
    other = off.drop(judge)
    np.testing.assert_allclose(other["estimate"], sub.judge_offsets.set_index("judge")["estimate"], atol=1e-6)
    k = df.judge.nunique()
    mu_sub = _row(sub, "mu")["estimate"]
    assert _row(fit, "mu")["estimate"] == pytest.approx(((k - 1) * mu_sub + value) / k, rel=1e-9)
    # every finite number stays finite and modest: no run-off anywhere
    finite = fit.components[["estimate", "lower", "upper"]].to_numpy(dtype=float)
    assert np.all(np.abs(finite[np.isfinite(finite)]) < 1e3)
    assert fit.diagnostics["m"]["converged"]


@pytest.mark.parametrize("link", ["probit", "logit"])
def test_per_judge_thresholds_with_a_separated_judge(link):
    df = _table(binary=True, sep_judge=0, sep_val=1)
    fit, w = _fit(df, link=link, thresholds="judge")
    assert len(w) == 1 and "'j0'" in str(w[0].message)
    mu = _row(fit, "mu")
    assert mu["identifiable"] and 0 < mu["lower"] < mu["estimate"] < mu["upper"] < 1


@pytest.mark.parametrize("link", ["probit", "logit"])
def test_a_near_perfect_model_gives_no_overflow_and_a_rate_inside_0_1(link):
    df = _table(n=300, binary=True, shift=6.0, seed=3)          # 4 fails in 1,200 calls
    assert 1 <= (df.score == 0).sum() <= 5
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fit, w = _fit(df, link=link)
    mu = _row(fit, "mu")
    assert 0 < mu["lower"] < mu["estimate"] < mu["upper"] < 1
    jp = _row(fit, "judge_panel")
    assert not jp["identifiable"] or jp["upper"] < 100
    assert w                                   # the judge who passed everything is named


def test_an_empty_category_in_the_middle_is_fitted():
    df = _table()
    df = df[df.score != 3]                     # nobody gave a 3
    fit, w = _fit(df, link="logit")
    assert not w and fit.diagnostics["m"]["converged"]
    assert np.isfinite(fit.components.set_index("component").loc[["mu", "scenario", "judge_panel"], "upper"]).all()


def test_unanimous_scenarios_are_one_sentence():
    df = _table()
    df["score"] = np.where(df.scenario.str[1:].astype(int) % 2 == 0, 5, 1)
    with pytest.raises(cj.CjstatsError, match="unanimous"):
        cj.estimate(df, method="ordinal")


def test_every_judge_separated_is_one_sentence():
    df = _table(k=2, binary=True)
    df["score"] = np.where(df.judge == "j0", 1, 0)
    with pytest.raises(cj.CjstatsError, match="one score to every item"):
        cj.estimate(df, method="ordinal")


@pytest.mark.parametrize("link", ["probit", "logit"])
def test_quasi_separation_between_judge_groups_is_flagged_not_printed(link):
    # judge j0 scores only 5-6, the others only 1-5: theta(5|6) and gamma[j0] run off together
    rng = np.random.default_rng(3)
    rows = []
    for i in range(20):
        a = rng.normal()
        for l in range(4):
            z = a + rng.normal()
            y = (6 if z > 0 else 5) if l == 0 else int(np.clip(np.round(z + 3), 1, 5))
            rows.append(("m", f"s{i}", f"j{l}", y))
    df = pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])
    fit, w = _fit(df, link=link)
    assert w and "quasi-complete separation" in str(w[0].message)
    assert not _row(fit, "judge_panel")["identifiable"]
    assert fit.judge_offsets["estimate"].isna().all()
    assert not fit.diagnostics["m"]["converged"]


def test_nested_generation_fit_with_a_separated_judge():
    df = _table(m=3, sep_judge=2, sep_val=1)
    fit, w = _fit(df)
    assert len(w) == 1
    assert _row(fit, "generation")["identifiable"]
    assert fit.judge_offsets.set_index("judge").loc["j2", "estimate"] == -math.inf


def test_separation_finder_on_hand_made_counts():
    cat = np.array([1, 1, 1, 0, 1, 2, 1, 2, 0])
    judge = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    f = ident.ordinal_separation(cat, judge, ["a", "b", "c"], np.array([1.0, 2.0, 3.0]))
    assert f == []                                            # 'a' is alone in the middle category: finite
    cat = np.array([1, 1, 1, 0, 1, 0, 1, 2, 2])               # b in {1, 2}, c in {2, 3}: they meet at 2 only
    f = ident.ordinal_separation(cat, judge, ["a", "b", "c"], np.array([1.0, 2.0, 3.0]))
    assert [x.parameter for x in f] == ["gamma[c]"] and "quasi-complete" in f[0].reason
    f = ident.ordinal_separation(cat, judge, ["a", "b", "c"], np.array([1.0, 2.0, 3.0]), thresholds="judge")
    assert [x.parameter for x in f] == ["gamma[a]", "thresholds[b]", "thresholds[c]"]   # a: one category, left out
    assert ident.unanimous(np.array([0, 0, 1, 1]), np.array([0, 0, 1, 1]))
    assert not ident.unanimous(np.array([0, 1, 1, 1]), np.array([0, 0, 1, 1]))


def test_kkt_check():
    h = np.diag([2.0, 1.0])
    ok = type("R", (), {"status": 0, "message": "CONVERGENCE", "nit": 5})()
    limit = type("R", (), {"status": 1, "message": "STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT", "nit": 1000})()
    free = np.arange(2)
    assert kkt_check(1.0, np.zeros(2), h, free, ok) == (True, "")
    assert not kkt_check(1.0, np.zeros(2), h, free, limit)[0]
    assert not kkt_check(1.0, np.array([0.1, 0.0]), h, free, ok)[0]
    assert not kkt_check(1.0, np.zeros(2), np.diag([1.0, -1e-3]), free, ok)[0]
    assert not kkt_check(math.inf, np.zeros(2), h, free, ok)[0]
    # a parameter held at its lower bound whose gradient points inside is not a maximum
    assert not kkt_check(1.0, np.array([-0.5, 0.0]), h, np.array([1]), ok)[0]
    assert kkt_check(1.0, np.array([0.5, 0.0]), h, np.array([1]), ok)[0]


def test_an_optimiser_at_its_iteration_limit_is_not_converged_and_warns(monkeypatch):
    import scipy.optimize

    real = scipy.optimize.minimize

    def short(*a, **kw):
        kw["options"] = {**kw.get("options", {}), "maxiter": 2}
        return real(*a, **kw)

    monkeypatch.setattr(scipy.optimize, "minimize", short)
    with pytest.warns(cj.CjstatsWarning, match="did not converge"):
        fit = cj.estimate(_table(), method="ordinal")
    assert fit.diagnostics["m"]["converged"] is False
    assert "iteration limit" in fit.diagnostics["m"]["message"]


def test_per_model_variance_of_a_model_on_one_scenario_is_one_sentence():
    rng = np.random.default_rng(0)
    rows = [(m, f"s{i}", f"j{l}", rng.normal()) for m in "abc" for i in (range(20) if m != "c" else [0])
            for l in range(3)]
    df = pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])
    with pytest.raises(cj.CjstatsError, match="model 'c' is scored on 1 scenario"):
        cj.compare_models(df, method="reml", model_scenario="per_model")


def test_bayes_ordinal_says_the_separated_offset_is_prior_driven():
    pytest.importorskip("pymc")
    df = _table(n=20, k=3, binary=True, sep_judge=0, sep_val=1)
    with pytest.warns(cj.IdentificationWarning, match="set by the prior"):
        fit = cj.estimate(df, method="bayes", likelihood="ordinal", draws=100, tune=100, chains=2, seed=1)
    assert "prior-driven" in _row(fit, "judge_panel")["note"]
    off = fit.judge_offsets.set_index("judge")
    assert "prior-driven" in off.loc["j0", "ci_method"] and "prior-driven" not in off.loc["j1", "ci_method"]


def test_cli_prints_no_number_for_a_separated_judge(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from cli_helpers import run_main

    path = tmp_path / "sep.csv"
    _table(binary=True, sep_judge=0, sep_val=1).to_csv(path, index=False)
    code, out, err = run_main(["decompose", str(path), "--method", "ordinal"])
    assert code == 0, err
    assert "Traceback" not in out + err
    assert "separation" in out + err
    assert "judge_panel" in out
    assert "+inf" in out                       # the separated judge's offset, not a missing number


def test_per_judge_thresholds_with_generations_hold_unused_categories_at_their_limits():
    rng = np.random.default_rng(2)
    rows = []
    for i in range(30):
        a = rng.normal()
        for g in range(3):
            b = rng.normal(0, 0.5)
            for l in range(3):
                y = int(np.clip(np.round(a + b + rng.logistic() * 0.8 + 3), 1, 5 if l == 0 else 4))
                rows.append(("m", f"s{i}", f"g{g}", f"j{l}", y))      # only j0 ever gives 5
    df = pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score"])
    fit, w = _fit(df, thresholds="judge")
    d = fit.diagnostics["m"]
    assert d["converged"], d["message"]                # was: not converged (information not positive definite)
    assert len(d["x"]) == 1 + 3 * 4 + 1 and w           # log s_a, 3 judges x 4 thresholds, log s_b; j1, j2 named
    assert all(_row(fit, c)["identifiable"] for c in ("mu", "scenario", "generation"))


def test_report_on_a_separated_table_says_why_it_does_not_simulate(tmp_path):
    df = _table(n=20, k=3, binary=True, sep_judge=0, sep_val=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cj.IdentificationWarning)
        html = cj.report(cj.read_scores(df), method="ordinal")
    assert "No allocation:" in html and "Not simulated:" in html and "complete separation" in html
    assert "+inf" in html
