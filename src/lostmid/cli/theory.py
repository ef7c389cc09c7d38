"""``lostmid theory``: the options are :class:`~lostmid.theory.run.TheoryConfig`'s fields."""

from __future__ import annotations

from typing import Any

from lostmid.capabilities import capability
from lostmid.cli.options import Flag, command, console, options, run_options
from lostmid.theory.run import HELP, TheoryConfig

FLAGS = {
    "layers": Flag(names=("--layers", "-H")),
    "alpha": Flag(names=("--alpha", "-a")),
}


def _run(*, out: Any, overwrite: bool, **fields: Any) -> None:
    from lostmid.theory.run import run_theory

    run_theory(TheoryConfig(**fields), out=out, overwrite=overwrite, console=console)


COMMAND = command(
    "theory",
    capability("theory").summary,
    [*options(TheoryConfig, HELP, flags=FLAGS), *run_options("theory")],
    _run,
)
