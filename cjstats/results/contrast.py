r"""One contrast for every fit: the parsed contrast spec, the covariance of a joint fit as data, and the result.

A contrast is a weighted sum of location parameters, L = sum_j c_j theta_j. Every fit answers
``fit.contrast(spec)`` (and its alias ``fit.t_test(spec)``, statsmodels' name) with one
:class:`ContrastResult`: the estimate c'theta_hat, its standard error sqrt(c' Sigma c), degrees of freedom nu,
the statistic t = estimate / SE, the two-sided p-value 2 P(T_nu > |t|) and the t interval
estimate -+ t_{nu, 1 - a/2} SE (a normal one when nu is infinite).

``spec`` is one of

- a string, statsmodels' ``t_test`` form: ``"gamma[a] - gamma[b]"``, ``"mu[x] - mu[y]"``,
  ``"0.5*gamma[a] + 0.5*gamma[b] - mu"``: terms ``[number[*]]name[[label]]`` joined by ``+`` and ``-``;
- a mapping ``{parameter: weight}`` (the parameter names of the string form);
- an array of weights over the fit's parameter vector.

:class:`JointCovariance` keeps, as arrays and numbers, everything the variance and degrees of freedom of a
contrast of the joint judge x model cell means eta_pl need (no closure, so a fit pickles).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError

__all__ = ["ContrastResult", "JointCovariance", "parse_contrast", "CONTRAST_COLUMNS", "contrast_result",
           "satterthwaite_df"]

View = Literal["panel", "population"]

#: Columns of :meth:`ContrastResult.to_frame` (the table form of one contrast).
CONTRAST_COLUMNS: tuple[str, ...] = ("contrast", "estimate", "std_error", "df", "statistic", "p_value", "lower",
                                     "upper", "ci_level", "ci_method", "view")

_NAN = float("nan")


# ------------------------------------------------------------------------------------------------- result
@dataclass(frozen=True, slots=True, eq=False)
class ContrastResult:
    """One linear contrast of a fit's location parameters, with its test and interval.

    Attributes
    ----------
    label : str
        The contrast written out (or the name given).
    estimate, std_error, df : float
        c'theta_hat, sqrt(c' Sigma c) and the degrees of freedom (inf: normal; NaN for posterior draws).
    statistic : float
        t = estimate / std_error (NaN for posterior draws); also :attr:`t`.
    p_value : float
        Two-sided, 2 P(T_df > |t|).
    lower, upper, level : float
        The interval and its level.
    view : str
        ``"panel"`` (the judges in the data are the population of interest) or ``"population"``.
    method : str
        How the interval was made (``"t (Satterthwaite df)"``, ``"posterior ETI"``, ...).
    """

    label: str
    estimate: float
    std_error: float
    df: float
    statistic: float
    p_value: float
    lower: float
    upper: float
    level: float
    view: str = "panel"
    method: str = "t"

    @property
    def t(self) -> float:
        return self.statistic

    def __eq__(self, other: object) -> bool:
        """Equal fields, NaN equal to NaN (a posterior contrast has NaN df, statistic and p-value)."""
        if not isinstance(other, ContrastResult):
            return NotImplemented
        return all(a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
                   for a, b in ((getattr(self, f), getattr(other, f)) for f in self.__dataclass_fields__))

    __hash__ = None

    def to_frame(self) -> pd.DataFrame:
        """One row with columns :data:`CONTRAST_COLUMNS`."""
        return pd.DataFrame([(self.label, self.estimate, self.std_error, self.df, self.statistic, self.p_value,
                              self.lower, self.upper, self.level, self.method, self.view)],
                            columns=list(CONTRAST_COLUMNS))

    def __str__(self) -> str:
        pct = f"{100 * self.level:g}%"
        return (f"{self.label}: {self.estimate:.6g} (SE {self.std_error:.4g}, df {self.df:.4g}, t {self.statistic:.4g}, "
                f"p {self.p_value:.4g}); {pct} interval [{self.lower:.6g}, {self.upper:.6g}] ({self.view} view)")


def contrast_result(label: str, est: float, var: float, df: float, level: float, *, view: str = "panel",
                    method: str = "t (Satterthwaite df)") -> ContrastResult:
    """The t test and interval of an estimate with variance ``var`` on ``df`` degrees of freedom (inf: normal)."""
    from scipy import special

    a = (1.0 - level) / 2.0
    se = math.sqrt(max(var, 0.0))
    tq = float(special.stdtrit(df, 1.0 - a)) if math.isfinite(df) else float(special.ndtri(1.0 - a))
    stat = est / se if se > 0 else _NAN
    p = (2.0 * float(special.stdtr(df, -abs(stat))) if math.isfinite(df) else
         2.0 * float(special.ndtr(-abs(stat)))) if se > 0 else _NAN
    return ContrastResult(label, float(est), se, float(df), stat, p, est - tq * se, est + tq * se, float(level),
                          view, method)


def satterthwaite_df(cs: np.ndarray, cov: np.ndarray, dcov: np.ndarray, var_cov: np.ndarray) -> np.ndarray:
    r"""Satterthwaite degrees of freedom of c'theta_hat for each row c of ``cs`` (N, q) (lmerTest's rule):

        nu_c = 2 (c'Sigma c)^2 / (g_c' A g_c),    g_c = (c' dSigma/dphi_j c)_j,

    with Sigma = ``cov`` (q, q) the covariance of theta_hat, ``dcov`` (Q, q, q) its derivatives in the Q variance
    parameters phi and ``var_cov`` = A (Q, Q) their asymptotic covariance. The df is invariant to how phi is
    parameterised at an interior optimum (g and A transform together), so variances and lmerTest's
    (theta, sigma) give the same nu there. NaN where g'Ag is 0 (the callers fall back to a design df)."""
    cs = np.atleast_2d(np.asarray(cs, dtype=np.float64))
    var = np.einsum("ni,ij,nj->n", cs, cov, cs)
    grad = np.einsum("ni,qij,nj->nq", cs, dcov, cs)
    denom = np.einsum("nq,qr,nr->n", grad, var_cov, grad)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, 2.0 * var * var / np.where(denom > 0, denom, 1.0), _NAN)


