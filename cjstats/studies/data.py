r"""Known-truth score tables for simulation studies: the truth, the design, and the data they generate.

The data follow the paper's model (Eq. 1, ``eq:model``), one analysis group (model, or model x criterion) at a
time, built on :func:`cjstats.studies.simulate.simulate_array`:

    X_ijl = mu + alpha_i + beta_ij + gamma_l + (alpha gamma)_il + eps_ijl,
    alpha_i ~ N(0, s2_scenario), beta_ij ~ N(0, s2_generation), (alpha gamma)_il ~ N(0, s2_scenario_judge),
    eps_ijl ~ N(0, s2_residual),

with the scenario x judge interaction (alpha gamma)_il (docs/scenario-judge.md, ``scenario_judge``: judge l's own deviation
on scenario i, shared by the generations of the scenario) a component of the truth like the others, 0 unless a
group gives it: the paper's model is the case s2_scenario_judge = 0.

Judges are either a fixed panel (``judges="panel"``: the offsets of :func:`cjstats.studies.simulate.panel_offsets`,
the same in every replicate, with mean(gamma_l^2) = judge_panel) or redrawn per replicate from a population
(``judges="population"``: u_l ~ N(0, judge_population), centred over the panel). The truth a replicate's
estimates are compared with is that replicate's own (see :func:`simulate_scores`).

Misspecifications (:data:`MISSPECIFICATIONS`), each a named option with one stated parameter:

==========================  =================================================================================
``scenario_judge``          variance s2 > 0 of the scenario x judge interaction: sets the truth's
                            ``scenario_judge`` of every group to s2 (replacing the group's own value). Not a
                            break of the model the backends fit by default (they fit the term where it is
                            identifiable), but of the paper's model, ``scenario_judge=False``, which lacks it
``judge_model``             variance s2 of a judge x model interaction: model p's offsets are
                            gamma_l + d_lp, d_lp ~ N(0, s2), redrawn per replicate (the truth judge_panel of
                            each model is then its own realised mean of squared centred offsets)
``t_df``                    degrees of freedom nu > 2 of Student-t residuals, scaled to variance s2_residual
``judge_residual_ratio``    ratio r >= 1 of the largest to the smallest judge residual variance; the K
                            variances are geometric steps between them with mean s2_residual
``ordinal``                 number of scale points J (5 or 10): the latent score is rounded and cut to 1..J
``unequal_generations``     the fewest generations a scenario can have, 1 <= m_min < m: scenario i keeps m_i
                            generations, m_i uniform on m_min..m
``mcar``                    probability q in [0, 1) that a judge call is lost, independently of everything
``mnar``                    overall share q in (0, 0.5] of lost calls, with P(lost) = 2 q Phi(-z), z the
                            call's standardised score: low scores are lost more often
==========================  =================================================================================

The truth is not changed by a misspecification (except ``judge_model`` and ``scenario_judge``, see above): the
study then shows what the estimators make of data that break the model.

The truth of the ``scenario_judge`` row is s2_scenario_judge and that of ``residual`` the within-cell residual
s2_residual, whenever the term is identifiable in the replicate's data (some judge scored two generations of
one scenario; the backends' ``scenario_judge="auto"`` rule). Where it is not (m = 1, or a schedule that never
gives a judge two generations of a scenario) the ``scenario_judge`` truth is NaN and ``residual``'s is
s2_residual + s2_scenario_judge, what the residual of any fit then holds (as ``scenario`` holds
s2_scenario + s2_generation at m = 1). The truth belongs to the data, not to the method: a fit of the paper's
model (``scenario_judge=False``) is compared with the same within-cell residual, and its ``scenario_judge`` row
(not fitted, NaN) is left out of the measures.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats._validate import check_choice, check_positive_int
from cjstats._warnings import warn
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io.scores import Scores
from cjstats.studies.simulate import TABLE3_MTBENCH, panel_offsets, simulate_array

__all__ = ["MISSPECIFICATIONS", "STRATEGIES", "Truth", "Design", "design_grid", "simulate_scores",
           "simulate_replicate", "fingerprint"]

Judges = Literal["panel", "population"]
Strategy = Literal["all", "random", "cyclic"]

#: Strategy names: A = every judge scores every generation, B = k judges at random, C = the cyclic rotation.
STRATEGIES: dict[str, str] = {"all": "A", "random": "B", "cyclic": "C"}

#: Misspecification name -> what its parameter is (see the module docstring).
MISSPECIFICATIONS: dict[str, str] = {
    "scenario_judge": "variance of a scenario x judge interaction (> 0)",
    "judge_model": "variance of a judge x model interaction (> 0)",
    "t_df": "degrees of freedom of t residuals (> 2)",
    "judge_residual_ratio": "largest / smallest judge residual variance (>= 1)",
    "ordinal": "number of scale points (5 or 10)",
    "unequal_generations": "fewest generations per scenario (1 <= value < m)",
    "mcar": "probability a judge call is lost at random (0 <= value < 1)",
    "mnar": "overall share of lost calls, low scores lost more (0 < value <= 0.5)",
}

_VARIANCES = ("scenario", "generation", "residual")
#: Components a group may leave out, and their default.
_OPTIONAL = {"scenario_judge": 0.0}
#: Table 3 reports judge_panel at K_tot = 5; the population variance with E[mean(u_c^2)] = judge_panel there.
_TABLE3_K = 5


# -------------------------------------------------------------------------------------------------- truth
def _check_group(name: str, comp: Mapping[str, Any], judges: str) -> dict[str, float]:
    judge_key = "judge_panel" if judges == "panel" else "judge_population"
    need = ("mu", *_VARIANCES, judge_key)
    missing = [c for c in need if c not in comp]
    if missing:
        raise CjstatsError(f"The truth of group '{name}' has no component '{missing[0]}' (judges='{judges}' needs "
                           f"{', '.join(need)}); add it.")
    unknown = sorted(set(comp) - {*need, *_OPTIONAL, "judge_panel", "judge_population"})
    if unknown:
        raise CjstatsError(f"The truth of group '{name}' has an unknown component '{unknown[0]}' (components: "
                           f"{', '.join((*need, *_OPTIONAL))}); remove it or fix its name.")
    out = {}
    for c in (*need, *_OPTIONAL):
        v = comp.get(c, _OPTIONAL.get(c))
        if isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(float(v)):
            raise CjstatsError(f"The truth of group '{name}' has component '{c}' = {v!r}; give a finite number.")
        if c != "mu" and float(v) < 0:
            raise CjstatsError(f"The truth of group '{name}' has a negative variance '{c}' = {v!r}; variances "
                               f"must be >= 0.")
        out[c] = float(v)
    return out


@dataclass(frozen=True, slots=True)
class Truth:
    """True components of every analysis group, and how the judges are drawn.

    Attributes
    ----------
    groups : Mapping[str, Mapping[str, float]]
        Model name -> ``{mu, scenario, generation, residual, judge_panel}`` (``judge_population`` instead
        when ``judges="population"``), and optionally ``scenario_judge``, the variance of the scenario x judge
        interaction (default 0, the paper's model). Variances are per observation, as in the paper's Table 3.
    judges : {"panel", "population"}
        A fixed panel of offsets with mean(gamma^2) = judge_panel, the same in every replicate; or offsets
        redrawn per replicate, u_l ~ N(0, judge_population), centred over the panel.
    criteria : tuple of str or None
        When given, every model is simulated under each criterion independently (a ``criterion`` column).

    Examples
    --------
    >>> import cjstats as cj
    >>> cj.Truth.table3(["GPT"]).groups["GPT"]["residual"]
    0.564
    """

    groups: Mapping[str, Mapping[str, float]]
    judges: Judges = "panel"
    criteria: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        check_choice("judges", self.judges, ("panel", "population"), caller="Truth")
        if not isinstance(self.groups, Mapping) or not self.groups:
            raise CjstatsError("The 'groups' argument of Truth must be a non-empty mapping of model name to "
                               "components, such as {'m': {'mu': 7, 'scenario': 1, ...}}.")
        checked = {str(k): MappingProxyType(_check_group(str(k), v, self.judges)) for k, v in self.groups.items()}
        object.__setattr__(self, "groups", MappingProxyType(checked))
        if self.criteria is not None:
            crit = tuple(str(c) for c in self.criteria)
            if not crit or len(set(crit)) != len(crit):
                raise CjstatsError(f"The 'criteria' argument of Truth must name distinct criteria. Got "
                                   f"{self.criteria!r} instead.")
            object.__setattr__(self, "criteria", crit)

    @classmethod
    def table3(cls, models: Sequence[str] | None = None, *, judges: Judges = "panel",
               criteria: Sequence[str] | None = None) -> Truth:
        """The paper's Table 3 (a), MT-Bench (n = 80, m = 10, K = 5), for some or all of its five models.

        With ``judges="population"`` the population variance is judge_panel K/(K - 1) at Table 3's K = 5,
        so that a panel of 5 drawn from it has E[mean(gamma^2)] = judge_panel.
        """
        names = list(TABLE3_MTBENCH) if models is None else [str(m) for m in models]
        unknown = [m for m in names if m not in TABLE3_MTBENCH]
        if unknown:
            raise CjstatsError(f"The 'models' argument of Truth.table3 names '{unknown[0]}', which is not in "
                               f"Table 3 (models: {', '.join(TABLE3_MTBENCH)}).")
        groups = {}
        for m in names:
            c = dict(TABLE3_MTBENCH[m])
            if judges == "population":
                c["judge_population"] = c.pop("judge_panel") * _TABLE3_K / (_TABLE3_K - 1)
            groups[m] = c
        return cls(groups, judges=judges, criteria=None if criteria is None else tuple(criteria))

    @classmethod
    def from_components(cls, fit: Any, *, judges: Judges = "panel") -> Truth:
        """The estimates of a fitted :class:`~cjstats.VarianceComponents` as the truth ("more data like mine").

        Each (model, [criterion]) group becomes a group of the truth (named ``"model / criterion"`` when the
        fit has criteria). A component the fit has no estimate of is simulated as 0, with a warning:
        ``generation`` with m = 1 (the scenario component then already holds sigma2_alpha + sigma2_beta) and
        ``scenario_judge`` where it was not identifiable or not fitted (the residual then already holds it).
        """
        from cjstats.results.components import VarianceComponents

        if not isinstance(fit, VarianceComponents):
            raise CjstatsError(f"Truth.from_components takes a VarianceComponents (from cj.estimate). Got "
                               f"{type(fit).__name__} instead.")
        check_choice("judges", judges, ("panel", "population"), caller="Truth.from_components")
        t = fit.components
        keys = ["model", "criterion"] if fit.has_criterion else ["model"]
        groups: dict[str, dict[str, float]] = {}
        unidentified: set[str] = set()
        for key, rows in t.groupby(keys, sort=False):
            key = key if isinstance(key, tuple) else (key,)
            name = " / ".join(str(k) for k in key)
            est = dict(zip(rows["component"], rows["estimate"].astype(float)))
            comp = {}
            for c in ("mu", *_VARIANCES, *_OPTIONAL, "judge_panel" if judges == "panel" else "judge_population"):
                v = est.get(c, float("nan"))
                if not math.isfinite(v):
                    unidentified.add(c)
                    v = 0.0
                comp[c] = v
            groups[name] = comp
        if unidentified:
            warn(f"The fit could not estimate {', '.join(sorted(unidentified))}; simulating "
                 f"{'them' if len(unidentified) > 1 else 'it'} as 0.", CjstatsWarning, stacklevel=2)
        return cls(groups, judges=judges)

    def __reduce__(self) -> tuple[Any, ...]:  # mapping proxies do not pickle; rebuild from plain dicts
        return (Truth.from_dict, (self.to_dict(),))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (also the study fingerprint's input)."""
        return {"groups": {k: dict(v) for k, v in self.groups.items()}, "judges": self.judges,
                "criteria": None if self.criteria is None else list(self.criteria)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Truth:
        """Inverse of :meth:`to_dict`; also reads a plain ``{model: {component: value}}`` mapping."""
        if "groups" in d:
            return cls(d["groups"], judges=d.get("judges", "panel"), criteria=d.get("criteria"))
        judges = "population" if any("judge_population" in v and "judge_panel" not in v
                                     for v in d.values() if isinstance(v, Mapping)) else "panel"
        return cls(dict(d), judges=judges)


# -------------------------------------------------------------------------------------------------- design
def check_misspec(misspec: Mapping[str, Any] | None, m: int, caller: str) -> dict[str, float]:
    if misspec is None:
        return {}
    if not isinstance(misspec, Mapping):
        raise CjstatsError(f"The 'misspec' argument of {caller} must be a mapping such as {{'mcar': 0.1}}. "
                           f"Got {misspec!r} instead.")
    out: dict[str, float] = {}
    for name, value in misspec.items():
        if name not in MISSPECIFICATIONS:
            known = ", ".join(f"'{k}'" for k in MISSPECIFICATIONS)
            raise CjstatsError(f"The 'misspec' argument of {caller} names '{name}', which is not a "
                               f"misspecification (known: {known}).")
        ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value))
        v = float(value) if ok else float("nan")
        ok = ok and {
            "scenario_judge": v > 0, "judge_model": v > 0, "t_df": v > 2, "judge_residual_ratio": v >= 1,
            "ordinal": v in (5.0, 10.0), "unequal_generations": float(v).is_integer() and 1 <= v < m,
            "mcar": 0 <= v < 1, "mnar": 0 < v <= 0.5,
        }[name]
        if not ok:
            raise CjstatsError(f"The misspecification '{name}' of {caller} takes the {MISSPECIFICATIONS[name]}. "
                               f"Got {value!r} instead.")
        out[name] = v
    if "mcar" in out and "mnar" in out:
        raise CjstatsError(f"The 'misspec' argument of {caller} gives both 'mcar' and 'mnar'; choose one "
                           f"missingness mechanism.")
    return out


