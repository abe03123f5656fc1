"""The default prior scales of the Bayesian models (re-exported by :mod:`cjstats.estimators.bayes`; kept here so
that :mod:`cjstats.estimators.bayes.pymc_model`, which the package imports, reads them without importing it)."""

from __future__ import annotations

__all__ = ["GAUSSIAN_PRIORS", "ORDINAL_PRIORS"]

#: Default prior scales of the Gaussian model, as multiples of the group's score standard deviation:
#: mu ~ N(ybar, (2.5 sd_y)^2); every sigma ~ HalfStudentT(nu=3, sd_y).
GAUSSIAN_PRIORS: dict[str, float] = {"mu": 2.5, "sigma_scenario": 1.0, "sigma_generation": 1.0,
                                     "sigma_residual": 1.0, "sigma_judge": 1.0, "sigma_scenario_judge": 1.0}

#: Default prior scales of the ordinal model, on the latent (logistic) scale: every sigma ~ HalfStudentT(3, 2),
#: cutpoints ~ N(0, 5^2) restricted to increasing order.
ORDINAL_PRIORS: dict[str, float] = {"sigma_scenario": 2.0, "sigma_generation": 2.0, "sigma_judge": 2.0,
                                    "cutpoints": 5.0}
