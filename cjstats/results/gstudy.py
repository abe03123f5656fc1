"""The results of :func:`cjstats.decisions.gstudy.g_study` (:class:`GStudy`) and
:func:`cjstats.decisions.gstudy.replication` (:class:`Replication`): plain tables, the Result contract."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from cjstats.results.base import Result

__all__ = ["GStudy", "Replication"]


_VARIANCES = ("universe", "relative_error", "absolute_error")


def _fmt(t: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    out = t.copy()
    for c in cols:
        if c in out.columns:
            out[c] = out[c].map(lambda v: f"{v:.3g}" if c in _VARIANCES else f"{v:.3f}")
    return out


@dataclass(frozen=True)
class GStudy(Result):
    """Generalizability (E rho^2) and dependability (Phi) coefficients of a benchmark's model scores, per design.

    Attributes
    ----------
    table : DataFrame
        One row per design: ``strategy, n, m, k, k_total, calls_per_scenario, universe, relative_error,
        absolute_error, e_rho2, e_rho2_lower, e_rho2_upper, phi, phi_lower, phi_upper, scale, judges``.
    components : DataFrame
        The variance components used: ``component, estimate, std_error, df, relative, absolute`` (``df``: the
        Satterthwaite degrees of freedom of the scaled chi-square its draws come from; ``relative`` and
        ``absolute``: whether it enters that error).
    models : tuple of str
        The objects of measurement.
    method : str
        The backend of the joint fit.
    scale : str
        ``"score"``, or ``"latent"`` for an ordinal fit.
    judges : str
        ``"panel"`` (the fit's judges are the universe of judges) or ``"population"`` (judges drawn afresh).
    ci_level : float
    n_draws : int
        Draws behind the intervals.
    uncertainty : str
        Where the intervals come from.
    """

    table: pd.DataFrame
    components: pd.DataFrame
    models: tuple[str, ...]
    method: str
    scale: str
    judges: str
    ci_level: float
    n_draws: int
    uncertainty: str

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def as_text(self) -> str:
        pct = f"{round(100 * self.ci_level)}%"
        t = _fmt(self.table, ["universe", "relative_error", "absolute_error", "e_rho2", "e_rho2_lower",
                              "e_rho2_upper", "phi", "phi_lower", "phi_upper"])
        t["e_rho2"] = t["e_rho2"] + " [" + t["e_rho2_lower"] + ", " + t["e_rho2_upper"] + "]"
        t["phi"] = t["phi"] + " [" + t["phi_lower"] + ", " + t["phi_upper"] + "]"
        t = t[["strategy", "n", "m", "k", "k_total", "universe", "relative_error", "absolute_error", "e_rho2",
               "phi"]]
        c = self.components.copy()
        for col in ("estimate", "std_error", "df"):
            c[col] = c[col].map(lambda v: f"{v:.4g}")
        title = f"G study: {len(self.models)} models as the object of measurement ({self.method} fit)"
        return "\n".join([
            title, "=" * len(title),
            f"scale: {self.scale}; judges: {self.judges}; intervals: {pct}, {self.uncertainty} ({self.n_draws} draws)",
            "", t.to_string(index=False), "", "components used", c.to_string(index=False),
            "", "E rho^2 = universe / (universe + relative_error) (ranking models); "
                "Phi = universe / (universe + absolute_error) (absolute scores)."])

    def __str__(self) -> str:
        return self.as_text()


@dataclass(frozen=True)
class Replication(Result):
    """How a fresh replication of the benchmark would rank the models, simulated from the fitted joint model.

    Attributes
    ----------
    table : DataFrame
        One row per design: ``strategy, n, m, k, k_total, judges, top_model, p_same_top, p_same_top_se,
        kendall_tau, kendall_tau_se, n_sims``: the probability that the replication's top model is the observed
        top model and the expected Kendall tau between the observed and the replicated rankings, with their
        Monte Carlo standard errors.
    top : DataFrame
        Per design and model, the probability that the model is top in the replication (``p_top``).
    models : tuple of str
    observed : tuple of float
        The observed model means (the ranking compared against).
    method, scale, uncertainty : str
    """

    table: pd.DataFrame
    top: pd.DataFrame
    models: tuple[str, ...]
    observed: tuple[float, ...]
    method: str
    scale: str
    uncertainty: str

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def as_text(self) -> str:
        t = _fmt(self.table, ["p_same_top", "p_same_top_se", "kendall_tau", "kendall_tau_se"])
        title = f"Replication of the ranking of {len(self.models)} models ({self.method} fit)"
        return "\n".join([title, "=" * len(title), f"uncertainty: {self.uncertainty}", "",
                          t.to_string(index=False)])

    def __str__(self) -> str:
        return self.as_text()
