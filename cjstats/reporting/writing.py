"""Files written whole or not at all (:func:`atomic_write`), with the permissions the umask gives
(:func:`default_mode`): the HTML report (:func:`cjstats.reporting.write_html`) and the PDF
(:mod:`cjstats.reporting.pdf`, which the package imports, so this lives outside the package's ``__init__``)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "default_mode"]


def default_mode() -> int:
    """The permissions a new file gets from the process's umask (mkstemp's own 0600 would hide a report from
    everyone else on the machine)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: Path, fill: Callable[[Path], Any]) -> Path:
    """Make ``path`` through a temporary file in its folder (``fill(tmp)`` writes it), then one rename, so a
    failure leaves no file behind; the file gets the umask's permissions (:func:`default_mode`)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        fill(tmp)
        os.chmod(tmp, default_mode())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
