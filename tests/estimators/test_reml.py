"""The REML backend: agreement with lme4 and statsmodels, REML = ANOVA on balanced data, known truth on
unbalanced designs, interval coverage, the boundary, the statsmodels guards, diagnostics and errors.

Reference numbers from lme4 are checked in under ``tests/data/lme4`` with the R script that made them
(``fit_lme4.R``) and the tables it read (``make_inputs.py`` writes them); these tests need no R.

Monte Carlo tolerances: with R replicates a mean is checked within 4 standard errors (sd / sqrt(R)); a 95%
interval's coverage must fall in [0.93, 0.97], and with R = 1500 its binomial SE is
sqrt(0.95 * 0.05 / 1500) = 0.56 points, so the band is +-3.6 SE (a coverage of 0.92 or 0.98 would be
detected); with R = 1000 it is 0.69 points and the band +-2.9 SE. Seeds are fixed in advance.

The simulation studies draw one unbalanced layout and then simulate scores into it (``_with_scores``) and fit
the group directly (``reml._fit_group``): the design is fixed and the data random, as coverage is defined, and
no time goes into building tables. ``cj.estimate`` itself is exercised by every other test.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import cjstats as cj
from cjstats._blas import single_thread_blas
from cjstats.results.components import COMPONENT_COLUMNS
from cjstats.estimators.reml import core as rs
from cjstats.estimators.reml import engine
from cjstats.estimators import reml
from cjstats.estimators.reml import statsmodels_path
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io.scores import GroupData
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores

def estimate_paper(*args, **kwargs):
    """``cj.estimate`` of the paper's model (Eq. 1, no scenario x judge term): the lme4 fixtures and hand
    computations of this module are of that model; the model with the interaction is tested in
    test_scenario_judge.py and test_reml_scenario_judge_lme4.py."""
    kwargs.setdefault("scenario_judge", False)
    return cj.estimate(*args, **kwargs)


LME4 = Path(__file__).resolve().parents[1] / "data" / "lme4"
REF = json.loads((LME4 / "lme4_reference.json").read_text())
CASES = list(REF["cases"])
SMALL_CASES = ["balanced", "unbalanced", "boundary", "one_generation"]
REL = 1e-5


def _case(name: str) -> cj.Scores:
    return cj.read_scores(pd.read_csv(LME4 / f"{name}.csv"))


def _comp(fit: cj.VarianceComponents) -> pd.DataFrame:
    return fit.components.set_index("component")


def _close(a: float, b: float, rel: float, zero_scale: float) -> bool:
    """|a - b| <= rel * max(|b|, zero_scale): relative, with an absolute floor for variances at zero."""
    return abs(a - b) <= rel * max(abs(b), zero_scale)


def _layout(cells: list[tuple[int, int, int]]) -> GroupData:
    """A group with the given (scenario, generation, judge) calls and placeholder scores."""
    sc, ge, ju = np.array(cells).T
    df = pd.DataFrame({"model": "M", "scenario": sc, "generation": ge, "judge": [f"judge_{j}" for j in ju],
                       "score": (np.arange(len(sc)) * 7919 % 101) / 10.0})
    return next(cj.read_scores(df).groups())


def _with_scores(g: GroupData, rng: np.random.Generator, *, s2a: float, s2b: float, s2e: float, gamma: np.ndarray,
                 mu: float = 0.0) -> GroupData:
    """``g`` with fresh scores from the model (paper Eq. 1) on its layout."""
    y = (mu + math.sqrt(s2a) * rng.standard_normal(g.design.n_scenarios)[g.scenario]
         + math.sqrt(s2b) * rng.standard_normal(len(g.cell_scenario))[g.cell] + np.asarray(gamma)[g.judge]
         + math.sqrt(s2e) * rng.standard_normal(len(g.y)))
    return dataclasses.replace(g, y=y)


def _fit_rows(g: GroupData, interval: str):
    """Component rows (by name), judge offsets and diagnostics of one REML fit of ``g``."""
    gf, _ = reml._fit_group(g, level=0.95, interval=interval, path="structured", n_boot=2, rng=None,
                            progress=False, scenario_judge=False)
    return {r.component: r for r in gf.rows}, gf.offsets, gf.diagnostics


@pytest.fixture(scope="module")
def case_fits():
    return {name: estimate_paper(_case(name), method="reml") for name in CASES}


# ------------------------------------------------------------------------------------------------- lme4
class TestAgreementWithLme4:
    @pytest.mark.parametrize("case", CASES)
    def test_reml_criterion_equals_lme4_remlcrit(self, case, case_fits):
        """Same criterion, same optimum: -2 l_R agrees to 1e-9 relative."""
        d = next(iter(case_fits[case].diagnostics.values()))
        assert d["reml_criterion"] == pytest.approx(REF["cases"][case]["fixed"]["REMLcrit"], rel=1e-9)
        assert d["random_judge_model"]["reml_criterion"] == pytest.approx(REF["cases"][case]["random"]["REMLcrit"],
                                                                          rel=1e-9)

    @pytest.mark.parametrize("case", CASES)
    def test_variances_match_lme4(self, case, case_fits):
        ref = REF["cases"][case]
        c = _comp(case_fits[case])
        scale = ref["fixed"]["variances"]["residual"]
        for name, value in ref["fixed"]["variances"].items():
            assert _close(c.loc[name, "estimate"], value, REL, 1e-3 * scale), (case, name)
        assert _close(c.loc["judge_population", "estimate"], ref["random"]["variances"]["judge"], REL,
                      1e-3 * scale)
        rj = next(iter(case_fits[case].diagnostics.values()))["random_judge_model"]["variances"]
        for name, value in ref["random"]["variances"].items():
            assert _close(rj[name], value, REL, 1e-3 * scale), (case, "random", name)

    @pytest.mark.parametrize("case", CASES)
    def test_mu_gamma_and_their_standard_errors_match_lme4(self, case, case_fits):
        """contr.sum: lme4's intercept is mu and its coefficients are gamma_1..gamma_{K-1}."""
        ref = REF["cases"][case]["fixed"]
        fit = case_fits[case]
        c = _comp(fit)
        vcov = np.asarray(ref["vcov"])
        assert _close(c.loc["mu", "estimate"], ref["fixef"][0], REL, 1.0)
        assert _close(c.loc["mu", "std_error"], math.sqrt(vcov[0, 0]), REL, 0.0)
        off = fit.judge_offsets
        assert list(off["judge"]) == REF["cases"][case]["judges"]
        k = len(off)
        gamma = off["estimate"].to_numpy()
        np.testing.assert_allclose(gamma[: k - 1], ref["fixef"][1:], rtol=0, atol=REL)
        # Var(gamma_K) = Var(-sum gamma_l) = 1' V 1 over the contrast block
        var = np.append(np.diag(vcov)[1:], vcov[1:, 1:].sum())
        np.testing.assert_allclose(off["std_error"].to_numpy(), np.sqrt(var), rtol=REL)

    @pytest.mark.parametrize("case", [c for c in CASES if c != "boundary"])
    def test_profile_search_reproduces_lme4_profile_intervals(self, case):
        """lme4's confint(method="profile") profiles the ML deviance (profile() calls refitML()), so the
        search is run on the ML criterion here; lme4 interpolates its profile with splines, hence 1e-3.
        (cjstats reports REML-profile intervals; the search code is the same.) The boundary case is left
        out: with both scenario and generation at zero lme4's ML refit stops early (see fit_lme4.R)."""
        ref = REF["cases"][case]
        g = next(_case(case).groups())
        d = rs.build_design(g.cell, g.judge, g.cell_scenario, g.design.n_judges)
        ev = rs.Evaluator(d, rs.y_stats(d, g.y))
        ev.reml = False
        for model, key in (("fixed", "fixed"), ("random", "random")):
            fr = rs.fit_model(ev, model)
            names = ["residual", "scenario"] + (["generation"] if d.has_generation else [])
            names += ["judge"] if model == "random" else []
            for which, name in enumerate(names):
                lo, hi, _ = rs.profile_interval(ev, model, fr, which, 0.95)
                rlo, rhi = ref[key]["ml_profile_ci"][name]
                assert _close(lo, rlo, 1e-3, 1e-6), (case, model, name, lo, rlo)
                assert _close(hi, rhi, 1e-3, 1e-6), (case, model, name, hi, rhi)

    def test_boundary_optimum_is_below_lme4_default_optimizer(self, case_fits):
        """lme4's default optimizer (nloptwrap) stops at generation 0.0034 on the boundary case; the REML optimum
        (found by minqa's bobyqa too) has both variances at 0 and a criterion lower by 0.078."""
        ref = REF["cases"]["boundary"]["fixed"]
        d = case_fits["boundary"].diagnostics["GPT"]
        assert ref["REMLcrit_by_optimizer"]["nloptwrap"] - d["reml_criterion"] > 0.05
        assert d["reml_criterion"] == pytest.approx(ref["REMLcrit_by_optimizer"]["bobyqa"], rel=1e-9)
        assert d["boundary"] == {"scenario": True, "generation": True, "judge_population": False}


