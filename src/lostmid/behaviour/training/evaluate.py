"""Evaluation at a checkpoint: accuracy by gold index on fixed held-out examples (argmax
under teacher forcing, and the teacher-forced probability of the answer), the influence
profile of every prompt position on the last one
(:func:`lostmid.influence.influence_profile`), the influence of each record (mean over
its tokens), the learning signal each record receives
(:func:`lostmid.behaviour.training.signal.record_learning_signal`), and the link: Spearman
between accuracy (and log-prob) by gold index and the influence of those records."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from lostmid.behaviour.decoding.generate import teacher_forced
from lostmid.behaviour.score import (
    PositionScore,
    RetrievalSummary,
    score_positions,
    summarise_positions,
)
from lostmid.behaviour.tasks.example import RetrievalExample
from lostmid.behaviour.training.config import RetrievalTrainConfig
from lostmid.behaviour.training.signal import RecordSignal, record_learning_signal
from lostmid.behaviour.training.task import example_ids
from lostmid.checks import check_positive, check_unit_interval
from lostmid.stats import finite_or_none, spearman

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def span_means(profile: np.ndarray, spans: list[tuple[int, int]]) -> np.ndarray:
    """Mean of ``profile`` (L,) over each ``[start, end)`` span (0-indexed positions).

    >>> span_means(np.arange(6.0), [(0, 2), (2, 6)]).tolist()
    [0.5, 3.5]
    """
    return np.array([float(np.mean(profile[a:b])) for a, b in spans])


def gap_noise_floor(
    accuracy: float, positions: int, examples: int, draws: int = 4000, seed: int = 0
) -> float:
    """The gap max - min over ``positions`` gold indices that sampling noise alone gives
    when every index has the same true accuracy p: the mean over ``draws`` simulations of
    max_i k_i / n - min_i k_i / n, k_i ~ Binomial(n = ``examples``, p) independent (the
    held-out examples are paired across indices, so this is an upper-side estimate).

    >>> gap_noise_floor(1.0, 8, 128), gap_noise_floor(0.5, 1, 128)
    (0.0, 0.0)
    >>> round(gap_noise_floor(0.5, 2, 10_000, draws=20_000), 3)  # E|X-Y|, 2 sd/sqrt(pi)
    0.006
    """
    check_unit_interval("accuracy", accuracy)
    check_positive("positions", positions)
    check_positive("examples", examples)
    rng = np.random.default_rng(seed)
    k = rng.binomial(examples, accuracy, size=(draws, positions)) / examples  # (draws, G)
    return float(np.mean(k.max(axis=1) - k.min(axis=1)))


@dataclass(frozen=True)
class HeldOut:
    """Fixed evaluation examples: ``eval_examples`` per gold index, paired."""

    examples: tuple[RetrievalExample, ...]
    prompts: tuple[tuple[int, ...], ...]
    targets: tuple[tuple[int, ...], ...]
    positions: np.ndarray
    spans: tuple[tuple[int, int], ...]
    influence_inputs: torch.Tensor
    signal_rows: tuple[int, ...] = ()

    @classmethod
    def build(cls, config: RetrievalTrainConfig) -> HeldOut:
        task, seed = config.task, config.train.seed
        examples = [
            task.example(seed, i, g) for g in range(task.pairs) for i in range(config.eval_examples)
        ]
        ids = [example_ids(e) for e in examples]
        # token spans of the records (byte offsets = character offsets: ASCII prompts)
        spans = examples[0].spans
        picks = np.linspace(0, len(examples) - 1, config.influence_samples).round().astype(int)
        inputs = torch.tensor([ids[i][0] for i in picks], dtype=torch.long)  # (S, L)
        # the learning signal's examples: the first signal_examples of every gold index
        per_gold = min(config.signal_examples, config.eval_examples)
        rows = [g * config.eval_examples + i for g in range(task.pairs) for i in range(per_gold)]
        return cls(
            examples=tuple(examples),
            prompts=tuple(tuple(p) for p, _ in ids),
            targets=tuple(tuple(t) for _, t in ids),
            positions=np.array([e.gold_index for e in examples]),
            spans=tuple(spans),
            influence_inputs=inputs,
            signal_rows=tuple(rows),
        )


@dataclass(frozen=True)
class RetrievalCheckpoint:
    """What one checkpoint measured.

    positions/summary: teacher-forced argmax accuracy by gold index (0-indexed).
    probability: (pairs,) the mean teacher-forced probability of the whole answer,
    exp(log p(answer | prompt)), by gold index (a smooth accuracy).
    influence: (L,) influence of every prompt position (0-indexed) on the last one;
    record_influence: (pairs,) its mean over each record's tokens. link_accuracy and
    link_logprob: Spearman of accuracy / mean log-prob by gold index against
    record_influence (None when either is constant). signal: the learning signal of
    each record (None when ``signal_examples`` is 0). residual_strength: (H,) the
    theory's a_l in the Jacobian (:func:`lostmid.influence.residual_strength`, method
    ``jacobian``), measured at step 0 only (None elsewhere, and for a model that inserts
    tokens of its own, where a per input position is not defined): rho_H's parameter.
    """

    step: int
    tokens_seen: int
    train_loss: float | None
    positions: tuple[PositionScore, ...]
    summary: RetrievalSummary
    influence: tuple[float, ...]
    record_influence: tuple[float, ...]
    link_accuracy: float | None
    link_logprob: float | None
    seconds: float
    probability: tuple[float, ...] = ()
    signal: RecordSignal | None = None
    residual_strength: tuple[float, ...] | None = None

    @property
    def accuracy(self) -> np.ndarray:
        """(pairs,) argmax accuracy by gold index."""
        return np.array([p.accuracy for p in self.positions], dtype=np.float64)

    def record(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "tokens_seen": self.tokens_seen,
            "train_loss": self.train_loss,
            "positions": [p.record() for p in self.positions],
            "summary": self.summary.record(),
            "influence": list(self.influence),
            "record_influence": list(self.record_influence),
            "link": {
                "spearman_accuracy": self.link_accuracy,
                "spearman_logprob": self.link_logprob,
            },
            "seconds": self.seconds,
            "probability": list(self.probability),
            "learning_signal": None if self.signal is None else self.signal.record(),
            "residual_strength": None
            if self.residual_strength is None
            else list(self.residual_strength),
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RetrievalCheckpoint:
        """The checkpoint :meth:`record` wrote (the summary recomputed from the scores)."""
        positions = tuple(
            PositionScore(
                position=p["index"],
                axis="index",
                n=p["n"],
                correct=p["correct"],
                accuracy=p["accuracy"],
                ci_low=p["ci_low"],
                ci_high=p["ci_high"],
                mean_logprob=p["mean_logprob"],
                logprob_ci_low=p.get("logprob_ci_low"),
                logprob_ci_high=p.get("logprob_ci_high"),
            )
            for p in record["positions"]
        )
        signal = record.get("learning_signal")
        return cls(
            step=record["step"],
            tokens_seen=record["tokens_seen"],
            train_loss=record["train_loss"],
            positions=positions,
            summary=summarise_positions(positions, "teacher"),
            influence=tuple(record["influence"]),
            record_influence=tuple(record["record_influence"]),
            link_accuracy=record["link"]["spearman_accuracy"],
            link_logprob=record["link"]["spearman_logprob"],
            seconds=record["seconds"],
            probability=tuple(record.get("probability", ())),
            residual_strength=None
            if record.get("residual_strength") is None
            else tuple(record["residual_strength"]),
            signal=None
            if signal is None
            else RecordSignal(
                eta=np.asarray(signal["eta"], dtype=np.float64),
                eta_gold=np.array(
                    [np.nan if v is None else v for v in signal["eta_gold"]], dtype=np.float64
                ),
                loss=signal["loss"],
                examples=signal["examples"],
            ),
        )


def evaluate_checkpoint(
    model: PreTrainedModel,
    heldout: HeldOut,
    config: RetrievalTrainConfig,
    *,
    step: int,
    tokens_seen: int,
    train_loss: float | None,
) -> RetrievalCheckpoint:
    """Accuracy by gold index, the influence profile, their link and the learning signal
    of each record, at this step."""
    from lostmid.influence import LengthChangedError, influence_profile, residual_strength
    from lostmid.train.model import as_loaded, frozen

    begin = time.perf_counter()
    with frozen(model):
        scores = teacher_forced(model, heldout.prompts, heldout.targets, batch_size=512)
        loaded = as_loaded(model, config.train.seed)
        profile = influence_profile(
            loaded,
            heldout.influence_inputs,
            probes=config.influence_probes,
            seed=config.train.seed,
            batch_size=heldout.influence_inputs.shape[0],
        )
        strength = None
        if step == 0:
            try:
                strength = residual_strength(
                    loaded,
                    heldout.influence_inputs,
                    method="jacobian",
                    batch_size=heldout.influence_inputs.shape[0],
                    seed=config.train.seed,
                )
            except LengthChangedError:  # a is not defined per input position: None
                strength = None
    signal = None
    if heldout.signal_rows:
        rows = heldout.signal_rows
        signal = record_learning_signal(
            model,
            [heldout.prompts[i] for i in rows],
            [heldout.targets[i] for i in rows],
            heldout.spans,
            [int(heldout.positions[i]) for i in rows],
        )
    probability = [
        float(np.mean(np.exp(scores.logprob[heldout.positions == g])))
        for g in range(len(heldout.spans))
    ]
    positions = score_positions(heldout.positions, scores.argmax, scores.logprob, "index")
    influence = np.asarray(profile.influence, dtype=np.float64)
    per_record = span_means(influence, list(heldout.spans))
    accuracy = np.array([p.accuracy for p in positions])
    logprob = np.array([p.mean_logprob for p in positions], dtype=np.float64)
    return RetrievalCheckpoint(
        step=step,
        tokens_seen=tokens_seen,
        train_loss=train_loss,
        positions=positions,
        summary=summarise_positions(positions, "teacher"),
        influence=tuple(influence.tolist()),
        record_influence=tuple(per_record.tolist()),
        link_accuracy=finite_or_none(spearman(accuracy, per_record)),
        link_logprob=finite_or_none(spearman(logprob, per_record)),
        seconds=time.perf_counter() - begin,
        probability=tuple(probability),
        signal=signal,
        residual_strength=None if strength is None else tuple(float(a) for a in strength),
    )
