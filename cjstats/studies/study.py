r"""The estimator-comparison workbench: :func:`simulation_study`.

Every replicate draws one data set per design (:func:`cjstats.studies.data.simulate_replicate`) and fits every
method to that same data set, so differences between methods are paired. Each replicate has its own seed,
``SeedSequence(seed, spawn_key=(design, replicate))``, so the numbers do not depend on how replicates are
split across workers (``jobs``), nor on whether the study was interrupted and resumed from its checkpoint.

Performance measures (Morris, White & Crowther 2019, "Using simulation studies to evaluate statistical
methods", Stat. Med. 38:2074, Table 6), over the n_sim replicates with an estimate theta_r and truth t_r:

    bias      = mean(d_r),  d_r = theta_r - t_r        MCSE = sd(d_r) / sqrt(n_sim)
    MSE       = mean(d_r^2)                           MCSE = sqrt(sum((d_r^2 - MSE)^2) / (n_sim (n_sim - 1)))
    rmse      = sqrt(MSE)                             MCSE = MCSE(MSE) / (2 rmse)   (delta method)
    coverage  = mean(lower_r <= t_r <= upper_r)       MCSE = sqrt(coverage (1 - coverage) / n_sim)

(sd with divisor n_sim - 1). The truth may differ between replicates (judges redrawn per replicate), hence
theta_r - t_r rather than theta_r - mean(t). Replicates whose fit failed, or whose component is not
identifiable or not fitted (NaN estimate: ``generation`` at m = 1, ``scenario_judge`` with m = 1 or with
``scenario_judge=False``, the paper's model), are left out of these measures; ``failure_rate`` counts the failed
fits. The truth is the data's (:func:`cjstats.studies.data.simulate_replicate`), the same for every method:
a fit of the paper's model is compared with the within-cell ``residual`` even when the data have a scenario x
judge interaction, which its residual then holds.

Latent-scale methods (a backend whose options put its components on a latent scale, ``fit.scale == "latent"``:
``"ordinal"``, ``("bayes", {"likelihood": "ordinal"})``) are scored against the latent truth of the ordinal data
(:func:`cjstats.studies.latent.latent_truth`: under the data's probit model scenario = s2_scenario/s2_residual,
generation = s2_generation/s2_residual, judge_panel = mean(gamma^2)/s2_residual, residual = 1; ``mu`` on the
score scale, the expected clipped, rounded score), in the unit the fit reports (its ``residual`` row: 1 is probit;
under another link only ``mu`` has a truth). Such a method is skipped, with a warning and a line in
``settings["skipped"]``, on designs without the ``ordinal`` misspecification (no latent truth) and on designs with
a scenario x judge interaction (not in the ordinal model); the other methods keep the score-scale truth.
"""

from __future__ import annotations

import inspect
import math
import os
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cjstats.results.estimands import COMPONENTS
from cjstats.results.base import Result
from cjstats._validate import check_choice, check_positive_int, resolve_ci_level
from cjstats.exceptions import CjstatsError, CjstatsWarning
from cjstats.io.scores import Scores
from cjstats._warnings import warn
from cjstats.studies.data import Design, Truth, _scenario_judge, _simulate_replicate, fingerprint
from cjstats.studies.latent import latent_truth

__all__ = ["StudyResult", "simulation_study", "summarise_replicates", "REPLICATE_COLUMNS", "SUMMARY_COLUMNS"]

#: Columns of ``StudyResult.replicates`` (``criterion`` follows ``model`` when the truth has criteria).
REPLICATE_COLUMNS: tuple[str, ...] = (
    "design_id", "design", "replicate", "method", "model", "component", "truth", "estimate", "lower", "upper",
    "at_boundary", "seconds", "error",
)
#: Measure columns of ``StudyResult.measures`` (after ``design, method, model, [criterion], component``).
SUMMARY_COLUMNS: tuple[str, ...] = (
    "truth", "mean_estimate", "bias", "bias_mcse", "rmse", "rmse_mcse", "coverage", "coverage_mcse",
    "mean_width", "median_width", "boundary_rate", "failure_rate", "seconds_per_fit", "replicates",
)
_CALLER = "simulation_study"
_META_KEY = b"cjstats_study"


