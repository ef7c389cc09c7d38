"""``lostmid ablate``: the options are :class:`~lostmid.ablate.config.AblationConfig`'s
fields."""

from __future__ import annotations

from typing import Any

from lostmid.ablate.config import ABLATE_HELP, AblationConfig, parse_rungs
from lostmid.capabilities import capability
from lostmid.checks import seed_arg
from lostmid.cli.options import Flag, command, console, options, parsed, run_options

FLAGS = {"rungs": Flag(parse=parse_rungs), "seeds": Flag(parse=seed_arg)}


def _run(*, out: Any, overwrite: bool, no_size_check: bool, **fields: Any) -> None:
    from lostmid.ablate.run import run_ablate

    config = AblationConfig(**parsed(fields, FLAGS))
    run_ablate(config, out=out, overwrite=overwrite, console=console, size_check=not no_size_check)


COMMAND = command(
    "ablate",
    capability("ablate").summary,
    [
        *options(AblationConfig, ABLATE_HELP, flags=FLAGS),
        *run_options("ablate", "Remeasure every rung instead of resuming.", size_check=True),
    ],
    _run,
)
