"""The directory side of ``save``/``load`` (results, :mod:`cjstats.results.persist`; score tables,
:meth:`cjstats.io.scores.Scores.save`): write only files save owns, read only what the metadata names.

- :func:`write_directory` writes a save into a sibling temporary folder (same parent, so ``os.rename`` is atomic)
  and swaps it in. An existing target is replaced only when it is empty or an earlier save of the same format
  that holds nothing but the files its own manifest lists (``"files"`` in its JSON); anything else in it (a
  user's file) is refused with one sentence naming that file, and nothing is deleted. A failure while writing
  leaves the old save as it was and no temporary folder behind.
- :func:`read_meta` reads a save's JSON: cut short, not JSON, a wrong format marker or a newer format version
  is one :class:`~cjstats.exceptions.CjstatsError` naming the file.
- :func:`inside` resolves a file name found in the JSON, refusing anything that is not a plain name inside the
  saved directory (``../x.parquet``, ``/etc/x``, a symbolic link out of it).
- :func:`read_data` reads one named data file; missing or damaged is one sentence naming it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from cjstats._warnings import warn
from cjstats.exceptions import CjstatsError, CjstatsWarning

__all__ = ["write_directory", "read_meta", "inside", "read_data", "first_line"]


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (library errors can span many lines), without a final period."""
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__).rstrip(".")


def _entries(path: Path) -> list[str]:
    """Every file and folder under ``path`` (relative, '/'-separated, sorted); symbolic links are not followed."""
    out = []
    for top, dirs, files in os.walk(path):
        rel = Path(top).relative_to(path)
        out.extend((rel / name).as_posix() for name in [*dirs, *files])
    return sorted(out)


def _owned(path: Path, meta: str, fmt: str, what: str) -> set[str] | None:
    """The files of the save at ``path`` that save may replace (``set()`` for an empty folder, ``None`` for no
    path); refuses, with one sentence, a path that holds anything save did not write."""
    if not os.path.lexists(path):
        return None
    if path.is_symlink() or not path.is_dir():
        raise CjstatsError(f"The path '{path}' exists and is not a saved {what} (it is not a folder); choose a "
                           f"new directory.")
    entries = _entries(path)
    if not entries:
        return set()
    if not (path / meta).is_file():
        raise CjstatsError(f"The path '{path}' exists and is not a saved {what} (it holds '{entries[0]}' and no "
                           f"{meta}); choose a new directory, or empty this one first.")
    try:
        head = json.loads((path / meta).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        head = None
    files = head.get("files") if isinstance(head, dict) and head.get("format") == fmt else None
    if not (isinstance(files, list) and all(isinstance(f, str) for f in files)):
        raise CjstatsError(f"The path '{path}' holds a {meta} that is not a cjstats save with a list of its files "
                           f"(an older or damaged save, or another program's), so save cannot tell its files from "
                           f"yours; choose a new directory, or delete this one first.")
    owned = {*files, meta}
    parents = {p.as_posix() for f in owned for p in PurePosixPath(f).parents if p.as_posix() != "."}
    foreign = [e for e in entries if e not in owned and e not in parents]
    if foreign:
        raise CjstatsError(f"The directory '{path}' holds an earlier saved {what} and also '{foreign[0]}', which "
                           f"save did not write; save to another directory, or move or delete '{foreign[0]}' "
                           f"first.")
    return owned


def _sibling(path: Path, kind: str) -> Path:
    return path.with_name(f".{path.name}.cjstats-{kind}-{secrets.token_hex(4)}")


def _remove_owned(old: Path, owned: set[str]) -> None:
    """Delete the files of the replaced save that its manifest lists, then its empty folders; anything else
    (put there after the check) stays, in ``old``, with a warning."""
    for top, dirs, files in os.walk(old, topdown=False):
        rel = Path(top).relative_to(old)
        for name in files:
            if (rel / name).as_posix() in owned:
                (Path(top) / name).unlink()
        for name in dirs:
            try:
                (Path(top) / name).rmdir()
            except OSError:
                pass
    try:
        old.rmdir()
    except OSError:
        warn(f"The replaced save's folder '{old}' still holds files that save did not write (added while "
             f"saving); they were kept there.", CjstatsWarning, stacklevel=4)


def write_directory(path: Any, write: Callable[[Path], dict[str, Any]], *, meta: str, fmt: str, what: str,
                    default: Callable[[Any], Any] | None = None) -> Path:
    """Write a save to the directory ``path``: ``write(folder)`` writes the data files into ``folder`` and returns
    the metadata, which is stored as ``folder/meta`` with ``"files"``, the manifest of every file written.

    The folder is a fresh sibling of ``path``, renamed to ``path`` when complete; an earlier save there (the same
    ``fmt``, holding only its manifest's files) or an empty folder is replaced, anything else is refused.
    """
    given = Path(path)
    path = Path(os.path.abspath(given))      # "." or "fit/" name a folder with a parent, so it has siblings
    if os.path.lexists(path) and Path.cwd().resolve().is_relative_to(path.resolve()):
        raise CjstatsError(f"The path '{given}' is the working directory (or holds it), which save would have to "
                           f"move; save to a new sub-folder instead, e.g. '{given / 'saved'}'.")
    owned = _owned(path, meta, fmt, what)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(path, "new")
    tmp.mkdir()
    try:
        head = write(tmp)
        head["files"] = sorted(e for e in _entries(tmp) if (tmp / e).is_file()) + [meta]
        (tmp / meta).write_text(json.dumps(head, indent=1, allow_nan=False, default=default), encoding="utf-8")
        if owned is None:
            os.rename(tmp, path)
            return given
        old = _sibling(path, "old")
        os.rename(path, old)
        try:
            os.rename(tmp, path)
        except BaseException:
            os.rename(old, path)
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)     # the temporary folder holds only what this call wrote
        raise
    _remove_owned(old, owned)
    return given


