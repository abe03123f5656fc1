"""The decision layer with a scenario x judge interaction (alpha gamma)_il ~ (0, s2_scenario_judge).

    X_ijl = mu + alpha_i + beta_ij + gamma_l + (alpha gamma)_il + eps_ijl

The strategy variances are checked against a brute-force, vectorised simulation of this model in which every
replicate builds its judge assignment exactly as :mod:`cjstats.decisions.schedules` does (a seeded scenario shuffle and judge
shuffle for the rotation of C and for the leftover generation of A, a uniformly drawn judge per generation for
B), at budgets below, at and above K_tot, conditionally (alpha and (alpha gamma) held fixed, target = the full
panel's mean on the chosen scenarios) and unconditionally (both redrawn, target = mu).

Conditional case, fixed effects: the formula is the mean over the interaction effects. The expected squared
error over the random assignment is a quadratic form in the fixed n x K_tot matrix a of interaction effects
that is invariant under relabelling scenarios and judges, so (Schur) it depends on a only through the squared
norms of its grand, row, column and interaction parts (two-way ANOVA decomposition). The fixed a used here has
each of those equal to its expectation (s2 times 1, n - 1, K_tot - 1, (n - 1)(K_tot - 1)), the analogue of
sigma2_gamma being the panel's own mean square, and its column part orthogonal to the fixed gamma (so the
gamma x interaction cross term, zero in expectation, is zero here too). The formula is then the exact limit.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.decisions.optimise import optimise
from cjstats.decisions.inputs import group_components
from cjstats.decisions.schedules import (
    all_judges_schedule, cyclic_schedule, random_schedule, realised_variance, schedule_audit,
)
from cjstats.decisions.formulas import (
    STRATEGIES, ab_threshold, best_generations_per_scenario, budget_for_target_se, design_coefficients,
    design_variance, grand_mean_variance, scenario_generation_variance, scenarios_for_target_se,
    strategy_coefficients, strategy_gaps, strategy_variance, variance_contributions,
)

COMPS = dict(s2_generation=0.3, s2_residual=0.5, s2_judge_panel=0.8)
S2A, S2SJ = 1.0, 1.5
N, KT = 10, 4


# ------------------------------------------------------------------------------------------ the simulation
def _standardised_interaction(n: int, kt: int, s2: float, gamma: np.ndarray, rng) -> np.ndarray:
    """A fixed n x K_tot interaction matrix whose ANOVA parts have their expected squared norms (docstring)."""
    z = rng.standard_normal((n, kt))
    grand = z.mean()
    rows = z.mean(axis=1) - grand
    cols = z.mean(axis=0) - grand
    inter = z - grand - rows[:, None] - cols[None, :]
    cols = cols - (cols @ gamma) / (gamma @ gamma) * gamma
    grand = math.sqrt(s2 / (n * kt))
    rows *= math.sqrt(s2 * (n - 1) / (kt * rows @ rows))
    cols *= math.sqrt(s2 * (kt - 1) / (n * cols @ cols))
    inter *= math.sqrt(s2 * (n - 1) * (kt - 1) / np.sum(inter ** 2))
    return grand + rows[:, None] + cols[None, :] + inter


def _assignment(strategy: str, budget: int, reps: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(scenario, generation id, judge) of every call, each (reps, T), as plan.py's schedules lay them out."""
    t = np.arange(N * budget)
    if strategy == "cyclic":                        # cyclic_schedule: one rotation over shuffled scenarios/judges
        order = np.argsort(rng.random((reps, N)), axis=1)
        jperm = np.argsort(rng.random((reps, KT)), axis=1)
        s = order[:, t // budget]
        return s, s * budget + t % budget, jperm[:, t % KT], N * budget
    if strategy == "random":                        # random_schedule: a uniform judge per generation
        s = np.broadcast_to(t // budget, (reps, t.size))
        return s, s * budget + t % budget, rng.integers(0, KT, (reps, t.size)), N * budget
    q, r = divmod(budget, KT)                       # all_judges_schedule(budget=B)
    s_full = np.repeat(np.arange(N), q * KT)
    g_full = s_full * (q + 1) + np.tile(np.repeat(np.arange(q), KT), N)
    j_full = np.tile(np.arange(KT), N * q)
    s = np.broadcast_to(s_full, (reps, s_full.size))
    g = np.broadcast_to(g_full, (reps, s_full.size))
    j = np.broadcast_to(j_full, (reps, s_full.size))
    if r:
        order = np.argsort(rng.random((reps, N)), axis=1)
        jperm = np.argsort(rng.random((reps, KT)), axis=1)
        pos = np.repeat(np.arange(N), r)
        slot = (pos * r + np.tile(np.arange(r), N)) % KT
        s_left = order[:, pos]
        s = np.concatenate([s, s_left], axis=1)
        g = np.concatenate([g, s_left * (q + 1) + q], axis=1)
        j = np.concatenate([j, jperm[:, slot]], axis=1)
    return s, g, j, N * (q + 1)


def _simulate(strategy: str, budget: int, *, conditional: bool, reps: int, seed: int) -> np.ndarray:
    """Errors (score - target) of ``reps`` replicates of the benchmark score."""
    rng = np.random.default_rng(seed)
    gamma = rng.standard_normal(KT)
    gamma -= gamma.mean()
    gamma *= math.sqrt(COMPS["s2_judge_panel"] / np.mean(gamma ** 2))      # sigma2_gamma = mean(gamma^2)
    s, g, j, n_gen = _assignment(strategy, budget, reps, rng)
    rows = np.arange(reps)[:, None]
    if conditional:
        alpha = np.broadcast_to(rng.standard_normal(N) * math.sqrt(S2A), (reps, N))
        ag = np.broadcast_to(_standardised_interaction(N, KT, S2SJ, gamma, rng), (reps, N, KT))
        target = alpha.mean(axis=1) + ag.mean(axis=(1, 2))             # full panel mean on these scenarios
    else:
        alpha = rng.standard_normal((reps, N)) * math.sqrt(S2A)
        ag = rng.standard_normal((reps, N, KT)) * math.sqrt(S2SJ)
        target = np.zeros(reps)                                          # mu = 0, sum(gamma) = 0
    beta = rng.standard_normal((reps, n_gen)) * math.sqrt(COMPS["s2_generation"])
    eps = rng.standard_normal(s.shape) * math.sqrt(COMPS["s2_residual"])
    x = alpha[rows, s] + beta[rows, g] + gamma[j] + ag[rows, s, j] + eps
    return x.mean(axis=1) - target


def _check(err: np.ndarray, want: float, without: float | None = None) -> None:
    """MSE of the errors equals ``want`` within 4 Monte Carlo SEs; ``without`` (the formula with the term
    dropped) must be rejected when the term is more than 8 SEs: the check can fail."""
    sq = err ** 2
    got, se = sq.mean(), sq.std(ddof=1) / math.sqrt(sq.size)
    assert abs(got - want) <= 4 * se, (got, want, se)
    assert se <= 1.5 * math.sqrt(2 / (sq.size - 1)) * want                 # the MC error is what it should be
    if without is not None and abs(want - without) > 8 * se:
        assert abs(got - without) > 4 * se, (got, without, se)


# ------------------------------------------------------------------------------ strategies A, B, C by simulation
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("budget", [3, 4, 6])                 # below, at and above K_tot = 4
@pytest.mark.parametrize("conditional", [True, False])
def test_strategy_variance_equals_brute_force_simulation(strategy, budget, conditional):
    reps = 20000
    err = _simulate(strategy, budget, conditional=conditional, reps=reps, seed=100 + budget)
    scen = None if conditional else S2A
    want = strategy_variance(strategy, budget=budget, n=N, k_total=KT, s2_scenario=scen, s2_scenario_judge=S2SJ,
                             **COMPS)
    without = strategy_variance(strategy, budget=budget, n=N, k_total=KT, s2_scenario=scen, **COMPS)
    _check(err, want, without)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("budget", [1, 2, 5, 7, 8, 9])
@pytest.mark.parametrize("conditional", [True, False])
def test_strategy_variance_simulation_more_budgets(strategy, budget, conditional):
    err = _simulate(strategy, budget, conditional=conditional, reps=40000, seed=300 + budget)
    scen = None if conditional else S2A
    want = strategy_variance(strategy, budget=budget, n=N, k_total=KT, s2_scenario=scen, s2_scenario_judge=S2SJ,
                             **COMPS)
    _check(err, want)


def test_realised_variance_of_the_plan_schedules_equals_the_strategy_formulas():
    """realised_variance of a concrete schedule (plain mean, exchangeable judges) gives the strategy value: exactly
    for the balanced rotations of A and C, and on average over random_schedule draws for B."""
    comps = {"scenario": S2A, "generation": COMPS["s2_generation"], "residual": COMPS["s2_residual"],
             "judge_panel": COMPS["s2_judge_panel"], "scenario_judge": S2SJ}
    judges = [f"judge_{i}" for i in range(KT)]
    for budget in (3, 4, 6):
        for scenario_term, scen in ((False, None), (True, S2A)):
            kw = dict(budget=budget, n=N, k_total=KT, s2_scenario=scen, s2_scenario_judge=S2SJ, **COMPS)
            c = realised_variance(cyclic_schedule(N, KT, generations=budget, seed=1), comps, judges=judges,
                                  scenario_term=scenario_term)
            assert c.total == pytest.approx(strategy_variance("cyclic", **kw), rel=1e-12)
            a = realised_variance(all_judges_schedule(N, KT, budget=budget, seed=1), comps, judges=judges,
                                  scenario_term=scenario_term)
            assert a.total == pytest.approx(strategy_variance("all", **kw), rel=1e-12)
            if scenario_term or budget == 4:
                continue
            sj = [realised_variance(random_schedule(N, KT, generations=budget, seed=s), comps, judges=judges,
                                    scenario_term=scenario_term).scenario_judge for s in range(80)]
            want = float(strategy_coefficients("random", budget=budget, n=N, k_total=KT)["scenario_judge"]) * S2SJ
            assert np.mean(sj) == pytest.approx(want, rel=4 * np.std(sj) / math.sqrt(len(sj)) / want)


# --------------------------------------------------------------------------------------- formulas by hand
def test_zero_interaction_changes_nothing():
    kw = dict(budget=7, n=9, k_total=5, **COMPS)
    for s in STRATEGIES:
        assert strategy_variance(s, **kw) == strategy_variance(s, s2_scenario_judge=0.0, **kw)
        assert strategy_variance(s, s2_scenario=1.2, **kw) == strategy_variance(s, s2_scenario=1.2,
                                                                                s2_scenario_judge=0.0, **kw)
    args = (1.2, 0.3, 0.5, 0.8)
    for a in ("cyclic", "random", "fixed"):
        assert design_variance(*args, n=7, m=3, k=2, k_total=5, assignment=a) == design_variance(
            *args, n=7, m=3, k=2, k_total=5, assignment=a, s2_scenario_judge=0.0)
    assert set(variance_contributions(*args, n=7, m=3, k=2, k_total=5)) == {"scenario", "generation", "residual",
                                                                            "judge_panel"}
    assert ab_threshold(0.3, 0.8, k_total=5) == ab_threshold(0.3, 0.8, k_total=5, s2_scenario_judge=0.0)


def test_coefficients_written_out():
    """Each formula typed in from its derivation (sum over scenarios and judges of the squared weights)."""
    n, kt, s2 = 6, 4, 2.0
    for b in range(1, 13):
        q, r = divmod(b, kt)
        even = n * (kt * q * q + 2 * q * r + r) / (n * b) ** 2                 # sum_il w_il^2, even split
        rand = n * (b * (1 - 1 / kt) + b * b / kt) / (n * b) ** 2             # E sum_il w_il^2, multinomial
        for s, sq in (("cyclic", even), ("all", even), ("random", rand)):
            c = strategy_coefficients(s, budget=b, n=n, k_total=kt)
            assert float(c["scenario_judge"]) == pytest.approx(sq - 1 / (n * kt), abs=1e-15)
            assert float(c["scenario_judge_resampled"]) == pytest.approx(1 / (n * kt))
    # Proposition 1: the same k judges on every cell -> s2/(nk); a design's coefficient per assignment
    assert variance_contributions(1, 1, 1, 1, n=n, m=3, k=2, k_total=kt, s2_scenario_judge=s2)[
        "scenario_judge"] == pytest.approx(s2 / (n * 2))
    assert grand_mean_variance(1, 1, 1, 1, n=n, m=3, k=2, k_total=kt, s2_scenario_judge=s2) == pytest.approx(
        grand_mean_variance(1, 1, 1, 1, n=n, m=3, k=2, k_total=kt) + s2 / (n * 2))
    m, k = 3, 2
    c = {a: design_coefficients(n=n, m=m, k=k, k_total=kt, assignment=a)["scenario_judge"]
         for a in ("cyclic", "random", "fixed")}
    q, r = divmod(m * k, kt)
    assert float(c["cyclic"]) == pytest.approx((kt * q * q + 2 * q * r + r) / (n * (m * k) ** 2))
    assert float(c["random"]) == pytest.approx((m * k * (1 - k / kt) + (m * k) ** 2 / kt) / (n * (m * k) ** 2))
    assert float(c["fixed"]) == pytest.approx(1 / (n * k))
    cc = design_coefficients(n=n, m=m, k=k, k_total=kt, assignment="fixed", conditional=True)
    assert float(cc["scenario"]) == 0 and float(cc["scenario_judge"]) == pytest.approx(1 / (n * k) - 1 / (n * kt))
    # A vs B: B carries (K-1)/K s2 more per nB at multiples of K_tot
    gaps = strategy_gaps(budget=8, n=n, k_total=kt, s2_scenario_judge=s2, **COMPS)
    assert gaps["all-random"] * n * 8 == pytest.approx(ab_threshold(0.3, 0.8, k_total=kt, s2_scenario_judge=s2))


def test_target_searches_with_the_interaction_equal_a_full_scan():
    rng = np.random.default_rng(5)
    bs, ns = np.arange(1, 801), np.arange(1, 801)
    for trial in range(60):
        comps = rng.gamma(0.5, 1.0, 5) * (rng.random(5) > 0.2)
        comps[4] = rng.gamma(0.8, 1.0)
        kt, n = int(rng.integers(2, 8)), int(rng.integers(1, 6))
        strategy = STRATEGIES[trial % 3]
        scen = comps[0] if trial % 2 else None
        kw = dict(s2_generation=comps[1], s2_residual=comps[2], s2_judge_panel=comps[3], n=n, k_total=kt,
                  s2_scenario=scen, s2_scenario_judge=comps[4])
        c = strategy_coefficients(strategy, budget=bs, n=n, k_total=kt)      # checked by simulation above
        v = c["generation"] * comps[1] + c["residual"] * comps[2] + c["judge_panel"] * comps[3] \
            + c["scenario_judge"] * comps[4] + (0.0 if scen is None else comps[0] / n + comps[4] / (n * kt))
        if v.max() > v.min():
            t = math.sqrt(rng.uniform(v.min(), v.max()))
            assert budget_for_target_se(t, strategy=strategy, budget_max=int(bs[-1]), **kw) == \
                int(bs[np.argmax(v <= t * t)]), (trial, kt, n, strategy)
        k, m = int(rng.integers(1, kt + 1)), int(rng.integers(1, 4))
        assignment = ("cyclic", "random", "fixed")[trial % 3]
        dkw = dict(m=m, k=k, k_total=kt, assignment=assignment, s2_scenario_judge=comps[4])
        c = design_coefficients(n=ns, m=m, k=k, k_total=kt, assignment=assignment)
        v = c["scenario"] * comps[0] + c["generation"] * comps[1] + c["residual"] * comps[2] \
            + c["judge_panel"] * comps[3] + c["scenario_judge"] * comps[4]
        assert v[6] == pytest.approx(design_variance(*comps[:4], n=7, **dkw), rel=1e-12)
        if v.max() > v.min() and (assignment != "fixed" or k == kt):
            t = math.sqrt(rng.uniform(v.min(), v.max()))
            assert scenarios_for_target_se(t, s2_scenario=comps[0], s2_generation=comps[1], s2_residual=comps[2],
                                           s2_judge_panel=comps[3], n_max=int(ns[-1]), **dkw) == \
                int(ns[np.argmax(v <= t * t)]), (trial, kt, k, m, assignment)


def test_best_generations_per_scenario_with_the_interaction_equals_a_full_scan():
    rng = np.random.default_rng(6)
    for trial in range(80):
        a, b, e, sj = rng.gamma(0.5, 1.0, 4) * (rng.random(4) > 0.15)
        sj = sj or 0.7
        kt = int(rng.integers(2, 7))
        bg = int(rng.integers(1, 300))
        nmax = int(rng.integers(1, 120))
        v = [scenario_generation_variance(a, b, e, generation_budget=bg, m=m, k_total=kt, s2_scenario_judge=sj)
             if bg // m <= nmax else
             a / nmax + (b + e) / (nmax * m) + sj * (1 / kt + (m % kt) * (kt - m % kt) / (kt * m * m)) / nmax
             for m in range(1, bg + 1)]
        got = best_generations_per_scenario(a, b, e, generation_budget=bg, n_max=nmax, k_total=kt,
                                            s2_scenario_judge=sj)
        assert v[got - 1] <= min(v) * (1 + 1e-12), (trial, got, int(np.argmin(v)) + 1)


def test_interaction_needs_the_panel_size():
    with pytest.raises(cj.CjstatsError, match="needs k_total"):
        scenario_generation_variance(1, 1, 1, generation_budget=10, m=2, s2_scenario_judge=1.0)
    with pytest.raises(cj.CjstatsError, match="s2_scenario_judge"):
        strategy_variance("cyclic", budget=4, n=3, k_total=4, s2_scenario_judge=-1.0, **COMPS)


# ------------------------------------------------------------------------------------------------ schedules
def test_rotation_across_generations_is_the_even_split_and_reports_its_saving():
    for m in (2, 3, 4, 6, 9):
        rot = schedule_audit(cyclic_schedule(12, KT, generations=m, seed=2))
        unrot = schedule_audit(cyclic_schedule(12, KT, generations=m, seed=2, unit="scenario"))
        q, r = divmod(m, KT)
        assert rot.scenario_judge_coefficient == pytest.approx(r * (KT - r) / (12 * KT * m * m), abs=1e-15)
        assert rot.scenario_judge_coefficient == pytest.approx(rot.scenario_judge_coefficient_best, abs=1e-15)
        assert unrot.scenario_judge_coefficient == pytest.approx(1 / 12 - 1 / (12 * KT))
        assert rot.scenario_judge_saving == pytest.approx(1 / 12 - 1 / (12 * KT) - r * (KT - r) / (12 * KT * m * m))
        assert unrot.scenario_judge_saving == pytest.approx(0.0, abs=1e-15)
        assert "saving" in rot.as_text()
        # what the audit says is saved is the realised variance saved
        comps = {"scenario": 1.0, "generation": 0.3, "residual": 0.5, "judge_panel": 0.8, "scenario_judge": S2SJ}
        v = [realised_variance(cyclic_schedule(12, KT, generations=m, seed=2, unit=u), comps,
                               scenario_term=False).total for u in ("generation", "scenario")]
        judge = [realised_variance(cyclic_schedule(12, KT, generations=m, seed=2, unit=u), comps,
                                   scenario_term=False).judge for u in ("generation", "scenario")]
        assert (v[1] - judge[1]) - (v[0] - judge[0]) == pytest.approx(S2SJ * rot.scenario_judge_saving)
    # k > 1 judges per generation: a scenario's m k calls are consecutive in the rotation
    a = schedule_audit(cyclic_schedule(8, 5, generations=3, judges_per_generation=2, seed=0))
    assert a.scenario_judge_coefficient == pytest.approx(1 * 4 / (8 * 5 * 36), abs=1e-15)


def test_group_components_reads_the_interaction():
    g = group_components({"scenario": 1, "generation": 0.2, "residual": 0.5, "judge_panel": 0.3})
    assert g.scenario_judge == 0.0
    g = group_components({"scenario": 1, "generation": 0.2, "residual": 0.5, "judge_panel": 0.3,
                          "scenario_judge": 0.4})
    assert g.scenario_judge == 0.4
    with pytest.raises(cj.CjstatsError, match="'scenario_judge' component"):
        group_components({"scenario": 1, "generation": 0.2, "residual": 0.5, "judge_panel": 0.3,
                          "scenario_judge": -1})


def test_group_components_from_a_fit_with_and_without_the_row():
    """A fit without a scenario_judge row gives 0; with an identifiable row, its estimate and bounds; with a
    non-identifiable one (m = 1), 0."""
    import dataclasses

    from cjstats.studies.simulate import simulate_scores

    fit = cj.estimate(simulate_scores(n=20, m=2, k=4, s2_scenario=1.0, s2_generation=0.3, s2_residual=0.5,
                                      judge_offsets=[-0.5, 0.0, 0.2, 0.3], seed=0))
    rows = fit.components[fit.components["component"] != "scenario_judge"]
    g = group_components(dataclasses.replace(fit, components=rows))
    assert g.scenario_judge == 0.0 and g.lower["scenario_judge"] == 0.0
    extra = rows[rows["component"] == "residual"].assign(component="scenario_judge", estimate=0.25, lower=0.1,
                                                          upper=0.6, identifiable=True)
    g2 = group_components(dataclasses.replace(fit, components=pd.concat([rows, extra], ignore_index=True)))
    assert (g2.scenario_judge, g2.lower["scenario_judge"], g2.upper["scenario_judge"]) == (0.25, 0.1, 0.6)
    off = extra.assign(identifiable=False, estimate=np.nan, lower=np.nan, upper=np.nan)
    g3 = group_components(dataclasses.replace(fit, components=pd.concat([rows, off], ignore_index=True)))
    assert g3.scenario_judge == 0.0 and g3.upper["scenario_judge"] == 0.0


# -------------------------------------------------------------------------------------------------- optimiser
BASE = dict(scenario=0.5, generation=0.3, residual=0.2, judge_panel=0.4)
OPT = dict(budget=400, k_total=4, n_max=20, generation_cost=5.0, judge_costs={f"judge_{i}": 1.0 for i in range(4)},
           n_draws=10)


def test_optimiser_recommends_more_judges_per_scenario_under_a_large_interaction():
    """Generations cost 5, calls 1: without the interaction, 3 generations x 1 judge per scenario; with
    sigma2_scenario_judge = 2, 2 generations x all 4 judges (the same cost), and simulation agrees."""
    without = optimise(BASE, **OPT).recommendation
    with_ = optimise({**BASE, "scenario_judge": 2.0}, **OPT).recommendation
    assert (without["strategy"], without["judges_per_generation"], without["n"], without["m"]) == ("cyclic", 1, 20, 3)
    assert (with_["strategy"], with_["judges_per_generation"], with_["n"], with_["m"]) == ("all", 4, 20, 2)
    # both designs by brute force under the true model with the interaction (scenarios resampled)
    rng = np.random.default_rng(11)
    reps, n, kt = 20000, 20, 4
    s2a, s2b, s2e, s2g, s2sj = 0.5, 0.3, 0.2, 0.4, 2.0
    gamma = rng.standard_normal(kt)
    gamma -= gamma.mean()
    gamma *= math.sqrt(s2g / np.mean(gamma ** 2))

    def score(plan: pd.DataFrame) -> np.ndarray:
        s = plan["scenario"].to_numpy()
        g = s * 10 + plan["generation"].to_numpy()
        j = plan["judge"].str.slice(6).astype(int).to_numpy()
        alpha = rng.standard_normal((reps, n)) * math.sqrt(s2a)
        beta = rng.standard_normal((reps, n * 10)) * math.sqrt(s2b)
        ag = rng.standard_normal((reps, n, kt)) * math.sqrt(s2sj)
        eps = rng.standard_normal((reps, len(plan))) * math.sqrt(s2e)
        x = alpha[:, s] + beta[:, g] + gamma[j] + ag[:, s, j] + eps
        return x.mean(axis=1)

    v_c = score(cyclic_schedule(n, kt, generations=3, seed=3))
    v_a = score(all_judges_schedule(n, kt, generations=2, seed=3))
    se = math.sqrt(np.var(v_c ** 2) / reps + np.var(v_a ** 2) / reps)
    assert np.mean(v_c ** 2) - np.mean(v_a ** 2) > 4 * se
    assert np.mean(v_a ** 2) == pytest.approx(with_["variance"], abs=4 * np.std(v_a ** 2) / math.sqrt(reps))


def test_optimiser_without_the_term_is_unchanged():
    a = optimise(BASE, **OPT)
    b = optimise({**BASE, "scenario_judge": 0.0}, **OPT)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert not any("interaction" in note for note in a.notes)
    c = optimise({**BASE, "scenario_judge": 2.0}, **OPT)
    assert any("scenario x judge interaction" in note for note in c.notes)


def test_optimiser_target_se_with_the_interaction_is_the_cheapest_that_reaches_it():
    comps = {**BASE, "scenario_judge": 1.0}
    res = optimise(comps, target_se=0.25, k_total=4, n_max=40, n_draws=10)
    rec = res.recommendation
    assignment = "random" if rec["strategy"] == "random" else "cyclic"
    v = design_variance(0.5, 0.3, 0.2, 0.4, n=rec["n"], m=rec["m"], k=rec["judges_per_generation"], k_total=4,
                        assignment=assignment, s2_scenario_judge=1.0)
    assert v == pytest.approx(rec["variance"], rel=1e-12) and v <= 0.25 ** 2
    # no cyclic design of the same n, k with fewer generations reaches the target
    if rec["m"] > 1:
        assert design_variance(0.5, 0.3, 0.2, 0.4, n=rec["n"], m=rec["m"] - 1, k=rec["judges_per_generation"],
                               k_total=4, assignment=assignment, s2_scenario_judge=1.0) > 0.25 ** 2
