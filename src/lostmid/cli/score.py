"""``lostmid score SAMPLES``: the options are
:class:`~lostmid.behaviour.samples.ScoreConfig`'s fields."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from lostmid.behaviour.samples import HELP, ScoreConfig
from lostmid.capabilities import capability
from lostmid.cli.options import command, console, options, out_option, overwrite_option


def _run(*, out: Any, overwrite: bool, **fields: Any) -> None:
    from lostmid.behaviour.samples import run_score

    run_score(ScoreConfig(**fields), out=out, overwrite=overwrite, console=console)


SAMPLES = inspect.Parameter(
    "samples",
    inspect.Parameter.KEYWORD_ONLY,
    annotation=Annotated[Path, typer.Argument(help=HELP["samples"], show_default=False)],
)

COMMAND = command(
    "score",
    capability("score").summary,
    [
        SAMPLES,
        *options(ScoreConfig, HELP, skip=("samples",)),
        out_option("score"),
        overwrite_option(HELP["overwrite"]),
    ],
    _run,
)
