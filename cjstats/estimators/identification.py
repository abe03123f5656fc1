r"""Which parameters the data identify: one check that every fit passes through, before and after it.

A parameter is *identified* when the data pin it to a finite value. Three ways it fails, each reported per
parameter (never a finite interval around an arbitrary number, never an overflow):

* **Separation** (ordinal and pass/fail scores, before the fit). With shared thresholds the rows of judge l
  enter the marginal likelihood through P(Y = k | a) = F(theta_k - gamma_l - a) - F(theta_{k-1} - gamma_l - a). If
  every score of judge l is in the top category, each of its factors 1 - F(theta_{J-1} - gamma_l - a) increases
  to 1 as gamma_l -> +inf, for every a, so (dominated convergence) its scenario integrals increase to the
  integrals without judge l's rows: the likelihood has no maximum, its supremum is the likelihood of the other
  judges' rows, reached only at gamma_l = +inf (complete separation; the bottom category gives -inf). Hence
  the maximum-likelihood estimate of every other parameter is the fit without that judge's rows, exactly, and
  the judge's offset, the panel-centred offsets and ``judge_panel`` / ``judge_population`` are unbounded.
  Per-judge thresholds (``thresholds="judge"``): a judge in one category has all its thresholds at +-inf (the
  same limit); a judge that never uses an extreme category has that threshold at +-inf, and one that skips a
  middle category has two coinciding thresholds, which changes none of the reported rows (its probabilities of
  the unused categories are 0 in the limit) and is stated.
* **Too few groups for a variance** (before the fit): a per-model model x scenario variance of a model seen on
  fewer than two scenarios (its one scenario effect is confounded with the model's mean).
* **Run-off or singular information** (after the fit): a variance parameter at the upper bound of its search
  range (the likelihood keeps increasing: e.g. every scenario unanimous, so s_a -> inf), or a parameter whose
  standard error from the observed information is beyond ``se_limit`` latent units (the information is
  numerically singular in its direction).

Each finding names the parameter, the judge, model or category, the reason and the fix; :func:`warn_findings`
says them in one warning per unit and :func:`mark` turns the affected component rows into rows without a
number (``identifiable=False`` and the reason), as ``generation`` at m = 1 already is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from cjstats._warnings import warn
from cjstats.exceptions import IdentificationWarning

__all__ = ["Finding", "IdentificationWarning", "ordinal_separation", "unanimous", "too_few_scenarios", "run_off",
           "singular", "mark", "prior_driven", "warn_findings", "as_records", "SE_LIMIT"]

#: A latent-scale standard error beyond this many residual SDs means the information is singular in that
#: direction (a separated offset's SE is 10^4-10^6 there; a real offset's at most a few units).
SE_LIMIT = 50.0


@dataclass(frozen=True)
class Finding:
    """One parameter the data do not identify.

    ``parameter``: its name (``gamma[j2]``, ``thresholds[j2]``, ``scenario``, ``model_scenario[a]``);
    ``reason``: why, naming the judge, model or category; ``fix``: what to do; ``rows``: the component rows that
    have no number because of it; ``limit``: the value the estimate runs off to (+inf / -inf), NaN otherwise;
    ``judge`` / ``value``: the separated judge and the category value it always gives (separation only)."""

    parameter: str
    reason: str
    fix: str
    rows: tuple[str, ...] = ()
    limit: float = math.nan
    judge: str | None = None
    value: float = math.nan


def _fmt(v: float) -> str:
    return f"{v:g}"


def ordinal_separation(category: np.ndarray, judge: np.ndarray, judge_labels: Sequence[str], values: np.ndarray,
                       *, thresholds: str = "shared", weight: np.ndarray | None = None) -> list[Finding]:
    """Separation findings of one unit of ordinal scores (module docstring): per judge, the categories it uses.

    ``category``: 0-based category codes of the rows, ``judge``: 0-based judge codes, ``values``: the score of
    each category (the unit's observed distinct values, so no category is empty in the unit as a whole);
    ``weight``: the number of calls each row stands for (the rows of per-pattern counts; None: 1)."""
    n_cat = int(len(values))
    counts = np.zeros((len(judge_labels), n_cat), dtype=np.int64)
    np.add.at(counts, (np.asarray(judge, dtype=np.int64), np.asarray(category, dtype=np.int64)),
              1 if weight is None else np.rint(np.asarray(weight, dtype=np.float64)).astype(np.int64))
    out: list[Finding] = []
    top, bottom = _fmt(values[-1]), _fmt(values[0])
    for j, lab in enumerate(judge_labels):
        used = np.flatnonzero(counts[j] > 0)
        if used.size == 0:
            continue
        if used.size == 1:
            k = int(used[0])
            if k not in (0, n_cat - 1) and thresholds == "shared":
                continue     # a middle category alone: the offset is finite with shared thresholds
            up = k == n_cat - 1
            where = "the top" if up else ("the bottom" if k == 0 else "one")
            out.append(Finding(
                f"gamma[{lab}]",
                f"judge '{lab}' gives {_fmt(values[k])} ({where} score) to every one of its {int(counts[j].sum())} "
                f"items: complete separation, so its offset is {'+' if up else '-'}inf and the likelihood has no "
                f"finite maximum (the other parameters are fitted on the other judges' rows, their exact limit)",
                f"drop judge '{lab}', merge its category with the next one, or use method='bayes', whose prior "
                f"keeps the offset finite (then prior-driven)",
                rows=("judge_panel", "judge_population"), limit=math.inf if up else -math.inf, judge=str(lab),
                value=float(values[k])))
        elif thresholds == "judge":
            unused = [int(k) for k in range(n_cat) if counts[j, k] == 0]
            ends = [k for k in unused if k in (0, n_cat - 1)]
            if unused:
                words = ", ".join(_fmt(values[k]) for k in unused)
                out.append(Finding(
                    f"thresholds[{lab}]",
                    f"judge '{lab}' never gives {words} (of {bottom}..{top}): with thresholds='judge' "
                    + ("its threshold next to " + " and ".join(_fmt(values[k]) for k in ends) + " is at +-inf"
                       if ends else "two of its thresholds coincide")
                    + " (no effect on the reported rows: it gives those scores with probability 0)",
                    "use thresholds='shared', or merge the unused categories", rows=(), judge=str(lab)))
    if thresholds == "shared" and len(judge_labels) > 2:
        out += _partition_separation(counts, judge_labels, values, {f.judge for f in out})
    return out


def unanimous(category: np.ndarray, scenario: np.ndarray) -> bool:
    """True when every scenario's rows are all in one category: then the scenario effects separate the data
    (s_a -> inf) and no within-scenario contrast identifies a judge offset or a threshold spacing."""
    category = np.asarray(category, dtype=np.int64)
    scenario = np.asarray(scenario, dtype=np.int64)
    n = int(scenario.max()) + 1 if scenario.size else 0
    lo = np.full(n, np.iinfo(np.int64).max)
    hi = np.full(n, -1)
    np.minimum.at(lo, scenario, category)
    np.maximum.at(hi, scenario, category)
    seen = hi >= 0
    return bool(seen.any() and np.all(lo[seen] == hi[seen]))


def singular(hessian: np.ndarray, free: np.ndarray, names: Sequence[str], *, rel: float = 1e-9,
             loading: float = 0.3) -> list[str]:
    """The names of the parameters (of the optimiser's vector, ``names[i]`` for entry i) that load (|v_i| >
    ``loading``) on a direction where the observed information on the ``free`` entries is not positive (an
    eigenvalue <= ``rel`` x the largest): the likelihood is flat or not maximal there."""
    h = np.asarray(hessian, dtype=np.float64)
    free = np.asarray(free, dtype=np.int64)
    if free.size == 0 or not np.all(np.isfinite(h)):
        return []
    w, v = np.linalg.eigh(0.5 * (h[np.ix_(free, free)] + h[np.ix_(free, free)].T))
    bad = w <= rel * max(float(w[-1]), 0.0)
    if not bad.any():
        return []
    hit = np.any(np.abs(v[:, bad]) > loading, axis=1)
    return list(dict.fromkeys(names[int(free[i])] for i in np.flatnonzero(hit)))


def _partition_separation(counts: np.ndarray, judge_labels: Sequence[str], values: np.ndarray,
                           done: set[Any]) -> list[Finding]:
    """Quasi-complete separation between two groups of judges (shared thresholds): a category t such that every
    judge of one group H scores >= t, every other judge <= t, and each group has a judge that uses more than t
    alone. Moving theta_t (the threshold above t) and the offsets of H up together raises every factor of the
    likelihood, so gamma_H - gamma_L runs to +inf: no judge offset is identified (a judge alone in one extreme
    category is the special case that the fit handles exactly, by leaving its rows out)."""
    used = counts > 0
    rows = [j for j in range(counts.shape[0]) if used[j].any() and str(judge_labels[j]) not in done]
    if len(rows) < 2:
        return []
    lo = np.array([int(np.flatnonzero(used[j])[0]) for j in rows])
    hi = np.array([int(np.flatnonzero(used[j])[-1]) for j in rows])
    for t in range(counts.shape[1]):
        high, low = lo >= t, hi <= t
        if np.all(high | low) and (high & ~low).any() and (low & ~high).any():
            grp = [str(judge_labels[rows[i]]) for i in np.flatnonzero(high & ~low)]
            rest = [str(judge_labels[rows[i]]) for i in np.flatnonzero(~high)]
            return [Finding(
                f"gamma[{g}]",
                f"judge{'s' if len(grp) > 1 else ''} {', '.join(repr(x) for x in grp)} never score{'' if len(grp) > 1 else 's'} "
                f"below {_fmt(values[t])} and judge{'s' if len(rest) > 1 else ''} {', '.join(repr(x) for x in rest)} "
                f"never above it: quasi-complete separation, so the offsets of the first group run to +inf against "
                f"the others and no judge offset is identified",
                f"merge {_fmt(values[t])} with the category above it, drop "
                f"{'those judges' if len(grp) > 1 else 'that judge'}, or use method='bayes' (prior-driven offsets)",
                rows=("judge_panel", "judge_population"), judge=None) for g in grp]
    return []


def too_few_scenarios(n_scenarios_per_model: Sequence[int], models: Sequence[str], *,
                      component: str = "model_scenario") -> list[Finding]:
    """Per-model variance findings: a model seen on fewer than two scenarios has no identified variance of its
    own model x scenario effects (one effect is confounded with the model's mean)."""
    out = []
    for n, lab in zip(n_scenarios_per_model, models):
        if int(n) < 2:
            out.append(Finding(
                f"{component}[{lab}]",
                f"model '{lab}' is scored on {int(n)} scenario{'s' if int(n) != 1 else ''}: its own model x scenario "
                f"variance needs at least two (its one scenario effect is confounded with its mean)",
                "use model_scenario='pooled', or score the model on more scenarios",
                rows=(component,)))
    return out


def run_off(names: Sequence[str], x: np.ndarray, se: np.ndarray, *, upper: dict[str, float] | None = None,
            rows: dict[str, tuple[str, ...]] | None = None, se_limit: float = SE_LIMIT,
            fix: str = "") -> list[Finding]:
    """After-fit findings: parameter ``names[i]`` at the upper end of its search range (``upper[name]``, e.g.
    log s_a's bound) or with a standard error ``se[i]`` above ``se_limit`` (or not finite): the likelihood is flat
    or still rising in its direction, so no finite estimate is supported. ``rows`` maps a name to the component
    rows it makes unidentified."""
    upper = upper or {}
    rows = rows or {}
    out = []
    for name, xi, si in zip(names, np.asarray(x, dtype=np.float64), np.asarray(se, dtype=np.float64)):
        if name in upper and xi >= upper[name] - 1e-6:
            out.append(Finding(name, f"{name} ran to the upper end of its search range (the likelihood keeps rising: "
                                     f"e.g. every scenario's scores agree, so the variance between scenarios is "
                                     f"unbounded)", fix, rows=rows.get(name, ()), limit=math.inf))
        elif not (np.isfinite(si) and si <= se_limit):
            out.append(Finding(name, f"the information about {name} is numerically singular (standard error "
                                     f"{si:.3g} latent units): the data do not pin it down",
                               fix, rows=rows.get(name, ())))
    return out


def mark(rows: Iterable[Any], findings: Sequence[Finding]) -> list[Any]:
    """The component rows with every row a finding names turned into a row without a number (estimate and
    bounds NaN, ``identifiable=False``, the reasons in its note)."""
    why: dict[str, list[str]] = {}
    for f in findings:
        for r in f.rows:
            why.setdefault(r, []).append(f.reason)
    out = []
    for r in rows:
        if r.component in why:
            note = "not identified: " + "; ".join(dict.fromkeys(why[r.component]))
            r = replace(r, estimate=math.nan, lower=math.nan, upper=math.nan, std_error=math.nan,
                        raw_estimate=math.nan, identifiable=False, at_boundary=False, note=note)
        out.append(r)
    return out


def prior_driven(rows: Iterable[Any], findings: Sequence[Finding]) -> list[Any]:
    """For a Bayesian fit, whose priors keep an unidentified parameter finite: the rows a finding names keep their
    posterior numbers, with a note that they are driven by the prior, not by the data."""
    why: dict[str, list[str]] = {}
    for f in findings:
        for r in f.rows:
            why.setdefault(r, []).append(f.parameter)
    return [replace(r, note=(r.note + "; " if r.note else "") + "prior-driven: the data do not identify "
                    + ", ".join(dict.fromkeys(why[r.component])) + " (separation)") if r.component in why else r
            for r in rows]


def warn_findings(findings: Sequence[Finding], unit: str, *, stacklevel: int = 3,
                  consequence: str = "no number is reported for what depends on it") -> None:
    """One warning for the findings of one unit: each parameter, its reason, and the fix."""
    if not findings:
        return
    parts = [f"{f.parameter}: {f.reason}; {f.fix}" for f in findings]
    warn(f"{unit}: {len(findings)} parameter{'s are' if len(findings) > 1 else ' is'} not identified by the data "
         f"({consequence}). " + " | ".join(parts), IdentificationWarning, stacklevel=stacklevel)


def as_records(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """Plain-data form for a fit's diagnostics (``diagnostics[unit]["identification"]``)."""
    return [{k: (v if not isinstance(v, tuple) else list(v)) for k, v in asdict(f).items()} for f in findings]