# ------------------------------------------------------------------------------------------------ methods
@dataclass(frozen=True, slots=True)
class _Method:
    name: str
    options: Mapping[str, Any]
    label: str
    scale: str = "score"


def _resolve_methods(methods: Any) -> list[_Method]:
    from cjstats.estimators import BACKENDS, REQUIRES, get_backend, missing_packages

    if isinstance(methods, str) or (isinstance(methods, tuple) and len(methods) == 2
                                    and isinstance(methods[1], Mapping)):
        methods = [methods]
    if not isinstance(methods, Iterable) or isinstance(methods, Mapping):
        raise CjstatsError(f"The 'methods' argument of {_CALLER} must be a list of method names or "
                           f"(name, options) pairs, such as ['anova', ('reml', {{'interval': 'bootstrap'}})]. "
                           f"Got {methods!r} instead.")
    out: list[_Method] = []
    for spec in methods:
        if isinstance(spec, str):
            name, options = spec, {}
        elif isinstance(spec, (tuple, list)) and len(spec) == 2 and isinstance(spec[1], Mapping):
            name, options = spec[0], dict(spec[1])
        else:
            raise CjstatsError(f"Each entry of the 'methods' argument of {_CALLER} must be a name or a (name, "
                               f"options) pair such as ('reml', {{'interval': 'bootstrap'}}). Got {spec!r} instead.")
        check_choice("methods", name, BACKENDS, caller=_CALLER)
        missing = missing_packages(get_backend(name))
        if missing:
            raise CjstatsError(f"The method '{name}' in the 'methods' argument of {_CALLER} requires package(s) "
                               f"{', '.join(missing)}; install them with pip install 'cjstats[{REQUIRES[name][1]}]'.")
        params = inspect.signature(import_module(BACKENDS[name]).fit).parameters
        allowed = [p for p in params if p not in ("scores", "stats", "rows", "ci_level", "seed")]
        for opt in options:
            if opt not in allowed:
                raise CjstatsError(f"The method '{name}' in the 'methods' argument of {_CALLER} has no option "
                                   f"'{opt}' (options: {', '.join(allowed)}).")
        label = name if not options else f"{name}({', '.join(f'{k}={v}' for k, v in options.items())})"
        if any(m.label == label for m in out):
            raise CjstatsError(f"The 'methods' argument of {_CALLER} lists '{label}' twice; give each once.")
        out.append(_Method(name, options, label, get_backend(name).capabilities.scale(options)))
    if not out:
        raise CjstatsError(f"The 'methods' argument of {_CALLER} is empty; name at least one method.")
    return out


def _resolve_designs(designs: Any) -> list[Design]:
    if isinstance(designs, (Design, Mapping)):
        designs = [designs]
    if not isinstance(designs, Iterable):
        raise CjstatsError(f"The 'designs' argument of {_CALLER} must be a Design, a mapping or a list of them. "
                           f"Got {type(designs).__name__} instead.")
    out = [Design.coerce(d, caller=_CALLER) for d in designs]
    if not out:
        raise CjstatsError(f"The 'designs' argument of {_CALLER} is empty; give at least one design.")
    labels = [d.label for d in out]
    dup = next((lab for lab in labels if labels.count(lab) > 1), None)
    if dup is not None:
        raise CjstatsError(f"The 'designs' argument of {_CALLER} has two designs labelled '{dup}'; give them "
                           f"distinct labels (Design(label=...)).")
    return out


