r"""Known-truth tables with an item covariate (answer length) and judges that reward it.

    X_pijl = mu_p + gamma_l + b_l (len_pij - 400) + alpha_i + (alpha p)_pi + eps_pijl,
    len_pij ~ N(length_p, length_sd^2), rounded to whole tokens,

with alpha_i ~ N(0, s2_scenario), (alpha p)_pi ~ N(0, s2_model_scenario), eps ~ N(0, s2_residual). A model with
a larger ``length_p`` gains b_l (length_p - length_q) from judge l at equal quality: the verbosity bias that
:func:`cjstats.fit_joint` with ``covariates=["length"]`` removes (docs/covariates.md). The true model means at
equal length are ``mu`` (each judge's mean at length 400 is mu_p + gamma_l).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["simulate_length_bias"]


def simulate_length_bias(*, n: int = 60, mu: Sequence[float] = (5.0, 5.0), lengths: Sequence[float] = (550.0, 400.0),
                         slopes: Sequence[float] = (0.0, 0.0, 0.006), offsets: Sequence[float] | None = None,
                         length_sd: float = 80.0, s2_scenario: float = 0.4, s2_model_scenario: float = 0.1,
                         s2_residual: float = 0.3, seed: int = 0) -> pd.DataFrame:
    """A long table (model, scenario, generation, judge, score, length): ``len(mu)`` models (``m0``, ``m1``, ...)
    writing answers of mean length ``lengths``, ``len(slopes)`` judges (``j0``, ...) with slope ``slopes[l]``
    per token, ``n`` scenarios, one generation each, every judge scoring every answer."""
    rng = np.random.default_rng(seed)
    mu, lengths, slopes = (np.asarray(v, dtype=float) for v in (mu, lengths, slopes))
    p, k = len(mu), len(slopes)
    gam = np.zeros(k) if offsets is None else np.asarray(offsets, dtype=float)
    a = rng.normal(0, np.sqrt(s2_scenario), n)
    am = rng.normal(0, np.sqrt(s2_model_scenario), (p, n))
    ln = np.round(rng.normal(lengths[:, None], length_sd, (p, n)))
    y = (mu[:, None, None] + gam[None, None, :] + slopes[None, None, :] * (ln[:, :, None] - 400.0)
         + a[None, :, None] + am[:, :, None] + rng.normal(0, np.sqrt(s2_residual), (p, n, k)))
    q, i, l = np.meshgrid(np.arange(p), np.arange(n), np.arange(k), indexing="ij")
    return pd.DataFrame({"model": np.char.add("m", q.ravel().astype(str)),
                         "scenario": np.char.add("s", i.ravel().astype(str)), "generation": 0,
                         "judge": np.char.add("j", l.ravel().astype(str)), "score": y.ravel(),
                         "length": ln[q.ravel(), i.ravel()]})
