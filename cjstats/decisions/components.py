"""The decision layer's components vector and the one registry of term contributions.

The variance of a benchmark score under a design is a sum over the model's variance terms,

    Var = Σ_term  σ²_term × c_term(design),

one coefficient per term. :class:`Components` is the vector of σ²_term (keyed by estimand names of
:data:`cjstats.results.estimands.ESTIMANDS`, with its ``scale`` and its ``conditioning``); :class:`VarianceDesign` is
the layout (n scenarios, m generations, k judges per generation, the K_tot-judge panel, how the judges are
chosen, the per-scenario budget); :data:`TERM_CONTRIBUTIONS` holds each term's coefficient, and
:func:`score_variance` is the dot product. The paper's functions in :mod:`cjstats.decisions.formulas`
(:func:`~cjstats.decisions.formulas.grand_mean_variance`, :func:`~cjstats.decisions.formulas.strategy_variance`,
:func:`~cjstats.decisions.formulas.design_variance`, ...) are thin wrappers over it. A new term of the model is
one :func:`register_contribution` call (its name registered as an estimand first): it then enters every
wrapper's generic path and every design.

Each term declares its coefficient in two parts: the part **conditional** on the chosen scenarios (and, for the
scenario x judge interaction, on their interaction effects for every panel judge: the target is then the full
panel's mean on those scenarios, the paper's view of App. D, ``app:allocation``), and the part a **resampled**
scenario set adds (the target is mu). A vector with ``conditioning="scenarios"`` uses the first part only;
``conditioning="unconditional"`` uses their sum.

Designs (``scheme``), with B calls per scenario and T = nB calls in all:

* ``"fixed"``: the same k-subset (a simple random sample of the panel) scores every generation: Proposition 1
  (Eq. 2, ``eq:variance``);
* ``"random"``: a fresh random k-subset for every generation (k = 1 and m = B: strategy B, Eq. 4,
  ``eq:strat_rand``);
* ``"cyclic"``: k consecutive judges of one rotation across all T = nmk calls, over a seeded shuffle of the
  scenarios and judges (k = 1 and m = B: CyclicJudge, strategy C, Eq. 5, ``eq:strat_cycle``; k = K_tot: Eq. 3
  at multiples of K_tot);
* ``"all"``: strategy A (Eq. 3, ``eq:strat_all``) with ``budget`` = B calls per scenario: q = B // K_tot
  generations scored by every judge, plus (if r = B mod K_tot > 0) one generation scored by r judges taken
  from a rotation across the scenarios.

The coefficients (module docstring of :mod:`cjstats.decisions.formulas` for the derivations of the leftover
term V_left and of the interaction's Σ_il w_il²):

============== ================= ============================ ============================================
term           scheme            conditional part              resampled part
============== ================= ============================ ============================================
scenario       every             0                            1/n
generation     all               (q K_tot² + r²)/(n B²)       0
generation     fixed/random/cyc  1/(nm)                       0
residual       every             1/(nB) = 1/(nmk)             0
judge_panel    fixed             FPC(k)/k                     0
judge_panel    random            FPC(k)/(k nm)                0
judge_panel    cyclic, all       R (K_tot − R)/((K_tot − 1) T²), R = T mod K_tot (V_left / σ²_γ)
scenario_judge fixed             (K_tot − k)/(K_tot k n)      1/(n K_tot)
scenario_judge random            (K_tot − k)/(K_tot n m k)    1/(n K_tot)
scenario_judge cyclic, all       r (K_tot − r)/(K_tot B² n)   1/(n K_tot)   (r = B mod K_tot)
model_scenario every             0                            1/n   (joint model: (αp)_pi, like α_i)
judge_model    every             the judge_panel coefficient  0     (joint model: (γp)_pl, like γ_l)
============== ================= ============================ ============================================

FPC(k) = (K_tot − k)/(K_tot − 1) (Lemma 1, Eq. 12, ``lem:fpc``; 0 for a one-judge panel).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from cjstats._validate import check_choice, check_number, check_positive_int
from cjstats.exceptions import CjstatsError
from cjstats.results.estimands import ESTIMANDS, names as _estimand_names

__all__ = ["Components", "VarianceDesign", "Contribution", "TERM_CONTRIBUTIONS", "register_contribution", "SCHEMES",
           "SCALES", "CONDITIONINGS", "component_names", "single_model_terms", "term_coefficients", "term_variances", "score_variance"]

#: How the judges of a design are chosen (module docstring): the paper's strategies and the general assignments.
SCHEMES: tuple[str, ...] = ("all", "random", "cyclic", "fixed")

#: The scales of a components vector: the score scale, or the latent scale of an ordinal fit (no closed forms).
SCALES: tuple[str, ...] = ("score", "latent")

#: What a variance is conditional on: nothing (scenarios and their interaction effects resampled; the target is
#: mu), or the chosen scenario set (App. D, ``app:allocation``; the target is the full panel's mean on them).
CONDITIONINGS: tuple[str, ...] = ("unconditional", "scenarios")


# ------------------------------------------------------------------------------------------------ designs
def _int_array(name: str, x: Any, caller: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if not ((a >= 1).all() and (a == np.floor(a)).all()):
        raise CjstatsError(f"The '{name}' argument of {caller} must hold integers >= 1.")
    return a


@dataclass(frozen=True, eq=False)
class VarianceDesign:
    """A benchmark design: ``n`` scenarios, ``m`` generations per scenario and ``k`` judges per generation from a
    panel of ``k_total``, judges chosen by ``scheme`` (:data:`SCHEMES`); ``budget`` = B calls per scenario for
    ``scheme="all"`` (strategy A), else B = mk. ``n``, ``m``, ``k`` and ``budget`` may be arrays (they
    broadcast); after construction they are float arrays of one shape, and ``calls`` is B.
    """

    scheme: str
    n: Any
    k_total: int
    m: Any = 1
    k: Any = 1
    budget: Any = None

    def __post_init__(self) -> None:
        caller = "VarianceDesign"
        check_choice("scheme", self.scheme, SCHEMES, caller=caller)
        kt = check_positive_int("k_total", self.k_total, caller=caller)
        if self.scheme == "all":
            if self.budget is None:
                raise CjstatsError("The 'budget' argument of VarianceDesign is needed with scheme='all' (calls per scenario).")
            n, b = np.broadcast_arrays(_int_array("n", self.n, caller), _int_array("budget", self.budget, caller))
            m = np.ceil(b / kt)
            k = np.full_like(b, float(kt))
        else:
            n, m, k = np.broadcast_arrays(*(_int_array(name, x, caller)
                                            for name, x in (("n", self.n), ("m", self.m), ("k", self.k))))
            if (k > kt).any():
                raise CjstatsError(f"The 'k' argument of VarianceDesign must be at most k_total={kt}. Got "
                                   f"{int(k.max())} instead.")
            b = m * k
            if self.budget is not None and not np.array_equal(np.broadcast_to(np.asarray(self.budget, float),
                                                                              b.shape), b):
                raise CjstatsError("The 'budget' argument of VarianceDesign must equal m*k (calls per scenario) unless "
                                   "scheme='all'; leave it out.")
        for name, v in (("n", n), ("m", m), ("k", k), ("budget", b), ("k_total", kt)):
            object.__setattr__(self, name, v)

    @property
    def calls(self) -> np.ndarray:
        """B, the judge calls per scenario."""
        return self.budget


# ------------------------------------------------------------------------------------------ the registry
CoefficientFn = Callable[[VarianceDesign], np.ndarray]


@dataclass(frozen=True)
class Contribution:
    """One term's coefficient in the variance of a benchmark score: ``conditional(design)`` given the scenario
    set, plus ``resampled(design)`` when the scenarios are resampled (``None``: no such part)."""

    name: str
    conditional: CoefficientFn
    resampled: CoefficientFn | None = None

    def coefficient(self, design: VarianceDesign, conditioning: str = "unconditional") -> np.ndarray:
        c = self.conditional(design)
        if self.resampled is not None and conditioning == "unconditional":
            c = c + self.resampled(design)
        return c


#: The one registry of term contributions: estimand name -> :class:`Contribution`, in summation order.
TERM_CONTRIBUTIONS: dict[str, Contribution] = {}


def register_contribution(name: str, coefficient_fn: CoefficientFn, *,
                          resampled_fn: CoefficientFn | None = None) -> Contribution:
    """Register (or replace) a term's coefficient: ``coefficient_fn(design)`` given the scenarios and
    ``resampled_fn(design)`` the part a resampled scenario set adds. ``name`` must be a registered estimand
    (:func:`cjstats.results.estimands.register_estimand`)."""
    if name not in ESTIMANDS:
        raise CjstatsError(f"The 'name' argument of register_contribution must be a registered estimand (register "
                           f"it with cjstats.results.estimands.register_estimand first). Got {name!r} instead.")
    if not callable(coefficient_fn) or (resampled_fn is not None and not callable(resampled_fn)):
        raise CjstatsError(f"The coefficient functions passed to register_contribution for {name!r} must be "
                           f"callables taking a VarianceDesign and returning coefficients.")
    c = Contribution(name, coefficient_fn, resampled_fn)
    TERM_CONTRIBUTIONS[name] = c
    return c


def single_model_terms() -> tuple[str, ...]:
    """The registered terms of one model's score: every contribution except the joint model's own terms
    (estimands registered ``joint=True`` and not ``per_model``: ``model_scenario``, ``judge_model``), which only a
    comparison of several models reads (:mod:`cjstats.decisions.gstudy`). The paper's coefficient tables
    (:func:`~cjstats.decisions.formulas.strategy_coefficients`, :func:`~cjstats.decisions.formulas.design_coefficients`)
    list these."""
    return tuple(name for name in TERM_CONTRIBUTIONS
                 if not (ESTIMANDS[name].joint and not ESTIMANDS[name].per_model))


def component_names() -> tuple[str, ...]:
    """The names a :class:`Components` vector accepts: the registry's decision estimands, ``scenario_judge`` and
    every name with a registered contribution."""
    return tuple(dict.fromkeys([*_estimand_names(decision=True), "scenario_judge", *TERM_CONTRIBUTIONS]))


# ---------------------------------------------------------------------------------------- the vector
class Components(Mapping):
    """An immutable vector of variance components keyed by estimand name (:func:`component_names`).

    ``Components({"scenario": 1.53, "generation": 0.27, "residual": 1.49, "judge_panel": 0.95})``, or with
    keywords; a name left out is a term with no variance (it contributes nothing). ``scale`` is ``"score"`` or
    ``"latent"`` (an ordinal fit's, which the closed forms refuse); ``conditioning`` is ``"unconditional"``
    (scenarios resampled) or ``"scenarios"`` (conditional on the scenario set, App. D). Values must be finite
    and >= 0. Build one from a decision input with :meth:`from_group` or from a mapping with :meth:`from_mapping`.
    """

    __slots__ = ("_values", "scale", "conditioning")

    def __init__(self, values: Mapping[str, float] | None = None, /, *, scale: Literal["score", "latent"] = "score",
                 conditioning: Literal["unconditional", "scenarios"] = "unconditional", **more: float) -> None:
        caller = "Components"
        if values is not None and not isinstance(values, Mapping):
            raise CjstatsError(f"The values of {caller} must be a mapping of component names to variances, such as "
                               f"{{'scenario': 1.5, 'residual': 1.49}}. Got {type(values).__name__} instead.")
        check_choice("scale", scale, SCALES, caller=caller)
        check_choice("conditioning", conditioning, CONDITIONINGS, caller=caller)
        allowed = component_names()
        out: dict[str, float] = {}
        for name, v in [*(values or {}).items(), *more.items()]:
            if name not in allowed:
                raise CjstatsError(f"The component {name!r} of {caller} is not a decision estimand of "
                                   f"cjstats.results.estimands.ESTIMANDS; use one of {', '.join(allowed)}.")
            out[str(name)] = check_number(name, v, caller=caller, minimum=0.0)
        ordered = {name: out[name] for name in allowed if name in out}
        object.__setattr__(self, "_values", MappingProxyType(ordered))
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "conditioning", conditioning)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Components is immutable; build a new one (e.g. with .replace(...)).")

    def __getitem__(self, name: str) -> float:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Components):
            return NotImplemented
        return (dict(self._values) == dict(other._values) and self.scale == other.scale
                and self.conditioning == other.conditioning)

    def __hash__(self) -> int:
        return hash((tuple(self._values.items()), self.scale, self.conditioning))

    def __repr__(self) -> str:
        vals = ", ".join(f"{k}={v:g}" for k, v in self._values.items())
        return f"Components({vals}; scale={self.scale!r}, conditioning={self.conditioning!r})"

    def __reduce__(self):
        return (_rebuild, (dict(self._values), self.scale, self.conditioning))

    def replace(self, **changes: Any) -> Components:
        """A copy with some values, ``scale`` or ``conditioning`` changed."""
        scale = changes.pop("scale", self.scale)
        conditioning = changes.pop("conditioning", self.conditioning)
        return Components({**self._values, **changes}, scale=scale, conditioning=conditioning)

    @property
    def conditional(self) -> bool:
        """Whether the variance is conditional on the scenario set (``conditioning == "scenarios"``)."""
        return self.conditioning == "scenarios"

    @classmethod
    def from_mapping(cls, values: Mapping[str, float], *, scale: Literal["score", "latent"] = "score",
                     conditioning: Literal["unconditional", "scenarios"] = "unconditional") -> Components:
        """The vector of a plain mapping of component names to variances."""
        return cls(values, scale=scale, conditioning=conditioning)

    @classmethod
    def from_group(cls, group: Any, *, conditioning: Literal["unconditional", "scenarios"] = "unconditional",
                   unidentified: float | None = None) -> Components:
        """The vector of a :class:`~cjstats.decisions.inputs.GroupComponents` (its point estimates).

        A component that is not identifiable (NaN, as ``generation`` with one generation per scenario) is refused
        unless ``unidentified`` gives the value to plan with (e.g. 0.0: it is then inside ``residual``).
        """
        from cjstats.decisions.inputs import GroupComponents

        if not isinstance(group, GroupComponents):
            raise CjstatsError(f"The 'group' argument of Components.from_group must be a GroupComponents (from "
                               f"cjstats.decisions.inputs.group_components). Got {type(group).__name__} instead.")
        vals = {}
        for name, v in group.estimates.items():
            v = float(v)
            if math.isnan(v):
                if unidentified is None:
                    raise CjstatsError(f"The '{name}' component of this group is not identifiable (NaN); pass "
                                       f"unidentified=0.0 to Components.from_group to plan with it inside residual.")
                v = float(unidentified)
            vals[name] = v
        return cls(vals, scale="score", conditioning=conditioning)


    @classmethod
    def from_fit(cls, fit: Any, model: str | None = None, criterion: str | None = None, *,
                 conditioning: Literal["unconditional", "scenarios"] = "unconditional",
                 unidentified: float | None = None) -> Components:
        """The vector of one group of a fit: the paper's components (:meth:`from_group`) and every other
        component of the fit whose term has a registered contribution (:data:`TERM_CONTRIBUTIONS`), so a new term
        a backend fits flows into the decisions with no change here. A latent-scale fit gives a latent vector,
        which the closed forms refuse."""
        from cjstats.decisions.inputs import DECISION_COMPONENTS, group_components

        base = cls.from_group(group_components(fit, model, criterion), conditioning=conditioning,
                              unidentified=unidentified)
        t = fit.components
        g = group_components(fit, model, criterion)
        sel = (t["model"].astype(str) == str(g.model)) & t["identifiable"].astype(bool)
        if g.criterion is not None and "criterion" in t.columns:
            sel &= t["criterion"].astype(str) == str(g.criterion)
        extra = {str(r["component"]): float(r["estimate"]) for _, r in t[sel].iterrows()
                 if r["component"] in TERM_CONTRIBUTIONS and r["component"] not in DECISION_COMPONENTS}
        return cls({**dict(base), **extra}, scale=getattr(fit, "scale", "score"), conditioning=conditioning)


def _rebuild(values: dict[str, float], scale: str, conditioning: str) -> Components:
    return Components(values, scale=scale, conditioning=conditioning)


# ----------------------------------------------------------------------------------- the generic sums
def _check_design(design: Any, caller: str) -> VarianceDesign:
    if not isinstance(design, VarianceDesign):
        raise CjstatsError(f"The 'design' argument of {caller} must be a cjstats.decisions.components.VarianceDesign. Got "
                           f"{type(design).__name__} instead.")
    return design


def term_coefficients(design: VarianceDesign, *, conditioning: str = "unconditional",
                      terms: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """Each registered term's coefficient c_term(design) (arrays of the design's shape), in registry order."""
    caller = "term_coefficients"
    design = _check_design(design, caller)
    check_choice("conditioning", conditioning, CONDITIONINGS, caller=caller)
    names = tuple(TERM_CONTRIBUTIONS) if terms is None else terms
    out = {}
    for name in names:
        c = TERM_CONTRIBUTIONS[name].coefficient(design, conditioning)
        out[name] = np.broadcast_to(c, design.n.shape) if np.shape(c) != design.n.shape else c
    return out


def term_variances(components: Components, design: VarianceDesign) -> dict[str, np.ndarray]:
    """Each term's contribution σ²_term × c_term(design) for the terms the vector holds, in registry order."""
    caller = "term_variances"
    if not isinstance(components, Components):
        raise CjstatsError(f"The 'components' argument of {caller} must be a Components vector (build one with "
                           f"Components(...) or Components.from_group). Got {type(components).__name__} instead.")
    if components.scale != "score":
        raise CjstatsError(f"{caller} needs score-scale components, but these are on the latent scale (an ordinal "
                           f"fit); plan with cjstats.decisions.predictive instead.")
    design = _check_design(design, caller)
    missing = [name for name in components if name not in TERM_CONTRIBUTIONS]
    if missing:
        raise CjstatsError(f"The component {missing[0]!r} passed to {caller} has no registered contribution "
                           f"(register one with register_contribution).")
    return {name: TERM_CONTRIBUTIONS[name].coefficient(design, components.conditioning) * components[name]
            for name in TERM_CONTRIBUTIONS if name in components}


