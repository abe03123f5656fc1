"""Save a result to a portable directory and read it back (``result.save(path)``, ``cjstats.results.load(path)``).

The directory outlives the package version: nothing in it is a pickle.

- ``result.json``: the format (``cjstats-result``, ``format_version``), the result type, the cjstats version that
  wrote it, and every field that is plain data (numbers, strings, lists, mappings; non-finite floats, tuples,
  small arrays and non-string keys are tagged, e.g. ``{"__float__": "nan"}``);
- ``<field>.parquet``: every DataFrame field (Apache Parquet, via pyarrow; read by R, DuckDB, Polars, Spark);
- ``<field>.npy``: every numeric array field (NumPy's format, read by ``numpy.load`` without pickle);
- ``<field>/``: a nested result or a mapping of them (a joint fit inside a comparison, the per-group
  covariances of a fit), written the same way;
- ``<field>/<key>/<node>.nc``: a posterior (an ArviZ/xarray ``DataTree``), one netCDF file per group
  (``posterior``, ``sample_stats``, ...), written with xarray's ``scipy`` engine (netCDF 3, no extra library).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cjstats.exceptions import CjstatsError

__all__ = ["save", "load", "FORMAT", "FORMAT_VERSION"]

FORMAT = "cjstats-result"
FORMAT_VERSION = 1
_META = "result.json"


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
        sub = where / name
        sub.mkdir()
        _write_record(value, sub)
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


def _decode(value: Any, where: Path) -> Any:
    if isinstance(value, list):
        return [_decode(v, where) for v in value]
    if not isinstance(value, dict):
        return value
    if "__float__" in value:
        return float(value["__float__"])
    if "__table__" in value:
        return pd.read_parquet(where / value["__table__"])
    if "__array__" in value:
        return np.load(where / value["__array__"], allow_pickle=False)
    if "__list_array__" in value:
        return np.array([_decode(v, where) for v in value["__list_array__"]], dtype=object)
    if "__record__" in value:
        return _read_record(where / value["__record__"])
    if "__datatree__" in value:
        import xarray as xr

        sub = where / value["__datatree__"]
        nodes = {}
        for node, info in value["nodes"].items():
            with xr.open_dataset(sub / f"{node}.nc", engine="scipy") as ds:
                ds = ds.load()
            ds = ds.assign_coords({v: ds[v].astype(info["dtypes"][v]) for v in ds.coords if v in info["dtypes"]})
            ds = ds.assign({v: ds[v].astype(info["dtypes"][v]) for v in ds.data_vars if v in info["dtypes"]})
            ds.attrs = _decode(info["attrs"], where)
            for v in ds.variables:
                ds[v].attrs = _decode(info["var_attrs"].get(v, {"__dict__": {}}), where)
            nodes[node] = ds
        tree = xr.DataTree.from_dict(nodes)
        tree.attrs.update(_decode(value["attrs"], where))
        return tree
    if "__dict__" in value:
        return {k: _decode(v, where) for k, v in value["__dict__"].items()}
    if "__pairs__" in value:
        return {_hashable(_decode(k, where)): _decode(v, where) for k, v in value["__pairs__"]}
    if "__tuple__" in value:
        return tuple(_decode(v, where) for v in value["__tuple__"])
    raise CjstatsError(f"The saved result in '{where}' has an entry this version cannot read ({sorted(value)}).")


def _hashable(x: Any) -> Any:
    return tuple(_hashable(v) for v in x) if isinstance(x, list) else x


def _write_record(obj: Any, where: Path) -> None:
    from cjstats import __version__

    fields = {f.name: _encode(getattr(obj, f.name), where, f.name) for f in dataclasses.fields(obj)}
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION,
            "type": f"{type(obj).__module__}.{type(obj).__qualname__}", "cjstats_version": __version__,
            "fields": fields}
    (where / _META).write_text(json.dumps(meta, indent=1, allow_nan=False))


def _read_record(where: Path) -> Any:
    meta = json.loads((where / _META).read_text())
    module, _, name = meta["type"].rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise CjstatsError(f"The saved result in '{where}' is a {meta['type']}, which this cjstats version does not "
                           f"have; its tables (*.parquet) and arrays (*.npy) can still be read directly.") from None
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: _decode(v, where) for k, v in meta["fields"].items() if k in names}
    return cls(**kwargs)


def save(result: Any, path: str | Path) -> Path:
    """Write ``result`` (a result dataclass) to the directory ``path``; returns the path.

    An existing directory is replaced only when it holds a saved result (its ``result.json``); any other
    existing path is refused.
    """
    if not _is_record(result):
        raise CjstatsError(f"save takes a cjstats result (such as the return of cj.estimate). Got "
                           f"{type(result).__name__} instead.")
    path = Path(path)
    if path.exists():
        if not (path.is_dir() and (path / _META).exists()):
            raise CjstatsError(f"The path '{path}' exists and is not a saved result; choose a new directory.")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    try:
        _write_record(result, path)
    except Exception:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return path


def load(path: str | Path) -> Any:
    """Read a result written by :func:`save` (one sentence when ``path`` is not one)."""
    path = Path(path)
    meta = path / _META
    if not meta.exists():
        raise CjstatsError(f"The directory '{path}' holds no saved result (no {_META}); write one with "
                           f"result.save(path).")
    head = json.loads(meta.read_text())
    if head.get("format") != FORMAT or int(head.get("format_version", 0)) > FORMAT_VERSION:
        raise CjstatsError(f"'{path}' was written in format {head.get('format')} version "
                           f"{head.get('format_version')}, which this cjstats version cannot read; upgrade cjstats.")
    return _read_record(path)