@dataclass(frozen=True, slots=True)
class Design:
    """One design of a simulation study.

    Attributes
    ----------
    n, m, k : int
        Scenarios, generations per scenario, and judges in the panel (K_tot >= 2).
    k_per_item : int or None
        Judges that score each generation (default: all k). Strategy ``"all"`` needs k_per_item = k.
    strategy : {"all", "random", "cyclic"}
        The paper's strategies A (every judge), B (k_per_item judges drawn at random per generation,
        :func:`cjstats.random_schedule`) and C (the rotation of :func:`cjstats.cyclic_schedule`, reshuffled in
        every replicate).
    schedule : DataFrame or None
        An explicit schedule (``scenario, generation, judge``, e.g. from :func:`cjstats.cyclic_schedule`),
        used as given in every replicate; n, m and k are then read from it.
    misspec : Mapping[str, float]
        Misspecifications and their parameters (:data:`MISSPECIFICATIONS`).
    label : str
        A short name for tables; built from the other fields when not given.
    """

    n: int = 0
    m: int = 1
    k: int = 0
    k_per_item: int | None = None
    strategy: Strategy = "all"
    schedule: pd.DataFrame | None = field(default=None, compare=False)
    misspec: Mapping[str, float] = field(default_factory=dict)
    label: str = ""

    def __post_init__(self) -> None:
        caller = "Design"
        if self.schedule is not None:
            s = self.schedule
            if not isinstance(s, pd.DataFrame) or not {"scenario", "judge"} <= set(s.columns):
                raise CjstatsError("The 'schedule' argument of Design must be a DataFrame with columns scenario, "
                                   "[generation,] judge, such as cj.cyclic_schedule(80, 5).")
            gen = s["generation"] if "generation" in s.columns else pd.Series(0, index=s.index)
            per_item = s.assign(generation=gen).groupby(["scenario", "generation"]).size()
            object.__setattr__(self, "n", int(s["scenario"].nunique()))
            object.__setattr__(self, "m", int(gen.groupby(s["scenario"]).nunique().max()))
            object.__setattr__(self, "k", int(s["judge"].nunique()))
            object.__setattr__(self, "k_per_item", int(per_item.max()))
            object.__setattr__(self, "strategy", "schedule")
        n = check_positive_int("n", self.n, caller=caller, minimum=2)
        m = check_positive_int("m", self.m, caller=caller)
        k = check_positive_int("k", self.k, caller=caller, minimum=2)
        kpi = k if self.k_per_item is None else check_positive_int("k_per_item", self.k_per_item, caller=caller)
        if kpi > k:
            raise CjstatsError(f"The 'k_per_item' argument of Design must be at most the panel size k={k}. "
                               f"Got {kpi} instead.")
        if self.schedule is None:
            check_choice("strategy", self.strategy, STRATEGIES, caller=caller)
            if self.strategy == "all" and kpi != k:
                raise CjstatsError(f"The 'strategy' argument of Design is 'all' (every judge scores every "
                                   f"generation), so k_per_item must equal k={k}. Got {kpi}; use strategy='cyclic' "
                                   f"or 'random'.")
        miss = check_misspec(self.misspec, m, caller)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "m", m)
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "k_per_item", kpi)
        object.__setattr__(self, "misspec", MappingProxyType(miss))
        if not self.label:
            parts = [f"n={n}", f"m={m}", f"K={k}"]
            if kpi != k or self.strategy != "all":
                parts.append(f"k={kpi} {self.strategy}")
            parts += [f"{a}={_num(b)}" for a, b in miss.items()]
            object.__setattr__(self, "label", " ".join(parts))

    @classmethod
    def coerce(cls, value: Design | Mapping[str, Any], *, caller: str) -> Design:
        """A Design from a Design or a mapping of its fields."""
        if isinstance(value, Design):
            return value
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - set(cls.__dataclass_fields__))
            if unknown:
                raise CjstatsError(f"A design given to {caller} has an unknown field '{unknown[0]}' (fields: "
                                   f"{', '.join(cls.__dataclass_fields__)}).")
            return cls(**value)
        raise CjstatsError(f"Each design given to {caller} must be a cj.Design or a mapping such as "
                           f"{{'n': 80, 'm': 1, 'k': 5}}. Got {type(value).__name__} instead.")

    def __reduce__(self) -> tuple[Any, ...]:  # mapping proxies do not pickle; rebuild from plain values
        strategy = "all" if self.schedule is not None else self.strategy
        return (Design, (self.n, self.m, self.k, self.k_per_item, strategy, self.schedule, dict(self.misspec),
                         self.label))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (the schedule as a hash of its rows)."""
        sched = None
        if self.schedule is not None:
            sched = hashlib.sha256(pd.util.hash_pandas_object(self.schedule, index=False).to_numpy()
                                   .tobytes()).hexdigest()[:16]
        return {"n": self.n, "m": self.m, "k": self.k, "k_per_item": self.k_per_item, "strategy": self.strategy,
                "schedule": sched, "misspec": dict(self.misspec), "label": self.label}


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def design_grid(*, n: Iterable[int], m: Iterable[int] = (1,), k: Iterable[int] = (5,),
                k_per_item: Iterable[int | None] = (None,), strategy: Iterable[str] = ("all",),
                misspec: Iterable[Mapping[str, float] | None] = (None,)) -> list[Design]:
    """Every combination of the given design values, as a list of :class:`Design`.

    Examples
    --------
    >>> [d.label for d in design_grid(n=[20, 80], m=[1], k=[5])]
    ['n=20 m=1 K=5', 'n=80 m=1 K=5']
    """
    return [Design(n=a, m=b, k=c, k_per_item=d, strategy=e, misspec=f or {})
            for a, b, c, d, e, f in product(n, m, k, k_per_item, strategy, misspec)]


# ------------------------------------------------------------------------------------------------ drawing
def _offsets(truth: Truth, comp: Mapping[str, float], k: int, rng: np.random.Generator) -> np.ndarray:
    if truth.judges == "panel":
        return panel_offsets(k, comp["judge_panel"])
    u = rng.standard_normal(k) * math.sqrt(comp["judge_population"])
    return u - u.mean()


def _schedule_mask(design: Design, rng: np.random.Generator) -> np.ndarray | None:
    """(n, m, K) boolean mask of the judge calls the design makes (None: every call)."""
    from cjstats.decisions.schedules import cyclic_schedule, random_schedule

    if design.schedule is None and design.strategy == "all":
        return None
    if design.schedule is not None:
        sched = design.schedule
    elif design.strategy == "cyclic":
        sched = cyclic_schedule(design.n, design.k, generations=design.m, judges_per_generation=design.k_per_item,
                                seed=rng)
    else:
        sched = random_schedule(design.n, design.k, generations=design.m, judges_per_generation=design.k_per_item,
                                seed=rng)
    s = pd.factorize(sched["scenario"], sort=True)[0]
    g = pd.factorize(sched["generation"], sort=True)[0] if "generation" in sched.columns else np.zeros(len(sched), int)
    j = pd.factorize(sched["judge"].astype(str), sort=True)[0] if design.schedule is not None else \
        sched["judge"].str.slice(len("judge_")).astype(int).to_numpy()
    mask = np.zeros((design.n, design.m, design.k), dtype=bool)
    mask[s, g, j] = True
    return mask


def _judge_names(design: Design) -> np.ndarray:
    if design.schedule is not None:
        return np.asarray(sorted(design.schedule["judge"].astype(str).unique()), dtype=object)
    return np.asarray([f"judge_{i}" for i in range(design.k)], dtype=object)


def _draw_group(comp: Mapping[str, float], gamma: np.ndarray, design: Design, rng: np.random.Generator,
                keep: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Scores (n, m, K) of one group and the mask of calls kept (None: all)."""
    n, m, k, ms = design.n, design.m, design.k, design.misspec
    custom_errors = "t_df" in ms or "judge_residual_ratio" in ms
    y = simulate_array(n=n, m=m, k=k, s2_scenario=comp["scenario"], s2_generation=comp["generation"],
                       s2_residual=0.0 if custom_errors else comp["residual"], judge_offsets=gamma,
                       mu=comp["mu"], seed=rng)
    if custom_errors:
        if "t_df" in ms:
            nu = ms["t_df"]
            eps = rng.standard_t(nu, (n, m, k)) * math.sqrt((nu - 2) / nu)
        else:
            eps = rng.standard_normal((n, m, k))
        scale = np.full(k, comp["residual"])
        if "judge_residual_ratio" in ms:
            w = np.exp(np.linspace(-0.5, 0.5, k) * math.log(ms["judge_residual_ratio"]))
            scale = comp["residual"] * w / w.mean()
        y += eps * np.sqrt(scale)
    s2_sj = _scenario_judge(comp, design)
    if s2_sj > 0:  # drawn only when present, so that data without the term keep their seeds' values
        y += (rng.standard_normal((n, 1, k)) * math.sqrt(s2_sj))
    if "ordinal" in ms:
        y = np.clip(np.rint(y), 1, ms["ordinal"])
    if "mcar" in ms:
        lost = rng.random(y.shape) < ms["mcar"]
        keep = ~lost if keep is None else keep & ~lost
    elif "mnar" in ms:
        obs = y if keep is None else y[keep]
        sd = float(obs.std())
        z = (y - obs.mean()) / sd if sd > 0 else np.zeros_like(y)
        from scipy.special import ndtr

        lost = rng.random(y.shape) < 2 * ms["mnar"] * ndtr(-z)
        keep = ~lost if keep is None else keep & ~lost
    return y, keep


