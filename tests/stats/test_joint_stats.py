"""The joint unit of the statistics layer: build_stats(unit=("criterion",)) and its REML and ANOVA views.

Oracles: a dense brute-force computation of [X y]'H^{-1}[X y] and log|H| for the joint nested model (H built
row by row, no Woodbury), and the joint ANOVA mean squares summed directly on the dense (P, n, m, K) array.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.estimators.joint.anova import JointMeanSquares
from cjstats.estimators.joint.reml import _weighted_gram
from cjstats.studies.simulate_joint import simulate_joint, simulate_joint_array
from cjstats.stats import JointStats, build_stats, merge_stats, stack_models


def _table(seed: int, *, p: int = 3, n: int = 9, m: int = 2, k: int = 4, missing: float = 0.0,
           unshared: bool = False, unequal: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = simulate_joint(n=n, m=m, mu=rng.normal(5, 1, p), gamma=rng.normal(0, 0.4, k), s2_scenario=0.5,
                        s2_model_scenario=0.3, s2_generation=0.2, s2_residual=1.0, missing=missing, rng=rng)
    if unshared:   # model 0 lacks the last two scenarios, model 1 the first one
        df = df[~(((df["model"] == "m0") & (df["scenario"] >= n - 2)) | ((df["model"] == "m1") & (df["scenario"] == 0)))]
    if unequal:    # one generation fewer on every third (model, scenario)
        df = df[~(((df["scenario"] + df["model"].str[1].astype(int)) % 3 == 0) & (df["generation"] == m - 1))]
    return df.reset_index(drop=True)


DESIGNS = {
    "balanced": dict(seed=1),
    "missing": dict(seed=2, missing=0.2),
    "unshared": dict(seed=3, unshared=True, missing=0.1),
    "unequal-m": dict(seed=4, m=3, unequal=True),
    "one-generation": dict(seed=5, m=1, missing=0.1),
    "two-models": dict(seed=6, p=2, k=3, missing=0.05),
}


def _dense_gram(frame: pd.DataFrame, js: JointStats, theta: np.ndarray) -> tuple[np.ndarray, float]:
    """[X y]'H^{-1}[X y] and log|H| with H = I + ta Za Za' + tm Zg Zg' + tb Zc Zc' built explicitly."""
    f = frame.copy()
    f["model"] = f["model"].astype(str)
    f["judge"] = f["judge"].astype(str)
    f["scenario"] = f["scenario"].astype(str)
    f["generation"] = f["generation"].astype(str)
    models, judges = list(js.models), list(js.judge_labels)
    mi = f["model"].map({m: i for i, m in enumerate(models)}).to_numpy()
    ji = f["judge"].map({j: i for i, j in enumerate(judges)}).to_numpy()
    n_rows = len(f)
    x = np.zeros((n_rows, len(models) * len(judges)))
    x[np.arange(n_rows), mi * len(judges) + ji] = 1.0
    ns = js.for_joint_reml()
    y = f["score"].to_numpy(float) - ns.shift[mi]

    def z(keys: list[str]) -> np.ndarray:
        codes = pd.factorize(pd.MultiIndex.from_frame(f[keys]))[0]
        out = np.zeros((n_rows, codes.max() + 1))
        out[np.arange(n_rows), codes] = 1.0
        return out

    za, zg, zc = z(["scenario"]), z(["model", "scenario"]), z(["model", "scenario", "generation"])
    ta, tm, tb = theta
    h = np.eye(n_rows) + ta * za @ za.T + tm * zg @ zg.T + tb * zc @ zc.T
    xy = np.column_stack([x, y])
    return xy.T @ np.linalg.solve(h, xy), float(np.linalg.slogdet(h)[1])


@pytest.mark.parametrize("name", list(DESIGNS))
@pytest.mark.parametrize("theta", [(0.0, 0.0, 0.0), (0.7, 0.3, 0.2), (2.5, 0.0, 1.3), (0.05, 4.0, 0.0)])
def test_the_reml_view_gives_the_dense_gram_matrix(name, theta):
    frame = _table(**DESIGNS[name])
    js = build_stats(cj.read_scores(frame), unit=("criterion",)).units[0]
    ns = js.for_joint_reml()
    got, logdet = _weighted_gram(np.array(theta), ns, None)
    want, want_logdet = _dense_gram(frame, js, np.array(theta))
    assert np.max(np.abs(got - want)) <= 1e-10 * np.max(np.abs(want))
    assert logdet == pytest.approx(want_logdet, rel=1e-12, abs=1e-10)
    assert ns.n_rows == len(frame)
    assert ns.n_scenarios == frame["scenario"].nunique()
    assert ns.n_groups == frame.groupby(["model", "scenario"]).ngroups
    assert ns.n_cells == frame.groupby(["model", "scenario", "generation"]).ngroups


def test_joint_units_are_the_per_model_units_stacked_one_per_criterion():
    frame = pd.concat([_table(7, missing=0.1).assign(criterion="a"), _table(8).assign(criterion="b")],
                      ignore_index=True)
    scores = cj.read_scores(frame)
    per = build_stats(scores)
    joint = build_stats(scores, unit=("criterion",))
    assert joint.joint and not per.joint
    assert [u.criterion for u in joint] == ["a", "b"]
    for u in joint:
        assert isinstance(u, JointStats)
        assert u.models == ("m0", "m1", "m2")
        for mdl in u.models:
            assert u.get(mdl) is not None
            np.testing.assert_array_equal(u.get(mdl).dd, per.get(mdl, u.criterion).dd)
    assert joint.get(criterion="b").criterion == "b"
    with pytest.raises(cj.CjstatsError, match="no criterion 'c'"):
        joint.get(criterion="c")


def test_stacking_merged_chunks_equals_the_whole():
    frame = _table(9, n=12, missing=0.15)
    whole = build_stats(cj.read_scores(frame), unit=("criterion",)).units[0].for_joint_reml()
    low = frame[frame["scenario"] < 5]
    high = frame[frame["scenario"] >= 5]
    a, b = build_stats(cj.read_scores(low)), build_stats(cj.read_scores(high))
    merged = stack_models([merge_stats(a.get(mdl), b.get(mdl)) for mdl in ("m0", "m1", "m2")]).for_joint_reml()
    for theta in ((0.5, 0.4, 0.3), (0.0, 1.0, 0.0)):
        g1, l1 = _weighted_gram(np.array(theta), whole, None)
        g2, l2 = _weighted_gram(np.array(theta), merged, None)
        # the centring differs by rounding only; the gram matrices agree to rounding
        assert np.max(np.abs(g1 - g2)) <= 1e-11 * np.max(np.abs(g1))
        assert l1 == pytest.approx(l2, rel=1e-13)


@pytest.mark.parametrize("m", [1, 3])
def test_the_anova_view_gives_the_mean_squares_of_the_dense_array(m):
    rng = np.random.default_rng(10 + m)
    y = simulate_joint_array(n=8, m=m, mu=[4.0, 4.5, 3.8], gamma=[0.3, -0.1, -0.2, 0.0], s2_scenario=0.4,
                             s2_model_scenario=0.2, s2_generation=0.3, s2_residual=0.9, rng=rng)
    p, n, m_, k = y.shape
    idx = np.indices(y.shape).reshape(4, -1)
    frame = pd.DataFrame({"model": np.char.add("m", idx[0].astype(str)), "scenario": idx[1], "generation": idx[2],
                          "judge": np.char.add("j", idx[3].astype(str)), "score": y.reshape(-1)})
    js = build_stats(cj.read_scores(frame), unit=("criterion",)).units[0]
    got = JointMeanSquares(js.for_joint_anova())
    want = JointMeanSquares.from_array(y)
    for key in want.ss:
        assert got.ss[key] == pytest.approx(want.ss[key], rel=1e-12, abs=1e-12 * want.ss["W"]), key
    np.testing.assert_allclose(got.cell_means, want.cell_means, rtol=1e-13)
    np.testing.assert_allclose(got.scenario_means, want.scenario_means, rtol=1e-13)


def test_the_anova_view_names_the_first_incomplete_scenario():
    frame = _table(11)
    frame = frame[~((frame["model"] == "m1") & (frame["scenario"] == 4) & (frame["judge"] == "j2"))]
    js = build_stats(cj.read_scores(frame), unit=("criterion",)).units[0]
    keep, m, reason = js.complete_scenarios()
    assert m == 2 and int((~keep).sum()) == 1
    with pytest.raises(cj.CjstatsError, match=r"1 scenarios are not \(first: scenario 4, model 'm1', judge 'j2' "
                                              r"is missing\)"):
        js.for_joint_anova()


def test_unknown_units_and_stacking_errors_are_one_sentence():
    scores = cj.read_scores(_table(12))
    with pytest.raises(cj.CjstatsError, match=r"must be \('model', 'criterion'\), \('model',\) or \('criterion',\)"):
        build_stats(scores, unit=("judge",))
    per = build_stats(scores)
    with pytest.raises(cj.CjstatsError, match="model 'm0' appears twice"):
        stack_models([per.get("m0"), per.get("m0")])
