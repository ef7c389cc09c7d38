"""``lostmid score SAMPLES``: the options are
:class:`~lostmid.behaviour.formats.samples.ScoreConfig`'s fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lostmid.behaviour.formats.samples import HELP, ScoreConfig
from lostmid.capabilities import capability
from lostmid.cli.options import argument, command, console, options, run_options


def _run(*, out: Any, overwrite: bool, **fields: Any) -> None:
    from lostmid.behaviour.formats.samples import run_score

    run_score(ScoreConfig(**fields), out=out, overwrite=overwrite, console=console)


COMMAND = command(
    "score",
    capability("score").summary,
    [
        argument("samples", Path, HELP["samples"]),
        *options(ScoreConfig, HELP, skip=("samples",)),
        *run_options("score", HELP["overwrite"]),
    ],
    _run,
)
