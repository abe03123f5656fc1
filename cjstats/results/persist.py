"""Save a result to a portable directory and read it back (``result.save(path)``, ``cjstats.results.load(path)``).

The directory outlives the package version: nothing in it is a pickle.

- ``result.json``: the format (``cjstats-result``, ``format_version``), the result type (its name in
  :data:`RESULT_TYPES`), the cjstats version that wrote it, the manifest (``files``: every file the save wrote,
  so a later save knows which files it may replace) and every field that is plain data (numbers, strings, lists,
  mappings; non-finite floats, tuples, small arrays and non-string keys are tagged, e.g. ``{"__float__": "nan"}``);
- ``<field>.parquet``: every DataFrame field (Apache Parquet, via pyarrow; read by R, DuckDB, Polars, Spark);
- ``<field>.npy``: every numeric array field (NumPy's format, read by ``numpy.load`` without pickle);
- ``<field>/``: a nested result or a mapping of them (a joint fit inside a comparison, the per-group
  covariances of a fit), written the same way;
- ``<field>/<key>/<node>.nc``: a posterior (an ArviZ/xarray ``DataTree``), one netCDF file per group
  (``posterior``, ``sample_stats``, ...), written with xarray's ``scipy`` engine (netCDF 3, no extra library).

Safety (:mod:`cjstats._savedir`): save writes into a sibling temporary folder and swaps it in, replacing only an
earlier save that holds nothing but its manifest's files (a user's file in the folder is refused, never deleted).
load looks the ``type`` up in :data:`RESULT_TYPES`, a table of this package's own classes, and never imports a
module named in the file; a damaged or mismatched directory (JSON cut short, wrong format marker, newer format
version, a missing or damaged data file, an unknown type, fields that do not fit the type, a file name leading
out of the directory) is one :class:`~cjstats.exceptions.CjstatsError` naming the file and what is wrong.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cjstats._savedir import first_line, inside, read_data, read_meta, write_directory
from cjstats.exceptions import CjstatsError

__all__ = ["save", "load", "result_type", "FORMAT", "FORMAT_VERSION", "RESULT_TYPES"]

FORMAT = "cjstats-result"
#: 2: ``type`` is a name in RESULT_TYPES (version 1 stored the dotted module path) and result.json lists its files
FORMAT_VERSION = 2
_META = "result.json"

#: Every type save writes and load reads, by the name stored in result.json, with the cjstats module that
#: defines it: the public results and the records nested in them. A new saveable type is one line here
#: (``tests/test_persistence_safety.py`` checks that every result dataclass of the package is listed).
RESULT_TYPES: dict[str, str] = {
    "VarianceComponents": "cjstats.results.components",
    "Model": "cjstats.results.model",
    "ParameterCovariance": "cjstats.results.components",
    "JointCovariance": "cjstats.results.contrast",
    "Allocation": "cjstats.results.allocation",
    "Diagnosis": "cjstats.results.diagnosis",
    "SequenceResult": "cjstats.results.sequential",
    "SequentialPlan": "cjstats.results.sequential",
    "JointFit": "cjstats.estimators.joint._joint",
    "CovariateFit": "cjstats.estimators.joint.covariates",
    "ModelComparison": "cjstats.estimators.joint.models",
    "SelfPreference": "cjstats.estimators.joint.self_preference",
    "JudgeTable": "cjstats.estimators.judges",
    "DriftResult": "cjstats.estimators.drift",
    "Agreement": "cjstats.estimators.humans.agreement",
    "PPIMeans": "cjstats.estimators.humans.ppi",
    "StudyResult": "cjstats.studies.study",
    "GStudy": "cjstats.results.gstudy",
    "Replication": "cjstats.results.gstudy",
}


def result_type(name: str) -> type:
    """The class registered as ``name`` in :data:`RESULT_TYPES` (imported from the module the table names)."""
    cls = getattr(importlib.import_module(RESULT_TYPES[name]), name)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"RESULT_TYPES[{name!r}] is not a dataclass")   # a packaging bug, not a user error
    return cls


def _registered_name(obj: Any, field: str) -> str:
    name = type(obj).__name__
    if name not in RESULT_TYPES or result_type(name) is not type(obj):
        raise CjstatsError(f"Field '{field}' holds a {name}, which is not a saveable cjstats result type; drop it "
                           f"from the result or convert it to a table, an array or plain values first.")
    return name


def _is_record(obj: Any) -> bool:
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type)


def _is_tree(obj: Any) -> bool:
    return type(obj).__name__ == "DataTree" and hasattr(obj, "children")


def _encode(value: Any, where: Path, name: str) -> Any:
    """JSON for ``value``; tables, arrays, records and posteriors go to files under ``where`` named ``name``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else {"__float__": repr(v)}
    if isinstance(value, pd.DataFrame):
        value.to_parquet(where / f"{name}.parquet")
        return {"__table__": f"{name}.parquet"}
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf":
            np.save(where / f"{name}.npy", value, allow_pickle=False)
            return {"__array__": f"{name}.npy"}
        return {"__list_array__": [_encode(v, where, f"{name}_{i}") for i, v in enumerate(value.tolist())]}
    if _is_record(value):
        _registered_name(value, name)
        sub = where / name
        sub.mkdir()
        (sub / _META).write_text(json.dumps(_record_meta(value, sub), indent=1, allow_nan=False), encoding="utf-8")
        return {"__record__": name}
    if _is_tree(value):
        sub = where / name
        sub.mkdir()
        nodes = {}
        for node, child in value.children.items():
            ds = child.to_dataset()
            # netCDF 3 keeps neither string-list attributes nor int64/bool exactly: attributes and dtypes go to JSON
            info = {"attrs": _encode(dict(ds.attrs), where, f"{name}.{node}.attrs"),
                    "var_attrs": {v: _encode(dict(ds[v].attrs), where, f"{name}.{node}.{v}.attrs")
                                  for v in ds.variables},
                    "dtypes": {v: str(ds[v].dtype) for v in ds.variables}}
            bare = ds.copy()
            bare.attrs = {}
            for v in bare.variables:
                bare[v].attrs = {}
                bare[v].encoding = {}
            bare.to_netcdf(sub / f"{node}.nc", engine="scipy")
            nodes[node] = info
        return {"__datatree__": name, "nodes": nodes, "attrs": _encode(dict(value.attrs), where, f"{name}_attrs")}
    if isinstance(value, Mapping):
        keys = list(value)
        if all(isinstance(k, str) for k in keys):
            return {"__dict__": {k: _encode(v, where, f"{name}.{i}_{_safe(k)}") for i, (k, v) in enumerate(value.items())}}
        return {"__pairs__": [[_encode(k, where, f"{name}.k{i}"), _encode(v, where, f"{name}.{i}")]
                              for i, (k, v) in enumerate(value.items())]}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, where, f"{name}.{i}") for i, v in enumerate(value)]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    raise CjstatsError(f"Field '{name}' holds a {type(value).__name__}, which save cannot write portably; "
                       f"drop it from the result or convert it to a table, an array or plain values first.")


