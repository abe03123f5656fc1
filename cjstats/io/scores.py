"""Validated, immutable score tables and their design summary: :class:`Scores`, :class:`GroupDesign` and
:class:`GroupData`.

A score table is long: one row per judge call, with the columns ``model, scenario, generation, judge, score``
and optionally ``criterion``. :func:`cjstats.read_scores` (:mod:`cjstats.io.read`) reads and checks it once
against the input rules (:mod:`cjstats.io.rules`) and returns a :class:`Scores` that every backend reads; this
module sorts the rows, codes the ids and summarises the design of each analysis group. Only numpy and pandas
are needed here. Every type here survives ``pickle`` and ``copy.deepcopy`` (arrays stay read-only).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io.rules import ID_COLUMNS
from cjstats.io.score_kind import score_shape

__all__ = ["Scores", "GroupDesign", "GroupData", "sparse_judge_message", "warn_sparse_judges"]


# ----------------------------------------------------------------------------------------------- design types
@dataclass(frozen=True, slots=True)
class GroupDesign:
    """The design of one analysis group (one model, or one model x criterion).

    ``generations`` is m when every scenario has the same number of generations, else ``None``
    (see ``generations_min`` / ``generations_max``). ``complete`` means every (scenario, generation) cell
    was scored by every judge of the group; ``balanced`` means complete and the same m in every scenario.
    """

    model: str
    criterion: str | None
    n_rows: int
    n_scenarios: int
    generations: int | None
    generations_min: int
    generations_max: int
    n_judges: int
    judges: tuple[str, ...]
    n_cells: int
    n_missing: int
    n_duplicates: int
    complete: bool
    balanced: bool

    @classmethod
    def from_counts(cls, *, model: str, criterion: str | None, n_rows: int, n_scenarios: int, m_per: np.ndarray,
                    judges: tuple[str, ...], n_cells: int, complete: bool, n_duplicates: int = 0) -> GroupDesign:
        """The design from the generations per scenario ``m_per`` (one entry per scenario, or per group of
        scenarios sharing a count: only its distinct values matter), the judges, cells and rows; the missing calls
        are n_cells x K - n_rows."""
        m_per = np.asarray(m_per, dtype=np.int64)
        same_m = bool((m_per == m_per[0]).all())
        k = len(judges)
        return cls(model=model, criterion=criterion, n_rows=int(n_rows), n_scenarios=int(n_scenarios),
                   generations=int(m_per[0]) if same_m else None, generations_min=int(m_per.min()),
                   generations_max=int(m_per.max()), n_judges=k, judges=tuple(judges), n_cells=int(n_cells),
                   n_missing=int(n_cells * k - n_rows), n_duplicates=int(n_duplicates), complete=bool(complete),
                   balanced=bool(complete and same_m))

    def as_dict(self) -> dict[str, Any]:
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}
        d["judges"] = ", ".join(self.judges)
        return d


@dataclass(frozen=True, slots=True)
class GroupData:
    """Arrays of one group for the estimator backends, sorted by (scenario, generation, judge).

    ``scenario``, ``cell`` and ``judge`` are 0-based codes local to the group; a *cell* is one
    (scenario, generation) pair and ``cell_scenario[c]`` is the scenario of cell ``c``. Arrays are read-only.
    """

    model: str
    criterion: str | None
    y: np.ndarray
    scenario: np.ndarray
    cell: np.ndarray
    judge: np.ndarray
    cell_scenario: np.ndarray
    scenario_labels: np.ndarray
    cell_generation_labels: np.ndarray
    judge_labels: tuple[str, ...]
    design: GroupDesign

    @property
    def key(self) -> dict[str, Any]:
        k: dict[str, Any] = {"model": self.model}
        if self.criterion is not None:
            k["criterion"] = self.criterion
        return k

    def label(self, *, capital: bool = False) -> str:
        """Human name of the group for messages: ``model 'x'`` or ``model 'x', criterion 'y'``."""
        s = f"{'Model' if capital else 'model'} '{self.model}'"
        return s if self.criterion is None else f"{s}, criterion '{self.criterion}'"

    def dense(self) -> np.ndarray | None:
        """The scores as an (n, m, K) array when the design is balanced, else ``None`` (no copy is made)."""
        d = self.design
        if not d.balanced:
            return None
        return self.y.reshape(d.n_scenarios, d.generations, d.n_judges)

    def __setstate__(self, state: list[Any]) -> None:
        # pickle and deepcopy hand back writable arrays: a copy stays read-only like the original
        for f, value in zip(fields(self), state):
            object.__setattr__(self, f.name, _readonly(value) if isinstance(value, np.ndarray) else value)


# ------------------------------------------------------------------------------------------------ the table
_SCORES_META = "scores.json"


def _json_default(value: Any) -> Any:
    """JSON for the numpy scalars and arrays a provenance may hold (anything else as its text)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


