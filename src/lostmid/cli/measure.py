"""``lostmid measure``: the options are :class:`~lostmid.influence.config.MeasureConfig`'s
fields."""

from __future__ import annotations

from typing import Any

from lostmid.capabilities import capability
from lostmid.cli.options import Flag, command, console, options, out_option, overwrite_option
from lostmid.influence.config import HELP, MeasureConfig

FLAGS: dict[str, Flag] = {}


def _run(*, out: Any, overwrite: bool, **fields: Any) -> None:
    from lostmid.influence.run import run_measure

    run_measure(MeasureConfig(**fields), out=out, overwrite=overwrite, console=console)


COMMAND = command(
    "measure",
    capability("measure").summary,
    [*options(MeasureConfig, HELP, flags=FLAGS), out_option("measure"), overwrite_option()],
    _run,
)