def score_variance(components: Components, design: VarianceDesign) -> float | np.ndarray:
    """Var = Σ_term σ²_term c_term(design): the variance of the benchmark score (a float for a scalar design).

    Conditional on the scenario set when ``components.conditioning == "scenarios"`` (the paper's App. D view).
    """
    terms = term_variances(components, design)
    if design.n.ndim == 0:                 # Python's sum of floats (compensated since 3.12), as the paper's functions
        return float(sum(float(v) for v in terms.values()))
    total: Any = 0
    for v in terms.values():
        total = total + v
    return np.array(np.broadcast_to(np.asarray(total, dtype=float), design.n.shape))


# ------------------------------------------------------------------------------- the terms' algebra
def _fpc(k: np.ndarray, kt: int) -> np.ndarray:
    """FPC(k) = (K_tot − k)/(K_tot − 1), Lemma 1 (Eq. 12, ``lem:fpc``); 0 for a one-judge panel."""
    return np.zeros_like(k) if kt == 1 else (kt - k) / (kt - 1)


def _leftover_coef(calls: int | np.ndarray, kt: int) -> np.ndarray:
    """r (K_tot − r) / ((K_tot − 1) T²) with r = T mod K_tot: the one implementation of the leftover term."""
    calls = np.asarray(calls, dtype=float)
    if kt == 1:
        return np.zeros_like(calls)
    r = np.mod(calls, kt)
    return r * (kt - r) / ((kt - 1) * calls * calls)