# ------------------------------------------------------------------------------------------- statsmodels
class TestStatsmodelsReference:
    @pytest.mark.parametrize("case", SMALL_CASES)
    def test_statsmodels_path_agrees_with_structured_path(self, case, case_fits):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CjstatsWarning)
            sm = estimate_paper(_case(case), method="reml", path="statsmodels")
        st = case_fits[case]
        d = next(iter(sm.diagnostics.values()))
        assert d["path"] == "statsmodels" and next(iter(st.diagnostics.values()))["path"] == "structured"
        a, b = _comp(sm), _comp(st)
        scale = b.loc["residual", "estimate"]
        for name in ("mu", "scenario", "generation", "residual", "judge_panel", "judge_population"):
            if not b.loc[name, "identifiable"]:
                continue
            assert _close(a.loc[name, "estimate"], b.loc[name, "estimate"], REL, 1e-3 * scale), (case, name)
            assert a.loc[name, "at_boundary"] == b.loc[name, "at_boundary"]
        np.testing.assert_allclose(sm.judge_offsets["estimate"], st.judge_offsets["estimate"], atol=REL * scale)
        if case == "boundary":     # statsmodels stops at a small positive variance here: the guard replaced it
            assert d["statsmodels"]["criterion_gap"] > 1e-3 and d["statsmodels"]["guards"]
        else:                      # statsmodels' own numbers, no guard involved
            assert abs(d["statsmodels"]["criterion_gap"]) < 1e-6 and not d["statsmodels"]["guards"]

    def test_statsmodels_model_keeps_the_scenario_intercept(self):
        """vc_formula without re_formula='1' silently drops the scenario intercept; the backend's model has it,
        and a model without it is refused."""
        import statsmodels.formula.api as smf

        g = next(_case("balanced").groups())
        gm = reml._GroupModel(g)
        model = statsmodels_path._statsmodels_model(gm)
        assert (model.k_re, model.k_vc) == (1, 1)
        df = pd.read_csv(LME4 / "balanced.csv")
        trap = smf.mixedlm("score ~ C(judge, Sum)", df, groups="scenario",
                           vc_formula={"generation": "0 + C(generation)"})
        assert trap.k_re == 0
        with pytest.raises(CjstatsError, match="re_formula='1'"):
            statsmodels_path._check_statsmodels_structure(trap, has_generation=True)

    @pytest.mark.parametrize("scale", [1.0, 1e-8])
    def test_guards_catch_statsmodels_issue_10239(self, scale):
        """Started near a zero scenario variance, statsmodels reports convergence with mu = 0.0 (its GLS
        drops the intercept once a variance is below 1e-10) and a generation variance far from the optimum.
        Both guards fire and the reported fit is the REML optimum, whatever the scale of the scores (at 1e-8
        every variance is below 1e-10, and an absolute tolerance of 1e-6 on the fixed effects missed it)."""
        g = next(_case("balanced").groups())
        g = dataclasses.replace(g, y=g.y * scale)
        gm = reml._GroupModel(g)
        model = statsmodels_path._statsmodels_model(gm)
        fe_bug, _ = model.get_fe_params(np.zeros((1, 1)), np.array([0.2]))
        assert fe_bug[0] == 0.0                  # the statsmodels behaviour the guard exists for
        optimum = rs.fit_model(gm.ev, "fixed")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fr, diag = reml._fit_statsmodels(gm, np.array([1e-20, 0.01]), optimum)
        assert diag["converged"] is True and diag["fe_params"][0] == 0.0          # statsmodels' answer
        assert any("10239" in s for s in diag["guards"])
        assert any("above the REML optimum" in s for s in diag["guards"])
        np.testing.assert_array_equal(fr.theta, optimum.theta)
        fe = reml._fixed_effects(gm.ev, fr.theta, fr.s2)
        assert fe["mu"] == pytest.approx(scale * REF["cases"]["balanced"]["fixed"]["fixef"][0], rel=1e-9)

    def test_statsmodels_failure_is_one_sentence(self):
        g = next(_case("boundary").groups())
        gm = reml._GroupModel(g)
        optimum = rs.fit_model(gm.ev, "fixed")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(CjstatsError, match="statsmodels MixedLM failed for model 'GPT'.*path='structured'"):
                reml._fit_statsmodels(gm, np.array([0.0, 0.01]), optimum)

    def test_small_positive_statsmodels_variance_is_replaced_by_the_boundary_optimum(self):
        """On the boundary case statsmodels stops at a small positive scenario variance; the REML optimum is
        at 0, so the guard fires, the result is flagged, and the warning goes through CjstatsWarning."""
        with pytest.warns(CjstatsWarning) as record:
            fit = estimate_paper(_case("boundary"), method="reml", path="statsmodels", interval="none")
        assert any("above the REML optimum" in str(w.message) for w in record)
        c = _comp(fit)
        assert c.loc["scenario", "at_boundary"] and c.loc["scenario", "estimate"] == 0.0
        sm = fit.diagnostics["GPT"]["statsmodels"]
        assert sm["variances"]["scenario"] > 0 and sm["criterion_gap"] > 1e-3
        assert sm["warnings"], "statsmodels' own warnings are kept in the diagnostics"

    def test_statsmodels_warnings_are_captured_not_printed(self, capsys):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CjstatsWarning)
            fit = estimate_paper(_case("boundary"), method="reml", path="statsmodels", interval="none")
        out = capsys.readouterr()
        assert out.out == "" and out.err == ""
        assert any("ConvergenceWarning" in w for w in fit.diagnostics["GPT"]["statsmodels"]["warnings"])


