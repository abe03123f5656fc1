"""The ``cjstats`` command line. Each subcommand lives in its own module and mirrors one library function.

Results go to stdout, messages to stderr. A user error ends with exit code 1 and one sentence; an internal error
(a bug in cjstats) with exit code 2 and one sentence naming the exception; a traceback appears only with
``CJSTATS_DEBUG=1``.
"""

from __future__ import annotations

import click

from cjstats.cli._app import accept_dataset, run_group

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cjstats")
def cli() -> None:
    """Variance components, judge-bias intervals and CyclicJudge designs for LLM-judge evaluations."""


def _register() -> None:
    from cjstats.cli.allocate import allocate
    from cjstats.cli.decompose import decompose
    from cjstats.cli.demo import demo
    from cjstats.cli.humans import humans
    from cjstats.cli.judges import judges
    from cjstats.cli.plan import plan
    from cjstats.cli.report import report
    from cjstats.cli.variance import variance

    for cmd in (decompose, judges, demo, variance, allocate, plan, report):
        cli.add_command(cmd)
    cli.add_command(humans)

    from cjstats.cli.compare import compare  # issue 10

    cli.add_command(compare)
    from cjstats.cli.gstudy import gstudy  # issue 35: G and D studies of the models' ranking

    cli.add_command(gstudy)
    from cjstats.cli.study import study

    cli.add_command(study)
    from cjstats.cli.datasets import datasets

    cli.add_command(datasets)
    from cjstats.cli.doctor import doctor

    cli.add_command(doctor)
    from cjstats.cli.monitor import monitor

    cli.add_command(monitor)
    from cjstats.cli.drift import drift; cli.add_command(drift)  # noqa: E702  issue 23: cjstats drift BEFORE AFTER
    for cmd in cli.commands.values():   # every data subcommand: FILE or --dataset NAME
        accept_dataset(cmd)


_register()


def main() -> None:
    run_group(cli)
