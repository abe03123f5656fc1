r"""The DuckDB engine: score files larger than memory reduced to :class:`~cjstats.stats.CellStats` inside DuckDB.

The raw rows never enter Python. Two scans of the source do all the work:

1. **Validation and centring.** ``GROUP BY (model, [criterion], judge)``: the number of rows and the sum, min
   and max of the score, and cheap signs of bad input (non-NULL counts of the ids and the score, one count of
   non-finite scores; :func:`_quick_pass`). On a sign, a second query counts missing ids, non-numeric, NaN and
   infinite scores, and any count above zero raises the sentence :func:`cjstats.read_scores` raises (a filtered
   query finds the first offending row, named by file and row, or by line in CSV, TSV and JSONL files, as
   read_scores names it).
   CSV and TSV files are read with every column as text, as read_scores reads them. The judge means are the
   centring ``shift`` of each unit, and every (unit, judge) gets its code ``l`` (judges sorted by label, as in
   memory).
2. **Cells, then scenarios.** With y0 = y - shift[l], ``GROUP BY (unit, scenario, generation)`` gives per
   cell c its size n_c, its judge mask D_c = bit_or(2^l) (the judge-count vector, since each judge scores a
   cell at most once), Y_c = sum y0, sum y0^2 and the K per-judge sums of y0; in the same streaming query a
   second ``GROUP BY (unit, scenario, n, mask)`` sums the cells, so only O(scenarios) rows are kept (a temp
   table) and summed once more by (unit, n, mask) for the size-class statistics.

numpy then expands the masks: with D the bits of a mask and N_cells its cells, per size class h
DD_h = sum N_cells D D', DY_h = sum D sum_c Y_c, YY_h = sum_c Y_c^2, judge counts sum N_cells D, judge sums,
sum y0^2 and SSW_h = sum_c (sum y0^2 - Y_c^2 / n_c); per scenario and class s_isk = sum N_cells D, the cell
count and sum Y_c. A cell whose size differs from the number of bits of its mask holds a duplicate judge call.

3. **Scenario x judge statistics** (``CellStats.sj``, when the model has the term and the table a generation
   column): step 2 then keeps its cells in a temp table, and for the units where a judge scored two generations of
   a scenario, ``row_number() OVER (PARTITION BY unit, scenario ...)`` places each cell in the numpy engine's
   canonical order, ``GROUP BY (unit, scenario)`` gives z_i (scenario sum, cell sums by place, scenario x judge
   sums) and the scenario's pattern (its masks by place), and ``GROUP BY (unit, pattern)`` the count, sum z_i and
   sum z_i z_i' of each pattern: only the patterns reach Python (:func:`_with_scenario_judge`).
4. **Per-pattern counts of the ordinal model** (``CellStats.patterns``, with ``likelihood="cumulative"``): for the
   units with one generation per scenario, one more scan ``GROUP BY (unit, scenario)`` gives each scenario's
   judge -> score vector and ``GROUP BY (unit, pattern)`` its count and first scenario (:func:`_with_patterns`).

5. **The pattern form** (``build(scenarios="patterns")``, or ``"auto"`` from :data:`PATTERN_FORM_SCENARIOS`
   scenarios in a unit): steps 2 and 3 are replaced by one streaming query, rows -> cells -> scenarios -> design
   patterns (:func:`_aggregate_patterns`), and the units hold ``CellStats.pat`` (per pattern the scenario count,
   cnt, S, sum Y_is and sum Y_is Y_ir; :class:`~cjstats.stats.views.ScenarioPatternForm`) and their scenario x judge
   statistics instead of per-scenario arrays: nothing of O(scenarios) reaches Python. Integer scores are packed
   into bit fields there (:func:`_integer_grid`), a narrower scenario hash table.

Memory is bounded by DuckDB (``memory_limit``; its hash aggregates spill to ``temp_directory``) plus the
O(scenarios x size classes x judges) arrays of :class:`CellStats` itself (O(patterns) in the pattern form).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError
from cjstats.io import rules as R
from cjstats.stats.engines import _source as S

__all__ = ["build", "connect"]

_WORD = 62  # judges per BIGINT mask word
#: ``build(scenarios="auto")`` keeps the pattern form from this many scenarios in a unit (per-scenario arrays take
#: about 100 bytes a scenario, their labels as many again)
PATTERN_FORM_SCENARIOS = 200_000
_MAX_PLACES = 24  # the pattern form's query has a column per generation label (and per label and judge)


def _q(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _lit(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _import_duckdb() -> Any:
    try:
        import duckdb
    except ImportError as exc:
        raise CjstatsError(S.msg_not_installed("duckdb", "duckdb")) from exc
    return duckdb


def connect(*, memory_limit: str | None = None, temp_directory: str | Path | None = None,
            threads: int | None = None) -> Any:
    """A DuckDB connection with the given limits (``memory_limit="2GB"``, spill folder, threads)."""
    duckdb = _import_duckdb()
    con = duckdb.connect()
    if memory_limit is not None:
        con.execute(f"SET memory_limit = {_lit(memory_limit)}")
    if temp_directory is not None:
        con.execute(f"SET temp_directory = {_lit(str(temp_directory))}")
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    return con


# ------------------------------------------------------------------------------------------------ reading
def _reader(src: S.Source, *, positions: bool = False) -> str:
    """The SQL table expression that reads the source (with ``cj_file``/``cj_row`` when ``positions``)."""
    if src.kind == "frame":
        return "(SELECT *, '' AS cj_file FROM cj_frame_pos)" if positions else "cj_frame"
    files = "[" + ", ".join(_lit(f) for f in src.files) + "]"
    if src.kind == "parquet":
        if positions:
            return (f"(SELECT * EXCLUDE (filename, file_row_number), filename AS cj_file, file_row_number AS cj_row "
                    f"FROM read_parquet({files}, union_by_name = true, filename = true, file_row_number = true))")
        return f"read_parquet({files}, union_by_name = true)"
    if src.kind in R.TEXT_KINDS:  # every column as text, as read_scores reads CSV/TSV (see _text_col)
        sep = src.sep or ("," if src.kind == "csv" else "\t")
        sep_sql = "'\\t'" if sep == "\t" else _lit(sep)
        nulls = "[" + ", ".join(_lit(x) for x in R.NA_STRINGS) + "]"
        expr = (f"read_csv({files}, union_by_name = true, header = true, delim = {sep_sql}, all_varchar = true, "
                f"nullstr = {nulls}")
    else:
        expr = f"read_json_auto({files}, format = 'newline_delimited', union_by_name = true"
    if positions:
        # These readers have no file_row_number. row_number() OVER () numbers the rows in the order the scan
        # delivers them, which is file order only in a scan on one thread (see _in_file_order, which every query
        # over these positions runs under): a PARTITION BY filename window numbers them in the order its
        # threads happen to finish, a different (wrong) line on every run. The row within its file is that
        # number minus the file's first one.
        return (f"(SELECT * EXCLUDE (filename, cj_ord), filename AS cj_file, "
                f"cj_ord - min(cj_ord) OVER (PARTITION BY filename) AS cj_row FROM "
                f"(SELECT *, row_number() OVER () AS cj_ord FROM {expr}, filename = true)))")
    return expr + ")"


@contextmanager
def _in_file_order(con: Any) -> Iterator[None]:
    """Run the enclosed queries on one thread with insertion order kept, so that a scan of a CSV, TSV or JSONL
    file returns its rows in file order (what the row numbers of ``_reader(positions=True)`` rely on), then put
    the connection's settings back. Only the error path uses it (finding the first offending row)."""
    keys = ("threads", "preserve_insertion_order")
    old = {k: con.execute(f"SELECT current_setting('{k}')").fetchall()[0][0] for k in keys}
    con.execute("SET threads = 1")
    con.execute("SET preserve_insertion_order = true")
    try:
        yield
    finally:
        con.execute(f"SET threads = {int(old['threads'])}")
        con.execute(f"SET preserve_insertion_order = {'true' if old['preserve_insertion_order'] else 'false'}")


def _schemas(con: Any, src: S.Source) -> dict[str, dict[str, str]]:
    """Column name -> DuckDB type, per file (one entry for a DataFrame)."""
    out: dict[str, dict[str, str]] = {}
    if src.kind == "frame":
        rows = con.execute("DESCRIBE SELECT * FROM cj_frame").fetchall()
        return {"": {r[0]: r[1] for r in rows}}
    for f in src.files:
        one = S.Source(kind=src.kind, files=(f,), sep=src.sep)
        try:
            rows = con.execute(f"DESCRIBE SELECT * FROM {_reader(one)}").fetchall()
        except Exception as exc:  # duckdb.Error: unreadable file
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CjstatsError(f"Could not read `{f}` as {src.kind.upper()}: {first}.") from exc
        out[f] = {r[0]: r[1] for r in rows}
        if src.kind == "jsonl" and out[f] == {"json": "JSON"} and len(S._count_lines(f)) == 1:
            raise CjstatsError(f"The score file `{f}` is empty: it has no header and no rows.")  # blank lines only
    return out