# ------------------------------------------------------------------------------------------------ one batch
def _run_batch(truth: Truth, design: Design, design_id: int, reps: Sequence[int], methods: Sequence[_Method],
               ci_level: float, seed: int, limit_threads: bool) -> pd.DataFrame:
    """Simulate and fit the replicates ``reps`` of one design; one row per replicate x method x component."""
    if limit_threads:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            return _run_batch(truth, design, design_id, reps, methods, ci_level, seed, False)
    from cjstats.estimators import estimate

    has_c = truth.criteria is not None
    cols: dict[str, list[Any]] = {c: [] for c in REPLICATE_COLUMNS}
    if has_c:
        cols["criterion"] = []
    for r in reps:
        data_ss, fit_ss = np.random.SeedSequence(seed, spawn_key=(design_id, r)).spawn(2)
        frame, truths, offsets = _simulate_replicate(truth, design, np.random.default_rng(data_ss))
        scores = Scores(frame, provenance={"source": "cjstats.simulate_scores", "design": design.label})
        fit_seed = int(fit_ss.generate_state(1)[0])
        keys = [k for k, _ in truths]
        truth_of = dict(truths)
        for meth in methods:
            t0 = time.perf_counter()
            err, comp, truth_here = "", None, truth_of
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    warnings.simplefilter("ignore", CjstatsWarning)  # cjstats' own are shown under a blanket ignore
                    fit = estimate(scores, meth.name, ci_level=ci_level, seed=fit_seed, **meth.options)
                comp = fit.components
                if getattr(fit, "scale", "score") == "latent":
                    truth_here = _latent_truths(truth, design, truth_of, offsets, comp)
            except Exception as exc:  # a failed fit is a result of the study, never fatal
                err = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            secs = time.perf_counter() - t0
            if comp is None:
                rows = [(k, math.nan, math.nan, math.nan, False) for k in keys]
            else:
                ck = zip(comp["model"], comp["criterion"] if has_c else [None] * len(comp), comp["component"])
                rows = list(zip(ck, comp["estimate"], comp["lower"], comp["upper"], comp["at_boundary"]))
            for (model, crit, component), est, lo, hi, bnd in rows:
                cols["design_id"].append(design_id)
                cols["design"].append(design.label)
                cols["replicate"].append(r)
                cols["method"].append(meth.label)
                cols["model"].append(model)
                if has_c:
                    cols["criterion"].append(crit)
                cols["component"].append(component)
                cols["truth"].append(truth_here.get((model, crit, component), math.nan))
                cols["estimate"].append(est)
                cols["lower"].append(lo)
                cols["upper"].append(hi)
                cols["at_boundary"].append(bool(bnd))
                cols["seconds"].append(secs)
                cols["error"].append(err)
    return _replicate_frame(cols, has_c)


def _latent_truths(truth: Truth, design: Design, truth_of: Mapping[tuple[Any, ...], float],
                   offsets: Mapping[tuple[str, str | None], np.ndarray], comp: pd.DataFrame
                   ) -> dict[tuple[Any, ...], float]:
    """The latent-scale truth of every group (:func:`cjstats.studies.latent.latent_truth`), in the unit the fit
    reports: its ``residual`` row (1: probit, the data's own latent model; else no exact truth of the variances)."""
    out: dict[tuple[Any, ...], float] = {}
    has_c = truth.criteria is not None
    resid = comp[comp["component"] == "residual"]
    for (model, crit), gamma in offsets.items():
        sel = resid["model"] == model
        if has_c:
            sel &= resid["criterion"] == crit
        unit = resid.loc[sel, "estimate"].to_numpy(float)
        link = "probit" if unit.size and abs(unit[0] - 1.0) < 1e-12 else "logit"
        lt = latent_truth(truth.groups[model], gamma, m=design.m, n_points=int(design.misspec["ordinal"]), link=link,
                          judge_population=truth_of.get((model, crit, "judge_population")))
        out.update({(model, crit, c): v for c, v in lt.items()})
    return out


def _skip_reason(method: _Method, truth: Truth, design: Design) -> str | None:
    """Why a latent-scale method is not run on a design (None: it is run)."""
    if method.scale != "latent":
        return None
    if "ordinal" not in design.misspec:
        return (f"method '{method.label}' reports latent-scale components, which have a truth only on ordinal data; "
                f"design '{design.label}' has no 'ordinal' misspecification, so it is skipped there")
    if any(_scenario_judge(c, design) > 0 for c in truth.groups.values()):
        return (f"method '{method.label}' fits no scenario x judge term, so design '{design.label}' (which has one) "
                f"has no latent truth for it and is skipped")
    return None