def _rotation_excess(calls: int | np.ndarray, kt: int) -> np.ndarray:
    """r (K_tot − r)/(K_tot B²), r = B mod K_tot: n Σ_l w_il² − 1/K_tot for B calls of a scenario spread as
    evenly as possible over the panel (q or q + 1 per judge), the conditional interaction coefficient × n."""
    b = np.asarray(calls, dtype=float)
    r = np.mod(b, kt)
    return r * (kt - r) / (kt * b * b)


def _scenario_resampled(d: VarianceDesign) -> np.ndarray:
    """σ²_α: 1/n when the scenarios are resampled (Prop. 1, Eq. 2 ``eq:variance``), 0 given them (App. D)."""
    return 1.0 / d.n


def _generation(d: VarianceDesign) -> np.ndarray:
    """σ²_β: 1/(nm) (Prop. 1, Eq. 2; Eqs. 4-5 with m = B); strategy A (Eq. 3, ``eq:strat_all``) scores q = B //
    K_tot generations with every judge and one with the r = B mod K_tot leftover judges: (q K_tot² + r²)/(n B²),
    K_tot/(nB) at multiples of K_tot."""
    if d.scheme == "all":
        q, r = np.divmod(d.budget, d.k_total)
        return (q * d.k_total * d.k_total + r * r) / (d.budget * d.budget * d.n)
    return 1.0 / (d.n * d.m)


