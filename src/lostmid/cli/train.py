"""``lostmid train``: a preset (language model, or retrieval with ``--task``) with the
overrides of its fields: :class:`~lostmid.train.config.TrainConfig`'s for both, and
:class:`~lostmid.behaviour.training.task.RetrievalTask`'s for retrieval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lostmid.behaviour.training.config import HELP as RETRIEVAL_HELP
from lostmid.behaviour.training.config import TASK_OVERRIDES, RetrievalTrainConfig
from lostmid.behaviour.training.task import RetrievalTask
from lostmid.capabilities import capability
from lostmid.cli.options import (
    Flag,
    command,
    console,
    extra,
    options,
    out_option,
    overwrite_option,
)
from lostmid.errors import UserError
from lostmid.train.config import HELP, TrainConfig

TRAIN_FLAGS = {name: Flag(override="the preset's") for name in ("steps", "seed", "corpus")}
RUN_FIELDS = ("eval_every", "signal_examples")  # RetrievalTrainConfig's own overrides
RETRIEVAL_FLAGS = {name: Flag(override="the preset's") for name in (*TASK_OVERRIDES, *RUN_FIELDS)}


def _run(
    *,
    preset: str,
    steps: int | None,
    seed: int | None,
    corpus: str | None,
    config: Path | None,
    resume: bool,
    out: Path,
    overwrite: bool,
    eval_every: int | None,
    signal_examples: int | None,
    no_rope: bool,
    layers: int | None,
    no_size_check: bool,
    **retrieval: Any,
) -> None:
    task = retrieval["task"]
    if task is None:
        from lostmid.train.config import resolve_cli_config
        from lostmid.train.run import run_training

        given = [f"--{k.replace('_', '-')}" for k, v in retrieval.items() if v is not None]
        given += ["--eval-every"] if eval_every is not None else []
        given += ["--signal-examples"] if signal_examples is not None else []
        given += ["--no-rope"] if no_rope else []
        given += ["--layers"] if layers is not None else []
        if given:
            raise UserError(f"{', '.join(given)} need --task kv|mqar (retrieval training)")
        path = None if corpus is None else Path(corpus)
        resolved = resolve_cli_config(preset, config, steps=steps, seed=seed, corpus=path)
        run_training(
            resolved,
            out=out,
            overwrite=overwrite,
            console=console,
            resume=resume,
            size_check=not no_size_check,
        )
        return
    from lostmid.behaviour.training import run_retrieval_training
    from lostmid.behaviour.training.config import resolve_retrieval_config

    if corpus is not None or config is not None:
        raise UserError(
            "--corpus and --config are for language-model training; drop them with --task"
        )
    resolved_retrieval = resolve_retrieval_config(
        None if preset == TrainConfig.preset else preset,  # the LM default: the task's own
        steps=steps,
        seed=seed,
        eval_every=eval_every,
        signal_examples=signal_examples,
        no_rope=no_rope or None,
        layers=layers,
        **retrieval,
    )
    run_retrieval_training(
        resolved_retrieval,
        out=out,
        overwrite=overwrite,
        console=console,
        resume=resume,
        size_check=not no_size_check,
    )


COMMAND = command(
    "train",
    capability("train").summary,
    [
        *options(TrainConfig, HELP, flags=TRAIN_FLAGS, only=("preset", "steps", "corpus")),
        extra("config", Path | None, None, help=HELP["config"]),
        extra("resume", bool, False, help=RETRIEVAL_HELP["resume"]),
        *options(RetrievalTask, RETRIEVAL_HELP, flags=RETRIEVAL_FLAGS, only=TASK_OVERRIDES),
        *options(RetrievalTrainConfig, RETRIEVAL_HELP, flags=RETRIEVAL_FLAGS, only=RUN_FIELDS),
        *options(RetrievalTrainConfig, RETRIEVAL_HELP, only=("no_rope",)),
        extra("layers", int | None, None, help=RETRIEVAL_HELP["layers"]),
        out_option("train"),
        *options(TrainConfig, HELP, flags=TRAIN_FLAGS, only=("seed",)),
        overwrite_option(),
        extra("no_size_check", bool, False, help=HELP["no_size_check"]),
    ],
    _run,
)
