r"""Posterior-predictive design variances for the ordinal (cumulative-logit) Bayesian fit.

The paper's allocation analysis rests on the closed form of Proposition 1 (``eq:variance``) and the strategy
variances ``eq:strat_all`` (A: all judges), ``eq:strat_rand`` (B: a random judge per generation) and
``eq:strat_cycle`` (C: CyclicJudge). Those hold for the linear model, Eq. 1, which treats scores as unbounded
and continuous; the paper's Limitations section ("Linear model approximation") notes that judge scores are
bounded ordinal variables, that a cumulative-link mixed model would fit them properly, and that such a model
"does not yield the closed-form variance decomposition that our allocation analysis relies on". This module
replaces the closed form by simulation: for ``likelihood="ordinal"`` fits (:mod:`cjstats.estimators.bayes`,
model in :mod:`cjstats.estimators.bayes.ordinal`) the variance of the benchmark score of a candidate design is
predicted by simulating new scores, on the SCORE scale, from the posterior.

Simulation scheme, for one posterior draw d (cutpoints c, panel offsets gamma_1..gamma_K, sigma_alpha^2,
sigma_beta^2; category scores v_0 < ... < v_{J-1}, the distinct observed scores) and one design (strategy,
n scenarios, m generations, k judges per generation), repeated ``n_sims`` times:

1. alpha_i ~ N(0, sigma_alpha^2), i = 1..n (new scenarios); beta_ij ~ N(0, sigma_beta^2), j = 1..m; when the
   posterior has a scenario x judge variance, (alpha gamma)_il ~ N(0, sigma_alpha_gamma^2) for every scenario
   and panel judge, shared by all generations of scenario i that judge l scores (added to eta in step 3);
2. judges per generation: ``all`` every one of the K panel judges (k = K, strategy A); ``random`` k distinct
   judges drawn uniformly per generation (k = 1 is strategy B); ``cyclic`` one rotation of the calls
   t = 0..nmk-1 (ordered by scenario, generation, slot, the scenarios in shuffled order) through a shuffled
   judge order, call t going to judge perm[t mod K] (k = 1 is strategy C, as
   :func:`cjstats.decisions.schedules.cyclic_schedule` lays it out; the shuffle makes the leftover of an incomplete rotation
   fall on a random subset of judges);
3. every call gets eta = alpha_i + beta_ij + gamma_l, the latent score eta + e with e standard logistic (the
   model's link; standard normal for a probit fit, ``params["link"] == "probit"``), and the observed score v_q with q = #{cutpoints below eta + e};
4. the benchmark score is the mean of the n m k observed scores, X_bar.

The estimand is the panel-mean score of the draw, mu_d = (1/K) sum_l E[Y | new scenario and generation, judge
l] (:func:`cjstats.estimators.bayes.ordinal.expected_score` without the location shift), and the predicted
variance of the design under draw d is the Monte Carlo mean of (X_bar - mu_d)^2 over the simulations: the mean
squared error around the panel mean, which is Var(X_bar) for the unbiased strategies and, as in
Proposition 1, includes the sigma_alpha^2/n scenario term. Across the draws (an evenly spaced subsample of
``n_draws`` of them) we report the posterior mean, an equal-tailed interval and, among the designs with the
same number of calls (equal budget), the probability that each design has the smallest variance.

The population location of the scenario effects is taken at the cutpoints' origin (the fit's zero-sum
scenario effects put it at the mean of the observed scenarios); this ignores the sigma_alpha^2/n_fit
uncertainty of that origin, which moves the variance only through the curvature of the link.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError

__all__ = ["PREDICTIVE_STRATEGIES", "PosteriorPredictive", "ordinal_draws", "predictive_design_variance",
           "simulate_design_variance"]

#: Strategies simulated: ``all`` (A, ``eq:strat_all``), ``random`` (B, ``eq:strat_rand``), ``cyclic``
#: (C, ``eq:strat_cycle``).
PREDICTIVE_STRATEGIES: tuple[str, ...] = ("all", "random", "cyclic")

_CHUNK = 4_000_000     # latent scores simulated at once (memory bound)


# --------------------------------------------------------------------------------------------- inputs
def _is_ordinal(fit: Any) -> bool:
    """A latent-scale fit (the backend's declared capability): the ordinal model's posterior."""
    return getattr(fit, "scale", "score") == "latent"


def _group_key(fit: Any, model: str | None, criterion: str | None, caller: str) -> tuple[str, str, str | None]:
    posterior = getattr(fit, "posterior", None)
    if not posterior:
        raise CjstatsError(f"{caller} needs a fit from cjstats.estimate(..., method='bayes', "
                           f"likelihood='ordinal'), which keeps the posterior.")
    model, criterion = fit.resolve_group(model, criterion)
    key = model if criterion is None else f"{model} / {criterion}"
    if key not in posterior:
        raise CjstatsError(f"The fit passed to {caller} has no posterior for '{key}'.")
    return key, model, criterion


def _values_from_labels(labels: Sequence[Any], caller: str) -> np.ndarray:
    try:
        parts = [str(s).split("|") for s in labels]
        vals = [float(p[0]) for p in parts] + [float(parts[-1][1])]
    except (ValueError, IndexError) as exc:
        raise CjstatsError(f"The cutpoint labels of the fit passed to {caller} do not give the category scores "
                           f"('low|high' expected).") from exc
    return np.asarray(vals, dtype=np.float64)


def ordinal_draws(fit: Any, *, model: str | None = None, criterion: str | None = None,
                  n_draws: int | None = None, caller: str = "ordinal_draws") -> dict[str, Any]:
    """The posterior draws the simulation needs, from an ordinal Bayesian fit, or for a maximum-likelihood fit
    (``method="ordinal"``) draws from the asymptotic normal of its estimates
    (:func:`cjstats.estimators.ordinal_ml.parameter_draws`, seeded with the fit's seed, 200 draws by default;
    per-judge thresholds give ``cutpoints`` (D, K, J - 1) and zero offsets, and ``link`` is the fit's).

    Returns a dict with ``cutpoints`` (D, J - 1), ``gamma`` (D, K), ``s2_scenario`` (D,), ``s2_generation``
    (D,) (zeros when generation is not identifiable), ``values`` (J,) the category scores (read from the
    cutpoint labels ``"v_q|v_q+1"``), ``judges``, ``generation_identifiable``, ``n_scenarios`` (of the data),
    ``model`` and ``criterion``. ``n_draws`` keeps an evenly spaced subsample of the chain x draw sequence.
    ``s2_scenario_judge`` (D,) holds the scenario x judge interaction variance on the latent scale when the
    posterior has a ``scenario_judge`` variable (zeros otherwise).
    """
    from cjstats.results.components import VarianceComponents

    if not isinstance(fit, VarianceComponents) or not _is_ordinal(fit):
        raise CjstatsError(f"{caller} needs a fit from cjstats.estimate(..., method='bayes', "
                           f"likelihood='ordinal') or method='ordinal'; use cjstats.optimise or cjstats.decisions.formulas for score-scale "
                           f"(Gaussian) components.")
    from cjstats.estimators import REGISTRY

    backend = REGISTRY.get(fit.method)
    hooks = getattr(getattr(backend, "capabilities", None), "hooks", ())
    if not getattr(fit, "posterior", None) and "parameter_draws" in hooks:    # ML fit: asymptotic-normal draws
        parameter_draws = backend.hook("parameter_draws")
        model, criterion = fit.resolve_group(model, criterion)
        key = model if criterion is None else f"{model} / {criterion}"
        if "x_covariance" not in fit.diagnostics.get(key, {}):
            raise CjstatsError(f"The method='{fit.method}' fit passed to {caller} carries no parameter covariance for "
                               f"'{key}'; refit it with this version of cjstats.")
        return {**parameter_draws(fit, key, n_draws=200 if n_draws is None else n_draws), "model": model,
                "criterion": criterion}
    key, model, criterion = _group_key(fit, model, criterion, caller)
    post = fit.posterior[key].posterior

    def arr(name: str) -> np.ndarray:
        a = np.asarray(post[name].transpose("chain", "draw", ...).values, dtype=np.float64)
        return a.reshape(a.shape[0] * a.shape[1], *a.shape[2:])

    cut, gamma, s2a = arr("cutpoints"), arr("gamma"), arr("scenario")
    gen_ok = "generation" in post.data_vars
    s2b = arr("generation") if gen_ok else np.zeros_like(s2a)
    s2sj = arr("scenario_judge") if "scenario_judge" in post.data_vars else np.zeros_like(s2a)
    total = s2a.shape[0]
    idx = np.arange(total)
    if n_draws is not None and n_draws < total:
        idx = np.unique(np.round(np.linspace(0, total - 1, n_draws)).astype(np.int64))
    des = fit.design
    sel = des["model"].astype(str) == model
    if criterion is not None and "criterion" in des.columns:
        sel &= des["criterion"].astype(str) == criterion
    n_data = int(des.loc[sel, "n_scenarios"].iloc[0]) if sel.any() else None
    return {"cutpoints": cut[idx], "gamma": gamma[idx], "s2_scenario": s2a[idx], "s2_generation": s2b[idx],
            "s2_scenario_judge": s2sj[idx],
            "values": _values_from_labels(post["cutpoints"].coords["cutpoint"].values, caller),
            "judges": [str(j) for j in post["gamma"].coords["judge"].values],
            "generation_identifiable": gen_ok, "n_scenarios": n_data, "model": model, "criterion": criterion,
            "link": str(fit.provenance.get("options", {}).get("link", "logit"))}


def _designs_frame(designs: Any, k_total: int, gen_ok: bool, caller: str) -> pd.DataFrame:
    if isinstance(designs, Mapping):
        designs = [designs]
    d = pd.DataFrame(designs).copy()
    if d.empty or not {"strategy", "n", "m"} <= set(d.columns):
        raise CjstatsError(f"The 'designs' argument of {caller} must be rows with strategy, n, m (and "
                           f"judges_per_generation for random and cyclic), such as "
                           f"[{{'strategy': 'cyclic', 'n': 30, 'm': 2}}].")
    if "judges_per_generation" not in d.columns:
        d["judges_per_generation"] = np.nan
    rows = []
    for r in d.itertuples(index=False):
        s = str(r.strategy)
        if s not in PREDICTIVE_STRATEGIES:
            raise CjstatsError(f"The strategy '{s}' given to {caller} is not one of "
                               f"{', '.join(PREDICTIVE_STRATEGIES)}.")
        if pd.isna(r.judges_per_generation):
            k = k_total if s == "all" else 1
        else:
            k = r.judges_per_generation
        vals = {"n": r.n, "m": r.m, "judges_per_generation": k}
        for name, v in vals.items():
            if isinstance(v, (bool, np.bool_)) or not float(v).is_integer() or float(v) < 1:
                raise CjstatsError(f"The '{name}' of every design given to {caller} must be a positive integer. "
                                   f"Got {v!r} instead.")
        k = int(k)
        if s == "all" and k != k_total:
            raise CjstatsError(f"Strategy 'all' of {caller} uses every one of the {k_total} judges, so "
                               f"judges_per_generation must be {k_total} (or left out). Got {k} instead.")
        if k > k_total:
            raise CjstatsError(f"A design given to {caller} asks for {k} judges per generation but the panel has "
                               f"{k_total}.")
        if int(r.m) > 1 and not gen_ok:
            raise CjstatsError(f"The fit passed to {caller} had one generation per scenario, so generation is not "
                               f"identifiable and designs must use m = 1.")
        rows.append({"strategy": s, "judges_per_generation": k, "n": int(r.n), "m": int(r.m)})
    out = pd.DataFrame(rows)
    out["calls"] = out["n"] * out["m"] * out["judges_per_generation"]
    return out


# ------------------------------------------------------------------------------------------ simulation
def _panel_mean(params: Mapping[str, Any]) -> np.ndarray:
    """mu_d, the panel-mean score of each draw: the ordinal model's public :func:`expected_score` (the one
    formula, shared with the backend's ``mu``) without the location shift."""
    from cjstats.results.likelihoods import expected_score

    s2 = np.asarray(params["s2_scenario"], dtype=np.float64) + np.asarray(params["s2_generation"], dtype=np.float64)
    if "s2_scenario_judge" in params:                  # (alpha gamma)_il ~ N(0, s2_sj) shifts judge l's latent mean
        s2 = s2 + np.asarray(params["s2_scenario_judge"], dtype=np.float64)
    cut = np.asarray(params["cutpoints"], dtype=np.float64)
    values = np.asarray(params["values"], dtype=np.float64)
    gamma = np.asarray(params["gamma"], dtype=np.float64)
    link = str(params.get("link", "logit"))
    if cut.ndim == 3:                                  # per-judge thresholds (D, K, J-1): the mean over judges
        return np.mean([expected_score(cut[:, j], values, gamma[:, j:j + 1], s2, link=link)
                        for j in range(cut.shape[1])], axis=0)
    return expected_score(cut, values, gamma, s2, link=link)


def _judges(strategy: str, shape: tuple[int, ...], n: int, m: int, k: int, kt: int,
            rng: np.random.Generator) -> np.ndarray:
    """Judge index of every call, shape (*shape, n, m, k)."""
    if strategy == "all":
        return np.broadcast_to(np.arange(kt), (*shape, n, m, kt))
    if strategy == "random":                                  # k distinct judges per generation
        u = rng.random((*shape, n, m, kt))
        return np.argsort(u, axis=-1)[..., :k]
    perm = np.argsort(rng.random((*shape, kt)), axis=-1)        # shuffled judge order per replicate
    t = np.arange(n * m * k).reshape(n, m, k) % kt               # rotation position of every call
    return perm[..., t]


def _simulate_squares(params: Mapping[str, Any], mu: np.ndarray, strategy: str, n: int, m: int, k: int,
                      n_sims: int, rng: np.random.Generator) -> np.ndarray:
    """(D, n_sims) squared errors (X_bar - mu_d)^2 of one design."""
    cut = np.asarray(params["cutpoints"], dtype=np.float64)
    gamma = np.asarray(params["gamma"], dtype=np.float64)
    values = np.asarray(params["values"], dtype=np.float64)
    sa = np.sqrt(np.asarray(params["s2_scenario"], dtype=np.float64))
    sb = np.sqrt(np.asarray(params["s2_generation"], dtype=np.float64))
    s2sj = np.asarray(params.get("s2_scenario_judge", np.zeros_like(sa)), dtype=np.float64)
    ssj = np.sqrt(np.broadcast_to(s2sj, sa.shape))
    n_d, kt = gamma.shape
    probit = str(params.get("link", "logit")) == "probit"     # the latent residual: standard normal, else logistic
    per_draw = n_sims * n * m * k
    step = max(1, _CHUNK // max(per_draw, 1))
    out = np.empty((n_d, n_sims))
    dv = np.diff(values)
    for lo in range(0, n_d, step):
        hi = min(n_d, lo + step)
        dd = hi - lo
        shape = (dd, n_sims)
        alpha = rng.standard_normal((*shape, n, 1, 1)) * sa[lo:hi, None, None, None, None]
        beta = rng.standard_normal((*shape, n, m, 1)) * sb[lo:hi, None, None, None, None]
        jdx = _judges(strategy, shape, n, m, k, kt, rng)
        g = gamma[lo:hi][np.arange(dd)[:, None, None, None, None], jdx]
        if (ssj[lo:hi] > 0).any():                   # (alpha gamma)_il: one per scenario and panel judge
            ag = rng.standard_normal((*shape, n, 1, kt)) * ssj[lo:hi, None, None, None, None]
            g = g + np.take_along_axis(np.broadcast_to(ag, (*shape, n, m, kt)), np.asarray(jdx), axis=-1)
        noise = rng.standard_normal(g.shape) if probit else rng.logistic(size=g.shape)
        latent = alpha + beta + g + noise
        score = np.full(latent.shape, values[0])
        if cut.ndim == 3:                                    # per-judge thresholds: judge l's cutpoints
            cj = cut[lo:hi][np.arange(dd)[:, None, None, None, None], jdx]        # (dd, sims, n, m, k, J-1)
            score += (np.asarray(latent)[..., None] > cj) @ dv
        else:
            for q in range(cut.shape[-1]):                   # v_q = v_0 + sum over passed cutpoints of the steps
                score += dv[q] * (latent > cut[lo:hi, q, None, None, None, None])
        xbar = score.reshape(dd, n_sims, -1).mean(axis=-1)
        out[lo:hi] = (xbar - mu[lo:hi, None]) ** 2
    return out


def simulate_design_variance(params: Mapping[str, Any], designs: Any, *, n_sims: int = 400, seed: int = 0,
                             caller: str = "simulate_design_variance", progress: bool | None = None
                             ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Predicted variances of ``designs`` for given latent parameters (the engine of
    :func:`predictive_design_variance`; see the module docstring for the scheme).

    ``params`` holds ``cutpoints`` (D, J - 1) (or (D, K, J - 1): per-judge thresholds), ``gamma`` (D, K), ``s2_scenario`` (D,), ``s2_generation`` (D,)
    and ``values`` (J,), and optionally ``link`` (``"logit"``, the default, or ``"probit"``: the latent
    residual's distribution in step 3, standard logistic or standard normal). Returns the validated design
    frame, the (designs, D) per-draw predicted variances and the (designs, D) Monte Carlo standard errors of
    those. Every design uses a fresh generator seeded with ``seed``, so designs of the same shape share random numbers (common random numbers: differences between
    strategies are less noisy than each variance). ``progress``: count the designs on stderr (None: only when
    stderr is a terminal; :mod:`cjstats._progress`).
    """
    from cjstats._progress import progress_iter

    gamma = np.atleast_2d(np.asarray(params["gamma"], dtype=np.float64))
    kt = gamma.shape[1]
    gen_ok = bool(params.get("generation_identifiable", True))
    d = _designs_frame(designs, kt, gen_ok, caller)
    if not isinstance(n_sims, (int, np.integer)) or isinstance(n_sims, bool) or n_sims < 2:
        raise CjstatsError(f"The 'n_sims' argument of {caller} must be an integer >= 2. Got {n_sims!r} instead.")
    mu = _panel_mean(params)
    var = np.empty((len(d), gamma.shape[0]))
    mcse = np.empty_like(var)
    rows = progress_iter(list(d.itertuples(index=False)), "simulating designs", progress=progress)
    for i, r in enumerate(rows):
        sq = _simulate_squares(params, mu, r.strategy, r.n, r.m, r.judges_per_generation, int(n_sims),
                               np.random.default_rng(seed))
        var[i] = sq.mean(axis=1)
        mcse[i] = sq.std(axis=1, ddof=1) / math.sqrt(n_sims)
    return d, var, mcse


def _p_best_equal_budget(d: pd.DataFrame, var: np.ndarray) -> np.ndarray:
    """Share of draws in which each design has the smallest variance among the designs with its number of calls."""
    p = np.zeros(len(d))
    for idx in d.groupby("calls").indices.values():
        v = var[idx]
        win = v <= v.min(axis=0) * (1 + 1e-12)
        p[idx] = (win / win.sum(axis=0)).mean(axis=1)
    return p


def predictive_design_variance(fit: Any, *, model: str | None = None, criterion: str | None = None,
                               designs: Any, n_sims: int = 400, n_draws: int = 200,
                               seed: int = 0, progress: bool | None = None) -> pd.DataFrame:
    """Posterior-predictive variance of the benchmark score (score scale) for candidate designs, ordinal fits.

    Parameters
    ----------
    fit : VarianceComponents
        From ``cjstats.estimate(..., method="bayes", likelihood="ordinal")``. Gaussian fits are refused: their
        components are on the score scale already and :func:`cjstats.optimise` uses the closed forms.
    model, criterion : str, optional
        The group (default: the first).
    designs : sequence of mappings or DataFrame
        Rows with ``strategy`` (``all``, ``random``, ``cyclic``), ``n``, ``m`` and ``judges_per_generation``
        (default 1 for random and cyclic; ``all`` uses every judge).
    n_sims : int
        Simulated studies per posterior draw and design.
    n_draws : int
        Posterior draws used (an evenly spaced subsample).
    seed : int
        Seed of the simulation; the same seed gives the same numbers.
    progress : bool, optional
        Count the simulated designs on stderr; None (default): only when stderr is a terminal.

    Returns
    -------
    DataFrame
        One row per design: ``strategy``, ``judges_per_generation``, ``n``, ``m``, ``calls``, ``variance`` (the
        posterior mean of the predicted variance), ``se`` (its square root), ``variance_lower`` and
        ``variance_upper`` (equal-tailed interval over the draws at the fit's ci_level; it includes the Monte
        Carlo noise of each draw's estimate), ``mc_se`` (Monte Carlo standard error of ``variance``) and
        ``p_best`` (share of draws in which the design has the smallest variance among the designs with the
        same number of calls). ``attrs["scale"] == "score"``.

    Notes
    -----
    The simulation scheme, the estimand and the paper's limitation addressed (bounded ordinal scores, no
    closed form under a cumulative-link model) are in the module docstring. Equations: Prop. 1 ``eq:variance``
    and the strategies ``eq:strat_all``, ``eq:strat_rand``, ``eq:strat_cycle`` of the paper.
    """
    caller = "predictive_design_variance"
    if not isinstance(n_draws, (int, np.integer)) or isinstance(n_draws, bool) or n_draws < 1:
        raise CjstatsError(f"The 'n_draws' argument of {caller} must be a positive integer. Got {n_draws!r} "
                           f"instead.")
    params = ordinal_draws(fit, model=model, criterion=criterion, n_draws=int(n_draws), caller=caller)
    d, var, mcse = simulate_design_variance(params, designs, n_sims=n_sims, seed=seed, caller=caller,
                                            progress=progress)
    return _summarise(d, var, mcse, float(fit.ci_level))


def _summarise(d: pd.DataFrame, var: np.ndarray, mcse: np.ndarray, ci_level: float) -> pd.DataFrame:
    a = (1 - ci_level) / 2
    out = d.copy()
    out["variance"] = var.mean(axis=1)
    out["se"] = np.sqrt(out["variance"])
    out["variance_lower"] = np.quantile(var, a, axis=1)
    out["variance_upper"] = np.quantile(var, 1 - a, axis=1)
    out["mc_se"] = np.sqrt((mcse**2).sum(axis=1)) / var.shape[1]
    out["p_best"] = _p_best_equal_budget(d, var)
    out.attrs["scale"] = "score"
    out.attrs["ci_level"] = ci_level
    return out


# ------------------------------------------------------------------------------- the optimiser's evaluation
#: Posterior draws and simulations per draw that :func:`cjstats.optimise` uses for an ordinal fit.
OPTIMISE_DRAWS = 100
OPTIMISE_SIMS = 200


class PosteriorPredictive:
    """The variance evaluation :func:`cjstats.optimise` plugs in for a latent-scale (ordinal) fit.

    The closed forms of Proposition 1 do not hold on the score scale of a cumulative-logit model, so each
    candidate's variance is simulated (:func:`simulate_design_variance`, ``params`` from :func:`ordinal_draws`
    with :data:`OPTIMISE_DRAWS` draws, :data:`OPTIMISE_SIMS` simulated studies per draw, common random numbers
    from ``seed``). The optimiser's other steps (targets, problem, ranking, P(best), notes, the Allocation) are
    the ones of the closed forms; this object supplies only:

    - :meth:`candidates`: equal-cost calls, so for each strategy and k judges per generation the budget B is
      spent on as many scenarios as possible (the paper's Appendix: variance falls with n at a fixed budget):
      m0 = min(max(1, B // (n_max k)), m_max), m in m0..min(m0 + 2, m_max) and n = min(n_max, B // (m k));
    - :meth:`evaluate`: ``variance`` = the posterior mean over draws d of V_d (the Monte Carlo mean of
      (X_bar - mu_d)^2) and ``mc_se`` = sqrt(sum_d mcse_d^2)/D, its Monte Carlo standard error;
    - :meth:`row_draws` and :meth:`bounds`: the (rows, D) per-draw variances V_d, and their equal-tailed
      quantiles as the interval (it includes the Monte Carlo noise of each V_d).
    """

    label = "posterior-predictive simulation (ordinal fit, score scale)"
    extra_columns: tuple[str, ...] = ("mc_se",)

    def __init__(self, params: Mapping[str, Any], seed: int, caller: str = "optimise",
                 progress: bool | None = None) -> None:
        self.params = params
        self.progress = progress
        self.seed = int(seed)
        self.caller = caller
        self._var: np.ndarray | None = None

    def candidates(self, pb: Any) -> pd.DataFrame:
        """Candidate designs (strategy, judges_per_generation, n, m, calls, cost, max_cost) for ``pb.budget`` calls."""
        b = math.floor(pb.budget + 1e-9)
        rows = []
        for s in pb.strategies:
            for k in ([pb.kt] if s == "all" else range(1, max(pb.kt, 2))):
                m0 = min(max(1, b // (pb.nmax * k)), pb.m_cap)    # m = 1 data caps m at 1
                for m in range(m0, min(m0 + 2, pb.m_cap) + 1):
                    n = min(pb.nmax, b // (m * k))
                    if n >= 1:
                        rows.append({"strategy": s, "judges_per_generation": k, "n": n, "m": m})
        cand = pd.DataFrame(rows, columns=["strategy", "judges_per_generation", "n", "m"]).drop_duplicates()
        cand = cand.reset_index(drop=True)
        cand["calls"] = cand["n"] * cand["m"] * cand["judges_per_generation"]
        cand["cost"] = cand["max_cost"] = cand["calls"].astype(float)           # equal-cost calls
        return cand

    def evaluate(self, designs: pd.DataFrame) -> pd.DataFrame:
        """``designs`` with ``variance`` and ``mc_se`` from the simulation (and ``_row``, the row of V_d)."""
        d, var, mcse = simulate_design_variance(self.params, designs[["strategy", "judges_per_generation", "n", "m"]],
                                                n_sims=OPTIMISE_SIMS, seed=self.seed, caller=self.caller,
                                                progress=self.progress)
        out = designs.copy()
        out["variance"] = var.mean(axis=1)
        out["mc_se"] = np.sqrt((mcse**2).sum(axis=1)) / var.shape[1]
        out["_row"] = np.arange(len(out))
        self._var = var
        return out

    def uncertainty(self) -> str:
        return self.label

    def row_draws(self, frame: pd.DataFrame) -> np.ndarray:
        return self._var[frame["_row"].to_numpy()]

    def bounds(self, frame: pd.DataFrame, vd: np.ndarray, a: float) -> tuple[np.ndarray, np.ndarray]:
        return np.quantile(vd, a, axis=1), np.quantile(vd, 1 - a, axis=1)
