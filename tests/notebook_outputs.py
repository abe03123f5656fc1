"""The text a notebook's code cells print, normalised so that a fresh run and the stored run compare equal.

Used by ``tests/test_notebooks.py``: each code cell's outputs become one list of tokens (stdout and stderr
streams, the ``text/plain`` of results and displays, errors). Figures and HTML are left out (the HTML of a
table repeats its ``text/plain``; a PNG differs byte by byte between matplotlib builds, and its
``text/plain``, ``<Figure size WxH with N Axes>``, is compared). What legitimately
changes from run to run is masked:

- memory addresses (``0x7f3a...``), as ``0xADDR``;
- the file and line in a warning (``/home/me/cjstats/x.py:12: CjstatsWarning``), as ``<file>:<line>:``, and
  the source line Python prints under it;
- timing columns of printed tables (``sec/fit`` of a simulation study, ``seconds`` of its replicates): every
  value under such a header, as ``<time>``;
- progress bars on stderr (lines holding ``it/s`` or ``%|``), dropped.

Tokens are compared one by one (so a number one character longer, which realigns a table, is still a match);
two numbers match when they differ by at most one unit in their last printed digit (BLAS summation order may
flip a last digit between machines). Anything else must be equal.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["cell_texts", "normalise", "compare_notebooks", "TIMING_COLUMNS"]

#: Column headers whose values are wall-clock times.
TIMING_COLUMNS = ("sec/fit", "seconds")

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_WARNING_AT = re.compile(r"(?m)^\S*?[\w.-]+\.py:\d+: (?=\w*(Warning|Error)\b)")
#: A warning's header line and the source line Python echoes under it (indented).
_WARNING_SOURCE = re.compile(r"(?m)^(<file>:<line>: .*)\n[ \t]+\S.*$")
_PROGRESS = re.compile(r"it/s|s/it|%\|")
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?%?$")


def _mask_timing(text: str) -> str:
    """Replace every value printed under a timing header (right-aligned pandas columns) by ``<time>``."""
    lines = text.split("\n")
    span: list[tuple[int, int]] = []
    for i, line in enumerate(lines):
        found = [(m.start(), m.end()) for col in TIMING_COLUMNS
                 for m in re.finditer(rf"(?<!\S){re.escape(col)}(?!\S)", line)]
        if found:
            span = []
            for start, end in found:
                left = start - 1
                while left >= 0 and line[left] == " ":
                    left -= 1
                span.append((left + 1, end))
            continue
        if not line.strip():
            span = []
            continue
        for left, end in span:
            if len(line) >= left and line[left:end].strip():
                lines[i] = line[:left] + " <time>".rjust(end - left) + line[end:]
                line = lines[i]
    return "\n".join(lines)


def normalise(text: str) -> str:
    """One output text with what changes from run to run masked."""
    text = text.replace("\r\n", "\n")
    text = _ADDRESS.sub("0xADDR", text)
    text = _WARNING_AT.sub("<file>:<line>: ", text)
    text = _WARNING_SOURCE.sub(r"\1", text)
    return _mask_timing(text)


def _output_text(out: Any) -> str:
    kind = out.get("output_type")
    if kind == "stream":
        text = "".join(out.get("text", ""))
        if out.get("name") == "stderr":
            text = "\n".join(line for line in re.split(r"[\r\n]", text) if not _PROGRESS.search(line))
        return f"[{out.get('name')}]\n{text}"
    if kind in ("execute_result", "display_data"):
        plain = out.get("data", {}).get("text/plain", "")
        plain = "".join(plain) if isinstance(plain, list) else plain
        return f"[{kind}]\n{plain}"
    if kind == "error":
        return f"[error]\n{out.get('ename')}: {out.get('evalue')}"
    return f"[{kind}]"


def cell_texts(nb: Any) -> list[list[str]]:
    """Per code cell, the whitespace-separated tokens of its normalised text outputs."""
    cells = nb["cells"] if isinstance(nb, dict) else nb.cells
    out = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        text = "\n".join(normalise(_output_text(o)) for o in cell.get("outputs", []))
        out.append(text.split())
    return out


def _unit(token: str) -> Decimal | None:
    try:
        d = Decimal(token.rstrip("%"))
    except InvalidOperation:
        return None
    return Decimal(1).scaleb(d.as_tuple().exponent) if d.is_finite() else None


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    if not (_NUMBER.match(a) and _NUMBER.match(b)) or a.endswith("%") != b.endswith("%"):
        return False
    ua, ub = _unit(a), _unit(b)
    if ua is None or ub is None:
        return False
    return abs(Decimal(a.rstrip("%")) - Decimal(b.rstrip("%"))) <= max(ua, ub) * Decimal("1.000001")


def compare_notebooks(stored: Any, fresh: Any) -> list[str]:
    """One line per code cell whose text outputs differ (its number, counting code cells from 1, and the first
    differing tokens); empty when the stored notebook prints what a fresh run prints."""
    a, b = cell_texts(stored), cell_texts(fresh)
    if len(a) != len(b):
        return [f"{len(a)} code cells stored, {len(b)} run"]
    problems = []
    for i, (x, y) in enumerate(zip(a, b), start=1):
        if len(x) == len(y) and all(_same(p, q) for p, q in zip(x, y)):
            continue
        k = next((j for j, (p, q) in enumerate(zip(x, y)) if not _same(p, q)), min(len(x), len(y)))
        problems.append(f"code cell {i}: stored {' '.join(x[max(0, k - 3):k + 4])!r} ... but a fresh run prints "
                        f"{' '.join(y[max(0, k - 3):k + 4])!r} ...")
    return problems