def _replicate_frame(cols: Mapping[str, list[Any]], has_c: bool) -> pd.DataFrame:
    order = list(REPLICATE_COLUMNS)
    if has_c:
        order.insert(order.index("model") + 1, "criterion")
    df = pd.DataFrame({c: cols[c] for c in order})
    for c in ("truth", "estimate", "lower", "upper", "seconds"):
        df[c] = df[c].astype(np.float64)
    df["design_id"] = df["design_id"].astype(np.int64)
    df["replicate"] = df["replicate"].astype(np.int64)
    df["at_boundary"] = df["at_boundary"].astype(bool)
    return df


# ------------------------------------------------------------------------------------------------ summary
def _cell_measures(truth: np.ndarray, est: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                   boundary: np.ndarray, seconds: np.ndarray, failed: np.ndarray) -> dict[str, float]:
    """The Morris et al. (2019) measures of one design x method x component cell (see the module docstring)."""
    nan = math.nan
    fits = len(est)
    ok = ~failed & np.isfinite(est) & np.isfinite(truth)
    n = int(ok.sum())
    out = {"truth": float(np.mean(truth[ok])) if n else (float(np.nanmean(truth)) if np.isfinite(truth).any() else nan),
           "mean_estimate": nan, "bias": nan, "bias_mcse": nan, "rmse": nan, "rmse_mcse": nan,
           "coverage": nan, "coverage_mcse": nan, "mean_width": nan, "median_width": nan,
           "boundary_rate": float(np.mean(boundary[~failed])) if (~failed).any() else nan,
           "failure_rate": float(np.mean(failed)) if fits else nan,
           "seconds_per_fit": float(np.mean(seconds)) if fits else nan, "replicates": n}
    if n == 0:
        return out
    e, t = est[ok], truth[ok]
    d = e - t
    mse = float(np.mean(d**2))
    out.update(mean_estimate=float(np.mean(e)), bias=float(np.mean(d)), rmse=math.sqrt(mse))
    if n > 1:
        out["bias_mcse"] = float(np.std(d, ddof=1) / math.sqrt(n))
        mse_mcse = math.sqrt(float(np.sum((d**2 - mse) ** 2)) / (n * (n - 1)))
        out["rmse_mcse"] = mse_mcse / (2 * out["rmse"]) if out["rmse"] > 0 else nan
    lo, hi = lower[ok], upper[ok]
    has_ci = np.isfinite(lo) & np.isfinite(hi)
    nc = int(has_ci.sum())
    if nc:
        cov = float(np.mean((lo[has_ci] <= t[has_ci]) & (t[has_ci] <= hi[has_ci])))
        width = hi[has_ci] - lo[has_ci]
        out.update(coverage=cov, coverage_mcse=math.sqrt(cov * (1 - cov) / nc), mean_width=float(np.mean(width)),
                   median_width=float(np.median(width)))
    return out


def summarise_replicates(replicates: pd.DataFrame) -> pd.DataFrame:
    """The summary table of a replicate table: one row per design x method x group x component.

    Parameters
    ----------
    replicates : DataFrame
        As in :attr:`StudyResult.replicates` (columns ``design, method, model, [criterion], component, truth,
        estimate, lower, upper, at_boundary, seconds, error``).

    Returns
    -------
    DataFrame
        ``design, method, model, [criterion], component`` and :data:`SUMMARY_COLUMNS`, the performance measures
        of Morris, White & Crowther (2019) with their Monte Carlo standard errors (module docstring).
    """
    keys = ["design", "method", "model"] + (["criterion"] if "criterion" in replicates.columns else []) + ["component"]
    missing = [c for c in (*keys, "truth", "estimate", "lower", "upper", "at_boundary", "seconds", "error")
               if c not in replicates.columns]
    if missing:
        raise CjstatsError(f"The replicate table has no column '{missing[0]}'; pass StudyResult.replicates.")
    records = []
    for key, g in replicates.groupby(keys, sort=False, dropna=False):
        err = g["error"].fillna("").astype(str).to_numpy()
        m = _cell_measures(g["truth"].to_numpy(float), g["estimate"].to_numpy(float), g["lower"].to_numpy(float),
                           g["upper"].to_numpy(float), g["at_boundary"].to_numpy(bool), g["seconds"].to_numpy(float),
                           err != "")
        records.append({**dict(zip(keys, key)), **m})
    out = pd.DataFrame.from_records(records, columns=[*keys, *SUMMARY_COLUMNS])
    out["replicates"] = out["replicates"].astype(np.int64)
    return out


