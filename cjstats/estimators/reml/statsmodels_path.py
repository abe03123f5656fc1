"""The statsmodels reference path of the REML backend (``path="statsmodels"``).

statsmodels' ``MixedLM`` fitted on the unit's rows (it needs them: ``Capabilities.rows_options``), with guards
against its known traps; the structured REML in :mod:`cjstats.estimators.reml.core` is tested against it.
statsmodels is imported inside the functions that use it.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from cjstats.estimators.reml import core as _rs
from cjstats.exceptions import CjstatsError

__all__ = ["statsmodels_model", "check_statsmodels_structure", "fit_statsmodels"]

_fixed_effects = _rs.fixed_effects


def _statsmodels_model(gm: Any) -> Any:
    """statsmodels MixedLM from arrays: judges fixed (contr.sum), scenario intercept, generation as a VC."""
    from statsmodels.regression.mixed_linear_model import MixedLM, VCSpec

    g = gm.g
    d = gm.row_design
    exog = _rs.contr_sum_coding(gm.k)[g.judge]
    exog_re = np.ones((d.n_obs, 1))
    vc = None
    if gm.has_generation:
        starts = np.flatnonzero(np.r_[True, np.diff(g.scenario) != 0])
        stops = np.r_[starts[1:], d.n_obs]
        mats, colnames = [], []
        for a, b in zip(starts, stops):
            c = g.cell[a:b]
            cells = np.unique(c)
            mats.append((c[:, None] == cells[None, :]).astype(np.float64))
            colnames.append([f"cell{int(x)}" for x in cells])
        vc = VCSpec(["generation"], [colnames], [mats])
    model = MixedLM(np.asarray(g.y, dtype=np.float64), exog, groups=np.asarray(g.scenario), exog_re=exog_re,
                    exog_vc=vc)
    _check_statsmodels_structure(model, gm.has_generation)
    return model


def _check_statsmodels_structure(model: Any, has_generation: bool) -> None:
    """Refuse a MixedLM without the scenario intercept or without the generation component.

    ``MixedLM.from_formula(..., vc_formula=...)`` without ``re_formula="1"`` drops the group intercept
    (k_re = 0) and still reports convergence; this check makes that impossible to miss.
    """
    if model.k_re != 1:
        raise CjstatsError(f"The statsmodels model has {model.k_re} random-effect columns per scenario instead of "
                           f"the scenario intercept (1): pass re_formula='1' with vc_formula.")
    want = 1 if has_generation else 0
    if model.k_vc != want:
        raise CjstatsError(f"The statsmodels model has {model.k_vc} variance components instead of {want} "
                           f"(generation within scenario).")


def _fit_statsmodels(gm: Any, start: np.ndarray, optimum: _rs.FitResult
                     ) -> tuple[_rs.FitResult, dict[str, Any]]:
    """Fit the fixed-judge model with statsmodels, apply the guards, return it as a FitResult.

    Guards, each recorded in ``diag["guards"]`` (and warned about) when it fires:

    1. fixed effects (statsmodels issue 10239): statsmodels' ``fe_params`` are compared with the GLS solution
       at statsmodels' own variances; once a variance is below 1e-10 statsmodels returns between-group fixed
       effects (here mu) as 0.0 while reporting convergence. The reported mu and gamma are always the GLS
       solution at the reported variances.
    2. optimum: statsmodels' REML criterion is compared with the structured optimum ``optimum`` (which has
       checked every boundary face). If statsmodels stopped more than 1e-6 above it (near a zero variance it
       can stop at a small positive value, or, started near zero, wander to a wrong interior point, both with
       ``converged=True``), the structured optimum is reported instead.

    statsmodels' own warnings are captured into ``diag["warnings"]``; an exception from it becomes one
    CjstatsError sentence.
    """
    from statsmodels.regression.mixed_linear_model import MixedLMParams

    ev = gm.ev
    g = gm.unit
    model = _statsmodels_model(gm)
    k = gm.k
    sp = MixedLMParams.from_components(fe_params=np.zeros(k), cov_re=np.array([[float(start[0])]]),
                                       vcomp=np.asarray(start[1:], dtype=float))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = model.fit(start_params=sp, reml=True, method=["bfgs", "lbfgs"], gtol=1e-9, maxiter=5000,
                            full_output=True)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError) as exc:
            raise CjstatsError(f"statsmodels MixedLM failed for {g.label()} ({type(exc).__name__}: {exc}); "
                               f"use path='structured'.") from exc
    sm_warnings = [f"{w.category.__name__}: {w.message}" for w in caught]
    s2_sm = float(res.scale)
    cov_re = np.asarray(res.cov_re, dtype=float)
    var_sm = np.concatenate(([float(cov_re[0, 0])], np.asarray(res.vcomp, dtype=float)))
    theta_sm = np.maximum(var_sm / s2_sm, 0.0)
    fe_sm = np.asarray(res.fe_params, dtype=float)
    names = ["scenario", "generation"][: len(theta_sm)]
    diag: dict[str, Any] = {
        "converged": bool(res.converged),
        "optimizer": "statsmodels MixedLM.fit(method=['bfgs', 'lbfgs'], gtol=1e-9, reml=True)",
        "iterations": int(sum(h.get("iterations", 0) for h in (res.hist or []) if isinstance(h, dict))),
        "warnings": sm_warnings,
        "variances": {"residual": s2_sm, **{nm: float(v) for nm, v in zip(names, var_sm)}},
        "fe_params": fe_sm.tolist(), "k_re": int(model.k_re), "k_vc": int(model.k_vc), "guards": [],
    }
    coding = _rs.contr_sum_coding(k)
    finite = bool(np.all(np.isfinite(theta_sm)) and s2_sm > 0 and math.isfinite(s2_sm))
    # guard 1: statsmodels' fixed effects against GLS at its own variances
    if finite:
        beta_at_sm = np.linalg.solve(coding, _fixed_effects(ev, theta_sm, s2_sm)["eta"])
        gap_fe = float(np.max(np.abs(beta_at_sm - fe_sm)))
        diag["fe_params_gls"] = beta_at_sm.tolist()
        diag["fe_params_max_abs_difference"] = gap_fe
        # relative to the data's own scale (the largest fixed effect or the residual SD), never to 1: with
        # scores of size 1e-6 an absolute floor would hide a zeroed mu
        if not gap_fe <= 1e-6 * max(float(np.max(np.abs(beta_at_sm))), math.sqrt(s2_sm)):
            diag["guards"].append(f"statsmodels' fixed effects differ from GLS at its own variances by up to "
                                  f"{gap_fe:.3g} (statsmodels issue 10239: a variance below 1e-10 zeroes mu); "
                                  f"GLS values used")
    # guard 2: statsmodels' criterion against the REML optimum
    dev_sm = ev.profiled("fixed", theta_sm)[0] if finite else math.inf
    gap = float(dev_sm - optimum.deviance)
    diag["reml_criterion"] = float(dev_sm)
    diag["criterion_gap"] = gap
    if not gap <= 1e-6:          # also when statsmodels' variances give no finite criterion
        found = ", ".join(f"{nm} {s2_sm * t:.4g}" for nm, t in zip(names, theta_sm))
        best = ", ".join(f"{nm} {optimum.s2 * t:.4g}" for nm, t in zip(names, optimum.theta))
        diag["guards"].append(f"statsmodels stopped {gap:.3g} above the REML optimum ({found}; optimum: {best}); "
                              f"the optimum is reported")
        theta, s2, dev = optimum.theta.copy(), optimum.s2, optimum.deviance
        converged = optimum.converged
    else:
        theta, s2, dev = theta_sm, s2_sm, float(dev_sm)
        converged = bool(res.converged)
    grad = ev.profiled("fixed", theta, grad=True)[1]
    fr = _rs.FitResult(theta=theta, s2=float(s2), deviance=float(dev), converged=converged,
                       iterations=diag["iterations"], evaluations=0, gradient=grad, boundary=theta <= 0,
                       message="statsmodels")
    return fr, diag


statsmodels_model = _statsmodels_model
check_statsmodels_structure = _check_statsmodels_structure
fit_statsmodels = _fit_statsmodels
