"""judge_drift: hand-computed balanced case, lme4 on the stacked table, level and power by simulation, bad input."""

from __future__ import annotations

import math
import pickle
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

import cjstats as cj
from cjstats.estimators.intervals import adjust_p


def _runs(rng, n=30, k=4, g=1, shift=None, s_item=1.0, s_c=0.0, s_e=0.5, s_sj=0.0):
    """Two runs on n scenarios x g generations judged by k judges: shared item (and item x judge) effects,
    run x scenario effects (sd s_c), independent calls (sd s_e); ``shift`` adds Delta_l to the second run."""
    idx = pd.MultiIndex.from_product([[f"s{i:03d}" for i in range(n)], [f"g{j}" for j in range(g)],
                                      [f"J{l}" for l in range(k)]], names=["scenario", "generation", "judge"])
    f = idx.to_frame(index=False).assign(model="m")
    si = f["scenario"].str[1:].astype(int).to_numpy()
    gi = f["generation"].str[1:].astype(int).to_numpy()
    li = f["judge"].str[1:].astype(int).to_numpy()
    shared = (rng.normal(0, s_item, n)[si] + rng.normal(0, s_item, (n, g))[si, gi]
              + rng.normal(0, s_sj, (n, k))[si, li] + 0.3 * li)
    out = []
    for r in range(2):
        y = shared + rng.normal(0, s_c, n)[si] + rng.normal(0, s_e, len(f))
        if r == 1 and shift is not None:
            y = y + np.asarray(shift)[li]
        out.append(f.assign(score=y))
    return out


def test_balanced_equals_hand_computation():
    """Delta_l = mean over items of the paired differences; SE^2 = pooled within-judge variance of D / n."""
    b, a = _runs(np.random.default_rng(3), n=25, k=3, s_c=0.4, shift=[0.3, 0.0, -0.2])
    d = (a["score"] - b["score"]).to_numpy().reshape(25, 3)
    n, k = d.shape
    delta = d.mean(axis=0)
    pooled = ((d - delta) ** 2).sum() / (k * (n - 1))
    for method in ("anova", "reml"):
        r = cj.judge_drift(b, a, method=method)
        t = r.drift.set_index("judge")
        np.testing.assert_allclose(t.loc[["J0", "J1", "J2"], "estimate"], delta, atol=1e-10)
        np.testing.assert_allclose(t.loc["(panel mean)", "estimate"], delta.mean(), atol=1e-10)
        if method == "anova" or r.fit.components.set_index("component").loc["scenario", "estimate"] > 0:
            np.testing.assert_allclose(t.loc[["J0", "J1", "J2"], "std_error"], math.sqrt(pooled / n), rtol=1e-6)
        # panel mean: the item means of D vary with variance Var(dbar_i)/n
        np.testing.assert_allclose(t.loc["(panel mean)", "std_error"], d.mean(axis=1).std(ddof=1) / math.sqrt(n),
                                   rtol=1e-6)
        assert np.all(np.isfinite(t["df"]))
        # global tests, balanced: panel mean t on n - 1 df; equal drift = the exact ANOVA F = MS_J / MS_W of the
        # differences on (k - 1, (k - 1)(n - 1)) df; no drift = Bonferroni over the two
        g = r.tests.set_index("test")
        t_pan = delta.mean() / (d.mean(axis=1).std(ddof=1) / math.sqrt(n))
        ms_j = n * ((delta - delta.mean()) ** 2).sum() / (k - 1)
        res = d - delta - d.mean(axis=1)[:, None] + delta.mean()
        ms_w = (res ** 2).sum() / ((k - 1) * (n - 1))
        p_pan = 2 * st.t.sf(abs(t_pan), n - 1)
        p_eq = st.f.sf(ms_j / ms_w, k - 1, (k - 1) * (n - 1))
        np.testing.assert_allclose(g.loc["panel_mean", ["statistic", "df1", "df2", "p_value"]].astype(float),
                                   [t_pan ** 2, 1, n - 1, p_pan], rtol=1e-6)
        np.testing.assert_allclose(g.loc["equal_drift", ["statistic", "df1", "df2", "p_value"]].astype(float),
                                   [ms_j / ms_w, k - 1, (k - 1) * (n - 1), p_eq], rtol=1e-6)
        assert g.loc["no_drift", "p_value"] == pytest.approx(min(1.0, 2 * min(p_pan, p_eq)), rel=1e-9)
    assert r.summary().as_text().startswith("Judge drift")


