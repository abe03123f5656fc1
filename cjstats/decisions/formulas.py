"""Closed-form variances of the benchmark score: Proposition 1, strategies A/B/C, App. D-F, costs and power.

Pure functions (docs/architecture.md, conventions): floats in, floats out (the pool predictions of App. F take one numpy array),
no pandas, no I/O, no fitting. Notation of the paper (Eq. 1, ``eq:model``):

    X_ijl = mu + alpha_i + beta_ij + gamma_l + eps_ijl

``s2_scenario`` = sigma2_alpha, ``s2_generation`` = sigma2_beta, ``s2_residual`` = sigma2_eps and
``s2_judge_panel`` = sigma2_gamma = (1/K_tot) sum_l gamma_l^2 for the fixed panel of K_tot judges (docs/estimands.md:
judges fixed; this is the quantity the paper's formulas use). ``n`` scenarios, ``m`` generations per scenario,
``k`` judges per generation, ``k_total`` judges in the panel, ``budget`` = B judge calls per scenario.

The functions here keep one positional ``s2_*`` argument per term (the paper's notation); each builds a
:class:`~cjstats.decisions.components.Components` vector and a :class:`~cjstats.decisions.components.VarianceDesign` and
calls :func:`~cjstats.decisions.components.score_variance`, whose terms' coefficients live in ONE registry,
:data:`~cjstats.decisions.components.TERM_CONTRIBUTIONS` (the table in :mod:`cjstats.decisions.components`). A new
term of the model is one ``register_contribution`` call there, not a new argument here.

Equation numbers are those of the compiled paper (``paper/cyclicjudge.tex``); the LaTeX labels, given next to
them, are authoritative when numbers shift between versions.

Leftover judge term (budgets that are not multiples of K_tot)
-------------------------------------------------------------
The paper's Eqs. 3 and 5 assume B is a multiple of K_tot. With the CyclicJudge schedule (:mod:`cjstats.decisions.schedules`)
one rotation runs across all T = nB calls of the benchmark, over a seeded shuffle of the judges. Then every
judge gets q = T // K_tot or q + 1 calls; the r = T mod K_tot judges with the extra call form a uniformly random
r-subset S of the panel. The judge part of the grand mean is (1/T) sum_l b_l gamma_l = (1/T) sum_{l in S}
gamma_l (the q-part vanishes because sum_l gamma_l = 0), a mean of r offsets drawn without replacement, so by
the finite-population lemma (Lemma 1, Eq. 12)

    V_left(T) = r^2/T^2 * (sigma2_gamma / r) (K_tot - r)/(K_tot - 1) = r (K_tot - r) sigma2_gamma / ((K_tot - 1) T^2).

It is zero when K_tot divides T and at most K_tot sigma2_gamma / (4 (K_tot - 1) T^2). For any schedule the same
argument gives sigma2_gamma K_tot/(K_tot - 1) sum_l (W_l - 1/K_tot)^2, W_l = total weight of judge l
(:func:`judge_weight_variance`), of which V_left is the special case W_l = b_l / T.

Scenario x judge interaction (``s2_scenario_judge``)
-----------------------------------------------------
Every formula that takes the components also takes ``s2_scenario_judge`` = σ²_αγ (default 0: the paper's
model, every number unchanged), the variance of (αγ)_il in

    X_ijl = mu + alpha_i + beta_ij + gamma_l + (alpha gamma)_il + eps_ijl,

(αγ)_il iid (0, σ²_αγ) for every scenario i and panel judge l, shared by all generations of scenario i that
judge l scores (``residual`` is then the within-cell residual). A linear score Σ_c w_c X_c (weights summing to
1) holds Σ_il w_il (αγ)_il, w_il = total weight of the calls of judge l on scenario i; over the interaction
effects its variance is σ²_αγ Σ_il w_il². With scenarios resampled (the target is mu) that is the term. When
the variance is conditional on the chosen scenarios, it is also conditional on their interaction effects for
every panel judge: the target is the full panel's mean on those scenarios, which holds (1/(nK_tot))
Σ_il (αγ)_il, and what the score and the target share cancels:

    Var(Σ_il (w_il − 1/(nK_tot)) (αγ)_il) = σ²_αγ (Σ_il w_il² − 1/(nK_tot))     (Σ_il w_il = 1).

So the unconditional term is the conditional one plus σ²_αγ/(nK_tot), which joins σ²_α/n as the variance
of the full panel's mean on a new scenario. With B calls on a scenario (weight 1/(nB) each), a rotation that
gives each judge q or q + 1 of them (B = qK_tot + r) minimises Σ_l w_il² and gives

    Σ_l w_il² = (K_tot q² + 2qr + r)/(nB)²,   n Σ_il w_il² − 1/K_tot = r (K_tot − r)/(K_tot B²),

zero when K_tot divides B; a judge scoring all B calls of a scenario gives 1/n instead, and B judges drawn
independently give E Σ_l w_il² = [B(1 − 1/K_tot) + B²/K_tot]/(nB)². Unlike the judge offsets, the interaction
does not average away over generations judged by the same judge: only more distinct judges per scenario shrink
it. A fit without the term (or with it not identifiable, m = 1) has it inside ``residual``; pass 0 then.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from cjstats import _dist
from cjstats._validate import check_choice, check_number, check_positive_int
from cjstats.decisions.components import (
    TERM_CONTRIBUTIONS,
    Components,
    VarianceDesign,
    _leftover_coef,
    _rotation_excess,
    score_variance,
    single_model_terms,
    term_coefficients,
    term_variances,
)
from cjstats.exceptions import CjstatsError

__all__ = [
    "STRATEGIES", "ASSIGNMENTS", "fpc", "grand_mean_variance", "variance_contributions",
    "leftover_judge_variance", "judge_weight_variance", "strategy_coefficients", "strategy_variance",
    "strategy_gaps", "ab_threshold", "preferred_baseline", "design_coefficients", "design_variance",
    "scenario_generation_variance", "best_generations_per_scenario", "pool_constants", "pool_variance",
    "neyman_shares", "poststratified_variance", "scenarios_for_target_se", "budget_for_target_se",
    "minimum_detectable_difference", "power_to_detect",
]

Strategy = Literal["all", "random", "cyclic"]
Assignment = Literal["cyclic", "random", "fixed"]

#: The paper's allocation strategies: A = all judges per generation, B = one random judge per generation,
#: C = CyclicJudge (one judge per generation, in rotation).
STRATEGIES: tuple[str, ...] = ("all", "random", "cyclic")

#: How the k judges of each generation are chosen in :func:`design_variance`.
ASSIGNMENTS: tuple[str, ...] = ("cyclic", "random", "fixed")


# ----------------------------------------------------------------------------------------------- helpers
def _var(name: str, value: float, caller: str) -> float:
    return check_number(name, value, caller=caller, minimum=0.0)


def _panel(k: int, k_total: int, caller: str) -> tuple[int, int]:
    k_total = check_positive_int("k_total", k_total, caller=caller)
    k = check_positive_int("k", k, caller=caller)
    if k > k_total:
        raise CjstatsError(f"The 'k' argument of {caller} must be at most k_total={k_total} (judges per "
                           f"generation cannot exceed the panel). Got {k} instead.")
    return k, k_total


def _sj(value: float, caller: str) -> float:
    return _var("s2_scenario_judge", value, caller)


def fpc(k: int, k_total: int) -> float:
    """Finite-population correction of a mean of k of K_tot centred judge offsets, Lemma 1 (Eq. 12, ``lem:fpc``).

    FPC = (K_tot - K) / (K_tot - 1); 1 at K = 1, 0 at K = K_tot (and 0 for a one-judge panel).
    """
    k, k_total = _panel(k, k_total, "fpc")
    return 0.0 if k_total == 1 else (k_total - k) / (k_total - 1)


# ------------------------------------------------------------------------------------------ Proposition 1
def variance_contributions(s2_scenario: float, s2_generation: float, s2_residual: float, s2_judge_panel: float,
                           *, n: int, m: int, k: int, k_total: int,
                           s2_scenario_judge: float = 0.0) -> dict[str, float]:
    """The four terms of Proposition 1 (Eq. 2, ``eq:variance``), as tabulated in Table 5 (``tab:components``).

    ``scenario`` = sigma2_alpha/n, ``generation`` = sigma2_beta/(nm), ``judge_panel`` = (sigma2_gamma/K) FPC,
    ``residual`` = sigma2_eps/(nmK); their sum is :func:`grand_mean_variance`. The same K judges score every
    (scenario, generation) cell and are a simple random sample of the K_tot-judge panel. With
    ``s2_scenario_judge`` > 0 a fifth key ``scenario_judge`` = σ²_αγ/(nK) is added (see
    :func:`grand_mean_variance`).
    """
    return _contributions(s2_scenario, s2_generation, s2_residual, s2_judge_panel, n=n, m=m, k=k, k_total=k_total,
                          s2_scenario_judge=s2_scenario_judge, caller="variance_contributions")


def _contributions(s2_scenario: float, s2_generation: float, s2_residual: float, s2_judge_panel: float, *,
                   n: int, m: int, k: int, k_total: int, s2_scenario_judge: float = 0.0,
                   caller: str) -> dict[str, float]:
    comps = _paper_components(s2_scenario, s2_generation, s2_residual, s2_judge_panel, s2_scenario_judge, caller)
    n = check_positive_int("n", n, caller=caller)
    m = check_positive_int("m", m, caller=caller)
    k, k_total = _panel(k, k_total, caller)
    t = term_variances(comps, VarianceDesign("fixed", n=n, k_total=k_total, m=m, k=k))
    keys = ("scenario", "generation", "judge_panel", "residual") + (
        ("scenario_judge",) if comps["scenario_judge"] > 0 else ())
    return {key: float(t[key]) for key in keys}


def _paper_components(s2_scenario: float | None, s2_generation: float, s2_residual: float, s2_judge_panel: float,
                      s2_scenario_judge: float, caller: str, *,
                      conditioning: str = "unconditional") -> Components:
    """The components vector of the positional ``s2_*`` arguments, each checked under its own name (``s2_scenario``
    None: left out)."""
    vals = {} if s2_scenario is None else {"scenario": _var("s2_scenario", s2_scenario, caller)}
    vals["generation"] = _var("s2_generation", s2_generation, caller)
    vals["residual"] = _var("s2_residual", s2_residual, caller)
    vals["judge_panel"] = _var("s2_judge_panel", s2_judge_panel, caller)
    vals["scenario_judge"] = _sj(s2_scenario_judge, caller)
    return Components(vals, conditioning=conditioning)


def grand_mean_variance(s2_scenario: float, s2_generation: float, s2_residual: float, s2_judge_panel: float,
                        *, n: int, m: int, k: int, k_total: int, s2_scenario_judge: float = 0.0) -> float:
    """Variance of the benchmark grand mean, Proposition 1 (Eq. 2, ``eq:variance``).

    Var(X̄) = σ²_α/n + σ²_β/(nm) + σ²_ε/(nmK) + (σ²_γ/K)·(K_tot − K)/(K_tot − 1) [+ σ²_αγ/(nK)]

    The same K judges, a simple random sample of the K_tot-judge panel, score every cell; the judge-bias term
    (with the finite-population correction of Lemma 1) vanishes at K = K_tot. ``s2_judge_panel`` is
    σ²_γ = mean(γ_l²) over the panel (divisor K_tot), not a random-effects variance.

    Scenario x judge interaction (module docstring): each of the K judges carries weight w_il = 1/(nK) on every
    scenario (all m generations of scenario i go to the same K judges, so the m generations do not average it),
    and Σ_il w_il² = nK/(nK)² = 1/(nK): the term σ²_αγ/(nK), which falls only with n and K. Like σ²_α/n it is
    unconditional (scenarios resampled); given the scenarios it would be σ²_αγ (1/K − 1/K_tot)/n.

    Examples
    --------
    >>> round(grand_mean_variance(1.530, 0.266, 1.486, 0.947, n=80, m=1, k=1, k_total=5), 5)  # Qwen, Table 5
    0.98802
    """
    caller = "grand_mean_variance"
    comps = _paper_components(s2_scenario, s2_generation, s2_residual, s2_judge_panel, s2_scenario_judge, caller)
    n = check_positive_int("n", n, caller=caller)
    m = check_positive_int("m", m, caller=caller)
    k, k_total = _panel(k, k_total, caller)
    return score_variance(comps, VarianceDesign("fixed", n=n, k_total=k_total, m=m, k=k))


# ------------------------------------------------------------------------------------------ judge weights
def judge_weight_variance(s2_judge_panel: float, weights: Sequence[float] | np.ndarray) -> float:
    """Variance of the judge part sum_l W_l gamma_l of a linear score when judge labels are exchangeable.

    σ²_γ · K_tot/(K_tot − 1) · Σ_l (W_l − W̄)²,  W̄ = (1/K_tot) Σ_l W_l,

    over a uniformly random relabelling of the K_tot judges (which a seeded judge shuffle realises). ``weights``
    holds the total weight W_l of each panel judge in the score (0 for a judge with no call). This generalises
    Lemma 1 (Eq. 12, ``lem:fpc``: W_l = 1/K on a K-subset) and gives the leftover term of
    :func:`leftover_judge_variance` (W_l = b_l / T).
    """
    s2g = _var("s2_judge_panel", s2_judge_panel, "judge_weight_variance")
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or w.size < 1 or not np.isfinite(w).all():
        raise CjstatsError("The 'weights' argument of judge_weight_variance must be a 1-d array of finite judge "
                           f"weights, one per panel judge. Got shape {w.shape} instead.")
    kt = w.size
    if kt == 1:
        return 0.0
    return float(s2g * kt / (kt - 1) * np.sum((w - w.mean()) ** 2))


def leftover_judge_variance(s2_judge_panel: float, *, calls: int, k_total: int) -> float:
    """Variance of the leftover judge term of a globally balanced rotation over ``calls`` = T judge calls.

    V_left(T) = r (K_tot − r) σ²_γ / ((K_tot − 1) T²),  r = T mod K_tot.

    The rotation gives each judge q = T // K_tot or q + 1 calls; the r judges with the extra call are a uniformly
    random r-subset of the panel (seeded judge shuffle), so (1/T) Σ_{l in S} γ_l has, by Lemma 1 (Eq. 12,
    ``lem:fpc``), variance (r²/T²)(σ²_γ/r)(K_tot − r)/(K_tot − 1). Zero when K_tot divides T. This extends the
    paper's Eq. 5 (``eq:strat_cycle``) to budgets that are not multiples of K_tot.
    """
    caller = "leftover_judge_variance"
    s2g = _var("s2_judge_panel", s2_judge_panel, caller)
    t = check_positive_int("calls", calls, caller=caller)
    kt = check_positive_int("k_total", k_total, caller=caller)
    return float(TERM_CONTRIBUTIONS["judge_panel"].conditional(VarianceDesign("cyclic", n=t, k_total=kt))) * s2g


# ---------------------------------------------------------------------------------- strategies A, B, C
def strategy_coefficients(strategy: Strategy, *, budget: int | np.ndarray, n: int | np.ndarray,
                          k_total: int) -> dict[str, np.ndarray]:
    """Coefficients c of V = c_scenario σ²_α + c_generation σ²_β + c_residual σ²_ε + c_judge_panel σ²_γ.

    With B = q K_tot + r calls per scenario and T = nB (Eqs. 3-5, ``eq:strat_all``, ``eq:strat_rand``,
    ``eq:strat_cycle``; App. D ``app:allocation``; leftover term as in :func:`leftover_judge_variance`):

    ============  ===========================  ===========  ==================================
    strategy      c_generation                 c_residual   c_judge_panel
    ============  ===========================  ===========  ==================================
    ``"all"``     (q K_tot² + r²) / (n B²)      1/(nB)       R (K_tot − R)/((K_tot − 1) T²)
    ``"random"``  1/(nB)                       1/(nB)       1/(nB)
    ``"cyclic"``  1/(nB)                       1/(nB)       R (K_tot − R)/((K_tot − 1) T²)
    ============  ===========================  ===========  ==================================

    with R = T mod K_tot, and c_scenario = 1/n for every strategy (used only when scenarios are resampled).

    ``scenario_judge`` is the coefficient of σ²_αγ conditional on the scenarios and their interaction effects
    (module docstring: n Σ_il w_il² − 1/K_tot, over n), with r = B mod K_tot:

    * ``"all"`` and ``"cyclic"``: r (K_tot − r)/(n K_tot B²). Both give each judge q or q + 1 of a scenario's B
      calls (A: q generations scored by every judge plus r distinct rotation judges on one more; C: B
      consecutive positions of the rotation), the most even split, so 0 when K_tot divides B;
    * ``"random"``: (K_tot − 1)/(n K_tot B): judge l's count on a scenario is Binomial(B, 1/K_tot), so
      E Σ_l b_il² = B(1 − 1/K_tot) + B²/K_tot.

    ``scenario_judge_resampled`` = 1/(n K_tot) is added to it when scenarios (and their interaction effects)
    are resampled, like c_scenario. :func:`strategy_variance` is the dot product with the components. Arrays
    of budgets and n broadcast.
    """
    caller = "strategy_coefficients"
    strategy = check_choice("strategy", strategy, STRATEGIES, caller=caller)
    kt = check_positive_int("k_total", k_total, caller=caller)
    b, n = np.broadcast_arrays(np.asarray(budget, dtype=float), np.asarray(n, dtype=float))
    if not ((b >= 1).all() and (n >= 1).all() and (b == np.floor(b)).all() and (n == np.floor(n)).all()):
        raise CjstatsError(f"The 'budget' and 'n' arguments of {caller} must be integers >= 1.")
    design = _strategy_design(strategy, b, n, kt)
    out = {"scenario": TERM_CONTRIBUTIONS["scenario"].resampled(design)}
    for name, c in term_coefficients(design, conditioning="scenarios", terms=single_model_terms()).items():
        if name != "scenario":
            out[name] = c
            if TERM_CONTRIBUTIONS[name].resampled is not None:
                out[f"{name}_resampled"] = TERM_CONTRIBUTIONS[name].resampled(design)
    return out


def _strategy_design(strategy: str, budget, n, kt: int) -> VarianceDesign:
    """Strategy A, B or C with ``budget`` calls per scenario as a :class:`~cjstats.decisions.components.VarianceDesign`:
    A is the scheme ``"all"``; B and C are B generations with one judge each (``"random"``, ``"cyclic"``)."""
    if strategy == "all":
        return VarianceDesign("all", n=n, k_total=kt, budget=budget)
    return VarianceDesign(strategy, n=n, k_total=kt, m=budget, k=1)


def strategy_variance(strategy: Strategy, *, s2_generation: float, s2_residual: float, s2_judge_panel: float,
                      budget: int, n: int, k_total: int, s2_scenario: float | None = None,
                      s2_scenario_judge: float = 0.0) -> float:
    """Variance of the benchmark score under strategy A, B or C with B judge calls per scenario (``sec:allocation``).

    Conditional on the scenario set, as in the paper (App. D, ``app:allocation``), and with ``s2_scenario_judge``
    also on those scenarios' interaction effects for every panel judge (the target is then the full panel's mean
    on the chosen scenarios); pass ``s2_scenario`` to resample the scenarios and their interaction effects, which
    adds σ²_α/n + σ²_αγ/(n K_tot). With B = qK_tot + r and R = (nB) mod K_tot:

    * ``"all"`` (A, Eq. 3, ``eq:strat_all``): q generations scored by every judge, plus (if r > 0) one
      generation scored by r judges taken from a rotation across scenarios:
      V_A = [σ²_β (qK_tot² + r²)/B² + σ²_ε/B]/n + V_left(nB); for r = 0 this is (K_tot σ²_β + σ²_ε)/(nB).
    * ``"random"`` (B, Eq. 4, ``eq:strat_rand``): B generations, each scored by one judge drawn at random:
      V_B = (σ²_β + σ²_γ + σ²_ε)/(nB), for every B.
    * ``"cyclic"`` (C, Eq. 5, ``eq:strat_cycle``): B generations, judges in one rotation across the
      (shuffled) scenarios: V_C = (σ²_β + σ²_ε)/(nB) + V_left(nB),
      with V_left(T) = R (K_tot − R) σ²_γ / ((K_tot − 1) T²) (:func:`leftover_judge_variance`).

    V_C <= min(V_A, V_B) for every B (App. D; :func:`strategy_gaps`).

    The interaction adds σ²_αγ r (K_tot − r)/(n K_tot B²) to A and C (0 when K_tot divides B: every judge
    scores the scenario equally often, so its mean over the scenario's calls is the full panel's) and
    σ²_αγ (K_tot − 1)/(n K_tot B) to B (:func:`strategy_coefficients`; module docstring). V_C <= min(V_A, V_B)
    still holds.

    Examples
    --------
    >>> q = dict(s2_generation=0.266, s2_residual=1.486, s2_judge_panel=0.947, n=80, k_total=5)  # Qwen
    >>> [round(strategy_variance(s, budget=5, **q) * 1e3, 4) for s in ("all", "random", "cyclic")]
    [7.04, 6.7475, 4.38]
    """
    caller = "strategy_variance"
    strategy = check_choice("strategy", strategy, STRATEGIES, caller=caller)
    s2b, s2e = _var("s2_generation", s2_generation, caller), _var("s2_residual", s2_residual, caller)
    s2g = _var("s2_judge_panel", s2_judge_panel, caller)
    b = check_positive_int("budget", budget, caller=caller)
    n = check_positive_int("n", n, caller=caller)
    s2sj = _sj(s2_scenario_judge, caller)
    kt = check_positive_int("k_total", k_total, caller=caller)
    vals = {"generation": s2b, "residual": s2e, "judge_panel": s2g, "scenario_judge": s2sj}
    if s2_scenario is not None:
        vals["scenario"] = _var("s2_scenario", s2_scenario, caller)
    comps = Components(vals, conditioning="scenarios" if s2_scenario is None else "unconditional")
    return score_variance(comps, _strategy_design(strategy, b, n, kt))


def strategy_gaps(*, s2_generation: float, s2_residual: float, s2_judge_panel: float, budget: int, n: int,
                  k_total: int, s2_scenario_judge: float = 0.0) -> dict[str, float]:
    """Pairwise differences of the strategy variances, App. D (Eqs. 32-34, ``app:allocation``).

    For B a multiple of K_tot:  V_A − V_C = (K_tot − 1)σ²_β/(nB) >= 0,  V_B − V_C = σ²_γ/(nB) >= 0,
    V_A − V_B = ((K_tot − 1)σ²_β − σ²_γ)/(nB). For other budgets the differences of the exact
    :func:`strategy_variance` values are returned (still >= 0 for the first two).
    Keys: ``"all-cyclic"``, ``"random-cyclic"``, ``"all-random"``. With ``s2_scenario_judge`` (conditional on
    the scenarios, as :func:`strategy_variance`) B loses a further σ²_αγ (K_tot − 1)/(n K_tot B) at multiples
    of K_tot, where A and C have no interaction term.
    """
    kw = dict(s2_generation=s2_generation, s2_residual=s2_residual, s2_judge_panel=s2_judge_panel,
              budget=budget, n=n, k_total=k_total, s2_scenario_judge=s2_scenario_judge)
    va, vb, vc = (strategy_variance(s, **kw) for s in STRATEGIES)
    return {"all-cyclic": va - vc, "random-cyclic": vb - vc, "all-random": va - vb}


def ab_threshold(s2_generation: float, s2_judge_panel: float, *, k_total: int,
                 s2_scenario_judge: float = 0.0) -> float:
    """The sign that decides A against B (App. D, Eq. 34): (K_tot − 1)σ²_β − σ²_γ [− (K_tot − 1)σ²_αγ/K_tot].

    Positive: random single judges (B) beat all judges (A); negative: A beats B; zero: they tie. Equivalently
    A wins when σ²_γ/σ²_β > K_tot − 1 (the crossover of §4, "Strategy Comparison"). Exact for budgets that
    are multiples of K_tot. With the scenario x judge interaction, nB (V_A − V_B) at such budgets also loses
    B's interaction term (K_tot − 1)σ²_αγ/K_tot (A has none there: :func:`strategy_coefficients`).
    """
    caller = "ab_threshold"
    kt = check_positive_int("k_total", k_total, caller=caller)
    comps = Components({"generation": _var("s2_generation", s2_generation, caller),
                        "judge_panel": _var("s2_judge_panel", s2_judge_panel, caller),
                        "scenario_judge": _sj(s2_scenario_judge, caller)}, conditioning="scenarios")
    return _ab_gap(comps, kt)


def _ab_gap(comps: Components, kt: int) -> float:
    """nB (V_A − V_B) at n = 1, B = K_tot (any multiple of K_tot gives the same), term by term from the registry:
    Σ_term σ²_term K_tot (c_term(A) − c_term(B))."""
    a = term_variances(comps, VarianceDesign("all", n=1, k_total=kt, budget=kt))
    b = term_variances(comps, VarianceDesign("random", n=1, k_total=kt, m=kt, k=1))
    return float(sum(kt * (a[name] - b[name]) for name in a))


def preferred_baseline(s2_generation: float, s2_judge_panel: float, *, k_total: int,
                       rtol: float = 1e-12, s2_scenario_judge: float = 0.0) -> Literal["all", "random", "tie"]:
    """Which of the paper's two baselines has the lower variance: ``"all"`` (A), ``"random"`` (B) or ``"tie"``.

    From the sign of :func:`ab_threshold` (App. D, Eq. 34, with the interaction term when given); CyclicJudge
    beats both in every case.
    """
    d = ab_threshold(s2_generation, s2_judge_panel, k_total=k_total, s2_scenario_judge=s2_scenario_judge)
    scale = max((k_total - 1) * s2_generation, s2_judge_panel, (k_total - 1) * s2_scenario_judge, 1e-300)
    if abs(d) <= rtol * scale:
        return "tie"
    return "random" if d > 0 else "all"


# ------------------------------------------------------------------------------------ general designs
def design_coefficients(*, n: int | np.ndarray, m: int | np.ndarray, k: int | np.ndarray, k_total: int,
                        assignment: Assignment = "cyclic", conditional: bool = False) -> dict[str, np.ndarray]:
    """Coefficients of σ²_α, σ²_β, σ²_ε, σ²_γ in :func:`design_variance` (arrays broadcast; pure numpy).

    ``scenario`` 1/n, ``generation`` 1/(nm), ``residual`` 1/(nmk) (Proposition 1, Eq. 2, ``eq:variance``) and
    ``judge_panel``:

    * ``"fixed"``: FPC(k)/k, FPC(k) = (K_tot − k)/(K_tot − 1) (Eq. 2 ``eq:variance``, Lemma 1 ``lem:fpc``);
    * ``"random"``: FPC(k)/(k nm) (Eq. 4 ``eq:strat_rand`` at k = 1);
    * ``"cyclic"``: r (K_tot − r)/((K_tot − 1) T²) with T = nmk, r = T mod K_tot (Eq. 5 ``eq:strat_cycle`` at
      k = 1 and Eq. 3 ``eq:strat_all`` at k = K_tot, with the leftover term of :func:`leftover_judge_variance`).

    ``scenario_judge`` (of σ²_αγ) is Σ_il w_il² (module docstring), scenarios resampled, with B = mk calls per
    scenario:

    * ``"fixed"``: 1/(nk): the same k judges score all m generations of a scenario (w_il = 1/(nk));
    * ``"random"``: (1 − k/K_tot)/(nB) + 1/(n K_tot): judge l scores each generation with probability k/K_tot,
      independently over the m generations, so E b_il² = m (k/K_tot)(1 − k/K_tot) + (mk/K_tot)²;
    * ``"cyclic"``: 1/(n K_tot) + r (K_tot − r)/(n K_tot B²), r = B mod K_tot: a scenario's B calls are B
      consecutive positions of the rotation, the most even split over the panel (q or q + 1 per judge).

    ``conditional=True`` gives the coefficients conditional on the scenarios and their interaction effects
    (target: the full panel's mean on them): ``scenario`` 0 and ``scenario_judge`` minus 1/(n K_tot).
    """
    caller = "design_coefficients"
    assignment = check_choice("assignment", assignment, ASSIGNMENTS, caller=caller)
    kt = check_positive_int("k_total", k_total, caller=caller)
    n, m, k = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (n, m, k)))
    for name, x in (("n", n), ("m", m), ("k", k)):
        if not ((x >= 1).all() and (x == np.floor(x)).all()):
            raise CjstatsError(f"The '{name}' argument of {caller} must hold integers >= 1.")
    if (k > kt).any():
        raise CjstatsError(f"The 'k' argument of {caller} must be at most k_total={kt}. Got {int(k.max())} instead.")
    return term_coefficients(VarianceDesign(assignment, n=n, k_total=kt, m=m, k=k),
                             conditioning="scenarios" if conditional else "unconditional", terms=single_model_terms())


def design_variance(s2_scenario: float, s2_generation: float, s2_residual: float, s2_judge_panel: float, *,
                    n: int, m: int, k: int, k_total: int, assignment: Assignment = "cyclic",
                    s2_scenario_judge: float = 0.0, conditional: bool = False) -> float:
    """Variance of the grand mean of a design with n scenarios, m generations each and k judges per generation.

    σ²_α/n + σ²_β/(nm) + σ²_ε/(nmk) + J [+ c σ²_αγ], where the judge term J depends on how judges are chosen:

    * ``"fixed"``: the same k-subset (a random sample of the panel) scores everything: J = (σ²_γ/k) FPC(k),
      Proposition 1 (Eq. 2, ``eq:variance``);
    * ``"random"``: a fresh random k-subset for each generation: J = (σ²_γ/k) FPC(k)/(nm) (Eq. 4 at k = 1);
    * ``"cyclic"``: k consecutive judges of one rotation across all T = nmk calls: J = V_left(T)
      (:func:`leftover_judge_variance`; Eq. 5 at k = 1, Eq. 3 at k = K_tot).

    The scenario x judge term c σ²_αγ (c = ``scenario_judge`` of :func:`design_coefficients`) is 1/(nk) for
    ``"fixed"``, (1 − k/K_tot)/(nmk) + 1/(nK_tot) for ``"random"`` and 1/(nK_tot) + r (K_tot − r)/(nK_tot (mk)²)
    (r = mk mod K_tot) for ``"cyclic"``: with rotation, only the calls per scenario mk matter, not how they
    split into generations and judges per generation.

    Scenarios (and their interaction effects) are resampled; ``conditional=True`` gives the variance given the
    scenarios and their interaction effects (the paper's view; the target is the full panel's mean on them),
    which drops σ²_α/n and σ²_αγ/(nK_tot). (``s2_scenario=0`` alone drops only the first.)
    """
    caller = "design_variance"
    assignment = check_choice("assignment", assignment, ASSIGNMENTS, caller=caller)
    comps = _paper_components(s2_scenario, s2_generation, s2_residual, s2_judge_panel, s2_scenario_judge, caller,
                              conditioning="scenarios" if conditional else "unconditional")
    n = check_positive_int("n", n, caller=caller)
    m = check_positive_int("m", m, caller=caller)
    k, kt = _panel(k, k_total, caller)
    return score_variance(comps, VarianceDesign(assignment, n=n, k_total=kt, m=m, k=k))


#: Component order of the coefficient dictionaries.
_ORDER = ("scenario", "generation", "residual", "judge_panel")


# ---------------------------------------------------------------------------------------------- App. E
def scenario_generation_variance(s2_scenario: float, s2_generation: float, s2_residual: float, *,
                                 generation_budget: int, m: int, s2_judge_panel: float = 0.0,
                                 k_total: int | None = None, s2_scenario_judge: float = 0.0) -> float:
    """Variance of a cycled benchmark that spends ``generation_budget`` = B_gen generations as n x m.

    Eq. 35 (``eq:scenario_gen``, App. E ``app:scenario_coverage``): with n = B_gen/m scenarios and one judge per
    generation in rotation,

        V_C(B_gen, m) = (m σ²_α + σ²_β + σ²_ε) / B_gen,

    linear in m with slope σ²_α/B_gen, so m = 1 (as many scenarios as possible) is best. When m does not divide
    B_gen, n = B_gen // m scenarios are used and the variance is σ²_α/n + (σ²_β + σ²_ε)/(nm). Give ``k_total``
    (and ``s2_judge_panel``) to add the leftover judge term of the rotation over nm calls.

    ``s2_scenario_judge`` (needs ``k_total``) adds σ²_αγ [1/K_tot + r (K_tot − r)/(K_tot m²)]/n, r = m mod K_tot:
    the rotation gives each judge q or q + 1 of a scenario's m generations (module docstring). For m <= K_tot
    that is σ²_αγ/(nm), so Eq. 35 holds with σ²_ε + σ²_αγ in place of σ²_ε; beyond K_tot the term stops
    falling with m (σ²_αγ/(nK_tot) at multiples of K_tot), which adds to the case for more scenarios.
    Scenarios and their interaction effects are resampled, as the σ²_α/n term says.
    """
    caller = "scenario_generation_variance"
    s2a, s2b = _var("s2_scenario", s2_scenario, caller), _var("s2_generation", s2_generation, caller)
    s2e = _var("s2_residual", s2_residual, caller)
    s2sj = _sj(s2_scenario_judge, caller)
    if s2sj > 0 and k_total is None:
        raise CjstatsError(f"The 's2_scenario_judge' argument of {caller} needs k_total (the panel size): the "
                           f"interaction term depends on how the generations of a scenario spread over the judges.")
    bg = check_positive_int("generation_budget", generation_budget, caller=caller)
    m = check_positive_int("m", m, caller=caller)
    n = bg // m
    if n < 1:
        raise CjstatsError(f"The 'm' argument of {caller} must be at most generation_budget={bg} (at least one "
                           f"scenario). Got {m} instead.")
    vals = {"scenario": s2a, "generation": s2b, "residual": s2e}
    kt = 1
    if k_total is not None:
        vals["judge_panel"] = _var("s2_judge_panel", s2_judge_panel, caller)
        vals["scenario_judge"] = s2sj
        kt = check_positive_int("k_total", k_total, caller=caller)
    return score_variance(Components(vals), VarianceDesign("cyclic", n=n, k_total=kt, m=m, k=1))


def best_generations_per_scenario(s2_scenario: float, s2_generation: float, s2_residual: float, *,
                                  generation_budget: int, n_max: int | None = None, k_total: int | None = None,
                                  s2_scenario_judge: float = 0.0) -> int:
    """The m that minimises :func:`scenario_generation_variance` when at most ``n_max`` scenarios exist.

    App. E (``app:scenario_coverage``, Eq. 35 ``eq:scenario_gen``): with n = min(N, B_gen // m) scenarios,

        V(m) = σ²_α/n + (σ²_β + σ²_ε)/(nm),

    m = 1 while B_gen <= N; once the scenario pool is exhausted (n = N) the remaining budget goes to more
    generations. The answer is exact (ties go to the smallest m) but only m near the optimum are evaluated:

    * while n = N (m <= M_1 = B_gen // N), V falls with m, so M_1 is the best of them;
    * for every m, n <= B_gen/m and nm <= B_gen give V(m) >= (m σ²_α + σ²_β + σ²_ε)/B_gen (Eq. 35 is this
      bound, linear in m), so beyond M_1 only m up to (V_ref B_gen − σ²_β − σ²_ε)/σ²_α can beat the best value
      V_ref found so far; equivalently only n >= σ²_α/(V_ref − (σ²_β + σ²_ε)/B_gen), and for each n the
      largest m with that n (B_gen // n). The shorter of the two lists is evaluated.

    With ``s2_scenario_judge`` (needs ``k_total``) the variance is that of :func:`scenario_generation_variance`,
    V(m) = [σ²_α + (σ²_β + σ²_ε)/m + σ²_αγ (1/K_tot + e(m))]/n with e(m) = r (K_tot − r)/(K_tot m²),
    r = m mod K_tot, which is not monotone in m. For a fixed n, V falls with m within each residue class of m
    mod K_tot, so among the m sharing an n only the K_tot largest can be best; and the bounds above hold with
    σ²_α + σ²_αγ/K_tot in place of σ²_α (e >= 0). The same windows are then searched, K_tot values per n.
    """
    caller = "best_generations_per_scenario"
    s2a, s2b = _var("s2_scenario", s2_scenario, caller), _var("s2_generation", s2_generation, caller)
    s2e = _var("s2_residual", s2_residual, caller)
    s2sj = _sj(s2_scenario_judge, caller)
    bg = check_positive_int("generation_budget", generation_budget, caller=caller)
    nmax = bg if n_max is None else check_positive_int("n_max", n_max, caller=caller)
    c = s2b + s2e
    if s2sj > 0:
        if k_total is None:
            raise CjstatsError(f"The 's2_scenario_judge' argument of {caller} needs k_total (the panel size): the "
                               f"interaction term depends on how the generations of a scenario spread over the "
                               f"judges.")
        return _best_m_with_interaction(s2a, c, s2sj, bg, nmax, check_positive_int("k_total", k_total,
                                                                                    caller=caller))

    def v(m: np.ndarray) -> np.ndarray:
        m = np.asarray(m, dtype=np.int64)
        n = np.minimum(nmax, bg // m).astype(float)
        return s2a / n + c / (n * m)

    m1 = bg // nmax                                  # the largest m that still uses all N scenarios
    cands = [np.array([m1 if c > 0 else 1])] if m1 >= 1 else []
    if m1 < bg:
        cands.append(np.array([m1 + 1]))
        ref = float(min(v(x)[0] for x in cands))
        n_hi = min(nmax - 1, bg // (m1 + 1))
        m_win = (bg - m1 - 1) if s2a == 0 else int(min(bg, max(m1, math.floor((ref * bg - c) / s2a)))) - m1 - 1
        slack = ref - c / bg
        n_lo = n_hi + 1 if slack <= 0 else max(1, math.ceil(s2a / slack * (1 - 1e-12)))
        n_win = n_hi - n_lo + 1
        if m_win <= n_win:
            if m_win > 0:
                cands.append(np.arange(m1 + 2, m1 + 2 + m_win, dtype=np.int64))
        elif n_win > 0:
            cands.append(bg // np.arange(n_lo, n_hi + 1, dtype=np.int64))
    m = np.unique(np.concatenate(cands))
    return int(m[int(np.argmin(v(m)))])


def _best_m_with_interaction(s2a: float, c: float, s2sj: float, bg: int, nmax: int, kt: int) -> int:
    """:func:`best_generations_per_scenario` with the interaction term (its docstring gives the argument)."""
    a_eff = s2a + s2sj / kt

    def v(m: np.ndarray) -> np.ndarray:
        m = np.asarray(m, dtype=np.int64)
        n = np.minimum(nmax, bg // m).astype(float)
        return (s2a + c / m + s2sj * (1.0 / kt + _rotation_excess(m, kt))) / n

    def tops(hi: np.ndarray, lo_excl: np.ndarray) -> np.ndarray:
        """The K_tot largest m in (lo_excl, hi] for each pair (every residue class's best, and its smallest)."""
        j = np.arange(kt, dtype=np.int64)
        x = hi[:, None] - j[None, :]
        x = x[x > lo_excl[:, None]]
        return x
    m1 = bg // nmax                                  # the m that still use all N scenarios: 1..M_1
    cands = []
    if m1 >= 1:
        cands.append(tops(np.array([m1]), np.array([0])))
        cands.append(np.arange(1, min(m1, kt) + 1, dtype=np.int64))      # the smallest of each class (ties)
    if m1 < bg:
        cands.append(np.array([m1 + 1]))
        ref = float(v(np.concatenate(cands)).min())
        n_hi = min(nmax - 1, bg // (m1 + 1))
        m_win = (bg - m1 - 1) if a_eff == 0 else int(min(bg, max(m1, math.floor((ref * bg - c) / a_eff)))) - m1 - 1
        slack = ref - c / bg
        n_lo = n_hi + 1 if slack <= 0 else max(1, math.ceil(a_eff / slack * (1 - 1e-12)))
        n_win = n_hi - n_lo + 1
        if m_win <= n_win * kt:
            if m_win > 0:
                cands.append(np.arange(m1 + 2, m1 + 2 + m_win, dtype=np.int64))
        elif n_win > 0:
            ns = np.arange(n_lo, n_hi + 1, dtype=np.int64)
            cands.append(tops(bg // ns, bg // (ns + 1)))
    m = np.unique(np.concatenate(cands))
    return int(m[int(np.argmin(v(m)))])


# ---------------------------------------------------------------------------------------------- App. F
def _pool(y: np.ndarray, caller: str) -> np.ndarray:
    a = np.asarray(y, dtype=float)
    if a.ndim != 3 or min(a.shape) < 1:
        raise CjstatsError(f"The 'y' argument of {caller} must be a score array of shape (n scenarios, "
                           f"m_max generations, K_tot judges). Got shape {a.shape} instead.")
    if not np.isfinite(a).all():
        raise CjstatsError(f"The 'y' argument of {caller} has {int((~np.isfinite(a)).sum())} missing or "
                           f"infinite scores; the pool must be complete.")
    return a


def pool_constants(y: np.ndarray) -> dict[str, float]:
    """The pool variances C_A, C_B, C_C of App. F (Eqs. 36-38, ``app:pool_pred``) of a score array (n, m_max, K).

    C_A = K_tot (1/n) Σ_i (1/m_max) Σ_g (X̄_ig· − X̄_i··)²,
    C_B = (1/n) Σ_i (1/(m_max K_tot)) Σ_{g,l} (X_igl − X̄_i··)²,
    C_C = (1/(n K_tot)) Σ_{i,l} (1/m_max) Σ_g (X_igl − X̄_i·l)².

    Subsampling generations with replacement from the pool gives V(B) = C/(nB) for budgets B that are
    multiples of K_tot (:func:`pool_variance` covers every budget). Keys ``"all"``, ``"random"``, ``"cyclic"``.
    """
    a = _pool(y, "pool_constants")
    k = a.shape[2]
    c_a = k * float(np.mean(a.mean(axis=2).var(axis=1)))
    c_b = float(np.mean(a.reshape(a.shape[0], -1).var(axis=1)))
    c_c = float(np.mean(a.var(axis=1)))
    return {"all": c_a, "random": c_b, "cyclic": c_c}


def _mean_block_overlap(n: int, r: int, k: int) -> float:
    """Mean overlap |S_p ∩ S_p'| over ordered pairs of distinct positions p != p' of a rotation.

    Position p's r extra calls go to rotation slots {pr, ..., pr + r - 1} mod K.
    """
    if n < 2 or r == 0:
        return 0.0
    starts = (np.arange(n) * r) % k
    cnt = np.bincount(starts, minlength=k).astype(float)
    ind = ((np.arange(k)[None, :] - np.arange(k)[:, None]) % k < r).astype(float)  # ind[s, x]: slot x in block s
    ov = ind @ ind.T
    return float((cnt @ ov @ cnt - n * r) / (n * (n - 1)))


def pool_variance(y: np.ndarray, *, strategy: Strategy, budget: int) -> float:
    """Exact variance of the benchmark score when subsampling a finite generation pool (App. F, ``app:pool_pred``).

    ``y`` is the complete pool, shape (n, m_max, K_tot). Each scenario gets ``budget`` = B calls; generations
    are drawn uniformly with replacement from the pool, independently for every draw, as in
    :func:`cjstats.decisions.subsample.subsample_strategies`:

    * ``"random"``: each call is a cell (g, l) drawn uniformly: V = C_B/(nB);
    * ``"cyclic"``: each judge gets B // K_tot draws from its column and the r = B mod K_tot extra calls of a
      scenario go to the judges at the next r slots of one rotation across a random scenario order and a random
      judge order: V = C_C/(nB) + E_r/(nB)²;
    * ``"all"``: B // K_tot generations scored by every judge, plus one generation scored by the r rotation
      judges: V = [Σ_i (q K_tot² v_i + P_i) + E_r]/(nB)², which is C_A/(nB) when r = 0.

    Here v_i = (1/m_max) Σ_g (X̄_ig· − X̄_i··)², e_il = X̄_i·l − X̄_i··, and the leftover term is
    E_r = r(K−r)/(K(K−1)) Σ_{i,l} e_il² + (K ō − r²)/(K(K−1)) Σ_{i≠i'} Σ_l e_il e_i'l, with ō the mean overlap
    of the extra-call blocks of two distinct scenario positions; P_i = (r/K) tr V_i + r(r−1)/(K(K−1))
    (1'V_i 1 − tr V_i) with V_i the pool covariance of the judge columns of scenario i. With e_il = γ_l in every
    scenario E_r reduces to the population leftover term (nB)² V_left(nB) of :func:`leftover_judge_variance`.
    For r = 0 these are the paper's predictions C/(nB) (Eqs. 36-38).
    """
    caller = "pool_variance"
    strategy = check_choice("strategy", strategy, STRATEGIES, caller=caller)
    a = _pool(y, caller)
    b = check_positive_int("budget", budget, caller=caller)
    n, _, k = a.shape
    consts = pool_constants(a)
    if strategy == "random":
        return consts["random"] / (n * b)
    q, r = divmod(b, k)
    col = a.mean(axis=1)                                   # (n, K): X̄_i·l
    e = col - col.mean(axis=1, keepdims=True)
    e_r = 0.0
    if r:
        ss = float(np.sum(e * e))
        cross = float(np.sum(e.sum(axis=0) ** 2)) - ss
        obar = _mean_block_overlap(n, r, k)
        e_r = r * (k - r) / (k * (k - 1)) * ss + (k * obar - r * r) / (k * (k - 1)) * cross
    if strategy == "cyclic":
        return consts["cyclic"] / (n * b) + e_r / (n * b) ** 2
    v = a.mean(axis=2).var(axis=1)                         # (n,)
    main = q * k * k * float(v.sum())
    part = 0.0
    if r:
        tr = a.var(axis=1).sum(axis=1)                     # tr V_i
        tot = k * k * v                                    # 1'V_i 1 = Var_g(sum_l X_igl)
        part = float(np.sum(r / k * tr + (r * (r - 1) / (k * (k - 1)) if k > 1 else 0.0) * (tot - tr)))
    return (main + part + e_r) / (n * b) ** 2


# ----------------------------------------------------------------------------- unequal prices and noise
def neyman_shares(sd: Sequence[float] | np.ndarray, costs: Sequence[float] | np.ndarray, *,
                  generation_cost: float = 0.0) -> np.ndarray:
    """Variance-minimising judge frequencies under unequal prices (Neyman/Cochran allocation; beyond the paper).

    b_l ∝ s_l / sqrt(c_l + c_gen),  shares sum to 1,

    where s_l² = σ²_β + σ²_ε,l is the variance of one call of judge l on a fresh generation and c_l + c_gen its
    price (judge call plus the generation it scores). It minimises the variance (1/K²) Σ_l s_l²/b_l of the
    post-stratified mean (:func:`poststratified_variance`) at fixed total cost Σ_l b_l (c_l + c_gen)
    (Cochran 1977, §5.5). Equal prices and noise give equal shares: CyclicJudge.
    """
    caller = "neyman_shares"
    s = np.asarray(sd, dtype=float)
    c = np.asarray(costs, dtype=float)
    cg = check_number("generation_cost", generation_cost, caller=caller, minimum=0.0)
    if s.ndim != 1 or c.shape != s.shape or s.size < 1:
        raise CjstatsError(f"The 'sd' and 'costs' arguments of {caller} must be 1-d arrays of the same length, "
                           f"one value per judge. Got shapes {s.shape} and {c.shape} instead.")
    if not (np.isfinite(s).all() and (s > 0).all()):
        raise CjstatsError(f"The 'sd' argument of {caller} must hold finite positive standard deviations. "
                           f"Got {s.tolist()} instead.")
    if not (np.isfinite(c).all() and (c + cg > 0).all() and (c >= 0).all()):
        raise CjstatsError(f"The 'costs' argument of {caller} must hold finite prices >= 0 with a positive "
                           f"cost per call. Got {c.tolist()} instead.")
    w = s / np.sqrt(c + cg)
    return w / w.sum()


def poststratified_variance(s2_generation: float, s2_residual: float | Sequence[float] | np.ndarray,
                            counts: Sequence[int] | np.ndarray, *, s2_scenario: float = 0.0,
                            n: int | None = None) -> float:
    """Variance of the post-stratified panel mean (1/K_tot) Σ_l mean(scores of judge l) (beyond the paper).

    (1/K_tot²) Σ_l (σ²_β + σ²_ε,l)/b_l  [+ σ²_α/n]

    when judge l makes b_l >= 1 calls, each on its own generation. The estimator recovers the panel mean
    exactly for any frequencies (the judge offsets enter with weight 1/K_tot each and sum to zero), so there is
    no judge term. ``s2_residual`` may be one value or one per judge. The scenario term σ²_α/n holds when each
    judge's calls are spread over the n scenarios in proportion to its frequency (the weighted round robin of
    :func:`cjstats.decisions.schedules.cyclic_schedule`); :func:`cjstats.decisions.schedules.realised_variance` gives it for any schedule.
    With equal counts and residuals this is Eq. 5 (``eq:strat_cycle``): (σ²_β + σ²_ε)/(nB).
    """
    caller = "poststratified_variance"
    s2b = _var("s2_generation", s2_generation, caller)
    b = np.asarray(counts, dtype=float)
    if b.ndim != 1 or b.size < 1 or not (np.isfinite(b).all() and (b >= 1).all()):
        raise CjstatsError(f"The 'counts' argument of {caller} must give every panel judge at least one call. "
                           f"Got {np.asarray(counts).tolist()} instead.")
    s2e = np.broadcast_to(np.asarray(s2_residual, dtype=float), b.shape)
    if not (np.isfinite(s2e).all() and (s2e >= 0).all()):
        raise CjstatsError(f"The 's2_residual' argument of {caller} must be finite variances >= 0. "
                           f"Got {np.asarray(s2_residual).tolist()} instead.")
    v = float(np.sum((s2b + s2e) / b)) / b.size ** 2
    if s2_scenario:
        if n is None:
            raise CjstatsError(f"{caller} needs n (the number of scenarios) to add the scenario term.")
        v += _var("s2_scenario", s2_scenario, caller) / check_positive_int("n", n, caller=caller)
    return v


# ------------------------------------------------------------------------------------------ target search
def _first_true(pred, lo: np.ndarray, hi: np.ndarray, *, max_elements: int = 2**20) -> np.ndarray:
    """Per row i, the smallest integer x in [lo_i, hi_i] with ``pred(rows, x)`` true; hi_i + 1 where none is.

    ``pred`` takes int arrays of row indices and candidate values (same shape) and returns booleans; it need
    not be monotone (variances with a leftover or rounding term wiggle). Candidates are tried in blocks whose
    width doubles, so an answer d steps above lo costs O(d) evaluations in O(log d) rounds, and no block holds
    more than ``max_elements`` candidates. Callers bound [lo, hi] in closed form, so the window is short.
    """
    lo = np.atleast_1d(np.asarray(lo, dtype=np.int64))
    hi = np.broadcast_to(np.asarray(hi, dtype=np.int64), lo.shape)
    out = hi + 1
    start = lo.copy()
    active = np.flatnonzero(start <= hi)
    width = 8
    while active.size:
        w = int(max(1, min(width, max_elements // active.size)))
        x = start[active, None] + np.arange(w, dtype=np.int64)[None, :]
        valid = x <= hi[active, None]
        rows = np.broadcast_to(active[:, None], x.shape)
        ok = np.zeros(x.shape, dtype=bool)
        ok[valid] = np.asarray(pred(rows[valid], x[valid]), dtype=bool)
        found = ok.any(axis=1)
        out[active[found]] = x[found, np.argmax(ok[found], axis=1)]
        start[active] += w
        active = active[~found]
        active = active[start[active] <= hi[active]]
        width *= 2
    return out


def _last_true(pred, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per row, the largest integer x in [lo, hi] with ``pred(rows, x)`` true; lo − 1 where none is."""
    lo = np.atleast_1d(np.asarray(lo, dtype=np.int64))
    hi = np.broadcast_to(np.asarray(hi, dtype=np.int64), lo.shape)
    y = _first_true(lambda rows, d: pred(rows, hi[rows] - d), np.zeros_like(lo), hi - lo)
    return hi - y


def _bisect_first(pred, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per row, the smallest x in [lo, hi] with ``pred(rows, x)`` true, for pred MONOTONE in x (false, then
    true); hi + 1 where pred(hi) is false. Vectorised bisection: O(log(hi − lo)) evaluations per row."""
    lo = np.atleast_1d(np.asarray(lo, dtype=np.int64)).copy()
    hi = np.broadcast_to(np.asarray(hi, dtype=np.int64), lo.shape).copy() + 1    # pred(hi) taken as true
    rows = np.arange(lo.size)
    while True:
        act = lo < hi
        if not act.any():
            return lo
        mid = (lo[act] + hi[act]) // 2
        ok = np.asarray(pred(rows[act], mid), dtype=bool)
        hi[np.flatnonzero(act)[ok]] = mid[ok]
        lo[np.flatnonzero(act)[~ok]] = mid[~ok] + 1


def _first_true_up_to(pred, lo: int, hi: int, limit: int) -> int:
    """The smallest x in [lo, limit] with pred true (limit + 1 if none), where ``hi`` is a closed-form point
    that satisfies pred in exact arithmetic: [lo, hi] is searched first, the rest only if rounding defeated hi."""
    x = int(_first_true(pred, lo, min(hi, limit))[0])
    if x > min(hi, limit) and hi < limit:
        x = int(_first_true(pred, hi + 1, limit)[0])
    return x


def _to_int(x: np.ndarray | float, cap: int) -> np.ndarray:
    """Float bounds to int64, clipped to [0, cap] first (a bound can be huge or infinite)."""
    return np.clip(np.nan_to_num(np.asarray(x, dtype=float), nan=cap, posinf=cap), 0, cap).astype(np.int64)


def _period(calls_per_unit: np.ndarray | int, kt: int) -> np.ndarray:
    """The p with x·calls_per_unit a multiple of K_tot exactly when p divides x: K_tot / gcd(calls_per_unit, K_tot)."""
    return kt // np.gcd(np.asarray(calls_per_unit, dtype=np.int64), kt)


def _next_multiple(x: np.ndarray, p: np.ndarray) -> np.ndarray:
    return -(-x // p) * p


# ------------------------------------------------------------------------------------------------ power
def scenarios_for_target_se(target_se: float, *, s2_scenario: float, s2_generation: float, s2_residual: float,
                            s2_judge_panel: float, m: int, k: int, k_total: int,
                            assignment: Assignment = "cyclic", n_max: int = 10**8,
                            s2_scenario_judge: float = 0.0) -> int:
    """The smallest number of scenarios n whose :func:`design_variance` is at most ``target_se``².

    The variance (:func:`design_variance`; Proposition 1, Eq. 2 ``eq:variance``, and Eqs. 4-5) is

        V(n) = F + P/n + J(n),   P = σ²_α + σ²_β/m + σ²_ε/(mk) [+ σ²_γ FPC(k)/(km) for "random"],

    with F = (σ²_γ/k) FPC(k) for ``"fixed"`` (0 otherwise) and J(n) = V_left(nmk) >= 0 for ``"cyclic"`` (0
    otherwise). So n >= P/(t² − F) is necessary, and the first n >= P/(t² − F) at which nmk is a multiple of
    K_tot (J = 0) is sufficient: the search looks only between the two, at most K_tot values.

    Raises when the target is out of reach: with ``assignment="fixed"`` and k < K_tot the judge term F does
    not shrink with n (Proposition 1), and no n can beat it.

    ``s2_scenario_judge`` adds c σ²_αγ to P, c the n = 1 ``scenario_judge`` coefficient of
    :func:`design_coefficients` (the term is proportional to 1/n for every assignment), so the same search holds.
    """
    caller = "scenarios_for_target_se"
    t = check_number("target_se", target_se, caller=caller, minimum=0.0)
    if t <= 0:
        raise CjstatsError(f"The 'target_se' argument of {caller} must be positive. Got {target_se!r} instead.")
    comps = np.array([_var("s2_scenario", s2_scenario, caller), _var("s2_generation", s2_generation, caller),
                      _var("s2_residual", s2_residual, caller), _var("s2_judge_panel", s2_judge_panel, caller)])
    m = check_positive_int("m", m, caller=caller)
    k = check_positive_int("k", k, caller=caller)
    assignment = check_choice("assignment", assignment, ASSIGNMENTS, caller=caller)
    n_max = check_positive_int("n_max", n_max, caller=caller)
    c1 = design_coefficients(n=1, m=m, k=k, k_total=k_total, assignment=assignment)
    kt = int(k_total)
    floor = float(c1["judge_panel"]) * comps[3] if assignment == "fixed" else 0.0
    if floor >= t * t:
        raise CjstatsError(f"No number of scenarios reaches target_se={t:g}: with the same {k} of {kt} judges "
                           f"on every cell the judge term alone has SE {math.sqrt(floor):.4g}. Use more judges "
                           f"or a cyclic assignment.")
    per_n = float(c1["scenario"] * comps[0] + c1["generation"] * comps[1] + c1["residual"] * comps[2]
                  + (c1["judge_panel"] * comps[3] if assignment == "random" else 0.0))
    s2sj = _sj(s2_scenario_judge, caller)
    if s2sj > 0:
        per_n += float(c1["scenario_judge"]) * s2sj
    room = t * t - floor
    lo = max(1, int(_to_int(per_n / room * (1 - 1e-12), n_max + 1)))
    p = int(_period(m * k, kt)) if assignment == "cyclic" else 1
    hi = int(_next_multiple(np.int64(max(1, int(_to_int(per_n / room * (1 + 1e-12), n_max + 1)) + 1)), p)) + p
    n = _first_true_up_to(lambda _, ns: _design_values(comps, ns, m, k, kt, assignment, s2sj) <= t * t, lo, hi,
                          n_max)
    if n > n_max:
        raise CjstatsError(f"No number of scenarios up to n_max={n_max} reaches target_se={t:g} in {caller} "
                           f"(at least {lo} are needed); raise n_max.")
    return n


def _design_values(comps: np.ndarray, n: np.ndarray, m, k, kt: int, assignment: str,
                   s2sj: float = 0.0) -> np.ndarray:
    vec = Components(dict(zip(_ORDER, comps.tolist()), scenario_judge=s2sj))
    return np.asarray(score_variance(vec, VarianceDesign(assignment, n=n, k_total=kt, m=m, k=k)))


def budget_for_target_se(target_se: float, *, strategy: Strategy, s2_generation: float, s2_residual: float,
                         s2_judge_panel: float, n: int, k_total: int, s2_scenario: float | None = None,
                         budget_max: int = 10**8, s2_scenario_judge: float = 0.0) -> int:
    """The smallest per-scenario budget B whose :func:`strategy_variance` is at most ``target_se``².

    From :func:`strategy_coefficients` (Eqs. 3-5 with the leftover term), with F = σ²_α/n when
    ``s2_scenario`` is given (else 0), r = B mod K_tot and V_left >= 0:

        "random":  V(B) = F + (σ²_β + σ²_γ + σ²_ε)/(nB)
        "cyclic":  V(B) = F + (σ²_β + σ²_ε)/(nB) + V_left(nB)
        "all":     V(B) = F + (K_tot σ²_β + σ²_ε)/(nB) − σ²_β r (K_tot − r)/(nB²) + V_left(nB)

    The search starts at the closed-form lower bound (for ``"all"``, the larger root of the quadratic bound
    with r (K_tot − r) <= K_tot²/4, after trying B < K_tot directly) and stops at the first B with no leftover
    (nB a multiple of K_tot, and for ``"all"`` B too) that the 1/B part alone brings under the target.

    Raises when σ²_α/n alone (if ``s2_scenario`` is given) already exceeds the target: more calls per scenario
    cannot help, only more scenarios.

    ``s2_scenario_judge`` (:func:`strategy_variance`): F gains σ²_αγ/(n K_tot) when scenarios are resampled;
    ``"random"`` gains (K_tot − 1)σ²_αγ/(n K_tot B), a 1/B term; ``"all"`` and ``"cyclic"`` gain
    σ²_αγ r (K_tot − r)/(n K_tot B²) >= 0, zero when K_tot divides B, so the search for them stops at the first
    multiple of K_tot (instead of the first B with nB a multiple) that the 1/B part brings under the target.
    """
    caller = "budget_for_target_se"
    t = check_number("target_se", target_se, caller=caller, minimum=0.0)
    if t <= 0:
        raise CjstatsError(f"The 'target_se' argument of {caller} must be positive. Got {target_se!r} instead.")
    strategy = check_choice("strategy", strategy, STRATEGIES, caller=caller)
    n = check_positive_int("n", n, caller=caller)
    kt = check_positive_int("k_total", k_total, caller=caller)
    budget_max = check_positive_int("budget_max", budget_max, caller=caller)
    floor = 0.0 if s2_scenario is None else _var("s2_scenario", s2_scenario, caller) / n
    s2sj = _sj(s2_scenario_judge, caller)
    if s2sj > 0 and s2_scenario is not None:
        floor += s2sj / (n * kt)
    if floor >= t * t:
        raise CjstatsError(f"No per-scenario budget reaches target_se={t:g} with n={n} scenarios: the scenario "
                           f"term alone has SE {math.sqrt(floor):.4g}. Use more scenarios.")
    s2b, s2e = _var("s2_generation", s2_generation, caller), _var("s2_residual", s2_residual, caller)
    s2g = _var("s2_judge_panel", s2_judge_panel, caller)
    room = t * t - floor

    vec = Components({"generation": s2b, "residual": s2e, "judge_panel": s2g, "scenario_judge": s2sj},
                     conditioning="scenarios")

    def ok(_, bs: np.ndarray) -> np.ndarray:
        return np.asarray(score_variance(vec, _strategy_design(strategy, bs, n, kt))) + floor <= t * t

    cap = budget_max + 1
    if strategy == "all":
        a = (kt * s2b + s2e) / n                          # V − F >= a/B − c/B² for every B
        c = s2b * kt * kt / (4 * n)
        direct = int(_first_true(ok, 1, min(kt, budget_max))[0])
        if direct <= min(kt, budget_max):
            return direct
        disc = a * a - 4 * room * c
        lo = kt + 1 if disc < 0 else max(kt + 1, int(_to_int((a + math.sqrt(disc)) / (2 * room) * (1 - 1e-12), cap)))
        p = kt                                            # B a multiple of K_tot: no partial generation, no leftover
        per = a
    else:
        per = (s2b + s2e + (s2g if strategy == "random" and kt > 1 else 0.0)) / n
        if s2sj > 0 and strategy == "random":
            per += (kt - 1) * s2sj / (kt * n)
        lo = max(1, int(_to_int(per / room * (1 - 1e-12), cap)))
        p = (kt if s2sj > 0 else int(_period(n, kt))) if strategy == "cyclic" else 1
    hi = int(_next_multiple(np.int64(max(1, int(_to_int(per / room * (1 + 1e-12), cap)) + 1)), p)) + p
    b = _first_true_up_to(ok, lo, hi, budget_max)
    if b > budget_max:
        raise CjstatsError(f"No per-scenario budget up to budget_max={budget_max} reaches target_se={t:g} in "
                           f"{caller} (at least {lo} calls per scenario are needed); raise budget_max.")
    return b


def _z(alpha: float, power: float | None, alternative: str, caller: str) -> tuple[float, float]:
    a = check_number("alpha", alpha, caller=caller)
    if not 0 < a < 1:
        raise CjstatsError(f"The 'alpha' argument of {caller} must be in (0, 1). Got {alpha!r} instead.")
    check_choice("alternative", alternative, ("two-sided", "one-sided"), caller=caller)
    za = _dist.norm_isf(a / 2 if alternative == "two-sided" else a)
    zb = 0.0
    if power is not None:
        p = check_number("power", power, caller=caller)
        if not 0 < p < 1:
            raise CjstatsError(f"The 'power' argument of {caller} must be in (0, 1). Got {power!r} instead.")
        zb = _dist.norm_ppf(p)
    return float(za), float(zb)


def _diff_se(var_a: float, var_b: float | None, covariance: float, caller: str) -> float:
    va = _var("var_a", var_a, caller)
    vb = va if var_b is None else _var("var_b", var_b, caller)
    cov = check_number("covariance", covariance, caller=caller)
    v = va + vb - 2 * cov
    if v <= 0:
        raise CjstatsError(f"The variance of the difference in {caller} must be positive "
                           f"(var_a + var_b - 2 covariance = {v:g}).")
    return math.sqrt(v)


def _paired_or_diff_se(var_a: float | None, var_b: float | None, covariance: float,
                       var_difference: float | None, caller: str) -> float:
    if var_difference is not None:
        if var_a is not None or var_b is not None:
            raise CjstatsError(f"Pass either var_a (and var_b) or var_difference to {caller}, not both.")
        v = _var("var_difference", var_difference, caller)
        if v <= 0:
            raise CjstatsError(f"The 'var_difference' argument of {caller} must be positive. Got {v!r} instead.")
        return math.sqrt(v)
    if var_a is None:
        raise CjstatsError(f"{caller} needs var_a (the variance of a model's score) or var_difference.")
    return _diff_se(var_a, var_b, covariance, caller)


def minimum_detectable_difference(var_a: float | None = None, var_b: float | None = None, *, covariance: float = 0.0,
                                  alpha: float = 0.05, power: float = 0.8,
                                  alternative: Literal["two-sided", "one-sided"] = "two-sided",
                                  var_difference: float | None = None) -> float:
    """Smallest difference between two models' panel means detected with the given power (normal z-test).

    MDD = (z_{1−α/2} + z_{power}) · sqrt(V_a + V_b − 2 Cov),

    where V_a, V_b are the variances of the two benchmark scores (e.g. :func:`design_variance`; ``var_b``
    defaults to ``var_a``). Scores from the same scenarios and the same judge assignment are positively
    correlated (shared scenario effects, shared offsets): a positive ``covariance`` shrinks the MDD, so 0 is
    conservative then. The z-test ignores the (small) error in estimating the variances. (Beyond the paper.)

    ``var_difference`` gives Var(a − b) directly instead, e.g. the paired variance of two models that share
    scenarios and a judge schedule (:func:`cjstats.decisions.differences.difference_variance`).
    """
    caller = "minimum_detectable_difference"
    za, zb = _z(alpha, power, alternative, caller)
    return (za + zb) * _paired_or_diff_se(var_a, var_b, covariance, var_difference, caller)


def power_to_detect(difference: float, var_a: float | None = None, var_b: float | None = None, *,
                    covariance: float = 0.0, alpha: float = 0.05,
                    alternative: Literal["two-sided", "one-sided"] = "two-sided",
                    var_difference: float | None = None) -> float:
    """Power of the z-test of "equal panel means" against a true ``difference`` (the inverse of the MDD).

    Two-sided: Φ(|d|/SE − z_{1−α/2}) + Φ(−|d|/SE − z_{1−α/2}); one-sided: Φ(|d|/SE − z_{1−α}).
    ``var_difference`` gives Var(a − b) directly (paired designs), as in :func:`minimum_detectable_difference`.
    """
    caller = "power_to_detect"
    d = abs(check_number("difference", difference, caller=caller))
    za, _ = _z(alpha, None, alternative, caller)
    se = _paired_or_diff_se(var_a, var_b, covariance, var_difference, caller)
    p = _dist.norm_cdf(d / se - za)
    if alternative == "two-sided":
        p += _dist.norm_cdf(-d / se - za)
    return float(p)
