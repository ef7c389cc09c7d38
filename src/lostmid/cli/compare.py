"""``lostmid compare``: the options are :class:`~lostmid.compare.config.CompareConfig`'s
fields."""

from __future__ import annotations

from typing import Any

from lostmid.capabilities import capability
from lostmid.cli.options import Flag, command, console, options, parsed, run_options
from lostmid.compare.config import HELP, CompareConfig, parse_kernels

FLAGS = {"measured": Flag(repeat=True), "kernels": Flag(names=("--kernel",), parse=parse_kernels)}


def _run(*, out: Any, overwrite: bool, **fields: Any) -> None:
    from lostmid.compare.run import run_compare

    config = CompareConfig(**parsed(fields, FLAGS))
    run_compare(config, out=out, overwrite=overwrite, console=console)


COMMAND = command(
    "compare",
    capability("compare").summary,
    [*options(CompareConfig, HELP, flags=FLAGS), *run_options("compare")],
    _run,
)