def _numeric_columns(con: Any, src: S.Source, schema: Mapping[str, str], rename: Mapping[str, str]) -> dict[str, bool]:
    """Whether each column's first 50 non-missing values are numbers (our names), as read_scores decides it for
    :func:`cjstats.io.rules.wide_pattern`: numeric and boolean columns are, text columns when every value casts."""
    out = {}
    with _in_file_order(con):
        for col, sql_type in schema.items():
            family = S.type_family(sql_type)
            if family in ("numeric", "boolean"):
                out[str(rename.get(col, col))] = True
                continue
            if family != "string":
                out[str(rename.get(col, col))] = False
                continue
            v = f"({_q(col)} ->> '$')" if str(sql_type).upper() == "JSON" else _q(col)
            if src.kind in R.TEXT_KINDS:
                v = _text_col(col)
            got = con.execute(f"SELECT count(*), count(TRY_CAST(trim(v) AS DOUBLE)) FROM "
                              f"(SELECT {v} AS v FROM {_reader(src)} WHERE {v} IS NOT NULL LIMIT 50)").fetchall()[0]
            out[str(rename.get(col, col))] = bool(got[0] > 0 and got[0] == got[1])
    return out


def _check_files_agree(schemas: dict[str, dict[str, str]], used: list[str]) -> None:
    """Every file has the columns used, each of one type family; else one sentence naming file and column."""
    files = list(schemas)
    first = files[0]
    for f in files[1:]:
        for col in used:
            if (col in schemas[first]) != (col in schemas[f]):
                has, lacks = (first, f) if col in schemas[first] else (f, first)
                raise CjstatsError(f"The score files have different columns: `{lacks}` has no column '{col}' but "
                                   f"`{has}` has; write every file with the same columns.")
            if col in schemas[first]:
                a, b = schemas[first][col], schemas[f][col]
                if S.type_family(a) != S.type_family(b):
                    raise CjstatsError(f"Column '{col}' is {b} in `{f}` but {a} in `{first}`: write it with one "
                                       f"type in every score file.")


# --------------------------------------------------------------------------------------------- the build
def build(source: Any, *, unit: tuple[str, ...] = ("model", "criterion"), columns: Mapping[str, str] | None = None,
          connection: Any = None, memory_limit: str | None = None, temp_directory: str | Path | None = None,
          threads: int | None = None, terms: tuple[str, ...] | None = None, likelihood: str = "gaussian",
          scenarios: str = "auto") -> Any:
    """Reduce a score source to :class:`~cjstats.stats.ScoreStats` inside DuckDB (raw rows stay in DuckDB).

    Parameters
    ----------
    source : str, Path, list of paths or DataFrame
        A Parquet/CSV/TSV/JSONL file, a folder, a glob such as ``"scores/*.parquet"``, a list of paths, or a
        DataFrame (scanned in place by DuckDB). Every file must have the same columns, each of one type.
    unit : tuple of str
        ``("model", "criterion")`` (the criterion is ignored when the table has none) or ``("model",)``.
    columns : mapping, optional
        Renames your columns to ours, as in :func:`cjstats.read_scores`.
    connection : duckdb.DuckDBPyConnection, optional
        A connection to use (its settings apply); by default a new in-memory one from :func:`connect`.
    memory_limit, temp_directory, threads
        DuckDB settings for the new connection (``memory_limit="2GB"``; hash aggregates spill to
        ``temp_directory`` beyond it).
    terms : tuple of str, optional
        The model's terms (``cjstats.results.model.TERMS`` names; None: every term). Without
        ``"scenario_judge"`` the scenario x judge statistics (``CellStats.sj``) are not built (and their SQL not
        run); with it they are built for every unit where the term is identifiable, as the numpy engine does.
    likelihood : {"gaussian", "cumulative"}
        ``"cumulative"`` also builds the per-pattern counts of every unit with one generation per scenario
        (``CellStats.patterns``, :mod:`cjstats.stats.ordinal`): one more scan, ``GROUP BY`` scenario then pattern,
        and only the patterns reach Python.
    scenarios : {"auto", "each", "patterns"}
        ``"each"`` keeps the per-scenario arrays (``CellStats.s_isk``, ``cnt_is``, ``ys`` and the scenario labels);
        ``"patterns"`` keeps only their *pattern form* (``CellStats.pat``,
        :class:`~cjstats.stats.views.ScenarioPatternForm`),
        built by one streaming query in which nothing of O(scenarios) reaches Python (:func:`_aggregate_patterns`);
        ``"auto"`` (default) takes the pattern form when a unit has about :data:`PATTERN_FORM_SCENARIOS` scenarios
        or more (:func:`_auto_form`) and the per-scenario arrays otherwise. The ANOVA and REML
        (the scenario x judge term and profiles included) fit from either with the same numbers; what needs
        per-scenario values (the joint statistics, ``merge_stats``, the Bayesian backends) refuses the pattern
        form in one sentence. ``likelihood="cumulative"`` always keeps the per-scenario arrays.

    Returns
    -------
    ScoreStats
        The same statistics as ``build_stats(read_scores(table))`` (to rounding, about 1e-13 relative).
    """
    from cjstats.stats.scorestats import ScoreStats

    src = S.resolve(source)
    own = connection is None
    con = connect(memory_limit=memory_limit, temp_directory=temp_directory, threads=threads) if own else connection
    bar = None if own else con.execute("SELECT current_setting('enable_progress_bar')").fetchall()[0][0]
    try:
        con.execute("SET enable_progress_bar = false")  # library code writes nothing to the terminal
        if src.frame is not None:
            con.register("cj_frame", src.frame)
        sj = terms is None or "scenario_judge" in terms
        if scenarios not in ("auto", "each", "patterns"):
            raise CjstatsError(f"scenarios={scenarios!r} is not one of 'auto', 'each', 'patterns'.")
        units, design, has_criterion = _build(con, src, unit=tuple(unit), columns=columns, scenario_judge=sj,
                                              patterns=likelihood == "cumulative",
                                              scenarios="each" if likelihood == "cumulative" else scenarios)
    finally:
        if src.frame is not None:
            con.unregister("cj_frame")
        if own:
            con.close()
        else:  # leave the caller's connection as it was
            con.execute(f"SET enable_progress_bar = {'true' if bar else 'false'}")
    return ScoreStats(units=units, has_criterion=has_criterion, design=design, unit=tuple(unit), engine="duckdb")


