"""The ``lostmid sweep`` command (registered in :mod:`lostmid.cli`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from lostmid.errors import UserError
from lostmid.runs.backend import BACKEND_HELP

console = Console()

# The backend options of commands that run stages (reproduce, remedies): a Backend each.
BackendOpt = Annotated[str, typer.Option("--backend", help=BACKEND_HELP["backend"])]
AddressOpt = Annotated[str | None, typer.Option("--address", help=BACKEND_HELP["address"])]
CpusOpt = Annotated[float, typer.Option("--cpus-per-stage", help=BACKEND_HELP["cpus_per_stage"])]
GpusOpt = Annotated[
    float | None, typer.Option("--gpus-per-stage", help=BACKEND_HELP["gpus_per_stage"])
]


def sweep_command(
    task: Annotated[
        str | None, typer.Option("--task", help="measure | theory | train (retrieve: pending).")
    ] = None,
    models: Annotated[
        str | None,
        typer.Option("--models", help="Axis: comma-separated models (train: presets)."),
    ] = None,
    seeds: Annotated[
        str | None, typer.Option("--seeds", help="Axis: seeds, e.g. 0-4 or 0,2,5-7.")
    ] = None,
    lengths: Annotated[
        str | None,
        typer.Option("--lengths", help="Axis: sequence lengths, e.g. 256,512 (train: context)."),
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            help="Task option NAME=VALUE, or NAME=V1,V2 for an axis (repeatable), "
            "e.g. --param samples=4 --param alpha=0.1,0.3.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="TOML sweep file (instead of the grid flags)."),
    ] = None,
    backend: Annotated[str, typer.Option(help="local (in-process) | ray")] = "local",
    address: Annotated[
        str | None,
        typer.Option(help="Ray cluster: auto | HOST:PORT (default: a local Ray instance)."),
    ] = None,
    retries: Annotated[int, typer.Option(help="Extra tries for a unit that fails.")] = 1,
    cpus: Annotated[
        float | None, typer.Option("--cpus-per-unit", help="Ray: CPUs per unit (default 1).")
    ] = None,
    gpus: Annotated[
        float | None,
        typer.Option("--gpus-per-unit", help="Ray: GPUs per unit (default 1 on cuda, else 0)."),
    ] = None,
    memory: Annotated[
        float | None, typer.Option("--memory-per-unit", help="Ray: GiB reserved per unit.")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for results.")] = Path(
        "results/sweep"
    ),
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Recompute every unit instead of resuming.")
    ] = False,
) -> None:
    """Run a grid of units (measure, theory, train) in-process or on Ray; resumable."""
    _sweep(
        task,
        models,
        seeds,
        lengths,
        param,
        config,
        backend,
        address,
        retries,
        cpus,
        gpus,
        memory,
        out,
        overwrite,
    )


def _sweep(
    task: str | None,
    models: str | None,
    seeds: str | None,
    lengths: str | None,
    param: list[str] | None,
    config: Path | None,
    backend: str,
    address: str | None,
    retries: int,
    cpus: float | None,
    gpus: float | None,
    memory: float | None,
    out: Path,
    overwrite: bool,
) -> None:
    from lostmid.runs.jobs import Resources
    from lostmid.sweep.grid import grid_from_flags, load_sweep_file
    from lostmid.sweep.run import SweepConfig, run_sweep

    resources = Resources(cpus=cpus, gpus=gpus, memory_gb=memory)
    if config is not None:
        given = [
            f
            for f, v in (
                ("--task", task),
                ("--models", models),
                ("--seeds", seeds),
                ("--lengths", lengths),
                ("--param", param),
            )
            if v
        ]
        if given:
            raise UserError(f"{given[0]} and --config exclude each other; put it in the file")
        grids = [replace(g, resources=resources.over(g.resources)) for g in load_sweep_file(config)]
    else:
        grids = [
            grid_from_flags(
                task,
                models=models,
                seeds=seeds,
                lengths=lengths,
                params=param or (),
                resources=resources,
            )
        ]
    sweep = SweepConfig(grids=tuple(grids), backend=backend, address=address, retries=retries)
    result = run_sweep(sweep, out=out, overwrite=overwrite, console=console)
    if result.failed:
        Console(stderr=True).print(
            f"[bold red]{len(result.failed)} of {len(result.units)} units failed[/]; "
            f"errors in {out / 'sweep.json'}; rerun the same command to retry them",
            highlight=False,
        )
        raise typer.Exit(1)