# ------------------------------------------------------------------------------------------------ result
def _fmt(x: Any, digits: int = 3) -> str:
    if isinstance(x, (float, np.floating)):
        if math.isnan(x):
            return "-"
        return f"{x:.{digits}g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.1e}"
    return str(x)


@dataclass(frozen=True, slots=True)
class StudyResult(Result):
    """What :func:`simulation_study` returns.

    Attributes
    ----------
    measures : DataFrame
        One row per design x method x group x component with the columns :data:`SUMMARY_COLUMNS`
        (Morris, White & Crowther 2019, with Monte Carlo standard errors).
    replicates : DataFrame
        One row per replicate x method x group x component (:data:`REPLICATE_COLUMNS`): the truth, estimate,
        interval, ``at_boundary``, fit time and the error message of a failed fit (empty otherwise).
    settings : Mapping
        Truth, designs, methods, seed, ci_level, replicates, jobs, fingerprint and wall time.

    ``to_frame()`` is a copy of ``measures``; ``summary()`` the printable summary (``as_text``, ``as_markdown``,
    ``as_latex``, ``as_html``).
    """

    measures: pd.DataFrame
    replicates: pd.DataFrame
    settings: Mapping[str, Any] = field(default_factory=dict)

    def _display(self) -> pd.DataFrame:
        s = self.measures
        keys = ["design", "method", "model"] + (["criterion"] if "criterion" in s.columns else []) + ["component"]
        out = s[keys].copy()
        if out["model"].nunique() == 1:
            out = out.drop(columns="model")
        pm = "\u00b1"
        out["truth"] = s["truth"].map(_fmt)
        out["bias (mcse)"] = [f"{_fmt(b)} {pm} {_fmt(e, 2)}" if not math.isnan(b) else "-"
                              for b, e in zip(s["bias"], s["bias_mcse"])]
        out["rmse"] = s["rmse"].map(_fmt)
        out["coverage (mcse)"] = [f"{c:.3f} {pm} {e:.3f}" if not math.isnan(c) else "-"
                                  for c, e in zip(s["coverage"], s["coverage_mcse"])]
        out["width"] = s["median_width"].map(_fmt)
        out["boundary"] = s["boundary_rate"].map(lambda x: _fmt(x, 2))
        out["failed"] = s["failure_rate"].map(lambda x: _fmt(x, 2))
        out["sec/fit"] = s["seconds_per_fit"].map(lambda x: _fmt(x, 2))
        out["reps"] = s["replicates"].astype(str)
        return out

    def _header(self) -> list[str]:
        st = self.settings
        lvl = st.get("ci_level")
        return [f"replicates per design: {st.get('replicates')}", f"interval level: {lvl}",
                f"seed: {st.get('seed')}", f"judges: {st.get('judges')}"]

    def as_text(self) -> str:
        """The summary as a plain-text table."""
        title = "Simulation study"
        return "\n".join([title, "=" * len(title), *self._header(), "", self._display().to_string(index=False),
                          "", "bias and coverage: estimate \u00b1 Monte Carlo SE (Morris, White & Crowther 2019); "
                          "width: median interval width; boundary: share of fits at 0; failed: share of fits "
                          "that raised."])

    def as_markdown(self) -> str:
        """The summary as a Markdown (GitHub) table."""
        t = self._display()
        head = "| " + " | ".join(t.columns) + " |"
        sep = "|" + "|".join("---" for _ in t.columns) + "|"
        body = ["| " + " | ".join(str(v) for v in row) + " |" for row in t.itertuples(index=False)]
        return "\n".join([head, sep, *body])

    def as_latex(self) -> str:
        """The summary as a LaTeX ``tabular`` (booktabs), via pandas' Styler (needs Jinja2)."""
        t = self._display().rename(columns=lambda c: c.replace("_", r"\_"))
        t = t.map(lambda v: str(v).replace("\u00b1", r"$\pm$").replace("_", r"\_"))
        return t.style.hide(axis="index").to_latex(hrules=True)

    def to_frame(self) -> pd.DataFrame:
        """A copy of the performance measures (one row per design x method x group x component)."""
        return self.measures.copy()

    def as_html(self) -> str:
        """The summary as an HTML table."""
        return self._display().to_html(index=False)

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()


