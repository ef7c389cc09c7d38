"""The ``lostmid train`` job: train, checkpoint, measure the dynamics, write files.

Files under ``--out``:

* ``checkpoints/step_NNNNNN/``: the model at each checkpoint step (``save_pretrained``:
  ``config.json`` + ``model.safetensors``), loadable by ``transformers`` and lostmid.
* ``resume.pt``: model, optimizer and counters of the latest saved step (written at
  every checkpoint, every ``resume_every`` steps and on Ctrl-C); ``resume=True``
  continues from it and gives the same result as an uninterrupted run.
* ``dynamics.json``: the :class:`TrainResult`'s record: the resolved config, the model,
  the corpus split, one record per checkpoint (:class:`~lostmid.train.dynamics.Checkpoint`)
  and the run metadata; rewritten atomically after every checkpoint, so it is complete
  up to the last checkpoint even after a crash (``"complete": false`` until the end).
* ``profiles.png``, ``peak_to_valley.png``, ``learning_signal.png``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

from lostmid.errors import Interrupted, UserError
from lostmid.files import read_result, schema_of
from lostmid.report.layout import fit_table
from lostmid.runinfo import Timer, write_json
from lostmid.runs.folder import RunFolder
from lostmid.runs.progress import progress as logged_progress
from lostmid.train.config import TrainConfig, checkpoint_steps
from lostmid.train.corpus import BatchSampler, RandomWindows, heldout_windows, load_corpus
from lostmid.train.dynamics import Checkpoint, measure_checkpoint
from lostmid.train.loop import Interventions, Trainer, learning_rate
from lostmid.train.model import (
    build_model,
    check_training_size,
    parameter_count,
    save_checkpoint,
)
from lostmid.train.plot import plot_dynamics

SCHEMA = schema_of("training")
DYNAMICS = "dynamics.json"
RESUME = "resume.pt"
CHECKPOINTS = "checkpoints"


def checkpoint_dir(out: Path, step: int) -> Path:
    """Where the model of checkpoint ``step`` is saved."""
    return out / CHECKPOINTS / f"step_{step:06d}"


@dataclass(frozen=True, eq=False)
class TrainResult:
    """One training run (complete, or up to its last checkpoint); its record is
    ``dynamics.json``.

    Attributes:
        config: the resolved training config.
        interventions: the name of the interventions trained with.
        parameters: the model's parameter count (tied weights once).
        corpus: the corpus split (:meth:`lostmid.train.corpus.Corpus.record`).
        checkpoints: one :class:`Checkpoint` per checkpoint reached, in step order.
        complete: whether the run reached ``config.steps``.
        tokens_per_second: training throughput of this invocation (None until the end).
        metadata: provenance (None until the end).
    """

    config: TrainConfig
    interventions: str
    parameters: int
    corpus: Mapping[str, Any]
    checkpoints: tuple[Checkpoint, ...] = ()
    complete: bool = False
    tokens_per_second: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def model(self) -> dict[str, Any]:
        """The model's shape as written to ``dynamics.json``."""
        spec = self.config.model
        return {
            "family": spec.family,
            "layers": spec.layers,
            "hidden": spec.hidden,
            "context": spec.context,
            "parameters": self.parameters,
        }

    def record(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "config": self.config.record(),
            "interventions": self.interventions,
            "model": self.model,
            "corpus": dict(self.corpus),
            "checkpoint_steps": checkpoint_steps(self.config.steps),
            "complete": self.complete,
            "records": [c.record() for c in self.checkpoints],
            "tokens_per_second": self.tokens_per_second,
            "metadata": dict(self.metadata) or None,
        }


def saved_checkpoints(out: Path, until: int) -> tuple[Checkpoint, ...]:
    """The checkpoints of ``out/dynamics.json`` up to step ``until`` (none if no file)."""
    if not (out / DYNAMICS).is_file():
        return ()
    saved = read_result(out / DYNAMICS, "training")
    if saved.get("schema") != SCHEMA:
        raise UserError(
            f"cannot resume: {out / DYNAMICS} has schema {saved.get('schema')!r}, "
            f"this lostmid writes {SCHEMA!r}; start again with --overwrite"
        )
    try:
        checkpoints = tuple(map(Checkpoint.from_record, saved["records"]))
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise UserError(
            f"cannot resume: {out / DYNAMICS} has a damaged checkpoint record ({err!r}); "
            "start again with --overwrite"
        ) from None
    return tuple(c for c in checkpoints if c.step <= until)


FOLDER = RunFolder("train", writes=(DYNAMICS, RESUME, CHECKPOINTS), resumes="state", state=RESUME)
"""What ``run_training`` writes into ``--out``: its saved state continues with --resume."""


