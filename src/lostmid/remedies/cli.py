"""The ``lostmid remedies`` command, registered by :mod:`lostmid.cli`; imports no torch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from lostmid.remedies.config import HELP
from lostmid.runs.backend import Backend
from lostmid.sweep.cli import AddressOpt, BackendOpt, CpusOpt, GpusOpt

console = Console()


def remedies(
    remedies: Annotated[str | None, typer.Option("--remedies", help=HELP["remedies"])] = None,
    preset: Annotated[str, typer.Option("--preset", help=HELP["preset"])] = "retrieval-valley",
    steps: Annotated[int | None, typer.Option("--steps", help=HELP["steps"])] = None,
    seeds: Annotated[int | None, typer.Option("--seeds", help=HELP["seeds"])] = None,
    quick: Annotated[bool, typer.Option("--quick", help=HELP["quick"])] = False,
    model: Annotated[str | None, typer.Option("--model", help=HELP["model"])] = None,
    tokenizer: Annotated[str | None, typer.Option("--tokenizer", help=HELP["tokenizer"])] = None,
    key_chars: Annotated[int, typer.Option("--key-chars", help=HELP["key_chars"])] = 36,
    pairs: Annotated[int | None, typer.Option("--pairs", help=HELP["pairs"])] = None,
    alpha: Annotated[float, typer.Option("--alpha", help=HELP["alpha"])] = 0.5,
    examples: Annotated[int | None, typer.Option("--examples", help=HELP["examples"])] = None,
    backend: BackendOpt = "local",
    address: AddressOpt = None,
    cpus_per_stage: CpusOpt = 1.0,
    gpus_per_stage: GpusOpt = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for results.")] = Path(
        "results/remedies"
    ),
    seed: Annotated[int, typer.Option("--seed", help=HELP["seed"])] = 0,
    law: Annotated[str, typer.Option("--law", help=HELP["law"])] = "tilt",
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Recompute every stage instead of resuming.")
    ] = False,
) -> None:
    """Remedies for the valley against the baseline at equal budget, over seeds."""
    from lostmid.remedies.config import TRAINING_DEFAULT, RemediesConfig
    from lostmid.remedies.run import run_remedies

    config = RemediesConfig(
        remedies=TRAINING_DEFAULT if remedies is None else tuple(remedies.split(",")),
        preset=preset,
        steps=steps,
        seeds=seeds,
        quick=quick,
        model=model,
        tokenizer=tokenizer,
        key_chars=key_chars,
        pairs=pairs,
        alpha=alpha,
        examples=examples,
        seed=seed,
        law=law,
    )
    where = Backend(backend, address, cpus_per_stage, gpus_per_stage)
    run_remedies(config, out=out, overwrite=overwrite, console=console, backend=where)
