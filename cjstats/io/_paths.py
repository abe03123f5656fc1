"""The one rule for what a loader's ``source`` names: a file, a folder, a glob pattern, or a list of these."""

from __future__ import annotations

import glob as _glob
from collections.abc import Callable, Sequence
from pathlib import Path

from cjstats.exceptions import CjstatsError

__all__ = ["expand_sources"]


def expand_sources(source: str | Path | Sequence[str | Path], *, empty_list: str, bad_type: str,
                   folder_files: Callable[[Path], list[Path]], empty_folder: str, missing: str) -> list[Path]:
    """The files ``source`` names, sorted within each item, each file once.

    A folder contributes ``folder_files(folder)``; a path that does not exist but holds glob characters is a
    pattern. The message arguments are the sentences to raise: ``empty_list`` for ``[]``, ``bad_type`` (with
    ``{type}``) for anything but a path or a list, ``empty_folder`` (with ``{path}``) for a folder without a
    file of this kind, and ``missing`` (with ``{path}``) for a path that names nothing.
    """
    if isinstance(source, (list, tuple)):
        if not source:
            raise CjstatsError(empty_list)
        files: list[Path] = []
        for item in source:
            files.extend(f for f in expand_sources(item, empty_list=empty_list, bad_type=bad_type,
                                                   folder_files=folder_files, empty_folder=empty_folder,
                                                   missing=missing) if f not in files)
        return files
    if not isinstance(source, (str, Path)):
        raise CjstatsError(bad_type.format(type=type(source).__name__))
    path = Path(source)
    if path.is_dir():
        found = folder_files(path)
        if not found:
            raise CjstatsError(empty_folder.format(path=path))
        return found
    if path.exists():
        return [path]
    if _glob.has_magic(str(source)):
        found = sorted(Path(p) for p in _glob.glob(str(source)) if Path(p).is_file())
        if not found:
            raise CjstatsError(f"The pattern `{source}` matches no file.")
        return found
    raise CjstatsError(missing.format(path=path))
