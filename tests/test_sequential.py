"""Anytime-valid confidence sequences over scenarios (cjstats.decisions.sequential, issue 23).

Coverage is time-uniform: a run covers only if the truth is inside the CS at EVERY n. The CI subset uses
R = 200 runs and requires coverage >= 0.95 - 2 binomial SEs (0.919); a pointwise t interval fails the same check
(the control), so the check can fail. ``-m slow`` runs R = 2000.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.decisions import sequential as sq
from cjstats.exceptions import CjstatsError

ALPHA = 0.05


def _margin(r: int) -> float:
    return 0.95 - 2 * math.sqrt(0.95 * 0.05 / r)


# ------------------------------------------------------------------------------------ simulators
def ceiling_differences(rng, r: int, n: int, mu: float = 4.3, calls: int = 3) -> np.ndarray:
    """x = panel mean of a - of b on 1-5 integer scores with a ceiling (true difference 0)."""
    ya = np.clip(np.round(mu + rng.standard_normal((r, n, calls))), 1, 5).mean(-1)
    yb = np.clip(np.round(mu + rng.standard_normal((r, n, calls))), 1, 5).mean(-1)
    return ya - yb


def judge_level_x(rng, strategy: str, r: int, n: int, *, delta: float, gamma: np.ndarray, s2_ms: float,
                  s2_gen: float, s2_res: float, budget: int) -> np.ndarray:
    """x_i of two models, each scored by ``budget`` calls per scenario, independent schedules (panel view).

    all: one generation scored by every judge (budget = K); random: each call a uniform judge; cyclic: one
    rotation per model with a random start. Scores = 3 + mu_p + ms + beta + gamma_l + eps.
    """
    k = len(gamma)
    out = np.zeros((r, n))
    for p, mu in ((0, delta), (1, 0.0)):
        ms = rng.normal(0, math.sqrt(s2_ms), (r, n, 1))
        if strategy == "all":
            assert budget == k
            lab = np.broadcast_to(np.arange(k), (r, n, k))
            beta = rng.normal(0, math.sqrt(s2_gen), (r, n, 1))
        elif strategy == "random":
            lab = rng.integers(0, k, (r, n, budget))
            beta = rng.normal(0, math.sqrt(s2_gen), (r, n, budget))
        else:
            start = rng.integers(0, k, (r, 1, 1))
            lab = (start + np.arange(n * budget).reshape(1, n, budget)) % k
            beta = rng.normal(0, math.sqrt(s2_gen), (r, n, budget))
        eps = rng.normal(0, math.sqrt(s2_res), (r, n, budget))
        y = 3 + mu + ms + beta + gamma[lab] + eps
        out += (1 if p == 0 else -1) * y.mean(-1)
    return out


# ------------------------------------------------------------------------------- hand-checked formulas
def _eb_by_hand(y: np.ndarray, alpha: float, c: float) -> tuple[list[float], list[float]]:
    """WSR (2024) eq. (13)-(15), one scalar step at a time, as printed (no clipping, no intersection)."""
    mu_prev, s2_prev = 0.5, 0.25
    sum_y = sum_sq = sum_l = sum_ly = sum_vpsi = 0.0
    centre, radius = [], []
    for t, yt in enumerate(y, start=1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * math.log(1 + t))), c)
        v = 4 * (yt - mu_prev) ** 2
        psi = (-math.log(1 - lam) - lam) / 4
        sum_l += lam
        sum_ly += lam * yt
        sum_vpsi += v * psi
        centre.append(sum_ly / sum_l)
        radius.append((math.log(2 / alpha) + sum_vpsi) / sum_l)
        sum_y += yt
        mu_t = (0.5 + sum_y) / (t + 1)
        sum_sq += (yt - mu_t) ** 2
        mu_prev, s2_prev = mu_t, (0.25 + sum_sq) / (t + 1)
    return centre, radius


def test_eb_matches_the_paper_step_by_step():
    y = np.random.default_rng(0).beta(2, 5, 300)
    centre, radius = _eb_by_hand(y, 0.1, 0.75)
    c, lo, hi = sq.eb_sequence(y, 0.1, truncation=0.75, intersect=False)
    np.testing.assert_allclose(c, centre, rtol=1e-12)
    np.testing.assert_allclose(hi, np.minimum(np.array(centre) + radius, 1.0), rtol=1e-12)
    np.testing.assert_allclose(lo, np.maximum(np.array(centre) - radius, 0.0), rtol=1e-12)
    # first step by hand: lambda_1 = min(sqrt(2 log 20 / (1/4 log 2)), 3/4) = 3/4, v_1 = 4 (y_1 - 1/2)^2
    psi = (-math.log(0.25) - 0.75) / 4
    assert radius[0] == pytest.approx((math.log(20) + 4 * (y[0] - 0.5) ** 2 * psi) / 0.75, rel=1e-14)
    # the running intersection never widens
    _, lo2, hi2 = sq.eb_sequence(y, 0.1)
    assert (np.diff(hi2 - lo2) <= 1e-15).all()


def test_normal_mixture_formulas_by_hand():
    # eq. (14) at v = rho = 1, alpha = e^-1: sqrt(2 (log 2 + 2))
    assert float(sq.normal_mixture_radius(np.array(1.0), 1.0, math.exp(-1))) == pytest.approx(
        math.sqrt(2 * (math.log(2) + 2)), rel=1e-14)
    # rho minimises the boundary at v_opt: the radius there is lower than at rho x 0.8 and x 1.25
    rho = sq.normal_mixture_rho(500.0, 0.05)
    at = lambda r: float(sq.normal_mixture_radius(np.array(500.0), r, 0.05))  # noqa: E731
    assert at(rho) < at(0.8 * rho) and at(rho) < at(1.25 * rho)
    # the CS is mean +/- radius(sigma2 t)/t
    x = np.array([1.0, -1.0, 2.0])
    m, lo, hi = sq.normal_mixture_sequence(x, 2.0, 0.05, n_opt=10, intersect=False)
    r3 = float(sq.normal_mixture_radius(np.array(6.0), sq.normal_mixture_rho(20.0, 0.05), 0.05)) / 3
    assert m[2] == pytest.approx(2 / 3) and hi[2] == pytest.approx(2 / 3 + r3)


def test_t_interval_and_first_exclusion():
    from scipy import stats

    x = np.array([0.1, 0.5, -0.2, 0.9])
    m, lo, hi = sq.t_interval(x, 0.05)
    h = stats.t.ppf(0.975, 3) * x.std(ddof=1) / 2
    assert (m, lo, hi) == pytest.approx((x.mean(), x.mean() - h, x.mean() + h))
    lower = np.array([[-1, -0.5, 0.1, 0.2], [-1, -1, -1, -1]])
    upper = np.array([[1, 1, 1, 1], [1, 1, -0.1, 1]])
    assert sq.first_exclusion(lower, upper).tolist() == [3, 3]
    assert sq.first_exclusion(lower[1:], np.ones((1, 4))).tolist() == [0]


# ------------------------------------------------------------------------------------ coverage
def _coverage_eb(x: np.ndarray, low: float, span: float, truth: float) -> float:
    _, lo, hi = sq.eb_sequence((x - low) / span, ALPHA)
    t = (truth - low) / span
    return float(((lo <= t) & (hi >= t)).all(axis=-1).mean())


def _coverage_pointwise_t(x: np.ndarray, truth: float) -> float:
    from scipy import stats

    n = np.arange(1, x.shape[1] + 1)
    m = np.cumsum(x, 1) / n
    sd = np.sqrt(np.maximum(np.cumsum(x * x, 1) / n - m * m, 0) * n / np.maximum(n - 1, 1))
    h = stats.t.ppf(0.975, np.maximum(n - 1, 1)) * sd / np.sqrt(n)
    ok = (np.abs(m - truth) <= h)[:, 1:]
    return float(ok.all(axis=1).mean())


@pytest.mark.parametrize("r", [200, pytest.param(2000, marks=pytest.mark.slow)])
def test_time_uniform_coverage_bounded_ceiling(r):
    x = ceiling_differences(np.random.default_rng(11), r, 300)
    cov = _coverage_eb(x, -4.0, 8.0, 0.0)
    assert cov >= _margin(r), cov
    assert _coverage_pointwise_t(x, 0.0) < 0.8          # control: the check fails an interval that is not a CS


@pytest.mark.parametrize("r", [200, pytest.param(2000, marks=pytest.mark.slow)])
def test_time_uniform_coverage_continuous(r):
    rng = np.random.default_rng(12)
    # bounded continuous (Beta on [0, 1], mean 2/7): empirical Bernstein
    y = rng.beta(2, 5, (r, 400))
    assert _coverage_eb(y, 0.0, 1.0, 2 / 7) >= _margin(r)
    # normal: the normal mixture with the true variance, and with a pilot of 20 scenarios
    x = rng.normal(0.3, 1.0, (r, 400))
    _, lo, hi = sq.normal_mixture_sequence(x, 1.0, ALPHA)
    assert ((lo <= 0.3) & (hi >= 0.3)).all(axis=1).mean() >= _margin(r)
    covered = 0
    for row in x:
        df = pd.DataFrame({"model": "a", "scenario": [f"s{i}" for i in range(len(row))], "judge": "j", "score": row})
        res = cj.confidence_sequence(df, "a", method="normal_mixture", null=0.3)
        t = res.table.dropna(subset=["lower"])
        covered += bool(((t["lower"] <= 0.3) & (t["upper"] >= 0.3)).all())
    assert covered / r >= _margin(r)
    assert _coverage_pointwise_t(x, 0.3) < 0.8


def test_width_at_the_end_within_2_5_of_the_t_interval():
    rng = np.random.default_rng(13)
    x = ceiling_differences(rng, 50, 500)
    _, lo, hi = sq.eb_sequence((x + 4) / 8, ALPHA)
    t_width = np.array([np.subtract(*sq.t_interval(row, ALPHA)[:0:-1]) for row in x])
    ratio_eb = float((8 * (hi - lo)[:, -1]).mean() / t_width.mean())
    _, lo, hi = sq.normal_mixture_sequence(x, float(x.var()), ALPHA, n_opt=500)
    ratio_nm = float((hi - lo)[:, -1].mean() / t_width.mean())
    assert 1.0 < ratio_eb <= 2.5, ratio_eb          # measured 2.1
    assert 1.0 < ratio_nm <= 2.0, ratio_nm          # measured 1.55


# ------------------------------------------------------------------------------ the public function
def _table(rng, n=300, diff=0.2, judges=4):
    gam = np.linspace(-0.5, 0.5, judges)
    rows = []
    for i in range(n):
        for m, mu in (("a", 3.5 + diff), ("b", 3.5)):
            for k in range(judges):
                s = int(np.clip(np.round(mu + gam[k] + rng.normal(0, 0.9)), 1, 5))
                rows.append((m, f"s{i}", f"j{k}", s))
    return pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])


def test_confidence_sequence_result_contract_and_decision(tmp_path):
    df = _table(np.random.default_rng(5), diff=0.6)
    res = cj.confidence_sequence(df, "a", "b", bounds=(1, 5))
    assert res.decision == "STOP" and res.sign == 1 and res.stop_at is not None
    row = res.table.iloc[res.stop_at - 1]
    assert row["lower"] > 0 and (res.table["lower"].iloc[: res.stop_at - 1] <= 0).all()
    assert len(res.table) == 300 and res.t_lower < res.t_estimate < res.t_upper
    # x is the difference of panel means per scenario
    pm = df.groupby(["model", "scenario"], sort=False)["score"].mean()
    assert res.table["x"].iloc[7] == pytest.approx(pm["a"]["s7"] - pm["b"]["s7"])
    back = pickle.loads(pickle.dumps(res))
    assert back.table.equals(res.table)
    loaded = type(res).load(res.save(tmp_path / "cs"))
    pd.testing.assert_frame_equal(loaded.table, res.table)
    assert "STOP" in res.summary().as_text() and isinstance(res.to_frame(), pd.DataFrame)
    # order: reversed arrival gives the same final t interval but another path
    rev = cj.confidence_sequence(df, "a", "b", bounds=(1, 5), order=[f"s{i}" for i in range(299, -1, -1)])
    assert rev.table["scenario"].iloc[0] == "s299" and rev.t_estimate == pytest.approx(res.t_estimate)
    # one model against a null value
    one = cj.confidence_sequence(df, "b", bounds=(1, 5), null=3.0)
    assert one.model_b is None and one.table["x"].iloc[0] == pytest.approx(pm["b"]["s0"])


def test_no_difference_continues():
    res = cj.confidence_sequence(_table(np.random.default_rng(6), diff=0.0, n=150), "a", "b", bounds=(1, 5))
    assert res.decision == "CONTINUE" and res.sign == 0 and res.stop_at is None


@pytest.mark.parametrize("kwargs, words", [
    (dict(model_a="zz", model_b="b", bounds=(1, 5)), "'model_a' argument of confidence_sequence is 'zz'"),
    (dict(model_a="a", model_b="a", bounds=(1, 5)), "both 'a'"),
    (dict(model_a="a", model_b="b", bounds=(2, 4)), "scores run from 1 to 5"),
    (dict(model_a="a", model_b="b", bounds=(5, 1)), "lowest < highest"),
    (dict(model_a="a", model_b="b", bounds="1-5"), "'bounds' argument"),
    (dict(model_a="a", model_b="b", bounds=(1, 5), alpha=1.5), "'alpha' argument of confidence_sequence"),
    (dict(model_a="a", model_b="b", bounds=(1, 5), method="bayes"), "'method' argument"),
    (dict(model_a="a", model_b="b", bounds=(1, 5), variance=1.0), "applies to method='normal_mixture' only"),
    (dict(model_a="a", model_b="b", method="normal_mixture", pilot=100), "only 30 have arrived"),
    (dict(model_a="a", model_b="b", bounds=(1, 5), order=["s1", "nope"]), "scenario 'nope'"),
    (dict(model_a="a", model_b="b", bounds=(1, 5), truncation=1.0), "'truncation' argument"),
])
def test_bad_input_sentences(kwargs, words):
    df = _table(np.random.default_rng(7), n=30)
    with pytest.raises(CjstatsError, match=None) as info:
        cj.confidence_sequence(df, **kwargs)
    msg = str(info.value)
    assert words in msg and "Traceback" not in msg and msg.count("\n") == 0


def test_bad_tables():
    df = _table(np.random.default_rng(8), n=5)
    with pytest.raises(CjstatsError, match="no column 'score'"):
        cj.confidence_sequence(df.drop(columns="score"), "a", "b", bounds=(1, 5))
    with pytest.raises(CjstatsError, match="1 non-numeric values"):         # read_scores' sentence
        cj.confidence_sequence(df.assign(score=df["score"].astype(object).where(df.index > 0, "x")), "a", "b",
                               bounds=(1, 5))
    with pytest.raises(CjstatsError, match="must be a Scores table"):
        cj.confidence_sequence([1, 2, 3], "a", "b")
    with pytest.warns(cj.CjstatsWarning, match="taken from the data"):
        cj.confidence_sequence(df, "a", "b")


# ------------------------------------------------------------------------------------ planning
COMPS = dict(s2_model_scenario=0.1, s2_generation=0.2, s2_residual=0.8, s2_judge_panel=0.2, s2_judge_difference=0.0)
GAMMA = np.array([-0.6, -0.2, 0.2, 0.6])            # panel mean of gamma^2 = 0.2


def test_per_scenario_variance_by_hand_and_by_simulation():
    kw = dict(budget=4, k_total=4, schedule="independent")
    v = {s: sq.per_scenario_variance(COMPS, s, **kw) for s in ("all", "random", "cyclic")}
    # all: 2 s2_ms + 2 (s2_gen + s2_res/4); random adds 2 s2_judge/4 with s2_gen/4; cyclic: a full rotation
    assert v == pytest.approx({"all": 1.0, "random": 0.8, "cyclic": 0.7})
    rng = np.random.default_rng(21)
    for s, target in v.items():
        x = judge_level_x(rng, s, 1, 20000, delta=0.0, gamma=GAMMA, s2_ms=0.1, s2_gen=0.2, s2_res=0.8, budget=4)
        se = target * math.sqrt(2 / 20000) * 1.2       # SE of a sample variance (kurtosis ~ 3, +20%)
        assert abs(x.var() - target) < 3 * se, (s, x.var(), target)


@pytest.mark.parametrize("method", ["normal_mixture", "empirical_bernstein"])
def test_plan_matches_simulated_stopping_times(method):
    bounds = (-1.0, 7.0)          # x in [-8, 8], as for 1-5 scores
    plan = cj.sequential_plan(COMPS, delta=0.3, alpha=ALPHA, budget=4, k_total=4, schedule="independent",
                              method=method, bounds=bounds, n_max=3000, replicates=300, seed=1)
    t = plan.table.set_index("strategy")
    assert t.loc["cyclic", "expected_n"] < t.loc["random", "expected_n"] < t.loc["all", "expected_n"]
    assert (t["p_stop"] == 1).all() and (t["n_fixed"] < t["expected_n"]).all()
    rng = np.random.default_rng(2)
    for s in ("all", "random", "cyclic"):
        x = judge_level_x(rng, s, 300, 3000, delta=0.3, gamma=GAMMA, s2_ms=0.1, s2_gen=0.2, s2_res=0.8, budget=4)
        if method == "normal_mixture":
            _, lo, hi = sq.normal_mixture_sequence(x, t.loc[s, "variance"], ALPHA)
            stop = sq.first_exclusion(lo, hi)
        else:
            _, lo, hi = sq.eb_sequence((x + 8) / 16, ALPHA)
            stop = sq.first_exclusion(lo, hi, 0.5)
        assert (stop > 0).all()
        se = math.hypot(stop.std(ddof=1) / math.sqrt(len(stop)), t.loc[s, "expected_n_se"])
        assert abs(stop.mean() - t.loc[s, "expected_n"]) < 3 * se, (s, stop.mean(), t.loc[s, "expected_n"], se)
        # the oracle-width rule sits near the typical stopping time
        assert 0.5 < t.loc[s, "n_width"] / np.median(stop) < 2.0


def test_plan_contract_and_bad_input(tmp_path):
    plan = cj.sequential_plan(COMPS, delta=-0.5, budget=1, k_total=4, bounds=(1, 5), n_max=2000, replicates=50)
    assert list(plan.table["strategy"]) == ["all", "random", "cyclic"]
    assert pickle.loads(pickle.dumps(plan)).table.equals(plan.table)
    assert type(plan).load(plan.save(tmp_path / "p")).table.shape == plan.table.shape
    assert "Sequential plan" in str(plan.summary())
    with pytest.raises(CjstatsError, match="'delta' argument of sequential_plan is 0"):
        cj.sequential_plan(COMPS, delta=0.0, k_total=4)
    with pytest.raises(CjstatsError, match="must be a joint fit"):
        cj.sequential_plan({"scenario": 1.0}, delta=0.2, k_total=4)
    with pytest.raises(CjstatsError, match="'strategies' argument"):
        cj.sequential_plan(COMPS, delta=0.2, k_total=4, strategies=("best",))
    with pytest.raises(CjstatsError, match="needs k_total"):
        cj.sequential_plan(COMPS, delta=0.2, bounds=(1, 5))


# ---------------------------------------------------------------------------------- CLI and plot
def test_cli_monitor(tmp_path):
    from click.testing import CliRunner

    from cjstats.cli import cli

    path = tmp_path / "scores.csv"
    _table(np.random.default_rng(5), diff=0.6).to_csv(path, index=False)
    out = CliRunner().invoke(cli, ["monitor", str(path), "--models", "a,b", "--bounds", "1,5"])
    assert out.exit_code == 0, out.output
    assert out.output.rstrip().endswith("STOP") and "Confidence sequence" in out.output
    out = CliRunner().invoke(cli, ["monitor", str(path), "--models", "a,b", "--bounds", "1,5", "--format", "json"])
    assert out.exit_code == 0 and '"decision": "STOP"' in out.output
    for args, words in ((["--models", "a,zz", "--bounds", "1,5"], "--models names 'zz'"),
                        (["--models", "a,b", "--bounds", "1"], "--bounds takes two numbers"),
                        (["--models", "a,b"], "add --bounds LO,HI"),
                        (["--models", "a,b", "--bounds", "2,4"], "The option --bounds is (2, 4)"),
                        (["--models", "a,b", "--method", "normal_mixture", "--pilot", "400"], "lower --pilot")):
        out = CliRunner().invoke(cli, ["monitor", str(path), *args])
        assert isinstance(out.exception, CjstatsError) and words in str(out.exception), (args, out.exception)


def test_sequence_plot(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from cjstats.plots import sequence_plot

    res = cj.confidence_sequence(_table(np.random.default_rng(5), diff=0.6), "a", "b", bounds=(1, 5))
    fig = sequence_plot(res)
    gids = {a.get_gid() for a in fig.axes[0].get_children()}
    assert {"band", "estimate", "null", "stop"} <= gids
    fig.savefig(tmp_path / "seq.png")


def test_plan_from_a_joint_fit_matches_the_spread_of_x():
    df = _table(np.random.default_rng(9), diff=0.3, n=200)
    fit = cj.fit_joint(cj.read_scores(df))
    plan = cj.sequential_plan(fit, delta=0.3, budget=4, method="normal_mixture", strategies=("all",),
                              n_max=2000, replicates=50)
    # every judge scores every scenario once per model: Var(x) = 2 s2_ms + 2 s2_res/4 (+ 0 judge terms)
    x = cj.confidence_sequence(df, "a", "b", bounds=(1, 5)).table["x"]
    v = float(plan.table["variance"].iloc[0])
    assert abs(x.var() - v) < 3 * v * math.sqrt(2 / (len(x) - 1)), (x.var(), v)
