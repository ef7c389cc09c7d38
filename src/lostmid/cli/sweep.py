"""``lostmid sweep``: the grid flags (or a TOML file), the backend, each unit's resources
(:class:`~lostmid.runs.jobs.Resources`' fields) and :class:`~lostmid.sweep.run.SweepConfig`'s
retries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from lostmid.capabilities import capability
from lostmid.cli.options import Flag, command, console, extra, options, run_options
from lostmid.errors import UserError
from lostmid.runs.jobs import Resources
from lostmid.sweep.run import HELP, SweepConfig

RESOURCE_FLAGS = {
    "cpus": Flag(names=("--cpus-per-job", "--cpus-per-unit")),
    "gpus": Flag(names=("--gpus-per-job", "--gpus-per-unit")),
    "memory_gb": Flag(names=("--memory-per-job", "--memory-per-unit")),
}


def _run(
    *,
    task: str | None,
    models: str | None,
    seeds: str | None,
    seed: int,
    lengths: str | None,
    param: list[str] | None,
    config: Path | None,
    out: Path,
    overwrite: bool,
    cpus: float | None,
    gpus: float | None,
    memory_gb: float | None,
    **sweep: Any,
) -> None:
    from lostmid.sweep.grid import grid_from_flags, load_sweep_file
    from lostmid.sweep.run import run_sweep

    resources = Resources(cpus=cpus, gpus=gpus, memory_gb=memory_gb)
    if config is not None:
        flags: tuple[tuple[str, object], ...] = (
            ("--task", task),
            ("--models", models),
            ("--seeds", seeds),
        )
        flags += (("--lengths", lengths), ("--param", param))
        given = [flag for flag, value in flags if value]
        if given:
            raise UserError(f"{given[0]} and --config exclude each other; put it in the file")
        grids = [replace(g, resources=resources.over(g.resources)) for g in load_sweep_file(config)]
    else:
        grid = grid_from_flags(
            task,
            models=models,
            seeds=seeds,
            seed=seed,
            lengths=lengths,
            params=param or (),
            resources=resources,
        )
        grids = [grid]
    result = run_sweep(
        SweepConfig(grids=tuple(grids), **sweep), out=out, overwrite=overwrite, console=console
    )
    if result.failed:
        Console(stderr=True, markup=False).print(
            Text.assemble(
                (f"{len(result.failed)} of {len(result.units)} units failed", "bold red"),
                f"; errors in {out / 'sweep.json'}; rerun the same command to retry them",
            ),
            highlight=False,
        )
        raise SystemExit(1)  # a failed unit is not a usage error: exit 1 (docs: sweep)


COMMAND = command(
    "sweep",
    capability("sweep").summary,
    [
        extra("task", str | None, None, help=HELP["task"]),
        extra("models", str | None, None, help=HELP["models"]),
        extra("seeds", str | None, None, help=HELP["seeds"]),
        extra("seed", int, 0, help=HELP["seed"]),
        extra("lengths", str | None, None, help=HELP["lengths"]),
        extra("param", list[str] | None, None, help=HELP["param"]),
        extra("config", Path | None, None, help=HELP["config"]),
        *options(SweepConfig, HELP, skip=("grids",)),
        *options(Resources, HELP, flags=RESOURCE_FLAGS),
        *run_options("sweep", "Recompute every unit instead of resuming."),
    ],
    _run,
)