def _build(con: Any, src: S.Source, *, unit: tuple[str, ...], columns: Mapping[str, str] | None,
           scenario_judge: bool = True, patterns: bool = False, scenarios: str = "each") -> Any:
    schemas = _schemas(con, src)
    first = next(iter(schemas.values()))
    rename = {}
    if columns:
        R.check_mapping(columns, list(first))
        rename = dict(columns)
    canon = {rename.get(c, c): c for c in first}  # our name -> the source's name
    found = [str(rename.get(c, c)) for c in first]
    missing = R.missing_columns(list(canon))
    if missing:  # a wide table (one score column per judge) is told to use judge_columns=
        raise CjstatsError(R.msg_missing_column(missing, found, lambda: _numeric_columns(con, src, first, rename)))
    has_gen = "generation" in canon
    has_criterion = "criterion" in canon
    if unit == ("model",) and has_criterion:
        raise CjstatsError("The 'unit' argument of build_stats is ('model',) but the table has a 'criterion' "
                           "column; pass unit=('model', 'criterion') or drop the column.")
    used_src = [canon[c] for c in (*R.REQUIRED, "generation", "criterion") if c in canon]
    if src.several:
        _check_files_agree(schemas, used_src)
    score_type = S.type_family(first[canon["score"]])
    text = src.kind in R.TEXT_KINDS
    ids = ["model", "scenario", "generation", "judge"] + (["criterion"] if has_criterion else [])
    label_ids = [c for c in ("scenario", "generation") if c in canon]  # text ids that may become integers
    json_cols = frozenset(c for c, t in first.items() if str(t).upper() == "JSON")  # JSONL columns of mixed types
    rows = _select(canon, has_gen, has_criterion, score_type, text=text, int_ids=(),
                   decimal_comma=text and src.sep == ";", json_cols=json_cols)
    rows_sql, pos_rows = rows(_reader(src)), rows(_reader(src, positions=True), positions=True)

    # ---- pass 1: judge means, min/max, per (unit, judge), and the validation counts
    crit = ", criterion" if has_criterion else ""
    text_agg = [f"count(*) FILTER (WHERE NOT regexp_full_match({c}, {_lit(R.INT_TEXT)})) AS text_{c}"
                for c in label_ids] if text else []  # read_scores makes a text id integers when every value is one
    pass1 = _quick_pass(con, rows_sql, ids, text_agg, has_criterion) if score_type in ("numeric", "string") else None
    if pass1 is None:  # bad input (or a score column of another type): every count, to name what is wrong
        nonnum = "score_raw IS NOT NULL AND y IS NULL" if score_type == "string" else "false"
        nan = ("(score_raw IS NULL) OR isnan(y)" if score_type in ("numeric", "string") else "false")
        agg = [f"count(*) FILTER (WHERE {c} IS NULL) AS null_{c}" for c in ids] + text_agg
        pass1 = con.execute(
            f"SELECT model{crit}, judge, count(*) AS n, sum(y) FILTER (WHERE isfinite(y)) AS sy, "
            f"min(y) AS lo, max(y) AS hi, {', '.join(agg)}, count(*) FILTER (WHERE {nonnum}) AS nonnum, "
            f"count(*) FILTER (WHERE {nan}) AS nan, count(*) FILTER (WHERE isinf(y)) AS inf "
            f"FROM {rows_sql} GROUP BY ALL"
        ).df().assign(frac=np.nan)
    if int(pass1["n"].sum()) == 0:
        raise CjstatsError(R.msg_empty())

    def first_row(cond: str, extra: str = "") -> tuple[Any, ...]:
        return _first_offending(con, src, pos_rows, cond, extra)

    for c in ids:
        cnt = int(pass1[f"null_{c}"].sum())
        if cnt:
            f, r = first_row(f"{c} IS NULL")[:2]
            raise CjstatsError(R.msg_missing_ids(c, cnt, _where(con, src, f, r)))
    if score_type == "boolean":
        raise CjstatsError(R.msg_bool_score())
    if score_type not in ("numeric", "string"):
        raise CjstatsError(f"Column 'score' has type {first[canon['score']]}, not numbers; recode it as numbers "
                           f"before read_scores().")
    for col, msg in (("nonnum", None), ("nan", R.msg_nan), ("inf", R.msg_inf)):
        cnt = int(pass1[col].sum())
        if not cnt:
            continue
        cond = {"nonnum": nonnum, "nan": nan, "inf": "isinf(y)"}[col]
        f, r, raw_value = first_row(cond, ", score_raw")
        where = _where(con, src, f, r)
        raise CjstatsError(R.msg_nonnumeric(cnt, raw_value, where) if msg is None else msg(cnt, where))
    if text:
        int_ids = tuple(c for c in label_ids if int(pass1[f"text_{c}"].sum()) == 0)
        if int_ids:
            rows = _select(canon, has_gen, has_criterion, score_type, text=text, int_ids=int_ids,
                           decimal_comma=src.sep == ";", json_cols=json_cols)
            rows_sql, pos_rows = rows(_reader(src)), rows(_reader(src, positions=True), positions=True)

    # ---- unit and judge codes (units sorted as in memory: model, then criterion, as strings)
    p1 = pass1.copy()
    if not has_criterion:
        p1["criterion"] = None
    p1["gkey"] = p1["model"].astype(str) + ("\x1f" + p1["criterion"].astype(str) if has_criterion else "")
    p1 = p1.sort_values(["gkey", "judge"], kind="stable").reset_index(drop=True)
    gkeys = list(dict.fromkeys(p1["gkey"]))
    p1["unit_id"] = p1["gkey"].map({g: i for i, g in enumerate(gkeys)}).astype(np.int64)
    p1["jcode"] = p1.groupby("unit_id").cumcount().astype(np.int64)
    p1["shift"] = p1["sy"].to_numpy(dtype=np.float64) / p1["n"].to_numpy(dtype=np.float64)
    k_max = int(p1["jcode"].max()) + 1
    n_words = (k_max + _WORD - 1) // _WORD
    judges_tbl = p1[["model", "judge", "unit_id", "jcode", "shift"] + (["criterion"] if has_criterion else [])]
    explicit = scenarios == "patterns"
    gens = _generations(con, rows_sql) if has_gen and scenarios != "each" else None
    if scenarios == "auto":
        scenarios = _auto_form(con, rows_sql, p1, gens, has_gen, has_criterion)
    if scenarios == "patterns":
        out = _build_patterns(con, src, rows_sql, pos_rows, p1, judges_tbl, gkeys, gens, has_gen, has_criterion,
                              k_max, sj=scenario_judge and has_gen)
        if out is not None:
            return out
        if explicit:
            raise CjstatsError(f"scenarios='patterns' keeps one column per generation label, and the table has more "
                               f"than {_MAX_PLACES}; use scenarios='each' (or 'auto').")
    # the scenario x judge statistics need each cell (its place in its scenario), so the cells are kept in a temp
    # table; without a generation column every scenario has one cell and the term is never identifiable
    keep_cells = scenario_judge and has_gen
    con.register("cj_judges", judges_tbl)
    try:
        cls_tbl = _aggregate(con, rows_sql, has_criterion, k_max, n_words, keep_cells=keep_cells)
    finally:
        con.unregister("cj_judges")
    units = []
    designs = []
    wcols = ", ".join(f"w{w}" for w in range(n_words))
    try:
        # ---- duplicates: a cell with more rows than judges in its mask
        if np.any(cls_tbl["n"].to_numpy() != _popcount(cls_tbl, n_words)):
            _raise_duplicates(con, src, pos_rows, has_criterion)
        for u in range(len(gkeys)):  # one unit's scenario table in Python at a time
            scen = con.execute(f"SELECT scenario, n, {wcols}, cells, ys, gen_min FROM cj_scen WHERE unit_id = {u} "
                               f"ORDER BY scenario, n, {wcols}").df()
            cs = _unit_stats(p1[p1["unit_id"] == u], scen, cls_tbl[cls_tbl["unit_id"] == u], n_words, has_criterion)
            del scen
            units.append(cs)
            designs.append(cs.design.as_dict())
        if keep_cells:
            units = _with_scenario_judge(con, units, n_words)
        if patterns:
            units = _with_patterns(con, rows_sql, judges_tbl, units, has_criterion, k_max)
    finally:
        con.execute("DROP TABLE IF EXISTS cj_scen")
        con.execute("DROP TABLE IF EXISTS cj_cells")
    design = pd.DataFrame(designs)
    design["generations"] = design["generations"].astype("Int64")
    if not has_criterion:
        design = design.drop(columns="criterion")
    return tuple(units), design, has_criterion


def _quick_pass(con: Any, rows_sql: str, ids: list[str], text_agg: list[str], has_criterion: bool
                ) -> pd.DataFrame | None:
    """Pass 1 on clean input: per (unit, judge) the row count, sum, min and max of the score, the largest
    |y - round(y)| (0: integer scores, :func:`_integer_grid`) and the text-id counts ``text_agg``, with the
    validation counts zero; None when the input shows any sign of a bad value.

    The signs are cheap aggregates (no filter per kind of fault): a NULL model, criterion or judge (a group key),
    fewer non-NULL scenario, generation or score values than rows (a missing id, a missing or non-numeric score)
    and any non-finite score (NaN, inf). The full validation query then counts each kind and names the first
    offending row, as read_scores does; on clean input its sum of finite scores is this sum of every score.
    """
    crit = ", criterion" if has_criterion else ""
    got = con.execute(
        f"SELECT model{crit}, judge, count(*) AS n, count(scenario) AS n_scenario, count(generation) AS n_generation, "
        f"count(y) AS n_y, sum(y) AS sy, min(y) AS lo, max(y) AS hi, max(abs(y - round(y))) AS frac, "
        f"count(*) FILTER (WHERE NOT isfinite(y)) AS nonfinite{''.join(', ' + a for a in text_agg)} "
        f"FROM {rows_sql} GROUP BY ALL").df()
    n = got["n"].to_numpy()
    keys = ["model", "judge"] + (["criterion"] if has_criterion else [])
    if (len(got) == 0 or any(got[c].isna().any() for c in keys) or int(got["nonfinite"].sum())
            or any(np.any(got[f"n_{c}"].to_numpy() != n) for c in ("scenario", "generation", "y"))):
        return None
    zero = {f"null_{c}": 0 for c in ids} | {"nonnum": 0, "nan": 0, "inf": 0}
    return got.drop(columns=["n_scenario", "n_generation", "n_y", "nonfinite"]).assign(**zero)


def _generations(con: Any, rows_sql: str) -> list[Any]:
    """The table's generation labels, sorted (at most ``_MAX_PLACES + 1``: more means too many for the pattern
    form, which has a place per label)."""
    got = con.execute(f"SELECT DISTINCT generation FROM {rows_sql} ORDER BY generation LIMIT {_MAX_PLACES + 1}"
                      ).fetchall()
    return [g[0] for g in got]


def _auto_form(con: Any, rows_sql: str, p1: pd.DataFrame, gens: list[Any] | None, has_gen: bool,
               has_criterion: bool) -> str:
    """``"patterns"`` when a unit has about :data:`PATTERN_FORM_SCENARIOS` scenarios or more, else ``"each"``.

    A unit of n rows, K judges and G generation labels has between n / (K G) scenarios (each holds at most K G
    rows, one per judge and generation, or the build refuses its duplicates) and n; only when the threshold falls
    between the two does one more query count them (DuckDB's approximate distinct count, per unit).
    """
    per = p1.groupby("unit_id").agg(n=("n", "sum"), k=("jcode", "size"))
    if float(per["n"].max()) < PATTERN_FORM_SCENARIOS:
        return "each"
    if has_gen and len(gens) > _MAX_PLACES:    # a place per label: the pattern form cannot hold them
        return "each"
    g = len(gens) if has_gen else 1
    if float((per["n"] / (per["k"] * g)).max()) >= PATTERN_FORM_SCENARIOS:
        return "patterns"
    crit = ", criterion" if has_criterion else ""
    got = con.execute(f"SELECT model{crit}, approx_count_distinct(scenario) AS s FROM {rows_sql} GROUP BY ALL").df()
    return "patterns" if float(got["s"].max()) >= PATTERN_FORM_SCENARIOS else "each"


