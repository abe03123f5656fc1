"""Edge tables for tests/estimators/test_ordinal_ml_edge_r.py: clinician-like ratings (20 profiles x 4 raters on
1-6) in which one rater alone uses an extreme category, as in the real rating set where 12 of 60 per-model fits
ran off. Run: python tests/data/ordinal_ml/edge/make_edge.py, then Rscript tests/data/ordinal_ml/edge/fit_edge.R."""
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent


def table(seed: int, kind: str) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(20):
        a = rng.normal(0, 1.0)
        for l in range(4):
            z = a + rng.logistic() * 0.8 + (0.6 if l == 0 else 0.0)
            if kind == "alone_top":          # rater 0 alone reaches 6; the others stop at 5
                y = int(np.clip(np.round(z + 3.5), 1, 6 if l == 0 else 5))
            elif kind == "alone_top_high":   # rater 0 alone reaches 6 and never scores below 4
                y = int(np.clip(np.round(z + 3.5), 4 if l == 0 else 1, 6 if l == 0 else 5))
            else:                            # rater 3 alone uses 1
                y = int(np.clip(np.round(z + 3.5), 1 if l == 3 else 2, 6))
            rows.append((f"p{i}", f"r{l}", y))
    return pd.DataFrame(rows, columns=["scenario", "judge", "score"])


if __name__ == "__main__":
    for kind in ("alone_top", "alone_top_high", "alone_bottom"):
        for seed in range(3):
            table(seed, kind).to_csv(HERE / f"{kind}_{seed}.csv", index=False)
