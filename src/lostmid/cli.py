"""The ``lostmid`` command line: one entry point, one subcommand per capability.

Thin by design: each command parses options, builds the capability's config (which
checks them), calls its ``run_*(config, out=, overwrite=, console=)`` and prints its
summary. The help of each option is the ``HELP`` entry next to its config, so the CLI
and the config's docs say the same. A :class:`UserError` becomes one line on stderr and
exit code 2, with no traceback.

The run functions are imported inside the commands: they load torch and transformers
(seconds), and ``lostmid --help`` must not wait for them. The config modules imported
here are light.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from lostmid.ablate.config import ABLATE_HELP, RUNGS, AblationConfig
from lostmid.behaviour.cli import RETRIEVAL_HELP, retrieve
from lostmid.compare.options import OPTION_DEFAULTS as COMPARE_DEFAULTS
from lostmid.compare.options import OPTION_HELP as COMPARE_HELP
from lostmid.errors import UserError
from lostmid.influence.config import HELP as MEASURE_HELP
from lostmid.influence.config import MeasureConfig
from lostmid.remedies.cli import remedies
from lostmid.reproduce.config import HELP as REPRODUCE_HELP
from lostmid.reproduce.config import ReproduceConfig, parse_models
from lostmid.runs.backend import Backend
from lostmid.sweep.cli import AddressOpt, BackendOpt, CpusOpt, GpusOpt, sweep_command
from lostmid.theory.run import HELP as THEORY_HELP
from lostmid.theory.run import TheoryConfig
from lostmid.train.config import HELP as TRAIN_HELP
from lostmid.train.config import resolve_cli_config

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
    layers: Annotated[int, typer.Option("--layers", "-H", help=THEORY_HELP["layers"])] = 24,
    length: Annotated[int, typer.Option("--length", "-L", help=THEORY_HELP["length"])] = 2048,
    alpha: Annotated[float, typer.Option("--alpha", "-a", help=THEORY_HELP["alpha"])] = 0.1,
    mask: Annotated[str, typer.Option(help=THEORY_HELP["mask"])] = "causal",
    kernel: Annotated[str, typer.Option(help=THEORY_HELP["kernel"])] = "rollout",
    alpha_schedule: Annotated[str | None, typer.Option(help=THEORY_HELP["alpha_schedule"])] = None,
    target: Annotated[int | None, typer.Option(help=THEORY_HELP["target"])] = None,
    log_domain: Annotated[str, typer.Option(help=THEORY_HELP["log_domain"])] = "auto",
    out: OutOpt = Path("results/theory"),
    seed: Annotated[int, typer.Option("--seed", help=THEORY_HELP["seed"])] = 0,
    overwrite: OverwriteOpt = False,
) -> None:
    """Exact theory: the influence of every position on the target after H layers."""
    from lostmid.theory.run import run_theory

    config = TheoryConfig(
        layers=layers,
        length=length,
        alpha=alpha,
        mask=mask,
        kernel=kernel,
        alpha_schedule=alpha_schedule,
        target=target,
        log_domain=log_domain,
        seed=seed,
    )
    run_theory(config, out=out, overwrite=overwrite, console=console)


# Further subcommands (measure, compare, reproduce, train) register below.


@app.command()
def measure(
    model: Annotated[str, typer.Option("--model", help=MEASURE_HELP["model"])] = "qwen2-0.5b",
    init: Annotated[str, typer.Option(help=MEASURE_HELP["init"])] = "random",
    length: Annotated[int, typer.Option("--length", "-L", help=MEASURE_HELP["length"])] = 1024,
    samples: Annotated[int, typer.Option(help=MEASURE_HELP["samples"])] = 8,
    probes: Annotated[int, typer.Option(help=MEASURE_HELP["probes"])] = 4,
    no_rope: Annotated[bool, typer.Option("--no-rope", help=MEASURE_HELP["no_rope"])] = False,
    no_pos_emb: Annotated[
        bool, typer.Option("--no-pos-emb", help=MEASURE_HELP["no_pos_emb"])
    ] = False,
    per_layer: Annotated[bool, typer.Option("--per-layer", help=MEASURE_HELP["per_layer"])] = False,
    output: Annotated[str, typer.Option(help=MEASURE_HELP["output"])] = "hidden",
    target: Annotated[int | None, typer.Option(help=MEASURE_HELP["target"])] = None,
    exact: Annotated[bool, typer.Option("--exact", help=MEASURE_HELP["exact"])] = False,
    checkpointing: Annotated[
        bool, typer.Option("--checkpointing", help=MEASURE_HELP["checkpointing"])
    ] = False,
    device: Annotated[str, typer.Option(help=MEASURE_HELP["device"])] = "cpu",
    dtype: Annotated[str, typer.Option(help=MEASURE_HELP["dtype"])] = "float32",
    corpus: Annotated[Path | None, typer.Option(help=MEASURE_HELP["corpus"])] = None,
    batch_size: Annotated[int, typer.Option(help=MEASURE_HELP["batch_size"])] = 1,
    attention: Annotated[str, typer.Option(help=MEASURE_HELP["attention"])] = "auto",
    strategy: Annotated[str, typer.Option(help=MEASURE_HELP["strategy"])] = "loop",
    device_map: Annotated[str | None, typer.Option(help=MEASURE_HELP["device_map"])] = None,
    no_alibi: Annotated[bool, typer.Option("--no-alibi", help=MEASURE_HELP["no_alibi"])] = False,
    strength: Annotated[str, typer.Option(help=MEASURE_HELP["strength"])] = "jacobian",
    per_position_gains: Annotated[
        str, typer.Option(help=MEASURE_HELP["per_position_gains"])
    ] = "auto",
    gain_directions: Annotated[int, typer.Option(help=MEASURE_HELP["gain_directions"])] = 4,
    compile: Annotated[bool, typer.Option("--compile", help=MEASURE_HELP["compile"])] = False,
    out: OutOpt = Path("results/measure"),
    seed: Annotated[int, typer.Option("--seed", help=MEASURE_HELP["seed"])] = 0,
    overwrite: OverwriteOpt = False,
) -> None:
    """Measure the influence profile ||d h_t / d x_j||_F of a real transformer."""
    # imported here, not at the top: keeps lostmid --help fast (module docstring)
    from lostmid.influence.run import run_measure

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
        device_map=device_map,
        no_alibi=no_alibi,
        strength=strength,
        per_position_gains=per_position_gains,
        gain_directions=gain_directions,
        compile=compile,
    )
    run_measure(config, out=out, overwrite=overwrite, console=console)


@app.command()
def train(
    preset: Annotated[str, typer.Option("--preset", help=TRAIN_HELP["preset"])] = "tiny",
    steps: Annotated[int | None, typer.Option("--steps", help=TRAIN_HELP["steps"])] = None,
    corpus: Annotated[Path | None, typer.Option("--corpus", help=TRAIN_HELP["corpus"])] = None,
    config: Annotated[Path | None, typer.Option("--config", help=TRAIN_HELP["config"])] = None,
    resume: Annotated[bool, typer.Option("--resume", help=RETRIEVAL_HELP["resume"])] = False,
    task: Annotated[str | None, typer.Option("--task", help=RETRIEVAL_HELP["task"])] = None,
    pairs: Annotated[int | None, typer.Option("--pairs", help=RETRIEVAL_HELP["pairs"])] = None,
    key_chars: Annotated[
        int | None, typer.Option("--key-chars", help=RETRIEVAL_HELP["key_chars"])
    ] = None,
    style: Annotated[str | None, typer.Option("--style", help=RETRIEVAL_HELP["style"])] = None,
    gold: Annotated[str | None, typer.Option("--gold", help=RETRIEVAL_HELP["gold"])] = None,
    mix: Annotated[float | None, typer.Option("--mix", help=RETRIEVAL_HELP["mix"])] = None,
    eval_every: Annotated[
        int | None, typer.Option("--eval-every", help=RETRIEVAL_HELP["eval_every"])
    ] = None,
    no_rope: Annotated[bool, typer.Option("--no-rope", help=RETRIEVAL_HELP["no_rope"])] = False,
    signal_examples: Annotated[
        int | None, typer.Option("--signal-examples", help=RETRIEVAL_HELP["signal_examples"])
    ] = None,
    out: OutOpt = Path("results/train"),
    seed: Annotated[int | None, typer.Option("--seed", help=TRAIN_HELP["seed"])] = None,
    overwrite: OverwriteOpt = False,
) -> None:
    """Train a small causal LM and measure its position bias at log-spaced checkpoints.

    With --task kv|mqar the model learns retrieval instead, evaluated by gold position.
    """
    # imported here, not at the top: keeps lostmid --help fast (module docstring)
    if task is None:
        from lostmid.train.run import run_training

        retrieval_only = {"--pairs": pairs, "--key-chars": key_chars, "--style": style}
        retrieval_only |= {"--gold": gold, "--mix": mix, "--eval-every": eval_every}
        retrieval_only |= {"--no-rope": no_rope or None, "--signal-examples": signal_examples}
        given = [flag for flag, value in retrieval_only.items() if value is not None]
        if given:
            raise UserError(f"{', '.join(given)} need --task kv|mqar (retrieval training)")
        resolved = resolve_cli_config(preset, config, steps=steps, seed=seed, corpus=corpus)
        run_training(resolved, out=out, overwrite=overwrite, console=console, resume=resume)
        return
    from lostmid.behaviour.training import resolve_retrieval_config, train_retrieval

    if corpus is not None or config is not None:
        raise UserError(
            "--corpus and --config are for language-model training; drop them with --task"
        )
    if preset == "tiny":  # the LM default: take the task's own preset instead
        preset = "mqar-tiny" if task == "mqar" else "retrieval-tiny"
    retrieval = resolve_retrieval_config(
        preset,
        task=task,
        pairs=pairs,
        key_chars=key_chars,
        style=style,
        gold=gold,
        mix=mix,
        steps=steps,
        seed=seed,
        eval_every=eval_every,
        no_rope=no_rope or None,
        signal_examples=signal_examples,
    )
    train_retrieval(retrieval, out=out, overwrite=overwrite, console=console, resume=resume)


@app.command()
def compare(
    measured: Annotated[list[Path], typer.Option("--measured", help=COMPARE_HELP["measured"])],
    theory: Annotated[Path | None, typer.Option("--theory", help=COMPARE_HELP["theory"])] = None,
    predict: Annotated[bool, typer.Option("--predict", help=COMPARE_HELP["predict"])] = False,
    kernel: Annotated[
        str, typer.Option("--kernel", help=COMPARE_HELP["kernel"])
    ] = COMPARE_DEFAULTS["kernel"],
    fit_metric: Annotated[
        str, typer.Option("--fit-metric", help=COMPARE_HELP["fit_metric"])
    ] = COMPARE_DEFAULTS["fit_metric"],
    spike: Annotated[str, typer.Option("--spike", help=COMPARE_HELP["spike"])] = COMPARE_DEFAULTS[
        "spike"
    ],
    bins: Annotated[int, typer.Option("--bins", help=COMPARE_HELP["bins"])] = COMPARE_DEFAULTS[
        "bins"
    ],
    out: OutOpt = Path("results/compare"),
    seed: Annotated[
        int, typer.Option("--seed", help="Random seed (recorded; the comparison draws nothing).")
    ] = 0,
    overwrite: OverwriteOpt = False,
) -> None:
    """Theory (given, predicted, fitted) and naive baselines against measured profiles."""
    from lostmid.compare.run import CompareConfig, run_compare

    config = CompareConfig(
        measured=tuple(measured),
        theory=theory,
        predict=predict,
        kernels=kernel,
        fit_metric=fit_metric,
        spike=spike,
        bins=bins,
        seed=seed,
    )
    run_compare(config, out=out, overwrite=overwrite, console=console)


@app.command()
def reproduce(
    quick: Annotated[bool, typer.Option("--quick", help=REPRODUCE_HELP["quick"])] = False,
    full: Annotated[bool, typer.Option("--full", help=REPRODUCE_HELP["full"])] = False,
    models: Annotated[str, typer.Option(help=REPRODUCE_HELP["models"])] = "qwen2-0.5b,gpt2",
    length: Annotated[int | None, typer.Option(help=REPRODUCE_HELP["length"])] = None,
    seeds: Annotated[int | None, typer.Option(help=REPRODUCE_HELP["seeds"])] = None,
    samples: Annotated[int | None, typer.Option(help=REPRODUCE_HELP["samples"])] = None,
    probes: Annotated[int | None, typer.Option(help=REPRODUCE_HELP["probes"])] = None,
    train_steps: Annotated[int | None, typer.Option(help=REPRODUCE_HELP["train_steps"])] = None,
    train_preset: Annotated[str | None, typer.Option(help=REPRODUCE_HELP["train_preset"])] = None,
    train_seeds: Annotated[int | None, typer.Option(help=REPRODUCE_HELP["train_seeds"])] = None,
    behaviour_preset: Annotated[
        str | None, typer.Option(help=REPRODUCE_HELP["behaviour_preset"])
    ] = None,
    behaviour_steps: Annotated[
        int | None, typer.Option(help=REPRODUCE_HELP["behaviour_steps"])
    ] = None,
    behaviour_seeds: Annotated[
        int | None, typer.Option(help=REPRODUCE_HELP["behaviour_seeds"])
    ] = None,
    device: Annotated[str, typer.Option(help=REPRODUCE_HELP["device"])] = "auto",
    remedies: Annotated[str | None, typer.Option(help=REPRODUCE_HELP["remedies"])] = None,
    backend: BackendOpt = "local",
    address: AddressOpt = None,
    cpus_per_stage: CpusOpt = 1.0,
    gpus_per_stage: GpusOpt = None,
    out: OutOpt = Path("results/reproduce"),
    seed: Annotated[int, typer.Option("--seed", help=REPRODUCE_HELP["seed"])] = 0,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help=REPRODUCE_HELP["overwrite"])
    ] = False,
) -> None:
    """Main job: the paper's core experiments end to end -> report.html, claims.json."""
    # imported here, not at the top: keeps lostmid --help fast (module docstring)
    from lostmid.reproduce.run import run_reproduce

    if quick and full:
        raise UserError("choose at most one of --quick and --full")
    config = ReproduceConfig.at_scale(
        "quick" if quick else "full" if full else "default",
        models=parse_models(models),
        length=length,
        seeds=seeds,
        samples=samples,
        probes=probes,
        train_steps=train_steps,
        train_preset=train_preset,
        train_seeds=train_seeds,
        behaviour_preset=behaviour_preset,
        behaviour_steps=behaviour_steps,
        behaviour_seeds=behaviour_seeds,
        seed=seed,
        device=device,
        remedies=remedies,
    )
    where = Backend(backend, address, cpus_per_stage, gpus_per_stage)
    run_reproduce(config, out=out, overwrite=overwrite, console=console, backend=where)


