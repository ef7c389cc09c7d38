"""The retrieval task a small model is trained on (:class:`RetrievalTask`), and the
length and ids of one of its rows under the byte tokenizer. No torch: the CLI builds
its ``lostmid train --task`` options from these fields at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from lostmid.behaviour.example import RetrievalExample
from lostmid.behaviour.gold import gold_distribution
from lostmid.behaviour.kv import KV_STYLES, kv_example
from lostmid.behaviour.mqar import mqar_example, mqar_pairs
from lostmid.checks import check_choice, check_positive, check_unit_interval
from lostmid.errors import UserError

TRAIN_TASKS = ("kv", "mqar")
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


def sequence_length(task: RetrievalTask) -> int:
    """Tokens of one training row (prompt + answer; all rows have the same length)."""
    if task.task == "mqar":
        return 2 * task.pairs + 2 * task.queries
    prompt, target = example_ids(task.example(0, 0, 0))
    return len(prompt) + len(target) + (task.queries - 1) * 2 * task.key_chars