# ---------------------------------------------------------------------------------------- REML = ANOVA
def _balanced(n, m, k, seed, model="Qwen"):
    c = TABLE3_MTBENCH[model]
    return cj.read_scores(simulate_scores(n=n, m=m, k=k, s2_scenario=c["scenario"], s2_generation=c["generation"],
                                          s2_residual=c["residual"], judge_offsets=panel_offsets(k, c["judge_panel"]),
                                          mu=c["mu"], model=model, seed=seed))


class TestBalancedEqualsAnova:
    @pytest.mark.parametrize("n,m,k", [(20, 3, 4), (40, 5, 5), (25, 1, 3)])
    def test_reml_equals_anova_when_no_estimate_is_truncated(self, n, m, k):
        compared = 0
        for seed in range(6):
            sc = _balanced(n, m, k, seed)
            a = _comp(estimate_paper(sc, method="anova"))
            if (a.loc[a["identifiable"], "raw_estimate"] < 0).any():
                continue
            fit = estimate_paper(sc, method="reml")
            r = _comp(fit)
            for name in ("mu", "scenario", "generation", "residual", "judge_panel", "judge_population"):
                if not a.loc[name, "identifiable"]:
                    assert not r.loc[name, "identifiable"]
                    continue
                assert r.loc[name, "estimate"] == pytest.approx(a.loc[name, "estimate"], rel=1e-7), (seed, name)
            # intervals built from the same quantities are the same
            for name in ("mu", "judge_panel"):
                assert r.loc[name, "lower"] == pytest.approx(a.loc[name, "lower"], rel=1e-6)
                assert r.loc[name, "upper"] == pytest.approx(a.loc[name, "upper"], rel=1e-6)
            ao = estimate_paper(sc, method="anova").judge_offsets
            for col in ("estimate", "std_error", "lower", "upper"):
                np.testing.assert_allclose(fit.judge_offsets[col], ao[col], rtol=1e-7, atol=1e-9)
            compared += 1
        assert compared >= 4, "too few untruncated replicates to compare"

    def test_truncated_anova_generation_is_a_reml_boundary(self):
        """When MS_G < MS_W the ANOVA truncates generation at zero; REML's optimum is on that boundary too."""
        seen = 0
        for seed in range(40):
            sc = cj.read_scores(simulate_scores(n=15, m=2, k=3, s2_scenario=1.0, s2_generation=0.0, s2_residual=1.0,
                                                judge_offsets=[-0.5, 0.0, 0.5], seed=seed))
            a = _comp(estimate_paper(sc, method="anova"))
            r = _comp(estimate_paper(sc, method="reml", interval="none"))
            assert bool(r.loc["generation", "at_boundary"]) == bool(a.loc["generation", "raw_estimate"] < 0), seed
            seen += bool(a.loc["generation", "at_boundary"])
        assert seen >= 5


# ----------------------------------------------------------------------------------- known truth, coverage
QWEN = TABLE3_MTBENCH["Qwen"]
COV_N, COV_M, COV_K, COV_R = 30, 3, 5, 1500
S2_POP = QWEN["judge_panel"] * COV_K / (COV_K - 1)   # E[judge_panel] = s2_pop (K - 1)/K = Table 3's 0.947


