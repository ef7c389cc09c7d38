"""``lostmid remedies``: the options are
:class:`~lostmid.remedies.config.RemediesConfig`'s fields and the backend's."""

from __future__ import annotations

from typing import Any

from lostmid.capabilities import capability
from lostmid.checks import seed_arg
from lostmid.cli.options import (
    Flag,
    backend_options,
    comma_names,
    command,
    console,
    options,
    parsed,
    run_options,
    split_backend,
)
from lostmid.remedies.config import HELP, PANELS, RemediesConfig

FLAGS = {"remedies": Flag(parse=comma_names), "seeds": Flag(parse=seed_arg)}


def _run(*, out: Any, overwrite: bool, no_size_check: bool, **values: Any) -> None:
    from lostmid.remedies.run import run_remedies

    fields, backend = split_backend(values)
    config = RemediesConfig(**parsed(fields, FLAGS))
    run_remedies(
        config,
        out=out,
        overwrite=overwrite,
        console=console,
        backend=backend,
        size_check=not no_size_check,
    )


COMMAND = command(
    "remedies",
    capability("remedies").summary,
    [
        *options(RemediesConfig, HELP, flags=FLAGS, panels=PANELS),
        *backend_options(),
        *run_options(
            "remedies",
            "Recompute every stage instead of resuming.",
            panel="Run and output",
            size_check=True,
        ),
    ],
    _run,
)
