"""The ``lostmid`` command line: one entry point, one subcommand per capability.

Thin by design: each command's options are made from its config dataclass and that
config's ``HELP`` (:mod:`lostmid.cli.options`), so a default and a help text live in one
place; the command builds the config (which checks the values), calls the capability's
``run_X(config, out=, overwrite=, console=)`` and prints its summary. A
:class:`~lostmid.errors.UserError` becomes one line on stderr and exit code 2, with no
traceback; a sweep with a failed unit exits 1.

Each command module imports only its config at start-up; the run functions load torch
and transformers (seconds) and are imported when the command runs, so ``lostmid
--help`` answers at once.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape

from lostmid.cli import (
    ablate,
    compare,
    measure,
    remedies,
    reproduce,
    retrieve,
    sweep,
    theory,
    train,
)
from lostmid.errors import UserError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="lostmid: compute, measure and compare the position bias of transformers.",
)
# one module per command, each defining COMMAND; registered in the order of --help
COMMANDS = (theory, measure, train, compare, reproduce, ablate, sweep, retrieve, remedies)
for _module in COMMANDS:
    app.command(_module.__name__.rsplit(".", 1)[1])(_module.COMMAND)

err_console = Console(stderr=True)


def main() -> None:
    """Entry point: run the app; a :class:`UserError` becomes one line and exit code 2.

    Usage errors (unknown option, bad type) are click's own: also exit code 2.
    """
    try:
        app()
    except UserError as err:
        # escaped: a message may hold brackets (``pip install lostmid[cluster]``)
        err_console.print(
            f"[bold red]error:[/] {escape(str(err))}", highlight=False, soft_wrap=True
        )
        sys.exit(2)


if __name__ == "__main__":
    main()