def _unbalanced_layout() -> GroupData:
    """Random calls missing (10%), generation 2 lost in 6 scenarios, judge_4 absent from 6 scenarios."""
    df = simulate_scores(n=COV_N, m=COV_M, k=COV_K, s2_scenario=1.0, s2_generation=1.0, s2_residual=1.0,
                         judge_offsets=np.zeros(COV_K), missing=0.10, seed=20261121)
    keep = ~((df["scenario"] < 6) & (df["generation"] == 2)) & ~((df["scenario"] >= 24) & (df["judge"] == "judge_4"))
    df = df[keep]
    return _layout(list(zip(df["scenario"], df["generation"], df["judge"].str[6:].astype(int))))


def _coverage(g: GroupData, rng: np.random.Generator, r_reps: int, *, s2a: float, s2b: float, s2e: float,
              mu: float, gamma=None, s2_pop: float | None = None, interval: str = "profile") -> dict:
    """Fit ``r_reps`` data sets simulated on the layout ``g``; estimates and whether each interval covered.

    With ``s2_pop`` the judges are drawn afresh in each replicate (gamma = u - mean(u), u ~ N(0, s2_pop)): the
    truth for judge_population is s2_pop and for judge_panel the realised mean(gamma^2) (its interval is
    conditional on the panel); otherwise ``gamma`` is fixed.
    """
    k = len(g.judge_labels)
    names = ["mu", "scenario", "generation", "residual", "judge_panel", "judge_population"]
    est = {c: np.empty(r_reps) for c in names + ["judge_panel_raw"]}
    truth_panel = np.empty(r_reps)
    covered = {c: np.zeros(r_reps, dtype=bool) for c in names}
    covered["gamma"] = np.zeros((r_reps, k), dtype=bool)
    with single_thread_blas():        # as reml.fit does
        for r in range(r_reps):
            if s2_pop is not None:
                u = rng.standard_normal(k) * math.sqrt(s2_pop)
                gamma = u - u.mean()
            y = _with_scores(g, rng, s2a=s2a, s2b=s2b, s2e=s2e, gamma=gamma, mu=mu)
            rows, offsets, _ = _fit_rows(y, interval)
            truth = {"mu": mu, "scenario": s2a, "generation": s2b, "residual": s2e,
                     "judge_panel": float(np.mean(np.asarray(gamma) ** 2)), "judge_population": s2_pop}
            for name in names:
                est[name][r] = rows[name].estimate
                covered[name][r] = truth[name] is not None and rows[name].lower <= truth[name] <= rows[name].upper
            est["judge_panel_raw"][r] = rows["judge_panel"].raw_estimate
            truth_panel[r] = truth["judge_panel"]
            covered["gamma"][r] = [o["lower"] <= gj <= o["upper"] for o, gj in zip(offsets, gamma)]
    return {"est": est, "covered": covered, "truth_panel": truth_panel}


@pytest.fixture(scope="module")
def coverage_study():
    """R replicates on one unbalanced layout, judges drawn afresh in each (see ``_coverage``)."""
    return _coverage(_unbalanced_layout(), np.random.default_rng(20261122), COV_R, s2a=QWEN["scenario"],
                     s2b=QWEN["generation"], s2e=QWEN["residual"], mu=QWEN["mu"], s2_pop=S2_POP)


class TestUnbalancedKnownTruth:
    def test_the_layout_is_unbalanced_three_ways(self):
        g = _unbalanced_layout()
        d = rs.build_design(g.cell, g.judge, g.cell_scenario, COV_K)
        gens = np.bincount(g.cell_scenario)
        judge4 = np.zeros(COV_N, dtype=bool)
        judge4[g.scenario[g.judge == COV_K - 1]] = True
        assert not g.design.balanced and d.n_obs < d.n_cells * COV_K       # random calls missing
        assert (gens[:6] <= 2).all() and gens.max() == COV_M                 # whole generations missing
        assert not judge4[24:].any() and judge4[:24].all()                   # judge_4 absent from 6 scenarios

    @pytest.mark.parametrize("name", ["mu", "scenario", "generation", "residual", "judge_population"])
    def test_estimates_recover_truth(self, coverage_study, name):
        truth = {"mu": QWEN["mu"], "scenario": QWEN["scenario"], "generation": QWEN["generation"],
                 "residual": QWEN["residual"], "judge_population": S2_POP}[name]
        x = coverage_study["est"][name]
        se = x.std(ddof=1) / math.sqrt(COV_R)
        assert abs(x.mean() - truth) <= 4 * se, (name, x.mean(), truth, se)

    def test_judge_panel_is_unbiased_for_the_realised_panel(self, coverage_study):
        """The corrected estimate (before truncation) minus the replicate's own mean(gamma^2) averages to 0."""
        diff = coverage_study["est"]["judge_panel_raw"] - coverage_study["truth_panel"]
        assert abs(diff.mean()) <= 4 * diff.std(ddof=1) / math.sqrt(COV_R)

    @pytest.mark.parametrize("name", ["mu", "scenario", "generation", "residual", "judge_panel", "judge_population",
                                      "gamma"])
    def test_interval_coverage_is_nominal(self, coverage_study, name):
        """Every 95% interval, and each judge's offset interval (judge_4 is the one missing from 6 scenarios)."""
        rate = np.atleast_1d(coverage_study["covered"][name].mean(axis=0))
        assert ((0.93 <= rate) & (rate <= 0.97)).all(), (name, rate)


#: Five scenarios of very unequal size: three with one generation, one with 6, one with 30 (K = 3). The
#: scenario variance is estimated from 5 scenario means of very different precision, so neither n - 1 nor
#: the residual df describe the noise of Var(mu_hat).
UNEQUAL = [(s, gen, j) for s, m in enumerate([1, 1, 1, 6, 30]) for gen in range(m) for j in range(3)]
UNEQUAL_GAMMA = np.array([-0.5, 0.1, 0.4])
UNEQUAL_R = 1000


@pytest.fixture(scope="module")
def unequal_study():
    """R replicates on the UNEQUAL layout with closed-form intervals only (mu, gamma, judge_panel)."""
    return _coverage(_layout(UNEQUAL), np.random.default_rng(4242), UNEQUAL_R, s2a=1.0, s2b=0.2, s2e=1.0,
                     mu=0.0, gamma=UNEQUAL_GAMMA, interval="none")


