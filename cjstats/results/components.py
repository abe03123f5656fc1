"""The one result type that every estimator backend returns, and the estimand registry.

:class:`VarianceComponents` is immutable and built once, in full, by a backend. The variance and allocation
layers accept it and never ask which backend made it. Its ``components`` table is tidy: one row per
(model, [criterion], component), where ``component`` is a registered estimand name (:data:`ESTIMANDS`;
the backends report ``mu, scenario, generation, scenario_judge, residual, judge_panel, judge_population``). New names
(``judge_model``, ``model_scenario``, ...) are registered with :func:`register_estimand`, not hard-coded.

Each group also carries the covariance of its location estimates (mu and the judge offsets gamma[l]) as a
:class:`ParameterCovariance` (or their draws, for a sampling backend), so that any linear contrast, within a
group or across groups, is one generic method: :meth:`VarianceComponents.contrast` (statsmodels'
``t_test`` on results is the model).

Which view of the judges a number takes is a column (``view``): ``panel`` means the panel in the data is
the population of interest (the paper's sigma2_gamma and every variance computed with judges as fixed
effects); ``population`` means the judges are a draw from a larger population (lme4's ``(1|judge)``).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.results.base import Result, freeze_plain
from cjstats.results.model import Model
from cjstats.results.estimands import ESTIMANDS, VIEWS, Estimand, register_estimand
from cjstats.results.contrast import CONTRAST_COLUMNS, ContrastResult, contrast_result, parse_contrast

__all__ = ["VarianceComponents", "ComponentRow", "COMPONENT_COLUMNS", "OFFSET_COLUMNS", "Summary",
           "build_components_frame", "build_offsets_frame", "Estimand", "ESTIMANDS", "register_estimand",
           "ParameterCovariance", "CONTRAST_COLUMNS"]

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


# ----------------------------------------------------------------------------------------------- estimands
# The registry lives in cjstats.results.estimands (imported here, so existing imports keep working).

@dataclass(frozen=True, slots=True, eq=False)
class ParameterCovariance:
    """Estimates of one group's location parameters (``mu``, ``gamma[l]``) with their covariance.

    Attributes
    ----------
    params : tuple of str
        Parameter names: ``"mu"`` then ``"gamma[<judge>]"`` per judge.
    estimate : ndarray (P,)
        The estimates (posterior means for a sampling backend).
    cov : ndarray (P, P)
        Their covariance (the posterior covariance for a sampling backend).
    dcov : ndarray (Q, P, P), optional
        Derivatives of ``cov`` with respect to Q variance parameters phi, and
    var_cov : ndarray (Q, Q), optional
        the covariance of phi_hat: together they give Satterthwaite degrees of freedom for any contrast c,
        nu = 2 (c'Sigma c)^2 / (g' A g) with g_j = c' dSigma/dphi_j c (lmerTest's rule; with independent mean
        squares it is the Welch-Satterthwaite formula).
    draws : ndarray (S, P), optional
        Posterior draws; when present, contrasts use them (equal-tailed intervals).
    df_fallback : float
        Degrees of freedom used when ``dcov`` is absent or the formula is undefined (inf: normal).
    """

    params: tuple[str, ...]
    estimate: np.ndarray
    cov: np.ndarray
    dcov: np.ndarray | None = None
    var_cov: np.ndarray | None = None
    draws: np.ndarray | None = None
    df_fallback: float = math.inf

    def frame(self) -> pd.DataFrame:
        """The covariance as a labelled DataFrame."""
        return pd.DataFrame(self.cov, index=list(self.params), columns=list(self.params))

    def variance(self, c: np.ndarray) -> float:
        """Var(c'theta_hat) = c' Sigma c."""
        return float(c @ self.cov @ c)

    def df(self, c: np.ndarray) -> float:
        """Satterthwaite degrees of freedom of c'theta_hat (see the class docstring)."""
        if self.dcov is None or self.var_cov is None:
            return float(self.df_fallback)
        v = self.variance(c)
        g = np.einsum("p,qpr,r->q", c, self.dcov, c)
        den = float(g @ self.var_cov @ g)
        nu = 2.0 * v * v / den if den > 0 else math.inf
        return float(nu) if math.isfinite(nu) and nu > 0 else float(self.df_fallback)


@dataclass(frozen=True, slots=True)
class ComponentRow:
    """One estimand of one group, as a backend computes it (turned into a table row by the result)."""

    component: str
    estimate: float
    lower: float = _NAN
    upper: float = _NAN
    std_error: float = _NAN
    ci_method: str = ""
    view: str = "panel"
    raw_estimate: float = _NAN
    at_boundary: bool = False
    identifiable: bool = True
    note: str = ""

    def __post_init__(self) -> None:
        if self.component not in ESTIMANDS:
            raise CjstatsError(f"Unknown component '{self.component}' (registered: {', '.join(ESTIMANDS)}); "
                               f"register it with cjstats.results.components.register_estimand.")
        if self.view not in VIEWS:
            raise CjstatsError(f"The view of component '{self.component}' must be one of {', '.join(VIEWS)}. "
                               f"Got {self.view!r} instead.")

    @classmethod
    def not_identifiable(cls, component: str, reason: str, *, view: str = "panel") -> ComponentRow:
        """A row with no number, carrying the reason (docs/architecture.md, Estimands)."""
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
def _column_decimals(frame: pd.DataFrame) -> int:
    """Decimals of a table's estimate and interval columns: those its standard errors support
    (:func:`cjstats.results.format.column_decimals`), or fixed decimals of the estimates without them."""
    from cjstats.results.format import column_decimals, value_decimals

    d = column_decimals(frame["std_error"]) if "std_error" in frame.columns else None
    return d if d is not None else max(value_decimals(frame["estimate"]), 3)


#: Widest line of the compact summary (model columns are split into blocks that fit).
COMPACT_WIDTH = 100


def _group_label(row: Any, has_criterion: bool) -> str:
    return str(row["model"]) if not has_criterion else f"{row['model']} / {row['criterion']}"


def _component_cell(r: Mapping[str, Any], *, sd: bool) -> tuple[str, str, str]:
    """(estimate, SD, interval) of one component row, each from its own standard error (the SD's is the delta
    method's se / (2 sd)); ``n/a`` when the data do not identify it, ``*`` at the boundary."""
    from cjstats.results.format import fixed, format_interval, row_decimals, se_decimals

    if not bool(r["identifiable"]):
        return "n/a", "", ""
    est, se, lo, hi = r["estimate"], r["std_error"], r["lower"], r["upper"]
    d = row_decimals(se, est, lo, hi)
    e = fixed(est, d) + ("*" if bool(r["at_boundary"]) else "")
    sd_text = ""
    if sd and isinstance(est, (int, float, np.floating)) and math.isfinite(float(est)):
        s = math.sqrt(max(float(est), 0.0))
        ds = se_decimals(float(se) / (2.0 * s)) if s > 0 and math.isfinite(float(se)) else None
        sd_text = fixed(s, ds if ds is not None else row_decimals(_NAN, s))
    return e, sd_text, format_interval(lo, hi, d)


def _grid(label_head: tuple[str, ...], labels: list[tuple[str, ...]], heads: list[str],
          cells: list[list[tuple[str, ...]]], *, width: int, right: frozenset[int] = frozenset(),
          right_cols: frozenset[int] | None = None) -> list[str]:
    """Rows of ``labels`` (left columns) beside the columns ``heads``; ``cells[i][j]`` is row i's cell in column j,
    a tuple of parts (estimate, interval, SD) each aligned under the same part of the rows above (part k
    right-aligned when k is in ``right``). The columns are split into blocks so that no line is wider than
    ``width``; each block repeats the labels. With ``right_cols``, the columns it names are right-aligned instead
    (one-part cells)."""
    nparts = max((len(c) for row in cells for c in row), default=1)
    pw = [[max([0] + [len(row[j][k]) for row in cells if k < len(row[j])]) for k in range(nparts)]
          for j in range(len(heads))]
    cw = []
    for j, h in enumerate(heads):
        used = [w for w in pw[j] if w]
        inner = sum(used) + max(len(used) - 1, 0)
        if len(h) > inner and used:                  # a long model name widens the last part
            pw[j][max(k for k, w in enumerate(pw[j]) if w)] += len(h) - inner
        cw.append(max(len(h), inner))
    lw = [max([len(h)] + [len(lab[k]) for lab in labels]) for k, h in enumerate(label_head)]
    left = sum(lw) + 2 * (len(lw) - 1)
    blocks, cur, used_w = [], [], left
    for j, w in enumerate(cw):
        if cur and used_w + 2 + w > width:
            blocks.append(cur)
            cur, used_w = [], left
        cur.append(j)
        used_w += 2 + w
    if cur:
        blocks.append(cur)

    def cell(j: int, parts: tuple[str, ...]) -> str:
        rt = (lambda k: j in right_cols) if right_cols is not None else (lambda k: k in right)
        out = [(p.rjust(pw[j][k]) if rt(k) else p.ljust(pw[j][k])) for k, p in enumerate(parts) if pw[j][k]]
        return " ".join(out).ljust(cw[j])

    out: list[str] = []
    for b, block in enumerate(blocks):
        if b:
            out.append("")
        head = [v.ljust(lw[k]) for k, v in enumerate(label_head)] + [(heads[j].rjust(cw[j]) if right_cols and j in right_cols
                                                                    else heads[j].ljust(cw[j])) for j in block]
        out.append("  ".join(head).rstrip())
        for i, lab in enumerate(labels):
            parts = [v.ljust(lw[k]) for k, v in enumerate(lab)] + [cell(j, cells[i][j]) for j in block]
            out.append("  ".join(parts).rstrip())
    return out


def _indent(lines: list[str]) -> list[str]:
    return ["  " + ln if ln else ln for ln in lines]


@dataclass(frozen=True)
class _Compact:
    """What the compact layouts (text and the report's table) read off a summary: the rows, the groups (the shared
    joint column first), the identified components (``mu`` last), the left-out ones, the short method labels and
    each (group, component)'s row."""

    table: pd.DataFrame
    groups: list[str]
    shown: list[str]
    missing: list[str]
    labels: dict[str, str]
    by: dict[tuple[str, str], Any]
    pct: str

    def method_of(self, component: str) -> str:
        ms = [self.labels.get(str(self.by[(g, component)]["ci_method"]), "") for g in self.groups
              if (g, component) in self.by and bool(self.by[(g, component)]["identifiable"])]
        return "/".join(dict.fromkeys(m for m in ms if m))


def _compact_parts(summary: Summary) -> _Compact:
    from cjstats.results.format import short_labels

    t = summary.table.copy()
    # a component reported in both views (the joint judge_model) gets one row per view
    if "view" in t.columns:
        views = t.groupby("component")["view"].nunique()
        two = t["component"].isin(views[views > 1].index) & (t["view"] != "panel")
        t.loc[two, "component"] = t.loc[two, "component"] + " (" + t.loc[two, "view"].astype(str) + ")"
    has_c = "criterion" in t.columns
    lvl = t["ci_level"].dropna()
    pct = f"{int(round(100 * lvl.iloc[0]))}%" if len(lvl) else ""
    groups = list(dict.fromkeys(_group_label(r, has_c) for _, r in t.iterrows()))
    groups = [g for g in groups if g == "(joint)"] + [g for g in groups if g != "(joint)"]   # shared terms first
    present = [c for c in dict.fromkeys(t["component"])]
    shown = [c for c in present if c != "mu" and t.loc[t["component"] == c, "identifiable"].astype(bool).any()]
    shown += ["mu"] if "mu" in present and t.loc[t["component"] == "mu", "identifiable"].astype(bool).any() else []
    missing = [c for c in present if c not in shown]
    ok = t["identifiable"].astype(bool)
    labels_of = short_labels(m for c in shown for m in t.loc[(t["component"] == c) & ok, "ci_method"])
    by = {(_group_label(r, has_c), r["component"]): r for _, r in t.iterrows()}
    return _Compact(t, groups, shown, missing, labels_of, by, pct)


def compact_frame(summary: Summary) -> tuple[pd.DataFrame, str, list[str]]:
    """The compact layout as a table (the report's components table): one row per model (x criterion; the joint
    fit's shared terms first), one column per identified component (variances, then ``mu``), each cell
    ``estimate [interval]`` with the decimals of that cell's own standard error (``*`` at the boundary, blank
    where the group has no such row); and the legend line of the short method labels, each column's methods
    named in its header (``scenario (PL)``); and the components no group identified."""
    p = _compact_parts(summary)
    rows = []
    for g in p.groups:
        row = {"model": g}
        for c in p.shown:
            r = p.by.get((g, c))
            if r is None:
                row[c] = ""
                continue
            e, _, iv = _component_cell(r, sd=False)
            row[c] = e if not iv else f"{e} {iv}"
        rows.append(row)
    frame = pd.DataFrame(rows, columns=["model", *p.shown])
    frame = frame.rename(columns={c: f"{c} ({p.method_of(c)})" for c in p.shown if p.method_of(c)})
    legend = "; ".join(f"{short} = {m}" for m, short in p.labels.items())
    return frame, legend, p.missing


def compact_text(summary: Summary, *, width: int = COMPACT_WIDTH) -> str:
    """The compact, lme4-style summary of a fit (``print(fit)``): title, the model header (formula, observations
    and groups, REML criterion or log-likelihood), then the components (variance, SD = sqrt(variance) and the
    interval; one column per model when there are several), short method labels with their legend, the judge
    offsets, the notes. No line of the tables is wider than ``width`` characters (model columns split into
    blocks); a note is one line."""
    from cjstats.results.format import fixed, format_interval, row_decimals

    p = _compact_parts(summary)
    t, groups, shown, missing, labels_of, by, method_of, pct = (p.table, p.groups, p.shown, p.missing, p.labels,
                                                                p.by, p.method_of, p.pct)
    lines = [summary.title, "=" * len(summary.title)]
    lines += [f"{k}: {v}" for k, v in summary.header]

    def one_group(g: str, comps: list[str], title: str) -> list[str]:
        cells = []
        for c in comps:
            e, sd, iv = _component_cell(by[(g, c)], sd=c != "mu")
            cells.append([(e,), (sd,), (iv,), (method_of(c),)])
        return [title, *_indent(_grid(("component",), [(c,) for c in comps],
                                      ["estimate", "SD", f"{pct} interval", "method"], cells, width=width - 2,
                                      right_cols=frozenset({0, 1})))]

    def by_group(gs: list[str], comps: list[str], title: str) -> list[str]:
        cells = []
        for c in comps:
            row = [_component_cell(by[(g, c)], sd=c != "mu") if (g, c) in by else ("", "", "") for g in gs]
            cells.append([(e, iv, sd) for e, sd, iv in row])
        return [title, *_indent(_grid(("component", "method"), [(c, method_of(c)) for c in comps], gs, cells,
                                      width=width - 2, right=frozenset({0, 2})))]

    lines.append("")
    others = [g for g in groups if g != "(joint)"]
    # a joint fit: the terms only the shared column holds are one list, the per-model rows (mu, per-model
    # variances) a table of the models, so no block of a model's columns is empty
    shared = [c for c in shown if (("(joint)", c) in by and not any((g, c) in by for g in others))]
    if len(groups) == 1:
        lines += one_group(groups[0], shown, f"Random effects (variances) and the mean score mu, {pct} intervals:")
    elif "(joint)" in groups and shared:
        lines += one_group("(joint)", shared, f"Random effects (variances) shared by the models, {pct} intervals:")
        rest = [c for c in shown if c not in shared]
        if rest:
            what = "the mean score mu" if rest == ["mu"] else "the terms of each model"
            lines += ["", *by_group(others, rest, f"By model, {what}: estimate [{pct} interval] SD")]
    else:
        lines += by_group(groups, shown, f"Random effects (variances) and the mean score mu by model: estimate "
                                         f"[{pct} interval] SD")
    if labels_of:
        lines.append("methods: " + "; ".join(f"{s} = {m}" for m, s in labels_of.items()))
    if missing:
        lines.append("not identified by these data: " + ", ".join(missing) + " (why: the notes below)")
    if any(bool(b) for b in t.loc[t["component"].isin(shown), "at_boundary"]):
        lines.append("* at the boundary (reported as 0)")
    off = summary.offsets
    if not off.empty:
        og = [_group_label(r, "criterion" in off.columns) for _, r in off.iterrows()]
        judges = list(dict.fromkeys(off["judge"].astype(str)))
        cell = {}
        for g, (_, r) in zip(og, off.iterrows()):
            d = row_decimals(r["std_error"], r["estimate"], r["lower"], r["upper"])
            cell[(g, str(r["judge"]))] = (fixed(r["estimate"], d), format_interval(r["lower"], r["upper"], d))
        ogroups = list(dict.fromkeys(og))
        lines += ["", "Judge offsets gamma[l] (judge mean minus panel mean)"
                  + (f", by model: estimate [{pct} interval]" if len(ogroups) > 1 else ":")]
        if len(ogroups) == 1:
            cells = [[(x,) for x in cell.get((ogroups[0], j), ("", ""))] for j in judges]
            lines += _indent(_grid(("judge",), [(j,) for j in judges], ["estimate", f"{pct} interval"], cells,
                                   width=width - 2, right_cols=frozenset({0})))
        else:
            cells = [[cell.get((g, j), ("", "")) for g in ogroups] for j in judges]
            lines += _indent(_grid(("judge",), [(j,) for j in judges], ogroups, cells, width=width - 2,
                                   right=frozenset({0})))
    if summary.footnotes:
        lines += [""] + list(summary.footnotes)          # whole lines: a note is searched for as it is written
    lines += ["", "Every row with its full interval method: fit.components (cjstats decompose --format long)."]
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Summary:
    """A printable summary of a fit: ``as_text()``, ``as_markdown()``, ``as_html()``."""

    title: str
    header: tuple[tuple[str, str], ...]
    table: pd.DataFrame
    offsets: pd.DataFrame
    footnotes: tuple[str, ...]

    def _display_table(self) -> pd.DataFrame:
        from cjstats.results.format import fixed, format_interval

        from cjstats.results.format import row_decimals

        t = self.table.copy()
        lvl = t["ci_level"].dropna()
        pct = f"{int(round(100 * lvl.iloc[0]))}%" if len(lvl) else ""
        ds = [row_decimals(se, e, lo, hi) for se, e, lo, hi in    # each row the decimals of its own SE
              zip(t["std_error"], t["estimate"], t["lower"], t["upper"])]
        t["interval"] = [format_interval(lo, hi, d, na="-") if ok else "-" for lo, hi, ok, d in
                         zip(t["lower"], t["upper"], t["identifiable"], ds)]
        t["estimate"] = [(fixed(e, d, na="-") + (" *" if b else "")) if ok else "n/a" for e, b, ok, d in
                         zip(t["estimate"], t["at_boundary"], t["identifiable"], ds)]
        cols = ["model"] + (["criterion"] if "criterion" in t.columns else []) + [
            "component", "estimate", "interval", "ci_method", "view"]
        out = t[cols].rename(columns={"interval": f"{pct} interval"})
        return out

    def as_text(self, *, width: int = COMPACT_WIDTH) -> str:
        """The compact summary, lme4-style (:func:`compact_text`): the model header, then per component the
        variance, SD and interval (models side by side when there are several), judge offsets, notes. The long
        table, one row per model x component, is :meth:`as_long_text` (and ``fit.components``)."""
        return compact_text(self, width=width)

    def as_long_text(self) -> str:
        """The long table: one row per (model, component) with its full interval method, then the offsets."""
        lines = [self.title, "=" * len(self.title)]
        lines += [f"{k}: {v}" for k, v in self.header]
        lines += ["", self._display_table().to_string(index=False)]
        if not self.offsets.empty:
            from cjstats.results.format import fixed, format_interval

            from cjstats.results.format import row_decimals

            off = self.offsets.copy()
            ds = [row_decimals(se, e, lo, hi) for se, e, lo, hi in
                  zip(off["std_error"], off["estimate"], off["lower"], off["upper"])]
            off["interval"] = [format_interval(lo, hi, d, na="-") for lo, hi, d in zip(off["lower"], off["upper"], ds)]
            off["estimate"] = [fixed(e, d, na="-") for e, d in zip(off["estimate"], ds)]
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

    def as_latex(self, *, caption: str | None = None, label: str | None = None, digits: int = 3) -> str:
        """Booktabs LaTeX: one row per group, each component's estimate [interval] and its sd beside it."""
        from cjstats.results.tables import components_latex

        return components_latex(self.table, caption=caption, label=label, digits=digits)

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()


# ------------------------------------------------------------------------------------------------- result
@dataclass(frozen=True, slots=True)
class VarianceComponents(Result):
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
    covariance : Mapping or None
        Per group, the covariance of the location estimates (:class:`ParameterCovariance`).
    dropped : DataFrame or None
        What ``incomplete="drop"`` left out, one row per model (x criterion): ``dropped_rows`` of ``n_rows``,
        ``dropped_cells`` of ``n_cells``, ``dropped_scenarios`` of ``n_scenarios`` and ``share_scenarios``
        (``cjstats._drop.DROPPED_COLUMNS``); ``None`` when the fit was not asked to drop anything.
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
    covariance: Mapping[str, ParameterCovariance] | None = None
    dropped: pd.DataFrame | None = None
    model: Model | None = None
    fitted_terms: Mapping[str, tuple[str, ...]] | None = None

    def __post_init__(self) -> None:
        # read-only mapping views cannot be pickled: keep plain dicts (cjstats.results.base.plain)
        freeze_plain(self, "diagnostics", "provenance", "posterior", "covariance")
        if isinstance(self.fitted_terms, Mapping):
            object.__setattr__(self, "fitted_terms", {str(k): tuple(v) for k, v in self.fitted_terms.items()})

    # ------------------------------------------------------------------------------------- the model fitted
    @property
    def formulas(self) -> dict[str, str]:
        """Per group (``"model"`` or ``"model / criterion"``), the exact R formula of what was fitted there:
        :attr:`model` with the terms the group's data identified (:func:`cjstats.results.model.formula`).
        Refit in R on that group's rows (``lme4::lmer(..., REML = TRUE)`` with ``contrasts = list(judge =
        "contr.sum")``, or ``ordinal::clmm``) it gives the same variance components."""
        from cjstats.results.model import formula

        if self.model is None or not self.fitted_terms:
            return {}
        return {g: formula(self.model.with_terms(t)) for g, t in self.fitted_terms.items()}

    @property
    def formula(self) -> str:
        """The R formula of the fit: one line when every group fitted the same terms, else one line per group
        (``group: formula``); see :attr:`formulas`."""
        forms = self.formulas
        if not forms:
            return ""
        distinct = list(dict.fromkeys(forms.values()))
        if len(distinct) == 1:
            return distinct[0]
        return "\n".join(f"{g}: {f}" for g, f in forms.items())

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

    def _group_key(self, model: str | None, criterion: str | None) -> str:
        model, criterion = self.resolve_group(model, criterion)
        return model if criterion is None else f"{model} / {criterion}"

    def _covariance_of(self, key: str) -> ParameterCovariance:
        if not self.covariance or key not in self.covariance:
            raise CjstatsError(f"This fit carries no covariance of the location estimates for '{key}'; refit it with "
                               f"cjstats.estimate.")
        return self.covariance[key]

    def parameter_covariance(self, model: str | None = None, criterion: str | None = None) -> pd.DataFrame:
        """Covariance of one group's location estimates (``mu``, ``gamma[<judge>]``) as a labelled DataFrame."""
        return self._covariance_of(self._group_key(model, criterion)).frame()

    def _contrast_weights(self, spec: Any, model: str | None, criterion: str | None
                          ) -> tuple[dict[str, np.ndarray], str]:
        """Per group key, the weights over that group's parameters (``mu``, ``gamma[<judge>]``), and a label."""
        if isinstance(spec, str):
            keys, label = [], spec.strip()
            for w, name, parts in parse_contrast(spec):
                if name not in ("mu", "gamma") or len(parts) > (1 if name == "mu" else 2) or (
                        name == "gamma" and not parts):
                    raise CjstatsError(f"The contrast {spec!r} names '{name}{'[' + ', '.join(parts) + ']' if parts else ''}'"
                                       f", which a per-model fit does not have: use mu, mu[model], gamma[judge] or "
                                       f"gamma[model, judge].")
                group = parts[0] if (name == "mu" and parts) or len(parts) == 2 else None
                gk = self._group_key(model, criterion) if group is None else self._named_group(group, criterion)
                keys.append(((gk, "mu" if name == "mu" else f"gamma[{parts[-1]}]"), w))
        elif isinstance(spec, Mapping) and spec:
            raw = list(spec)
            across = all(isinstance(k, tuple) and len(k) == 2 for k in raw)
            if not across and any(isinstance(k, tuple) for k in raw):
                raise CjstatsError("The 'spec' argument of contrast mixes (group, param) keys with plain param keys; "
                                   "use one form.")
            if across:
                keys = [((str(g), str(prm)), float(w)) for (g, prm), w in spec.items()]
            else:
                gk = self._group_key(model, criterion)
                keys = [((gk, str(prm)), float(w)) for prm, w in spec.items()]
            label = " + ".join(f"{w:g}*{k if across else k[1]}" for k, w in zip(
                raw if across else [k for k, _ in keys], spec.values()))
        elif isinstance(spec, (np.ndarray, list, tuple)) and not isinstance(spec, Mapping):
            gk = self._group_key(model, criterion)
            pc = self._covariance_of(gk)
            c = np.asarray(spec, dtype=np.float64)
            if c.shape != (len(pc.params),):
                raise CjstatsError(f"A contrast array for group '{gk}' needs {len(pc.params)} weights, one per "
                                   f"parameter ({', '.join(pc.params)}). Got shape {c.shape}.")
            return {gk: c}, " + ".join(f"{w:g}*{prm}" for w, prm in zip(c, pc.params) if w)
        else:
            raise CjstatsError("The 'spec' argument of contrast must be a string such as 'gamma[a] - gamma[b]', a "
                               "non-empty mapping such as {'gamma[a]': 1, 'gamma[b]': -1}, or an array of weights.")
        per_group: dict[str, np.ndarray] = {}
        for (gk, param), w in keys:
            pc = self._covariance_of(str(gk))
            if param not in pc.params:
                raise CjstatsError(f"Group '{gk}' has no parameter '{param}' (parameters: {', '.join(pc.params)}).")
            c = per_group.setdefault(str(gk), np.zeros(len(pc.params)))
            c[pc.params.index(param)] += float(w)
        return per_group, label

    def _named_group(self, name: str, criterion: str | None) -> str:
        """The group key a label inside ``mu[...]`` names: a group key, or a model (with ``criterion``)."""
        if self.covariance and name in self.covariance:
            return name
        return self._group_key(name, criterion)

    def contrast(self, spec: Any, *, model: str | None = None, criterion: str | None = None,
                 level: float | None = None, name: str | None = None) -> ContrastResult:
        r"""Any linear contrast of the location estimates, with standard error, test and interval.

        Parameters
        ----------
        spec : str, mapping or array
            A string such as ``"gamma[a] - gamma[b]"``, ``"mu + gamma[a]"`` (in the group ``model``/``criterion``
            names) or ``"mu[x] - mu[y]"`` (across groups; ``gamma[x, a]`` is judge a's offset in group x); or
            ``{param: weight}`` within one group (``param`` is ``"mu"`` or ``"gamma[<judge>]"``); or
            ``{(group, param): weight}`` across groups, ``group`` being a key of ``diagnostics`` (``"model"`` or
            ``"model / criterion"``); or an array of weights over one group's parameters (``mu`` then the
            judges). Groups are fitted independently, so their estimates are independent.
        level : float, optional
            Interval level; default the fit's ``ci_level``.
        name : str, optional
            Label of the result (default: the contrast written out).

        Returns
        -------
        ContrastResult
            With covariances: estimate c'theta, standard error sqrt(c'Sigma c), Satterthwaite df nu (across
            groups: nu = V^2 / sum_g V_g^2/nu_g), statistic t = estimate/SE, two-sided p-value and the t interval.
            With draws (Bayes): the posterior mean and standard deviation of the contrast's draws and its
            equal-tailed interval (df, statistic and p-value NaN). ``.to_frame()`` gives it as one row.

        Examples
        --------
        >>> import cjstats as cj
        >>> fit = cj.estimate(cj.datasets.load("hanna"), method="reml")
        >>> r = fit.contrast("gamma[GPT-4] - gamma[Llama-3-70B]", model="GPT")  # doctest: +SKIP
        """
        from cjstats._validate import resolve_ci_level

        lvl = float(self.ci_level) if level is None else resolve_ci_level(level)
        per_group, label = self._contrast_weights(spec, model, criterion)
        label = name or label
        a = (1.0 - lvl) / 2.0
        pcs = {gk: self._covariance_of(gk) for gk in per_group}
        est = sum(float(c @ pcs[gk].estimate) for gk, c in per_group.items())
        if all(pcs[gk].draws is not None for gk in per_group):
            n = min(pcs[gk].draws.shape[0] for gk in per_group)
            x = sum(pcs[gk].draws[:n] @ c for gk, c in per_group.items())
            lo, hi = np.quantile(x, [a, 1.0 - a])
            return ContrastResult(label, float(np.mean(x)), float(np.std(x, ddof=1)), _NAN, _NAN, _NAN, float(lo),
                                  float(hi), lvl, "panel", "posterior ETI")
        parts = [(pcs[gk].variance(c), pcs[gk].df(c)) for gk, c in per_group.items()]
        var = sum(v for v, _ in parts)
        den = sum(v * v / d for v, d in parts if v > 0 and math.isfinite(d))
        df = var * var / den if den > 0 else math.inf
        return contrast_result(label, est, var, df, lvl, view="panel", method="t (Satterthwaite df)")

    def t_test(self, spec: Any, *, model: str | None = None, criterion: str | None = None,
               level: float | None = None, name: str | None = None) -> ContrastResult:
        """:meth:`contrast` under statsmodels' name."""
        return self.contrast(spec, model=model, criterion=criterion, level=level, name=name)

    def posterior_tree(self) -> Any:
        """Every group's posterior as ONE ArviZ ``DataTree`` with a ``group`` dimension (for sampling backends).

        Each of the ``posterior`` and ``sample_stats`` groups stacks the per-group datasets of :attr:`posterior`
        along a ``group`` dimension whose coordinate is the group key (``"model"`` or ``"model / criterion"``)
        and which carries ``model`` (and ``criterion``) coordinates; judges are aligned by label (a judge a group
        lacks is NaN there). ArviZ functions accept it, e.g. ``az.summary(fit.posterior_tree())``.
        """
        import xarray as xr

        if not self.posterior:
            raise CjstatsError(f"This fit (method '{self.method}') keeps no posterior; posterior_tree needs a "
                               f"sampling backend such as method='bayes'.")
        keys = list(self.posterior)
        models, crits = [], []
        for key in keys:
            model, _, crit = key.partition(" / ")
            models.append(model)
            crits.append(crit)
        children = {}
        for name in ("posterior", "sample_stats"):
            parts = [self.posterior[k][name].to_dataset() for k in keys if name in self.posterior[k].children]
            if len(parts) != len(keys):
                continue
            ds = xr.concat(parts, dim="group", join="outer", combine_attrs="drop_conflicts")
            coords = {"group": keys, "model": ("group", models)}
            if self.has_criterion:
                coords["criterion"] = ("group", crits)
            children[name] = ds.assign_coords(coords)
        tree = xr.DataTree.from_dict(children)
        tree.attrs.update({"modeling_interface": "cjstats", "method": self.method, "scale": self.scale})
        return tree

    def summary(self) -> Summary:
        """A printable summary (text, markdown, HTML)."""
        views = ("judge_population: population view (judges drawn from a population); every other row: panel view "
                 "(the judges in the data).")
        starred = bool(self.components["at_boundary"].astype(bool).any())      # the note only when a row is starred
        notes = (["* at the boundary: reported as 0, the edge of the parameter space (method of moments: the raw "
                  "estimate was negative, see raw_estimate; REML, lme4's isSingular: the likelihood peaks at 0)."]
                 if starred else [])
        if (self.components["component"] == "judge_population").any():
            notes.append(views)
        seen = set()
        for n in self.components["note"]:
            if n and n not in seen:
                seen.add(n)
                notes.append(f"note: {n}")
        notes.extend(self.scenario_judge_lines())
        notes.extend(self.score_notes())
        header = (*self.model_header(), ("method", self.method), ("interval level", f"{self.ci_level:g}"),
                  ("groups", str(len(self.design))))
        return Summary(title=f"Variance components ({self.method})", header=header, table=self.components,
                       offsets=self.judge_offsets, footnotes=tuple(notes))

    def model_header(self) -> list[tuple[str, str]]:
        """The lme4-style head of the summary: the formula fitted, the number of observations and groups, and the
        REML criterion (or the log-likelihood of an ML fit) per group; one line per group when there are several."""
        forms = self.formulas
        if not forms:
            return []
        distinct = list(dict.fromkeys(forms.values()))
        out = [("formula", distinct[0])] if len(distinct) == 1 else []
        design = self.design.reset_index(drop=True)
        for i, (group, form) in enumerate(forms.items()):
            row = design.iloc[i] if i < len(design) else None
            diag = self.diagnostics.get(group, {}) if isinstance(self.diagnostics, Mapping) else {}
            bits = []
            if row is not None:
                bits.append(f"{int(row['n_rows']):,} obs; groups: scenario {int(row['n_scenarios'])}, judge "
                            f"{int(row['n_judges'])}" + (f", scenario:generation {int(row['n_cells'])}"
                                                         if "generation" in self.fitted_terms.get(group, ()) else ""))
            if isinstance(diag, Mapping) and diag.get("reml_criterion") is not None:
                bits.append(f"REML criterion {float(diag['reml_criterion']):.2f}")
            elif isinstance(diag, Mapping) and diag.get("loglik") is not None:
                bits.append(f"log-likelihood {float(diag['loglik']):.2f}")
            if len(distinct) > 1:
                bits.insert(0, form)
            label = "data" if len(forms) == 1 else group
            out.append((label, "; ".join(bits)))
        return out

    def score_notes(self) -> list[str]:
        """One line when the scores are discrete or piled at a bound and the fit is on the score scale (a Gaussian
        backend): the numbers, and the ordinal/binary model to consider (:func:`cjstats.io.score_kind.discrete_note`)."""
        from cjstats.io.score_kind import discrete_note

        note = discrete_note(self.provenance.get("score_shape")) if self.scale == "score" else None
        return [f"note: {note}"] if note else []

    def scenario_judge_lines(self) -> list[str]:
        """One line per group where ``scenario_judge`` was fitted: estimate and interval (decimals set by its standard
        error), the test of it being 0 and the rule for designs (judges per scenario reduce it, generations scored by
        the same judge do not; :func:`cjstats.decisions.optimise.scenario_judge_verdict` and ``cjstats decompose`` say whether
        it changes the recommended design)."""
        from cjstats.results.format import fixed, format_df, format_interval, format_p, format_scalar, se_decimals

        t = self.components
        sel = t[(t["component"] == "scenario_judge") & t["identifiable"]]
        out = []
        for _, r in sel.iterrows():
            crit = r["criterion"] if "criterion" in t.columns else None
            group = r["model"] if crit is None else f"{r['model']} / {crit}"
            diag = self.diagnostics.get(group, {}) if isinstance(self.diagnostics, Mapping) else {}
            test = diag.get("scenario_judge_test") if isinstance(diag, Mapping) else None
            dec = se_decimals(r["std_error"]) or 4
            line = (f"scenario_judge ({group}): {fixed(r['estimate'], dec)} "
                    f"{format_interval(r['lower'], r['upper'], dec)}")
            if isinstance(test, Mapping):
                if "df1" in test:
                    line += (f"; F = {format_scalar(test['statistic'])} on ({format_df(test['df1'])}, "
                             f"{format_df(test['df2'])}) df, p = {format_p(test['p_value'])}")
                else:
                    line += (f"; REML LR = {format_scalar(test['statistic'])}, p = {format_p(test['p_value'])} "
                             f"(boundary mixture)")
            line += ("; it does not average over generations scored by the same judge: more judges per scenario (or "
                     "rotating judges across generations) reduce it, more generations do not")
            out.append(line)
        return out

    def __str__(self) -> str:
        return self.summary().as_text()

    def _repr_html_(self) -> str:
        return self.summary().as_html()
