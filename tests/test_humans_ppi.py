"""ppi_means and the label-budget formulas: equality with ppi_py, coverage, width, optimality."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import cjstats as cj
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.decisions.labels import effective_labels, label_budget, label_budgets, ppi_variance
from cjstats.estimators.humans.ppi import ppi_mean_tuned

ppi_py = pytest.importorskip("ppi_py")
from ppi_py.baselines import classical_mean_ci  # noqa: E402
from ppi_py.ppi import _calc_lam_glm  # noqa: E402

R = 400
LEVEL = 0.95
TOL = 3 * np.sqrt(LEVEL * (1 - LEVEL) / R)   # 3 MC standard errors of a coverage from R replicates


def _iid(rng, n=100, big_n=900, rho_noise=0.5, mu=3.0, bias=0.6):
    """Human truth Y ~ N(mu, 1); judge f = bias + 0.9 Y + noise (known bias, known human mean mu)."""
    y = rng.normal(mu, 1, n + big_n)
    f = bias + 0.9 * y + rng.normal(0, rho_noise, n + big_n)
    return y[:n], f[:n], f[n:]


class TestEqualsPpiPy:
    @pytest.mark.parametrize("lam", [None, 1.0, 0.3, 0.0])
    def test_numpy_formula_equals_ppi_py(self, lam):
        y, f, fu = _iid(np.random.default_rng(1))
        est, se, lam_used = ppi_mean_tuned(y, f, fu, lam=lam)
        ref = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam)))
        lo, hi = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05, lam=lam)
        z = 1.959963984540054
        assert est == pytest.approx(ref, abs=1e-10)
        assert est - z * se == pytest.approx(float(np.squeeze(lo)), abs=1e-10)
        assert est + z * se == pytest.approx(float(np.squeeze(hi)), abs=1e-10)
        if lam is None:
            t = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, fu, lam=1)))
            ref_lam = _calc_lam_glm((y - t)[:, None], (f - t)[:, None], (fu - t)[:, None], np.eye(1), clip=True)
            assert lam_used == pytest.approx(ref_lam, abs=1e-10)

    def test_ppi_means_rows_equal_ppi_py_estimates_with_the_t_interval(self):
        # estimate and lambda are ppi_py's; the interval is the t interval of ppi_contrast (ppi_py's z interval
        # covers about 0.89-0.92 at 12 labels: tests/test_humans_ppi_coverage.py)
        s = _scores(seed=2)
        res = cj.ppi_means(s, n_labels=25, seed=4)
        items = _panel_items(s)
        chosen = set(res_labeled_scenarios(s, 25, 4))
        for model, part in items.groupby("model"):
            lab = part["scenario"].isin(chosen).to_numpy()
            y, f, fu = part["human"].to_numpy()[lab], part["panel"].to_numpy()[lab], part["panel"].to_numpy()[~lab]
            row = res.means.set_index("model").loc[model]
            assert row["estimate"] == pytest.approx(float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, fu))),
                                                    abs=1e-10)
            assert (row["lower"], row["upper"]) == pytest.approx(_t_by_hand(y, f, fu), abs=1e-10)
            lo, hi = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05)
            assert row["lower"] < float(np.squeeze(lo)) and row["upper"] > float(np.squeeze(hi))
            sem = y.std(ddof=1) / np.sqrt(len(y))
            assert (row["human_only_lower"], row["human_only_upper"]) == pytest.approx(
                stats.t.interval(0.95, len(y) - 1, loc=y.mean(), scale=sem), abs=1e-10)

    def test_difference_rows_equal_ppi_py_estimates_on_paired_arrays(self):
        s = _scores(seed=3)
        res = cj.ppi_means(s, n_labels=25, seed=4)
        items = _panel_items(s).set_index(["model", "scenario"])
        chosen = set(res_labeled_scenarios(s, 25, 4))
        a, b = items.loc["m1"], items.loc["m2"]
        lab = a.index.isin(chosen)
        y = (a["human"] - b["human"]).to_numpy()[lab]
        f = (a["panel"] - b["panel"]).to_numpy()
        row = res.differences.set_index("estimand").loc["difference[m1,m2]"]
        assert row["estimate"] == pytest.approx(float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f[lab], f[~lab]))),
                                                abs=1e-10)
        # labelled on the same scenarios: the t interval of the per-scenario differences
        assert (row["lower"], row["upper"]) == pytest.approx(_t_by_hand(y, f[lab], f[~lab]), abs=1e-10)
        assert row["n_shared"] == row["n_labeled"] == 25


def _t_by_hand(y: np.ndarray, f: np.ndarray, fu: np.ndarray) -> tuple[float, float]:
    """ppi_contrast's interval for one mean with the tuned lambda, written out (its docstring):
    SE^2 = a + b + 2 a/(n - 1), a = s2(y - lam f)/n, b = lam^2 s2(fu)/N; Welch df from a and b."""
    n, big_n = len(y), len(fu)
    est, _, lam = ppi_mean_tuned(y, f, fu)
    a, b = np.var(y - lam * f, ddof=1) / n, lam ** 2 * np.var(fu, ddof=1) / big_n
    se = np.sqrt(a + b + 2 * a / (n - 1))
    q = stats.t.ppf(0.975, (a + b) ** 2 / (a ** 2 / (n - 1) + b ** 2 / (big_n - 1)))
    return est - q * se, est + q * se


def _scores(seed: int, *, g: int = 80, bias: float = 0.5, drop_model_labels: str | None = None) -> cj.Scores:
    """3 models x g scenarios x 3 judges (biased, noisy) + one human rating per item; human mean of model k
    is 3 + 0.3 k + E[a] (a ~ N(0, 0.6^2) scenario effects shared by the models)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 0.6, g)
    rows = []
    for k, model in enumerate(["m1", "m2", "m3"]):
        for s in range(g):
            t = 3 + 0.3 * k + a[s] + rng.normal(0, 0.4)
            for j, off in (("j1", bias), ("j2", bias + 0.3), ("j3", bias - 0.3)):
                rows.append((model, s, j, t + off + rng.normal(0, 0.5), "llm"))
            if model != drop_model_labels:
                rows.append((model, s, "expert", t + rng.normal(0, 0.5), "human"))
    return cj.read_scores(pd.DataFrame(rows, columns=["model", "scenario", "judge", "score", "judge_type"]))


