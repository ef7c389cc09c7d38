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

import importlib
import os
import sys
from typing import Annotated

import click
import typer
from rich.console import Console
from rich.text import Text
from typer import exceptions as typer_exceptions

from lostmid.capabilities import commands
from lostmid.errors import UserError
from lostmid.files import disk_full_error, is_disk_full
from lostmid.runs.lock import HELP as LOCK_HELP
from lostmid.runs.lock import WAIT_ENV, LockConfig

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="lostmid: compute, measure and compare the position bias of transformers.",
)


@app.callback()
def _root(
    wait: Annotated[float, typer.Option("--wait", help=LOCK_HELP["wait"])] = 0.0,
) -> None:
    """lostmid: compute, measure and compare the position bias of transformers."""
    if wait:  # read by every run's lock (lostmid.runs.lock), Ray workers included
        os.environ[WAIT_ENV] = str(LockConfig(wait).wait)


# one module per command (lostmid.cli.NAME, defining COMMAND), in the registry's order
COMMANDS = tuple(importlib.import_module(f"lostmid.cli.{name}") for name in commands())
for _module in COMMANDS:
    app.command(_module.__name__.rsplit(".", 1)[1])(_module.COMMAND)
# after them, the commands that run nothing: what there is (lostmid.listing)
UTILITIES = ("list",)
for _name in UTILITIES:
    app.command(_name)(importlib.import_module(f"lostmid.cli.{_name}").COMMAND)

err_console = Console(stderr=True, markup=False)  # a path with [brackets] is text
# typer's own copy of click's exceptions (newer typer) and click's (older typer)
_USAGE_ERRORS: tuple[type[Exception], ...] = (
    click.exceptions.ClickException,
    *([typer_exceptions.TyperException] if hasattr(typer_exceptions, "TyperException") else []),
)
_ABORTS = (click.exceptions.Abort, typer_exceptions.Abort)


def main() -> None:
    """Entry point: run the app; a :class:`UserError` becomes one line and exit code 2.

    So do the accidents of the machine rather than of the code: a full disk or quota
    anywhere (:func:`lostmid.files.is_disk_full`; the atomic writers leave nothing
    half-written) and an allocation larger than the memory left (after the size checks
    of :mod:`lostmid.runs.budget` let a run start), and a ``PermissionError`` (a folder
    under ``--out`` or an input the user may not read or write), naming the path.
    Ctrl-C is exit code 130 (typer's; the long runs say first what they saved and how
    to resume). Usage errors (unknown option, bad type, unreadable path, an empty
    ``--out``) are click's, made one line: also exit code 2.
    Hub ids resolve offline only: ``HF_HUB_OFFLINE=1`` always (a ``0`` or an empty value
    in the caller's environment included), since lostmid downloads nothing at run time.
    """
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character
        if hasattr(stream, "reconfigure"):  # (PYTHONIOENCODING=ascii) gets it escaped
            stream.reconfigure(errors="backslashreplace")
    wait = os.environ.get(WAIT_ENV)
    # nothing is fetched at run time: a hub id resolves from the local cache only
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)  # 130 after Ctrl-C
    except _USAGE_ERRORS as err:  # click's usage box, as one line
        message = str(getattr(err, "format_message", err.__str__)())
        if not message.strip():  # no arguments: the help was the answer
            sys.exit(getattr(err, "exit_code", 2))
        ctx = getattr(err, "ctx", None)
        hint = f"; see {ctx.command_path} --help" if ctx is not None else ""
        _fail(f"{' '.join(message.split()).rstrip('.')}{hint}")
    except _ABORTS as err:
        cause = err.__cause__ or err.__context__
        _fail(
            "an input ended before its end (EOFError: "
            f"{' '.join(str(cause).split())[:160] or 'a truncated file?'}); check the files "
            "given to this command"
        )
    except UserError as err:
        _fail(str(err))
    except MemoryError as err:
        _fail(
            f"out of memory ({type(err).__name__}: {' '.join(str(err).split())[:160]}); "
            "make the run smaller (--length, --samples, --batch-size...); finished stages "
            "are kept, rerun the same command to resume"
        )
    except PermissionError as err:  # a folder or file the user may not read or write
        where = err.filename or "a file this command needs"
        _fail(
            f"{where}: permission denied ({err.strerror or err}); check its permissions, or "
            "give a path you can read and write (finished results are kept)"
        )
    except OSError as err:
        if not is_disk_full(err):
            raise
        _fail(str(disk_full_error(getattr(err, "filename", None), err)))
    finally:  # --wait is this invocation's (main may run again in one process)
        if wait is None:
            os.environ.pop(WAIT_ENV, None)
        else:
            os.environ[WAIT_ENV] = wait


def _fail(message: str) -> None:
    """One line on stderr (escaped: a message may hold brackets, ``lostmid[cluster]``),
    then exit code 2."""
    err_console.print(
        Text.assemble(("error:", "bold red"), " ", message), highlight=False, soft_wrap=True
    )
    sys.exit(2)


if __name__ == "__main__":
    main()