def _safe(key: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in key)[:60] or "_"


def _record_meta(obj: Any, where: Path) -> dict[str, Any]:
    """The result.json of ``obj`` (its data files written into ``where``), without the manifest."""
    from cjstats import __version__

    name = type(obj).__name__
    fields = {f.name: _encode(getattr(obj, f.name), where, f.name) for f in dataclasses.fields(obj) if f.init}
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "type": name, "cjstats_version": __version__,
            "fields": fields}


class _Reader:
    """Decodes the fields of one saved record: ``root`` is the saved directory (no file may lead out of it),
    ``where`` the record's folder and ``file`` its result.json, named in every error."""

    def __init__(self, root: Path, where: Path) -> None:
        self.root, self.where, self.file = root, where, where / _META

    def path(self, name: Any) -> Path:
        return inside(self.root, self.where, name, self.file)

    def decode(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "__float__" in value:
            return float(value["__float__"])
        if "__table__" in value:
            return read_data(self.path(value["__table__"]), self.file, "a Parquet table", pd.read_parquet)
        if "__array__" in value:
            return read_data(self.path(value["__array__"]), self.file, "a NumPy array",
                             lambda p: np.load(p, allow_pickle=False))
        if "__list_array__" in value:
            return np.array([self.decode(v) for v in value["__list_array__"]], dtype=object)
        if "__record__" in value:
            return _read_record(self.root, self.path(value["__record__"]))
        if "__datatree__" in value:
            return self._tree(value)
        if "__dict__" in value:
            return {k: self.decode(v) for k, v in value["__dict__"].items()}
        if "__pairs__" in value:
            return {_hashable(self.decode(k)): self.decode(v) for k, v in value["__pairs__"]}
        if "__tuple__" in value:
            return tuple(self.decode(v) for v in value["__tuple__"])
        raise CjstatsError(f"'{self.file}' has an entry this cjstats version cannot read (keys {sorted(value)}); "
                           f"it was written by another version or edited, so save the result again.")

    def _tree(self, value: Mapping[str, Any]) -> Any:
        import xarray as xr

        sub = self.path(value["__datatree__"])

        def open_nc(p: Path) -> Any:
            with xr.open_dataset(p, engine="scipy") as ds:
                return ds.load()

        nodes = {}
        for node, info in value["nodes"].items():
            ds = read_data(inside(self.root, sub, f"{node}.nc", self.file), self.file, "a netCDF posterior", open_nc)
            ds = ds.assign_coords({v: ds[v].astype(info["dtypes"][v]) for v in ds.coords if v in info["dtypes"]})
            ds = ds.assign({v: ds[v].astype(info["dtypes"][v]) for v in ds.data_vars if v in info["dtypes"]})
            ds.attrs = self.decode(info["attrs"])
            for v in ds.variables:
                ds[v].attrs = self.decode(info["var_attrs"].get(v, {"__dict__": {}}))
            nodes[node] = ds
        tree = xr.DataTree.from_dict(nodes)
        tree.attrs.update(self.decode(value["attrs"]))
        return tree


def _hashable(x: Any) -> Any:
    return tuple(_hashable(v) for v in x) if isinstance(x, list) else x


def _type_of(head: Mapping[str, Any], file: Path) -> type:
    """The registered class that ``head`` (a checked result.json) names; nothing in the file is imported."""
    name = head.get("type")
    if isinstance(name, str) and head["format_version"] == 1 and name.startswith("cjstats."):
        name = name.rpartition(".")[2]          # version 1 stored the module path; only the class name is used
    if not isinstance(name, str) or name not in RESULT_TYPES:
        raise CjstatsError(f"'{file}' names the result type {name!r}, which is not a cjstats result type (known: "
                           f"{', '.join(RESULT_TYPES)}); its tables (*.parquet) and arrays (*.npy) can still be "
                           f"read directly.")
    return result_type(name)


def _read_record(root: Path, where: Path, head: dict[str, Any] | None = None) -> Any:
    file = where / _META
    if head is None:
        head = read_meta(file, fmt=FORMAT, version=FORMAT_VERSION, what="result")
    cls = _type_of(head, file)
    stored = head.get("fields")
    if not isinstance(stored, dict):
        raise CjstatsError(f"'{file}' has no 'fields' mapping (found {type(stored).__name__}); save the result "
                           f"again.")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = [k for k in stored if k not in fields]
    if unknown:
        raise CjstatsError(f"'{file}' has the field '{unknown[0]}', which a {cls.__name__} does not have; it was "
                           f"written by another cjstats version or edited, so save the result again.")
    missing = [k for k, f in fields.items() if k not in stored and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise CjstatsError(f"'{file}' lacks the field '{missing[0]}', which a {cls.__name__} needs; save the "
                           f"result again.")
    reader = _Reader(root, where)
    kwargs = {}
    for k, v in stored.items():
        try:
            kwargs[k] = reader.decode(v)
        except CjstatsError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise CjstatsError(f"'{file}' is damaged: its field '{k}' cannot be read ({type(exc).__name__}: "
                               f"{first_line(exc)}); save the result again.") from None
    try:
        return cls(**kwargs)
    except Exception as exc:          # a type's own checks (__post_init__) raise what they raise
        raise CjstatsError(f"'{file}' holds fields that do not make a valid {cls.__name__} ({first_line(exc)}); "
                           f"save the result again.") from None


def save(result: Any, path: str | Path) -> Path:
    """Write ``result`` (a registered result dataclass) to the directory ``path``; returns the path.

    The save is written to a sibling temporary folder and renamed to ``path``. An existing ``path`` is replaced
    only when it is an empty folder or an earlier save holding only the files its manifest lists; a folder with
    anything else in it is refused (one sentence naming the first foreign file) and left as it was.
    """
    if not _is_record(result):
        raise CjstatsError(f"save takes a cjstats result (such as the return of cj.estimate). Got "
                           f"{type(result).__name__} instead.")
    _registered_name(result, "result")
    return write_directory(path, lambda tmp: _record_meta(result, tmp), meta=_META, fmt=FORMAT, what="result")


def load(path: str | Path, expected: type | None = None) -> Any:
    """Read a result written by :func:`save` (one sentence when ``path`` is not one, or is damaged).

    ``expected``: refuse, before reading any data file, a saved result that is not of this type.
    """
    path = Path(path)
    if not (path / _META).is_file():
        raise CjstatsError(f"The directory '{path}' holds no saved result (no {_META}); write one with "
                           f"result.save(path).")
    head = read_meta(path / _META, fmt=FORMAT, version=FORMAT_VERSION, what="result")
    cls = _type_of(head, path / _META)
    if expected is not None and not issubclass(cls, expected):
        raise CjstatsError(f"The directory '{path}' holds a {cls.__name__}, not a {expected.__name__}; load it "
                           f"with {cls.__name__}.load(path), or cjstats.results.persist.load(path) for any type.")
    return _read_record(path, path, head)