def _text_col(name: str) -> str:
    """A column of a text file as read_scores reads it: leading spaces skipped, pandas' NA strings missing.

    The reader already makes pandas' NA strings NULL (``nullstr``); only a value with leading spaces needs the
    check again after they are skipped (`` NA`` is missing in pandas too).
    """
    q = _q(name)
    v = f"ltrim({q}, ' ')"
    na = " OR ".join(f"{v} = {_lit(x)}" for x in R.NA_STRINGS)  # an OR chain: DuckDB's IN list is 3x slower here
    return f"CASE WHEN NOT prefix({q}, ' ') THEN {q} WHEN {na} THEN NULL ELSE {v} END"


def _select(canon: dict[str, str], has_gen: bool, has_criterion: bool, score_type: str, *, text: bool,
            int_ids: tuple[str, ...], decimal_comma: bool, json_cols: frozenset[str] = frozenset()) -> Any:
    """``rows(reader, positions=False)``: the canonical rows model, scenario, generation, judge, [criterion],
    score_raw and y (the score as a number), and ``cj_file``, ``cj_row`` with ``positions``, as a subquery.

    A text source (every column VARCHAR) is read as read_scores reads it: ids are labels (integers only when
    every value is a plain integer, ``int_ids``) and the score is parsed as pandas.to_numeric parses it, so
    ``True`` or ``1_000`` is non-numeric; ``;``-separated files read decimal commas (``4,5``). A JSONL column
    of mixed types (DuckDB's JSON) is read as its values' text, ``"x"`` as ``x``, as pandas holds them. Each
    value is cleaned once (inner query) and parsed once (middle query), which keeps text sources fast.
    """
    def col(name: str) -> str:
        if text:
            return _text_col(name)
        return f"({_q(name)} ->> '$')" if name in json_cols else _q(name)

    def ident(c: str) -> str:
        return f"CAST({col(canon[c])} AS BIGINT)" if c in int_ids else col(canon[c])

    sel = [f"CAST({col(canon['model'])} AS VARCHAR) AS model",
           f"{ident('scenario')} AS scenario",
           f"{ident('generation')} AS generation" if has_gen else "0 AS generation",
           f"CAST({col(canon['judge'])} AS VARCHAR) AS judge"]
    if has_criterion:
        sel.append(f"CAST({col(canon['criterion'])} AS VARCHAR) AS criterion")
    raw = col(canon["score"])
    if text and decimal_comma:  # read_scores strips the scores of a ';' file and reads 4,5 as 4.5
        sel.append(f"trim({raw}) AS score_raw")
        num = ("CASE WHEN regexp_full_match(score_raw, '-?\\d+,\\d+') THEN replace(score_raw, ',', '.') "
               "ELSE score_raw END")
    else:
        sel.append(f"{raw} AS score_raw")
        num = "score_raw"
    if score_type == "numeric":
        cast, y = f"CAST({num} AS DOUBLE)", "cj_t"
    elif score_type == "string":
        cast, y = f"TRY_CAST({num} AS DOUBLE)", "cj_t"
        if text:  # pandas.to_numeric, which read_scores uses, refuses what DuckDB also reads as a number:
            # 1_000, +-1, every spelling of NaN (nan is missing only as a CSV NA string), and 'inf ' with a space
            y = ("CASE WHEN contains(cj_num, '_') OR contains(cj_num, '+-') OR isnan(cj_t) OR "
                 "(isinf(cj_t) AND cj_num <> trim(cj_num)) THEN NULL ELSE cj_t END")
    else:
        cast, y = "CAST(NULL AS DOUBLE)", "cj_t"
    inner = ", ".join(sel)

    def rows(reader: str, positions: bool = False) -> str:
        pos = ", cj_file, cj_row" if positions else ""
        return (f"(SELECT * EXCLUDE (cj_num, cj_t), {y} AS y FROM "
                f"(SELECT *, {cast} AS cj_t FROM (SELECT *, {num} AS cj_num FROM "
                f"(SELECT {inner}{pos} FROM {reader}))))")

    return rows


def _where(con: Any, src: S.Source, file: Any, row: Any) -> str:
    """``row 3``, ``line 5`` or ``line 5 of `b.csv```: how read_scores names the 0-based row ``row`` of ``file``."""
    unit, number = _position(con, src, file, row)
    return S.row_ref(src, file, number, unit)


def _position(con: Any, src: S.Source, file: Any, row: Any) -> tuple[str, Any]:
    if src.kind == "frame":
        return "row", row

    def n_rows() -> int:
        return con.execute(f"SELECT count(*) FROM {_reader(S.Source(kind=src.kind, files=(file,), sep=src.sep))}"
                           ).fetchall()[0][0]

    return S.position(src, file, int(row), n_rows)


def _first_offending(con: Any, src: S.Source, pos_rows: str, cond: str, extra: str) -> tuple[Any, ...]:
    """(file, row label, extra...) of the first row meeting ``cond``, in file then row order."""
    if src.kind == "frame":
        con.register("cj_frame_pos", src.frame.assign(cj_row=np.arange(len(src.frame), dtype=np.int64)))
    try:
        with _in_file_order(con):
            hit = con.execute(f"SELECT cj_file, cj_row{extra} FROM {pos_rows} "
                              f"WHERE {cond} ORDER BY cj_file, cj_row LIMIT 1").fetchall()[0]
    finally:
        if src.kind == "frame":
            con.unregister("cj_frame_pos")
    file, row = hit[0], int(hit[1])
    if src.kind == "frame":  # read_scores names a DataFrame row by its index label
        row = src.frame.index[row]
    return (file, row, *hit[2:])


def _aggregate(con: Any, rows_sql: str, has_criterion: bool, k_max: int, n_words: int, *,
               keep_cells: bool = False) -> pd.DataFrame:
    """One scan: rows -> cells -> temp table ``cj_scen`` by (unit, scenario, size, mask); returns its class sums.

    With ``keep_cells`` the cells are first written to the temp table ``cj_cells`` (with their judge masks also
    bit-reversed, ``r0..``, the key of their canonical order in a scenario) and ``cj_scen`` is summed from it;
    :func:`_with_scenario_judge` reads it.
    """
    on = "x.model = j.model AND x.judge = j.judge" + (" AND x.criterion = j.criterion" if has_criterion else "")
    words = [f"bit_or(CASE WHEN jcode // {_WORD} = {w} THEN CAST(1 AS BIGINT) << (jcode % {_WORD}) ELSE 0 END) AS w{w}"
             for w in range(n_words)]
    if keep_cells:  # judge l at bit 61 - l: ordering by r0 DESC, r1 DESC, ... orders the 0/1 rows D_c
        # lexicographically (judge 0 first), largest first, as the numpy engine orders a scenario's cells
        words += [f"bit_or(CASE WHEN jcode // {_WORD} = {w} THEN CAST(1 AS BIGINT) << ({_WORD - 1} - jcode % {_WORD}) "
                  f"ELSE 0 END) AS r{w}" for w in range(n_words)]
    jsums = [f"sum(y0) FILTER (WHERE jcode = {l}) AS j{l}" for l in range(k_max)]
    jsum2 = [f"COALESCE(sum(j{l}), 0) AS j{l}" for l in range(k_max)]
    wcols = ", ".join(f"w{w}" for w in range(n_words))
    cells = (f"SELECT unit_id, scenario, generation, count(*) AS n, {', '.join(words)}, sum(y0) AS ys, "
             f"sum(y0 * y0) AS yy, {', '.join(jsums)} FROM r GROUP BY unit_id, scenario, generation")
    rows = (f"r AS (SELECT j.unit_id, x.scenario, x.generation, j.jcode, x.y - j.shift AS y0 "
            f"      FROM {rows_sql} x JOIN cj_judges j ON {on})")
    scen = (f"SELECT unit_id, scenario, n, {wcols}, count(*) AS cells, sum(ys) AS ys, min(generation) AS gen_min, "
            f"sum(ys * ys) AS yyc, sum(yy) AS yy, sum(yy - ys * ys / n) AS ssw, {', '.join(jsum2)} "
            f"FROM {{c}} GROUP BY unit_id, scenario, n, {wcols}")
    if keep_cells:
        con.execute(f"CREATE OR REPLACE TEMP TABLE cj_cells AS WITH {rows} {cells}")
        con.execute(f"CREATE OR REPLACE TEMP TABLE cj_scen AS {scen.format(c='cj_cells')}")
    else:  # one streaming query: DuckDB keeps O(scenarios) rows
        con.execute(f"CREATE OR REPLACE TEMP TABLE cj_scen AS WITH {rows}, c AS ({cells}) {scen.format(c='c')}")
    return con.execute(
        f"SELECT unit_id, n, {wcols}, sum(cells) AS cells, sum(ys) AS ys, sum(yyc) AS yyc, sum(yy) AS yy, "
        f"sum(ssw) AS ssw, {', '.join(f'sum(j{l}) AS j{l}' for l in range(k_max))} "
        f"FROM cj_scen GROUP BY unit_id, n, {wcols} ORDER BY unit_id, n, {wcols}").df()


