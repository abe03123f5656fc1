"""Validated, immutable score tables and their design summary.

A score table is long: one row per judge call, with the columns ``model, scenario, generation, judge, score``
and optionally ``criterion``. :func:`read_scores` checks it once and returns a :class:`Scores` that every
backend reads. Validation errors are one sentence naming the column, the first offending value and its row,
and how to fix it. Only numpy and pandas are needed here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import pandas as pd

from cjstats._defaults import SCORE_COLUMNS
from cjstats.exceptions import CjstatsError

__all__ = ["Scores", "GroupDesign", "GroupData", "read_scores", "read_mtbench_judgments"]

_ID_COLUMNS = ("model", "scenario", "generation", "judge")
_REQUIRED = ("model", "scenario", "judge", "score")  # generation defaults to one per scenario
_SYNONYMS = {
    "judge": ("rater", "annotator", "evaluator", "grader", "judge_model", "judge_name"),
    "scenario": ("item", "question_id", "question", "prompt", "prompt_id", "scenario_id", "item_id", "task"),
    "generation": ("sample", "sample_id", "seed", "run", "replicate", "generation_id", "draw"),
    "score": ("rating", "value", "grade", "label", "points"),
    "model": ("system", "candidate", "model_name", "policy"),
}
_READERS = {".csv": "csv", ".csv.gz": "csv", ".tsv": "tsv", ".tsv.gz": "tsv", ".parquet": "parquet",
            ".pq": "parquet", ".jsonl": "jsonl", ".jsonl.gz": "jsonl", ".ndjson": "jsonl"}


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


# ------------------------------------------------------------------------------------------------ the table
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

    __slots__ = ("_frame", "_groups", "_provenance", "_has_criterion", "_reference", "__weakref__")

    def __init__(self, frame: pd.DataFrame, *, provenance: Mapping[str, Any] | None = None,
                 _n_duplicates: Mapping[tuple, int] | None = None, _reference: pd.DataFrame | None = None) -> None:
        # ``frame`` must come from read_scores (validated, canonical columns); users call read_scores.
        self._has_criterion = "criterion" in frame.columns
        self._frame, self._groups = _index_groups(frame, self._has_criterion, _n_duplicates or {})
        self._reference = _reference_rows(_reference)
        provenance = dict(provenance or {})
        if self._reference is not None:
            provenance["reference"] = _reference_note(self._reference)
        self._provenance = MappingProxyType(provenance)

    # -- public accessors ----------------------------------------------------------------------------
    @property
    def has_criterion(self) -> bool:
        """True when the table has a ``criterion`` column (analyses then run per model x criterion)."""
        return self._has_criterion

    @property
    def provenance(self) -> Mapping[str, Any]:
        return self._provenance

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(g.model for g in self._groups))

    @property
    def criteria(self) -> list[str]:
        return list(dict.fromkeys(g.criterion for g in self._groups)) if self._has_criterion else []

    @property
    def judges(self) -> list[str]:
        return sorted(set(self._frame["judge"].astype(str)))

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

    def to_frame(self) -> pd.DataFrame:
        """A copy of the validated long table."""
        return self._frame.copy()

    def __len__(self) -> int:
        return len(self._frame)

    def __repr__(self) -> str:
        crit = f", {len(self.criteria)} criteria" if self._has_criterion else ""
        return (f"<Scores: {len(self._frame):,} rows, {len(self.models)} models{crit}, "
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
        keys = list(_ID_COLUMNS)
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


# ---------------------------------------------------------------------------------------------- indexing
def _codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    try:
        codes, uniques = pd.factorize(values, sort=True)
    except TypeError:  # mixed, unorderable labels: keep order of appearance
        codes, uniques = pd.factorize(values, sort=False)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


def _index_groups(frame: pd.DataFrame, has_criterion: bool,
                  n_duplicates: Mapping[tuple, int]) -> tuple[pd.DataFrame, list[GroupData]]:
    """Sort the table once and build each group's local codes, design and read-only arrays."""
    group_cols = ["model", "criterion"] if has_criterion else ["model"]
    gkey = frame[group_cols[0]].astype(str)
    if has_criterion:
        gkey = gkey + "\x1f" + frame["criterion"].astype(str)
    g, _ = _codes(gkey)
    s, s_lab = _codes(frame["scenario"])
    gen, gen_lab = _codes(frame["generation"])
    j, j_lab = _codes(frame["judge"].astype(str))
    order = np.lexsort((j, gen, s, g))
    frame = frame.iloc[order].reset_index(drop=True)
    g, s, gen, j = g[order], s[order], gen[order], j[order]
    y_all = frame["score"].to_numpy(dtype=np.float64)
    bounds = np.flatnonzero(np.diff(g)) + 1
    starts = np.concatenate(([0], bounds))
    stops = np.concatenate((bounds, [len(frame)]))
    models = frame["model"].astype(str).to_numpy()
    crits = frame["criterion"].astype(str).to_numpy() if has_criterion else None
    groups = []
    for a, b in zip(starts, stops):
        gs, ggen, gj = s[a:b], gen[a:b], j[a:b]
        new_s = np.empty(b - a, dtype=bool)
        new_s[0] = True
        new_s[1:] = gs[1:] != gs[:-1]
        new_c = new_s.copy()
        new_c[1:] |= ggen[1:] != ggen[:-1]
        scen = np.cumsum(new_s) - 1
        cell = np.cumsum(new_c) - 1
        judges_global, judge = np.unique(gj, return_inverse=True)
        cell_scenario = scen[new_c]
        n, n_cells, k = int(scen[-1]) + 1, int(cell[-1]) + 1, len(judges_global)
        m_per = np.bincount(cell_scenario, minlength=n)
        per_cell = np.bincount(cell, minlength=n_cells)
        n_missing = int(n_cells * k - (b - a))
        model = str(models[a])
        crit = str(crits[a]) if crits is not None else None
        design = GroupDesign(
            model=model, criterion=crit, n_rows=int(b - a), n_scenarios=n,
            generations=int(m_per[0]) if (m_per == m_per[0]).all() else None,
            generations_min=int(m_per.min()), generations_max=int(m_per.max()), n_judges=k,
            judges=tuple(str(x) for x in j_lab[judges_global]), n_cells=n_cells, n_missing=n_missing,
            n_duplicates=int(n_duplicates.get((model, crit), 0)),
            complete=bool((per_cell == k).all()),
            balanced=bool((per_cell == k).all() and (m_per == m_per[0]).all()),
        )
        groups.append(GroupData(
            model=model, criterion=crit, y=_readonly(y_all[a:b]), scenario=_readonly(scen),
            cell=_readonly(cell), judge=_readonly(judge.astype(np.int64)), cell_scenario=_readonly(cell_scenario),
            scenario_labels=_readonly(s_lab[gs[new_s]]), cell_generation_labels=_readonly(gen_lab[ggen[new_c]]),
            judge_labels=design.judges, design=design,
        ))
    return frame, groups


