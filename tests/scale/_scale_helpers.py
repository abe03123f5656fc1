"""Helpers of the scale tests: score tables (balanced, unbalanced, with criteria) and how to compare statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_scores

#: Relative tolerance of engine-vs-numpy equality: the engines add the same numbers in another order, so the
#: statistics differ by rounding only (a few 1e-16 relative per sum, well under 1e-12 for these sizes).
RTOL = 1e-12


def sim(n: int, m: int, k: int, seed: int, model: str, missing: float = 0.0) -> pd.DataFrame:
    c = TABLE3_MTBENCH["Qwen"]
    return simulate_scores(n=n, m=m, k=k, s2_scenario=c["scenario"], s2_generation=c["generation"],
                           s2_residual=c["residual"], judge_offsets=panel_offsets(k, c["judge_panel"]), mu=c["mu"],
                           model=model, missing=missing, seed=seed)


def _unequal_generations(seed: int) -> pd.DataFrame:
    """Model C: 2 or 3 generations per scenario (drops generation 2 of every third scenario)."""
    df = sim(21, 3, 4, seed, "C")
    return df[~((df["scenario"] % 3 == 0) & (df["generation"] == 2))]


TABLES = {
    "balanced": lambda: pd.concat([sim(30, 3, 4, 1, "A"), sim(25, 2, 5, 2, "B")], ignore_index=True),
    "unbalanced": lambda: pd.concat([sim(30, 3, 4, 3, "A", missing=0.15), sim(25, 2, 5, 4, "B", missing=0.25),
                                     _unequal_generations(5)], ignore_index=True),
    "criteria": lambda: pd.concat([sim(20, 2, 3, 6, "A").assign(criterion="helpful"),
                                   sim(20, 2, 3, 7, "A", missing=0.2).assign(criterion="safe"),
                                   sim(15, 2, 3, 8, "B").assign(criterion="safe")], ignore_index=True),
    "string_ids": lambda: sim(12, 2, 3, 9, "A").assign(scenario=lambda d: "q" + d["scenario"].astype(str),
                                                       generation=lambda d: "g" + d["generation"].astype(str)),
}


def rel_close(a, b, rtol: float = RTOL) -> bool:
    """max |a - b| <= rtol * max |a| (relative to the array's scale), NaN where both are NaN."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    a, b = np.nan_to_num(a), np.nan_to_num(b)
    scale = max(float(np.max(np.abs(a), initial=0.0)), 1e-300)
    return float(np.max(np.abs(a - b), initial=0.0)) <= rtol * scale


def assert_stats_equal(ref, got, rtol: float = RTOL) -> None:
    """Two ScoreStats hold the same statistics: designs and labels exactly, every view to ``rtol`` relative.

    The engines centre by judge means they computed themselves, so ``got`` is re-centred to ``ref``'s shift
    (exact algebra) before the raw arrays are compared; the views are compared as they come.
    """
    pd.testing.assert_frame_equal(ref.design, got.design)
    assert ref.has_criterion == got.has_criterion
    assert len(ref) == len(got)
    for a, b in zip(ref, got):
        assert (a.model, a.criterion, a.judge_labels) == (b.model, b.criterion, b.judge_labels)
        assert a.design == b.design
        assert a.scenario_labels.tolist() == b.scenario_labels.tolist()
        assert a.first_cell == b.first_cell and a.first_missing == b.first_missing
        assert (a.n_obs, a.n_cells, a.y_min, a.y_max) == (b.n_obs, b.n_cells, b.y_min, b.y_max)
        assert rel_close(a.shift, b.shift, rtol)
        b2 = b.recentre(a.shift)
        scale_y = float(np.sqrt(a.yy / a.n_obs))  # the size of a centred score: scale of the centred sums
        for f in ("sizes", "size_cells", "dd", "judge_n_s", "s_isk", "cnt_is", "judge_n"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b2, f), err_msg=f)
        for f in ("yyc", "yy_s", "ssw_s", "yy"):
            assert rel_close(getattr(a, f), getattr(b2, f), rtol), f
        for f, per in (("dy", a.sizes.max()), ("judge_sum_s", 1.0), ("ys", a.sizes.max()), ("judge_sum", 1.0)):
            # centred sums can be near zero: compare with the scale of their terms (n_obs * score size)
            diff = float(np.max(np.abs(getattr(a, f) - getattr(b2, f)), initial=0.0))
            assert diff <= rtol * a.n_obs * per * scale_y, f
        da, ya = a.for_reml()
        db, yb = b.for_reml()
        assert da.df_residual == db.df_residual and da.n_linked == db.n_linked
        ga, gb = a.for_gaussian(), b.for_gaussian()
        for f in ("m_h", "v", "g_w", "blk_t"):
            assert rel_close(getattr(ga, f), getattr(gb, f), rtol), f
        assert rel_close([ga.ybar, ga.sd, ga.ssw0], [gb.ybar, gb.sd, gb.ssw0], rtol)
        assert rel_close(a.within_cell_rss(), b.within_cell_rss(), rtol)
        if a.design.balanced:
            ma, mb = a.for_anova()[0], b.for_anova()[0]
            for f in ("grand_mean", "judge_means", "ss_scenario", "ss_generation", "ss_judge", "ss_residual"):
                assert rel_close(getattr(ma, f), getattr(mb, f), rtol), f
        # the scenario x judge statistics: built where the term is identifiable, the same patterns (in any order)
        assert (a.sj is None) == (b.sj is None), "sj"
        if a.sj is not None:
            sa, sb = a.sj, b.sj.recentre(a.sj.shift)
            oa, ob = (sorted(range(x.count.shape[0]), key=lambda i, x=x: x.incidence[i].tobytes()) for x in (sa, sb))
            np.testing.assert_array_equal(sa.incidence[oa], sb.incidence[ob], err_msg="sj.incidence")
            np.testing.assert_array_equal(sa.count[oa], sb.count[ob], err_msg="sj.count")
            for f in ("zsum", "zscat"):
                assert rel_close(getattr(sa, f)[oa], getattr(sb, f)[ob], rtol), f"sj.{f}"