class TestUnequalScenarioSizes:
    @pytest.mark.parametrize("name", ["mu", "judge_panel", "gamma"])
    def test_interval_coverage_is_nominal(self, unequal_study, name):
        """mu's t interval needs Satterthwaite degrees of freedom here: with the fixed n - 1 = 4 it covered
        91.5% (1,500 replicates); R = 1000 gives SE 0.69 points, so [0.93, 0.97] is +-2.9 SE."""
        rate = np.atleast_1d(unequal_study["covered"][name].mean(axis=0))
        assert ((0.93 <= rate) & (rate <= 0.97)).all(), (name, rate)

    def test_satterthwaite_df_match_a_brute_force_computation(self):
        """nu = 2 V^2 / (g' A g) for V = Var(mu_hat) and Var(gamma_hat_l), with g the gradient of V in the variances
        phi = (s2_residual, s2_scenario, s2_generation) by central differences of GLS refits and A = 2 H^{-1},
        H the Hessian of -2 l_R in phi by second differences of the criterion (nothing from the backend's
        analytic derivatives). Here nu for mu is not n - 1 = 4."""
        g = _with_scores(_layout(UNEQUAL), np.random.default_rng(7), s2a=1.0, s2b=0.2, s2e=1.0,
                         gamma=UNEQUAL_GAMMA)
        _, _, diag = _fit_rows(g, "none")
        gm = reml._GroupModel(g)
        fr = rs.fit_model(gm.ev, "fixed")
        assert diag["df_method"] == "full" and (fr.theta > 0).all()
        phi0 = np.r_[fr.s2, fr.s2 * fr.theta]

        def crit(phi):
            return gm.ev.full("fixed", phi[0], phi[1:] / phi[0])[0]

        def variances(phi):
            fe = reml._fixed_effects(gm.ev, phi[1:] / phi[0], phi[0])
            return np.r_[fe["var_mu"], np.diag(fe["cov_gamma"])]

        h = 1e-4 * phi0
        q = len(phi0)
        hess = np.empty((q, q))
        grad = np.empty((q, gm.k + 1))
        for i in range(q):
            ei = np.eye(q)[i] * h[i]
            grad[i] = (variances(phi0 + ei) - variances(phi0 - ei)) / (2 * h[i])
            for j in range(q):
                ej = np.eye(q)[j] * h[j]
                hess[i, j] = (crit(phi0 + ei + ej) - crit(phi0 + ei - ej) - crit(phi0 - ei + ej)
                              + crit(phi0 - ei - ej)) / (4 * h[i] * h[j])
        v = variances(phi0)
        df = 2 * v**2 / np.einsum("ic,ij,jc->c", grad, 2 * np.linalg.inv(hess), grad)
        np.testing.assert_allclose(np.r_[diag["df_mu"], diag["df_gamma"]], df, rtol=1e-4)
        assert abs(diag["df_mu"] - 4) > 0.1


# -------------------------------------------------------------------------------------------- boundary
class TestBoundary:
    def test_truly_zero_scenario_variance_is_flagged_at_the_boundary(self, case_fits):
        """Every scenario has the same mean of cell means: the REML optimum is s2_scenario = 0, reported as
        exactly 0, flagged, with no Wald standard error and a profile interval starting at 0."""
        fit = case_fits["boundary"]
        c = _comp(fit)
        row = c.loc["scenario"]
        assert row["at_boundary"] and row["estimate"] == 0.0 and row["raw_estimate"] == 0.0
        assert math.isnan(row["std_error"])
        assert row["lower"] == 0.0 and row["upper"] > 0.0
        assert row["ci_method"] == "profile likelihood (REML)"
        d = fit.diagnostics["GPT"]
        assert d["converged"] and d["singular"] and d["boundary"]["scenario"]
        assert not c.loc["residual", "at_boundary"]

    def test_boundary_flag_follows_the_mean_squares_replicate_by_replicate(self):
        """Balanced data with s2_scenario = 0: REML puts scenario on the boundary exactly when MS_S <= MS_G
        (MS_S/MS_G ~ F(n - 1, n(m - 1)) under the truth, so about P(F <= 1) of the time), and otherwise
        reports a clearly positive variance, never a tiny 'converged' number."""
        n, m, k = 20, 3, 4
        rng = np.random.default_rng(777)
        flagged, compared = 0, 0
        for _ in range(200):
            sc = cj.read_scores(simulate_scores(n=n, m=m, k=k, s2_scenario=0.0, s2_generation=0.6, s2_residual=1.0,
                                                judge_offsets=[-0.6, -0.2, 0.2, 0.6], seed=rng))
            an = estimate_paper(sc, method="anova")
            if _comp(an).loc["generation", "raw_estimate"] < 0:
                continue          # MS_G < MS_W changes the REML boundary condition; rare here
            ms = an.diagnostics["model"]
            r = _comp(estimate_paper(sc, method="reml", interval="none")).loc["scenario"]
            expect = ms["ms_scenario"] <= ms["ms_generation"]
            assert bool(r["at_boundary"]) == expect
            if r["at_boundary"]:
                assert r["estimate"] == 0.0
            else:
                assert r["estimate"] > 1e-6
            flagged += expect
            compared += 1
        p = stats.f.cdf(1.0, n - 1, n * (m - 1))
        assert abs(flagged / compared - p) <= 4 * math.sqrt(p * (1 - p) / compared)


