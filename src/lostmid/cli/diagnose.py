"""``lostmid diagnose MODEL``: the trained-model studies on one model
(:class:`~lostmid.reproduce.diagnose.DiagnoseConfig`'s fields, the backend's)."""

from __future__ import annotations

from typing import Any

from lostmid.capabilities import capability
from lostmid.cli.options import (
    argument,
    backend_options,
    command,
    console,
    options,
    run_options,
    split_backend,
)
from lostmid.reproduce.diagnose import HELP, DiagnoseConfig


def _run(*, out: Any, overwrite: bool, **values: Any) -> None:
    from lostmid.reproduce.diagnose import run_diagnose

    fields, backend = split_backend(values)
    config = DiagnoseConfig(**fields)
    run_diagnose(config, out=out, overwrite=overwrite, console=console, backend=backend)


COMMAND = command(
    "diagnose",
    capability("diagnose").summary,
    [
        argument("model", str, HELP["model"]),
        *options(DiagnoseConfig, HELP, skip=("model",)),
        *backend_options(),
        *run_options("diagnose", HELP["overwrite"]),
    ],
    _run,
)
