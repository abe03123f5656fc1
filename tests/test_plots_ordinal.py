"""cjstats.plots.ordinal_plot draws an ML ordinal fit: one row of boundaries per judge, offsets when shared."""
from pathlib import Path

import pandas as pd
import pytest

import cjstats as cj
from cjstats.exceptions import CjstatsError

pytest.importorskip("matplotlib", reason="the plots need matplotlib (pip install cjstats[plots])")
CSV = Path(__file__).parent / "data" / "ordinal_ml" / "ord_small.csv"


def test_ordinal_plot_shared_and_per_judge(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    from cjstats.plots import ordinal_plot

    d = pd.read_csv(CSV).assign(model="m")
    f = cj.estimate(d, method="ordinal", link="logit", nagq=1)
    fig = ordinal_plot(f)
    assert len(fig.axes) == 2
    k = d["judge"].nunique()
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == sorted(d["judge"].unique())[:k]
    fig.savefig(tmp_path / "o.png")
    fj = cj.estimate(d, method="ordinal", link="logit", nagq=1, thresholds="judge")
    assert len(ordinal_plot(fj).axes) == 1
    with pytest.raises(CjstatsError, match="method='ordinal'"):
        ordinal_plot(cj.estimate(d, method="anova"))