# ------------------------------------------------------------------------------------------------ checkpoint
def _read_checkpoint(path: Path, fp: str) -> tuple[pd.DataFrame | None, int | None]:
    import json

    import pyarrow.parquet as pq

    if not path.exists():
        return None, None
    try:
        meta = pq.read_schema(path).metadata or {}
    except Exception as exc:
        raise CjstatsError(f"The 'checkpoint' argument of {_CALLER} names `{path}`, which is not a study "
                           f"checkpoint (not readable as Parquet: {exc}); give a new file name.") from exc
    if _META_KEY not in meta:
        raise CjstatsError(f"The 'checkpoint' argument of {_CALLER} names `{path}`, which was not written by "
                           f"simulation_study; give a new file name.")
    info = json.loads(meta[_META_KEY])
    if info.get("fingerprint") != fp:
        raise CjstatsError(f"The 'checkpoint' argument of {_CALLER} names `{path}`, written by a different study "
                           f"(other truth, designs, methods, seed or ci_level); give a new file name or the same "
                           f"settings.")
    return pd.read_parquet(path), info.get("seed")


def _write_checkpoint(path: Path, df: pd.DataFrame, fp: str, seed: int) -> None:
    """Write the whole replicate table atomically (a temporary file, then rename): never half-written."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_META_KEY] = json.dumps({"fingerprint": fp, "seed": seed}).encode()
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table.replace_schema_metadata(meta), tmp)
    os.replace(tmp, path)


def _checkpoint_seed(path: Path) -> int | None:
    import json

    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
        return json.loads(meta[_META_KEY]).get("seed")
    except Exception:
        return None


# ------------------------------------------------------------------------------------------------ runners
def _executor(jobs: Any) -> tuple[str, Any, int]:
    """('serial'|'joblib'|'dask', handle, workers)."""
    if isinstance(jobs, str):
        if jobs != "dask":
            raise CjstatsError(f"The 'jobs' argument of {_CALLER} must be a number of processes, 'dask' or a "
                               f"dask.distributed.Client. Got {jobs!r} instead.")
        try:
            from distributed import get_client
        except ImportError as exc:
            raise CjstatsError(f"jobs='dask' in {_CALLER} needs dask.distributed: pip install "
                               f"'cjstats[dask]'.") from exc
        try:
            client = get_client()
        except ValueError as exc:
            raise CjstatsError(f"jobs='dask' in {_CALLER} needs a running dask.distributed.Client; start one "
                               f"(Client(...)) or pass it as jobs=client.") from exc
        return "dask", client, max(1, len(client.scheduler_info().get("workers", {})))
    if type(jobs).__name__ == "Client" and hasattr(jobs, "submit"):
        return "dask", jobs, max(1, len(jobs.scheduler_info().get("workers", {})))
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs == 0 or jobs < -1:
        raise CjstatsError(f"The 'jobs' argument of {_CALLER} must be a positive number of processes, -1 (all "
                           f"cores), 'dask' or a dask.distributed.Client. Got {jobs!r} instead.")
    workers = (os.cpu_count() or 1) if jobs == -1 else int(jobs)
    return ("serial", None, 1) if workers == 1 else ("joblib", int(jobs), workers)


def _run(tasks: list[tuple[Any, ...]], kind: str, handle: Any) -> Iterable[pd.DataFrame]:
    if kind == "serial":
        for t in tasks:
            yield _run_batch(*t, False)
    elif kind == "joblib":
        from joblib import Parallel, delayed

        par = Parallel(n_jobs=handle, return_as="generator_unordered")
        yield from par(delayed(_run_batch)(*t, True) for t in tasks)
    else:
        from distributed import as_completed

        futures = [handle.submit(_run_batch, *t, True, pure=False) for t in tasks]
        try:
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            for fut in futures:
                fut.cancel()


class _NoBar:
    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def update(self, n: int) -> None:
        return None


def _progress_bar(progress: bool | None, total: int, initial: int) -> Any:
    """A tqdm bar with the time left (stderr), a plain stderr line without tqdm, or a stand-in that does nothing
    (``progress`` None: only when stderr is a terminal, :mod:`cjstats._progress`)."""
    from cjstats._progress import Progress, progress_enabled

    if not progress_enabled(progress):
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        bar = Progress(total, "simulation study", progress=True)
        bar.done = initial
        return bar
    return tqdm(total=total, initial=initial, unit="rep", desc="simulation study", dynamic_ncols=True)


def simulation_study(truth: Truth, designs: Design | Mapping[str, Any] | Sequence[Design | Mapping[str, Any]],
                     methods: Any, replicates: int, *, ci_level: float | None = None,
                     seed: int | None = None, jobs: int | str | Any = 1, checkpoint: str | Path | None = None,
                     progress: bool | None = None, batch_size: int | None = None) -> StudyResult:
    """Compare estimators on data simulated from known components, over a grid of designs.

    Parameters
    ----------
    truth : Truth
        The true components (e.g. ``Truth.table3()``, ``Truth.from_components(fit)``).
    designs : Design, mapping or list of them
        Designs (n, m, k, judges per item, strategy or schedule, misspecifications); see :func:`design_grid`.
    methods : list
        Backend names or ``(name, options)`` pairs with the backend's own option names, e.g.
        ``["anova", ("anova", {"interval": "satterthwaite"}), ("reml", {"interval": "bootstrap", "n_boot": 199}),
        ("reml", {"scenario_judge": False}), ("bayes", {"likelihood": "ordinal", "draws": 500, "chains": 2})]``.
        Every method is fitted to the same data set in each replicate (paired comparisons). A method is labelled
        by its name and options (``"reml(scenario_judge=False)"``: the paper's model without the scenario x judge
        term; plain ``"reml"`` fits the term wherever it is identifiable). A latent-scale method (``"ordinal"``)
        is scored on the latent truth of designs with the ``ordinal`` misspecification and skipped, with a
        warning, elsewhere (module docstring).
    replicates : int
        Replicates per design.
    ci_level : float, optional
        Interval level (default 0.95).
    seed : int, optional
        Root seed; replicate r of design d uses ``SeedSequence(seed, spawn_key=(d, r))``, so the numbers do not
        depend on ``jobs``, ``batch_size`` or interruptions. Without a seed, fresh entropy is drawn and recorded
        in ``settings`` (or the checkpoint's seed is reused when resuming).
    jobs : int, "dask" or dask.distributed.Client
        Processes for joblib (1: in this process; -1: every core), with BLAS limited to one thread per worker
        (threadpoolctl); or the current / given Dask client.
    checkpoint : path, optional
        A Parquet file: finished replicates are written to it after each batch (atomically), and a study that
        was interrupted resumes from it. A checkpoint of a different study (truth, designs, methods, seed or
        ci_level) is refused. Raising ``replicates`` extends a finished study.
    progress : bool, optional
        Show a progress bar with the time left on stderr (tqdm; a plain line without it). None (default): only
        when stderr is a terminal.
    batch_size : int, optional
        Replicates per task (default: about four tasks per worker and design, at most 50).

    Returns
    -------
    StudyResult
        ``.measures`` (Morris, White & Crowther 2019 measures with Monte Carlo SEs), ``.replicates``,
        ``print(result)``, ``.as_markdown()``, ``.as_latex()``.

    Examples
    --------
    >>> import cjstats as cj
    >>> res = cj.simulation_study(cj.Truth.table3(["GPT"]), [cj.Design(n=20, m=2, k=4)], ["anova"], 20, seed=1)
    >>> res.measures.shape[0]   # mu, scenario, generation, scenario_judge, residual and the two judge rows
    7
    """
    if not isinstance(truth, Truth):
        raise CjstatsError(f"The 'truth' argument of {_CALLER} must be a cj.Truth (e.g. cj.Truth.table3()). "
                           f"Got {type(truth).__name__} instead.")
    design_list = _resolve_designs(designs)
    method_list = _resolve_methods(methods)
    reps = check_positive_int("replicates", replicates, caller=_CALLER)
    level = resolve_ci_level(ci_level)
    if seed is not None:
        seed = check_positive_int("seed", seed, caller=_CALLER, minimum=0)
    kind, handle, workers = _executor(jobs)
    if batch_size is not None:
        batch_size = check_positive_int("batch_size", batch_size, caller=_CALLER)
    path = Path(checkpoint) if checkpoint is not None else None
    if path is not None and path.exists() and seed is None:
        seed = _checkpoint_seed(path)
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> 1)
    fp = fingerprint({"truth": truth.to_dict(), "designs": [d.to_dict() for d in design_list],
                      "methods": [(m.name, {k: repr(v) for k, v in m.options.items()}) for m in method_list],
                      "seed": seed, "ci_level": level})
    done = pd.DataFrame()
    if path is not None:
        prior, _ = _read_checkpoint(path, fp)
        if prior is not None:
            done = prior[prior["replicate"] < reps]
    finished = set(zip(done["design_id"], done["replicate"])) if len(done) else set()
    size = batch_size or max(1, min(50, math.ceil(reps / (4 * workers))))
    tasks, skipped = [], []
    for d_id, design in enumerate(design_list):
        todo = [r for r in range(reps) if (d_id, r) not in finished]
        reasons = {m.label: _skip_reason(m, truth, design) for m in method_list}
        skipped.extend({"design": design.label, "method": lab, "reason": why} for lab, why in reasons.items() if why)
        run_here = [m for m in method_list if reasons[m.label] is None]
        if not run_here:
            continue
        for a in range(0, len(todo), size):
            tasks.append((truth, design, d_id, todo[a:a + size], run_here, level, seed))
    for sk in skipped:
        warn(f"simulation_study: {sk['reason']}.")
    frames = [done] if len(done) else []
    t_start = time.perf_counter()
    with _progress_bar(progress, reps * len(design_list), len(finished)) as bar:
        for frame in _run(tasks, kind, handle):
            frames.append(frame)
            if path is not None:
                _write_checkpoint(path, pd.concat(frames, ignore_index=True), fp, seed)
            bar.update(int(frame[["design_id", "replicate"]].drop_duplicates().shape[0]))
    elapsed = time.perf_counter() - t_start
    rep_table = pd.concat(frames, ignore_index=True) if frames else _replicate_frame(
        {c: [] for c in (*REPLICATE_COLUMNS, "criterion")}, truth.criteria is not None)
    method_rank = {m.label: i for i, m in enumerate(method_list)}
    comp_rank = {c: i for i, c in enumerate(COMPONENTS)}
    group_rank = {g: i for i, g in enumerate(truth.groups)}
    order_cols = [rep_table["design_id"], rep_table["replicate"], rep_table["method"].map(method_rank),
                  rep_table["model"].map(group_rank)]
    if truth.criteria is not None:
        order_cols.append(rep_table["criterion"].map({c: i for i, c in enumerate(truth.criteria)}))
    order_cols.append(rep_table["component"].map(comp_rank))
    order = np.lexsort(tuple(np.asarray(c) for c in reversed(order_cols)))
    rep_table = rep_table.iloc[order].reset_index(drop=True)
    settings = {"truth": truth.to_dict(), "designs": [d.to_dict() for d in design_list],
                "methods": [m.label for m in method_list], "replicates": reps, "ci_level": level, "seed": seed,
                "jobs": jobs if isinstance(jobs, (int, str)) else "dask", "judges": truth.judges,
                "fingerprint": fp, "seconds": elapsed, "resumed_replicates": len(finished), "skipped": skipped}
    return StudyResult(measures=summarise_replicates(rep_table), replicates=rep_table, settings=settings)
