"""The training stages of ``lostmid reproduce``: one ``lostmid train`` run per seed
(:func:`training_stage`), summarised as a :class:`TrainingSummary`; :class:`Training`
pools the seeds for the report and the claims
(:func:`lostmid.train.claims.pooled_training_claims`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lostmid.compare.claims import Claim
from lostmid.errors import UserError
from lostmid.reproduce.config import ReproduceConfig
from lostmid.reproduce.plan import PlannedStage, StandardSection, preset_threads
from lostmid.train.claims import SeedEvidence, pooled_training_claims
from lostmid.train.config import preset, resolve_cli_config
from lostmid.train.dynamics import Checkpoint
from lostmid.train.run import RESUME, TrainResult, run_training, saved_checkpoints

if TYPE_CHECKING:
    pass

TRAINING_COLUMNS = {  # TrainingRow field -> its column in the report and reproduce.json
    "seed": "seed",
    "step": "step",
    "tokens": "tokens",
    "heldout_loss": "held-out loss",
    "log10_peak_to_valley": "log10 peak/valley",
    "theory_spearman": "Spearman vs predicted theory (jacobian)",
    "theory_wasserstein1": "W1 vs predicted theory (jacobian)",
    "signal_spearman": "learning signal vs rho: Spearman",
    "signal_wasserstein1": "learning signal vs rho: W1",
}


@dataclass(frozen=True)
class TrainingRow:
    """One measured checkpoint of one seed in the report's training table."""

    seed: int
    step: int
    tokens: int
    heldout_loss: float
    log10_peak_to_valley: float | None
    theory_spearman: float | None
    theory_wasserstein1: float | None
    signal_spearman: float | None
    signal_wasserstein1: float | None

    @classmethod
    def of(cls, seed: int, checkpoint: Checkpoint) -> TrainingRow:
        m = checkpoint.measurement
        if m is None:
            raise ValueError(f"checkpoint {checkpoint.step} was not measured")
        theory = m.influence_vs_theory["jacobian"]
        return cls(
            seed=seed,
            step=checkpoint.step,
            tokens=checkpoint.tokens_seen,
            heldout_loss=m.heldout_loss,
            log10_peak_to_valley=m.influence_summary.log10_peak_to_valley,
            theory_spearman=theory.spearman,
            theory_wasserstein1=theory.wasserstein1,
            signal_spearman=m.learning_signal_vs_rho.spearman,
            signal_wasserstein1=m.learning_signal_vs_rho.wasserstein1,
        )

    def record(self) -> dict[str, Any]:
        return {column: getattr(self, name) for name, column in TRAINING_COLUMNS.items()}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TrainingRow:
        return cls(**{name: record[column] for name, column in TRAINING_COLUMNS.items()})