def test_fai_cornelius_ddf():
    """lmerTest's get_Fstat_ddf: equal dfs give their value; otherwise 2E/(E - q) with E = sum nu/(nu - 2)."""
    from cjstats.estimators.drift import _fai_cornelius_ddf

    assert _fai_cornelius_ddf(np.array([28.0, 28.0])) == 28.0
    e = 10 / 8 + 30 / 28
    assert _fai_cornelius_ddf(np.array([10.0, 30.0])) == pytest.approx(2 * e / (e - 2))
    assert _fai_cornelius_ddf(np.array([1.5, 30.0])) == 2.0


def test_adjust_p_matches_definitions():
    p = np.array([0.01, 0.04, 0.03, 0.2])
    np.testing.assert_allclose(adjust_p(p, "holm"), [0.04, 0.09, 0.09, 0.2])
    np.testing.assert_allclose(adjust_p(p, "bh"), [0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.2])
    np.testing.assert_allclose(adjust_p(p, "bonferroni"), [0.04, 0.16, 0.12, 0.8])


def _level(method, n_rep, seed, n=15, k=3):
    """Rejection rates at 5% under no drift: no_drift, panel_mean, equal_drift, any judge flagged (Holm)."""
    rng = np.random.default_rng(seed)
    hits = np.zeros(4)
    for _ in range(n_rep):
        b, a = _runs(rng, n=n, k=k, s_c=0.3)
        r = cj.judge_drift(b, a, method=method)
        p = r.tests.set_index("test")["p_value"]
        hits += [p["no_drift"] < 0.05, p["panel_mean"] < 0.05, p["equal_drift"] < 0.05, bool(r.flagged())]
    return hits / n_rep


def _check_level(rates, n_rep):
    """Each global test within 3 binomial SE of its level on BOTH sides (no_drift: Bonferroni over two
    independent exact tests has level 1 - (1 - 0.025)^2 = 0.0494 in a balanced table); the Holm family at
    most 0.05 + 3 SE."""
    for rate, level in zip(rates[:3], (1 - 0.975 ** 2, 0.05, 0.05)):
        assert abs(rate - level) < 3 * math.sqrt(level * (1 - level) / n_rep), (rates, level)
    assert rates[3] < 0.05 + 3 * math.sqrt(0.05 * 0.95 / n_rep), rates


def test_level_no_drift():
    """50 runs at 5%: 3 SE = 0.092, so this catches a grossly wrong test (the exact statistics are checked in
    the hand computation above); the slow version has the power to see a conservative one."""
    _check_level(_level("anova", 50, seed=11, n=8), 50)


@pytest.mark.slow
@pytest.mark.parametrize("method,n_rep", [("reml", 400), ("anova", 1000)])
def test_level_no_drift_slow(method, n_rep):
    _check_level(_level(method, n_rep, seed=12), n_rep)


@pytest.mark.parametrize("n_rep", [pytest.param(30), pytest.param(400, marks=pytest.mark.slow)])
def test_power_one_judge_shift(n_rep):
    """One judge shifts by delta: its Holm-adjusted rejection rate sits between the power its SE implies at the
    Bonferroni level (Holm's first step) and unadjusted, within 3 binomial SE at the bounds."""
    n, k, s_c, s_e, delta = 20, 4, 0.3, 0.5, 0.45
    rng = np.random.default_rng(21)
    hits = 0
    for _ in range(n_rep):
        b, a = _runs(rng, n=n, k=k, s_c=s_c, s_e=s_e, shift=[delta, 0, 0, 0])
        r = cj.judge_drift(b, a, method="anova")
        hits += "J0" in r.flagged()
    se_true = math.sqrt((s_c ** 2 * 2 + 2 * s_e ** 2) / n)   # Var(D) = 2 s_c^2 + 2 s_e^2 over n items
    df = k * (n - 1)

    def power(alpha):
        q = st.t.ppf(1 - alpha / 2, df)
        return st.nct.sf(q, df, delta / se_true) + st.nct.cdf(-q, df, delta / se_true)

    lo, hi = power(0.05 / k), power(0.05)
    rate = hits / n_rep
    assert lo - 3 * math.sqrt(lo * (1 - lo) / n_rep) < rate < hi + 3 * math.sqrt(hi * (1 - hi) / n_rep), (rate, lo, hi)
    assert 0.3 < lo < 0.9       # the design is in the informative range of power


@pytest.mark.skipif(shutil.which("Rscript") is None or subprocess.run(
    ["Rscript", "-e", "library(lme4)"], capture_output=True).returncode != 0, reason="R with lme4 not installed")