def _panel_items(s: cj.Scores) -> pd.DataFrame:
    llm = s.to_frame().groupby(["model", "scenario"])["score"].mean().rename("panel")
    hum = s.reference_frame().groupby(["model", "scenario"])["score"].mean().rename("human")
    return pd.concat([llm, hum], axis=1).reset_index()


def res_labeled_scenarios(s: cj.Scores, n: int, seed: int) -> np.ndarray:
    pool = np.sort(pd.unique(s.reference_frame()["scenario"]))
    return np.random.default_rng(seed).choice(pool, size=n, replace=False)


class TestCoverage:
    def test_ppi_plus_plus_interval_covers_human_mean_and_is_not_wider_than_human_only(self):
        rng = np.random.default_rng(7)
        hits = human_hits = 0
        ratios = []
        for _ in range(R):
            y, f, fu = _iid(rng)
            lo, hi = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05)
            clo, chi = classical_mean_ci(y, alpha=0.05)
            hits += float(np.squeeze(lo)) <= 3.0 <= float(np.squeeze(hi))
            human_hits += clo <= 3.0 <= chi
            ratios.append(float(np.squeeze(hi - lo)) / (chi - clo))
        assert abs(hits / R - LEVEL) <= TOL
        assert abs(human_hits / R - LEVEL) <= TOL
        # rho ~ 0.87 here: the width ratio should be near sqrt(1 - rho^2 N/(n+N)) ~ 0.57
        assert np.mean(ratios) < 0.7

    def test_useless_judge_never_makes_the_interval_wider_beyond_mc_noise(self):
        rng = np.random.default_rng(8)
        ratios = []
        for _ in range(R):
            y = rng.normal(3, 1, 100)
            f, fu = rng.normal(0, 1, 100), rng.normal(0, 1, 900)       # rho = 0
            lo, hi = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05)
            clo, chi = classical_mean_ci(y, alpha=0.05)
            ratios.append(float(np.squeeze(hi - lo)) / (chi - clo))
        r = np.asarray(ratios)
        assert r.mean() - 1 <= 3 * r.std(ddof=1) / np.sqrt(R)

    def test_ppi_means_end_to_end_covers_known_human_means_and_differences(self):
        reps = 120                       # each replicate runs the public call on a new table
        tol = 3 * np.sqrt(LEVEL * (1 - LEVEL) / (3 * reps))   # 3 models per replicate, treated as independent
        hits = total = d_hits = d_total = 0
        for rep in range(reps):
            res = cj.ppi_means(_scores(100 + rep, g=60), n_labels=20, seed=rep)
            for k, row in enumerate(res.means.itertuples()):
                truth = 3 + 0.3 * k          # scenario effects a_s have mean 0 in the population
                hits += row.lower <= truth <= row.upper
                total += 1
            for row in res.differences.itertuples():
                ka, kb = int(row.model_a[1]), int(row.model_b[1])
                d_hits += row.lower <= 0.3 * (ka - kb) <= row.upper
                d_total += 1
        # the scenario effects are shared by the 3 models (and pairs), so hits within a replicate are
        # correlated: widen by sqrt(3), the bound for perfectly correlated hits
        assert abs(hits / total - LEVEL) <= tol * np.sqrt(3)
        assert abs(d_hits / d_total - LEVEL) <= tol * np.sqrt(3)

    def test_ppi_variance_formula_matches_simulated_variance(self):
        rng = np.random.default_rng(9)
        est = [ppi_mean_tuned(*_iid(rng))[0] for _ in range(R)]
        rho = 0.9 / math.sqrt(0.81 + 0.25)
        v = ppi_variance(1.0, rho, n=100, n_total=1000)
        # the sample variance of R draws has relative SE sqrt(2/(R-1)) (~7%); allow 3 of them
        assert abs(np.var(est, ddof=1) / v - 1) <= 3 * math.sqrt(2 / (R - 1))