def _with_scenario_judge(con: Any, units: list[Any], n_words: int) -> list[Any]:
    r"""``units`` with their scenario x judge statistics (``CellStats.sj``), where the term is identifiable.

    Everything :func:`cjstats.stats.scenario_judge.build_sj_stats` computes from rows is a GROUP BY of the cells in
    ``cj_cells``: per scenario i (``GROUP BY unit, scenario``) the vector z_i = (scenario sum of y0, the cell sums
    Y_c in canonical order, the K scenario x judge sums of y0) and its pattern, its cells' judge masks in that order
    (one column per place, NULL past the scenario's last cell). The canonical order is the numpy engine's: cells by their judge calls D_c (0/1 rows compared
    lexicographically, largest first), ties by generation; ``row_number()`` over it gives each cell its place. Then ``GROUP BY unit, pattern`` gives each pattern's
    scenario count n_p, sum_i z_i and the upper triangle of sum_i z_i z_i'. Only the patterns (a handful for
    designed data, at most one per scenario) reach Python, where the masks become the pattern's judge calls.
    Units whose largest calls of one judge on one scenario is below 2 (the term is not identifiable) keep
    ``sj=None``, as in the numpy engine.
    """
    import dataclasses

    from cjstats.stats.scenario_judge import ScenarioJudgeStats

    need = [u for u, cs in enumerate(units) if cs.max_pair_calls >= 2]
    if not need:
        return units
    m = max(int(units[u].cnt_is.sum(axis=1).max()) for u in need)
    k = max(units[u].k for u in need)
    q = 1 + m + k
    order = ", ".join([f"r{w} DESC" for w in range(n_words)] + ["generation"])
    pos = [f"max(w{w}) FILTER (WHERE pos = {c}) AS c{c}_w{w}" for c in range(1, m + 1) for w in range(n_words)]
    pat = ", ".join(f"c{c}_w{w}" for c in range(1, m + 1) for w in range(n_words))
    zcols = (["sum(ys) AS z0"] + [f"COALESCE(sum(ys) FILTER (WHERE pos = {c}), 0) AS z{c}" for c in range(1, m + 1)]
             + [f"COALESCE(sum(j{l}), 0) AS z{1 + m + l}" for l in range(k)])
    sums = [f"sum(z{a}) AS s{a}" for a in range(q)]
    prods = [f"sum(z{a} * z{b}) AS p{a}_{b}" for a in range(q) for b in range(a, q)]
    tbl = con.execute(
        f"WITH o AS (SELECT *, row_number() OVER (PARTITION BY unit_id, scenario ORDER BY {order}) AS pos "
        f"           FROM cj_cells WHERE unit_id IN ({', '.join(str(u) for u in need)})), "
        f"z AS (SELECT unit_id, {', '.join(pos + zcols)} FROM o GROUP BY unit_id, scenario) "
        f"SELECT unit_id, {pat}, count(*) AS cnt, {', '.join(sums + prods)} FROM z GROUP BY unit_id, {pat}"
    ).fetchnumpy()
    unit_id = np.asarray(tbl["unit_id"], dtype=np.int64)
    cnt = np.asarray(tbl["cnt"], dtype=np.float64)
    zsum_all = np.stack([np.asarray(tbl[f"s{a}"], dtype=np.float64) for a in range(q)], axis=1)
    zscat_all = np.empty((len(cnt), q, q))
    for a in range(q):
        for b in range(a, q):
            zscat_all[:, a, b] = zscat_all[:, b, a] = np.asarray(tbl[f"p{a}_{b}"], dtype=np.float64)
    out = list(units)
    for u in need:
        cs = units[u]
        rows = np.flatnonzero(unit_id == u)
        mu, ku = int(cs.cnt_is.sum(axis=1).max()), cs.k
        incidence = np.zeros((len(rows), mu, ku))
        for c in range(mu):   # the masks of each pattern's cells (NULL: a padded cell, no calls)
            for w in range(n_words):
                col = np.ma.filled(np.ma.asarray(tbl[f"c{c + 1}_w{w}"])[rows].astype(np.int64), 0)
                for j in range(w * _WORD, min(ku, (w + 1) * _WORD)):
                    incidence[:, c, j] = (col >> (j % _WORD)) & 1
        idx = np.r_[np.arange(1 + mu), 1 + m + np.arange(ku)]   # this unit's cells and judges of the columns
        sj = ScenarioJudgeStats(incidence=incidence, count=cnt[rows], zsum=zsum_all[np.ix_(rows, idx)],
                                zscat=zscat_all[np.ix_(rows, idx, idx)], shift=np.asarray(cs.shift, dtype=np.float64))
        out[u] = dataclasses.replace(cs, sj=sj)
    return out


def _with_patterns(con: Any, rows_sql: str, judges_tbl: pd.DataFrame, units: list[Any], has_criterion: bool,
                   k_max: int) -> list[Any]:
    r"""``units`` with their per-pattern counts (``CellStats.patterns``, :mod:`cjstats.stats.ordinal`) where every
    scenario has one generation.

    One scan: ``GROUP BY (unit, scenario)`` gives each scenario's pattern, the score of each judge l
    (``max(y) FILTER (WHERE jcode = l)``, NULL where l did not score it: one call at most with m = 1), and
    ``GROUP BY (unit, pattern)`` its number of scenarios and first scenario (``min(scenario)``, the scenarios
    sorted as the labels are). Only the patterns reach Python, where the scores become category codes.
    """
    import dataclasses

    from cjstats.stats.ordinal import patterns_from_scores

    need = [u for u, cs in enumerate(units) if int(cs.design.generations_max) == 1]
    if not need:
        return units
    on = "x.model = j.model AND x.judge = j.judge" + (" AND x.criterion = j.criterion" if has_criterion else "")
    vals = ", ".join(f"max(x.y) FILTER (WHERE j.jcode = {l}) AS v{l}" for l in range(k_max))
    vcols = ", ".join(f"v{l}" for l in range(k_max))
    con.register("cj_judges", judges_tbl)
    try:
        tbl = con.execute(
            f"WITH s AS (SELECT j.unit_id, x.scenario, {vals} FROM {rows_sql} x JOIN cj_judges j ON {on} "
            f"           WHERE j.unit_id IN ({', '.join(str(u) for u in need)}) GROUP BY j.unit_id, x.scenario) "
            f"SELECT unit_id, {vcols}, count(*) AS cnt, min(scenario) AS first FROM s GROUP BY unit_id, {vcols}"
        ).df()
    finally:
        con.unregister("cj_judges")
    unit_id = tbl["unit_id"].to_numpy(dtype=np.int64)
    out = list(units)
    for u in need:
        cs = units[u]
        rows = np.flatnonzero(unit_id == u)
        scores = tbl[[f"v{l}" for l in range(cs.k)]].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
        pos = {lab: i for i, lab in enumerate(cs.scenario_labels.tolist())}
        first = np.array([pos[lab] for lab in tbl["first"].to_numpy()[rows].tolist()], dtype=np.int64)
        out[u] = dataclasses.replace(cs, patterns=patterns_from_scores(
            scores, tbl["cnt"].to_numpy(dtype=np.int64)[rows], first))
    return out


def _popcount(tbl: pd.DataFrame, n_words: int) -> np.ndarray:
    total = np.zeros(len(tbl), dtype=np.int64)
    for w in range(n_words):
        v = tbl[f"w{w}"].to_numpy(dtype=np.int64)
        total += np.unpackbits(np.ascontiguousarray(v).view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1).astype(np.int64)
    return total