# ------------------------------------------------------------------------------------------- intervals
class TestIntervals:
    @pytest.mark.parametrize("case", ["unbalanced", "boundary"])
    def test_profile_bounds_sit_on_the_chi2_cutoff(self, case):
        """At each reported bound the REML profile is min + chi2_{1, 0.95}, and a lower bound of 0 means the
        profile at 0 is within the cutoff. The profile is recomputed independently of the backend's search and
        optimiser: scipy's L-BFGS-B over the other variances phi (from three starts). The search stops at
        |zeta - z| < 1e-4, i.e. |statistic - z^2| < 2 z 1e-4 = 3.9e-4; the bound allows 5e-4."""
        from scipy import optimize

        g = next(_case(case).groups())
        d = rs.build_design(g.cell, g.judge, g.cell_scenario, g.design.n_judges)
        ev = rs.Evaluator(d, rs.y_stats(d, g.y))
        cut = stats.chi2.ppf(0.95, 1)
        for model in ("fixed", "random"):
            fr = rs.fit_model(ev, model)
            phi_hat = np.r_[fr.s2, fr.s2 * fr.theta]
            for which in range(len(phi_hat)):
                others = [j for j in range(len(phi_hat)) if j != which]

                def profile(v, which=which, others=others, model=model):
                    def crit(z):
                        phi = np.empty(len(phi_hat))
                        phi[which], phi[others] = v, z
                        return ev.full(model, phi[0], phi[1:] / phi[0])[0]
                    bounds = [(1e-6 * fr.s2, None) if j == 0 else (0.0, None) for j in others]
                    return min(optimize.minimize(crit, np.maximum(phi_hat[others], 1e-3 * fr.s2) * f,
                                                 method="L-BFGS-B", bounds=bounds,
                                                 options={"ftol": 1e-15, "gtol": 1e-9, "maxiter": 5000}).fun
                               for f in (1.0, 0.5, 2.0)) - fr.deviance

                lo, hi, _ = rs.profile_interval(ev, model, fr, which, 0.95)
                assert profile(hi) == pytest.approx(cut, abs=5e-4), (case, model, which, hi)
                if lo > 0:
                    assert profile(lo) == pytest.approx(cut, abs=5e-4), (case, model, which, lo)
                else:
                    assert which > 0 and profile(0.0) <= cut + 5e-4, (case, model, which)

    def test_a_failed_profile_search_is_reported_not_turned_into_a_bound(self, monkeypatch):
        """If the root search gives up, the bounds are NaN and a CjstatsWarning says so (a failed search used to
        come back as the bound 0)."""
        monkeypatch.setattr(engine, "_secant_root", lambda *args, **kwargs: math.nan)
        with pytest.warns(CjstatsWarning, match="profile-likelihood search did not converge for residual"):
            fit = estimate_paper(_case("balanced"), method="reml")
        c = _comp(fit)
        assert c.loc["residual", ["lower", "upper"]].isna().all()
        assert "did not converge" in fit.diagnostics["Qwen"]["warnings"][0]

    def test_bootstrap_is_seeded_and_reproducible(self):
        sc = _case("balanced")
        a = estimate_paper(sc, method="reml", interval="bootstrap", n_boot=60, seed=5)
        b = estimate_paper(sc, method="reml", interval="bootstrap", n_boot=60, seed=5)
        c = estimate_paper(sc, method="reml", interval="bootstrap", n_boot=60, seed=6)
        pd.testing.assert_frame_equal(a.components, b.components)
        pd.testing.assert_frame_equal(a.draws, b.draws)
        assert not np.allclose(a.components["lower"].dropna(), c.components["lower"].dropna())
        assert a.provenance["seed"] == 5
        assert list(a.draws.columns) == ["model", "chain", "draw", "mu", "scenario", "generation", "residual",
                                         "judge_panel", "judge_population"]
        assert len(a.draws) == 60
        comp = _comp(a)
        comp = comp[comp["identifiable"]]              # the scenario_judge row is "not fitted": no interval
        assert (comp["ci_method"] == "parametric bootstrap percentile").all()
        assert ((comp["lower"] <= comp["estimate"]) & (comp["estimate"] <= comp["upper"])).all()

    def test_bootstrap_spread_matches_the_reml_information(self):
        """The bootstrap SD of s2_residual and of mu agree with the Wald standard errors within 4 times the
        SE of an SD estimated from B draws, SD / sqrt(2 (B - 1))."""
        sc = _case("unbalanced")
        n_boot = 300
        fit = estimate_paper(sc, method="reml", interval="bootstrap", n_boot=n_boot, seed=11)
        c = _comp(fit)
        tol = 4.0 / math.sqrt(2 * (n_boot - 1))
        for name in ("residual", "mu"):
            sd = fit.draws[name].std(ddof=1)
            assert abs(sd / c.loc[name, "std_error"] - 1.0) <= tol, (name, sd, c.loc[name, "std_error"])

    def test_progress_bar_only_when_asked(self, capsys):
        sc = _case("balanced")
        estimate_paper(sc, method="reml", interval="bootstrap", n_boot=20, seed=1)
        assert capsys.readouterr().err == ""
        estimate_paper(sc, method="reml", interval="bootstrap", n_boot=20, seed=1, progress=True)
        out = capsys.readouterr()
        assert out.out == "" and "bootstrap" in out.err and "100%" in out.err

    def test_interval_none_gives_point_estimates_only(self):
        c = _comp(estimate_paper(_case("balanced"), method="reml", interval="none"))
        assert c.loc[["scenario", "generation", "residual", "judge_population"], "lower"].isna().all()
        assert (c.loc[["scenario", "generation", "residual"], "ci_method"] == "none").all()


# ------------------------------------------------------------------------------------------ the numerics
_FULL = [(s, gen, j) for s in range(6) for gen in range(3) for j in range(4)]
#: Layouts (scenario, generation, judge) that stress the structured algebra and the degrees of freedom.
EDGE_LAYOUTS = {
    "balanced": _FULL,
    "single_cell_scenarios": [c for c in _FULL if not (c[0] < 3 and c[1] > 0)],
    "judge_missing_from_scenarios": [c for c in _FULL if not (c[0] >= 4 and c[2] == 3)],
    "k2_m_varying": [(s, gen, j) for s in range(6) for gen in range(s % 3 + 1) for j in range(2)],
    "scenario_with_one_row": [c for c in _FULL if not (c[0] == 0 and (c[1] > 0 or c[2] > 0))],
    "one_generation": [c for c in _FULL if c[1] == 0 and not (c[0] == 1 and c[2] == 2)],
    "judge_in_one_scenario": [c for c in _FULL if not (c[2] == 3 and c[0] > 0)],
    "judge_only_ever_alone": [c for c in _FULL if c[2] < 3] + [(0, 3, 3), (2, 3, 3)],
    "judge_sets_never_meet": [c for c in _FULL if (c[2] < 2) == (c[0] < 3)],
}