class TestLabelBudget:
    def test_target_se_design_equals_ppi_py_power_analysis(self):
        from ppi_py import ppi_power

        rho, n0 = 0.8, 400
        ref = ppi_power(rho, cost_X=0, cost_Y=1.0, cost_Yhat=0.05, effective_n=n0)
        ours = label_budget(sigma2=1.0, rho=rho, label_cost=1.0, judge_cost=0.05, target_se=1 / math.sqrt(n0))
        assert abs(ours["n_labels"] - ref["n"]) <= 1
        assert abs(ours["n_judged"] - (ref["n"] + ref["N"])) <= 1
        assert ours["se"] <= 1 / math.sqrt(n0) + 1e-12

    def test_closed_form_is_the_cheapest_integer_design(self):
        sigma2, rho, c_h, c_f, se = 0.8, 0.7, 1.0, 0.1, 0.05
        ours = label_budget(sigma2=sigma2, rho=rho, label_cost=c_h, judge_cost=c_f, target_se=se)
        ns = np.arange(2, 400)[:, None]
        ts = np.arange(2, 3000)[None, :]
        v = sigma2 * (1 - rho ** 2) / ns + sigma2 * rho ** 2 / ts
        cost = np.where((ts >= ns) & (v <= se ** 2 * (1 + 1e-12)), ns * c_h + ts * c_f, np.inf)
        best = cost.min()
        assert ours["cost"] <= best + c_h + c_f   # within one unit of rounding
        assert ours["cost"] < ours["human_only_cost"]

    def test_budget_mode_is_near_the_smallest_integer_variance(self):
        sigma2, rho, c_h, c_f, budget = 0.8, 0.7, 1.0, 0.1, 300.0
        ours = label_budget(sigma2=sigma2, rho=rho, label_cost=c_h, judge_cost=c_f, budget=budget)
        ns = np.arange(2, 301)[:, None]
        ts = np.arange(2, 3001)[None, :]
        v = np.where((ts >= ns) & (ns * c_h + ts * c_f <= budget),
                     sigma2 * (1 - rho ** 2) / ns + sigma2 * rho ** 2 / ts, np.inf)
        # flooring n and T costs at most one label and one judged unit: the gap to the integer optimum is at
        # most the variance step of one such unit
        ours_v = ours["se"] ** 2
        step = ppi_variance(sigma2, rho, n=ours["n_labels"] - 1, n_total=ours["n_judged"] - 1) - ours_v
        assert ours["cost"] <= budget and 0 <= ours_v - v.min() <= step

    def test_judges_do_not_pay_when_weakly_correlated_and_dear(self):
        out = label_budget(sigma2=1.0, rho=0.1, label_cost=1.0, judge_cost=0.5, target_se=0.1)
        assert out["n_judged"] == 0 and out["n_labels"] == 100 and "human labels only" in out["note"]

    def test_out_of_reach_target_is_nan_with_reason(self):
        out = label_budget(sigma2=1.0, rho=0.5, label_cost=1.0, judge_cost=0.01, target_se=0.01, n_max=1000)
        assert math.isnan(out["n_labels"]) and "out of reach" in out["note"]

    def test_budget_mode_spends_at_most_the_budget(self):
        out = label_budget(sigma2=1.0, rho=0.8, label_cost=1.0, judge_cost=0.02, budget=200.0)
        assert out["cost"] <= 200.0 and out["se"] < out["human_only_se"]

    def test_effective_labels_formula(self):
        # n T / (n + (1 - rho^2)(T - n)) = sigma2 / V
        assert effective_labels(100, 1000, 0.8) == pytest.approx(1.0 / ppi_variance(1.0, 0.8, n=100, n_total=1000))

    def test_free_judges_use_every_available_unit(self):
        out = label_budget(sigma2=1.0, rho=0.8, label_cost=1.0, judge_cost=0.0, target_se=0.05, n_max=1000)
        assert out["n_judged"] == 1000
        # V = (1 - rho^2)/n + rho^2/1000 <= 0.0025  ->  n >= 0.36 / (0.0025 - 0.00064) = 193.5
        assert out["n_labels"] == 194
        with pytest.raises(CjstatsError, match="needs n_max"):
            label_budget(sigma2=1.0, rho=0.8, label_cost=1.0, judge_cost=0.0, target_se=0.05)

    def test_needs_exactly_one_goal(self):
        with pytest.raises(CjstatsError, match="exactly one of target_se= and budget="):
            label_budget(sigma2=1.0, rho=0.5, label_cost=1.0, judge_cost=0.1)


