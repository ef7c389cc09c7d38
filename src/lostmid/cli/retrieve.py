"""``lostmid retrieve``: the options are
:class:`~lostmid.behaviour.retrieve.config.RetrieveConfig`'s fields."""

from __future__ import annotations

from typing import Any

from lostmid.behaviour.retrieve.config import HELP, OUTPUT_PANEL, PANELS, RetrieveConfig
from lostmid.capabilities import capability
from lostmid.cli.options import Flag, comma_ints, command, console, options, parsed, run_options


def _band(text: str) -> tuple[float, float]:
    """``"0.3,0.8"`` -> (0.3, 0.8); anything else is one line."""
    from lostmid.errors import UserError

    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise UserError(
            f"--band must be two numbers LOW,HIGH, e.g. 0.3,0.8; got {text!r}"
        ) from None
    return low, high


FLAGS = {
    "band": Flag(parse=_band),
    "knob_values": Flag(parse=comma_ints("--knob-values")),
    "gold_index": Flag(parse=comma_ints("--gold-index")),
    "depth": Flag(parse=comma_ints("--depth")),
    "lengths": Flag(parse=comma_ints("--lengths")),
}


def _run(*, out: Any, overwrite: bool, no_size_check: bool, **fields: Any) -> None:
    from lostmid.behaviour.retrieve.run import run_retrieve

    config = RetrieveConfig(**parsed(fields, FLAGS))
    run_retrieve(
        config, out=out, overwrite=overwrite, console=console, size_check=not no_size_check
    )


COMMAND = command(
    "retrieve",
    capability("retrieve").summary,
    [
        *options(RetrieveConfig, HELP, flags=FLAGS, panels=PANELS),
        *run_options("retrieve", panel=OUTPUT_PANEL, size_check=True),
    ],
    _run,
)