TruthRecords = list[tuple[tuple[str, str | None, str], float]]


def _scenario_judge(comp: Mapping[str, float], design: Design) -> float:
    """The variance of the scenario x judge interaction of a group: the design's misspecification, if it gives
    one, else the truth's own."""
    return float(design.misspec.get("scenario_judge", comp["scenario_judge"]))


def _sj_identifiable(m: int, keep: np.ndarray | None) -> bool:
    """Whether some judge scored two generations of one scenario (the backends' ``scenario_judge="auto"``)."""
    if m < 2:
        return False
    return keep is None or int(keep.sum(axis=1).max(initial=0)) >= 2


def simulate_replicate(truth: Truth, design: Design, rng: np.random.Generator) -> tuple[pd.DataFrame, TruthRecords]:
    """One replicate: the long score table and its truth, ``((model, criterion or None, component), value)``.

    The truth of ``judge_panel`` is the replicate's own mean(gamma_l^2) over the panel (centred offsets);
    ``judge_population`` is the population variance (judges="population") or, for a fixed panel, the panel's
    own variance sum(gamma_l^2)/(K - 1), what a random-judge estimator targets given that panel. With m = 1 the
    ``scenario`` truth is s2_scenario + s2_generation and ``generation`` has no truth (NaN), as the estimators
    report them. ``scenario_judge`` is the interaction's variance (the design's misspecification, else the
    truth's) and ``residual`` the within-cell s2_residual where the interaction is identifiable in the group's
    calls; elsewhere ``scenario_judge`` is NaN and ``residual`` s2_residual + s2_scenario_judge (module
    docstring).
    """
    frame, truths, _ = _simulate_replicate(truth, design, rng)
    return frame, truths