@dataclass(frozen=True)
class TrainingSummary:
    """The result of one seed's training stage: its claims and their numbers, a row per
    measured checkpoint, the figures ``lostmid train`` drew, and the paragraphs that
    describe the run."""

    evidence: SeedEvidence
    table: tuple[TrainingRow, ...]
    figures: Mapping[str, Path]
    paragraphs: tuple[str, ...]

    @property
    def seed(self) -> int:
        return self.evidence.seed

    def record(self) -> dict[str, Any]:
        return {
            "evidence": self.evidence.record(),
            "table": [row.record() for row in self.table],
            "figures": {k: str(v) for k, v in self.figures.items()},
            "paragraphs": list(self.paragraphs),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TrainingSummary:
        return cls(
            evidence=SeedEvidence.from_record(record["evidence"]),
            table=tuple(TrainingRow.from_record(r) for r in record["table"]),
            figures={k: Path(v) for k, v in record["figures"].items()},
            paragraphs=tuple(record["paragraphs"]),
        )


@dataclass(frozen=True)
class Training:
    """The training section: every seed's :class:`TrainingSummary` and the claims pooled
    over seeds (:func:`lostmid.train.claims.pooled_training_claims`)."""

    seeds: tuple[TrainingSummary, ...]

    @property
    def claims(self) -> tuple[Claim, ...]:
        return tuple(pooled_training_claims([s.evidence for s in self.seeds]))

    def table(self) -> list[dict[str, Any]]:
        """Every seed's checkpoints, one row each."""
        return [row.record() for s in self.seeds for row in s.table]

    @property
    def figures(self) -> Mapping[str, Path]:
        """The first seed's figures (every seed's are in its folder)."""
        return self.seeds[0].figures

    def paragraphs(self) -> tuple[str, ...]:
        seeds = ", ".join(str(s.seed) for s in self.seeds)
        return (
            *self.seeds[0].paragraphs,
            f"{len(self.seeds)} independent runs (seeds {seeds}: initial weights, batches "
            "and held-out split); the claims pool them (95% t intervals over seeds), the "
            "table lists every seed's checkpoints, the figures are the first seed's.",
        )

    def record(self) -> dict[str, Any]:
        return {"seeds": [s.record() for s in self.seeds], "claims": list(self.claims)}


def check_training_stage(config: ReproduceConfig, seed: int) -> None:
    """What ``lostmid train`` refuses for its size, refused before any stage runs."""
    from lostmid.train.model import check_training_size

    scale = config.scale
    train = resolve_cli_config(scale.train_preset, None, steps=scale.train_steps, seed=seed)
    what = f"reproduce --train-preset {scale.train_preset}"
    check_training_size(
        train.model, train.batch_size, what, train.steps, steps_flag="--train-steps", override=None
    )


def training_stage(config: ReproduceConfig, seed: int, folder: Path) -> TrainingSummary:
    """Train the small model (``lostmid train``, seed ``seed``) into ``folder`` and
    summarise it.

    An interrupted training is resumed from its last saved state; one left by another
    configuration is replaced (it lives under this run's ``--out``).
    """
    scale = config.scale
    train_config = resolve_cli_config(scale.train_preset, None, steps=scale.train_steps, seed=seed)
    trained = None
    if (folder / RESUME).is_file():
        try:
            trained = run_training(train_config, out=folder, resume=True)
        except UserError:  # saved by another configuration
            trained = None
    if trained is None:
        trained = run_training(train_config, out=folder, overwrite=True)
    return summarise_training(trained, seed, folder)


def summarise_training(trained: TrainResult, seed: int, folder: Path) -> TrainingSummary:
    """Claims, per-checkpoint table and figures of one training run."""
    spec, tps = trained.config.model, trained.tokens_per_second
    source = trained.corpus.get("source", "the corpus")
    speed = f"{tps:,.0f}" if tps else "?"
    return TrainingSummary(
        evidence=SeedEvidence.of(seed, trained.checkpoints),
        table=tuple(
            TrainingRow.of(seed, c) for c in trained.checkpoints if c.measurement is not None
        ),
        figures={p.stem: p for p in sorted(folder.glob("*.png"))},
        paragraphs=(
            f"A {spec.family}-style byte-level LM ({spec.layers} layers, hidden "
            f"{spec.hidden}, context {spec.context}, {trained.parameters:,} "
            f"parameters) trained for {trained.config.steps} steps on {source} ({speed} "
            "tokens/s). At each checkpoint: the influence profile on held-out text, the "
            "theory predicted from the residual strengths measured there, and the learning "
            "signal (norm of the gradient of the loss at the last position with respect to "
            "each input embedding) against rho_H.",
            f"Full dynamics: {folder / 'dynamics.json'}.",
        ),
    )


def rejudged(summary: TrainingSummary, folder: Path) -> TrainingSummary:
    """``summary`` with its evidence judged again, by today's rules, on the checkpoints its
    run saved (``folder/dynamics.json``): a stage kept from an earlier run is read by the
    same rules as a new one. Without the file (a summary read from elsewhere) it is kept."""
    checkpoints = saved_checkpoints(folder, until=sys.maxsize)
    if not checkpoints:
        return summary
    return replace(summary, evidence=SeedEvidence.of(summary.seed, checkpoints))


class TrainingPlugin(StandardSection):
    """The training section (:class:`lostmid.reproduce.plan.Section`): a small model
    trained per seed with ``lostmid train``, its dynamics and the training claims."""

    key = "training"
    title = "Training dynamics"
    figure_prefix = "train-"

    def stages(self, config: ReproduceConfig, device: str, out: Path) -> list[PlannedStage]:
        scale = config.scale
        if scale.train_steps == 0:
            return []
        threads = preset_threads(preset(scale.train_preset).model)
        return [
            PlannedStage(
                f"train-seed{seed}",
                {"preset": scale.train_preset, "steps": scale.train_steps, "seed": seed},
                partial(training_stage, config, seed, out / "train" / f"seed-{seed}"),
                TrainingSummary.from_record,
                threads=threads,
                check=partial(check_training_stage, config, seed),
            )
            for seed in config.train_seeds()
        ]

    def collect(
        self, config: ReproduceConfig, results: Mapping[str, Any], out: Path
    ) -> Training | None:
        found = [
            rejudged(results[f"train-seed{s}"], out / "train" / f"seed-{s}")
            for s in config.train_seeds()
            if f"train-seed{s}" in results
        ]
        return Training(tuple(found)) if found else None

    def figures(self, value: Training, folder: Path) -> dict[str, Path]:
        return {f"train-{name}": path for name, path in value.figures.items()}


SECTION = TrainingPlugin()