# ------------------------------------------------------------------------------------------------ reading
def _file_kind(path: Path) -> str:
    name = path.name.lower()
    for suffix in sorted(_READERS, key=len, reverse=True):
        if name.endswith(suffix):
            return _READERS[suffix]
    known = ", ".join(sorted(_READERS))
    raise CjstatsError(f"Unknown file type of `{path}`: read_scores reads {known} files (or pass a DataFrame).")


def _read_file(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise CjstatsError(f"The score file `{path}` does not exist.")
    if path.is_dir():
        raise CjstatsError(f"`{path}` is a folder; give read_scores one score file.")
    kind = _file_kind(path)
    if path.stat().st_size == 0:
        raise CjstatsError(f"The score file `{path}` is empty: it has no header and no rows.")
    try:
        if kind in ("csv", "tsv"):
            return pd.read_csv(path, sep="," if kind == "csv" else "\t", low_memory=False)
        if kind == "parquet":
            try:
                return pd.read_parquet(path)
            except ImportError as exc:
                raise CjstatsError("Reading Parquet needs pyarrow: pip install 'cjstats[parquet]'.") from exc
        return pd.read_json(path, lines=True)
    except pd.errors.EmptyDataError as exc:
        raise CjstatsError(f"The score file `{path}` is empty: it has no header and no rows.") from exc
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError, OSError) as exc:
        if isinstance(exc, CjstatsError):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CjstatsError(f"Could not read `{path}` as {kind.upper()}: {first}.") from exc