class TestBadInput:
    def test_model_without_human_label_is_nan_with_a_sentence(self):
        s = _scores(5, drop_model_labels="m2")
        with pytest.warns(CjstatsWarning, match=r"^Model 'm2' has no human label among its judged items"):
            res = cj.ppi_means(s, differences=False)
        row = res.means.set_index("model").loc["m2"]
        assert math.isnan(row["estimate"]) and "no human label" in row["note"]
        assert np.isfinite(res.means.set_index("model").loc["m1", "estimate"])

    def test_unknown_judge(self):
        with pytest.raises(CjstatsError, match=r"The 'judge' argument of ppi_means must be one of the LLM judges"):
            cj.ppi_means(_scores(1), judge="j9")

    def test_lam_out_of_range(self):
        with pytest.raises(CjstatsError, match=r"'lam' argument of ppi_means must be None or a number in \[0, 1\]"):
            cj.ppi_means(_scores(1), lam=2)

    def test_all_labels_used_gives_human_only_with_reason(self):
        res = cj.ppi_means(_scores(1), differences=False)
        assert (res.means["method"] == "human-only").all()
        assert res.means["note"].str.contains("judges add nothing").all()

    def test_single_judge_prediction(self):
        res = cj.ppi_means(_scores(1), judge="j1", n_labels=20, seed=0, differences=False)
        assert res.judge == "j1" and res.judges_per_unit == 1


class TestRealData:
    def test_mentalalign_slice_means_and_budget(self):
        s = cj.datasets.load("mentalalign", humans=True).subset(models=["gpt-4o", "qwen3-4b"],
                                                                criteria=["Empathy"])
        res = cj.ppi_means(s, n_labels=100, seed=0)
        assert len(res.means) == 2 and len(res.differences) == 1
        assert (res.means["n_labeled"] <= 100).all() and (res.means["n_unlabeled"] >= 880).all()
        plan = label_budgets(res, label_cost=1.0, judge_cost=0.001, target_se=0.05)
        assert len(plan) == 2


class TestGenerationsClustered:
    def test_generations_are_averaged_into_their_scenario_before_ppi(self):
        rng = np.random.default_rng(21)
        rows = []
        for s in range(50):
            a = rng.normal(0, 0.7)
            for gen in range(2):
                t = 3 + a + rng.normal(0, 0.4)
                for j in ("j1", "j2"):
                    rows.append(("m", s, gen, j, t + 0.4 + rng.normal(0, 0.5), "llm"))
                if s < 20:
                    rows.append(("m", s, gen, "expert", t + rng.normal(0, 0.5), "human"))
        df = pd.DataFrame(rows, columns=["model", "scenario", "generation", "judge", "score", "judge_type"])
        res = cj.ppi_means(cj.read_scores(df), differences=False)
        row = res.means.iloc[0]
        assert row["n_labeled"] == 20 and row["n_unlabeled"] == 30
        assert "generations averaged into their scenario" in row["note"]
        assert "clustered" in res.provenance
        f = df[df["judge_type"] == "llm"].groupby("scenario")["score"].mean().to_numpy()
        y = df[df["judge_type"] == "human"].groupby("scenario")["score"].mean().to_numpy()
        assert row["estimate"] == pytest.approx(float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f[:20], f[20:]))),
                                                abs=1e-10)
        assert (row["lower"], row["upper"]) == pytest.approx(_t_by_hand(y, f[:20], f[20:]), abs=1e-10)
