"""A validation split for remedies that adapt to the model: accuracy by gold index on
examples that the final score never sees.

The final score of a retrieval run (and every checkpoint's) is measured on its held-out
examples, indices ``0 .. eval_examples - 1`` of the run's seed
(:class:`lostmid.behaviour.training.evaluate.HeldOut`); training rows are indices from
:data:`~lostmid.behaviour.training.task.TRAIN_INDEX` (2^40) on. The validation split is
indices ``VALIDATION_INDEX .. VALIDATION_INDEX + per_record - 1`` (``VALIDATION_INDEX`` =
2^39), one example per index and gold record, so the three sets are disjoint for any
run shorter than 2^39 held-out examples. A remedy that sets its law from accuracy
(``oversample:adaptive``, ``oversample:deficit``) reads this split only
(:meth:`lostmid.remedies.base.Remedy.on_validation`); the final score is the held-out
one, unchanged by which validation examples were drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from lostmid.behaviour.training.task import TRAIN_INDEX, RetrievalTask, example_ids
from lostmid.checks import check_positive
from lostmid.errors import UserError

if TYPE_CHECKING:
    import torch

VALIDATION_INDEX = 1 << 39


@dataclass(frozen=True)
class ValidationSplit:
    """``per_record`` examples per gold index (paired: example index i holds the same
    records at every gold index), token ids under the task's tokenizer."""

    indices: tuple[int, ...]
    prompts: tuple[tuple[int, ...], ...]
    targets: tuple[tuple[int, ...], ...]
    golds: tuple[int, ...]
    pairs: int

    @classmethod
    def build(
        cls, task: RetrievalTask, seed: int, per_record: int, start: int = VALIDATION_INDEX
    ) -> ValidationSplit:
        """Examples ``start .. start + per_record - 1`` of ``seed``, each at every gold
        index; ``start`` must leave the range below the training rows (2^40)."""
        check_positive("validation examples per record", per_record)
        if start < 0 or start + per_record > TRAIN_INDEX:
            raise UserError(f"validation indices must lie in [0, 2^40), got start {start}")
        indices = tuple(range(start, start + per_record))
        examples = [task.example(seed, i, g) for g in range(task.pairs) for i in indices]
        ids = [example_ids(e) for e in examples]
        return cls(
            indices=indices,
            prompts=tuple(tuple(p) for p, _ in ids),
            targets=tuple(tuple(t) for _, t in ids),
            golds=tuple(int(e.gold_index or 0) for e in examples),
            pairs=task.pairs,
        )

    def accuracy(self, model: torch.nn.Module) -> np.ndarray:
        """Teacher-forced argmax accuracy (pairs,) by gold index (0-indexed) of ``model``
        (a causal LM; measured in eval mode without gradients, its state restored)."""
        from lostmid.behaviour.decoding.generate import teacher_forced
        from lostmid.train.model import frozen

        with frozen(model):
            scores = teacher_forced(model, self.prompts, self.targets, batch_size=512)
        correct = np.asarray(scores.argmax, dtype=np.float64)
        golds = np.asarray(self.golds)
        return np.array([correct[golds == g].mean() for g in range(self.pairs)])


def validation_hook(
    split: ValidationSplit, on_validation: Callable[[np.ndarray, int], None]
) -> Callable[[torch.nn.Module, int], None]:
    """The ``on_evaluate(model, step)`` hook of a retrieval run
    (:class:`~lostmid.behaviour.training.RetrievalHooks`) that measures ``split``'s
    accuracy by gold index and hands it to ``on_validation(accuracy, step)``."""

    def hook(model: torch.nn.Module, step: int) -> None:
        on_validation(split.accuracy(model), step)

    return hook
