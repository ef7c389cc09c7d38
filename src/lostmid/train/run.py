"""The ``lostmid train`` job: train, checkpoint, measure the dynamics, write files.

Files under ``--out``:

* ``checkpoints/step_NNNNNN/``: the model at each checkpoint step (``save_pretrained``:
  ``config.json`` + ``model.safetensors``), loadable by ``transformers`` and lostmid.
* ``resume.pt``: model, optimizer and counters of the latest saved step (written at
  every checkpoint, every ``resume_every`` steps and on Ctrl-C); ``--resume`` continues
  from it and gives the same result as an uninterrupted run.
* ``dynamics.json``: one record per checkpoint (:mod:`lostmid.train.dynamics`), the
  resolved config, the corpus split and the run metadata; rewritten atomically after
  every checkpoint, so it is complete up to the last checkpoint even after a crash.
* ``profiles.png``, ``peak_to_valley.png``, ``learning_signal.png``.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from lostmid.errors import UserError
from lostmid.runinfo import Timer, prepare_out, read_json, run_metadata, write_json
from lostmid.train.config import TrainConfig
from lostmid.train.corpus import RandomWindows, heldout_windows, load_corpus
from lostmid.train.dynamics import Checkpoint, measure_checkpoint
from lostmid.train.loop import Interventions, Trainer, checkpoint_steps, learning_rate
from lostmid.train.model import build_model, parameter_count, resolve_device, save_checkpoint

SCHEMA = "lostmid.train.dynamics/2"
DYNAMICS = "dynamics.json"
RESUME = "resume.pt"
CHECKPOINTS = "checkpoints"
PLOTS = ("profiles.png", "peak_to_valley.png", "learning_signal.png")


def checkpoint_dir(out: Path, step: int) -> Path:
    """Where the model of checkpoint ``step`` is saved."""
    return out / CHECKPOINTS / f"step_{step:06d}"


def run_training(
    config: TrainConfig,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
    *,
    resume: bool = False,
    interventions: Interventions | None = None,
    make_plots: bool = True,
) -> dict[str, Any]:
    """Train ``config``, measure at every checkpoint, write everything under ``out``.

    Returns the dynamics dict that was written to ``out/dynamics.json``.

    Raises:
        UserError: bad config or corpus; results already in ``out`` without
            ``overwrite``; ``resume`` without a saved state or with another config.
    """
    config.validate()
    interventions = interventions or Interventions()
    timer = Timer()
    wall = time.perf_counter()
    if resume and overwrite:
        raise UserError("--resume and --overwrite contradict each other; pass one")
    if resume:
        if not (out / RESUME).is_file():
            raise UserError(f"cannot resume: {out / RESUME} does not exist; run without --resume")
    else:
        prepare_out(out, [DYNAMICS, RESUME, CHECKPOINTS], overwrite)
        if overwrite:  # only what this command writes
            shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)
            (out / RESUME).unlink(missing_ok=True)

    context = config.model.context
    with timer("corpus"):
        corpus = load_corpus(
            config.corpus,
            seed=config.seed,
            heldout_fraction=config.heldout_fraction,
            min_bytes=context + 2,
        )
    device = resolve_device(config.device)
    with timer("build"):
        model = build_model(config.model, config.seed, interventions.variant)
        sampler = interventions.sampler or RandomWindows(
            corpus.train, config.batch_size, context, config.seed
        )
        heldout = heldout_windows(
            corpus.heldout, config.measure.heldout_windows, context, config.seed
        )
        trainer = Trainer(model, config, sampler, interventions.loss_weight, device)

    records: list[Checkpoint] = []
    if resume:
        trainer.load(out / RESUME)
        if (out / DYNAMICS).is_file():
            saved = read_json(out / DYNAMICS)
            if saved.get("schema") != SCHEMA:
                raise UserError(
                    f"cannot resume: {out / DYNAMICS} has schema {saved.get('schema')!r}, "
                    f"this lostmid writes {SCHEMA!r}; start again with --overwrite"
                )
            records = [
                c for c in map(Checkpoint.from_record, saved["records"]) if c.step <= trainer.step
            ]
    dynamics: dict[str, Any] = {
        "schema": SCHEMA,
        "config": config.to_dict(),
        "interventions": interventions.name,
        "model": {
            "family": config.model.family,
            "layers": config.model.layers,
            "hidden": config.model.hidden,
            "context": context,
            "parameters": parameter_count(model),
        },
        "corpus": corpus.describe(),
        "checkpoint_steps": checkpoint_steps(config.steps),
        "complete": False,
        "records": records,
    }
    done = {c.step for c in records}
    wanted = set(dynamics["checkpoint_steps"])
    start_step = trainer.step
    train_seconds = 0.0

    def checkpoint() -> None:
        step = trainer.step
        with timer("checkpoint_io"):
            save_checkpoint(trainer.model, checkpoint_dir(out, step))
        running = list(trainer.recent_losses)  # cleared only once the record is kept
        measurement = None
        if config.measure.enabled:
            with timer("measure"):
                batches = [sampler.batch(step + i) for i in range(config.measure.signal_batches)]
                measurement = measure_checkpoint(
                    trainer.model, signal_batches=batches, heldout=heldout, config=config
                )
        records.append(
            Checkpoint(
                step=step,
                tokens_seen=trainer.tokens_seen,
                lr=learning_rate(step, config),
                train_loss_running=sum(running) / len(running) if running else None,
                measurement=measurement,
            )
        )
        trainer.pop_losses()
        done.add(step)
        with timer("checkpoint_io"):
            write_json(out / DYNAMICS, dynamics)
            trainer.save(out / RESUME)

    progress = Progress(
        TextColumn("[bold]train[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]}"),
        TextColumn("{task.fields[tps]} tok/s"),
        TimeRemainingColumn(),
        console=console,
        disable=console is None,
        transient=True,
    )
    try:
        with progress:
            task = progress.add_task(
                "train", total=config.steps, completed=start_step, loss="-", tps="-"
            )
            while True:
                step = trainer.step
                if step in wanted and step not in done:
                    checkpoint()
                elif step > start_step and step % config.resume_every == 0:
                    with timer("checkpoint_io"):
                        trainer.save(out / RESUME)
                if step >= config.steps:
                    break
                begin = time.perf_counter()
                loss = trainer.train_step()
                train_seconds += time.perf_counter() - begin
                tokens = (trainer.step - start_step) * config.batch_size * context
                progress.update(
                    task, advance=1, loss=f"{loss:.3f}", tps=f"{tokens / train_seconds:,.0f}"
                )
    except KeyboardInterrupt:
        trainer.save(out / RESUME)
        if console is not None:
            console.print(
                f"interrupted at step {trainer.step}; state saved, continue with --resume"
            )
        raise

    timer.seconds["train"] = train_seconds
    if make_plots and config.measure.enabled:
        from lostmid.train.plot import plot_dynamics

        with timer("plots"):
            plot_dynamics(records, out)
    timer.seconds["total"] = time.perf_counter() - wall
    trained_tokens = (trainer.step - start_step) * config.batch_size * context
    dynamics["complete"] = True
    dynamics["tokens_per_second"] = trained_tokens / train_seconds if train_seconds else None
    dynamics["metadata"] = run_metadata(
        "train", config.to_dict() | {"resumed_from_step": start_step}, config.seed, timer.seconds
    )
    write_json(out / DYNAMICS, dynamics)
    if console is not None:
        console.print(summary_table(dynamics))
        console.print(f"wrote {out / DYNAMICS}, {out / CHECKPOINTS}/ and plots in {out}")
    return dynamics


def summary_table(dynamics: dict[str, Any]) -> Table:
    """One row per checkpoint: losses, peak-to-valley, agreement with the theory."""
    table = Table(title="lostmid train: dynamics", header_style="bold")
    for name in (
        "step",
        "tokens",
        "train loss",
        "held-out loss",
        "peak/valley",
        "infl~theory S",
        "eta~rho S",
        "eta~rho W1",
    ):
        table.add_column(name, justify="right")
    for c in dynamics["records"]:
        m = c.measurement
        table.add_row(
            str(c.step),
            _tokens(c.tokens_seen),
            _fmt(c.train_loss_running if m is None else m.train_loss),
            _fmt(None if m is None else m.heldout_loss),
            _fmt(None if m is None else m.influence_summary.peak_to_valley, "{:.3g}"),
            _fmt(None if m is None else m.influence_vs_theory["rollout"].spearman),
            _fmt(None if m is None else m.learning_signal_vs_rho.spearman),
            _fmt(None if m is None else m.learning_signal_vs_rho.wasserstein1),
        )
    return table


def _tokens(count: int) -> str:
    return f"{count / 1e6:.2f}M" if count >= 1_000_000 else f"{count:,}"


def _fmt(value: float | None, spec: str = "{:.3f}") -> str:
    return "-" if value is None or not np.isfinite(value) else spec.format(value)
