"""What a retrieval model is trained on: the task, the batches, the masked loss.

Each training row is one retrieval example, byte-level kv (Liu's format or the compact
``{kv,kv,...}k`` one) or token-level MQAR, with its gold index drawn from
:func:`~lostmid.behaviour.tasks.gold.gold_distribution` (uniform by default). A fraction
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

from lostmid.behaviour.tasks.gold import gold_distribution
from lostmid.behaviour.training.task import TRAIN_INDEX, RetrievalTask
from lostmid.train.loop import Trainer


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
            index = TRAIN_INDEX + step * self.batch_size + row
            if row < corpus_rows:
                assert self.corpus is not None
                start = int(rng.integers(0, self.corpus.size - self.length))
                tokens[row] = self.corpus[start : start + self.length]
                mask[row] = weight[row] = 1.0
                continue
            golds = rng.choice(self.task.pairs, size=self.task.queries, replace=False, p=probs)
            ids, answers = self.task.plugin.training_row(
                self.task, self.seed, index, [int(g) for g in golds]
            )
            tokens[row, : len(ids)] = ids
            for start, stop, gold in answers:  # loss on the tokens predicting the answer
                mask[row, start - 1 : stop - 1] = 1.0
                weight[row, start - 1 : stop - 1] = golds_weight[gold]
        return torch.from_numpy(tokens), torch.from_numpy(mask), torch.from_numpy(weight)

    def batch(self, step: int) -> torch.Tensor:
        return self.sample(step)[0]


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