@FOLDER.holds
def run_training(
    config: TrainConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
    resume: bool = False,
    interventions: Interventions | None = None,
    make_plots: bool = True,
    size_check: bool = True,
) -> TrainResult:
    """Train ``config``, measure at every checkpoint, write everything under ``out``.

    Args:
        resume: continue from ``out/resume.pt`` (same config) instead of starting.
        interventions: the loop's plug-in points (loss weight, sampler, model variant).
        make_plots: draw the three figures at the end.
        size_check: refuse, before anything is built, a run that cannot fit this
            machine's free memory (on CPU; :func:`lostmid.train.model.check_training_size`).

    Raises:
        UserError: bad corpus; results already in ``out`` without ``overwrite``;
            ``resume`` without a saved state or with another config.
    """
    interventions = interventions or Interventions()
    timer = Timer()
    wall = time.perf_counter()
    if size_check and config.device == "cpu":  # before anything in out is replaced
        check_training_size(
            config.model, config.batch_size, f"train --preset {config.preset}", config.steps
        )
    folder = FOLDER.open(out, overwrite=overwrite, resume=resume)
    context = config.model.context
    with timer("corpus"):
        corpus = load_corpus(
            config.corpus,
            seed=config.seed,
            heldout_fraction=config.heldout_fraction,
            min_bytes=context + 2,
        )
    with timer("build"):
        model = build_model(config.model, config.seed, interventions.variant)
        sampler = interventions.sampler or RandomWindows(
            corpus.train, config.batch_size, context, config.seed
        )
        heldout = heldout_windows(
            corpus.heldout, config.probe.heldout_windows, context, config.seed
        )
        trainer = Trainer(model, config, sampler, interventions.loss_weight, config.device)
    folder.clear()
    if resume:
        trainer.load(out / RESUME)
    session = _Session(
        config,
        out,
        trainer,
        sampler,
        heldout,
        timer,
        result=TrainResult(
            config=config,
            interventions=interventions.name,
            parameters=parameter_count(model),
            corpus=corpus.record(),
            checkpoints=saved_checkpoints(out, trainer.step) if resume else (),
        ),
        start_step=trainer.step,
    )
    session.train(console)

    timer.seconds["train"] = session.train_seconds
    if make_plots and config.probe.enabled:
        with timer("plots"):
            plot_dynamics(session.result.checkpoints, out)
    timer.seconds["total"] = time.perf_counter() - wall
    start_step, train_seconds = session.start_step, session.train_seconds
    trained_tokens = (trainer.step - start_step) * config.batch_size * context
    result = replace(
        session.result,
        complete=True,
        tokens_per_second=trained_tokens / train_seconds if train_seconds else None,
        metadata=folder.metadata(
            config.record() | {"resumed_from_step": start_step},
            config.seed,
            timer.seconds,
        ),
    )
    write_json(out / DYNAMICS, result)
    if console is not None:
        console.print(fit_table(summary_table(result)))
        console.print(f"wrote {out / DYNAMICS}, {out / CHECKPOINTS}/ and plots in {out}")
    return result


@dataclass
class _Session:
    """One invocation of a training run from ``start_step``: the training loop and, at
    each checkpoint step, the saved model, the measurement and ``dynamics.json`` with
    ``resume.pt`` rewritten; ``result`` and ``train_seconds`` grow as it runs."""

    config: TrainConfig
    out: Path
    trainer: Trainer
    sampler: BatchSampler
    heldout: torch.Tensor
    timer: Timer
    result: TrainResult
    start_step: int
    train_seconds: float = 0.0
    done: set[int] = field(init=False)

    def __post_init__(self) -> None:
        self.done = {c.step for c in self.result.checkpoints}

    def train(self, console: Console | None) -> None:
        """Train to ``steps`` under a progress bar, checkpointing at each checkpoint step
        not yet reached and saving the state every ``resume_every`` steps; on Ctrl-C, save
        the state, say how to continue, and raise."""
        config, trainer, timer, out = self.config, self.trainer, self.timer, self.out
        start_step, context = self.start_step, config.model.context
        wanted = set(checkpoint_steps(config.steps))
        progress = logged_progress(
            "train",
            TextColumn("[bold]train[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}"),
            TextColumn("{task.fields[tps]} tok/s"),
            TimeRemainingColumn(),
            console=console,
        )
        try:
            with progress:
                task = progress.add_task(
                    "train", total=config.steps, completed=start_step, loss="-", tps="-"
                )
                while True:
                    step = trainer.step
                    if step in wanted and step not in self.done:
                        self.checkpoint()
                    elif step > start_step and step % config.resume_every == 0:
                        with timer("checkpoint_io"):
                            trainer.save(out / RESUME)
                    if step >= config.steps:
                        break
                    begin = time.perf_counter()
                    loss = trainer.train_step()
                    self.train_seconds += time.perf_counter() - begin
                    tokens = (trainer.step - start_step) * config.batch_size * context
                    progress.update(
                        task,
                        advance=1,
                        loss=f"{loss:.3f}",
                        tps=f"{tokens / self.train_seconds:,.0f}",
                    )
        except KeyboardInterrupt:
            trainer.save(out / RESUME)
            if console is None:
                raise
            console.print(
                f"interrupted at step {trainer.step}; state saved in {out / RESUME}: add "
                "--resume to the same command to continue"
            )
            raise Interrupted() from None  # said: the CLI adds nothing

    def checkpoint(self) -> None:
        """Save the model at this step, measure it (when the probe is on), and rewrite
        ``dynamics.json`` and ``resume.pt``."""
        config, trainer, timer, out = self.config, self.trainer, self.timer, self.out
        step = trainer.step
        with timer("checkpoint_io"):
            save_checkpoint(trainer.model, checkpoint_dir(out, step))
        running = list(trainer.recent_losses)  # cleared only once the checkpoint is kept
        measurement = None
        if config.probe.enabled:
            with timer("measure"):
                batches = [self.sampler.batch(step + i) for i in range(config.probe.signal_batches)]
                measurement = measure_checkpoint(
                    trainer.model, signal_batches=batches, heldout=self.heldout, config=config
                )
        reached = Checkpoint(
            step=step,
            tokens_seen=trainer.tokens_seen,
            lr=learning_rate(step, config),
            train_loss_running=float(np.mean(running)) if running else None,
            measurement=measurement,
        )
        self.result = replace(self.result, checkpoints=(*self.result.checkpoints, reached))
        trainer.pop_losses()
        self.done.add(step)
        with timer("checkpoint_io"):
            write_json(out / DYNAMICS, self.result)
            trainer.save(out / RESUME)


def summary_table(result: TrainResult) -> Table:
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
    for c in result.checkpoints:
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