def _suggest_mapping(missing: list[str], found: list[str]) -> dict[str, str]:
    lower = {c.lower(): c for c in found}
    out = {}
    for col in missing:
        for syn in _SYNONYMS.get(col, ()):
            if syn in lower:
                out[lower[syn]] = col
                break
    return out


def _first_row(mask: np.ndarray, index: pd.Index) -> Any:
    return index[int(np.flatnonzero(mask)[0])]


def _check_ids(df: pd.DataFrame, cols: list[str]) -> None:
    for col in cols:
        bad = df[col].isna().to_numpy()
        if bad.any():
            raise CjstatsError(f"Column '{col}' has {int(bad.sum())} missing values (first in row "
                               f"{_first_row(bad, df.index)}). Fill or drop them before read_scores().")


def _check_scores(df: pd.DataFrame) -> pd.Series:
    raw = df["score"]
    if pd.api.types.is_bool_dtype(raw):
        raise CjstatsError("Column 'score' holds True/False values; recode them as numbers before read_scores().")
    num = pd.to_numeric(raw, errors="coerce")
    nonnum = (num.isna() & raw.notna()).to_numpy()
    if nonnum.any():
        i = int(np.flatnonzero(nonnum)[0])
        raise CjstatsError(f"Column 'score' has {int(nonnum.sum())} non-numeric values (first: {raw.iloc[i]!r} in "
                           f"row {df.index[i]}). Drop or recode them before read_scores().")
    values = num.to_numpy(dtype=np.float64)
    nan = np.isnan(values)
    if nan.any():
        raise CjstatsError(f"Column 'score' has {int(nan.sum())} missing (NaN) values (first in row "
                           f"{_first_row(nan, df.index)}). Drop those rows: a failed judge call is a missing cell, "
                           f"not a score.")
    inf = np.isinf(values)
    if inf.any():
        raise CjstatsError(f"Column 'score' has {int(inf.sum())} infinite values (first in row "
                           f"{_first_row(inf, df.index)}). Drop or recode them before read_scores().")
    return pd.Series(values, index=df.index, name="score")


