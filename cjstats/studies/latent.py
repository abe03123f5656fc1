r"""The latent-scale truth of the study's ordinal data, for methods whose components are on a latent scale.

The ``ordinal`` misspecification (:mod:`cjstats.studies.data`) rounds the Gaussian score and clips it to 1..J:

    Y_ijl = clip(rint(mu + alpha_i + beta_ij + gamma_l + e_ijl), 1, J),   e_ijl ~ N(0, s2_residual),

so, exactly, for k = 1..J-1 (the clip only merges the tails into categories 1 and J)

    P(Y_ijl <= k | alpha_i, beta_ij) = Phi((k + 1/2 - mu - gamma_l - alpha_i - beta_ij) / sigma_e),

a cumulative probit model (Agresti 2010, *Analysis of Ordinal Categorical Data*, 2nd ed., Sec. 5.1 and 10.2)
with thresholds (k + 1/2 - mu)/sigma_e, offsets gamma_l/sigma_e and random effects alpha/sigma_e, beta/sigma_e.
Its latent residual is 1, the unit of the probit latent scale, so the truth of a probit fit is

    scenario    = s2_scenario / s2_residual            (m > 1; at m = 1: (s2_scenario + s2_generation) / s2_residual)
    generation  = s2_generation / s2_residual          (m > 1; NaN at m = 1, as the score-scale truth)
    judge_panel = mean(gamma_l^2) / s2_residual        (the panel-centred offsets of the replicate)
    judge_population = (score-scale judge_population) / s2_residual
    residual    = 1                                    (fixed by the link; a fit reports it exactly)

and ``mu`` stays on the score scale, as the ordinal backends report it: the panel's expected score for a new
scenario and generation, in closed form (E[Y] = 1 + sum_{k=1}^{J-1} P(Y > k) for Y in 1..J):

    mu_score = (1/K) sum_l [1 + sum_{k=1}^{J-1} Phi((mu + gamma_l - k - 1/2) / sqrt(s2_scenario + s2_generation
                                                                                   + s2_residual))].

The data are probit, so under a logit link the latent variances have no exact truth (the logistic is not a
rescaled normal): they are NaN (left out of the measures) and only ``mu`` is scored. A scenario x judge
interaction in the data is not in these models: :func:`latent_truth` refuses it (the study skips such designs
for latent-scale methods). Residuals that break the normal model (``t_df``, ``judge_residual_ratio``) keep the
formulas above with s2_residual as the unit: the study then shows what the latent model makes of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from scipy.special import ndtr

from cjstats.exceptions import CjstatsError

__all__ = ["latent_truth", "expected_ordinal_score"]


def expected_ordinal_score(location: np.ndarray | float, sd: float, n_points: int) -> np.ndarray:
    """E[clip(rint(Z), 1, J)] for Z ~ N(location, sd^2): 1 + sum_{k=1}^{J-1} Phi((location - k - 1/2) / sd)."""
    loc = np.asarray(location, dtype=np.float64)
    k = np.arange(1, int(n_points), dtype=np.float64)
    if sd <= 0:
        return 1.0 + np.sum(loc[..., None] > k + 0.5, axis=-1)
    return 1.0 + ndtr((loc[..., None] - k - 0.5) / sd).sum(axis=-1)


def latent_truth(comp: Mapping[str, float], gamma: np.ndarray, *, m: int, n_points: int, link: str = "probit",
                 judge_population: float | None = None) -> dict[str, float]:
    """The truth of a latent-scale fit of one group of ordinal data (module docstring for the formulas).

    Parameters
    ----------
    comp : mapping
        The group's truth: ``mu, scenario, generation, residual`` and optionally ``scenario_judge`` (must be 0).
    gamma : array (K,)
        The replicate's judge offsets of the group on the score scale (panel-centred).
    m : int
        Generations per scenario (m = 1: ``scenario`` holds the generation variance, ``generation`` is NaN).
    n_points : int
        J, the number of scale points (the ``ordinal`` misspecification).
    link : {"probit", "logit"}
        The fit's link: the latent variances have an exact truth only under probit (the data's); NaN under logit.
    judge_population : float, optional
        The score-scale truth of ``judge_population`` (divided by s2_residual); NaN when not given.

    Returns
    -------
    dict
        ``mu`` (score scale), ``scenario``, ``generation``, ``scenario_judge`` (NaN: not in the model),
        ``residual`` (1 under probit), ``judge_panel``, ``judge_population``.
    """
    if comp.get("scenario_judge", 0.0) > 0:
        raise CjstatsError("The data have a scenario x judge interaction, which the ordinal latent model does not "
                           "have, so they have no latent truth; leave the latent-scale method out of this design.")
    if link not in ("probit", "logit"):
        raise CjstatsError(f"The 'link' argument of latent_truth must be 'probit' or 'logit'. Got {link!r} instead.")
    s2e = float(comp["residual"])
    if s2e <= 0:
        raise CjstatsError("The truth's residual variance is 0, so the latent scale has no unit; give it a "
                           "positive residual.")
    g = np.asarray(gamma, dtype=np.float64)
    sd = math.sqrt(comp["scenario"] + comp["generation"] + s2e)
    mu = float(np.mean(expected_ordinal_score(comp["mu"] + g, sd, n_points)))
    nan = math.nan
    if link != "probit":
        return {"mu": mu, "scenario": nan, "generation": nan, "scenario_judge": nan, "residual": nan,
                "judge_panel": nan, "judge_population": nan}
    return {"mu": mu,
            "scenario": (comp["scenario"] + (comp["generation"] if m == 1 else 0.0)) / s2e,
            "generation": comp["generation"] / s2e if m > 1 else nan,
            "scenario_judge": nan,
            "residual": 1.0,
            "judge_panel": float(np.mean(g**2)) / s2e,
            "judge_population": nan if judge_population is None else float(judge_population) / s2e}
