"""The one result type that every estimator backend returns.

:class:`VarianceComponents` is immutable and built once, in full, by a backend. The variance and allocation
layers accept it and never ask which backend made it. Its ``components`` table is tidy: one row per
(model, [criterion], component), where ``component`` is one of the estimand names of DESIGN.md
(``mu, scenario, generation, residual, judge_panel, judge_population``).

Which view of the judges a number takes is a column (``view``): ``fixed`` means the panel in the data is
the population of interest (the paper's sigma2_gamma and every variance computed with judges as fixed
effects); ``random`` means the judges are a draw from a larger population (lme4's ``(1|judge)``).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats._defaults import COMPONENTS
from cjstats.exceptions import CjstatsError

__all__ = ["VarianceComponents", "ComponentRow", "COMPONENT_COLUMNS", "OFFSET_COLUMNS", "Summary",
           "build_components_frame", "build_offsets_frame"]

Method = Literal["anova", "reml", "bayes"]

#: Columns of ``VarianceComponents.components`` (``criterion`` is inserted after ``model`` when present).
COMPONENT_COLUMNS: tuple[str, ...] = (
    "model", "component", "estimate", "std_error", "lower", "upper", "ci_level", "ci_method", "view",
    "method", "raw_estimate", "at_boundary", "identifiable", "note",
)
#: Columns of ``VarianceComponents.judge_offsets``.
OFFSET_COLUMNS: tuple[str, ...] = (
    "model", "judge", "estimate", "std_error", "lower", "upper", "ci_level", "ci_method", "method",
)

_NAN = float("nan")


@dataclass(frozen=True, slots=True)
class ComponentRow:
    """One estimand of one group, as a backend computes it (turned into a table row by the result)."""

    component: str
    estimate: float
    lower: float = _NAN
    upper: float = _NAN
    std_error: float = _NAN
    ci_method: str = ""
    view: str = "fixed"
    raw_estimate: float = _NAN
    at_boundary: bool = False
    identifiable: bool = True
    note: str = ""

    def __post_init__(self) -> None:
        if self.component not in COMPONENTS:
            raise CjstatsError(f"Unknown component '{self.component}' (known: {', '.join(COMPONENTS)}).")

    @classmethod
    def not_identifiable(cls, component: str, reason: str, *, view: str = "fixed") -> ComponentRow:
        """A row with no number, carrying the reason (STYLE.md §5)."""
        return cls(component, _NAN, identifiable=False, note=reason, view=view)


def build_components_frame(rows: list[tuple[Mapping[str, Any], ComponentRow]], *, method: str,
                           ci_level: float, has_criterion: bool) -> pd.DataFrame:
    """Assemble the tidy components table from (group key, row) pairs (built column by column: fast)."""
    def col(f):
        return [f(key, r) for key, r in rows]

    data: dict[str, Any] = {"model": col(lambda k, r: k["model"])}
    if has_criterion:
        data["criterion"] = col(lambda k, r: k.get("criterion"))
    data.update({
        "component": col(lambda k, r: r.component),
        "estimate": np.array(col(lambda k, r: r.estimate), dtype=np.float64),
        "std_error": np.array(col(lambda k, r: r.std_error), dtype=np.float64),
        "lower": np.array(col(lambda k, r: r.lower), dtype=np.float64),
        "upper": np.array(col(lambda k, r: r.upper), dtype=np.float64),
        "ci_level": np.array(col(lambda k, r: ci_level if r.identifiable else _NAN), dtype=np.float64),
        "ci_method": col(lambda k, r: r.ci_method), "view": col(lambda k, r: r.view),
        "method": [method] * len(rows),
        "raw_estimate": np.array(col(lambda k, r: r.raw_estimate), dtype=np.float64),
        "at_boundary": np.array(col(lambda k, r: bool(r.at_boundary)), dtype=bool),
        "identifiable": np.array(col(lambda k, r: bool(r.identifiable)), dtype=bool),
        "note": col(lambda k, r: r.note),
    })
    return pd.DataFrame(data)


def build_offsets_frame(records: list[dict[str, Any]], *, method: str, ci_level: float,
                        has_criterion: bool) -> pd.DataFrame:
    """Assemble the tidy judge-offset table; each record has model, [criterion], judge and numbers."""
    cols = list(OFFSET_COLUMNS)
    if has_criterion:
        cols.insert(1, "criterion")
    if not records:
        return pd.DataFrame(columns=cols)
    data = {c: [r.get(c) for r in records] for c in cols if c not in ("method", "ci_level")}
    data["method"] = [method] * len(records)
    data["ci_level"] = [ci_level] * len(records)
    return pd.DataFrame({c: data[c] for c in cols})


# ------------------------------------------------------------------------------------------------ summary
def _fmt(x: float, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.2e}"


@dataclass(frozen=True, slots=True)
class Summary:
    """A printable summary of a fit: ``as_text()``, ``as_markdown()``, ``as_html()``."""

    title: str
    header: tuple[tuple[str, str], ...]
    table: pd.DataFrame
    offsets: pd.DataFrame
    footnotes: tuple[str, ...]

    def _display_table(self) -> pd.DataFrame:
        t = self.table.copy()
        lvl = t["ci_level"].dropna()
        pct = f"{int(round(100 * lvl.iloc[0]))}%" if len(lvl) else ""
        t["interval"] = [f"[{_fmt(lo)}, {_fmt(hi)}]" if ok else "-" for lo, hi, ok in
                         zip(t["lower"], t["upper"], t["identifiable"])]
        t["estimate"] = [(_fmt(e) + (" *" if b else "")) if ok else "n/a" for e, b, ok in
                         zip(t["estimate"], t["at_boundary"], t["identifiable"])]
        cols = ["model"] + (["criterion"] if "criterion" in t.columns else []) + [
            "component", "estimate", "interval", "ci_method", "view"]
        out = t[cols].rename(columns={"interval": f"{pct} interval"})
        return out

    def as_text(self) -> str:
        lines = [self.title, "=" * len(self.title)]
        lines += [f"{k}: {v}" for k, v in self.header]
        lines += ["", self._display_table().to_string(index=False)]
        if not self.offsets.empty:
            off = self.offsets.copy()
            off["interval"] = [f"[{_fmt(lo)}, {_fmt(hi)}]" for lo, hi in zip(off["lower"], off["upper"])]
            off["estimate"] = off["estimate"].map(_fmt)
            keep = ["model"] + (["criterion"] if "criterion" in off.columns else []) + ["judge", "estimate", "interval"]
            lines += ["", "Judge offsets gamma[l] (judge mean minus panel mean)", off[keep].to_string(index=False)]
        if self.footnotes:
            lines += [""] + list(self.footnotes)
        return "\n".join(lines)

    def as_markdown(self) -> str:
        t = self._display_table()
        head = "| " + " | ".join(t.columns) + " |"
        sep = "| " + " | ".join("---" for _ in t.columns) + " |"
        body = ["| " + " | ".join(str(v) for v in row) + " |" for row in t.itertuples(index=False)]
        meta = [f"- {k}: {v}" for k, v in self.header]
        return "\n".join([f"**{self.title}**", "", *meta, "", head, sep, *body, "", *self.footnotes])

    def as_html(self) -> str:
        meta = "".join(f"<li>{html.escape(k)}: {html.escape(str(v))}</li>" for k, v in self.header)
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.footnotes)
        return (f"<h4>{html.escape(self.title)}</h4><ul>{meta}</ul>"
                f"{self._display_table().to_html(index=False)}{notes}")

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()


# ------------------------------------------------------------------------------------------------- result
@dataclass(frozen=True, slots=True)
class VarianceComponents:
    """Variance components of a score table, with intervals, judge offsets and diagnostics.

    Attributes
    ----------
    components : DataFrame
        Tidy: one row per (model, [criterion], component) with columns
        ``model, [criterion], component, estimate, std_error, lower, upper, ci_level, ci_method, view, method,
        raw_estimate, at_boundary, identifiable, note``. A variance truncated at zero has ``estimate = 0``,
        ``at_boundary = True`` and the untruncated value in ``raw_estimate``. A component that the data cannot
        identify has NaN numbers, ``identifiable = False`` and the reason in ``note``.
    judge_offsets : DataFrame
        gamma[l] per (model, [criterion], judge): the judge's mean minus the panel mean, with intervals.
    method : str
        The backend that made the result (``anova``, ``reml`` or ``bayes``).
    design : DataFrame
        The design summary of the groups analysed (see :attr:`Scores.design`).
    ci_level : float
        Level of every interval.
    diagnostics : Mapping
        Per-group diagnostics keyed by ``"model"`` or ``"model / criterion"``: mean squares, degrees of
        freedom, dropped cells, convergence, warnings.
    provenance : Mapping
        cjstats version, backend options, seed, date.
    draws : DataFrame or None
        Posterior (or bootstrap) draws of the components when a backend has them. Long format: columns
        ``model, [criterion], chain, draw`` and one column per component name (``mu, scenario, generation,
        residual, judge_panel, judge_population``; NaN where not identifiable). The allocation layer turns
        these into a posterior on each design's predicted variance.
    posterior : Mapping or None
        The full posterior per group (an ArviZ ``DataTree``), keyed like ``diagnostics``, for backends that
        sample; ``None`` otherwise.
    scale : {"score", "latent"}
        The scale of the variance components (the backend's declared capability for the options used):
        ``"latent"`` for the ordinal model, whose variances are not score variances (``mu`` stays on the score
        scale). The decision layer's closed forms need ``"score"``.
    """

    components: pd.DataFrame
    judge_offsets: pd.DataFrame
    method: str
    design: pd.DataFrame
    ci_level: float
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    draws: pd.DataFrame | None = None
    posterior: Mapping[str, Any] | None = None
    scale: Literal["score", "latent"] = "score"

    @property
    def has_criterion(self) -> bool:
        return "criterion" in self.components.columns

    def to_frame(self) -> pd.DataFrame:
        """A copy of the tidy components table."""
        return self.components.copy()

    def resolve_group(self, model: str | None = None, criterion: str | None = None) -> tuple[str, str | None]:
        """The (model, criterion) a call refers to; ``None`` means the only one (one clear sentence otherwise)."""
        self.estimates(model=model, criterion=criterion)
        t = self.components
        model = str(model) if model is not None else str(t["model"].iloc[0])
        if self.has_criterion and criterion is None:
            criterion = str(t.loc[t["model"].astype(str) == model, "criterion"].iloc[0])
        return model, criterion

    def estimates(self, model: str | None = None, criterion: str | None = None) -> dict[str, float]:
        """The point estimates of one group as ``{component: estimate}`` (NaN where not identifiable)."""
        t = self.components
        models = t["model"].unique()
        if model is None:
            if len(models) != 1:
                raise CjstatsError(f"This fit has {len(models)} models; name one with model= "
                                   f"(one of {', '.join(map(str, models))}).")
            model = models[0]
        sel = t["model"] == model
        if self.has_criterion:
            crits = t.loc[sel, "criterion"].unique()
            if criterion is None and len(crits) != 1:
                raise CjstatsError(f"This fit has {len(crits)} criteria for model '{model}'; name one with "
                                   f"criterion= (one of {', '.join(map(str, crits))}).")
            sel &= t["criterion"] == (criterion if criterion is not None else crits[0])
        rows = t[sel]
        if rows.empty:
            raise CjstatsError(f"This fit has no model '{model}' (models: {', '.join(map(str, models))}).")
        return dict(zip(rows["component"], rows["estimate"].astype(float)))

    def summary(self) -> Summary:
        """A printable summary (text, markdown, HTML)."""
        views = "judge_population: judges random (drawn from a population); every other row: judges fixed (the panel)."
        notes = ["* at the boundary: reported as 0, the edge of the parameter space (method of moments: the raw "
                 "estimate was negative, see raw_estimate; REML, lme4's isSingular: the likelihood peaks at 0).", views]
        seen = set()
        for n in self.components["note"]:
            if n and n not in seen:
                seen.add(n)
                notes.append(f"note: {n}")
        header = (("method", self.method), ("interval level", f"{self.ci_level:g}"),
                  ("groups", str(len(self.design))))
        return Summary(title=f"Variance components ({self.method})", header=header, table=self.components,
                       offsets=self.judge_offsets, footnotes=tuple(notes))

    def __str__(self) -> str:
        return self.summary().as_text()

    def _repr_html_(self) -> str:
        return self.summary().as_html()