class Scores:
    """A validated, immutable long score table with its design summary.

    Build it with :func:`read_scores` (or :func:`read_mtbench_judgments`). Rows are kept sorted by
    (model, [criterion], scenario, generation, judge); the arrays behind it are read-only and every
    accessor returns a copy.

    Attributes
    ----------
    design : pandas.DataFrame
        One row per analysis group: n_scenarios, generations (m), judges, whether the design is complete
        and balanced, and the number of missing and duplicate cells.
    provenance : Mapping[str, Any]
        Where the table came from and what loading did to it (rows dropped, duplicates averaged, ...).

    Reference (human) raters, when ``read_scores`` was given ``reference=`` or a ``judge_type`` column, are
    kept apart: :meth:`groups` and every analysis see the LLM judges only; ``reference_judges``,
    ``has_reference`` and :meth:`reference_frame` give the reference ratings, and ``design`` gains
    ``n_reference_raters`` and ``reference_items`` (judged cells with at least one reference rating).
    """

    __slots__ = ("_table", "_build", "_groups", "_provenance", "_has_criterion", "_reference", "_score_shape",
                 "__weakref__")

    def __init__(self, frame: pd.DataFrame, *, provenance: Mapping[str, Any] | None = None,
                 _n_duplicates: Mapping[tuple, int] | None = None, _reference: pd.DataFrame | None = None,
                 _codes: _Codes | None = None) -> None:
        # ``frame`` must come from read_scores (validated, canonical columns); users call read_scores.
        # ``_codes``: the key codes read_scores already computed for exactly this frame (saves a second pass).
        self._has_criterion = "criterion" in frame.columns
        self._table, self._groups = _index_groups(frame, self._has_criterion, _n_duplicates or {}, _codes)
        self._build = None
        self._reference = _reference_rows(_reference)
        provenance = dict(provenance or {})
        if self._reference is not None:
            provenance["reference"] = _reference_note(self._reference)
        self._provenance = provenance  # a plain dict (picklable); the property hands out a read-only view

    @classmethod
    def _assembled(cls, build: Any, has_criterion: bool, groups: list[GroupData],
                   provenance: Mapping[str, Any]) -> Scores:
        """A table from its groups, built by read_scores' Arrow route (no reference rows); ``build()`` gives the
        sorted long frame, made on first use (analyses read the groups, not the frame). ``build`` is an object
        holding its arrays (not a closure), so a table pickles before its frame is made."""
        self = cls.__new__(cls)
        self._has_criterion = has_criterion
        self._table, self._build, self._groups, self._reference = None, build, groups, None
        self._provenance = dict(provenance)
        return self

    @property
    def _frame(self) -> pd.DataFrame:
        """The validated long table, sorted (built from the codes on first use by the Arrow route)."""
        if self._table is None:
            self._table = self._build()
            self._build = None
        return self._table

    # -- public accessors ----------------------------------------------------------------------------
    @property
    def has_criterion(self) -> bool:
        """True when the table has a ``criterion`` column (analyses then run per model x criterion)."""
        return self._has_criterion

    @property
    def provenance(self) -> Mapping[str, Any]:
        """Where the table came from and what loading did to it (a read-only view)."""
        return MappingProxyType(self._provenance)

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(g.model for g in self._groups))

    @property
    def criteria(self) -> list[str]:
        return list(dict.fromkeys(g.criterion for g in self._groups)) if self._has_criterion else []

    @property
    def judges(self) -> list[str]:
        return sorted({j for g in self._groups for j in g.judge_labels})  # every row is in one group

    @property
    def design(self) -> pd.DataFrame:
        """Tidy design summary, one row per analysis group."""
        rows = [g.design.as_dict() for g in self._groups]
        out = pd.DataFrame(rows)
        out["generations"] = out["generations"].astype("Int64")
        if not self._has_criterion:
            out = out.drop(columns="criterion")
        if self._reference is not None:
            out = _reference_design(out, self._reference, self._frame, self._has_criterion)
        return out

    @property
    def score_shape(self) -> Mapping[str, Any]:
        """The kind and shape of the LLM judges' scores (:func:`cjstats.io.score_kind.score_shape`: ``kind``,
        ``n_values``, ``n_rows``, ``min``/``max``, ``floor_share``/``ceiling_share``), a read-only view.

        Computed on first use from the groups' scores (every row is in one group; reference ratings are not) and
        kept: the table is immutable, so every fit and every ``--method auto`` reads it without a new scan. A
        derived table (:meth:`subset`, :meth:`composite`) is a new ``Scores`` and computes its own.
        """
        shape = getattr(self, "_score_shape", None)   # the slot stays unset until the first use
        if shape is None:
            ys = [g.y for g in self._groups]
            shape = score_shape(ys[0] if len(ys) == 1 else np.concatenate(ys or [np.empty(0)]))
            self._score_shape = shape
        return MappingProxyType(shape)

    def to_frame(self) -> pd.DataFrame:
        """A copy of the validated long table."""
        return self._frame.copy()

    # -- a portable copy on disk --------------------------------------------------------------------
    def save(self, path: Any) -> Any:
        """Write the table to the directory ``path`` (Parquet + JSON, no pickle) so that :meth:`load` rebuilds it.

        ``scores.parquet`` is the validated long table, ``reference.parquet`` the reference ratings (if any) and
        ``scores.json`` the format, the cjstats version, the provenance, the duplicate-cell counts and the list of
        files written. The save is written to a sibling temporary folder and renamed to ``path``; an existing
        ``path`` is replaced only when it is empty or an earlier saved table holding only its own files, and a
        folder with anything else in it is refused (:func:`cjstats._savedir.write_directory`).
        """
        from cjstats import __version__
        from cjstats._savedir import write_directory

        def write(where: Any) -> dict[str, Any]:
            self._frame.to_parquet(where / "scores.parquet")
            if self._reference is not None:
                self._reference.to_parquet(where / "reference.parquet")
            dups = [[g.model, g.criterion, int(g.design.n_duplicates)] for g in self._groups
                    if g.design.n_duplicates]
            return {"format": "cjstats-scores", "format_version": 1, "cjstats_version": __version__,
                    "provenance": {k: v for k, v in self._provenance.items() if k != "reference"},
                    "duplicates": dups}

        return write_directory(path, write, meta=_SCORES_META, fmt="cjstats-scores", what="score table",
                               default=_json_default)

    @classmethod
    def load(cls, path: Any) -> Scores:
        """Read a table written by :meth:`save` (one sentence naming the file when ``path`` is not one, or is
        damaged)."""
        from pathlib import Path

        from cjstats._savedir import read_data, read_meta

        path = Path(path)
        if not (path / _SCORES_META).is_file():
            raise CjstatsError(f"The directory '{path}' holds no saved score table (no {_SCORES_META}); write one "
                               f"with scores.save(path).")
        file = path / _SCORES_META
        meta = read_meta(file, fmt="cjstats-scores", version=1, what="score table")
        frame = read_data(path / "scores.parquet", file, "a Parquet table", pd.read_parquet)
        files = meta.get("files")            # the manifest (saves before it: whether the file is there)
        has_ref = "reference.parquet" in files if isinstance(files, list) else (path / "reference.parquet").exists()
        ref = read_data(path / "reference.parquet", file, "a Parquet table", pd.read_parquet) if has_ref else None
        _check_saved(frame, path)
        try:
            dups = {(m, c): int(n) for m, c, n in meta.get("duplicates", [])}
        except (TypeError, ValueError) as exc:
            raise CjstatsError(f"'{file}' is damaged: its 'duplicates' entry cannot be read ({exc}); save the "
                               f"table again.") from None
        return cls(frame, provenance=meta.get("provenance"), _n_duplicates=dups, _reference=ref)

    def __len__(self) -> int:
        return sum(g.design.n_rows for g in self._groups)  # every row is in one group

    def __repr__(self) -> str:
        crit = f", {len(self.criteria)} criteria" if self._has_criterion else ""
        return (f"<Scores: {len(self):,} rows, {len(self.models)} models{crit}, "
                f"{len(self.judges)} judges>")

    def groups(self) -> Iterator[GroupData]:
        """Iterate over the analysis groups (model, or model x criterion) in sorted order."""
        return iter(self._groups)

    def group(self, model: str, criterion: str | None = None) -> GroupData:
        """The arrays of one group."""
        for g in self._groups:
            if g.model == str(model) and (criterion is None or g.criterion == str(criterion)):
                return g
        raise CjstatsError(f"scores has no model '{model}'" + ("" if criterion is None else
                           f" with criterion '{criterion}'") + f" (models: {', '.join(self.models)}).")

    def missing_cells(self) -> pd.DataFrame:
        """Every (scenario, generation, judge) call that the full crossed design would have but the table lacks.

        Within a group, the full design crosses every judge seen in that group with every
        (scenario, generation) cell seen in that group.
        """
        frames = []
        for g in self._groups:
            if g.design.complete:
                continue
            n_cells, k = len(g.cell_scenario), len(g.judge_labels)
            present = np.zeros((n_cells, k), dtype=bool)
            present[g.cell, g.judge] = True
            c_idx, j_idx = np.nonzero(~present)
            part = pd.DataFrame({
                "scenario": g.scenario_labels[g.cell_scenario[c_idx]],
                "generation": g.cell_generation_labels[c_idx],
                "judge": np.asarray(g.judge_labels, dtype=object)[j_idx],
            })
            for name, value in reversed(list(g.key.items())):
                part.insert(0, name, value)
            frames.append(part)
        cols = ["model"] + (["criterion"] if self._has_criterion else []) + ["scenario", "generation", "judge"]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)

    def subset(self, *, models: list[str] | None = None, criteria: list[str] | None = None,
               judges: list[str] | None = None) -> Scores:
        """A new table restricted to some models, criteria or judges."""
        f = self._frame
        for col, keep in (("model", models), ("criterion", criteria), ("judge", judges)):
            if keep is None:
                continue
            if col == "criterion" and not self._has_criterion:
                raise CjstatsError("scores has no column 'criterion', so criteria= cannot select any.")
            keep = [str(k) for k in keep]
            unknown = sorted(set(keep) - set(f[col].astype(str)))
            if unknown:
                raise CjstatsError(f"Column '{col}' has no value '{unknown[0]}' "
                                   f"(found: {', '.join(sorted(set(f[col].astype(str))))}).")
            f = f[f[col].astype(str).isin(keep)]
        if f.empty:
            raise CjstatsError("The subset is empty: no rows match the models, criteria and judges asked for.")
        ref = self._reference
        if ref is not None:
            for col, keep in (("model", models), ("criterion", criteria)):
                if keep is not None:
                    ref = ref[ref[col].astype(str).isin([str(k) for k in keep])]
        return Scores(f.reset_index(drop=True), provenance={**self._provenance, "subset": True}, _reference=ref)

    def composite(self) -> Scores:
        """Average the criteria of each (model, scenario, generation, judge) cell into one composite score.

        This is how the paper analyses MindEval. The composite of a cell is the mean of the criteria present;
        ``provenance['composite_partial_cells']`` counts cells that lacked some criterion.
        """
        if not self._has_criterion:
            raise CjstatsError("scores has no column 'criterion', so there is nothing to average into a composite.")
        keys = list(ID_COLUMNS)
        grouped = self._frame.groupby(keys, sort=False, observed=True)["score"]
        out = grouped.mean().reset_index()
        n_crit = self._frame["criterion"].nunique()
        partial = int((grouped.size().to_numpy() < n_crit).sum())
        prov = {**self._provenance, "composite_of": sorted(self._frame["criterion"].astype(str).unique()),
                "composite_partial_cells": partial}
        ref = self._reference
        if ref is not None:
            ref = ref.groupby(keys, sort=False, observed=True)["score"].mean().reset_index()
        return Scores(out, provenance=prov, _reference=ref)

    # -- reference (human) raters --------------------------------------------------------------------
    @property
    def has_reference(self) -> bool:
        """True when the table holds reference (human) ratings, kept apart from the LLM judges."""
        return self._reference is not None

    @property
    def reference_judges(self) -> list[str]:
        """Names of the reference raters (empty when there are none)."""
        return [] if self._reference is None else sorted(set(self._reference["judge"].astype(str)))

    def reference_frame(self) -> pd.DataFrame:
        """A copy of the reference ratings as a long table (same columns as :meth:`to_frame`).

        Reference raters never enter :meth:`groups`, so every analysis of the table sees the LLM judges only;
        :func:`cjstats.judge_agreement` and :func:`cjstats.ppi_means` read these rows.
        """
        if self._reference is None:
            return pd.DataFrame(columns=self._frame.columns)
        return self._reference.copy()


