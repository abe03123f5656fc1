"""Every markdown table of the site must render as an HTML table: a mkdocs hook and a checker.

A markdown table whose rows do not split into the header's number of cells (a bare ``|`` inside a cell, such as
a header ``smallest |bias|``; escape it as ``\\|``) is not a table to Python-Markdown: it is printed as a
paragraph of raw ``| a | b |`` text, and ``mkdocs build --strict`` passes anyway. Registered in ``mkdocs.yml``
under ``hooks:``, this module logs a warning for each such paragraph, so the strict build fails; the test
``tests/test_docs_tables.py`` builds the site and runs :func:`raw_tables` on every page.
"""

from __future__ import annotations

import logging
import re
from html.parser import HTMLParser

__all__ = ["raw_tables", "on_post_page"]

#: A markdown table's delimiter row: ``|---|:---:|`` or ``--- | ---`` (two cells at least).
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$")
#: A markdown table row that reached the page as text: starts and ends with a pipe, one inside.
_ROW = re.compile(r"^\s*\|.*\|.*\|\s*$")

log = logging.getLogger("mkdocs.plugins.check_tables")


class _Paragraphs(HTMLParser):
    """The text of every <p> (and <li>, <td>) outside <pre>/<code>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self._open: list[list[str]] = []
        self._code = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in ("pre", "code"):
            self._code += 1
        elif tag in ("p", "li", "td"):
            self._open.append([])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("pre", "code"):
            self._code = max(self._code - 1, 0)
        elif tag in ("p", "li", "td") and self._open:
            self.blocks.append("".join(self._open.pop()))

    def handle_data(self, data: str) -> None:
        if self._open and not self._code:
            self._open[-1].append(data)


def raw_tables(html: str) -> list[str]:
    """The paragraphs of a rendered page that hold a markdown table as text (empty when every table rendered)."""
    p = _Paragraphs()
    p.feed(html)
    p.close()
    bad = []
    for block in p.blocks:
        lines = block.splitlines()
        if any(_RULE.match(x) for x in lines) and any(_ROW.match(x) for x in lines):
            bad.append(next(x for x in lines if _ROW.match(x)).strip())
    return bad


def on_post_page(output: str, page, config) -> str:  # noqa: ANN001 (mkdocs hook signature)
    """mkdocs hook: warn (an error under ``--strict``) for every table that reached the page as raw text."""
    for row in raw_tables(output):
        log.warning("Doc file '%s' has a markdown table that did not render (a bare '|' in a cell? escape it as "
                    "'\\|'): %s", page.file.src_path, row[:120])
    return output
