"""The retrieval task a small model is trained on (:class:`RetrievalTask`), and the
length and ids of one of its rows under the byte tokenizer. No torch: the CLI builds
its ``lostmid train --task`` options from these fields at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from lostmid.behaviour.tasks.example import RetrievalExample
from lostmid.behaviour.tasks.gold import gold_distribution
from lostmid.behaviour.tasks.kv import KV_STYLES
from lostmid.behaviour.tasks.plugin import IndexTask
from lostmid.behaviour.tasks.registry import INDEX_TASKS, trainable_task
from lostmid.checks import check_choice, check_positive, check_unit_interval
from lostmid.errors import UserError

TRAIN_TASKS = tuple(INDEX_TASKS)  # every task placed by index trains
TRAIN_INDEX = 1 << 40  # training examples are indices >= this; held-out ones are 0..


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
        trainable_task(self.task)  # a registered task placed by index, or one line
        check_choice("--style", self.style, KV_STYLES)
        for name in ("pairs", "key_chars", "vocab", "queries"):
            check_positive(f"--{name.replace('_', '-')}", getattr(self, name))
        check_unit_interval("--mix", self.mix)
        if self.mix == 1.0:
            raise UserError("--mix must be below 1 (some rows must be retrieval examples)")
        gold_distribution(self.gold, min(self.pairs, 2))  # checks the spec (pairs aside)
        if self.queries > self.pairs:
            raise UserError(f"--queries must be <= --pairs ({self.pairs}), got {self.queries}")
        self.plugin.check(self)
        self.plugin.training_row(self, 0, 0, range(self.queries))  # the row's own checks

    @property
    def plugin(self) -> IndexTask:
        """The registered task (:mod:`~lostmid.behaviour.tasks.registry`)."""
        return trainable_task(self.task)

    def example(self, seed: int, index: int, gold_index: int) -> RetrievalExample:
        """Held-out (evaluation) example ``index`` with its gold pair at ``gold_index``."""
        return self.plugin.example(self, seed, index, self.pairs, gold_index)

    def vocab_size(self) -> int:
        """Model vocabulary: bytes, or more when the mqar ids go beyond 255."""
        return self.plugin.vocab_size(self)


def example_ids(example: RetrievalExample) -> tuple[list[int], list[int]]:
    """(prompt ids, target ids) under the byte tokenizer (or the task's own ids)."""
    if example.prompt_ids is not None:
        return list(example.prompt_ids), list(example.target_ids or ())
    return list(example.prompt.encode()), list(example.target.encode())


def sequence_length(task: RetrievalTask) -> int:
    """Tokens of one training row (prompt + answer; all rows have the same length)."""
    ids, _ = task.plugin.training_row(task, 0, 0, range(task.queries))
    return len(ids)
