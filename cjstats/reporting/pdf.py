"""The report as PDF: the HTML report printed by headless Chromium (the browser lays out what the HTML says).

``cj.report(scores, output="report.pdf")`` and ``cjstats report FILE -o report.pdf`` write it. Chromium is a
system program, not a Python package: Debian/Ubuntu ``apt-get install chromium``, or pass ``browser=`` the path
of a Chromium or Chrome executable. Pages are A4 landscape (the print stylesheet of the report template), so wide
tables are not clipped.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from cjstats.exceptions import CjstatsError

__all__ = ["find_browser", "require_browser", "write_pdf", "BROWSERS"]

#: Executables looked for on PATH, in this order.
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

#: Flags for a headless print on a machine without a display or network: no sandbox (root in containers), no
#: GPU, and none of the background connections Chromium otherwise opens at start.
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--no-pdf-header-footer")


def find_browser() -> str | None:
    """The first Chromium or Chrome executable on PATH, or ``None``."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def require_browser(browser: str | None = None) -> str:
    """``browser``, or the Chromium found on PATH; one sentence saying how to get one when there is none."""
    exe = browser or find_browser()
    if exe is None:
        raise CjstatsError("Writing the report as PDF needs Chromium, which is not on PATH: install it (Debian/Ubuntu: "
                           "apt-get install chromium) or pass browser='/path/to/chromium', or write HTML "
                           "(output='report.html').")
    return exe


def write_pdf(html: str, path: Path, *, browser: str | None = None, timeout: float = 180.0) -> Path:
    """Print ``html`` to the PDF file ``path`` with headless Chromium (written atomically: a temporary file, then a
    rename in the target folder). ``path`` has been checked by the caller (folder exists, overwrite allowed)."""
    from cjstats.reporting.writing import atomic_write

    exe = require_browser(browser)
    with tempfile.TemporaryDirectory(prefix="cjstats-pdf-") as work:
        page = Path(work) / "report.html"
        page.write_text(html, encoding="utf-8")
        printed = Path(work) / "report.pdf"
        cmd = [exe, *_FLAGS, f"--user-data-dir={Path(work) / 'profile'}", f"--print-to-pdf={printed}", page.as_uri()]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except FileNotFoundError:
            raise CjstatsError(f"The browser '{exe}' could not be started; pass browser= the path of a Chromium "
                               f"executable.") from None
        except subprocess.TimeoutExpired:
            raise CjstatsError(f"Chromium did not finish printing the report within {timeout:g} s.") from None
        if not printed.is_file() or printed.stat().st_size == 0:
            last = (run.stderr or "").strip().splitlines()[-1:] or ["no message"]
            raise CjstatsError(f"Chromium did not write the PDF (exit code {run.returncode}: {last[0]}).")
        return atomic_write(path, lambda tmp: shutil.copyfile(printed, tmp))