def _simulate_replicate(truth: Truth, design: Design, rng: np.random.Generator
                        ) -> tuple[pd.DataFrame, TruthRecords, dict[tuple[str, str | None], np.ndarray]]:
    """:func:`simulate_replicate`, and each group's judge offsets gamma_l (score scale), for the latent truth of
    :mod:`cjstats.studies.latent`."""
    n, m, k = design.n, design.m, design.k
    judges = _judge_names(design)
    base_keep = _schedule_mask(design, rng)
    if "unequal_generations" in design.misspec:
        m_i = rng.integers(int(design.misspec["unequal_generations"]), m + 1, size=n)
        gen_keep = np.broadcast_to((np.arange(m)[None, :] < m_i[:, None])[:, :, None], (n, m, k))
        base_keep = gen_keep.copy() if base_keep is None else base_keep & gen_keep
    frames, truths, offsets = [], [], {}
    i_idx, j_idx, l_idx = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(m), np.arange(k), indexing="ij"))
    groups = [(g, c) for g in truth.groups for c in (truth.criteria or (None,))]
    shared_gamma = {g: _offsets(truth, truth.groups[g], k, rng) for g in truth.groups}
    for model, crit in groups:
        comp = truth.groups[model]
        gamma = shared_gamma[model]
        if "judge_model" in design.misspec:
            d = rng.standard_normal(k) * math.sqrt(design.misspec["judge_model"])
            gamma = gamma + d - d.mean()
        y, keep = _draw_group(comp, gamma, design, rng, None if base_keep is None else base_keep.copy())
        flat_keep = slice(None) if keep is None else keep.ravel()
        cols: dict[str, Any] = {"model": model, "scenario": i_idx[flat_keep], "generation": j_idx[flat_keep],
                                "judge": judges[l_idx[flat_keep]]}
        if truth.criteria is not None:
            cols["criterion"] = crit
        cols["score"] = y.ravel()[flat_keep]
        frames.append(pd.DataFrame(cols))
        panel = float(np.mean(gamma**2))
        pop = comp["judge_population"] if truth.judges == "population" else panel * k / (k - 1)
        s2_sj = _scenario_judge(comp, design)
        sj_ok = _sj_identifiable(m, keep)
        t = {"mu": comp["mu"], "scenario": comp["scenario"] + (comp["generation"] if m == 1 else 0.0),
             "generation": comp["generation"] if m > 1 else float("nan"),
             "scenario_judge": s2_sj if sj_ok else float("nan"),
             "residual": comp["residual"] + (0.0 if sj_ok else s2_sj),
             "judge_panel": panel, "judge_population": pop}
        truths.extend(((model, crit, c), v) for c, v in t.items())
        offsets[(model, crit)] = gamma
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    return frame, truths, offsets


