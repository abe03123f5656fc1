r"""The model specification: what a fit fits, as data (``cj.Model``).

A fit is described by one object, :class:`Model`: its variance **terms** (names from the estimand registry,
:data:`cjstats.results.estimands.ESTIMANDS`), the judges' **view** (``panel``: judges fixed, the paper's
sigma2_gamma; ``population``: judges random), the **likelihood** and **link** (``gaussian``/``identity``, or
``cumulative`` with ``probit``/``logit``, of which pass/fail is the two-category case) and its **thresholds**
(``shared`` or per ``judge``), the **unit** (``model``: each model, x criterion, fitted on its own; ``joint``: the
models of a criterion fitted together), the form of the model x scenario variance (``pooled`` or ``per_model``)
and item **covariates** (joint only). :data:`TERMS` is the closed vocabulary of terms, one :class:`Term` per
name with its lme4 text; a new term is one :func:`register_term` call.

Every public entry point builds a Model from its arguments (:func:`model_from_options`), a user may pass one,
or an lme4-style formula restricted to this vocabulary, parsed into the same object (:func:`parse_formula`)::

    score ~ judge + (1|scenario) + (1|scenario:generation) + (1|scenario:judge)

Some terms are fitted *where identifiable* (``Model.auto``): the generation effect needs a scenario with two
generations (m >= 2; the paper's m = 1 design folds it into ``scenario``), the scenario x judge interaction a
judge that scored two generations of one scenario. The terms a group's fit actually holds are recorded per
group, and :func:`formula` writes the exact R call of what was fitted, so that ``lme4::lmer`` (or
``ordinal::clmm`` / ``clmm2`` for the cumulative model) on the same rows gives the same variance components
(``tests/test_formula_r.py``; per-model variances as ``dummy()`` terms).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from cjstats.exceptions import CjstatsError
from cjstats.results.estimands import ESTIMANDS

__all__ = ["Model", "Term", "TERMS", "register_term", "parse_formula", "formula", "as_model", "model_from_options",
           "LIKELIHOODS", "LINKS", "UNITS", "JUDGE_VIEWS"]

LIKELIHOODS: tuple[str, ...] = ("gaussian", "cumulative")
LINKS: dict[str, tuple[str, ...]] = {"gaussian": ("identity",), "cumulative": ("probit", "logit")}
UNITS: tuple[str, ...] = ("model", "joint")
JUDGE_VIEWS: tuple[str, ...] = ("panel", "population")


@dataclass(frozen=True, slots=True)
class Term:
    """One variance term of the vocabulary: its estimand name and its lme4 random-effect text.

    Attributes
    ----------
    name : str
        The estimand name (a key of ``ESTIMANDS``), e.g. ``"scenario_judge"``.
    lme4 : str
        Its random-effect term when each model is fitted alone, e.g. ``"(1|scenario:judge)"``; ``""`` when the
        term exists only in the joint model.
    joint_lme4 : str
        Its term in the joint model of several models (``""`` when the joint model has no such term).
    auto : bool
        Fitted only where the data identify it (the default models list it in ``Model.auto``).
    meaning : str
        One line for error messages and docs.
    needs : tuple or None
        When a group's design identifies the term, as ``(design column, minimum, what meeting it means, what
        missing it means)``, e.g. ``("generations_max", 2, "a scenario with several generations", "one generation
        per scenario")``; None when the design summary cannot say (the backends then decide on the statistics).
    """

    name: str
    lme4: str
    joint_lme4: str = ""
    auto: bool = False
    meaning: str = ""
    needs: tuple[str, float, str, str] | None = None

    def identified(self, design_row: Any) -> bool | None:
        """Whether one group's design row (``fit.design``) identifies the term; None when it cannot say."""
        if self.needs is None or self.needs[0] not in design_row:
            return None
        return bool(design_row[self.needs[0]] >= self.needs[1])

    @property
    def units(self) -> tuple[str, ...]:
        return tuple(u for u, t in (("model", self.lme4), ("joint", self.joint_lme4)) if t)


#: The closed vocabulary of variance terms: name -> :class:`Term` (register new ones with :func:`register_term`).
TERMS: dict[str, Term] = {}


def register_term(name: str, lme4: str, *, joint_lme4: str = "", auto: bool = False, meaning: str = "",
                  needs: tuple[str, float, str, str] | None = None) -> Term:
    """Add a variance term to :data:`TERMS` (its name must be a registered estimand)."""
    if name not in ESTIMANDS:
        raise CjstatsError(f"register_term: '{name}' is not a registered estimand name; register it first with "
                           f"cjstats.results.estimands.register_estimand.")
    term = Term(name, lme4, joint_lme4, auto, meaning or ESTIMANDS[name].meaning, needs)
    TERMS[name] = term
    return term


register_term("scenario", "(1|scenario)", joint_lme4="(1|scenario)")
register_term("generation", "(1|scenario:generation)", joint_lme4="(1|scenario:model:generation)", auto=True,
              needs=("generations_max", 2, "a scenario with several generations", "one generation per scenario"))
register_term("scenario_judge", "(1|scenario:judge)", auto=True)
register_term("model_scenario", "", joint_lme4="(1|scenario:model)")

#: The default terms of each unit: the paper's model with the terms fitted where identifiable.
DEFAULT_TERMS: dict[str, tuple[str, ...]] = {"model": ("scenario", "generation", "scenario_judge"),
                                             "joint": ("scenario", "model_scenario", "generation")}


@dataclass(frozen=True, slots=True)
class Model:
    """The specification of a fit: its terms, judge view, likelihood, link, thresholds, unit and covariates.

    Build one directly, from a formula (:meth:`from_formula`, or pass the string where a model is taken) or let
    the entry points build it from their arguments; every fit states the model it fitted (``fit.model``) and
    its exact R formula (``fit.formula``).

    Parameters
    ----------
    terms : tuple of str
        Variance terms, names from :data:`TERMS` (``scenario`` always; ``generation``, ``scenario_judge``,
        ``model_scenario`` for the joint unit). The residual is always in the model.
    auto : tuple of str
        The terms among ``terms`` fitted only where the data identify them (default: ``generation`` and
        ``scenario_judge``); a term in ``terms`` but not in ``auto`` is required, and a group that cannot
        identify it is refused.
    judges : {"panel", "population"}
        Judges fixed (``score ~ judge``; the panel view, the paper's sigma2_gamma) or random (``(1|judge)``).
        The per-model fits report both views; this picks the formula that states the fit.
    likelihood : {"gaussian", "cumulative"}
    link : {"identity", "probit", "logit"}
        ``identity`` for the Gaussian model; ``probit`` or ``logit`` for the cumulative one.
    thresholds : {"shared", "judge"}
        The cumulative model's cut points: one set, or one set per judge (``nominal = ~judge`` in ``clmm2``).
    unit : {"model", "joint"}
        Each model (x criterion) on its own, or the models of a criterion jointly (``score ~ model*judge``).
    model_scenario : {"pooled", "per_model"}
        The joint model's model x scenario variance: one, or one per model (``dummy()`` terms in lme4).
    covariates : tuple of str
        Item covariates (numeric columns constant within a model x scenario x generation cell): each judge's
        slope (``judge*x`` in lme4); joint unit only.

    Examples
    --------
    >>> import cjstats as cj
    >>> m = cj.Model.from_formula("score ~ judge + (1|scenario) + (1|scenario:generation)")
    >>> m.terms
    ('scenario', 'generation')
    >>> m.scenario_judge
    False
    """

    terms: tuple[str, ...] = DEFAULT_TERMS["model"]
    auto: tuple[str, ...] = ("generation", "scenario_judge")
    judges: Literal["panel", "population"] = "panel"
    likelihood: Literal["gaussian", "cumulative"] = "gaussian"
    link: str = "identity"
    thresholds: Literal["shared", "judge"] = "shared"
    unit: Literal["model", "joint"] = "model"
    model_scenario: Literal["pooled", "per_model"] = "pooled"
    covariates: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for name in ("terms", "auto", "covariates"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise CjstatsError(f"The '{name}' argument of Model takes a list of names. Got {value!r} instead.")
            object.__setattr__(self, name, tuple(str(v) for v in value))
        _choice("judges", self.judges, JUDGE_VIEWS)
        _choice("likelihood", self.likelihood, LIKELIHOODS)
        _choice("link", self.link, LINKS[self.likelihood], f" for likelihood='{self.likelihood}'")
        _choice("thresholds", self.thresholds, ("shared", "judge"))
        _choice("unit", self.unit, UNITS)
        _choice("model_scenario", self.model_scenario, ("pooled", "per_model"))
        for t in self.terms:
            if t not in TERMS:
                raise CjstatsError(f"Model has no term '{t}': the terms are {_names(TERMS)} (cjstats.results.model."
                                   f"TERMS; register a new one with register_term).")
            if self.unit not in TERMS[t].units:
                raise CjstatsError(f"The term '{t}' is not part of a unit='{self.unit}' model (it belongs to "
                                   f"unit={' or '.join(repr(u) for u in TERMS[t].units)}).")
        if "scenario" not in self.terms:
            raise CjstatsError("Every model has the scenario term (1|scenario): the scenario variance is what the "
                               "benchmark averages over. Add it to the terms.")
        if self.unit == "joint" and "model_scenario" not in self.terms:
            raise CjstatsError("A joint model needs the model x scenario term (1|scenario:model): without it the "
                               "models' paired differences would ignore how differently they find a scenario hard.")
        object.__setattr__(self, "auto", tuple(t for t in self.auto if t in self.terms))
        if self.thresholds == "judge" and self.likelihood != "cumulative":
            raise CjstatsError("thresholds='judge' applies to the cumulative (ordinal) likelihood; a Gaussian model "
                               "has no thresholds.")
        if self.covariates and self.unit != "joint":
            raise CjstatsError("Covariate slopes are fitted by the joint model of several models (unit='joint', "
                               "cj.fit_joint / cj.compare_models with covariates=); leave them out here.")
        if self.model_scenario == "per_model" and self.unit != "joint":
            raise CjstatsError("model_scenario='per_model' is a form of the joint model (unit='joint'); a model "
                               "fitted on its own has no model x scenario term.")

    # --------------------------------------------------------------------------------------------- views
    @property
    def scenario_judge(self) -> bool | str:
        """The backends' ``scenario_judge`` option this model stands for: ``"auto"``, True or False."""
        if "scenario_judge" not in self.terms:
            return False
        return "auto" if "scenario_judge" in self.auto else True

    @property
    def scale(self) -> str:
        """``"score"`` for the Gaussian model, ``"latent"`` for the cumulative one."""
        return "score" if self.likelihood == "gaussian" else "latent"

    @classmethod
    def from_formula(cls, text: str, **kwargs: Any) -> Model:
        """The model an lme4-style formula describes (see :func:`parse_formula`)."""
        return parse_formula(text, **kwargs)

    def with_terms(self, terms: Iterable[str]) -> Model:
        """This model with the given terms (those fitted in one group: no longer 'auto')."""
        terms = tuple(terms)
        return replace(self, terms=terms, auto=())

    @property
    def formula(self) -> str:
        """The lme4 / ordinal text of this specification (terms marked 'auto' included)."""
        return formula(self)

    def describe(self) -> str:
        """One line: the formula, with the terms fitted only where identifiable named."""
        auto = f" ({', '.join(self.auto)} where identifiable)" if self.auto else ""
        return f"{self.formula}{auto}"


def _names(d: Mapping[str, Any] | Sequence[str]) -> str:
    return ", ".join(f"'{n}'" for n in d)


def _choice(arg: str, value: Any, allowed: Sequence[str], where: str = "") -> None:
    if value not in allowed:
        raise CjstatsError(f"The '{arg}' argument of Model must be {' or '.join(repr(a) for a in allowed)}{where}. "
                           f"Got {value!r} instead.")


# ---------------------------------------------------------------------------------------------- formula text
def _r_string(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def formula(model: Model, *, models: Sequence[str] | None = None) -> str:
    """The exact R call of ``model``: an ``lme4::lmer`` formula for the Gaussian model, ``ordinal::clmm`` (or
    ``clmm2`` with per-judge thresholds) for the cumulative one.

    ``models`` (joint unit, ``model_scenario="per_model"``) names the models, for one ``dummy()`` term each:
    ``(0 + dummy(model, "a")|scenario)``. Factors are the table's columns ``score, model, scenario, generation,
    judge``; judge effects use sum-to-zero contrasts (``contr.sum``), so the intercept is the panel mean ``mu``.
    """
    terms = list(model.terms)
    if model.unit == "joint":
        fixed = "model*judge" if model.judges == "panel" else "model"
        fixed += "".join(f" + judge*{c}" for c in model.covariates)
        rand = []
        order = ("scenario", "model_scenario", "generation")
        terms = sorted(terms, key=lambda t: order.index(t) if t in order else len(order))
        for t in terms:
            if t == "model_scenario" and model.model_scenario == "per_model":
                labs = list(models) if models else ["<model>"]
                rand += [f"(0 + dummy(model, {_r_string(m)})|scenario)" for m in labs]
            else:
                rand.append(TERMS[t].joint_lme4)
        if model.judges == "population":
            rand += ["(1|judge)", "(1|judge:model)"]
    else:
        fixed = "judge" if model.judges == "panel" else "1"
        rand = [TERMS[t].lme4 for t in terms]
        if model.judges == "population":
            rand.append("(1|judge)")
    if model.likelihood == "gaussian":
        return f"score ~ {' + '.join([fixed, *rand])}"
    if model.thresholds == "judge":       # clmm2: nominal effects, one random effect
        extra = [t for t in terms if t != "scenario"]
        tail = f" [+ {', '.join(extra)}: not in clmm2]" if extra else ""
        return (f"clmm2(ordered(score) ~ 1, nominal = ~judge, random = scenario, link = \"{model.link}\", "
                f"Hess = TRUE){tail}")
    return f"clmm(ordered(score) ~ {' + '.join([fixed, *rand])}, link = \"{model.link}\")"


_TERM_RE = re.compile(r"^\(\s*(?P<lhs>[^|]+?)\s*\|\s*(?P<grp>[^)]+?)\s*\)$")


def _split_plus(rhs: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in rhs:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "+" and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return [p for p in out if p]


def _norm_group(grp: str) -> str:
    return ":".join(sorted(p.strip() for p in grp.split(":")))


def parse_formula(text: str, *, likelihood: str | None = None, link: str | None = None,
                  thresholds: str = "shared", auto: Iterable[str] | None = None) -> Model:
    """Parse an lme4-style formula restricted to the model vocabulary into a :class:`Model`.

    The response is ``score`` (Gaussian) or ``ordered(score)`` (cumulative; ``link`` probit by default). The
    fixed part is ``judge`` (one model; judges fixed), ``1`` with ``(1|judge)`` (judges random), or
    ``model*judge`` (the joint model; ``+ judge*x`` for a covariate ``x``). Random terms are those of
    :data:`TERMS`, written as their lme4 text (the grouping factors in any order), and for the joint model's
    per-model variances ``(0 + dummy(model, "a")|scenario)``. Terms written in the formula are required (not
    'auto') unless named in ``auto``. Anything else is refused in one sentence naming the piece.
    """
    if not isinstance(text, str) or "~" not in text:
        raise CjstatsError(f"A model formula reads 'score ~ judge + (1|scenario) + ...'. Got {text!r} instead.")
    lhs, rhs = (s.strip() for s in text.split("~", 1))
    lhs_n = lhs.replace(" ", "")
    if lhs_n == "score":
        lik = likelihood or "gaussian"
    elif lhs_n in ("ordered(score)", "factor(score)"):
        lik = likelihood or "cumulative"
    else:
        raise CjstatsError(f"The response of a model formula is 'score' (or 'ordered(score)' for the cumulative "
                           f"model). Got {lhs!r} instead.")
    if lik not in LIKELIHOODS:
        raise CjstatsError(f"The 'likelihood' argument of parse_formula must be 'gaussian' or 'cumulative'. "
                           f"Got {lik!r} instead.")
    lnk = link or ("identity" if lik == "gaussian" else "probit")
    fixed: list[str] = []
    groups: list[str] = []
    dummies: list[str] = []
    covariates: list[str] = []
    for piece in _split_plus(rhs):
        p = piece.replace(" ", "")
        m = _TERM_RE.match(p)
        if m is None:
            cov = re.fullmatch(r"judge\*(\w+)|(\w+)\*judge", p)
            if cov and "model" not in p:
                covariates.append(cov.group(1) or cov.group(2))
            else:
                fixed.append(p)
            continue
        lhs_t, grp = m.group("lhs"), _norm_group(m.group("grp"))
        d = re.fullmatch(r"0\+dummy\(model,[\"'](.+)[\"']\)", lhs_t)
        if d and grp == "scenario":
            dummies.append(d.group(1))
        elif lhs_t == "1":
            groups.append(grp)
        else:
            raise CjstatsError(f"The model formula's term {piece!r} is not in the cjstats vocabulary: random "
                               f"intercepts (1|...) of {_vocab()}, or (0 + dummy(model, \"a\")|scenario).")
    fixed_set = set(fixed) - {"1"}
    judges = "panel"
    if fixed_set in ({"judge"}, {"model*judge"}, {"judge*model"}):
        unit = "joint" if fixed_set != {"judge"} else "model"
    elif fixed_set in (set(), {"model"}):
        unit = "joint" if fixed_set == {"model"} else "model"
        judges = "population"
    else:
        bad = sorted(fixed_set - {"judge", "model*judge", "judge*model", "model"})
        raise CjstatsError(f"The model formula's fixed part {' + '.join(bad or sorted(fixed_set))!r} is not in the "
                           f"cjstats vocabulary: 'judge' (one model), 'model*judge' (several models) or '1' with "
                           f"(1|judge) (judges random).")
    by_group = {}
    for t, term in TERMS.items():
        text = term.joint_lme4 if unit == "joint" else term.lme4
        m_t = _TERM_RE.match(text.replace(" ", "")) if text else None
        if m_t is not None:
            by_group[_norm_group(m_t.group("grp"))] = t
    terms: list[str] = []
    judge_random = False
    for g in groups:
        if g in ("judge", "judge:model"):
            judge_random = True
            continue
        if g not in by_group:
            raise CjstatsError(f"The model formula's term (1|{g}) is not in the cjstats vocabulary for a "
                               f"{'joint' if unit == 'joint' else 'one-model'} fit: {_vocab(unit)}.")
        terms.append(by_group[g])
    if judge_random and judges == "panel":
        raise CjstatsError("The model formula has judges both fixed ('judge' in the fixed part) and random "
                           "((1|judge)); keep one.")
    if judges == "population" and not judge_random:
        raise CjstatsError("The model formula has no judge term: write 'judge' in the fixed part (judges fixed) or "
                           "(1|judge) (judges random).")
    model_scenario = "pooled"
    if dummies:
        if unit != "joint":
            raise CjstatsError("dummy(model, ...) terms belong to the joint model 'score ~ model*judge + ...'.")
        model_scenario = "per_model"
        terms.append("model_scenario")
    ordered = [t for t in TERMS if t in terms]
    return Model(terms=tuple(ordered), auto=tuple(auto or ()), judges=judges, likelihood=lik, link=lnk,
                 thresholds=thresholds, unit=unit, model_scenario=model_scenario, covariates=tuple(covariates))


def _vocab(unit: str | None = None) -> str:
    units = [unit] if unit else list(UNITS)
    seen = []
    for t in TERMS.values():
        for u in units:
            text = t.lme4 if u == "model" else t.joint_lme4
            if text and text not in seen:
                seen.append(text)
    return ", ".join(seen)


# ------------------------------------------------------------------------------------------- from arguments
def model_from_options(*, unit: str = "model", scenario_judge: Any = "auto", likelihood: str = "gaussian",
                       link: str | None = None, thresholds: str = "shared", generation: Any = None,
                       model_scenario: str = "pooled", covariates: Sequence[str] | None = None) -> Model:
    """The model that today's keyword arguments stand for (``estimate(..., scenario_judge=..., link=...)``)."""
    terms = list(DEFAULT_TERMS[unit])
    auto = ["generation", "scenario_judge"]
    if unit == "model":
        if scenario_judge is False:
            terms.remove("scenario_judge")
        elif scenario_judge is True:
            auto.remove("scenario_judge")
    if generation is False:
        terms.remove("generation")
    elif generation is True:
        auto.remove("generation")
    lik = "cumulative" if likelihood in ("cumulative", "ordinal") else likelihood
    lnk = link or ("identity" if lik == "gaussian" else "probit")
    return Model(terms=tuple(terms), auto=tuple(auto), likelihood=lik, link=lnk, thresholds=thresholds, unit=unit,
                 model_scenario=model_scenario, covariates=tuple(covariates or ()))


def as_model(model: Model | str | None, *, unit: str = "model") -> Model | None:
    """A :class:`Model` from a Model, a formula string or None (None stays None)."""
    if model is None or isinstance(model, Model):
        if isinstance(model, Model) and model.unit != unit:
            fits = "cj.fit_joint / cj.compare_models / cj.self_preference" if unit == "joint" else "cj.estimate"
            raise CjstatsError(f"{fits} fit{'' if unit == 'joint' else 's'} unit='{unit}' models; the model given is "
                               f"unit='{model.unit}' "
                               f"({'cj.fit_joint / cj.compare_models' if model.unit == 'joint' else 'cj.estimate'} "
                               f"fits it).")
        return model
    if isinstance(model, str):
        parsed = parse_formula(model)
        return as_model(parsed, unit=unit)
    raise CjstatsError(f"The 'model' argument takes a cj.Model or a formula string such as 'score ~ judge + "
                       f"(1|scenario)'. Got {type(model).__name__} instead.")