class TestStructuredCore:
    @pytest.mark.parametrize("model,theta", [("fixed", [0.7, 0.3]), ("random", [0.7, 0.3, 0.5]),
                                             ("fixed", [0.0, 0.4]), ("random", [0.2, 0.0, 1.5])])
    def test_analytic_gradient_matches_finite_differences(self, model, theta):
        g = next(_case("unbalanced").groups())
        d = rs.build_design(g.cell, g.judge, g.cell_scenario, g.design.n_judges)
        ev = rs.Evaluator(d, rs.y_stats(d, g.y))
        th = np.asarray(theta, dtype=float)
        _, grad = ev.profiled(model, th, grad=True)
        for i in range(len(th)):
            h = 1e-6
            e = np.zeros(len(th))
            e[i] = h
            if th[i] - h < 0:
                fd = (ev.profiled(model, th + e)[0] - ev.profiled(model, th)[0]) / h
                assert grad[i] == pytest.approx(fd, rel=1e-4, abs=1e-3)
            else:
                fd = (ev.profiled(model, th + e)[0] - ev.profiled(model, th - e)[0]) / (2 * h)
                assert grad[i] == pytest.approx(fd, rel=1e-5, abs=1e-5)

    @pytest.mark.parametrize("layout", list(EDGE_LAYOUTS), ids=list(EDGE_LAYOUTS))
    @pytest.mark.parametrize("model", ["fixed", "random"])
    def test_criterion_and_gradient_match_a_dense_computation(self, layout, model):
        """The O(rows) Woodbury criterion equals -2 l_R computed with dense V = s2 (I + ta Z_s Z_s' + tb Z_c Z_c'
        [+ tj J J']) in every awkward layout, and its analytic gradient equals central differences of it."""
        g = _with_scores(_layout(EDGE_LAYOUTS[layout]), np.random.default_rng(3), s2a=0.8, s2b=0.4, s2e=1.0,
                         gamma=np.linspace(-0.4, 0.5, 4))
        d = rs.build_design(g.cell, g.judge, g.cell_scenario, g.design.n_judges)
        ev = rs.Evaluator(d, rs.y_stats(d, g.y))
        theta = np.array([0.8, 0.3, 0.6][: (2 if d.has_generation else 1)] + ([0.6] if model == "random" else []))
        s2, n_obs = 1.1, len(g.y)
        zs = (g.scenario[:, None] == np.arange(d.n_scen)).astype(float)
        zc = (g.cell[:, None] == np.arange(d.n_cells)).astype(float)
        zj = (g.judge[:, None] == np.arange(d.k)).astype(float)
        h = np.eye(n_obs) + theta[0] * zs @ zs.T + (theta[1] * zc @ zc.T if d.has_generation else 0.0)
        if model == "random":
            h = h + theta[-1] * zj @ zj.T
        x = rs.contr_sum_coding(d.k)[g.judge] if model == "fixed" else np.ones((n_obs, 1))
        vi = np.linalg.inv(s2 * h)
        xvx = x.T @ vi @ x
        r = g.y - x @ np.linalg.solve(xvx, x.T @ vi @ g.y)
        dense = ((n_obs - x.shape[1]) * math.log(2 * math.pi) + np.linalg.slogdet(s2 * h)[1]
                 + np.linalg.slogdet(xvx)[1] + r @ vi @ r)
        assert ev.full(model, s2, theta)[0] == pytest.approx(dense, rel=1e-12)
        grad = ev.profiled(model, theta, grad=True)[1]
        for i in range(len(theta)):
            e = np.eye(len(theta))[i] * 1e-6
            fd = (ev.profiled(model, theta + e)[0] - ev.profiled(model, theta - e)[0]) / 2e-6
            assert grad[i] == pytest.approx(fd, rel=1e-5, abs=1e-6), (layout, model, i)

    @pytest.mark.parametrize("layout", list(EDGE_LAYOUTS), ids=list(EDGE_LAYOUTS))
    def test_residual_df_is_n_minus_the_rank_of_cells_and_judges(self, layout):
        """df_residual = N - rank[Z_cell | J]: rows - cells - (K - 1) only when every judge shares a cell with
        another (a judge seen only alone, or judge sets that never meet, leave the rank one lower)."""
        g = _layout(EDGE_LAYOUTS[layout])
        d = rs.build_design(g.cell, g.judge, g.cell_scenario, g.design.n_judges)
        zc = (g.cell[:, None] == np.arange(d.n_cells)).astype(float)
        zj = (g.judge[:, None] == np.arange(d.k)).astype(float)
        assert d.df_residual == len(g.y) - np.linalg.matrix_rank(np.hstack((zc, zj)))


