"""The cumulative-link likelihood of the model specification (``Model(likelihood="cumulative", link=...)``):
its links, the latent residual variance each link fixes, and the expected score of the panel for a new
scenario. Pure formulas shared by both ordinal backends (:mod:`cjstats.estimators.bayes`,
:mod:`cjstats.estimators.ordinal_ml`) and the decision layer, so none of them imports another.

P(Y <= k) = F(c_k - eta), F the standard logistic (``"logit"``) or normal (``"probit"``) distribution
(Agresti 2010, ch. 5).
"""

from __future__ import annotations

import math

import numpy as np

from cjstats.exceptions import CjstatsError

__all__ = ["LINKS", "RESIDUAL_VARIANCE", "link_cdf", "expected_score"]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def expected_score(cutpoints: np.ndarray, values: np.ndarray, gamma: np.ndarray, s2: np.ndarray,
                   *, shift: np.ndarray | None = None, nodes: int = 40, link: str = "logit") -> np.ndarray:
    """Expected score of the panel for a new scenario and generation, per draw (score scale).

    ``cutpoints`` (S, J - 1), ``gamma`` (S, K), ``s2`` (S,) = sigma_alpha^2 + sigma_beta^2; the latent effect
    e ~ N(0, s2) is integrated by Gauss-Hermite quadrature with ``nodes`` nodes. ``shift`` (S,) moves the
    latent location (see :func:`location_shift`). ``link`` is the inverse link F of P(Y <= k) = F(c_k - eta):
    ``"logit"`` (standard logistic, this model's) or ``"probit"`` (standard normal, the ML backend's option).
    """
    x, w = np.polynomial.hermite_e.hermegauss(nodes)          # weight exp(-x^2/2)
    w = w / w.sum()
    e = np.sqrt(np.asarray(s2))[:, None] * x[None, :]          # (S, Q)
    if shift is not None:
        e = e + np.asarray(shift)[:, None]
    eta = e[:, None, :] + gamma[:, :, None]                    # (S, K, Q)
    cdf = link_cdf(link)(cutpoints[:, None, None, :] - eta[..., None])    # (S, K, Q, J-1)
    # E[Y] = v_{J-1} - sum_k (v_{k+1} - v_k) P(Y <= k)
    dv = np.diff(values)
    ey = values[-1] - cdf @ dv                                 # (S, K, Q)
    return (ey @ w).mean(axis=1)


#: The links of a cumulative model, P(Y <= k) = F(c_k - eta): name -> F (the latent residual's distribution).
LINKS: tuple[str, ...] = ("logit", "probit")
#: The latent residual variance each link fixes (the unit of the latent scale): var of F.
RESIDUAL_VARIANCE: dict[str, float] = {"logit": math.pi**2 / 3.0, "probit": 1.0}


def link_cdf(link: str):
    """F of the cumulative model for ``link``: the standard logistic (``logit``) or normal (``probit``) cdf."""
    if link == "logit":
        return _sigmoid
    if link == "probit":
        from scipy.special import ndtr
        return ndtr
    raise CjstatsError(f"The link must be one of {', '.join(LINKS)}. Got {link!r} instead.")