def sparse_judge_message(label: str, judge_labels: Sequence[str], cells_per_judge: Any, n_cells: int, *,
                         min_share: float = 0.5) -> str | None:
    """The warning for the sparsest judge that scored less than ``min_share`` of ``n_cells`` cells, or ``None``.

    Under ``incomplete="drop"`` only the cells that every judge scored are kept, so one judge that scored 2 of
    16 cells silently reduces the analysis to those 2 cells. The message gives the counts and the fix
    (leave the judge out, or use an estimator that handles missing calls).
    """
    counts = np.asarray(cells_per_judge, dtype=float)
    if n_cells == 0 or counts.size == 0:
        return None
    j = int(np.argmin(counts))
    if counts[j] >= min_share * n_cells:
        return None
    return (f"In {label}, judge '{judge_labels[j]}' scored {int(counts[j])} of {n_cells} (scenario, generation) "
            f"cells, so dropping incomplete cells keeps at most {int(counts[j])}; leave that judge out or use REML, "
            f"which keeps every call.")


def warn_sparse_judges(group: GroupData, *, min_share: float = 0.5) -> None:
    """Warn (:class:`CjstatsWarning`) about the sparsest judge of a group, see :func:`sparse_judge_message`."""
    from cjstats import _warnings as warnings  # shown under a blanket ignore

    d = group.design
    if d.complete or d.n_cells == 0:
        return
    present = np.zeros((d.n_cells, d.n_judges), dtype=bool)
    present[group.cell, group.judge] = True
    msg = sparse_judge_message(group.label(), group.judge_labels, present.sum(axis=0), d.n_cells,
                               min_share=min_share)
    if msg:
        warnings.warn(msg, CjstatsWarning, stacklevel=2)