def read_scores(source: pd.DataFrame | str | Path, *, columns: Mapping[str, str] | None = None,
                duplicates: Literal["error", "mean"] = "error", reference: str | list[str] | None = None) -> Scores:
    """Read and validate a long score table.

    Parameters
    ----------
    source : DataFrame or path
        A DataFrame, or a path to a ``.csv``, ``.csv.gz``, ``.tsv``, ``.parquet`` or ``.jsonl`` file, with one
        row per judge call and the columns ``model, scenario, generation, judge, score`` (and optionally
        ``criterion``). ``generation`` may be absent: every scenario then has one generation (m = 1).
        Other columns are ignored.
    columns : mapping, optional
        Renames your columns to ours, e.g. ``{"rater": "judge", "item": "scenario"}``.
    duplicates : {"error", "mean"}
        What to do when a (model, [criterion], scenario, generation, judge) cell has more than one row:
        raise (default), or average the rows into one and count them in the design summary.
    reference : str or list of str, optional
        Judges that are reference (human) raters rather than LLM judges. Without it, a ``judge_type`` column
        (values ``human`` / ``llm``) marks the human rows as reference raters. Reference rows are kept apart
        (:meth:`Scores.reference_frame`): every analysis sees only the LLM judges, and ``provenance`` says so.

    Returns
    -------
    Scores
        The validated, immutable table; ``.design`` summarises each model (x criterion).

    Examples
    --------
    >>> import cjstats as cj
    >>> scores = cj.read_scores(cj.datasets.load_frame("hanna"))
    >>> scores.design[["model", "n_scenarios", "generations", "n_judges"]].head(2)  # doctest: +SKIP
    """
    from cjstats._validate import check_choice

    check_choice("duplicates", duplicates, ("error", "mean"), caller="read_scores")
    provenance: dict[str, Any] = {}
    if isinstance(source, pd.DataFrame):
        df = source
        provenance["source"] = "DataFrame"
    elif isinstance(source, (str, Path)):
        path = Path(source)
        df = _read_file(path)
        provenance["source"] = str(path)
    else:
        raise CjstatsError(f"read_scores takes a DataFrame or a file path. Got {type(source).__name__} instead.")
    if columns:
        if not isinstance(columns, Mapping):
            raise CjstatsError("The 'columns' argument of read_scores must be a mapping such as "
                               "{'rater': 'judge'}.")
        absent = [c for c in columns if c not in df.columns]
        if absent:
            raise CjstatsError(f"columns maps '{absent[0]}', but scores has no column '{absent[0]}' "
                               f"(found: {', '.join(map(str, df.columns))}).")
        df = df.rename(columns=dict(columns))
    found = [str(c) for c in df.columns]
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        guess = _suggest_mapping(missing, found) or {"<your column>": missing[0]}
        raise CjstatsError(f"scores has no column '{missing[0]}' (found: {', '.join(found) or 'no columns'}). "
                           f"Map yours with read_scores(path, columns={guess!r}).")
    if len(df) == 0:
        raise CjstatsError("scores is empty: it has the columns but no rows to analyse.")
    is_reference = _reference_mask(df, reference)
    keep = [c for c in (*SCORE_COLUMNS, "criterion") if c in df.columns]
    df = df[keep].copy()
    df["_reference"] = is_reference
    if "generation" not in df.columns:
        df.insert(2, "generation", 0)
        provenance["generation"] = "absent: one generation per scenario assumed (m = 1)"
    ids = ["model", "scenario", "generation", "judge"] + (["criterion"] if "criterion" in df.columns else [])
    _check_ids(df, ids)
    df["score"] = _check_scores(df)
    for col in ("model", "judge", "criterion"):
        if col in df.columns:
            df[col] = df[col].astype(str)
    df = df[[c for c in (*SCORE_COLUMNS[:4], "criterion", "score", "_reference")
             if c in df.columns]].reset_index(drop=True)
    key_cols = ["model"] + (["criterion"] if "criterion" in df.columns else []) + ["scenario", "generation", "judge"]
    dup = df.duplicated(key_cols, keep=False).to_numpy()
    n_dup: dict[tuple, int] = {}
    if dup.any():
        if duplicates == "error":
            rows = np.flatnonzero(dup)
            first = df.iloc[rows[0]]
            same = rows[(df.iloc[rows][key_cols] == first[key_cols]).all(axis=1).to_numpy()]
            where = ", ".join(f"{c} {first[c]!r}" for c in key_cols)
            n_cells = int(df[dup].groupby(key_cols, sort=False, observed=True).ngroups)
            raise CjstatsError(f"scores has {n_cells} duplicate cells, several rows for one judge call (first: {where} "
                               f"in rows {same[0]} and {same[1]}). Average them with read_scores(..., "
                               f"duplicates='mean') or keep one row per cell.")
        grp_cols = ["model"] + (["criterion"] if "criterion" in df.columns else [])
        dups = df[dup].groupby(key_cols, sort=False, observed=True).ngroups
        per_group = df[dup].drop_duplicates(key_cols).groupby(grp_cols, observed=True).size()
        for key, count in per_group.items():
            key = key if isinstance(key, tuple) else (key,)
            n_dup[(str(key[0]), str(key[1]) if len(key) > 1 else None)] = int(count)
        df = df.groupby(key_cols, sort=False, observed=True, as_index=False).agg(
            score=("score", "mean"), _reference=("_reference", "first"))
        provenance["duplicate_cells_averaged"] = int(dups)
    df, ref = _split_reference(df)
    return Scores(df, provenance=provenance, _n_duplicates=n_dup, _reference=ref)


# -------------------------------------------------------------------------------- reference (human) raters
_JUDGE_TYPES = ("human", "llm")


def _reference_mask(df: pd.DataFrame, reference: str | list[str] | None) -> np.ndarray:
    """Which rows are reference ratings: the judges named in ``reference``, else ``judge_type == 'human'``."""
    judges = df["judge"].astype(str)
    if reference is not None:
        names = [reference] if isinstance(reference, str) else reference
        if not isinstance(names, (list, tuple)) or not names or not all(isinstance(x, str) for x in names):
            raise CjstatsError(f"The 'reference' argument of read_scores must be a judge name or a list of judge "
                               f"names. Got {reference!r} instead.")
        found = set(judges)
        unknown = [x for x in names if x not in found]
        if unknown:
            raise CjstatsError(f"The reference rater '{unknown[0]}' is not in column 'judge' (judges: "
                               f"{', '.join(sorted(found))}); name the human raters exactly as they appear there.")
        return judges.isin(names).to_numpy()
    if "judge_type" not in df.columns:
        return np.zeros(len(df), dtype=bool)
    kind = df["judge_type"]
    bad = (kind.isna() | ~kind.astype(str).str.strip().str.lower().isin(_JUDGE_TYPES)).to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CjstatsError(f"Column 'judge_type' must hold 'human' or 'llm' but has {kind.iloc[i]!r} in row "
                           f"{df.index[i]}; recode it or drop the column.")
    return (kind.astype(str).str.strip().str.lower() == "human").to_numpy()


