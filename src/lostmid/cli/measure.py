"""``lostmid measure``: the options are :class:`~lostmid.influence.config.MeasureConfig`'s
fields."""

from __future__ import annotations

from typing import Any

from lostmid.capabilities import capability
from lostmid.cli.options import Flag, command, console, options, run_options
from lostmid.influence.config import HELP, PANELS, MeasureConfig

FLAGS: dict[str, Flag] = {}


def _run(*, out: Any, overwrite: bool, **fields: Any) -> None:
    from lostmid.influence.run import run_measure

    run_measure(MeasureConfig(**fields), out=out, overwrite=overwrite, console=console)


COMMAND = command(
    "measure",
    capability("measure").summary,
    [
        *options(MeasureConfig, HELP, flags=FLAGS, panels=PANELS),
        *run_options("measure", panel="Run and output"),
    ],
    _run,
)