# ---------------------------------------------------------------------------------------------- indexing
def _codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes into the sorted distinct values (order of appearance when they cannot be sorted)."""
    dtype = values.dtype
    if isinstance(dtype, np.dtype) and (dtype.kind == "i" or (dtype.kind == "u" and dtype.itemsize < 8)) \
            and len(values):
        # integers in a modest range: a lookup table instead of a hash table, same codes and uniques
        v = values.to_numpy().astype(np.int64, copy=False)
        lo, hi = int(v.min()), int(v.max())
        if hi - lo <= 4 * len(v) + 1024:
            seen = np.zeros(hi - lo + 1, dtype=bool)
            seen[v - lo] = True
            rank = np.cumsum(seen) - 1
            return rank[v - lo].astype(np.int64), (np.flatnonzero(seen) + lo).astype(values.dtype).astype(object)
    try:
        codes, uniques = pd.factorize(values, sort=True)
    except TypeError:  # mixed, unorderable labels: keep order of appearance
        codes, uniques = pd.factorize(values, sort=False)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


@dataclass(frozen=True, slots=True)
class _Codes:
    """Integer codes of the key columns of a frame (row order of that frame) and their sorted labels."""

    model: np.ndarray
    model_labels: np.ndarray
    criterion: np.ndarray | None
    criterion_labels: np.ndarray | None
    scenario: np.ndarray
    scenario_labels: np.ndarray
    generation: np.ndarray
    generation_labels: np.ndarray
    judge: np.ndarray
    judge_labels: np.ndarray
    order: np.ndarray | None  # the stable sort by (model, [criterion], scenario, generation, judge); None: sorted
    sorted_key: np.ndarray | None  # one int64 per row in sorted order, equal for equal cells (None: too many)

    @property
    def group(self) -> np.ndarray:
        if self.criterion is None:
            return self.model
        return self.model * len(self.criterion_labels) + self.criterion

    def take(self, a: np.ndarray) -> np.ndarray:
        return a if self.order is None else a[self.order]

    def sorted_duplicate_mask(self) -> np.ndarray:
        """In sorted order: True for every row whose cell has another row."""
        if self.sorted_key is not None:
            same = self.sorted_key[1:] == self.sorted_key[:-1]
        else:
            cols = [self.take(self.group), self.take(self.scenario), self.take(self.generation), self.take(self.judge)]
            same = np.logical_and.reduce([c[1:] == c[:-1] for c in cols])
        dup = np.zeros(len(same) + 1, dtype=bool)
        dup[1:] |= same
        dup[:-1] |= same
        return dup


def _key_codes(frame: pd.DataFrame, has_criterion: bool) -> _Codes:
    """Factorize the key columns once and sort the rows by them, see :class:`_Codes`."""
    m, m_lab = _codes(frame["model"].astype(str))
    c, c_lab = _codes(frame["criterion"].astype(str)) if has_criterion else (None, None)
    s, s_lab = _codes(frame["scenario"])
    gen, gen_lab = _codes(frame["generation"])
    j, j_lab = _codes(frame["judge"].astype(str))
    g = m if c is None else m * len(c_lab) + c
    n_g = len(m_lab) * (1 if c_lab is None else len(c_lab))
    sizes = (max(n_g, 1), max(len(s_lab), 1), max(len(gen_lab), 1), max(len(j_lab), 1))
    key = None
    if math.prod(sizes) < 2**62:
        key = ((g * sizes[1] + s) * sizes[2] + gen) * sizes[3] + j
        order = None if bool((key[1:] >= key[:-1]).all()) else np.argsort(key, kind="stable")
        if order is not None:
            key = key[order]
    else:
        order = np.lexsort((j, gen, s, g))
    return _Codes(m, m_lab, c, c_lab, s, s_lab, gen, gen_lab, j, j_lab, order, key)


def _sorted_frame(frame: pd.DataFrame, order: np.ndarray,
                  sorted_codes: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """``frame.iloc[order]``, building the id columns from their sorted codes and few labels.

    Gathering a million strings in random order is slow; looking codes up in a table of a few labels is
    not. Text (Arrow-backed ``str``) and numpy integer id columns are built that way, with the same dtype
    and values as ``iloc`` gives; every other column is gathered.
    """
    try:
        import pyarrow as pa
    except ImportError:
        return frame.iloc[order]
    cols = {}
    for name in frame.columns:
        col = frame[name]
        dtype = col.dtype
        if name in sorted_codes and isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
            codes, labels = sorted_codes[name]
            built = pa.array(list(labels), type=pa.string()).take(pa.array(codes))
            out = pa.chunked_array([built]).to_pandas()
            if out.dtype != dtype:
                out = col.iloc[order].reset_index(drop=True)
            cols[name] = out
        elif name in sorted_codes and isinstance(dtype, np.dtype) and dtype.kind in "iu":
            codes, labels = sorted_codes[name]
            cols[name] = pd.Series(np.asarray(labels).astype(dtype)[codes], dtype=dtype)
        else:
            cols[name] = col.iloc[order].reset_index(drop=True)
    return pd.DataFrame(cols, columns=frame.columns)


def _check_saved(frame: pd.DataFrame, path: Any) -> None:
    """The input rules of :func:`cjstats.read_scores` that an edit of a saved table can break, in its words
    (:mod:`cjstats.io.rules`): a missing column, id or score, or a judge call twice (the same key columns on two
    rows, found with the key codes read_scores uses) is refused, never averaged into the cell."""
    from cjstats.io import rules

    def refuse(msg: str) -> None:
        raise CjstatsError(f"The saved table '{path}/scores.parquet' was changed after scores.save: "
                           f"{msg[0].lower()}{msg[1:]}")

    frame = frame.reset_index(drop=True)
    missing = rules.missing_columns(list(frame.columns))
    if missing:
        refuse(rules.msg_missing_column(missing, list(frame.columns)))
    has_crit = "criterion" in frame.columns
    for col in (*ID_COLUMNS, *(["criterion"] if has_crit else [])):
        bad = frame[col].isna().to_numpy() if col in frame.columns else np.zeros(len(frame), dtype=bool)
        if bad.any():
            refuse(rules.msg_missing_ids(col, int(bad.sum()), f"row {int(np.flatnonzero(bad)[0])}"))
    y = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=np.float64)
    for bad, msg in ((np.isnan(y), rules.msg_nan), (np.isinf(y), rules.msg_inf)):
        if bad.any():
            refuse(msg(int(bad.sum()), f"row {int(np.flatnonzero(bad)[0])}"))
    codes = _key_codes(frame, has_crit)
    dup = codes.sorted_duplicate_mask()
    if dup.any():
        rows = np.sort(codes.order[dup] if codes.order is not None else np.flatnonzero(dup))
        keys = ["model", *(["criterion"] if has_crit else []), "scenario", "generation", "judge"]
        first = frame.iloc[rows[0]]
        same = rows[(frame.iloc[rows][keys] == first[keys]).all(axis=1).to_numpy()]
        cell = {c: first[c].item() if isinstance(first[c], np.generic) else first[c] for c in keys}
        n_cells = int(frame.iloc[rows].groupby(keys, sort=False, observed=True).ngroups)
        refuse(rules.msg_duplicates(n_cells, cell, f"rows {same[0]} and {same[1]}").replace(
            "Average them with read_scores(..., duplicates='mean')", "Save the table again from its source"))


def _index_groups(frame: pd.DataFrame, has_criterion: bool, n_duplicates: Mapping[tuple, int],
                  codes: _Codes | None = None) -> tuple[pd.DataFrame, list[GroupData]]:
    """Sort the table once and build each group's local codes, design and read-only arrays."""
    cd = codes if codes is not None else _key_codes(frame, has_criterion)
    s, gen, j = cd.take(cd.scenario), cd.take(cd.generation), cd.take(cd.judge)
    s_lab, gen_lab, j_lab = cd.scenario_labels, cd.generation_labels, cd.judge_labels
    # rows are sorted by group first, so each group is one run whose length is its row count
    n_crit = 1 if cd.criterion_labels is None else len(cd.criterion_labels)
    sizes = np.bincount(cd.group, minlength=len(cd.model_labels) * n_crit)
    gids = np.flatnonzero(sizes)
    if cd.order is not None:
        sorted_codes = {"model": (np.repeat(gids // n_crit, sizes[gids]), cd.model_labels),
                        "scenario": (s, s_lab), "generation": (gen, gen_lab), "judge": (j, j_lab)}
        if cd.criterion_labels is not None:
            sorted_codes["criterion"] = (np.repeat(gids % n_crit, sizes[gids]), cd.criterion_labels)
        frame = _sorted_frame(frame, cd.order, sorted_codes)
    frame = frame.reset_index(drop=True)
    y_all = frame["score"].to_numpy(dtype=np.float64)
    return frame, _build_groups(cd, s, gen, j, y_all, sizes, n_duplicates)


def _build_groups(cd: _Codes, s: np.ndarray, gen: np.ndarray, j: np.ndarray, y_all: np.ndarray, sizes: np.ndarray,
                  n_duplicates: Mapping[tuple, int]) -> list[GroupData]:
    """Each group's local codes, design and read-only arrays from the sorted codes ``s, gen, j`` and scores.

    ``sizes[g]`` is the row count of group code ``g`` (model, or model x criterion); rows are sorted by group,
    so each group is one run of rows, and each (scenario, generation) cell a run within it.
    """
    n_crit = 1 if cd.criterion_labels is None else len(cd.criterion_labels)
    gids = np.flatnonzero(sizes)
    stops = np.cumsum(sizes[gids])
    starts = stops - sizes[gids]
    groups = []
    for gid, a, b in zip(gids, starts, stops):
        gs, ggen = s[a:b], gen[a:b]
        new_c = np.empty(b - a, dtype=bool)  # first row of a cell
        new_c[0] = True
        np.not_equal(gs[1:], gs[:-1], out=new_c[1:])
        new_c[1:] |= ggen[1:] != ggen[:-1]
        c_starts = np.flatnonzero(new_c)
        groups.append(_group(cd, gid, n_crit, y_all[a:b], j[a:b], c_starts, gs[c_starts], ggen[c_starts],
                             n_duplicates))
    return groups


def _groups_from_key(cd: _Codes, key: np.ndarray, y_all: np.ndarray, bounds: np.ndarray,
                     sizes: tuple[int, int, int]) -> tuple[list[GroupData], Any]:
    """:func:`_build_groups` from the sorted key ``((group * ns + s) * ngen + gen) * nj + j`` instead of the
    sorted code columns (``sizes = (ns, ngen, nj)``; group ``g`` holds rows ``bounds[g]:bounds[g + 1]``).

    The cell of a row is ``key // nj`` and its judge ``key - cell * nj``; scenario and generation are read once
    per cell, not per row. Also returns a function that gives the sorted scenario, generation and judge codes
    of every row (for the long frame).
    """
    ns, ngen, nj = sizes
    n_crit = 1 if cd.criterion_labels is None else len(cd.criterion_labels)
    cellkey = key // nj
    j = cellkey * nj
    np.subtract(key, j, out=j)
    new_c = np.empty(len(key), dtype=bool)
    new_c[0] = True
    np.not_equal(cellkey[1:], cellkey[:-1], out=new_c[1:])
    c_starts = np.flatnonzero(new_c)
    per_cell_key = cellkey[c_starts]
    scen_key = per_cell_key // ngen
    cell_gen = per_cell_key - scen_key * ngen
    cell_s = scen_key % ns
    groups = []
    for gid in np.flatnonzero(np.diff(bounds)):
        a, b = bounds[gid], bounds[gid + 1]
        lo, hi = np.searchsorted(c_starts, [a, b])  # the cells of the group (groups start at a cell)
        groups.append(_group(cd, gid, n_crit, y_all[a:b], j[a:b], c_starts[lo:hi] - a, cell_s[lo:hi],
                             cell_gen[lo:hi], {}))
    return groups, _RowCodes(c_starts, cell_s, cell_gen, j, len(key))  # keeps the cell arrays, not the key


@dataclass(frozen=True, slots=True)
class _RowCodes:
    """The sorted scenario, generation and judge codes of every row, rebuilt on call from the per-cell codes
    (cell ``c`` starts at row ``c_starts[c]``); data, not a closure, so a table holding it pickles."""

    c_starts: np.ndarray
    cell_s: np.ndarray
    cell_gen: np.ndarray
    j: np.ndarray
    n_rows: int

    def __call__(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = np.diff(self.c_starts, append=self.n_rows)  # rows of every cell
        return np.repeat(self.cell_s, rows), np.repeat(self.cell_gen, rows), self.j


def _group(cd: _Codes, gid: int, n_crit: int, y: np.ndarray, gj: np.ndarray, c_starts: np.ndarray,
           cell_s: np.ndarray, cell_gen: np.ndarray, n_duplicates: Mapping[tuple, int]) -> GroupData:
    """One group from its scores ``y``, judge codes ``gj`` (rows sorted by cell, then judge), the first row of
    each cell and each cell's global scenario and generation codes."""
    s_lab, gen_lab, j_lab = cd.scenario_labels, cd.generation_labels, cd.judge_labels
    n_rows, n_cells = len(y), len(c_starts)
    per_cell = np.diff(c_starts, append=n_rows)  # rows of each cell
    new_s = np.empty(n_cells, dtype=bool)  # first cell of a scenario
    new_s[0] = True
    np.not_equal(cell_s[1:], cell_s[:-1], out=new_s[1:])
    s_first = np.flatnonzero(new_s)
    n = len(s_first)
    m_per = np.diff(s_first, append=n_cells)  # generations (cells) of each scenario
    # local codes count the starts before each row (a cumsum), written as runs
    cell_scenario = np.repeat(np.arange(n, dtype=np.int64), m_per)
    scen = np.repeat(cell_scenario, per_cell)
    cell = np.repeat(np.arange(n_cells, dtype=np.int64), per_cell)
    seen = np.zeros(len(j_lab), dtype=bool)
    seen[gj] = True
    judges_global = np.flatnonzero(seen)
    k = len(judges_global)
    # local judge codes: the global ones when the group has every judge
    judge = gj.astype(np.int64, copy=False) if k == len(j_lab) else (np.cumsum(seen) - 1)[gj]
    model = str(cd.model_labels[gid // n_crit])
    crit = str(cd.criterion_labels[gid % n_crit]) if cd.criterion_labels is not None else None
    design = GroupDesign.from_counts(
        model=model, criterion=crit, n_rows=int(n_rows), n_scenarios=n, m_per=m_per,
        judges=tuple(str(x) for x in j_lab[judges_global]), n_cells=n_cells, complete=bool((per_cell == k).all()),
        n_duplicates=int(n_duplicates.get((model, crit), 0)),
    )
    return GroupData(
        model=model, criterion=crit, y=_readonly(y), scenario=_readonly(scen),
        cell=_readonly(cell), judge=_readonly(judge), cell_scenario=_readonly(cell_scenario),
        scenario_labels=_readonly(s_lab if n == len(s_lab) else s_lab[cell_s[s_first]]),  # all: shared
        cell_generation_labels=_readonly(gen_lab[cell_gen]),
        judge_labels=design.judges, design=design,
    )



def _reference_rows(ref: pd.DataFrame | None) -> pd.DataFrame | None:
    if ref is None or len(ref) == 0:
        return None
    cols = [c for c in ("model", "criterion", "scenario", "generation", "judge") if c in ref.columns]
    return ref.sort_values(cols, kind="stable").reset_index(drop=True)


def _reference_note(ref: pd.DataFrame) -> str:
    names = sorted(set(ref["judge"].astype(str)))
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return (f"reference raters excluded from the analysis: {shown} ({len(ref):,} ratings); "
            f"see Scores.reference_frame()")


def _reference_design(out: pd.DataFrame, ref: pd.DataFrame, frame: pd.DataFrame, has_criterion: bool) -> pd.DataFrame:
    """Add ``n_reference_raters`` and ``reference_items`` (judged cells with >= 1 reference rating) per group."""
    gcols = ["model", "criterion"] if has_criterion else ["model"]
    cell = [*gcols, "scenario", "generation"]
    raters = ref.groupby(gcols, observed=True)["judge"].nunique().rename("n_reference_raters")
    both = frame[cell].drop_duplicates().merge(ref[cell].drop_duplicates(), on=cell, how="inner")
    items = both.groupby(gcols, observed=True).size().rename("reference_items")
    out = out.merge(raters.reset_index(), on=gcols, how="left").merge(items.reset_index(), on=gcols, how="left")
    for col in ("n_reference_raters", "reference_items"):
        out[col] = out[col].fillna(0).astype(np.int64)
    return out
