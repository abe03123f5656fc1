r"""``JointStats``: the statistics of one joint unit (every model of one criterion) with a model axis.

The joint multi-model fit (``cj.fit_joint``, ``cj.compare_models``) needs, besides each model's own cell
statistics, the scenario axis the models share: the scenario effects alpha_i are common to every model, so
(model, scenario) groups of different models meet in one scenario block of the covariance. A
:class:`JointStats` is the per-model :class:`~cjstats.stats.CellStats` of one criterion (each computed by
any engine) plus the union of their scenario and judge labels and where each model's scenarios and judges
sit in it. Nothing here reads score rows.

Two views give the joint backends their numbers:

- :meth:`JointStats.for_joint_reml` (:class:`NestedStats`): the statistics of the nested REML criterion of the
  joint model. For generation cells c (n_c rows, judge counts D_c, score sum Y_c) inside (model, scenario)
  groups g inside scenarios i, H = V/s2_eps is block-diagonal by scenario and every product
  [X y]'H^{-1}[X y] needs only, per model and cell size h, sum_c [D_c; Y_c][D_c; Y_c]' (the per-model
  ``dd``, ``dy``, ``yyc`` of :class:`CellStats`), per group and size h the sums of [D_c; Y_c] and the cell
  counts (``s_isk``, ``ys``, ``cnt_is``), and per (model, judge) the counts and sums (docs/architecture.md).
  Scores are centred by one constant per model (its mean), which lies in the column space of both the
  model x judge and the additive model, so the fits and the likelihood-ratio test are unchanged by it.
- :meth:`JointStats.for_joint_anova` (:class:`JointBalanced`): the per-model means, per-(model, scenario)
  means on the shared scenarios and the pooled generation and residual sums of squares of a complete,
  balanced joint table, from which the three-factor mean squares follow (``cjstats.estimators.joint.anova``).
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from cjstats.exceptions import CjstatsError
from cjstats.stats.cellstats import CellStats
from cjstats.stats.covariates import SlopeStats

__all__ = ["JointStats", "NestedStats", "JointBalanced", "stack_models"]


@dataclass(frozen=True, slots=True)
class NestedStats:
    """What the joint REML criterion reads (see the module docstring); models x judges in model-major order.

    Shapes: P models, K judges (the union), S cell sizes (the union), G (model, scenario) groups model-major,
    n scenarios (the union). ``y`` is centred by ``shift[p]`` within model p.
    """

    n_rows: int
    n_models: int
    n_judges: int
    sizes: np.ndarray          # (S,)
    size_cells: np.ndarray     # (P, S) cells per model and size
    cell_aug: np.ndarray       # (P, S, K+1, K+1) sum_c [D_c; Y_c][D_c; Y_c]'
    group_aug: np.ndarray      # (G, S, K+1) sum_c [D_c; Y_c] per group and size
    group_cnt: np.ndarray      # (G, S) cells per group and size
    group_scen: np.ndarray     # (G,) scenario (union index) of each group
    group_model: np.ndarray    # (G,)
    group_starts: np.ndarray   # (P,) first group of each model
    counts: np.ndarray         # (P K,) rows per (model, judge)
    sums: np.ndarray           # (P K,) sums of centred scores per (model, judge)
    yy: float                  # sum of squared centred scores
    shift: np.ndarray          # (P,) the centring constant of each model
    n_cells: int
    n_scenarios: int

    @property
    def n_groups(self) -> int:
        return int(self.group_scen.shape[0])

    @property
    def has_generation(self) -> bool:
        """Some (model, scenario) group has two or more generation cells."""
        return self.n_cells > self.n_groups


@dataclass(frozen=True, slots=True)
class JointBalanced:
    """The numbers of a complete, balanced joint table (P models x n shared scenarios x m generations x K judges).

    ``scenario_means[p, i]`` is model p's mean on shared scenario i, ``cell_means[p, l]`` its judge l mean;
    ``ss_generation`` = sum_p K sum_ij (Y_pij - Y_pi)^2 and ``ss_residual`` = sum_p SS_W(p), the per-model
    generation and residual sums of squares pooled.
    """

    p: int
    n: int
    m: int
    k: int
    model_means: np.ndarray     # (P,)
    scenario_means: np.ndarray  # (P, n)
    cell_means: np.ndarray      # (P, K)
    ss_generation: float
    ss_residual: float
    dropped_scenarios: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class JointStats:
    """The statistics of every model of one criterion on a shared scenario and judge axis.

    Attributes
    ----------
    criterion : str or None
        The criterion of the unit (``None`` for a table without one).
    models : tuple of str
        The models, in the table's order.
    units : tuple of CellStats
        One per model.
    scenario_labels : ndarray
        The union of the models' scenarios (sorted when the labels can be ordered).
    scenario_index : tuple of ndarray
        Per model, the position in ``scenario_labels`` of each of its scenarios.
    judge_labels : tuple of str
        The union of the models' judges, sorted.
    judge_index : tuple of ndarray
        Per model, the position in ``judge_labels`` of each of its judges.
    """

    criterion: str | None
    models: tuple[str, ...]
    units: tuple[CellStats, ...]
    scenario_labels: np.ndarray
    scenario_index: tuple[np.ndarray, ...]
    judge_labels: tuple[str, ...]
    judge_index: tuple[np.ndarray, ...]

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def k(self) -> int:
        return len(self.judge_labels)

    @property
    def n_scenarios(self) -> int:
        return int(self.scenario_labels.shape[0])

    @property
    def n_obs(self) -> int:
        return sum(int(u.n_obs) for u in self.units)

    def get(self, model: str) -> CellStats:
        """The statistics of one model."""
        try:
            return self.units[self.models.index(str(model))]
        except ValueError:
            raise CjstatsError(f"These statistics have no model '{model}' (models: {', '.join(self.models)})."
                               ) from None

    def presence(self) -> np.ndarray:
        """(P, n) whether model p has rows on scenario i."""
        seen = np.zeros((self.n_models, self.n_scenarios), dtype=bool)
        for p, idx in enumerate(self.scenario_index):
            seen[p, idx] = True
        return seen

    def judge_counts(self) -> np.ndarray:
        """(P, K) judge calls per model and judge (union judge order)."""
        out = np.zeros((self.n_models, self.k))
        for p, (u, jidx) in enumerate(zip(self.units, self.judge_index)):
            out[p, jidx] = u.judge_n
        return out

    # -- REML view ---------------------------------------------------------------------------------------
    def for_joint_reml(self) -> NestedStats:
        """The statistics of the joint nested REML criterion (:class:`NestedStats`)."""
        p_n, k = self.n_models, self.k
        sizes = np.unique(np.concatenate([u.sizes for u in self.units]))
        n_s = sizes.shape[0]
        k1 = k + 1
        size_cells = np.zeros((p_n, n_s))
        cell_aug = np.zeros((p_n, n_s, k1, k1))
        counts = np.zeros((p_n, k))
        sums = np.zeros((p_n, k))
        shift = np.zeros(p_n)
        yy = 0.0
        g_aug, g_cnt, g_scen, g_model = [], [], [], []
        for p, (u, sidx_scen, jidx) in enumerate(zip(self.units, self.scenario_index, self.judge_index)):
            ybar = float((u.shift @ u.judge_n + u.judge_sum.sum()) / u.n_obs)
            c = u.recentre(np.full(u.k, ybar))
            shift[p] = ybar
            sidx = np.searchsorted(sizes, u.sizes)
            jj = np.r_[jidx, k]                                   # judges then the score column
            aug = np.zeros((u.sizes.shape[0], k1, k1))
            aug[np.ix_(np.arange(u.sizes.shape[0]), jidx, jidx)] = c.dd
            aug[:, jidx, k] = c.dy
            aug[:, k, jidx] = c.dy
            aug[:, k, k] = c.yyc
            cell_aug[p, sidx] = aug
            size_cells[p, sidx] = u.size_cells
            counts[p, jidx] = u.judge_n
            sums[p, jidx] = c.judge_sum
            yy += float(c.yy)
            n_p = u.n_scenarios
            ga = np.zeros((n_p, n_s, k1))
            ga[np.ix_(np.arange(n_p), sidx, jj[:-1])] = u.s_isk
            ga[:, sidx, k] = c.ys
            gc = np.zeros((n_p, n_s))
            gc[:, sidx] = u.cnt_is
            order = np.argsort(sidx_scen, kind="stable")        # groups of a model in scenario order
            g_aug.append(ga[order])
            g_cnt.append(gc[order])
            g_scen.append(sidx_scen[order])
            g_model.append(np.full(n_p, p, dtype=np.int64))
        group_model = np.concatenate(g_model)
        return NestedStats(
            n_rows=self.n_obs, n_models=p_n, n_judges=k, sizes=sizes.astype(np.float64), size_cells=size_cells,
            cell_aug=cell_aug, group_aug=np.concatenate(g_aug), group_cnt=np.concatenate(g_cnt),
            group_scen=np.concatenate(g_scen).astype(np.int64), group_model=group_model,
            group_starts=np.searchsorted(group_model, np.arange(p_n)), counts=counts.reshape(-1),
            sums=sums.reshape(-1), yy=yy, shift=shift, n_cells=sum(int(u.n_cells) for u in self.units),
            n_scenarios=self.n_scenarios,
        )

    # -- covariates ---------------------------------------------------------------------------------------
    @property
    def covariates(self) -> tuple[str, ...]:
        """The covariates whose statistics every model carries (empty when built without ``covariates=``)."""
        names = {None if u.cov is None else u.cov.names for u in self.units}
        return (next(iter(names)) or ()) if len(names) == 1 else ()

    def for_joint_slopes(self, ns: NestedStats | None = None) -> SlopeStats:
        r"""The joint view of the covariate statistics (:class:`~cjstats.stats.covariates.SlopeStats`): the judges'
        slope columns of the joint REML criterion, each covariate centred at its mean over every model's score rows,
        laid out beside ``ns`` (:meth:`for_joint_reml`, computed when not given). Every model's statistics are
        re-centred (y to its model's mean as in :meth:`for_joint_reml`, x to xbar) by exact algebra, then placed on
        the union's judges, sizes and groups."""
        if not self.covariates:
            raise CjstatsError("These statistics carry no covariate statistics; build them with "
                               "cj.stats.build_stats(table, unit=('criterion',), covariates=[...]).")
        ns = self.for_joint_reml() if ns is None else ns
        names = self.covariates
        p_n, k, nc = self.n_models, self.k, len(names)
        e = nc * k
        w = k + e + 1
        pk = p_n * k
        n_s = ns.sizes.shape[0]
        xbar = sum(u.cov.xshift * u.n_obs + u.cov.xd.sum(axis=1) for u in self.units) / self.n_obs
        base = np.r_[np.arange(k), k + e]
        cell_aug = np.zeros((p_n, n_s, w, w))
        cell_aug[np.ix_(np.arange(p_n), np.arange(n_s), base, base)] = ns.cell_aug
        group_aug = np.zeros((ns.n_groups, n_s, w))
        group_aug[:, :, base] = ns.group_aug
        gram = np.zeros((pk + e + 1, pk + e + 1))
        gram[np.arange(pk), np.arange(pk)] = ns.counts
        gram[:pk, -1] = ns.sums
        gram[-1, :pk] = ns.sums
        gram[-1, -1] = ns.yy
        for p, (u, sidx_scen, jidx) in enumerate(zip(self.units, self.scenario_index, self.judge_index)):
            c = u.recentre(np.full(u.k, ns.shift[p]))
            cv = c.cov.recentre_x(xbar, c)
            ku = jidx.shape[0]
            sidx = np.searchsorted(ns.sizes, u.sizes)
            eidx = (k + np.arange(nc)[:, None] * k + jidx[None, :]).ravel()          # (c, l) covariate-major
            for su, s in enumerate(sidx):
                blk = cell_aug[p, s]
                de = cv.dxd[su].transpose(1, 0, 2).reshape(ku, nc * ku)               # [l, (c, l')]
                blk[np.ix_(jidx, eidx)] = de
                blk[np.ix_(eidx, jidx)] = de.T
                blk[np.ix_(eidx, eidx)] = cv.dxxd[su].transpose(0, 2, 1, 3).reshape(nc * ku, nc * ku)
                blk[eidx, -1] = cv.dxy[su].reshape(-1)
                blk[-1, eidx] = cv.dxy[su].reshape(-1)
            n_p = u.n_scenarios
            ga = np.zeros((n_p, n_s, nc, k))
            ga[np.ix_(np.arange(n_p), sidx, np.arange(nc), jidx)] = cv.sxd
            order = np.argsort(sidx_scen, kind="stable")        # groups of a model in scenario order
            g0 = int(ns.group_starts[p])
            group_aug[g0:g0 + n_p, :, k:k + e] = ga[order].reshape(n_p, n_s, e)
            ge = pk + eidx - k                                                          # X_e columns in gram
            cells = np.tile(p * k + jidx, nc)
            gram[cells, ge] += cv.xd.reshape(-1)
            gram[ge, cells] += cv.xd.reshape(-1)
            for a in range(nc):
                for b in range(nc):
                    gram[pk + a * k + jidx, pk + b * k + jidx] += cv.xxd[a, b]
            gram[ge, -1] += cv.xy.reshape(-1)
        gram[-1, pk:pk + e] = gram[pk:pk + e, -1]
        return SlopeStats(names=names, means=xbar, x_min=np.min([u.cov.x_min for u in self.units], axis=0),
                          x_max=np.max([u.cov.x_max for u in self.units], axis=0), n=e, gram=gram,
                          cell_aug=cell_aug, group_aug=group_aug)

    # -- ANOVA view --------------------------------------------------------------------------------------
    def complete_scenarios(self) -> tuple[np.ndarray, int, str | None]:
        """Which shared scenarios are complete and balanced for the joint ANOVA, m, and why the first is not.

        Scenario i is complete when every model has m cells there, each scored once by every judge of the
        union, with m the largest number of generations of any (model, scenario) group.
        """
        k = self.k
        p_n, n = self.n_models, self.n_scenarios
        m = max(int(u.generations_per_scenario.max()) for u in self.units)
        ok = np.ones((p_n, n), dtype=bool)
        first_judge = np.zeros((p_n, n), dtype=np.int64)
        for p, (u, sidx, jidx) in enumerate(zip(self.units, self.scenario_index, self.judge_index)):
            present = np.zeros(n, dtype=bool)
            present[sidx] = True
            ok[p, ~present] = False
            gens = u.generations_per_scenario
            counts = np.zeros((u.n_scenarios, k))             # judge calls per scenario, union judges
            counts[:, jidx] = u.s_isk.sum(axis=1)
            good = (gens == m) & np.all(counts == m, axis=1) & (u.cnt_is[:, u.sizes != k].sum(axis=1) == 0)
            ok[p, sidx] &= good
            first_judge[p, sidx] = np.argmax(counts < m, axis=1)
        keep = ok.all(axis=0)
        reason = None
        if not keep.all():
            bad = int(np.flatnonzero(~keep)[0])
            pm = int(np.flatnonzero(~ok[:, bad])[0])
            short_any = any(int(u.generations_per_scenario.min()) != m for u in self.units)
            reason = (f"model '{self.models[pm]}' has fewer generations there" if short_any else
                      f"model '{self.models[pm]}', judge '{self.judge_labels[first_judge[pm, bad]]}' is missing")
            reason = f"first: scenario {self.scenario_labels[bad]!r}, {reason}"
        return keep, m, reason

    def for_joint_anova(self) -> JointBalanced:
        """The numbers of the three-factor ANOVA (:class:`JointBalanced`); the table must be complete and balanced.

        Raises one sentence naming the first scenario that is not (``cj.fit_joint(..., incomplete="drop")``
        drops such scenarios from the score rows before the statistics are built).
        """
        keep, m, reason = self.complete_scenarios()
        n_bad = int((~keep).sum())
        if n_bad:
            raise CjstatsError(
                f"The ANOVA joint fit needs a complete balanced table (every model x judge on every scenario, "
                f"the same number of generations): {n_bad} scenarios are not ({reason}). Pass incomplete='drop' "
                f"to drop those scenarios, or use method='reml' (what method='auto', the command line's default, "
                f"chooses for an incomplete table).")
        p_n, k, n = self.n_models, self.k, self.n_scenarios
        if n < 2:
            raise CjstatsError("Fewer than 2 scenarios are complete for every model and judge, so the ANOVA joint "
                               "fit cannot estimate the scenario variance. Use method='reml'.")
        model_means = np.zeros(p_n)
        scen = np.zeros((p_n, n))
        cells = np.zeros((p_n, k))
        ss_g = ss_w = 0.0
        for p, (u, sidx, jidx) in enumerate(zip(self.units, self.scenario_index, self.judge_index)):
            ms, _ = u.for_anova()
            model_means[p] = ms.grand_mean
            cells[p, jidx] = ms.judge_means
            s = int(np.flatnonzero(u.sizes == k)[0])
            scen[p, sidx] = (u.ys[:, s] + m * float(u.shift.sum())) / (m * k)
            ss_g += ms.ss_generation
            ss_w += ms.ss_residual
        return JointBalanced(p=p_n, n=n, m=m, k=k, model_means=model_means, scenario_means=scen, cell_means=cells,
                             ss_generation=float(ss_g), ss_residual=float(ss_w))


def _union(arrays: list[np.ndarray]) -> np.ndarray:
    allv = np.concatenate([np.asarray(a, dtype=object) for a in arrays])
    try:
        return np.asarray(sorted(set(allv.tolist())), dtype=object)
    except TypeError:  # unorderable labels: first-seen order
        return np.asarray(list(dict.fromkeys(allv.tolist())), dtype=object)


def stack_models(units: list[CellStats] | tuple[CellStats, ...]) -> JointStats:
    """The :class:`JointStats` of the per-model statistics of one criterion (each model once)."""
    units = tuple(units)
    if not units:
        raise CjstatsError("stack_models needs the statistics of at least one model.")
    crit = units[0].criterion
    models = tuple(u.model for u in units)
    if len(set(models)) != len(models):
        dup = next(x for x in models if models.count(x) > 1)
        raise CjstatsError(f"stack_models takes each model once; model '{dup}' appears twice (merge its chunks "
                           f"with cj.stats.merge_stats first).")
    if any(u.criterion != crit for u in units):
        other = next(u.criterion for u in units if u.criterion != crit)
        raise CjstatsError(f"stack_models stacks the models of one criterion; got criteria {crit!r} and {other!r}.")
    for u in units:   # the joint model pairs the models' scenarios, which the pattern form does not keep
        u.require_scenarios("The joint statistics of several models (build_stats(..., unit=('criterion',)), "
                            "cj.compare_models, cj.fit_joint)")
    scen = _union([u.scenario_labels for u in units])
    pos = {lab: i for i, lab in enumerate(scen.tolist())}
    judges = tuple(sorted(set().union(*(u.judge_labels for u in units))))
    jpos = {lab: i for i, lab in enumerate(judges)}
    return JointStats(
        criterion=crit, models=models, units=units, scenario_labels=scen,
        scenario_index=tuple(np.array([pos[s] for s in np.asarray(u.scenario_labels, dtype=object).tolist()],
                                      dtype=np.int64) for u in units),
        judge_labels=judges,
        judge_index=tuple(np.array([jpos[j] for j in u.judge_labels], dtype=np.int64) for u in units),
    )