def _split_reference(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    mask = df["_reference"].to_numpy(dtype=bool)
    df = df.drop(columns="_reference")
    if not mask.any():
        return df, None
    if mask.all():
        names = ", ".join(sorted(set(df["judge"].astype(str))))
        raise CjstatsError(f"Every row of scores is a reference rating ({names}): there are no LLM-judge rows to "
                           f"analyse; add the judges' scores or mark fewer raters as reference.")
    return df[~mask].reset_index(drop=True), df[mask].reset_index(drop=True)


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


# --------------------------------------------------------------------------------------- MT-Bench loader
def read_mtbench_judgments(path: str | Path, *, turns: Literal["mean", "separate"] = "mean") -> Scores:
    """Read a FastChat MT-Bench single-grade judgment file (``*_single.jsonl``).

    Each line holds ``question_id, model, judge=[name, template], score, turn``. The judge is ``judge[0]``
    (the template differs by question category, not by judge). Scores of -1 mean the judge's answer could
    not be parsed: those calls are dropped and counted in ``provenance['dropped_unparsed']``. A record field
    ``generation`` (or ``sample_id``), when present, gives the generation; otherwise m = 1.

    Parameters
    ----------
    turns : {"mean", "separate"}
        ``"mean"`` averages the turns of each call into one score per (model, question, judge), as the paper
        does; cells missing a turn are averaged over the turns present and counted in
        ``provenance['partial_turn_cells']``. ``"separate"`` keeps turns apart as criteria ``turn 1``, ``turn 2``.
    """
    from cjstats._validate import check_choice

    check_choice("turns", turns, ("mean", "separate"), caller="read_mtbench_judgments")
    path = Path(path)
    if not path.exists():
        raise CjstatsError(f"The judgment file `{path}` does not exist.")
    records = []
    opener = __import__("gzip").open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CjstatsError(f"Line {lineno} of `{path}` is not valid JSON ({exc.msg}).") from exc
            for key in ("question_id", "model", "judge", "score"):
                if key not in rec:
                    raise CjstatsError(f"Line {lineno} of `{path}` has no field '{key}': this is not a FastChat "
                                       f"single-grade judgment file.")
            judge = rec["judge"]
            records.append({
                "model": rec["model"], "scenario": rec["question_id"],
                "generation": rec.get("generation", rec.get("sample_id", 0)),
                "judge": judge[0] if isinstance(judge, (list, tuple)) else judge,
                "turn": rec.get("turn", 1), "score": rec["score"],
            })
    if not records:
        raise CjstatsError(f"The judgment file `{path}` is empty: it has no judgments.")
    df = pd.DataFrame.from_records(records)
    df["score"] = pd.to_numeric(df["score"], errors="coerce")
    unparsed = (df["score"] == -1) | df["score"].isna()
    dropped = int(unparsed.sum())
    df = df[~unparsed]
    if df.empty:
        raise CjstatsError(f"Every judgment in `{path}` has score -1 (unparsed): nothing is left to analyse.")
    provenance: dict[str, Any] = {"source": str(path), "format": "fastchat-mtbench-single",
                                  "dropped_unparsed": dropped}
    keys = ["model", "scenario", "generation", "judge"]
    if turns == "mean":
        grouped = df.groupby(keys, sort=False)
        n_turns = df["turn"].nunique()
        provenance["partial_turn_cells"] = int((grouped["turn"].nunique() < n_turns).sum())
        out = grouped["score"].mean().reset_index()
    else:
        out = df.assign(criterion="turn " + df["turn"].astype(str)).drop(columns="turn")
    scores = read_scores(out)
    return Scores(scores._frame, provenance={**provenance, **{k: v for k, v in scores.provenance.items()
                                                              if k != "source"}})
