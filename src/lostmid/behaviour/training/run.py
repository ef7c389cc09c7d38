"""Small models that learn to retrieve, watched by gold position and by influence.

The run (:func:`run_retrieval_training`) lives here; the task in
:mod:`~lostmid.behaviour.training.task`, the batches and masked loss in
:mod:`~lostmid.behaviour.training.data`, the configuration and presets in
:mod:`~lostmid.behaviour.training.config`, the evaluation at each checkpoint in
:mod:`~lostmid.behaviour.training.evaluate`.

Each training row is one retrieval example (kv or MQAR) with its gold index drawn from a
gold law (:mod:`~lostmid.behaviour.tasks.gold`, uniform by default), optionally mixed with
stdlib text; the loss covers the answer tokens.

Evaluation at each checkpoint (log-spaced, :func:`lostmid.train.config.checkpoint_steps`,
plus every ``eval_every`` steps): teacher-forced argmax accuracy and mean log-prob by
gold index on held-out examples (the same ones each time, paired across gold indices),
the influence profile, the influence of each record and their link (Spearman).

The trial runs behind the presets are logged in docs/BENCHMARKS.md ("retrieval
training: trial log").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from lostmid.behaviour.training.config import RetrievalTrainConfig
from lostmid.behaviour.training.data import MaskedTrainer, RetrievalBatches
from lostmid.behaviour.training.evaluate import HeldOut, RetrievalCheckpoint, evaluate_checkpoint
from lostmid.behaviour.training.learning import LearningReadouts
from lostmid.behaviour.training.task import sequence_length
from lostmid.errors import UserError
from lostmid.files import read_json_object, schema_of
from lostmid.report.layout import fit_table
from lostmid.runinfo import Timer, to_jsonable, write_json
from lostmid.runs.folder import RunFolder
from lostmid.train.model import ModelVariant

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from lostmid.train.config import TrainConfig

SCHEMA = schema_of("retrieval training")
RESULT = "retrieval.json"
RESUME = "resume.pt"
FIGURE = "retrieval.png"
CHECKPOINTS = "checkpoints"


@dataclass(frozen=True)
class RetrievalHooks:
    """Plug-in points for interventions on a retrieval run (remedies); all None is the
    plain run.

    gold_probs: step -> probabilities (pairs,) of the gold index (see
        :class:`RetrievalBatches`); gold_weights: (pairs,) loss weight per gold index;
    variant: model surgery right after building (:class:`lostmid.train.model.ModelVariant`);
    on_checkpoint: called with each :class:`RetrievalCheckpoint` as soon as it is measured
        (before training continues), e.g. to adapt ``gold_probs`` to accuracy by position;
    on_evaluate: called with the model and the step at each evaluation step, before
        training continues (e.g. to measure a validation split the final score never sees).
    """

    gold_probs: Callable[[int], np.ndarray] | None = None
    gold_weights: np.ndarray | None = None
    variant: ModelVariant | None = None
    on_checkpoint: Callable[[RetrievalCheckpoint], None] | None = None
    on_evaluate: Callable[[torch.nn.Module, int], None] | None = None


@dataclass(frozen=True)
class RetrievalTrainResult:
    """A finished retrieval training run: one :class:`RetrievalCheckpoint` per
    evaluation step (the first at step 0, init; the last after training).
    ``cpu_seconds``: the process's CPU time for the run (over every resumed part), the
    cost on a loaded machine where wall time is not."""

    config: RetrievalTrainConfig
    parameters: int
    checkpoints: tuple[RetrievalCheckpoint, ...]
    train_seconds: float
    wall_seconds: float
    cpu_seconds: float = 0.0

    @property
    def initial(self) -> RetrievalCheckpoint:
        return self.checkpoints[0]

    @property
    def final(self) -> RetrievalCheckpoint:
        return self.checkpoints[-1]

    def learning(self) -> LearningReadouts | None:
        """When each record was learnt
        (:class:`~lostmid.behaviour.training.learning.LearningReadouts`); None before a
        second checkpoint exists."""
        return learning_readouts(self.checkpoints)

    def record(self) -> dict[str, Any]:
        learning = self.learning()
        return {
            "schema": SCHEMA,
            "config": self.config.record(),
            "parameters": self.parameters,
            "sequence_length": sequence_length(self.config.task),
            "prompt_length": len(self.initial.influence),
            "record_spans": [list(span) for span in self.config.task.example(0, 0, 0).spans],
            "checkpoints": [c.record() for c in self.checkpoints],
            "link": {
                "init": {
                    "step": self.initial.step,
                    "spearman_accuracy": self.initial.link_accuracy,
                    "spearman_logprob": self.initial.link_logprob,
                },
                "final": {
                    "step": self.final.step,
                    "spearman_accuracy": self.final.link_accuracy,
                    "spearman_logprob": self.final.link_logprob,
                },
            },
            "final_accuracy": self.final.summary.mean_accuracy,
            "learning": None if learning is None else learning.record(),
            "train_seconds": self.train_seconds,
            "wall_seconds": self.wall_seconds,
            "cpu_seconds": self.cpu_seconds,
        }


def learning_readouts(checkpoints: Sequence[RetrievalCheckpoint]) -> LearningReadouts | None:
    """The learning readouts of a run's checkpoints (the first at step 0), in tokens
    seen; None with fewer than 2 checkpoints."""
    if len(checkpoints) < 2:
        return None
    probability = None
    if all(len(c.probability) == len(c.positions) for c in checkpoints):
        probability = np.array([c.probability for c in checkpoints], dtype=np.float64)
    return LearningReadouts.of(
        [c.tokens_seen for c in checkpoints],
        np.array([c.accuracy for c in checkpoints]),
        checkpoints[0].record_influence,
        probability,
    )


def no_rope_variant() -> ModelVariant:
    """The model without positional encoding: the family adapter's ``remove_rope``
    (one line for a family without rotary embeddings)."""
    from lostmid.models import adapter_for_model

    def apply(model: Any) -> Any:
        adapter_for_model(model).remove_rope(model)
        return model

    return ModelVariant("no-rope", apply)


def _variant(config: RetrievalTrainConfig, hooks: RetrievalHooks) -> ModelVariant | None:
    """The config's own switch (no_rope) first, then the hooks' variant."""
    if not config.no_rope:
        return hooks.variant
    first = no_rope_variant()
    if hooks.variant is None:
        return first
    second = hooks.variant
    return ModelVariant(f"{first.name}+{second.name}", lambda m: second.apply(first.apply(m)))


def _saved_form(config: RetrievalTrainConfig) -> Any:
    """The configuration as ``retrieval.json`` holds it (JSON types: lists, not tuples)."""
    return json.loads(json.dumps(to_jsonable(config.record())))


def can_resume(config: RetrievalTrainConfig, out: Path) -> bool:
    """Whether ``out`` holds a run of ``config`` to continue (``resume=True``): its saved
    state and a ``retrieval.json`` written with the same configuration."""
    written = Path(out) / RESULT
    if not (Path(out) / RESUME).is_file() or not written.is_file():
        return False
    try:
        return bool(read_json_object(written).get("config") == _saved_form(config))
    except (OSError, UserError):  # unreadable: start again
        return False


def _resumed(
    config: RetrievalTrainConfig, out: Path, trainer: MaskedTrainer
) -> tuple[list[RetrievalCheckpoint], float, float]:
    """The checkpoints, training seconds and CPU seconds of the run saved in ``out``, its trainer
    state loaded into ``trainer``; one line when there is nothing to resume or the saved
    run used another configuration."""
    state, written = out / RESUME, out / RESULT
    if not state.is_file() or not written.is_file():
        raise UserError(
            f"cannot resume: no saved run in {out} ({RESUME}, {RESULT}); run without --resume"
        )
    document = read_json_object(written)
    wanted = _saved_form(config)
    if document.get("config") != wanted:
        saved = document.get("config") or {}
        changed = sorted(k for k in {**saved, **wanted} if saved.get(k) != wanted.get(k))
        raise UserError(
            f"cannot resume: the saved run in {out} used a different config (differs in: "
            f"{', '.join(changed)}); use the same options or --overwrite"
        )
    trainer.load(state)
    checkpoints = [
        RetrievalCheckpoint.from_record(c)
        for c in document["checkpoints"]
        if c["step"] <= trainer.step
    ]
    return (
        checkpoints,
        float(document.get("train_seconds", 0.0)),
        float(document.get("cpu_seconds", 0.0)),
    )


FOLDER = RunFolder(
    "train",
    writes=(RESULT, FIGURE, CHECKPOINTS, RESUME),
    resumes="state",
    state=RESUME,
    kind="train-retrieval",
)
"""What ``run_retrieval_training`` writes into ``--out``: its saved state continues with
--resume."""


@FOLDER.holds
def run_retrieval_training(
    config: RetrievalTrainConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Any = None,
    hooks: RetrievalHooks | None = None,
    resume: bool = False,
    size_check: bool = True,
) -> RetrievalTrainResult:
    """Train on retrieval, evaluate at every evaluation step, write under ``out``:
    ``retrieval.json`` (rewritten after each checkpoint), ``resume.pt`` (the trainer's
    state at the last checkpoint whose step is a multiple of ``train.resume_every``, and
    at the end), ``retrieval.png`` and, when ``save_checkpoints``,
    ``checkpoints/step_NNNNNN/`` (``save_pretrained`` + the byte tokenizer marker, so
    ``lostmid retrieve --model`` reads them). ``hooks``: the interventions of
    :class:`RetrievalHooks` (None: a plain run). ``resume``: continue the run saved in
    ``out`` from its last checkpoint (the same numbers as an uninterrupted run: batches
    are a function of seed and step); a finished run is read back as it is.

    ``size_check``: refuse, before anything is built, a run that cannot fit this
    machine's free memory (on CPU; :func:`lostmid.train.model.check_training_size`).

    Raises:
        UserError: results already in ``out`` without ``overwrite`` or ``resume``;
            ``resume`` with nothing saved or another configuration; a run too large
            for this machine (``size_check``).
    """
    from lostmid.behaviour.retrieve.plot import plot_training
    from lostmid.report.plots import save_figure
    from lostmid.train.model import check_training_size, parameter_count

    wall, cpu = time.perf_counter(), time.process_time()
    out = Path(out)
    train = config.resolved_train()
    if size_check and train.device == "cpu":  # before anything in out is replaced
        check_training_size(
            train.model,
            train.batch_size,
            f"train --task {config.task.task} --preset {config.preset}",
            train.steps,
        )
    folder = FOLDER.open(out, overwrite=overwrite, resume=resume)
    timer = Timer()
    task = config.task
    hooks = hooks or RetrievalHooks()
    with timer("build"):
        model, trainer, heldout = _build(config, train, hooks)
    folder.clear()  # only now: every refusal above keeps the earlier run whole
    checkpoints: list[RetrievalCheckpoint] = []
    train_seconds = cpu_before = 0.0
    if resume:
        checkpoints, train_seconds, cpu_before = _resumed(config, out, trainer)
    session = _Session(
        config,
        train,
        out,
        model,
        trainer,
        heldout,
        hooks,
        timer,
        cpu_start=cpu,
        cpu_before=cpu_before,
        checkpoints=checkpoints,
        train_seconds=train_seconds,
    )
    session.train(console)
    timer.seconds["train"] = session.train_seconds
    result = RetrievalTrainResult(
        config=config,
        parameters=parameter_count(model),
        checkpoints=tuple(checkpoints),
        train_seconds=session.train_seconds,
        wall_seconds=time.perf_counter() - wall,
        cpu_seconds=session.cpu_seconds(),
    )
    with timer("plots"):
        fig = plot_training(
            [c.step for c in checkpoints],
            [c.positions for c in checkpoints],
            [np.asarray(c.record_influence) for c in checkpoints],
            title=f"{config.preset}: {task.task}, {task.pairs} pairs "
            f"({result.parameters / 1e6:.2f}M parameters)",
        )
        save_figure(fig, out / FIGURE)
    timer.seconds["total"] = time.perf_counter() - wall
    document = result.record()
    document["metadata"] = folder.metadata(config.record(), train.seed, timer.seconds)
    write_json(out / RESULT, document)
    if console is not None:
        console.print(fit_table(training_table(result)))
    return result


def _build(
    config: RetrievalTrainConfig, train: TrainConfig, hooks: RetrievalHooks
) -> tuple[PreTrainedModel, MaskedTrainer, HeldOut]:
    """The model, its trainer on retrieval batches (mixed with stdlib text when
    ``task.mix``) and the held-out examples of a run."""
    from lostmid.train.model import build_model

    task = config.task
    length = sequence_length(task)
    corpus: np.ndarray | None = None  # the training split's bytes
    if task.mix > 0:
        from lostmid.train.corpus import load_corpus

        corpus = load_corpus(
            None, seed=train.seed, heldout_fraction=0.05, min_bytes=length + 1
        ).train
    sampler = RetrievalBatches(
        task, train.batch_size, train.seed, length, corpus, hooks.gold_probs, hooks.gold_weights
    )
    model = build_model(train.model, train.seed, _variant(config, hooks))
    trainer = MaskedTrainer(model, train, sampler, device=train.device)
    return model, trainer, HeldOut.build(config)


@dataclass
class _Session:
    """One invocation of a retrieval run: the training loop and, at each evaluation step,
    the evaluation, the hooks, the saved model and ``retrieval.json`` rewritten.

    ``cpu_start``: the process time when this invocation began; ``cpu_before``: the CPU
    seconds of the parts resumed; ``checkpoints`` and ``train_seconds`` grow as it runs.
    """

    config: RetrievalTrainConfig
    train_config: TrainConfig
    out: Path
    model: PreTrainedModel
    trainer: MaskedTrainer
    heldout: HeldOut
    hooks: RetrievalHooks
    timer: Timer
    cpu_start: float
    cpu_before: float
    checkpoints: list[RetrievalCheckpoint] = field(default_factory=list)
    train_seconds: float = 0.0
    document: dict[str, Any] = field(default_factory=dict)

    def cpu_seconds(self) -> float:
        return self.cpu_before + time.process_time() - self.cpu_start

    def train(self, console: Any) -> None:
        """Train to ``steps`` under a progress bar, evaluating at every evaluation step
        not yet evaluated."""
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

        from lostmid.runs.progress import progress as logged_progress

        trainer, checkpoints = self.trainer, self.checkpoints
        steps, wanted = self.train_config.steps, self.config.eval_steps()
        progress = logged_progress(
            "train retrieval",
            TextColumn("[bold]train retrieval[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]} acc {task.fields[acc]}"),
            console=console,
        )
        with progress:
            bar = progress.add_task("train", total=steps, completed=trainer.step, loss="-", acc="-")
            while True:
                if trainer.step in wanted and not (
                    checkpoints and checkpoints[-1].step == trainer.step
                ):
                    self.evaluate()
                    progress.update(bar, acc=f"{checkpoints[-1].summary.mean_accuracy:.2f}")
                if trainer.step >= steps:
                    break
                begin = time.perf_counter()
                loss = trainer.train_step()
                self.train_seconds += time.perf_counter() - begin
                progress.update(bar, advance=1, loss=f"{loss:.3f}")

    def evaluate(self) -> None:
        """Evaluate the model at this step, call the hooks, save the model (when
        ``save_checkpoints``), rewrite ``retrieval.json`` and, at a resume step, the
        trainer's state."""
        from lostmid.behaviour.decoding.tokenizers import write_byte_marker
        from lostmid.train.model import parameter_count, save_checkpoint

        config, trainer, timer, hooks = self.config, self.trainer, self.timer, self.hooks
        train = self.train_config
        losses = trainer.pop_losses()
        with timer("evaluate"):
            self.checkpoints.append(
                evaluate_checkpoint(
                    trainer.model,
                    self.heldout,
                    config,
                    step=trainer.step,
                    tokens_seen=trainer.tokens_seen,
                    train_loss=float(np.mean(losses)) if losses else None,
                )
            )
        if hooks.on_checkpoint is not None:
            hooks.on_checkpoint(self.checkpoints[-1])
        if hooks.on_evaluate is not None:
            hooks.on_evaluate(trainer.model, trainer.step)
        if config.save_checkpoints:
            with timer("checkpoint_io"):
                save_checkpoint(
                    trainer.model,
                    self.out / CHECKPOINTS / f"step_{trainer.step:06d}",
                    also=partial(write_byte_marker, task=asdict(config.task)),
                )
        self.document.update(
            RetrievalTrainResult(
                config,
                parameter_count(self.model),
                tuple(self.checkpoints),
                self.train_seconds,
                0.0,
                self.cpu_seconds(),
            ).record()
        )
        write_json(self.out / RESULT, self.document)
        if trainer.step % train.resume_every == 0 or trainer.step >= train.steps:
            with timer("checkpoint_io"):  # after the JSON: a resume never lacks a checkpoint
                trainer.save(self.out / RESUME)


def training_table(result: RetrievalTrainResult) -> Any:
    """One row per checkpoint: loss, mean accuracy, primacy/recency, the link."""
    from rich.table import Table

    table = Table(title=f"retrieval training: {result.config.preset}", header_style="bold")
    for name in ("step", "train loss", "accuracy", "by gold index", "primacy", "recency", "link S"):
        table.add_column(name, justify="right")
    for c in result.checkpoints:
        s = c.summary
        table.add_row(
            str(c.step),
            "-" if c.train_loss is None else f"{c.train_loss:.3f}",
            f"{s.mean_accuracy:.3f}",
            " ".join(f"{p.accuracy:.2f}" for p in c.positions),
            f"{s.primacy.estimate:+.2f}",
            f"{s.recency.estimate:+.2f}",
            "-" if c.link_accuracy is None else f"{c.link_accuracy:+.2f}",
        )
    return table
