"""What a retrieval model is trained on: the task, the batches, the masked loss.

Each training row is one retrieval example, byte-level kv (Liu's format or the compact
``{kv,kv,...}k`` one) or token-level MQAR, with its gold index drawn from
:func:`~lostmid.behaviour.gold.gold_distribution` (uniform by default). A fraction
``mix`` of the rows of every batch can be windows of the embedded stdlib corpus
instead. The loss is the next-token cross-entropy on the answer tokens of retrieval
rows and on every token of corpus rows, each row normalised by its own weight:

    loss = mean_b  sum_t m_bt CE_bt / sum_t m_bt.

The optimiser, learning-rate schedule, clipping, state and checkpoint steps are
:class:`lostmid.train.loop.Trainer`'s as they are. That loop takes a custom batch
sampler but only a per-position loss weight shared by all rows; a per-row answer mask
needs :class:`MaskedTrainer`, a subclass that overrides ``train_step`` alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from lostmid.behaviour.example import RetrievalExample
from lostmid.behaviour.gold import gold_distribution
from lostmid.behaviour.kv import KV_STYLES, kv_example
from lostmid.behaviour.mqar import mqar_example, mqar_pairs
from lostmid.checks import check_choice, check_positive, check_unit_interval
from lostmid.errors import UserError
from lostmid.train.loop import Trainer

TRAIN_TASKS = ("kv", "mqar")
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
        tokens, mask, weight = self.sampler.weighted_sample(self.step)
        mask, weight = mask.to(self.device), weight.to(self.device)
        return self.update(
            tokens.to(self.device),
            lambda logits, targets: masked_next_token_loss(logits, targets, mask, weight),
        )
