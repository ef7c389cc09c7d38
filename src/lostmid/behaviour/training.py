"""Small models that learn to retrieve, watched by gold position and by influence.

Data. Each training row is one retrieval example, byte-level kv (Liu's format or the
compact ``{kv,kv,...}k`` one) or token-level MQAR, with its gold index drawn from
:func:`~lostmid.behaviour.tasks.gold_distribution` (uniform by default). A fraction
``mix`` of the rows of every batch can be windows of the embedded stdlib corpus
instead. The loss is the next-token cross-entropy on the answer tokens of retrieval
rows and on every token of corpus rows, each row normalised by its own weight:

    loss = mean_b  sum_t m_bt CE_bt / sum_t m_bt.

Loop. The optimiser, learning-rate schedule, clipping, state and checkpoint steps are
:class:`lostmid.train.loop.Trainer`'s as they are. That loop takes a custom batch
sampler but only a per-position loss weight shared by all rows; a per-row answer mask
needs :class:`MaskedTrainer`, a subclass that overrides ``train_step`` alone.

Evaluation at each checkpoint (log-spaced, :func:`lostmid.train.loop.checkpoint_steps`,
plus every ``eval_every`` steps): teacher-forced argmax accuracy and mean log-prob by
gold index on held-out examples (the same ones each time, paired across gold indices),
the influence profile of every prompt position on the last one
(:func:`lostmid.influence.influence_profile`), the influence of each record (mean over
its tokens), and the link: Spearman between accuracy (and log-prob) by gold index and
the influence of those records.

What short runs showed (2 layers x 128, 0.43M parameters, batch 32, AdamW 1e-3 cosine,
seed 0, one run each, 2 shared CPU cores; accuracy = teacher-forced argmax on 64
held-out examples per gold index, 48 for 12+ pairs):

* ``retrieval-tiny`` (6 pairs, 1-character keys, 4 queries a row): accuracy 1.00 at
  every gold index from step 500 on (the jump happens between steps 300 and 500);
  2000 steps in 113 s. With 1 query a row it stayed at 0.26-0.33 after 4000 steps, and
  with a ``k:v ... k:`` layout (the value two tokens after its key) also at 0.26.
* 12 pairs, 1-character keys: 1.00 everywhere from step 500 on.
* 8 pairs, 2-character keys: plateau 0.63-0.72, flat across gold indices.
* 16 pairs, 2-character keys: 0.07 after 2500 steps (not learnt).
* 12 pairs with 75 % of the rows stdlib text (``mix=0.75``): 0.70 after 2000 steps,
  the ends slightly *below* the middle (0.62 first, 0.66 last, 0.70-0.75 between;
  within the intervals).

So with gold indices drawn uniformly, no setting tried gives a valley after training:
each index is trained equally often and the models either solve all of them or none
better than the others. The influence profile does show a structural primacy tail at
init (record 1 about 2.8x record 6 in ``retrieval-tiny``), which training reshapes.
A valley to act on has to come from the data (gold positions drawn unevenly, e.g.
``gold="power:A"`` with A < 1 makes the early pairs rare) or from longer contexts than
these CPU runs reach.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from lostmid.behaviour.score import (
    PositionScore,
    RetrievalSummary,
    score_positions,
    summarise_positions,
    teacher_forced,
)
from lostmid.behaviour.tasks import (
    KV_STYLES,
    RetrievalExample,
    gold_distribution,
    kv_example,
    mqar_example,
    mqar_pairs,
)
from lostmid.checks import check_choice, check_positive, check_unit_interval
from lostmid.errors import UserError
from lostmid.runinfo import Timer, prepare_out, run_metadata, write_json
from lostmid.train.config import ModelSpec, TrainConfig
from lostmid.train.loop import Trainer, checkpoint_steps, learning_rate
from lostmid.train.model import ModelVariant

SCHEMA = "lostmid.behaviour.retrieval_train/1"
RESULT = "retrieval.json"
FIGURE = "retrieval.png"
CHECKPOINTS = "checkpoints"
TRAIN_TASKS = ("kv", "mqar")
GENERATION_MARGIN = 16
_TRAIN_INDEX = 1 << 40  # training examples are indices >= this; held-out ones are 0..


@dataclass(frozen=True)
class RetrievalTask:
    """The retrieval examples a model is trained on.

    task: ``kv`` (byte-level) or ``mqar`` (token ids ``offset .. offset + vocab - 1``).
    pairs: records per example; key_chars, style: kv keys/values and prompt format;
    queries: queries per training row (mqar; kv with the compact style): after the
        first query and its answer come ``queries - 1`` more (key, value) queries of
        other pairs, each answer a loss token; evaluation always asks one;
    gold: ``uniform`` or ``power:A``; mix: fraction of rows that are corpus windows.
    """

    task: str = "kv"
    pairs: int = 6
    key_chars: int = 1
    style: str = "compact"
    vocab: int = 64
    offset: int = 128
    queries: int = 1
    gold: str = "uniform"
    mix: float = 0.0

    def __post_init__(self) -> None:
        check_choice("--task", self.task, TRAIN_TASKS)
        check_choice("--style", self.style, KV_STYLES)
        for name in ("pairs", "key_chars", "vocab", "queries"):
            check_positive(f"--{name.replace('_', '-')}", getattr(self, name))
        check_unit_interval("--mix", self.mix)
        if self.mix == 1.0:
            raise UserError("--mix must be below 1 (some rows must be retrieval examples)")
        gold_distribution(self.gold, self.pairs)  # checks the spec
        if self.queries > self.pairs:
            raise UserError(f"--queries must be <= --pairs ({self.pairs}), got {self.queries}")
        if self.task == "mqar":
            mqar_pairs(0, 0, self.pairs, self.vocab, self.offset)  # checks vocab and pairs
        else:
            if self.queries > 1 and self.style != "compact":
                raise UserError("--queries > 1 needs --style compact for kv")
            kv_example(seed=0, index=0, pairs=self.pairs, gold_index=0,
                       key_chars=self.key_chars, style=self.style)  # fmt: skip

    def example(self, seed: int, index: int, gold_index: int) -> RetrievalExample:
        """Held-out (evaluation) example ``index`` with its gold pair at ``gold_index``."""
        if self.task == "kv":
            return kv_example(
                seed=seed,
                index=index,
                pairs=self.pairs,
                gold_index=gold_index,
                key_chars=self.key_chars,
                style=self.style,
            )
        return mqar_example(
            seed=seed,
            index=index,
            pairs=self.pairs,
            gold_index=gold_index,
            vocab=self.vocab,
            offset=self.offset,
        )

    def vocab_size(self) -> int:
        """Model vocabulary: bytes, or more when the mqar ids go beyond 255."""
        return max(256, self.offset + self.vocab) if self.task == "mqar" else 256


def example_ids(example: RetrievalExample) -> tuple[list[int], list[int]]:
    """(prompt ids, target ids) under the byte tokenizer (or the task's own ids)."""
    if example.prompt_ids is not None:
        return list(example.prompt_ids), list(example.target_ids or ())
    return list(example.prompt.encode()), list(example.target.encode())


def mqar_training_row(
    task: RetrievalTask, seed: int, index: int, golds: np.ndarray
) -> tuple[list[int], list[int]]:
    """(ids, answer positions) of an MQAR row ``k1 v1 .. kN vN q1 a1 .. qM aM``: query
    ``m`` asks for pair ``golds[m]`` (0-indexed); answer positions index ``ids``."""
    drawn = mqar_pairs(seed, index, task.pairs, task.vocab, task.offset)
    ids = [t for pair in drawn for t in pair]
    answers = []
    for g in golds:
        ids.extend(drawn[int(g)])
        answers.append(len(ids) - 1)
    return ids, answers


@dataclass(frozen=True)
class RetrievalBatches:
    """The training batches: a pure function of (seed, step), as the loop requires.

    ``sample(step)`` gives tokens (B, length) and the loss mask (B, length - 1) over the
    predicted tokens ``tokens[:, 1:]``; ``batch(step)`` the tokens alone;
    ``weighted_sample(step)`` also the loss weight (B, length - 1) of
    :func:`masked_next_token_loss`.

    Hooks (both None: the task's own law, unweighted). ``gold_probs(step)``: the
    probabilities (pairs,) of the gold index at this step, instead of ``task.gold``; the
    first query of a row is drawn from them, further queries of the row without
    replacement (successive sampling). ``gold_weights`` (pairs,): the loss weight of an
    answer token whose gold index is g is ``gold_weights[g]``; corpus tokens weigh 1.
    """

    task: RetrievalTask
    batch_size: int
    seed: int
    length: int
    corpus: np.ndarray | None = None
    gold_probs: Callable[[int], np.ndarray] | None = None
    gold_weights: np.ndarray | None = None

    def sample(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        tokens, mask, _ = self.weighted_sample(step)
        return tokens, mask

    def weighted_sample(self, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rng = np.random.default_rng([self.seed, step, 0x7A5C])
        if self.gold_probs is None:
            probs = gold_distribution(self.task.gold, self.task.pairs)
        else:
            probs = np.asarray(self.gold_probs(step), dtype=np.float64)
        golds_weight = np.ones(self.task.pairs) if self.gold_weights is None else self.gold_weights
        corpus_rows = int(round(self.task.mix * self.batch_size)) if self.corpus is not None else 0
        tokens = np.zeros((self.batch_size, self.length), dtype=np.int64)
        mask = np.zeros((self.batch_size, self.length - 1), dtype=np.float32)
        weight = np.zeros((self.batch_size, self.length - 1), dtype=np.float32)
        for row in range(self.batch_size):
            index = _TRAIN_INDEX + step * self.batch_size + row
            if row < corpus_rows:
                assert self.corpus is not None
                start = int(rng.integers(0, self.corpus.size - self.length))
                tokens[row] = self.corpus[start : start + self.length]
                mask[row] = weight[row] = 1.0
                continue
            if self.task.task == "mqar":
                golds = rng.choice(self.task.pairs, size=self.task.queries, replace=False, p=probs)
                ids, answers = mqar_training_row(self.task, self.seed, index, golds)
                tokens[row, : len(ids)] = ids
                mask[row, np.asarray(answers) - 1] = 1.0
                weight[row, np.asarray(answers) - 1] = golds_weight[golds]
            else:
                golds = rng.choice(self.task.pairs, size=self.task.queries, replace=False, p=probs)
                example = self.task.example(self.seed, index, int(golds[0]))
                prompt, target = example_ids(example)
                ids = prompt + target
                mask[row, len(prompt) - 1 : len(ids) - 1] = 1.0
                weight[row, len(prompt) - 1 : len(ids) - 1] = golds_weight[golds[0]]
                for g in golds[1:]:  # more queries: key then value, value is a loss token
                    key, value = example.records[int(g)]
                    ids += list(key.encode())
                    mask[row, len(ids) - 1 : len(ids) - 1 + len(value)] = 1.0
                    weight[row, len(ids) - 1 : len(ids) - 1 + len(value)] = golds_weight[g]
                    ids += list(value.encode())
                tokens[row, : len(ids)] = ids
        return torch.from_numpy(tokens), torch.from_numpy(mask), torch.from_numpy(weight)

    def batch(self, step: int) -> torch.Tensor:
        return self.sample(step)[0]


def sequence_length(task: RetrievalTask) -> int:
    """Tokens of one training row (prompt + answer; all rows have the same length)."""
    if task.task == "mqar":
        return 2 * task.pairs + 2 * task.queries
    prompt, target = example_ids(task.example(0, 0, 0))
    return len(prompt) + len(target) + (task.queries - 1) * 2 * task.key_chars


def masked_next_token_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """mean_b sum_t w_bt CE_bt / sum_t m_bt: each row's loss over its masked tokens, each
    token weighted by w (w = m when ``weight`` is None).

    Args:
        logits: (B, T, V); targets: (B, T); mask: (B, T) weights >= 0, each row > 0;
        weight: (B, T) or None.

    >>> logits = torch.zeros(1, 2, 4); targets = torch.tensor([[0, 1]])
    >>> round(float(masked_next_token_loss(logits, targets, torch.tensor([[0., 1.]]))), 4)
    1.3863
    """
    per_token = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), reduction="none")
    per_token = per_token.view(targets.shape)  # (B, T)
    weight = mask if weight is None else weight
    return ((per_token * weight).sum(dim=1) / mask.sum(dim=1)).mean()


class MaskedTrainer(Trainer):
    """:class:`~lostmid.train.loop.Trainer` with a per-row loss mask from the sampler.

    Only ``train_step`` differs: the batch comes with its mask and loss weight
    (``sampler.weighted_sample(step)``) and the loss is :func:`masked_next_token_loss`.
    """

    sampler: RetrievalBatches

    def train_step(self) -> float:
        lr = learning_rate(self.step, self.config)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        tokens, mask, weight = self.sampler.weighted_sample(self.step)
        tokens, mask, weight = tokens.to(self.device), mask.to(self.device), weight.to(self.device)
        inputs, targets = tokens[:, :-1], tokens[:, 1:]  # (B, T) each
        self.model.train()
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            logits = self.model(input_ids=inputs).logits  # (B, T, V)
        loss = masked_next_token_loss(logits, targets, mask, weight)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.tokens_seen += inputs.numel()
        value = float(loss.detach())
        self.recent_losses.append(value)
        return value


# -- configuration ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalTrainConfig:
    """A retrieval training run; validated on construction.

    ``train`` holds the model shape and the optimisation (its ``model.context`` is set
    from the task's row length by :meth:`resolved_train`). ``eval_examples``: held-out
    examples per gold index; ``eval_every``: also evaluate every this many steps
    (0: only at the log-spaced checkpoints); ``influence_samples``/``_probes``: inputs
    and probes of the influence profile.
    """

    preset: str = "retrieval-tiny"
    task: RetrievalTask = field(default_factory=RetrievalTask)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval_examples: int = 64
    eval_every: int = 500
    influence_samples: int = 12
    influence_probes: int = 4
    save_checkpoints: bool = True

    def __post_init__(self) -> None:
        check_positive("--eval-examples", self.eval_examples)
        check_positive("--influence-samples", self.influence_samples)
        check_positive("--influence-probes", self.influence_probes)
        if self.eval_every < 0:
            raise UserError(f"--eval-every must be >= 0, got {self.eval_every}")
        self.resolved_train()  # TrainConfig checks itself when it is made

    def resolved_train(self) -> TrainConfig:
        """``train`` with the task's vocab and the model's context = one row's inputs plus
        ``GENERATION_MARGIN`` positions, so that greedy decoding a few tokens past the
        answer (``lostmid retrieve --scoring generate``) stays within the model's length.
        Training rows use the first ``row length - 1`` positions."""
        model = replace(
            self.train.model,
            context=sequence_length(self.task) - 1 + GENERATION_MARGIN,
            vocab_size=max(self.train.model.vocab_size, self.task.vocab_size()),
        )
        return replace(self.train, model=model, corpus=None)

    def eval_steps(self) -> list[int]:
        steps = set(checkpoint_steps(self.train.steps))
        if self.eval_every:
            steps |= set(range(0, self.train.steps + 1, self.eval_every))
        return sorted(steps)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["train"] = self.resolved_train().to_dict()
        return data


def _llama_style(layers: int, hidden: int, heads: int) -> ModelSpec:
    """A Llama-style byte model (RMSNorm, RoPE, SwiGLU of width ~8/3 d, MHA)."""
    intermediate = 8 * math.ceil(8 * hidden / 3 / 8)
    return ModelSpec(
        family="qwen2",
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        intermediate=intermediate,
        context=64,
    )


def _optimiser(steps: int, batch: int, model: ModelSpec, seed: int = 0) -> TrainConfig:
    return TrainConfig(
        preset="retrieval",
        model=model,
        steps=steps,
        batch_size=batch,
        lr=1e-3,
        min_lr_ratio=0.1,
        warmup_steps=min(100, max(steps // 10, 1)),
        weight_decay=0.1,
        seed=seed,
        resume_every=max(steps, 1),
    )


RETRIEVAL_PRESETS: dict[str, RetrievalTrainConfig] = {
    # 2 layers x 128 (0.43M parameters), 6 pairs of 1-character keys, compact format,
    # 4 queries a row (with 1 query a row, 4000 steps stayed near 0.3: too little signal)
    "retrieval-tiny": RetrievalTrainConfig(
        preset="retrieval-tiny",
        task=RetrievalTask(task="kv", pairs=6, key_chars=1, style="compact", queries=4),
        train=_optimiser(2000, 32, _llama_style(2, 128, 4)),
        eval_every=250,
    ),
    # token-level MQAR at the associative-recall literature's CPU scale
    "mqar-tiny": RetrievalTrainConfig(
        preset="mqar-tiny",
        task=RetrievalTask(task="mqar", pairs=8, vocab=64, queries=4),
        train=_optimiser(3000, 32, _llama_style(2, 128, 4)),
    ),
    # seconds, for tests and smoke runs
    "retrieval-micro": RetrievalTrainConfig(
        preset="retrieval-micro",
        task=RetrievalTask(task="kv", pairs=4, key_chars=1, style="compact"),
        train=_optimiser(6, 4, _llama_style(1, 32, 2)),
        eval_examples=3,
        eval_every=3,
        influence_samples=2,
        influence_probes=2,
        save_checkpoints=False,
    ),
}


def retrieval_preset(name: str) -> RetrievalTrainConfig:
    """The preset ``name`` (``retrieval-tiny``, ``mqar-tiny``, ``retrieval-micro``)."""
    check_choice("--preset", name, RETRIEVAL_PRESETS)
    return RETRIEVAL_PRESETS[name]


# -- evaluation -------------------------------------------------------------------------------


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman rank correlation; None when either side is constant (undefined).

    >>> spearman(np.array([1., 2., 3.]), np.array([10., 30., 20.]))
    0.5
    >>> spearman(np.array([1., 1.]), np.array([1., 2.])) is None
    True
    """
    from scipy.stats import spearmanr

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(spearmanr(x, y).statistic)


def span_means(profile: np.ndarray, spans: list[tuple[int, int]]) -> np.ndarray:
    """Mean of ``profile`` (L,) over each ``[start, end)`` span (0-indexed positions).

    >>> span_means(np.arange(6.0), [(0, 2), (2, 6)]).tolist()
    [0.5, 3.5]
    """
    return np.array([float(np.mean(profile[a:b])) for a, b in spans])


@dataclass(frozen=True)
class HeldOut:
    """Fixed evaluation examples: ``eval_examples`` per gold index, paired."""

    examples: tuple[RetrievalExample, ...]
    prompts: tuple[tuple[int, ...], ...]
    targets: tuple[tuple[int, ...], ...]
    positions: np.ndarray
    spans: tuple[tuple[int, int], ...]
    influence_inputs: torch.Tensor

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
        return cls(
            examples=tuple(examples),
            prompts=tuple(tuple(p) for p, _ in ids),
            targets=tuple(tuple(t) for _, t in ids),
            positions=np.array([e.gold_index for e in examples]),
            spans=tuple(spans),
            influence_inputs=inputs,
        )


@dataclass(frozen=True)
class RetrievalCheckpoint:
    """What one checkpoint measured.

    positions/summary: teacher-forced argmax accuracy by gold index (0-indexed).
    influence: (L,) influence of every prompt position (0-indexed) on the last one;
    record_influence: (pairs,) its mean over each record's tokens. link_accuracy and
    link_logprob: Spearman of accuracy / mean log-prob by gold index against
    record_influence (None when either is constant).
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
        }


def evaluate_checkpoint(
    model: torch.nn.Module,
    heldout: HeldOut,
    config: RetrievalTrainConfig,
    *,
    step: int,
    tokens_seen: int,
    train_loss: float | None,
) -> RetrievalCheckpoint:
    """Accuracy by gold index, the influence profile and their link, at this step."""
    from lostmid.influence import influence_profile
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
        link_accuracy=spearman(accuracy, per_record),
        link_logprob=spearman(logprob, per_record),
        seconds=time.perf_counter() - begin,
    )


# -- the run -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievalHooks:
    """Plug-in points for interventions on a retrieval run (remedies); all None is the
    plain run.

    gold_probs: step -> probabilities (pairs,) of the gold index (see
        :class:`RetrievalBatches`); gold_weights: (pairs,) loss weight per gold index;
    variant: model surgery right after building (:class:`lostmid.train.model.ModelVariant`);
    on_checkpoint: called with each :class:`RetrievalCheckpoint` as soon as it is measured
        (before training continues), e.g. to adapt ``gold_probs`` to accuracy by position.
    """

    gold_probs: Callable[[int], np.ndarray] | None = None
    gold_weights: np.ndarray | None = None
    variant: ModelVariant | None = None
    on_checkpoint: Callable[[RetrievalCheckpoint], None] | None = None


@dataclass(frozen=True)
class RetrievalTrainResult:
    """A finished retrieval training run: one :class:`RetrievalCheckpoint` per
    evaluation step (the first at step 0, init; the last after training)."""

    config: RetrievalTrainConfig
    parameters: int
    checkpoints: tuple[RetrievalCheckpoint, ...]
    train_seconds: float
    wall_seconds: float

    @property
    def initial(self) -> RetrievalCheckpoint:
        return self.checkpoints[0]

    @property
    def final(self) -> RetrievalCheckpoint:
        return self.checkpoints[-1]

    def record(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "config": self.config.to_dict(),
            "parameters": self.parameters,
            "sequence_length": sequence_length(self.config.task),
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
            "train_seconds": self.train_seconds,
            "wall_seconds": self.wall_seconds,
        }


def train_retrieval(
    config: RetrievalTrainConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Any = None,
    hooks: RetrievalHooks | None = None,
) -> RetrievalTrainResult:
    """Train on retrieval, evaluate at every evaluation step, write under ``out``:
    ``retrieval.json`` (rewritten after each checkpoint), ``retrieval.png`` and, when
    ``save_checkpoints``, ``checkpoints/step_NNNNNN/`` (``save_pretrained`` + the byte
    tokenizer marker, so ``lostmid retrieve --model`` reads them). ``hooks``: the
    interventions of :class:`RetrievalHooks` (None: a plain run).

    Raises:
        UserError: results already in ``out`` without ``overwrite``.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from lostmid.behaviour.plot import plot_training
    from lostmid.behaviour.tokenizers import write_byte_marker
    from lostmid.report.plots import save_figure
    from lostmid.train.model import (
        build_model,
        parameter_count,
        resolve_device,
        save_checkpoint,
    )

    wall = time.perf_counter()
    out = Path(out)
    prepare_out(out, [RESULT, FIGURE, CHECKPOINTS], overwrite)
    if overwrite:
        shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)
    timer = Timer()
    train = config.resolved_train()
    task = config.task
    length = sequence_length(task)
    with timer("build"):
        corpus = None
        if task.mix > 0:
            from lostmid.train.corpus import load_corpus

            corpus = load_corpus(None, seed=train.seed, heldout_fraction=0.05, min_bytes=length + 1)
            corpus = corpus.train
        hooks = hooks or RetrievalHooks()
        sampler = RetrievalBatches(
            task, train.batch_size, train.seed, length, corpus, hooks.gold_probs, hooks.gold_weights
        )
        model = build_model(train.model, train.seed, hooks.variant)
        trainer = MaskedTrainer(model, train, sampler, device=resolve_device(train.device))  # type: ignore[arg-type]
        heldout = HeldOut.build(config)
    wanted = config.eval_steps()
    checkpoints: list[RetrievalCheckpoint] = []
    train_seconds = 0.0
    document: dict[str, Any] = {}

    def evaluate() -> None:
        losses = trainer.pop_losses()
        with timer("evaluate"):
            checkpoints.append(
                evaluate_checkpoint(
                    trainer.model,
                    heldout,
                    config,
                    step=trainer.step,
                    tokens_seen=trainer.tokens_seen,
                    train_loss=float(np.mean(losses)) if losses else None,
                )
            )
        if hooks.on_checkpoint is not None:
            hooks.on_checkpoint(checkpoints[-1])
        if config.save_checkpoints:
            with timer("checkpoint_io"):
                folder = save_checkpoint(
                    trainer.model, out / CHECKPOINTS / f"step_{trainer.step:06d}"
                )
                write_byte_marker(folder, task=asdict(task))
        document.update(
            RetrievalTrainResult(
                config, parameter_count(model), tuple(checkpoints), train_seconds, 0.0
            ).record()
        )
        write_json(out / RESULT, document)

    progress = Progress(
        TextColumn("[bold]train retrieval[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]} acc {task.fields[acc]}"),
        console=console,
        disable=console is None,
        transient=True,
    )
    with progress:
        bar = progress.add_task("train", total=train.steps, loss="-", acc="-")
        while True:
            if trainer.step in wanted:
                evaluate()
                progress.update(bar, acc=f"{checkpoints[-1].summary.mean_accuracy:.2f}")
            if trainer.step >= train.steps:
                break
            begin = time.perf_counter()
            loss = trainer.train_step()
            train_seconds += time.perf_counter() - begin
            progress.update(bar, advance=1, loss=f"{loss:.3f}")
    timer.seconds["train"] = train_seconds
    result = RetrievalTrainResult(
        config=config,
        parameters=parameter_count(model),
        checkpoints=tuple(checkpoints),
        train_seconds=train_seconds,
        wall_seconds=time.perf_counter() - wall,
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
    document["metadata"] = run_metadata(
        "train-retrieval", config.to_dict(), train.seed, timer.seconds
    )
    write_json(out / RESULT, document)
    if console is not None:
        console.print(training_table(result))
    return result


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


def resolve_retrieval_config(
    preset_name: str = "retrieval-tiny",
    *,
    task: str | None = None,
    pairs: int | None = None,
    key_chars: int | None = None,
    style: str | None = None,
    vocab: int | None = None,
    queries: int | None = None,
    gold: str | None = None,
    mix: float | None = None,
    steps: int | None = None,
    seed: int | None = None,
    eval_every: int | None = None,
    save_checkpoints: bool | None = None,
) -> RetrievalTrainConfig:
    """A preset with command-line overrides (None keeps the preset's value); the
    entry point for ``lostmid train --task kv|mqar``.

    >>> c = resolve_retrieval_config("retrieval-tiny", pairs=8, steps=100, seed=2)
    >>> c.task.pairs, c.train.steps, c.train.seed, c.task.key_chars
    (8, 100, 2, 1)
    """
    base = retrieval_preset(preset_name)
    task_changes = {
        k: v
        for k, v in {
            "task": task,
            "pairs": pairs,
            "key_chars": key_chars,
            "style": style,
            "vocab": vocab,
            "queries": queries,
            "gold": gold,
            "mix": mix,
        }.items()
        if v is not None
    }
    train_changes: dict[str, Any] = {}
    if steps is not None:
        check_positive("--steps", steps)
        train_changes.update(steps=steps, warmup_steps=min(base.train.warmup_steps, steps))
    if seed is not None:
        train_changes["seed"] = seed
    changes: dict[str, Any] = {
        "task": replace(base.task, **task_changes),
        "train": replace(base.train, **train_changes),
    }
    if eval_every is not None:
        changes["eval_every"] = eval_every
    if save_checkpoints is not None:
        changes["save_checkpoints"] = save_checkpoints
    return replace(base, **changes)
