"""``lostmid series --models A,B,C``: the options are
:class:`~lostmid.pretrained.series.config.SeriesConfig`'s fields."""

from __future__ import annotations

from typing import Any

from lostmid.capabilities import capability
from lostmid.cli.options import (
    Flag,
    comma_ints,
    comma_names,
    command,
    console,
    options,
    parsed,
    run_options,
)
from lostmid.pretrained.series.config import HELP, SeriesConfig

FLAGS = {
    "models": Flag(parse=comma_names),
    "steps": Flag(parse=comma_ints("--steps")),
    "kinds": Flag(parse=comma_names),
}


def _run(*, out: Any, overwrite: bool, **fields: Any) -> None:
    from lostmid.pretrained.series.run import run_series

    config = SeriesConfig(**parsed(fields, FLAGS))
    run_series(config, out=out, overwrite=overwrite, console=console)


COMMAND = command(
    "series",
    capability("series").summary,
    [*options(SeriesConfig, HELP, flags=FLAGS), *run_options("series", HELP["overwrite"])],
    _run,
)