@app.command()
def ablate(
    model: Annotated[str, typer.Option("--model", help=ABLATE_HELP["model"])],
    length: Annotated[int, typer.Option("--length", "-L", help=ABLATE_HELP["length"])] = 128,
    seeds: Annotated[int, typer.Option(help=ABLATE_HELP["seeds"])] = 2,
    samples: Annotated[int, typer.Option(help=ABLATE_HELP["samples"])] = 2,
    probes: Annotated[int, typer.Option(help=ABLATE_HELP["probes"])] = 2,
    rungs: Annotated[str, typer.Option(help=ABLATE_HELP["rungs"])] = ",".join(RUNGS),
    layers: Annotated[int | None, typer.Option(help=ABLATE_HELP["layers"])] = None,
    vocab_size: Annotated[int, typer.Option(help=ABLATE_HELP["vocab_size"])] = 512,
    embedding_scale: Annotated[float, typer.Option(help=ABLATE_HELP["embedding_scale"])] = 30.0,
    output: Annotated[str, typer.Option(help=ABLATE_HELP["output"])] = "hidden",
    exact: Annotated[bool, typer.Option("--exact", help=ABLATE_HELP["exact"])] = False,
    gain_directions: Annotated[int, typer.Option(help=ABLATE_HELP["gain_directions"])] = 4,
    dtype: Annotated[str, typer.Option(help=ABLATE_HELP["dtype"])] = "float32",
    device: Annotated[str, typer.Option(help=ABLATE_HELP["device"])] = "cpu",
    batch_size: Annotated[int, typer.Option(help=ABLATE_HELP["batch_size"])] = 1,
    device_map: Annotated[str | None, typer.Option(help=ABLATE_HELP["device_map"])] = None,
    out: OutOpt = Path("results/ablate"),
    seed: Annotated[int, typer.Option("--seed", help=ABLATE_HELP["seed"])] = 0,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Remeasure every rung instead of resuming.")
    ] = False,
) -> None:
    """Ablation ladder: which real ingredient (MLP, logits, positions, norms) breaks the theory."""
    from lostmid.ablate.run import run_ablate

    config = AblationConfig(
        model=model,
        length=length,
        seeds=seeds,
        samples=samples,
        probes=probes,
        rungs=rungs,
        seed=seed,
        layers=layers,
        vocab_size=vocab_size,
        embedding_scale=embedding_scale,
        output=output,
        exact=exact,
        gain_directions=gain_directions,
        dtype=dtype,
        device=device,
        batch_size=batch_size,
        device_map=device_map,
    )
    run_ablate(config, out=out, overwrite=overwrite, console=console)


app.command("sweep")(sweep_command)
app.command("retrieve")(retrieve)
app.command("remedies")(remedies)


def main() -> None:
    """Entry point: run the app; a :class:`UserError` becomes one line and exit code 2.

    Usage errors (unknown option, bad type) are click's own: also exit code 2.
    """
    try:
        app()
    except UserError as err:
        # escaped: a message may hold brackets (``pip install lostmid[cluster]``)
        err_console.print(
            f"[bold red]error:[/] {escape(str(err))}", highlight=False, soft_wrap=True
        )
        sys.exit(2)


if __name__ == "__main__":
    main()