# -------------------------------------------------------------------------------------------------- parse
_TERM = re.compile(r"\s*(?P<sign>[+-])?\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*\*?\s*)?"
                   r"(?P<name>[A-Za-z_]\w*)\s*(?:\[(?P<label>[^\[\]]*)\])?\s*")


def parse_contrast(text: str) -> list[tuple[float, str, tuple[str, ...]]]:
    """Read ``"gamma[a] - 0.5*mu[x] + mu"`` into ``[(1.0, "gamma", ("a",)), (-0.5, "mu", ("x",)), (1.0, "mu", ())]``.

    A label may hold two parts separated by a comma (``eta[x, a]``); spaces around labels are dropped. A string
    that is not of that form raises one sentence saying where it stops making sense.
    """
    if not isinstance(text, str) or not text.strip():
        raise CjstatsError("A contrast string must name at least one parameter, such as 'gamma[a] - gamma[b]'.")
    out: list[tuple[float, str, tuple[str, ...]]] = []
    pos = 0
    while pos < len(text):
        m = _TERM.match(text, pos)
        if m is None or m.end() == pos or (out and m.group("sign") is None):
            raise CjstatsError(f"Cannot read the contrast {text!r} at character {pos + 1} ({text[pos:pos + 12]!r}): "
                               f"write terms such as 'gamma[a]' or '0.5*mu[x]' joined by + and -, for example "
                               f"'gamma[a] - gamma[b]'.")
        w = float(m.group("num")) if m.group("num") else 1.0
        if m.group("sign") == "-":
            w = -w
        label = m.group("label")
        parts = tuple(s.strip() for s in label.split(",")) if label is not None else ()
        if any(not s for s in parts):
            raise CjstatsError(f"The contrast {text!r} has an empty label in '{m.group(0).strip()}'; name the "
                               f"model or judge inside the brackets, such as 'gamma[a]'.")
        out.append((w, m.group("name"), parts))
        pos = m.end()
    return out


def spec_label(weights: Mapping[str, float]) -> str:
    """``{"gamma[a]": 1, "gamma[b]": -1}`` -> ``"gamma[a] - gamma[b]"``."""
    parts = []
    for i, (k, w) in enumerate(weights.items()):
        mag = abs(float(w))
        term = str(k) if mag == 1 else f"{mag:g}*{k}"
        parts.append((("- " if w < 0 else "+ ") if i else ("-" if w < 0 else "")) + term)
    return " ".join(parts)


# ---------------------------------------------------------------------------------------- joint covariance
def _structure(p: int, k: int) -> np.ndarray:
    """The four quadratic forms of a P x K contrast c (flattened model-major), as (4, PK, PK) matrices:
    A = (sum c)^2, B = sum_p (sum_l c_pl)^2, C = sum c^2, D = sum_l (sum_p c_pl)^2."""
    ones = np.ones((p * k, p * k))
    b = np.kron(np.eye(p), np.ones((k, k)))
    d = np.kron(np.ones((p, p)), np.eye(k))
    return np.stack([ones, b, np.eye(p * k), d])


