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
    extra,
    options,
    out_option,
    overwrite_option,
    parsed,
    split_backend,
)
from lostmid.remedies.config import HELP, PANELS, RemediesConfig
from lostmid.runs.budget import SIZE_CHECK_HELP

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
        out_option("remedies", panel="Run and output"),
        overwrite_option("Recompute every stage instead of resuming.", panel="Run and output"),
        extra("no_size_check", bool, False, help=SIZE_CHECK_HELP, panel="Run and output"),
    ],
    _run,
)
