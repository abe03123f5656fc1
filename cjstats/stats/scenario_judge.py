r"""Sufficient statistics for the scenario x judge interaction (estimand ``scenario_judge``).

With the interaction the model of one unit is (docs/scenario-judge.md, ``scenario_judge``)

    X_ijl = mu + alpha_i + beta_ij + gamma_l + (alpha gamma)_il + eps_ijl,

and the scores of one scenario i are Gaussian with covariance s2_eps H_i, H_i = I + Z_i Lambda Z_i', where Z_i
holds the indicators of the scenario's random effects u_i = (alpha_i, beta_i1..beta_im, (alpha gamma)_i1..
(alpha gamma)_iK) and Lambda = diag(theta_a, theta_b 1_m, theta_sj 1_K) (relative variances). Everything a fit
needs about scenario i is then

- its design: the judge calls of each of its cells, D_i (m x K); from it W_i = Z_i'Z_i (the counts: calls in
  the scenario, per cell, per judge, and per cell and judge) and G_i = Z_i'J (J the judge columns);
- z_i = Z_i'y0_i = (scenario sum, the m cell sums, the K scenario x judge sums) of the judge-centred scores
  y0 = y - shift[judge].

Scenarios whose cells have the same judge calls (up to the order of the cells) share W and G: they form a
*pattern* p, and only the pattern's count n_p, sum_i z_i and scatter sum_i z_i z_i' enter any likelihood
(a balanced table is one pattern). Cells are put in a canonical order inside each scenario (by their judge
calls), and patterns with fewer cells than the largest are padded with empty cells, whose W and G rows are 0 and
so change nothing. Statistics of chunks split by scenario add up pattern by pattern (:func:`merge_sj_stats`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

__all__ = ["ScenarioJudgeStats", "build_sj_stats", "merge_sj_stats", "scenario_judge_pairs"]


@dataclass(frozen=True, slots=True, eq=False)
class ScenarioJudgeStats:
    """Per-pattern statistics of one unit for the scenario x judge model (module docstring).

    Shapes: P patterns, m cells per pattern (padded), K judges, q = 1 + m + K.
    """

    incidence: np.ndarray   # (P, m, K) judge calls of each cell of the pattern (0 rows pad)
    count: np.ndarray       # (P,) scenarios with the pattern
    zsum: np.ndarray        # (P, q) sum over the pattern's scenarios of z_i
    zscat: np.ndarray       # (P, q, q) sum of z_i z_i'
    shift: np.ndarray       # (K,) the centring of y0

    @property
    def m(self) -> int:
        return int(self.incidence.shape[1])

    @property
    def k(self) -> int:
        return int(self.incidence.shape[2])

    @property
    def q(self) -> int:
        return 1 + self.m + self.k

    def blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """W = Z'Z (P, q, q) and G = Z'J (P, q, K) of every pattern, from its judge calls D (m x K).

        Rows and columns: 0 the scenario, 1..m the cells, 1+m.. the scenario x judge effects. W has the calls in
        the scenario, per cell (h_c) and per judge (n_l) against the scenario row and on the diagonal, and the cell
        x judge calls D_cl between cells and judges; G has n_l (scenario row), D_c (cell rows) and diag(n_l).
        """
        d = self.incidence
        p, m, k = d.shape
        q = 1 + m + k
        h = d.sum(axis=2)                      # (P, m)
        nl = d.sum(axis=1)                     # (P, K)
        w = np.zeros((p, q, q))
        w[:, 0, 0] = h.sum(axis=1)
        w[:, 0, 1:1 + m] = w[:, 1:1 + m, 0] = h
        w[:, 0, 1 + m:] = w[:, 1 + m:, 0] = nl
        ic = np.arange(m)
        w[:, 1 + ic, 1 + ic] = h
        w[:, 1:1 + m, 1 + m:] = d
        w[:, 1 + m:, 1:1 + m] = d.transpose(0, 2, 1)
        il = np.arange(k)
        w[:, 1 + m + il, 1 + m + il] = nl
        g = np.zeros((p, q, k))
        g[:, 0, :] = nl
        g[:, 1:1 + m, :] = d
        g[:, 1 + m + il, il] = nl
        return w, g

    def with_judges(self, judges: np.ndarray, shift: np.ndarray) -> ScenarioJudgeStats:
        """The same statistics over the K judges of ``shift``, this chunk's judge l being judge ``judges[l]``.

        A judge the chunk lacks has no calls (zero incidence columns) and zero scenario x judge sums, so its
        entries of z are 0 whatever its centring (its G column is 0, so :meth:`recentre` leaves them 0). The
        canonical cell order is kept: inserting a column of zeros into every cell's judge calls does not change
        their lexicographic order.
        """
        judges = np.asarray(judges, dtype=np.int64)
        k = int(np.asarray(shift).shape[0])
        if self.k == k and np.array_equal(judges, np.arange(k)):
            return self
        p, m = self.incidence.shape[:2]
        q = 1 + m + k
        incidence = np.zeros((p, m, k))
        incidence[:, :, judges] = self.incidence
        idx = np.r_[np.arange(1 + m), 1 + m + judges]
        zsum = np.zeros((p, q))
        zsum[:, idx] = self.zsum
        zscat = np.zeros((p, q, q))
        zscat[np.ix_(np.arange(p), idx, idx)] = self.zscat
        new = np.asarray(shift, dtype=np.float64).copy()
        new[judges] = self.shift
        return ScenarioJudgeStats(incidence=incidence, count=self.count, zsum=zsum, zscat=zscat, shift=new)

    def recentre(self, shift: np.ndarray) -> ScenarioJudgeStats:
        """The same statistics with y0 = y - ``shift``[judge]: z_i -> z_i - G_p delta, delta = shift_new - shift_old."""
        new = np.asarray(shift, dtype=np.float64)
        delta = new - self.shift
        if not np.any(delta):
            return self
        _, g = self.blocks()
        gd = g @ delta                                             # (P, q)
        n = self.count[:, None]
        zsum = self.zsum - n * gd
        outer = self.zsum[:, :, None] * gd[:, None, :]
        zscat = self.zscat - outer - outer.transpose(0, 2, 1) + n[:, :, None] * gd[:, :, None] * gd[:, None, :]
        return dataclasses.replace(self, zsum=zsum, zscat=zscat, shift=new)


def scenario_judge_pairs(s_isk: np.ndarray) -> int:
    """Largest number of calls of one judge on one scenario (from the per-scenario judge counts (n, S, K)).

    The interaction is identifiable only when it is at least 2 for some pair: a judge scored several
    generations of a scenario.
    """
    if s_isk.size == 0:
        return 0
    return int(np.rint(s_isk.sum(axis=1)).max())


def build_sj_stats(y0: np.ndarray, cell: np.ndarray | None, judge: np.ndarray | None, cell_scen: np.ndarray,
                   k: int, shift: np.ndarray, *, d_cell: np.ndarray | None = None, ysum: np.ndarray | None = None,
                   scen_judge: np.ndarray | None = None, complete: bool = False) -> ScenarioJudgeStats:
    """Reduce one unit's rows (judge-centred scores ``y0``, 0-based cell, judge and cell -> scenario codes).

    ``d_cell`` (cells x K judge calls), ``ysum`` (cell sums of y0) and ``scen_judge`` (scenarios x K sums of y0)
    are taken from the caller when it has them; ``complete=True`` says every cell has one call of every judge
    (D_c = 1: ``d_cell`` is not needed, nor ``cell``/``judge`` when ``ysum`` and ``scen_judge`` are given). One
    pass over the rows at most (the scenario x judge sums); everything else is per cell or per scenario. With
    z_i the vector of scenario i (module docstring) and p(i) its pattern, zsum_p = sum_{p(i)=p} z_i and
    zscat_p = sum_{p(i)=p} z_i z_i'.
    """
    n_cells = int(cell_scen.shape[0])
    n_scen = int(cell_scen.max()) + 1
    if complete:
        d_cell = None
    elif d_cell is None:
        d_cell = np.bincount(cell * k + judge, minlength=n_cells * k).reshape(n_cells, k)
    per = np.bincount(cell_scen, minlength=n_scen)
    m = int(per.max())
    in_order = bool(np.all(cell_scen[1:] >= cell_scen[:-1]))   # cells grouped by scenario (GroupData's layout)
    if bool((per == m).all()) and (d_cell is None or bool((d_cell == d_cell[0]).all())):
        # one pattern (every balanced table): cells are already grouped by scenario, in any order
        if in_order:   # (the cells' positions are only needed to place the cell sums when out of order)
            order = scen_sorted = pos = None
        else:
            order = np.argsort(cell_scen, kind="stable")
            scen_sorted = cell_scen[order]
            pos = np.tile(np.arange(m), n_scen)
        pat = np.zeros(n_scen, dtype=np.int64)
        first = np.array([0])
    else:
        if d_cell is None:
            d_cell = np.ones((n_cells, k))
        cid = _row_ids(d_cell)
        # canonical cell order in each scenario: by the cell's judge calls (descending id of the distinct rows);
        # one stable sort of the key (scenario, U-1-id) is np.lexsort((-cid, cell_scen))
        n_id = int(cid.max()) + 1
        order = np.argsort(cell_scen * n_id + (n_id - 1 - cid), kind="stable")
        start = np.concatenate(([0], np.cumsum(per)[:-1]))
        scen_sorted = cell_scen[order]
        pos = np.arange(n_cells) - start[scen_sorted]
        key = np.full((n_scen, m), -1, dtype=np.int64)
        key[scen_sorted, pos] = cid[order]
        pat, first = _row_ids(key, first=True)
    n_pat = first.shape[0]
    # per-pattern judge calls, from the first scenario of each pattern
    incidence = np.zeros((n_pat, m, k))
    if d_cell is None:                                     # one pattern, every cell with every judge
        incidence[:] = 1.0
    elif order is None:                                    # one pattern of equal cells, in order: the first
        incidence[0] = d_cell[:m]                          # scenario's calls (any scenario's)
    else:
        rep_of = np.full(n_scen, -1, dtype=np.int64)
        rep_of[first] = np.arange(n_pat)
        sel = rep_of[scen_sorted] >= 0
        incidence[rep_of[scen_sorted[sel]], pos[sel]] = d_cell[order[sel]]
    # z_i = (scenario sum, cell sums in canonical order, scenario x judge sums)
    q = 1 + m + k
    if ysum is None:
        ysum = np.bincount(cell, weights=y0, minlength=n_cells)
    z = np.zeros((n_scen, q))
    z[:, 0] = np.bincount(cell_scen, weights=ysum, minlength=n_scen)
    if order is None:   # cells in scenario order, all with the same calls: the canonical order is theirs
        z[:, 1:1 + m] = ysum.reshape(n_scen, m)
    else:
        z[scen_sorted, 1 + pos] = ysum[order]
    if scen_judge is None:
        row_scen = cell_scen[cell]
        scen_judge = np.bincount(row_scen * k + judge, weights=y0, minlength=n_scen * k).reshape(n_scen, k)
    z[:, 1 + m:] = scen_judge
    zsum, zscat = _pattern_moments(z, pat, n_pat)
    return ScenarioJudgeStats(incidence=incidence, count=np.bincount(pat, minlength=n_pat).astype(np.float64),
                              zsum=zsum, zscat=zscat, shift=np.asarray(shift, dtype=np.float64))


#: patterns with at least this many scenarios get their scatter from one matrix product each; the scenarios of
#: smaller patterns (typically one scenario each, when calls are missing at random) from summed outer products
_BIG_PATTERN = 16


def _pattern_moments(z: np.ndarray, pat: np.ndarray, n_pat: int) -> tuple[np.ndarray, np.ndarray]:
    """sum_i z_i and sum_i z_i z_i' over the scenarios i of each pattern (``pat[i]`` in 0..n_pat-1).

    A large pattern takes one matrix product; the scenarios of the small ones are added in rounds, round r
    adding the r-th scenario of every small pattern (so at most ``_BIG_PATTERN`` vectorised rounds, and a
    pattern's scenarios are added in their order).
    """
    q = z.shape[1]
    if n_pat == 1:
        return z.sum(axis=0)[None, :], (z.T @ z)[None, :, :]
    zsum = np.zeros((n_pat, q))
    zscat = np.zeros((n_pat, q, q))
    srt = np.argsort(pat, kind="stable")
    counts = np.bincount(pat, minlength=n_pat)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    zs = z[srt]
    big = counts >= _BIG_PATTERN
    for p in np.flatnonzero(big):                          # few: at most n_scen / _BIG_PATTERN
        blk = zs[bounds[p]:bounds[p + 1]]
        zsum[p] = blk.sum(axis=0)
        zscat[p] = blk.T @ blk
    pat_s = pat[srt]
    rank = np.arange(pat_s.shape[0]) - bounds[pat_s]       # position of each scenario in its pattern
    small = ~big[pat_s]
    for r in range(int(counts[~big].max()) if (~big).any() else 0):
        sel = np.flatnonzero(small & (rank == r))
        p, rows = pat_s[sel], zs[sel]
        if r == 0 and p.shape[0] == n_pat:                 # every pattern small: round 0 writes them in order
            zsum[:] = rows
            np.multiply(rows[:, :, None], rows[:, None, :], out=zscat)
        elif r == 0:
            zsum[p] = rows
            zscat[p] = rows[:, :, None] * rows[:, None, :]
        else:
            zsum[p] += rows
            zscat[p] += rows[:, :, None] * rows[:, None, :]
    return zsum, zscat


def _row_ids(a: np.ndarray, *, first: bool = False):
    """Ids 0..U-1 of the distinct rows of an integer matrix (and the index of each id's first row).

    Ids number the distinct rows in the byte order of the rows (the order ``np.unique`` gives the rows viewed
    as raw bytes); that order fixes the order of the patterns in :class:`ScenarioJudgeStats`. When the rows
    fit one int64 code (span ** width < 2 ** 62), the rows are told apart by sorting the codes and only the U
    distinct rows are sorted as bytes; otherwise all rows are.
    """
    a = np.ascontiguousarray(a, dtype=np.int64)
    n, w = a.shape
    lo = int(a.min()) if n else 0
    span = (int(a.max()) - lo + 1) if n else 1
    if n == 0 or w == 0 or span ** w >= 2 ** 62:
        void = a.view(np.dtype((np.void, a.dtype.itemsize * max(w, 1)))).reshape(-1) if w else np.zeros(n, "V1")
        _, idx, inv = np.unique(void, return_index=True, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
        return (inv, idx) if first else inv
    code = a[:, 0] - lo
    for j in range(1, w):
        code = code * span + (a[:, j] - lo)
    n_codes = span ** w
    if n_codes <= 4 * n + 1024:                            # few possible codes (0/1 judge calls): count, no sort
        seen = np.bincount(code, minlength=n_codes) > 0
        lookup = np.cumsum(seen) - 1
        inv = lookup[code]
        idx = np.full(int(seen.sum()), n, dtype=np.int64)
        np.minimum.at(idx, inv, np.arange(n, dtype=np.int64))   # first row of each distinct code
    else:
        _, idx, inv = np.unique(code, return_index=True, return_inverse=True)   # stable: idx are first rows
        inv = np.asarray(inv).reshape(-1)
    reps = np.ascontiguousarray(a[idx])
    rank = np.asarray(np.unique(reps.view(np.dtype((np.void, 8 * w))).reshape(-1), return_inverse=True)[1])
    rank = rank.reshape(-1)
    ids = rank[inv]
    if not first:
        return ids
    first_idx = np.empty_like(idx)
    first_idx[rank] = idx
    return ids, first_idx


def merge_sj_stats(parts: list[ScenarioJudgeStats], shift: np.ndarray,
                   judges: list[np.ndarray] | None = None) -> ScenarioJudgeStats:
    """Statistics of a unit split by scenario, from its chunks' (recentred to ``shift`` first).

    ``judges`` (one array per chunk) places each chunk's judges among the K of ``shift`` when a chunk lacks some
    judge (default: every chunk has the K judges in that order); see :meth:`ScenarioJudgeStats.with_judges`.
    """
    if judges is not None:
        parts = [p.with_judges(j, shift) for p, j in zip(parts, judges)]
    parts = [p.recentre(shift) for p in parts]
    m = max(p.m for p in parts)
    k = parts[0].k
    q = 1 + m + k
    table: dict[bytes, list] = {}
    for p in parts:
        pad = m - p.m
        for i in range(p.count.shape[0]):
            inc = np.zeros((m, k))
            inc[:p.m] = p.incidence[i]
            zs = np.zeros(q)
            zc = np.zeros((q, q))
            idx = np.r_[np.arange(1 + p.m), np.arange(1 + m, q)] if pad else np.arange(q)
            zs[idx] = p.zsum[i]
            zc[np.ix_(idx, idx)] = p.zscat[i]
            key = inc.tobytes()
            if key in table:
                table[key][1] += p.count[i]
                table[key][2] += zs
                table[key][3] += zc
            else:
                table[key] = [inc, float(p.count[i]), zs, zc]
    vals = list(table.values())
    return ScenarioJudgeStats(incidence=np.stack([v[0] for v in vals]), count=np.array([v[1] for v in vals]),
                              zsum=np.stack([v[2] for v in vals]), zscat=np.stack([v[3] for v in vals]),
                              shift=np.asarray(shift, dtype=np.float64))