def _residual(d: VarianceDesign) -> np.ndarray:
    """σ²_ε: one per call, 1/(nmk) (Prop. 1, Eq. 2), 1/(nB) for every strategy (Eqs. 3-5)."""
    if d.scheme == "all":
        return 1.0 / (d.n * d.budget)
    return 1.0 / (d.n * d.m * d.k)


def _judge_panel(d: VarianceDesign) -> np.ndarray:
    """σ²_γ (the panel's mean γ_l²): ``fixed`` FPC(k)/k (Prop. 1, Lemma 1); ``random`` FPC(k)/(k nm) (Eq. 4 at
    k = 1); ``cyclic`` and ``all`` the leftover V_left(T)/σ²_γ = R (K_tot − R)/((K_tot − 1) T²), R = T mod K_tot,
    T = nB (Eq. 5 at k = 1, Eq. 3 at k = K_tot; zero when K_tot divides T)."""
    kt = d.k_total
    if d.scheme == "fixed":
        return _fpc(d.k, kt) / d.k
    if d.scheme == "random":
        return _fpc(d.k, kt) / (d.k * d.n * d.m)
    if d.scheme == "all":
        return _leftover_coef(d.n * d.budget, kt)
    return _leftover_coef(d.n * d.m * d.k, kt)


def _scenario_judge(d: VarianceDesign) -> np.ndarray:
    """σ²_αγ given the scenarios and their interaction effects: Σ_il w_il² − 1/(n K_tot) (formulas module
    docstring). ``fixed``: the same k judges on all m generations of a scenario, 1/(nk) − 1/(nK_tot) =
    (K_tot − k)/(K_tot k n); ``random``: judge l scores a generation with probability k/K_tot, independently over
    the m generations, (K_tot − k)/(K_tot nmk) (strategy B: (K_tot − 1)/(K_tot nB)); ``cyclic`` and ``all``: a
    scenario's B calls are B consecutive positions of a rotation (q or q + 1 per judge), r (K_tot − r)/(K_tot B²
    n) with r = B mod K_tot, zero when K_tot divides B."""
    kt = d.k_total
    if d.scheme == "fixed":
        return (kt - d.k) / (kt * d.k * d.n)
    if d.scheme == "random":
        return (kt - d.k) / (kt * d.n * d.m * d.k)
    return _rotation_excess(d.budget, kt) / d.n


