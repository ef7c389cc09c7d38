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
def measure(
    model: Annotated[
        str, typer.Option("--model", help="Preset name, local directory or cached hub id.")
    ] = "qwen2-0.5b",
    init: Annotated[str, typer.Option(help="random | pretrained | auto (weights if any).")] = (
        "random"
    ),
    length: Annotated[int, typer.Option("--length", "-L", help="Sequence length L.")] = 1024,
    samples: Annotated[int, typer.Option(help="Input samples (sequences).")] = 8,
    probes: Annotated[int, typer.Option(help="Random probe vectors per sample.")] = 4,
    no_rope: Annotated[bool, typer.Option("--no-rope", help="Rotary embeddings off.")] = False,
    no_pos_emb: Annotated[
        bool, typer.Option("--no-pos-emb", help="Learned position embeddings off.")
    ] = False,
    per_layer: Annotated[
        bool, typer.Option("--per-layer", help="Also profile the residual after each layer.")
    ] = False,
    output: Annotated[str, typer.Option(help="hidden | residual | logits | top1-prob")] = (
        "hidden"
    ),
    target: Annotated[
        int | None, typer.Option(help="Target position t, 1-indexed (default L).")
    ] = None,
    exact: Annotated[
        bool, typer.Option("--exact", help="Exact norms over all output dims (small models).")
    ] = False,
    checkpointing: Annotated[
        bool, typer.Option("--checkpointing", help="Gradient checkpointing (long contexts).")
    ] = False,
    device: Annotated[str, typer.Option(help="cpu | cuda[:N]")] = "cpu",
    dtype: Annotated[str, typer.Option(help="float32 | bfloat16 | float16 | float64")] = (
        "float32"
    ),
    corpus: Annotated[
        Path | None, typer.Option(help="Text file or directory of .txt (default: random ids).")
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Samples per forward pass.")] = 1,
    attention: Annotated[
        str, typer.Option(help="auto (eager up to L = 1024, then sdpa) | eager | sdpa")
    ] = "auto",
    strategy: Annotated[
        str, typer.Option(help="loop (one backward per probe) | vmap (one batched backward)")
    ] = "loop",
    out: OutOpt = Path("results/measure"),
    seed: SeedOpt = 0,
    overwrite: OverwriteOpt = False,
) -> None:
    """Measure the influence profile ||d h_t / d x_j||_F of a real transformer."""
    from lostmid.influence.run import MeasureConfig, run_measure

    config = MeasureConfig(
        model=model,
        init=init,
        length=length,
        samples=samples,
        probes=probes,
        seed=seed,
        no_rope=no_rope,
        no_pos_emb=no_pos_emb,
        per_layer=per_layer,
        output=output,
        target=target,
        exact=exact,
        checkpointing=checkpointing,
        device=device,
        dtype=dtype,
        corpus=corpus,
        batch_size=batch_size,
        attention=attention,
        strategy=strategy,
    )
    run_measure(config, out=out, overwrite=overwrite, console=console)


@app.command()
def train(
    preset: Annotated[
        str, typer.Option("--preset", help="Model and training preset: tiny | small | micro.")
    ] = "tiny",
    steps: Annotated[
        int | None, typer.Option("--steps", help="Optimizer steps (default: the preset's).")
    ] = None,
    corpus: Annotated[
        Path | None,
        typer.Option("--corpus", help="Text file or directory (default: Python's stdlib)."),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="JSON training config (on top of --preset).")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from --out/resume.pt.")
    ] = False,
    out: OutOpt = Path("results/train"),
    seed: Annotated[int | None, typer.Option("--seed", help="Random seed.")] = None,
    overwrite: OverwriteOpt = False,
) -> None:
    """Train a small causal LM and measure its position bias at log-spaced checkpoints."""
    from lostmid.train.config import resolve_cli_config
    from lostmid.train.run import run_training

    resolved = resolve_cli_config(preset, config, steps=steps, seed=seed, corpus=corpus)
    run_training(resolved, out, overwrite, console, resume=resume)


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


@app.command()
def reproduce(
    quick: Annotated[
        bool, typer.Option("--quick", help="Short contexts, fewer seeds: <= 3 min on 2 CPUs.")
    ] = False,
    full: Annotated[
        bool, typer.Option("--full", help="The paper's scale (L = 2048): a GPU or patience.")
    ] = False,
    models: Annotated[
        str, typer.Option(help="Comma-separated model specs (presets, directories, hub ids).")
    ] = "qwen2-0.5b,gpt2",
    length: Annotated[int | None, typer.Option(help="Override the scale's length.")] = None,
    seeds: Annotated[int | None, typer.Option(help="Override the number of seeds.")] = None,
    samples: Annotated[int | None, typer.Option(help="Override samples per seed.")] = None,
    probes: Annotated[int | None, typer.Option(help="Override probes per sample.")] = None,
    train_steps: Annotated[
        int | None, typer.Option(help="Training steps (0 skips the training section).")
    ] = None,
    train_preset: Annotated[
        str | None, typer.Option(help="Training preset (default: tiny; small for --full).")
    ] = None,
    device: Annotated[
        str, typer.Option(help="auto (cuda if available) | cpu | cuda[:N], for measurement.")
    ] = "auto",
    out: OutOpt = Path("results/reproduce"),
    seed: SeedOpt = 0,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Recompute every stage instead of resuming.")
    ] = False,
) -> None:
    """Main job: the paper's core experiments end to end -> report.html, claims.json."""
    from lostmid.reproduce import ReproduceConfig, run_reproduce

    if quick and full:
        raise UserError("choose at most one of --quick and --full")
    config = ReproduceConfig(
        scale="quick" if quick else "full" if full else "default",
        models=tuple(m.strip() for m in models.split(",") if m.strip()),
        length=length,
        seeds=seeds,
        samples=samples,
        probes=probes,
        train_steps=train_steps,
        train_preset=train_preset,
        seed=seed,
        device=device,
    )
    run_reproduce(config, out=out, overwrite=overwrite, console=console)


from lostmid.behaviour.cli import retrieve  # noqa: E402
from lostmid.remedies.cli import remedies  # noqa: E402

app.command()(retrieve)
app.command()(remedies)


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
