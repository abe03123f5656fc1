"""Running the console entry point in-process, as a user's shell would (shared by the CLI test files)."""

from __future__ import annotations

import sys

from click.testing import CliRunner

from cjstats.cli import main


def run_main(args: list[str]) -> tuple[int, str, str]:
    """Run ``cjstats ARGS`` through ``cjstats.cli.main``; return (exit code, stdout, stderr)."""
    runner = CliRunner()
    with runner.isolation() as streams:
        argv, sys.argv = sys.argv, ["cjstats", *args]
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        finally:
            sys.argv = argv
        return code, streams[0].getvalue().decode(), streams[1].getvalue().decode()