def _mask_bits(tbl: pd.DataFrame, n_words: int, k: int) -> np.ndarray:
    """(rows, K) 0/1 judge-count vectors D from the mask words."""
    out = np.empty((len(tbl), k))
    words = [tbl[f"w{w}"].to_numpy(dtype=np.int64) for w in range(n_words)]
    for j in range(k):
        out[:, j] = (words[j // _WORD] >> (j % _WORD)) & 1
    return out


def _raise_duplicates(con: Any, src: S.Source, pos_rows: str, has_criterion: bool) -> None:
    """The read_scores duplicate sentence: count of duplicated cells, first one and its first two rows."""
    keys = ["model"] + (["criterion"] if has_criterion else []) + ["scenario", "generation", "judge"]
    kl = ", ".join(keys)
    if src.kind == "frame":
        con.register("cj_frame_pos", src.frame.assign(cj_row=np.arange(len(src.frame), dtype=np.int64)))
    try:
        with _in_file_order(con):
            n_cells, files, rows = con.execute(
                f"WITH p AS (SELECT * FROM {pos_rows}), "
                f"d AS (SELECT {kl}, count(*) OVER () AS n_cells, list(cj_file ORDER BY cj_file, cj_row) AS fs, "
                f"      list(cj_row ORDER BY cj_file, cj_row) AS rs FROM p GROUP BY {kl} HAVING count(*) > 1) "
                f"SELECT n_cells, fs[1:2], rs[1:2] FROM d ORDER BY fs[1], rs[1] LIMIT 1"
            ).fetchall()[0]
            raw = con.execute(
                f"WITH p AS (SELECT * FROM {pos_rows}) "
                f"SELECT {kl} FROM p WHERE cj_file = {_lit(files[0])} AND cj_row = {int(rows[0])}").fetchall()[0]
    finally:
        if src.kind == "frame":
            con.unregister("cj_frame_pos")
    key = dict(zip(keys, raw))
    (u0, r0), (u1, r1) = (_position(con, src, f, r) for f, r in zip(files, rows))
    if src.kind == "frame":  # read_scores names a DataFrame row by its index label
        r0, r1 = src.frame.index[r0], src.frame.index[r1]
    if src.several and files[0] != files[1]:
        where = f"{u0} {r0} of `{files[0]}` and {u1} {r1} of `{files[1]}`"
    elif src.several:
        where = f"{u0}s {r0} and {r1} of `{files[0]}`"
    else:
        where = f"{u0}s {r0} and {r1}"
    raise CjstatsError(R.msg_duplicates(int(n_cells), key, where))


def _unit_stats(judges: pd.DataFrame, scen: pd.DataFrame, cls: pd.DataFrame, n_words: int,
                has_criterion: bool) -> Any:
    """One unit's :class:`CellStats` from its judge table, scenario-level and class-level aggregates."""
    from cjstats.io.scores import GroupDesign
    from cjstats.stats.cellstats import CellStats

    k = len(judges)
    labels = tuple(str(x) for x in judges["judge"])
    model = str(judges["model"].iloc[0])
    criterion = str(judges["criterion"].iloc[0]) if has_criterion else None
    sizes_i = np.unique(cls["n"].to_numpy(dtype=np.int64))
    n_s = len(sizes_i)
    sizes = sizes_i.astype(np.float64)
    # class level
    s_idx = np.searchsorted(sizes_i, cls["n"].to_numpy(dtype=np.int64))
    d = _mask_bits(cls, n_words, k)
    cells = cls["cells"].to_numpy(dtype=np.float64)
    ysum = cls["ys"].to_numpy(dtype=np.float64)
    dd = np.zeros((n_s, k, k))
    np.add.at(dd, s_idx, cells[:, None, None] * d[:, :, None] * d[:, None, :])
    dy = np.zeros((n_s, k))
    np.add.at(dy, s_idx, d * ysum[:, None])
    judge_n_s = np.zeros((n_s, k))
    np.add.at(judge_n_s, s_idx, d * cells[:, None])
    jsum = np.nan_to_num(cls[[f"j{l}" for l in range(k)]].to_numpy(dtype=np.float64))
    judge_sum_s = np.zeros((n_s, k))
    np.add.at(judge_sum_s, s_idx, jsum)

    def per_class(col: str) -> np.ndarray:
        return np.bincount(s_idx, weights=cls[col].to_numpy(dtype=np.float64), minlength=n_s)

    yyc, yy_s, ssw_s = per_class("yyc"), per_class("yy"), per_class("ssw")
    size_cells = np.bincount(s_idx, weights=cells, minlength=n_s)
    # scenario level
    raw = scen["scenario"].to_numpy()  # sorted by scenario; native dtype (no Python object per row)
    new = np.r_[True, raw[1:] != raw[:-1]]
    si = np.cumsum(new) - 1
    n_scen = int(si.max()) + 1
    ss_idx = np.searchsorted(sizes_i, scen["n"].to_numpy(dtype=np.int64))
    key = si * n_s + ss_idx
    scells = scen["cells"].to_numpy(dtype=np.float64)
    words = [scen[f"w{w}"].to_numpy(dtype=np.int64) for w in range(n_words)]
    s_isk = np.zeros((n_scen * n_s, k))
    for j in range(k):  # one judge column at a time: no (rows, K) temporary
        s_isk[:, j] = np.bincount(key, weights=((words[j // _WORD] >> (j % _WORD)) & 1) * scells,
                                  minlength=n_scen * n_s)
    cnt_is = np.bincount(key, weights=scells, minlength=n_scen * n_s).reshape(n_scen, n_s)
    ys = np.bincount(key, weights=scen["ys"].to_numpy(dtype=np.float64), minlength=n_scen * n_s).reshape(n_scen, n_s)
    scen_labels = np.empty(n_scen, dtype=object)
    scen_labels[:] = raw[new].tolist()
    gen_min = scen["gen_min"].to_numpy()  # native dtype; the two labels used become Python values below
    # design
    judge_n = judges["n"].to_numpy(dtype=np.float64)
    n_obs = int(judge_n.sum())
    n_cells = int(size_cells.sum())
    m_per = cnt_is.sum(axis=1).astype(np.int64)
    complete = bool(np.all(sizes_i == k))
    design = GroupDesign.from_counts(model=model, criterion=criterion, n_rows=n_obs, n_scenarios=n_scen,
                                     m_per=m_per, judges=labels, n_cells=n_cells, complete=complete)
    first_rows = np.flatnonzero(si == 0)
    first_cell = (scen_labels[0], min(gen_min[first_rows].tolist()))  # tolist(): Python values
    first_missing = None
    if not complete:
        bad = np.flatnonzero(scen["n"].to_numpy(dtype=np.int64) < k)
        i0 = int(si[bad].min())
        cand = bad[si[bad] == i0]
        gens = gen_min[cand].tolist()
        r = int(cand[gens.index(min(gens))])
        absent = tuple(labels[j] for j in range(k) if not (int(words[j // _WORD][r]) >> (j % _WORD)) & 1)
        first_missing = (scen_labels[i0], gens[gens.index(min(gens))], absent)
    return CellStats(
        model=model, criterion=criterion, scenario_labels=scen_labels, judge_labels=labels, design=design,
        shift=judges["shift"].to_numpy(dtype=np.float64), n_obs=n_obs, n_cells=n_cells, sizes=sizes,
        size_cells=size_cells, dd=dd, dy=dy, yyc=yyc, judge_n_s=judge_n_s, judge_sum_s=judge_sum_s, yy_s=yy_s,
        ssw_s=ssw_s, s_isk=s_isk.reshape(n_scen, n_s, k), cnt_is=cnt_is, ys=ys, judge_n=judge_n,
        judge_sum=judge_sum_s.sum(axis=0), yy=float(yy_s.sum()), y_min=float(judges["lo"].min()),
        y_max=float(judges["hi"].max()), first_cell=first_cell, first_missing=first_missing,
    )


# ------------------------------------------------------------------------------------------ the pattern form
def _aggregate_patterns(con: Any, rows_sql: str, has_criterion: bool, k_max: int, gens: list[Any] | None,
                        sj: bool, grid: tuple[int, int] | None = None) -> dict[str, np.ndarray]:
    r"""One streaming query, one hash table of scenarios: rows -> scenarios -> design patterns.

    A row's place is its generation label's position c among the table's G distinct labels ``gens`` (sorted; None:
    no generation column, G = 1), so that a cell is a (scenario, place) pair and ``GROUP BY (unit, scenario)``
    gives every cell statistic at once: the judge mask of the scenario (bit c K + l for judge l at place c, in
    62-bit words) and x_cl = the score y0 = y - shift[l] of judge l at place c (NULL: no call).
    Then ``GROUP BY (unit, mask)`` gives per pattern the count, the first scenarios, and the sums and products of
    the scenario's vector v = (Y_c = sum_l x_cl by place[, the K scenario x judge sums sum_c x_cl]), and per place
    sum_l x_cl^2 (for the within-cell sum of squares) and the judge sums x_cl. Only the patterns reach Python
    (:func:`_pattern_unit`); the numpy engine's canonical order of a scenario's cells is restored there
    (:func:`_canonical_patterns`).

    With ``grid = (lo, b)`` (every score an integer in lo .. lo + 2^b - 2, :func:`_integer_grid`) the scenario's
    hash-table row is narrower: instead of the mask and one sum per (place, judge) it keeps the scores themselves,
    v = y - lo + 1 in a b-bit field per (place, judge) (0: no call), packed into 63-bit words by ``bit_or``; the
    mask and x_cl = y - shift[l] are unpacked from it per scenario, the same doubles as from the rows (y is
    v + lo - 1 exactly). A duplicate judge call ORs two scores into one field, and is found as without packing
    (more rows than judge calls in the patterns).
    """
    on = "x.model = j.model AND x.judge = j.judge" + (" AND x.criterion = j.criterion" if has_criterion else "")
    g = 1 if gens is None else len(gens)
    km = k_max
    pos = "0" if g == 1 else ("CASE generation " + " ".join(
        f"WHEN {v!r} THEN {c}" if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else
        f"WHEN {_lit(v)} THEN {c}" for c, v in enumerate(gens)) + " END")
    n_words = (g * km + _WORD - 1) // _WORD
    bit = f"(pos * {km} + jcode)"
    words = [f"bit_or(CASE WHEN {bit} // {_WORD} = {w} THEN CAST(1 AS BIGINT) << ({bit} % {_WORD}) ELSE 0 END) AS w{w}"
             for w in range(n_words)]
    wcols = ", ".join(f"w{w}" for w in range(n_words))
    if grid is None:
        xs = [f"COALESCE(sum(y0) FILTER (WHERE {bit} = {c * km + l}), 0) AS x{c}_{l}"
              for c in range(g) for l in range(km)]
        rows = (f"r AS (SELECT j.unit_id, x.scenario, {pos} AS pos, j.jcode, x.y - j.shift AS y0 "
                f"      FROM {rows_sql} x JOIN cj_judges j ON {on})")
        scen = (f"z AS (SELECT unit_id, scenario, {', '.join(words)}, {', '.join(xs)} FROM r "
                f"GROUP BY unit_id, scenario)")
    else:
        lo, b = grid
        per = 63 // b            # fields per word: field q = c K + l in word q // per, from bit b (q % per)
        n_pack = (g * km + per - 1) // per
        packed = [f"bit_or({'v' if n_pack == 1 else f'CASE WHEN {bit} // {per} = {w} THEN v ELSE 0 END'} << "
                  f"({b} * ({bit} % {per}))) AS k{w}" for w in range(n_pack)]
        rows = (f"r AS (SELECT j.unit_id, x.scenario, {pos} AS pos, j.jcode, CAST(x.y AS BIGINT) - {lo - 1} AS v "
                f"      FROM {rows_sql} x JOIN cj_judges j ON {on})")

        def v(q: int) -> str:
            return f"((k{q // per} >> {b * (q % per)}) & {2 ** b - 1})"

        ws = ["CAST(" + " + ".join(f"CASE WHEN {v(q)} > 0 THEN CAST(1 AS BIGINT) << {q % _WORD} ELSE 0 END"
                                   for q in range(w * _WORD, min((w + 1) * _WORD, g * km))) + f" AS BIGINT) AS w{w}"
              for w in range(n_words)]
        xs = [f"CASE WHEN {v(c * km + l)} > 0 THEN CAST({v(c * km + l)} + {lo - 1} AS DOUBLE) - s.sh{l} ELSE 0 END "
              f"AS x{c}_{l}" for c in range(g) for l in range(km)]
        scen = (f"z0 AS (SELECT unit_id, scenario, {', '.join(packed)} FROM r GROUP BY unit_id, scenario), "
                f"z AS (SELECT z0.unit_id, scenario, {', '.join(ws)}, {', '.join(xs)} "
                f"FROM z0 JOIN cj_shifts s ON z0.unit_id = s.unit_id)")
    vec = ["(" + " + ".join(f"x{c}_{l}" for l in range(km)) + ")" for c in range(g)]
    if sj:
        vec += ["(" + " + ".join(f"x{c}_{l}" for c in range(g)) + ")" for l in range(km)]
    q = len(vec)
    pat = (["count(*) AS cnt", "min(scenario) AS first", "min(scenario, 5) AS firsts"]
           + [f"sum({vec[a]}) AS s{a}" for a in range(q)]
           + [f"sum({vec[a]} * {vec[b]}) AS p{a}_{b}" for a in range(q) for b in range(a, q)]
           + ["sum(" + " + ".join(f"x{c}_{l} * x{c}_{l}" for l in range(km)) + f") AS sq{c}" for c in range(g)]
           + [f"sum(x{c}_{l}) AS x{c}_{l}" for c in range(g) for l in range(km)])
    return con.execute(
        f"WITH {rows}, {scen} SELECT unit_id, {wcols}, {', '.join(pat)} FROM z GROUP BY unit_id, {wcols} "
        f"ORDER BY unit_id, {wcols}").fetchnumpy()


def _integer_grid(p1: pd.DataFrame) -> tuple[int, int] | None:
    """(lo, b) when every score is an integer and the scores y - lo + 1 (1 .. hi - lo + 1) fit in b <= 31 bits,
    for :func:`_aggregate_patterns` to pack; None otherwise (``frac``: pass 1's largest |y - round(y)|)."""
    if not bool((p1["frac"] == 0).all()):
        return None
    lo, hi = float(p1["lo"].min()), float(p1["hi"].max())
    if max(abs(lo), abs(hi)) >= 2.0 ** 52:
        return None
    b = (int(hi) - int(lo) + 1).bit_length()
    return (int(lo), b) if b <= 31 else None


def _col(tbl: Mapping[str, Any], name: str, rows: np.ndarray) -> np.ndarray:
    """Column ``name`` of a fetched table at ``rows`` as float64 (masked values: NaN)."""
    return np.ma.filled(np.ma.asarray(tbl[name])[rows].astype(np.float64), np.nan)


def _canonical_patterns(size: np.ndarray, d: np.ndarray, big_n: np.ndarray, sums: np.ndarray, prods: np.ndarray,
                        per_place: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """The patterns with each scenario's cells in the numpy engine's canonical order, merged where equal.

    A SQL pattern lists its cells by generation label (``size`` (P, G), NaN where absent; judge calls ``d``
    (P, G, K)). The canonical order is by judge calls, compared lexicographically (judge 0 first), largest first,
    ties by generation: a stable sort of the places by D descending, absent places last, then cut to the most cells
    of a scenario. ``sums`` (P, Q) and ``prods`` (P, Q, Q) hold the G place entries first (then any others, which
    keep their positions); ``per_place`` arrays (P, G, ...) are permuted alike. Patterns whose canonical sizes and
    calls agree are summed (counts, sums, products, per-place arrays).
    """
    n_p, g, k = d.shape
    present = ~np.isnan(size)
    mu = int(present.sum(axis=1).max())
    perms = np.empty((n_p, g), dtype=np.int64)
    for p in range(n_p):
        keys = [(0 if present[p, c] else 1, tuple(-d[p, c]), c) for c in range(g)]
        perms[p] = [c for *_, c in sorted(keys)]
    rows = np.arange(n_p)[:, None]
    q = sums.shape[1]
    full = np.broadcast_to(np.arange(q), (n_p, q)).copy()
    full[:, :g] = perms
    size_c = np.where(present, size, 0.0)[rows, perms][:, :mu]
    d_c = d[rows, perms][:, :mu]
    sums_c = sums[rows, full]
    prods_c = prods[rows[:, :, None], full[:, :, None], full[:, None, :]]
    keep = np.r_[np.arange(mu), np.arange(g, q)]
    sums_c, prods_c = sums_c[:, keep], prods_c[:, keep][:, :, keep]
    pp = [a[rows, perms][:, :mu] for a in per_place]
    key = np.concatenate((size_c, d_c.reshape(n_p, -1)), axis=1)
    _, first, codes = np.unique(key, axis=0, return_index=True, return_inverse=True)
    codes = codes.ravel()
    n_u = first.shape[0]

    def add(a: np.ndarray) -> np.ndarray:
        out = np.zeros((n_u,) + a.shape[1:])
        np.add.at(out, codes, a)
        return out

    return size_c[first], d_c[first], add(big_n), add(sums_c), add(prods_c), [add(a) for a in pp]


def _pattern_unit(judges: pd.DataFrame, tbl: Mapping[str, Any], rows: np.ndarray, gens: list[Any] | None, sj: bool,
                  has_criterion: bool, k_max: int) -> Any:
    """One unit's pattern-form :class:`CellStats` from its judge table and its rows of :func:`_aggregate_patterns`
    (None when a cell holds a duplicate judge call: the unit has more rows than judge calls in its patterns).

    Per pattern p and place c (size n_pc, judge calls D_pc from the mask, class h(p, c)): cnt_p[h] counts the
    places, S_p[h] = sum D_pc, Y1_p[h] = sum_c sum_i Y_ic, Y2_p[h, h'] = sum over places c in h, c' in h' of
    sum_i Y_ic Y_ic'; the class statistics are the same sums over places weighted by N_p: cells N_p, DD = N_p D D',
    DY = D sum_i Y_ic, YY = sum_i Y_ic^2, judge counts N_p D, judge sums and SSW, and sum y0^2 = SSW + YY/h.
    """
    from cjstats.io.scores import GroupDesign
    from cjstats.stats.cellstats import CellStats
    from cjstats.stats.scenario_judge import ScenarioJudgeStats, scenario_judge_pairs
    from cjstats.stats.views import ScenarioPatternForm

    k = len(judges)
    m = 1 if gens is None else len(gens)
    labels = tuple(str(x) for x in judges["judge"])
    model = str(judges["model"].iloc[0])
    criterion = str(judges["criterion"].iloc[0]) if has_criterion else None
    n_raw = rows.shape[0]
    km = k_max
    d = np.zeros((n_raw, m, k))                            # judge calls by place, from the mask bits c K + l
    words = [np.asarray(tbl[f"w{w}"])[rows].astype(np.int64) for w in range((m * km + _WORD - 1) // _WORD)]
    for c in range(m):
        for j in range(k):
            b = c * km + j
            d[:, c, j] = (words[b // _WORD] >> (b % _WORD)) & 1
    big_n = _col(tbl, "cnt", rows)
    calls = d.sum(axis=2)
    if float(big_n @ calls.sum(axis=1)) != float(judges["n"].sum()):   # fewer (scenario, place, judge) than rows
        return None
    size = np.where(calls > 0, calls, np.nan)
    q = m + (km if sj else 0)
    idx = list(range(m)) + ([m + l for l in range(k)] if sj else [])
    sums = np.stack([_col(tbl, f"s{a}", rows) for a in idx], axis=1)
    prods = np.empty((n_raw, len(idx), len(idx)))
    for i, a in enumerate(idx):
        for j, b in enumerate(idx[i:], start=i):
            prods[:, i, j] = prods[:, j, i] = _col(tbl, f"p{a}_{b}", rows)
    # within-cell sum of squares by place: sum_i (sum_l x_cl^2 - Y_c^2 / n_c)
    ssw_c = np.stack([_col(tbl, f"sq{c}", rows) for c in range(m)], axis=1) - \
        np.einsum("pcc->pc", prods[:, :m, :m]) / np.where(calls > 0, calls, 1.0)
    x_c = np.stack([np.stack([_col(tbl, f"x{c}_{l}", rows) for l in range(k)], axis=1) for c in range(m)],
                   axis=1)                                                               # (P, G, K)
    place_gen = [0] * m if gens is None else list(gens)
    present_raw = calls > 0
    d_raw = d
    size, d, big_n, sums, prods, (ssw_c, x_c) = _canonical_patterns(size, d, _col(tbl, "cnt", rows), sums, prods,
                                                                     [ssw_c, x_c])
    n_pat, mu = size.shape
    present = size > 0
    size_i = size.astype(np.int64)
    sizes_i = np.unique(size_i[present])
    n_s = len(sizes_i)
    sizes = sizes_i.astype(np.float64)
    h_of = np.where(present, np.searchsorted(sizes_i, size_i), n_s)   # class of each place (n_s: no cell)
    onehot = np.zeros((n_pat, mu, n_s + 1))
    np.put_along_axis(onehot, h_of[:, :, None], 1.0, axis=2)
    onehot = onehot[:, :, :n_s]
    s_sum, prod = sums[:, :mu], prods[:, :mu, :mu]
    cnt = onehot.sum(axis=1)                                                             # (P, S)
    s_psk = np.einsum("pch,pck->phk", onehot, d)
    y1 = np.einsum("pch,pc->ph", onehot, s_sum)
    y2 = np.einsum("pch,pcb,pbg->phg", onehot, prod, onehot)
    size_cells = big_n @ cnt
    dd = np.einsum("p,pch,pck,pcl->hkl", big_n, onehot, d, d)
    dy = np.einsum("pch,pck,pc->hk", onehot, d, s_sum)
    yyc = np.einsum("pch,pc->h", onehot, np.einsum("pcc->pc", prod))
    judge_n_s = np.einsum("p,pch,pck->hk", big_n, onehot, d)
    judge_sum_s = np.einsum("pch,pck->hk", onehot, x_c)
    ssw_s = np.einsum("pch,pc->h", onehot, ssw_c)
    yy_s = ssw_s + yyc / sizes
    # labels: the first scenario of each pattern (a few kept for messages) and the first incomplete cell
    def py(v: Any) -> Any:
        return v.item() if hasattr(v, "item") else v

    firsts = [py(v) for v in np.asarray(tbl["first"])[rows]]
    order = sorted(range(n_raw), key=firsts.__getitem__)
    first_cell = (firsts[order[0]], place_gen[int(np.flatnonzero(present_raw[order[0]])[0])])
    examples = tuple(sorted(py(x) for i in rows for x in tbl["firsts"][i])[:5])
    m_per = cnt.sum(axis=1).astype(np.int64)
    judge_n = judges["n"].to_numpy(dtype=np.float64)
    n_obs = int(judge_n.sum())
    n_cells = int(size_cells.sum())
    complete = bool(np.all(sizes_i == k))
    first_missing = None
    if not complete:   # the first scenario with an incomplete cell: its first such place (generation order)
        short = present_raw & (calls < k)
        i0 = min((i for i in range(n_raw) if short[i].any()), key=firsts.__getitem__)
        c0 = int(np.flatnonzero(short[i0])[0])
        absent = tuple(labels[j] for j in range(k) if not d_raw[i0, c0, j])
        first_missing = (firsts[i0], place_gen[c0], absent)
    n_scen = int(big_n.sum())
    design = GroupDesign.from_counts(model=model, criterion=criterion, n_rows=n_obs, n_scenarios=n_scen,
                                     m_per=m_per, judges=labels, n_cells=n_cells, complete=complete)
    pf = ScenarioPatternForm(n=big_n, cnt=cnt, s=s_psk, y1=y1, y2=y2, n_scenarios=n_scen, examples=examples)
    sj_stats = None
    if sj and scenario_judge_pairs(s_psk) >= 2:
        # z_i = (scenario sum, cell sums by place, scenario x judge sums); the scenario sum is the places' sum
        lin = np.zeros((mu + k, 1 + mu + k))          # z = lin' (places, judge sums)
        lin[:mu, 0] = 1.0
        lin[:, 1:] = np.eye(mu + k)
        sj_stats = ScenarioJudgeStats(incidence=np.ascontiguousarray(d), count=big_n, zsum=sums @ lin,
                                      zscat=np.einsum("ai,pab,bj->pij", lin, prods, lin),
                                      shift=judges["shift"].to_numpy(dtype=np.float64))
    return CellStats(
        model=model, criterion=criterion, scenario_labels=None, judge_labels=labels, design=design,
        shift=judges["shift"].to_numpy(dtype=np.float64), n_obs=n_obs, n_cells=n_cells, sizes=sizes,
        size_cells=size_cells, dd=dd, dy=dy, yyc=yyc, judge_n_s=judge_n_s, judge_sum_s=judge_sum_s, yy_s=yy_s,
        ssw_s=ssw_s, s_isk=None, cnt_is=None, ys=None, judge_n=judge_n, judge_sum=judge_sum_s.sum(axis=0),
        yy=float(yy_s.sum()), y_min=float(judges["lo"].min()), y_max=float(judges["hi"].max()),
        first_cell=first_cell, first_missing=first_missing, sj=sj_stats, pat=pf,
    )


def _build_patterns(con: Any, src: S.Source, rows_sql: str, pos_rows: str, p1: pd.DataFrame, judges_tbl: pd.DataFrame,
                    gkeys: list[str], gens: list[Any] | None, has_gen: bool, has_criterion: bool, k_max: int, *,
                    sj: bool) -> Any:
    """The pattern-form units (:func:`_aggregate_patterns`, :func:`_pattern_unit`), their design table and
    ``has_criterion``; None when the table has more than ``_MAX_PLACES`` generation labels (a place per label:
    the per-scenario route is then the one to take). ``gens`` are the table's generation labels
    (:func:`_generations`; the place of a cell in its scenario is its label's), None without the column."""
    if not has_gen:
        gens = None
    elif len(gens) > _MAX_PLACES:
        return None
    grid = _integer_grid(p1)
    con.register("cj_judges", judges_tbl)
    if grid is not None:   # each unit's centring constants, one column per judge code
        wide = judges_tbl.pivot(index="unit_id", columns="jcode", values="shift").reindex(columns=range(k_max))
        con.register("cj_shifts", wide.fillna(0.0).set_axis([f"sh{l}" for l in range(k_max)], axis=1).reset_index())
    try:
        tbl = _aggregate_patterns(con, rows_sql, has_criterion, k_max, gens, sj, grid)
    finally:
        con.unregister("cj_judges")
        if grid is not None:
            con.unregister("cj_shifts")
    unit_id = np.asarray(tbl["unit_id"], dtype=np.int64)
    units, designs = [], []
    for u in range(len(gkeys)):
        cs = _pattern_unit(p1[p1["unit_id"] == u], tbl, np.flatnonzero(unit_id == u), gens, sj, has_criterion,
                           k_max)
        if cs is None:  # a cell with more rows than judges in its mask: a duplicate judge call
            _raise_duplicates(con, src, pos_rows, has_criterion)
        units.append(cs)
        designs.append(cs.design.as_dict())
    design = pd.DataFrame(designs)
    design["generations"] = design["generations"].astype("Int64")
    if not has_criterion:
        design = design.drop(columns="criterion")
    return tuple(units), design, has_criterion