def test_equals_lmer_on_stacked_table(tmp_path):
    """The one REML fit of the differences equals lmer's fit of the stacked table with the shared item effects
    (scenario, generation, scenario x judge, generation x judge) and the run-specific ones (run x scenario,
    run x generation, run x scenario x judge):
    Delta_l and its SE from fixef/vcov of the cell-means parametrisation."""
    b, a = _runs(np.random.default_rng(5), n=40, k=3, g=2, s_c=0.5, s_sj=0.5, shift=[0.4, 0.0, -0.1])
    stacked = pd.concat([b.assign(run="before"), a.assign(run="after")])
    path = tmp_path / "stacked.csv"
    stacked.to_csv(path, index=False)
    script = f"""
suppressMessages(library(lme4))
d <- read.csv("{path}")
d$cell <- factor(paste(d$run, d$judge, sep=":"))
f <- lmer(score ~ 0 + cell + (1|scenario) + (1|scenario:generation) + (1|scenario:judge) +
          (1|scenario:generation:judge) + (1|run:scenario) + (1|run:scenario:generation) +
          (1|run:scenario:judge), data=d, REML=TRUE,
          control=lmerControl(optimizer="bobyqa", optCtrl=list(maxfun=1e5)))
b <- fixef(f); V <- as.matrix(vcov(f))
for (j in c("J0","J1","J2")) {{
  c <- setNames(rep(0, length(b)), names(b)); c[paste0("cellafter:", j)] <- 1; c[paste0("cellbefore:", j)] <- -1
  cat(j, sum(c*b), sqrt(drop(t(c) %*% V %*% c)), "\\n")
}}
"""
    out = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lme = {ln.split()[0]: (float(ln.split()[1]), float(ln.split()[2])) for ln in out.stdout.strip().splitlines()}
    r = cj.judge_drift(b, a, method="reml").drift.set_index("judge")
    for j, (est, se) in lme.items():
        assert r.loc[j, "estimate"] == pytest.approx(est, abs=1e-6)
        assert r.loc[j, "std_error"] == pytest.approx(se, rel=2e-3)


def test_bad_input_one_sentence():
    b, a = _runs(np.random.default_rng(1), n=6, k=3)
    with pytest.raises(cj.CjstatsError, match="'after' run is missing"):
        cj.judge_drift(b)
    with pytest.raises(cj.CjstatsError, match="different judges .only before: J2"):
        cj.judge_drift(b, a[a["judge"] != "J2"])
    with pytest.raises(cj.CjstatsError, match="2 of the 6 items of 'before' and 0 of the 4 items of 'after'"):
        cj.judge_drift(b, a[~a["scenario"].isin(["s000", "s001"])])
    with pytest.warns(cj.CjstatsWarning, match="kept the 4 shared items"):
        r = cj.judge_drift(b, a[~a["scenario"].isin(["s000", "s001"])], unshared="drop")
    assert set(r.drift["n_items"]) == {4}
    with pytest.raises(cj.CjstatsError, match="share no anchor item"):
        cj.judge_drift(b, a.assign(scenario=a["scenario"] + "x"))
    with pytest.raises(cj.CjstatsError, match="adjust"):
        cj.judge_drift(b, a, adjust="fdr")


def test_result_contract(tmp_path):
    b, a = _runs(np.random.default_rng(2), n=10, k=3, shift=[1.0, 0, 0])
    r = cj.judge_drift(b, a, adjust="bh", labels=("v1", "v2"))
    r2 = pickle.loads(pickle.dumps(r))
    pd.testing.assert_frame_equal(r2.drift, r.drift)
    r.save(tmp_path / "d")
    r3 = cj.DriftResult.load(tmp_path / "d")
    pd.testing.assert_frame_equal(r3.to_frame(), r.to_frame())
    assert "v2 - v1" in str(r)


def test_drift_plot_highlights_flagged_judges():
    import matplotlib

    matplotlib.use("Agg")
    b, a = _runs(np.random.default_rng(4), n=30, k=3, shift=[1.0, 0, 0])
    fig = cj.plots.drift_plot(cj.judge_drift(b, a))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["J0", "J1", "J2", "(panel mean)"]
    pts = {ln.get_gid(): ln.get_xdata() for ln in ax.get_lines() if ln.get_marker() == "o"}
    assert set(pts) == {"drifted", "steady", "panel"}
    assert len(pts["drifted"]) == 1 and pts["drifted"][0] > 0.5          # J0, shifted by 1
    with pytest.raises(cj.CjstatsError, match="drift_plot"):
        cj.plots.drift_plot(object())
