"""G and D studies (cjstats.decisions.gstudy): hand-computed coefficients, Brennan's p x I x L formulas, the
strategies' ordering, interval coverage against known truth, replication of the ranking, persistence."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.decisions.components import Components, VarianceDesign, score_variance
from cjstats.decisions.gstudy import error_variances, g_study, replication, universe_variance
from cjstats.results.gstudy import GStudy, Replication
from cjstats.studies.simulate_joint import simulate_joint

COMPS = {"scenario": 1.0, "model_scenario": 0.5, "generation": 0.3, "residual": 1.0, "judge_panel": 0.2,
         "judge_model": 0.05, "judge_population": 0.25, "judge_model_population": 0.07}

# the known-truth setting of the coverage tests
P, K, N, M = 6, 4, 30, 2
MU = np.linspace(0.0, 1.0, P)
GAMMA = np.array([-0.4, -0.1, 0.1, 0.4])


def _gp() -> np.ndarray:
    gp = np.random.default_rng(5).normal(0, 0.3, (P, K))
    gp -= gp.mean(axis=0)
    return gp - gp.mean(axis=1, keepdims=True)


def _sim(seed: int, mu=MU, n=N) -> pd.DataFrame:
    return simulate_joint(n=n, m=M, mu=mu, gamma=GAMMA, s2_scenario=1.0, s2_model_scenario=0.5, s2_generation=0.3,
                          s2_residual=1.0, judge_model=_gp(), rng=seed)


@pytest.fixture(scope="module")
def fit():
    return cj.fit_joint(_sim(0), "anova")


# ------------------------------------------------------------------------------------------- by hand
def test_hand_computed_design():
    # fixed, n=10, m=2, k=K_tot=5: judge terms vanish (FPC(5) = 0)
    rel, ab = error_variances(COMPS, VarianceDesign("fixed", n=10, k_total=5, m=2, k=5), n_models=4)
    assert rel == pytest.approx(0.5 / 10 + 0.3 / 20 + 1.0 / 100, abs=1e-12)
    assert ab == pytest.approx(1.0 / 10 + 0.5 / 10 + 0.3 / 20 + 1.0 / 100, abs=1e-12)
    # random, one judge per generation: c_j = 1/(nm) = 1/20; judge_model x P/(P-1) in the relative error
    rel, ab = error_variances(COMPS, VarianceDesign("random", n=10, k_total=5, m=2, k=1), n_models=4)
    assert rel == pytest.approx(0.05 + 0.015 + 0.05 + (4 / 3) * 0.05 / 20, abs=1e-12)
    assert ab == pytest.approx(0.1 + 0.05 + 0.015 + 0.05 + (0.2 + 0.05) / 20, abs=1e-12)
    u = 0.3
    assert u / (u + rel) == pytest.approx(0.3 / (0.3 + 0.118333333333333333), abs=1e-12)
    # cyclic, T = nmk = 21 calls on 5 judges: leftover R (K - R)/((K - 1) T^2), R = 1
    rel, ab = error_variances(COMPS, VarianceDesign("cyclic", n=7, k_total=5, m=3, k=1), n_models=4)
    cj_ = 1 * 4 / (4 * 21 ** 2)
    assert rel == pytest.approx(0.5 / 7 + 0.3 / 21 + 1.0 / 21 + (4 / 3) * 0.05 * cj_, abs=1e-12)
    assert ab == pytest.approx(1 / 7 + 0.5 / 7 + 0.3 / 21 + 1 / 21 + 0.25 * cj_, abs=1e-12)


def test_registry_sum_is_score_variance():
    d = VarianceDesign("random", n=12, k_total=5, m=3, k=2)
    rel, ab = error_variances(COMPS, d, n_models=3)
    want = score_variance(Components({"scenario": 1.0, "model_scenario": 0.5, "generation": 0.3, "residual": 1.0,
                                      "judge_panel": 0.2, "judge_model": 0.05}), d)
    assert ab == pytest.approx(want, abs=1e-15)


@pytest.mark.parametrize("n,k,kt", [(10, 1, 5), (25, 3, 4), (40, 4, 4), (7, 2, 9)])
def test_brennan_p_x_i_x_l(n, k, kt):
    # Brennan (2001), p x I x L random: rel = s2_pi/n + s2_pl/k + s2_pil,e/(nk); abs adds s2_i/n + s2_l/k
    rel, ab = error_variances(COMPS, VarianceDesign("fixed", n=n, k_total=kt, m=1, k=k), n_models=5,
                              judges="population")
    # one generation per (model, scenario): beta_pi is confounded with (alpha p)_pi, Brennan's s2_pi holds both
    s2_pi = COMPS["model_scenario"] + COMPS["generation"]
    s2_pl, s2_pile = COMPS["judge_model_population"], COMPS["residual"]
    brennan_rel = s2_pi / n + s2_pl / k + s2_pile / (n * k)
    assert rel == pytest.approx(brennan_rel, abs=1e-12)
    assert ab == pytest.approx(brennan_rel + COMPS["scenario"] / n + COMPS["judge_population"] / k, abs=1e-12)


def test_universe_variance_by_hand():
    x = np.array([0.0, 1.0, 3.0])
    cov = np.diag([0.1, 0.2, 0.3])
    est, se = universe_variance(x, cov)
    c = np.eye(3) - 1 / 3
    assert est == pytest.approx((np.var(x, ddof=1) * 2 - np.trace(c @ cov)) / 2, abs=1e-12)
    assert se == pytest.approx(math.sqrt(2 * np.trace(c @ cov @ c @ cov) + 4 * x @ c @ cov @ c @ x) / 2, abs=1e-12)


def test_strategy_ordering(fit):
    for n in (10, 31, 100):
        for m in (1, 3, 7):
            t = g_study(fit, n=n, m=m, strategy=["random", "cyclic", "all"], n_draws=10).table.set_index("strategy")
            assert t.at["cyclic", "phi"] >= t.at["random", "phi"]
            assert t.at["cyclic", "e_rho2"] >= t.at["random", "e_rho2"]
            assert t.at["cyclic", "absolute_error"] < t.at["random", "absolute_error"]   # judge variance > 0


def test_g_study_table(fit):
    g = g_study(fit, n=[10, 100], strategy=["all", "cyclic"], n_draws=500)
    t = g.table
    assert len(t) == 4 and set(t["scale"]) == {"score"}
    assert np.allclose(t["e_rho2"], t["universe"] / (t["universe"] + t["relative_error"]))
    assert np.allclose(t["phi"], t["universe"] / (t["universe"] + t["absolute_error"]))
    assert (t["e_rho2"] >= t["phi"]).all()
    assert (t["e_rho2_lower"] <= t["e_rho2"]).all() and (t["e_rho2"] <= t["e_rho2_upper"]).all()
    # more scenarios, more reliable
    assert t[t.n == 100]["e_rho2"].min() > t[t.n == 10]["e_rho2"].max()
    assert "E rho^2" in str(g) and g.to_frame().equals(t)
    d = g_study(fit, designs=[{"strategy": "fixed", "n": 20, "k": 2}, {"strategy": "all", "n": 20}], n_draws=10)
    assert list(d.table["k"]) == [2, K]


def test_g_study_refusals(fit):
    with pytest.raises(cj.CjstatsError, match="k_total"):
        g_study(fit, k_total=7)
    with pytest.raises(cj.CjstatsError, match="joint fit"):
        g_study(pd.DataFrame())
    assert len(g_study(fit, k_total=7, judges="population", n_draws=10).table) == 1


@pytest.mark.parametrize("method", ["anova", "reml"])
def test_a_per_model_fit_is_refused_with_the_joint_call(method):
    # a per-model fit's scenario variance is s2_scenario + s2_model_scenario and it has no covariance between the
    # model means: E rho^2 is not identified, so g_study and replication name the joint fit of the same backend
    scores = cj.read_scores(_sim(6, n=8))
    per_model = cj.estimate(scores, method)
    for f in (g_study, replication):
        with pytest.raises(cj.CjstatsError) as err:
            f(per_model)
        msg = str(err.value)
        assert msg.startswith(f"{f.__name__} needs the models fitted jointly, but got a per-model fit (cj.estimate)")
        assert msg.endswith(f"fit the same table with cj.fit_joint(scores, '{method}') or pass "
                            f"compare_models(scores, ...).fit.")
    assert len(g_study(cj.fit_joint(scores, method), n_draws=10).table) == 1        # the call it names works


def test_save_load(fit, tmp_path):
    g = g_study(fit, n=[10, 20], n_draws=50)
    g.save(tmp_path / "g")
    back = GStudy.load(tmp_path / "g")
    pd.testing.assert_frame_equal(back.table, g.table)
    r = replication(fit, n_sims=50)
    r.save(tmp_path / "r")
    pd.testing.assert_frame_equal(Replication.load(tmp_path / "r").table, r.table)


# -------------------------------------------------------------------------------------------- coverage
def _truth(strategies):
    gp = _gp()
    tr = {"scenario": 1.0, "model_scenario": 0.5, "generation": 0.3, "residual": 1.0,
          "judge_panel": float(np.mean(GAMMA ** 2)), "judge_model": float(np.mean(gp ** 2))}
    u = np.var(MU, ddof=1)
    out = {}
    for s in strategies:
        k = K if s == "all" else 1
        d = (VarianceDesign("all", n=N, k_total=K, budget=M * K) if s == "all"
             else VarianceDesign(s, n=N, k_total=K, m=M, k=k))
        rel, ab = error_variances(tr, d, n_models=P)
        out[s] = (u / (u + rel), u / (u + ab))
    return out


def _coverage(reps: int, level: float, method: str = "anova") -> np.ndarray:
    strategies = ("all", "random", "cyclic")
    truth = _truth(strategies)
    hits = np.zeros((3, 2))
    for rep in range(reps):
        f = cj.fit_joint(_sim(1000 + rep), method)
        t = g_study(f, strategy=list(strategies), ci_level=level, n_draws=2000, seed=rep).table
        for i, s in enumerate(strategies):
            r = t.iloc[i]
            hits[i, 0] += r.e_rho2_lower <= truth[s][0] <= r.e_rho2_upper
            hits[i, 1] += r.phi_lower <= truth[s][1] <= r.phi_upper
    return hits / reps


def _check_coverage(cov: np.ndarray, level: float, reps: int, slack: float = 0.0) -> None:
    tol = 3 * math.sqrt(level * (1 - level) / reps) + slack   # 3 Monte Carlo standard errors, both sides
    assert (np.abs(cov - level) <= tol).all(), (cov, level, tol)


def test_coverage_fast():
    # 100 replicates at 80%: MC SE 0.04, so intervals that ignore the universe variance's uncertainty (far too
    # narrow) or double it (too wide) fail
    cov = _coverage(100, 0.8)
    _check_coverage(cov, 0.8, 100)


@pytest.mark.slow
def test_coverage_slow():
    # measured (seeds 1000..1999): 95%: E rho^2 0.967-0.969, Phi 0.969-0.970; 80%: 0.813-0.819, 0.829-0.830. The
    # scaled chi-square is slightly conservative, so 0.01 of approximation slack joins 3 MC standard errors
    cov = _coverage(1000, 0.95)
    _check_coverage(cov, 0.95, 1000, slack=0.01)
    cov = _coverage(1000, 0.8)
    _check_coverage(cov, 0.8, 1000, slack=0.01)


@pytest.mark.slow
def test_coverage_reml():
    cov = _coverage(200, 0.8, "reml")
    _check_coverage(cov, 0.8, 200, slack=0.01)


# ------------------------------------------------------------------------------------------ replication
def test_replication_extremes():
    far = cj.fit_joint(_sim(3, mu=np.arange(P) * 5.0), "anova")
    r = replication(far, n=[N, 500], n_sims=500).table
    assert (r["p_same_top"] == 1.0).all() and (r["kendall_tau"] == 1.0).all()
    assert (r["p_same_top_se"] == 0.0).all()
    flat = cj.fit_joint(_sim(4, mu=np.zeros(P)), "anova")
    r = replication(flat, n_sims=4000)
    row = r.table.iloc[0]
    assert row.p_same_top < 0.6 and abs(row.kendall_tau) < 0.6
    assert row.p_same_top_se == pytest.approx(math.sqrt(row.p_same_top * (1 - row.p_same_top) / 4000))
    assert r.top.groupby(["strategy", "n"])["p_top"].sum().round(12).eq(1.0).all()


def test_replication_seeded_and_monotone(fit):
    a = replication(fit, n=[10, 1000], strategy=["random", "cyclic"], n_sims=3000, seed=1)
    b = replication(fit, n=[10, 1000], strategy=["random", "cyclic"], n_sims=3000, seed=1)
    pd.testing.assert_frame_equal(a.table, b.table)
    t = a.table
    for s in ("random", "cyclic"):
        small, big = t[(t.strategy == s) & (t.n == 10)].iloc[0], t[(t.strategy == s) & (t.n == 1000)].iloc[0]
        assert big.kendall_tau > small.kendall_tau + 3 * math.hypot(big.kendall_tau_se, small.kendall_tau_se)
    new = replication(fit, judges="new", k_total=8, n_sims=200).table
    assert new.iloc[0]["k_total"] == 8 and new.iloc[0]["judges"] == "new"


def test_the_gstudy_plot_draws_each_strategy_with_its_band():
    pytest.importorskip("matplotlib")
    import warnings

    import matplotlib.pyplot as plt

    import cjstats as cj

    s = cj.simulate_scores(cj.Truth.table3(), n=15, m=1, k=3, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = cj.g_study(cj.fit_joint(s, "reml"), n=[10, 40], strategy=["all", "random", "cyclic"], k=1, n_draws=500)
    fig = cj.plots.gstudy_plot(g)
    for ax in fig.axes:
        assert sorted(line.get_gid() for line in ax.get_lines()) == ["all", "cyclic", "random"]
        assert len(ax.collections) == 3                        # one interval band per strategy
    plt.close(fig)
    with pytest.raises(cj.CjstatsError):
        cj.plots.gstudy_plot(object())


@pytest.mark.slow
def test_a_bayes_fit_gives_its_design_and_replicates():
    # the Bayesian joint fit records its (model, scenario, generation) cells, so the defaults are the fit's n and m
    pytest.importorskip("pymc")
    f = cj.fit_joint(_sim(7, n=12), "bayes", draws=200, tune=200, chains=1, seed=1)
    assert f.diagnostics["n_cells"] == P * 12 * M
    t = g_study(f, n_draws=200).table
    assert (t["n"].iloc[0], t["m"].iloc[0]) == (12, M)
    r = replication(f, n=[12, 500], n_sims=500).table
    assert r["kendall_tau"].iloc[1] > r["kendall_tau"].iloc[0]


def test_an_ordinal_fit_gives_its_design_and_the_latent_scale():
    # the joint ordinal fit records its (model, scenario, generation) cells: the default m is the fit's
    df = simulate_joint(n=8, m=M, mu=[0.0, 0.5, 1.0], gamma=[-0.3, 0.0, 0.3], s2_scenario=1.0, s2_model_scenario=0.3,
                        s2_generation=0.2, s2_residual=0.5, rng=8)
    with pytest.warns(cj.CjstatsWarning, match="fits no generation term"):
        f = cj.fit_joint(df.assign(score=np.clip(np.round(df["score"] + 3), 1, 5)), "ordinal")
    assert f.diagnostics["n_cells"] == 3 * 8 * M
    t = g_study(f, n_draws=100).table
    assert (t["n"].iloc[0], t["m"].iloc[0], t["scale"].iloc[0]) == (8, M, "latent")