def _invariants(cs: np.ndarray) -> np.ndarray:
    """(N, 4): A, B, C, D of each contrast of a stack (N, P, K) (see :func:`_structure`)."""
    return np.stack([cs.sum(axis=(1, 2)) ** 2, (cs.sum(axis=2) ** 2).sum(axis=1), (cs**2).sum(axis=(1, 2)),
                     (cs.sum(axis=1) ** 2).sum(axis=1)], axis=1)


@dataclass(frozen=True, slots=True, eq=False)
class JointCovariance:
    r"""The covariance of the joint fit's cell means eta_hat (P x K, flattened model-major) as data.

    Var(c'eta_hat) = c' Sigma c with Sigma = ``cov`` in the panel view (judges fixed) and ``cov + population``
    in the population view, where ``population`` = s2_judge_model I + s2_judge_population (J_P (x) I_K) is what
    judges drawn from a population add. The degrees of freedom follow the backend's rule (``rule``):

    - ``"anova"`` (balanced mean squares): Sigma = sum_q MS_q sum_b w_qb Q_b over the mean squares q (``terms``,
      ``ms``, ``ms_df``) and the four quadratic forms Q_b of :func:`_structure` (weights ``weights[0]`` panel,
      ``weights[1]`` population); nu = V^2 / sum_q (w_q'inv(c) MS_q)^2 / df_q (Welch-Satterthwaite), a
      single mean square giving its own df exactly; coefficients below 1e-14 max(1, c'c) are rounding and dropped.
    - ``"reml"`` (GLS): nu is Satterthwaite's (:func:`satterthwaite_df`, lmerTest's rule) from ``dcov``, the
      derivatives of ``cov`` in the REML variances, and ``var_cov``, their asymptotic covariance (capped by the
      containment df below when ``df_capped``: the REML Hessian was not positive definite). Without them, or
      where the formula is undefined, the containment df: ``df_structure[0]`` (scenarios - 1) when sum c != 0,
      ``[1]`` (between) when a model's weights do not sum to 0, else ``[2]`` (within), which Satterthwaite's
      reproduces on balanced data. The population term adds its own df ``df_population`` by Satterthwaite.
    - ``"draws"`` (posterior): Var = the sample variance of c'eta over ``draws`` (S, P, K) plus the population
      term; nu = inf.
    """

    shape: tuple[int, int]
    cov: np.ndarray
    population: np.ndarray
    rule: Literal["anova", "reml", "draws"]
    terms: tuple[str, ...] = ()
    ms: np.ndarray | None = None
    ms_df: np.ndarray | None = None
    weights: np.ndarray | None = None
    df_structure: tuple[float, float, float] = (math.inf, math.inf, math.inf)
    df_population: float = math.inf
    draws: np.ndarray | None = None
    dcov: np.ndarray | None = None
    var_cov: np.ndarray | None = None
    df_capped: bool = False

    # ------------------------------------------------------------------------------ constructors per backend
    @classmethod
    def anova(cls, p: int, n: int, m: int, k: int, ms: Mapping[str, float], df: Mapping[str, float]
              ) -> JointCovariance:
        """From the balanced joint ANOVA's mean squares (keys S, MS, W, JM, J)."""
        nm = n * m
        terms = ("S", "MS", "W", "JM", "J")
        w = np.zeros((2, len(terms), 4))
        w[0, 0] = (1 / (p * nm * k), 0, 0, 0)
        w[0, 1] = (-1 / (p * nm * k), 1 / (nm * k), 0, 0)
        w[0, 2] = (0, -1 / (nm * k), 1 / nm, 0)
        w[1] = w[0]
        if ms["JM"] > ms["W"]:          # s2_judge_model = (MS_JM - MS_W)/(nm) enters with weight c'c
            w[1, 3, 2] += 1 / nm
            w[1, 2, 2] -= 1 / nm
        if ms["J"] > ms["JM"]:          # s2_judge = (MS_J - MS_JM)/(p nm) with weight D
            w[1, 4, 3] += 1 / (p * nm)
            w[1, 3, 3] -= 1 / (p * nm)
        msv = np.array([float(ms[t]) for t in terms])
        dfv = np.array([float(df[t]) for t in terms])
        q = _structure(p, k)
        sig = np.nan_to_num(np.einsum("vqb,q,bij->vij", w, np.where(np.isfinite(msv), msv, 0.0), q))
        return cls((p, k), sig[0], sig[1] - sig[0], "anova", terms, msv, dfv, w)

    @classmethod
    def reml(cls, cov: np.ndarray, p: int, k: int, *, s2_judge_model: float, s2_judge: float,
             df_structure: tuple[float, float, float], df_population: float, dcov: np.ndarray | None = None,
             var_cov: np.ndarray | None = None, df_capped: bool = False) -> JointCovariance:
        """From the GLS covariance of the cell means and the population-view variances (with ``dcov`` and
        ``var_cov``, Satterthwaite df; class docstring)."""
        pop = s2_judge_model * np.eye(p * k) + s2_judge * np.kron(np.ones((p, p)), np.eye(k))
        sat = dcov is not None and var_cov is not None
        return cls((p, k), np.asarray(cov, dtype=np.float64), pop, "reml",
                   df_structure=tuple(float(x) for x in df_structure), df_population=float(df_population),
                   dcov=np.asarray(dcov, dtype=np.float64) if sat else None,
                   var_cov=np.asarray(var_cov, dtype=np.float64) if sat else None, df_capped=bool(df_capped))

    @classmethod
    def from_draws(cls, draws: np.ndarray, *, s2_judge_model: float, s2_judge: float) -> JointCovariance:
        """From posterior draws (S, P, K) of eta and the posterior means of the population-view variances."""
        s, p, k = draws.shape
        cov = np.atleast_2d(np.cov(draws.reshape(s, p * k), rowvar=False, ddof=1))
        pop = s2_judge_model * np.eye(p * k) + s2_judge * np.kron(np.ones((p, p)), np.eye(k))
        return cls((p, k), cov, pop, "draws", draws=draws)

    # -------------------------------------------------------------------------------------------- queries
    def sigma(self, view: View = "panel") -> np.ndarray:
        """Sigma of the view, (PK, PK)."""
        return self.cov + self.population if view == "population" else self.cov

    def variance_df(self, cs: np.ndarray, view: View = "panel") -> tuple[np.ndarray, np.ndarray]:
        """Variance and degrees of freedom of each contrast of a stack ``cs`` (N, P, K) (class docstring)."""
        cs = np.asarray(cs, dtype=np.float64).reshape(-1, *self.shape)
        n = cs.shape[0]
        flat = cs.reshape(n, -1)
        if self.rule == "anova":
            inv = _invariants(cs)
            coef = inv @ self.weights[1 if view == "population" else 0].T          # (N, Q)
            keep = np.abs(coef) > 1e-14 * np.maximum(1.0, np.abs(inv[:, 2]))[:, None]
            with np.errstate(invalid="ignore"):
                terms = np.where(keep, coef * self.ms, 0.0)
            var = terms.sum(axis=1)
            denom = (terms**2 / self.ms_df).sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                dof = np.where(denom > 0, var**2 / np.where(denom > 0, denom, 1.0), math.inf)
            single = keep.sum(axis=1) == 1
            dof = np.where(single, self.ms_df[np.argmax(keep, axis=1)], dof)
            return var, dof.astype(np.float64)
        add = np.einsum("ni,ij,nj->n", flat, self.population, flat) if view == "population" else np.zeros(n)
        if self.rule == "draws":
            x = self.draws.reshape(self.draws.shape[0], -1) @ flat.T                  # (S, N)
            return np.var(x, axis=0, ddof=1) + add, np.full(n, math.inf)
        var = np.einsum("ni,ij,nj->n", flat, self.cov, flat)
        tot = np.abs(cs.sum(axis=(1, 2))) > 1e-12
        rows = np.abs(cs.sum(axis=2)).max(axis=1) > 1e-12
        d_tot, d_between, d_within = self.df_structure
        dof = np.where(tot, d_tot, np.where(rows, d_between, d_within)).astype(np.float64)
        if self.dcov is not None and self.var_cov is not None:
            sat = satterthwaite_df(flat, self.cov, self.dcov, self.var_cov)
            ok = np.isfinite(sat) & (sat > 0)
            dof = np.where(ok, np.minimum(sat, dof) if self.df_capped else sat, dof)
        if view == "population":
            pos = add > 0
            with np.errstate(divide="ignore", invalid="ignore"):
                sat = (var + add) ** 2 / (var**2 / dof + add**2 / self.df_population)
            dof = np.where(pos, sat, dof)
            var = var + np.where(pos, add, 0.0)
        return var, dof

    def model_mean_covariance(self, view: View = "panel") -> np.ndarray:
        """Covariance of the model panel means (row means of eta_hat): L Sigma L', L = I_P (x) 1_K'/K (one
        product). For posterior draws it is the sample covariance of the draws' row means plus L population L'."""
        p, k = self.shape
        lm = np.kron(np.eye(p), np.full((1, k), 1.0 / k))
        return lm @ self.sigma(view) @ lm.T
