"""The hedged-betting confidence sequence (Waudby-Smith and Ramdas 2024, Sec. 4.3): cj.confidence_sequence(...,
method="hedged_betting").

The maintained implementation (confseq 0.0.11) does not build on Python 3.13 (its pybind11 C++ extension), so
the grid CS is checked against the capital process computed one bet at a time as the paper prints it. Coverage
is time-uniform (the truth inside at EVERY n) over R = 200 runs, required >= 0.95 - 2 binomial SEs (0.919), as
for the other methods in tests/test_sequential.py; ``-m slow`` runs R = 1000.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import cjstats as cj
from cjstats.decisions import sequential as sq
from cjstats.exceptions import CjstatsError

ALPHA = 0.05


def _margin(r: int) -> float:
    return 0.95 - 2 * math.sqrt(0.95 * 0.05 / r)


def _log_capital_by_hand(y, m, alpha, c=0.5, theta=0.5):
    """log K_t(m) of WSR (2024) eq. (26)-(27), one scalar bet at a time."""
    s2_prev, sum_y, sum_sq = 0.25, 0.0, 0.0
    kp = kn = 1.0
    out = []
    for t, yt in enumerate(y, start=1):
        lam = math.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * math.log(1 + t)))
        lp = min(lam, c / m) if m > 0 else lam
        ln = min(lam, c / (1 - m)) if m < 1 else lam
        kp *= 1 + lp * (yt - m)
        kn *= 1 - ln * (yt - m)
        out.append(math.log(max(theta * kp, (1 - theta) * kn)))
        sum_y += yt
        mu_t = (0.5 + sum_y) / (t + 1)
        sum_sq += (yt - mu_t) ** 2
        s2_prev = (0.25 + sum_sq) / (t + 1)
    return np.array(out)


def test_grid_cs_is_the_set_where_the_capital_stays_below_one_over_alpha():
    y = np.random.default_rng(1).beta(2, 5, 120)
    grid = 200
    _, lo, hi = sq.hedged_sequence(y, ALPHA, grid=grid, intersect=False)
    for m in np.linspace(0, 1, grid + 1)[::5]:
        keep = _log_capital_by_hand(y, m, ALPHA) < math.log(1 / ALPHA)
        # a grid point the capital keeps lies inside [lo, hi]; one it rejects lies outside unless it is
        # between two kept points (the CS is the hull of the kept points, widened by one step)
        assert np.all(~keep | ((lo <= m + 1e-12) & (m - 1e-12 <= hi)))
    kept = [m for m in np.linspace(0, 1, grid + 1) if _log_capital_by_hand(y, m, ALPHA)[-1] < math.log(1 / ALPHA)]
    assert lo[-1] == pytest.approx(max(min(kept) - 1 / grid, 0)) and hi[-1] == pytest.approx(min(max(kept) + 1 / grid, 1))


def _coverage(x, low, span, truth, grid=400):
    t = (truth - low) / span
    ok = 0
    for row in x:
        _, lo, hi = sq.hedged_sequence((row - low) / span, ALPHA, grid=grid)
        ok += bool(((lo <= t) & (hi >= t)).all())
    return ok / len(x)


@pytest.mark.parametrize("r", [200, pytest.param(1000, marks=pytest.mark.slow)])
def test_time_uniform_coverage_bounded_ceiling_and_beta(r):
    rng = np.random.default_rng(11)
    mu, calls, n = 4.3, 3, 300     # 1-5 integer scores piling at the ceiling, true difference 0
    xa = np.clip(np.round(mu + rng.standard_normal((r, n, calls))), 1, 5).mean(-1)
    xb = np.clip(np.round(mu + rng.standard_normal((r, n, calls))), 1, 5).mean(-1)
    assert _coverage(xa - xb, -4.0, 8.0, 0.0) >= _margin(r)          # measured 0.995 (R = 200)
    y = rng.beta(2, 5, (r, 300))
    assert _coverage(y, 0.0, 1.0, 2 / 7) >= _margin(r)                # measured 1.000
    # the check can fail: a value 0.05 off the truth is excluded at some n in most runs
    assert _coverage(y[:50], 0.0, 1.0, 2 / 7 + 0.05) < 0.5           # measured 0.02


def test_narrower_than_empirical_bernstein_and_close_to_the_t_interval():
    rng = np.random.default_rng(13)
    y = rng.beta(2, 5, (30, 500))
    w_h = np.mean([np.subtract(*sq.hedged_sequence(row, ALPHA)[:0:-1])[-1] for row in y])
    _, lo, hi = sq.eb_sequence(y, ALPHA)
    w_eb = float((hi - lo)[:, -1].mean())
    w_t = np.mean([np.subtract(*sq.t_interval(row, ALPHA)[:0:-1]) for row in y])
    assert w_h < w_eb, (w_h, w_eb)
    assert 1.0 < w_h / w_t <= 2.5, w_h / w_t      # measured: hedged 0.0442, EB 0.0550, t 0.0281 (ratio 1.57)


def test_confidence_sequence_method_hedged_betting():
    rng = np.random.default_rng(5)
    rows = []
    for i in range(200):
        for m, mu in (("a", 3.9), ("b", 3.4)):
            for k, g in enumerate((-0.3, 0.0, 0.3)):
                rows.append((m, f"s{i}", f"j{k}", int(np.clip(np.round(mu + g + rng.normal(0, 0.9)), 1, 5))))
    df = pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"])
    h = cj.confidence_sequence(df, "a", "b", bounds=(1, 5), method="hedged_betting")
    eb = cj.confidence_sequence(df, "a", "b", bounds=(1, 5))
    assert h.method == "hedged_betting" and h.decision == "STOP" and h.sign == 1
    assert h.stop_at <= eb.stop_at                        # the narrower CS decides no later
    row = h.table.iloc[h.stop_at - 1]
    assert row["lower"] > 0 and (h.table["lower"].iloc[: h.stop_at - 1] <= 0).all()
    assert h.table["width"].iloc[-1] < eb.table["width"].iloc[-1]
    with pytest.warns(Warning, match="no bounds given"):        # the range is then taken from the data
        cj.confidence_sequence(df, "a", "b", method="hedged_betting")
    with pytest.raises(CjstatsError, match="applies to method='normal_mixture' only"):
        cj.confidence_sequence(df, "a", "b", bounds=(1, 5), method="hedged_betting", variance=1.0)
    with pytest.raises(CjstatsError, match="'method' argument of sequential_plan"):
        cj.sequential_plan(dict(s2_model_scenario=0.1, s2_generation=0.2, s2_residual=0.8, s2_judge_panel=0.2,
                                s2_judge_difference=0.0), delta=0.3, k_total=4, method="hedged_betting")


def test_monitor_hedged_betting(tmp_path):
    from cli_helpers import run_main

    rng = np.random.default_rng(6)
    rows = [(m, f"s{i}", f"j{k}", int(np.clip(np.round(mu + rng.normal(0, 0.9)), 1, 5)))
            for i in range(150) for m, mu in (("a", 4.0), ("b", 3.3)) for k in range(3)]
    path = tmp_path / "s.csv"
    pd.DataFrame(rows, columns=["model", "scenario", "judge", "score"]).to_csv(path, index=False)
    code, out, err = run_main(["monitor", str(path), "--models", "a,b", "--bounds", "1,5", "--method",
                               "hedged_betting"])
    assert code == 0, err
    assert "Confidence sequence (hedged_betting, 95%, anytime-valid)" in out and out.rstrip().endswith("STOP")
    code, _, err = run_main(["monitor", str(path), "--models", "a,b", "--method", "hedged_betting"])
    assert code == 1 and "hedged-betting sequences need the score scale: add --bounds LO,HI" in err