# ---------------------------------------------------------------------------------- diagnostics, errors
class TestDiagnostics:
    def test_diagnostics_say_which_path_ran_and_how_it_converged(self, case_fits):
        d = case_fits["unbalanced"].diagnostics["Llama"]
        assert d["path"] == "structured" and d["converged"] is True
        assert "Newton" in d["optimizer"] and d["iterations"] >= 1
        assert d["boundary"] == {"scenario": False, "generation": False, "judge_population": False}
        assert not d["singular"] and d["warnings"] == []
        assert d["n_missing"] > 0 and not d["balanced"]
        assert d["random_judge_model"]["path"] == "structured"

    def test_fit_prints_nothing_and_keeps_the_input(self, capsys):
        df = pd.read_csv(LME4 / "unbalanced.csv")
        before = df.copy(deep=True)
        fit = estimate_paper(df, method="reml")
        pd.testing.assert_frame_equal(df, before)
        out = capsys.readouterr()
        assert out.out == "" and out.err == ""
        assert list(fit.components.columns) == list(COMPONENT_COLUMNS)
        assert (fit.components["method"] == "reml").all()

    def test_views_are_panel_except_judge_population(self, case_fits):
        c = case_fits["real_hanna"].components
        assert dict(zip(c["component"], c["view"])) == {
            "mu": "panel", "scenario": "panel", "generation": "panel", "scenario_judge": "panel", "residual": "panel",
            "judge_panel": "panel", "judge_population": "population"}

    @pytest.mark.parametrize("a,b", [(1.0, 1e6), (1e-6, 0.0), (1e6, 0.0)], ids=["1e6+x", "1e-6x", "1e6x"])
    def test_fit_is_equivariant_under_location_and_scale(self, a, b, case_fits):
        """Scores a x + b (scores near 1e6 +- 1, or of size 1e-6 or 1e6) give mu -> a mu + b, gamma -> a gamma and
        every variance and interval -> a^2 times the original: nothing in the fit depends on an absolute
        threshold. The profile search stops within 1e-4 of the cutoff on the zeta scale, so bounds agree to
        about 1e-5 relative."""
        df = pd.read_csv(LME4 / "unbalanced.csv")
        fit = estimate_paper(df.assign(score=a * df["score"] + b), method="reml")
        ref, got = _comp(case_fits["unbalanced"]), _comp(fit)
        d = fit.diagnostics["Llama"]
        assert d["converged"] and not d["warnings"]
        assert got.loc["mu", "estimate"] == pytest.approx(a * ref.loc["mu", "estimate"] + b, rel=1e-12, abs=1e-9 * a)
        assert got.loc["mu", "std_error"] == pytest.approx(a * ref.loc["mu", "std_error"], rel=1e-7)
        for name in ("scenario", "generation", "residual", "judge_panel", "judge_population"):
            for col, rel in (("estimate", 1e-7), ("lower", 1e-5), ("upper", 1e-5)):
                assert got.loc[name, col] == pytest.approx(a * a * ref.loc[name, col], rel=rel), (name, col)
        np.testing.assert_allclose(fit.judge_offsets["estimate"], a * case_fits["unbalanced"].judge_offsets["estimate"],
                                   rtol=1e-7, atol=1e-9 * a)

    @pytest.mark.parametrize("layout", list(EDGE_LAYOUTS), ids=list(EDGE_LAYOUTS))
    def test_awkward_layouts_fit_converge_and_bracket_their_estimates(self, layout):
        g = _with_scores(_layout(EDGE_LAYOUTS[layout]), np.random.default_rng(11), s2a=0.8, s2b=0.4, s2e=1.0,
                         gamma=np.linspace(-0.4, 0.5, len({c[2] for c in EDGE_LAYOUTS[layout]})))
        rows, offsets, diag = _fit_rows(g, "profile")
        assert diag["converged"] and not diag["warnings"], diag["warnings"]
        for r in rows.values():
            if r.identifiable:
                assert r.lower <= r.estimate <= r.upper, (layout, r)
        assert all(o["lower"] < o["estimate"] < o["upper"] for o in offsets)

    def test_one_generation_marks_generation_not_identifiable(self, case_fits):
        c = _comp(case_fits["real_mentalalign"])
        assert not c.loc["generation", "identifiable"] and np.isnan(c.loc["generation", "estimate"])
        assert "sigma2_alpha + sigma2_beta" in c.loc["scenario", "note"]


class TestErrors:
    @pytest.mark.parametrize("opts,match", [({"interval": "wald"}, "'interval' argument"),
                                            ({"path": "lme4"}, "'path' argument"),
                                            ({"interval": "bootstrap", "n_boot": 1}, "'n_boot' argument"),
                                            ({"progress": "yes"}, "'progress' argument")])
    def test_bad_options_raise_one_sentence(self, opts, match):
        with pytest.raises(CjstatsError, match=match):
            estimate_paper(_case("balanced"), method="reml", **opts)

    @pytest.mark.parametrize("how", ["equal_within_scenarios", "exactly_additive"])
    def test_no_residual_variation_raises_one_sentence(self, how):
        """All scores equal within each scenario, or exactly cell + judge: the residual variance is 0."""
        g = _with_scores(_layout(_FULL), np.random.default_rng(5), s2a=1.0, s2b=0.5, s2e=1.0, gamma=np.zeros(4))
        y = g.y if how == "exactly_additive" else np.bincount(g.scenario, weights=g.y)[g.scenario]
        cell_mean = (np.bincount(g.cell, weights=y) / np.bincount(g.cell))[g.cell]
        df = pd.DataFrame({"model": "m", "scenario": g.scenario, "generation": g.cell,
                           "judge": np.asarray(g.judge_labels)[g.judge], "score": cell_mean + 0.25 * g.judge})
        with pytest.raises(CjstatsError, match=r"^Model 'm' has no residual variation: [^.]*\.$"):
            estimate_paper(df, method="reml")

    def test_residual_beyond_double_precision_raises_one_sentence(self):
        """A residual SD 1e-6 of the scenario SD is real variation (not 'no residual variation'), but the
        REML statistics cannot resolve it: one sentence, instead of judge offsets made of rounding noise."""
        g = _with_scores(_layout(EDGE_LAYOUTS["judge_missing_from_scenarios"]), np.random.default_rng(0),
                         s2a=1e12, s2b=0.5, s2e=1.0, gamma=np.array([-0.3, 0.0, 0.1, 0.2]), mu=1e6)
        df = pd.DataFrame({"model": "m", "scenario": g.scenario, "generation": g.cell,
                           "judge": np.asarray(g.judge_labels)[g.judge], "score": g.y})
        with pytest.raises(CjstatsError, match=r"^Model 'm' has scores that vary [0-9.e+]+ times more between "
                                               r"[^.]*resolves, [^.]*\.$"):
            estimate_paper(df, method="reml")

    def test_no_residual_degrees_of_freedom_raises(self):
        """Every cell scored by a single judge: the residual cannot be separated from generation."""
        rows = [{"model": "m", "scenario": s, "generation": gen, "judge": f"j{(s + gen) % 2}",
                 "score": float((s * 7 + gen * 3) % 5)} for s in range(6) for gen in range(3)]
        with pytest.raises(CjstatsError, match="no degrees of freedom for the residual"):
            estimate_paper(pd.DataFrame(rows), method="reml")