def _truth_frame(truths: TruthRecords, has_criterion: bool) -> pd.DataFrame:
    """The truth records of :func:`simulate_replicate` as a table: model, [criterion], component, truth."""
    data: dict[str, Any] = {"model": [k[0] for k, _ in truths]}
    if has_criterion:
        data["criterion"] = [k[1] for k, _ in truths]
    data["component"] = [k[2] for k, _ in truths]
    data["truth"] = np.array([v for _, v in truths], dtype=np.float64)
    return pd.DataFrame(data)


def _as_scores(frame: pd.DataFrame, truth_frame: pd.DataFrame, design: Design, seed: Any) -> Scores:
    """Wrap a generated table as Scores without re-validating it (it is canonical by construction)."""
    return Scores(frame, provenance={"source": "cjstats.simulate_scores", "design": design.label,
                                     "seed": seed, "truth": truth_frame})


def simulate_scores(truth: Truth, *, n: int | None = None, m: int = 1, k: int | None = None,
                    k_per_item: int | None = None, strategy: Strategy = "all", schedule: pd.DataFrame | None = None,
                    misspec: Mapping[str, float] | None = None,
                    seed: int | np.random.Generator | np.random.SeedSequence | None = None) -> Scores:
    """A score table drawn from known components: the data-generating layer of simulation studies.

    Parameters
    ----------
    truth : Truth
        True components per group and the judge view (fixed panel or population); e.g.
        ``Truth.table3()`` (the paper's Table 3) or ``Truth.from_components(fit)``.
    n, m, k : int
        Scenarios, generations per scenario and judges in the panel (K_tot >= 2). Not needed with ``schedule``.
    k_per_item : int, optional
        Judges per generation (default k).
    strategy : {"all", "random", "cyclic"}
        The paper's strategy A, B or C (see :class:`Design`).
    schedule : DataFrame, optional
        An explicit schedule (``scenario, generation, judge``) used instead of a strategy.
    misspec : mapping, optional
        Misspecifications and their parameters, e.g. ``{"ordinal": 10, "mcar": 0.1}``
        (see :data:`MISSPECIFICATIONS` and the module docstring).
    seed : int, Generator or SeedSequence, optional
        The same seed gives the same table.

    Returns
    -------
    Scores
        The long table (``model, [criterion], scenario, generation, judge, score``; judges ``judge_0..``);
        ``provenance["truth"]`` holds the replicate's truth, one row per group x component.

    Examples
    --------
    >>> import cjstats as cj
    >>> s = cj.simulate_scores(cj.Truth.table3(["GPT"]), n=10, m=2, k=3, seed=1)
    >>> len(s)
    60
    """
    if not isinstance(truth, Truth):
        raise CjstatsError(f"The 'truth' argument of simulate_scores must be a cj.Truth (e.g. cj.Truth.table3()). "
                           f"Got {type(truth).__name__} instead.")
    design = Design(n=n or 0, m=m, k=k or 0, k_per_item=k_per_item, strategy=strategy, schedule=schedule,
                    misspec=misspec or {})
    rng = np.random.default_rng(seed)
    frame, truths = simulate_replicate(truth, design, rng)
    recorded_seed = seed if isinstance(seed, (Integral, type(None))) else "generator"
    return _as_scores(frame, _truth_frame(truths, truth.criteria is not None), design, recorded_seed)


def fingerprint(obj: Any) -> str:
    """A short stable hash of a JSON-ready object."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]
