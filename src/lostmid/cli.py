"""The ``lostmid`` command line: one entry point, one subcommand per capability.

Thin by design: each command parses options, calls one ``run_*`` function of a
capability package, and prints its summary. A :class:`UserError` becomes one line on
stderr and exit code 2, with no traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from lostmid.errors import UserError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="lostmid: compute, measure and compare the position bias of transformers.",
)
console = Console()


@app.callback()
def _root() -> None:
    """lostmid: compute, measure and compare the position bias of transformers."""


err_console = Console(stderr=True)

OutOpt = Annotated[Path, typer.Option("--out", help="Directory for results.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Random seed.")]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", help="Replace existing results in --out.")
]


@app.command()
def theory(
    layers: Annotated[int, typer.Option("--layers", "-H", help="Depth H (layers).")] = 24,
    length: Annotated[int, typer.Option("--length", "-L", help="Sequence length L.")] = 2048,
    alpha: Annotated[
        float, typer.Option("--alpha", "-a", help="Residual strength a in [0, 1].")
    ] = 0.1,
    mask: Annotated[
        str, typer.Option(help="causal | bidirectional | sliding:W | prefix:P")
    ] = "causal",
    kernel: Annotated[str, typer.Option(help="rollout | jacobian")] = "rollout",
    alpha_schedule: Annotated[
        str | None,
        typer.Option(help="constant | power:BETA (a_l = a/(l+1)^BETA) | list:a1,a2,..."),
    ] = None,
    target: Annotated[
        int | None, typer.Option(help="Target position t, 1-indexed (default L).")
    ] = None,
    log_domain: Annotated[
        str, typer.Option(help="auto | on | off: compute in the log domain.")
    ] = "auto",
    out: OutOpt = Path("results/theory"),
    seed: SeedOpt = 0,
    overwrite: OverwriteOpt = False,
) -> None:
    """Exact theory: the influence of every position on the target after H layers."""
    from lostmid.theory.run import TheoryConfig, run_theory

    config = TheoryConfig(
        layers=layers,
        length=length,
        alpha=alpha,
        mask=mask,
        kernel=kernel,
        alpha_schedule=alpha_schedule,
        target=target,
        log_domain=log_domain,
    )
    run_theory(config, out=out, overwrite=overwrite, seed=seed, console=console)


# Further subcommands (measure, compare, reproduce, train) register below.


@app.command()
def compare(
    measured: Annotated[
        Path, typer.Option("--measured", help="measure.json written by lostmid measure.")
    ],
    theory: Annotated[
        Path | None, typer.Option("--theory", help="theory.json written by lostmid theory.")
    ] = None,
    predict: Annotated[
        bool, typer.Option("--predict", help="Also predict the theory from measured a_l.")
    ] = False,
    kernel: Annotated[str, typer.Option(help="rollout | jacobian | both")] = "both",
    out: OutOpt = Path("results/compare"),
    seed: SeedOpt = 0,
    overwrite: OverwriteOpt = False,
) -> None:
    """Theory (given, predicted, fitted) and naive baselines against a measured profile."""
    from lostmid.compare.run import run_compare

    run_compare(
        theory_path=theory,
        measured_path=measured,
        predict=predict,
        kernel=kernel,
        out=out,
        overwrite=overwrite,
        console=console,
        seed=seed,
    )


def main() -> None:
    """Entry point: run the app; a :class:`UserError` becomes one line and exit code 2.

    Usage errors (unknown option, bad type) are click's own: also exit code 2.
    """
    try:
        app()
    except UserError as err:
        err_console.print(f"[bold red]error:[/] {err}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
