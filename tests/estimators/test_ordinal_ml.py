"""cj.estimate(method="ordinal") returns latent-scale VarianceComponents (R agreement: test_ordinal_ml_r.py)."""
import math
import pickle
from pathlib import Path

import pandas as pd
import pytest

import cjstats as cj
from cjstats.exceptions import CjstatsError

CSV = Path(__file__).parent.parent / "data" / "ordinal_ml" / "ord_small.csv"


def test_estimate_ordinal_rows_and_pickle():
    d = pd.read_csv(CSV).assign(model="m")
    f = cj.estimate(d, method="ordinal", link="logit", nagq=1)
    c = f.components.set_index("component")
    assert f.scale == "latent"
    assert c.loc["residual", "estimate"] == pytest.approx(math.pi**2 / 3)
    assert c.loc["scenario", "lower"] < c.loc["scenario", "estimate"] < c.loc["scenario", "upper"]
    assert abs(f.judge_offsets["estimate"].sum()) < 1e-8
    pickle.loads(pickle.dumps(f))


def test_bad_link_is_one_sentence():
    d = pd.read_csv(CSV).assign(model="m")
    with pytest.raises(CjstatsError, match="link"):
        cj.estimate(d, method="ordinal", link="cloglog")