def read_meta(file: Path, *, fmt: str, version: int, what: str) -> dict[str, Any]:
    """The JSON metadata of a save, checked: one sentence naming ``file`` when it is missing, cut short, not JSON,
    of another format or of a newer format version."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CjstatsError(f"'{file}' is missing, so this is not a complete saved {what}; save it again.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CjstatsError(f"'{file}' cannot be read as text ({first_line(exc)}); save the {what} again.") from None
    try:
        head = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CjstatsError(f"'{file}' is cut short or not JSON ({exc.msg} at line {exc.lineno}, column "
                           f"{exc.colno}); save the {what} again.") from None
    if not isinstance(head, dict) or head.get("format") != fmt:
        found = head.get("format") if isinstance(head, dict) else type(head).__name__
        raise CjstatsError(f"'{file}' is not a saved cjstats {what}: its format marker is {found!r}, not {fmt!r}.")
    v = head.get("format_version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise CjstatsError(f"'{file}' has no valid format_version (found {v!r}); save the {what} again.")
    if v > version:
        raise CjstatsError(f"'{file}' was written in {fmt} format version {v} (this cjstats reads up to version "
                           f"{version}), which this cjstats version cannot read; upgrade cjstats.")
    return head


def inside(root: Path, where: Path, name: Any, file: Path) -> Path:
    """``where / name`` for a file name read from the metadata ``file``, refused unless ``name`` is a plain name
    (no folder part, not absolute) that stays inside the saved directory ``root`` (symbolic links resolved)."""
    ok = isinstance(name, str) and name not in ("", ".", "..") and "\x00" not in name
    if ok:
        ok = (PurePosixPath(name).name == name and PureWindowsPath(name).name == name
              and not PurePosixPath(name).is_absolute() and not PureWindowsPath(name).drive)
    if ok:
        full = where / name
        ok = full.resolve().is_relative_to(root.resolve())
    if not ok:
        raise CjstatsError(f"'{file}' names the file {name!r}, which is not a file inside the saved directory; a "
                           f"save only refers to its own files, so this one was edited or damaged.")
    return full


def read_data(path: Path, file: Path, kind: str, read: Callable[[Path], Any]) -> Any:
    """``read(path)`` for a data file named in the metadata ``file``; missing or unreadable is one sentence."""
    if not path.is_file():
        raise CjstatsError(f"'{path}', named in '{file}', is missing; the save is incomplete, so save it again.")
    try:
        return read(path)
    except Exception as exc:      # Arrow, NumPy and netCDF readers raise many types for a damaged file
        raise CjstatsError(f"'{path}' (named in '{file}') is damaged and cannot be read as {kind} "
                           f"({first_line(exc)}); save it again.") from None