def _scenario_judge_resampled(d: VarianceDesign) -> np.ndarray:
    """σ²_αγ/(n K_tot) more when the scenarios (and their interaction effects) are resampled: the variance of the
    full panel's mean on new scenarios, which joins σ²_α/n."""
    return 1.0 / (d.n * d.k_total)


def _model_scenario_resampled(d: VarianceDesign) -> np.ndarray:
    """σ²_αp, the model x scenario interaction (αp)_pi of the joint model (docs/estimands.md, "Several models"):
    a model's score holds its mean over the n scenarios, (1/n) Σ_i (αp)_pi, so 1/n when the scenarios are
    resampled, exactly like σ²_α; 0 given the scenarios (the effects are then fixed). In a model's own fit the
    two are one term (its ``scenario`` = σ²_α + σ²_αp); the joint fit separates them because only σ²_αp differs
    between models: σ²_α is shared by every model on the same scenarios and cancels from their differences
    (Brennan 2001, p x I: σ²_pi/n' in the relative error, σ²_i/n' only in the absolute error)."""
    return 1.0 / d.n


def _judge_model(d: VarianceDesign) -> np.ndarray:
    """σ²_γp, the judge x model interaction (γp)_pl (panel view: the mean of (γp)_pl² over the panel and the
    models, with Σ_l (γp)_pl = 0 for every model). Model p's score holds Σ_l w_l (γp)_pl with the same judge
    weights w_l as its judge offsets Σ_l w_l γ_l (the judges score every model's generations in the same slots:
    the crossed p x l design, a shared schedule), and a centred panel effect averages exactly as γ_l does, so its
    coefficient is the judge_panel coefficient for every scheme: FPC(k)/k (fixed), FPC(k)/(knm) (random), the
    leftover R (K_tot − R)/((K_tot − 1) T²) (cyclic, all). Over the models, the per-model judge variance is
    ``judge_panel`` + ``judge_model`` (docs/estimands.md), so a model's absolute error adds c σ²_γp to c σ²_γ;
    the difference of two models keeps only the interaction, since γ_l cancels (decisions/differences.py)."""
    return _judge_panel(d)


# Registration order is summation order (the four of the paper, then the interactions).
register_contribution("scenario", lambda d: np.zeros_like(d.n), resampled_fn=_scenario_resampled)
register_contribution("generation", _generation)
register_contribution("residual", _residual)
register_contribution("judge_panel", _judge_panel)
register_contribution("scenario_judge", _scenario_judge, resampled_fn=_scenario_judge_resampled)
register_contribution("model_scenario", lambda d: np.zeros_like(d.n), resampled_fn=_model_scenario_resampled)
register_contribution("judge_model", _judge_model)
