"""A retrieval task is one plug-in: a task placed by gold index, written here in one
place (:class:`~lostmid.behaviour.tasks.plugin.IndexTask`) and registered with one entry, is
generated, gridded by length, asked under ``--design shared``, accepted by retrieve's
options and trained on (its rows and loss mask), with no other edit. And the two
built-in ones reproduce what their generators give directly."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.retrieve.grid import grid_examples
from lostmid.behaviour.tasks import make_examples, registry
from lostmid.behaviour.tasks.example import RetrievalExample, example_seed
from lostmid.behaviour.tasks.kv import kv_example
from lostmid.behaviour.tasks.mqar import mqar_example
from lostmid.behaviour.tasks.plugin import IndexTask
from lostmid.behaviour.training.data import RetrievalBatches
from lostmid.behaviour.training.task import RetrievalTask, sequence_length
from lostmid.errors import UserError

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _draw(options: Any, seed: int, item: int, pairs: int) -> list[tuple[str, str]]:
    if pairs > len(LETTERS):
        raise UserError(f"--pairs must be <= {len(LETTERS)} for letters, got {pairs}")
    rng = random.Random(example_seed(seed, "letters", item))
    keys = rng.sample(LETTERS, pairs)
    return [(k, str(rng.randrange(10))) for k in keys]


def _ask(
    options: Any, records: Sequence[tuple[str, str]], gold: int, item: int
) -> RetrievalExample:
    text = " ".join(k + v for k, v in records)
    key, value = records[gold]
    spans, at = [], 0
    for k, v in records:
        spans.append((at, at + len(k + v)))
        at += len(k + v) + 1
    return RetrievalExample(
        task="letters",
        prompt=f"{text} ?{key}",
        key=key,
        value=value,
        target=value,
        gold_index=gold,
        records=tuple(records),
        spans=tuple(spans),
        query_start=len(text),
        pairs=len(records),
        depth_pct=100.0 * gold / max(len(records) - 1, 1),
        item=item,
    )


def _pairs_for_length(options: Any, length: int, count: Callable[[str], int], seed: int) -> int:
    return max(2, min(len(LETTERS), (length - 2) // 3))  # "kv " per pair, "?k" at the end


def _row(options: Any, seed: int, index: int, golds: Sequence[int]) -> tuple[list[int], list]:
    example = LETTERS_TASK.example(options, seed, index, options.pairs, int(golds[0]))
    ids = list(example.prompt.encode())
    answers = [(len(ids), len(ids) + 1, int(golds[0]))]
    ids += list(example.target.encode())
    for g in golds[1:]:
        key, value = example.records[int(g)]
        ids += list(f" ?{key}".encode())
        answers.append((len(ids), len(ids) + 1, int(g)))
        ids += list(value.encode())
    return ids, answers


LETTERS_TASK = IndexTask(
    name="letters",
    summary="one-letter keys, one-digit values: 'a1 b7 c3 ?b' -> '7'",
    draw=_draw,
    ask=_ask,
    pairs_for_length=_pairs_for_length,
    training_row=_row,
    preset="retrieval-tiny",
)


@pytest.fixture
def letters(monkeypatch: pytest.MonkeyPatch) -> IndexTask:
    monkeypatch.setitem(registry.INDEX_TASKS, "letters", LETTERS_TASK)
    return LETTERS_TASK


def test_a_registered_task_is_generated_paired_and_gridded(letters: IndexTask) -> None:
    exs = make_examples("letters", positions=(0, 3), examples=2, pairs=4, seed=5)
    assert [e.gold_index for e in exs] == [0, 0, 3, 3]
    # example i holds the same records at every gold index, the gold record moved
    assert sorted(exs[0].records) == sorted(exs[2].records)
    assert exs[0].records[0] == exs[2].records[3]
    for e in exs:
        assert e.prompt.endswith("?" + e.key) and dict(e.records)[e.key] == e.value
    grid = grid_examples(
        "letters", lengths=[None, 20], examples=2, seed=5, pairs=4, gold_index=None, depth=None,
        positions=3, key_chars=1, style="compact", query_aware=False, haystack="repeat",
        vocab=64, offset=128, niah_length=0, design="shared", count_tokens=len,
    )  # fmt: skip
    by_length = {length: [e for e in grid if e.length == length] for length in (None, 20)}
    assert {e.pairs for e in by_length[None]} == {4}
    assert {e.pairs for e in by_length[20]} == {6}  # (20 - 2) // 3
    shared = [e for e in by_length[20] if e.item == 0]
    assert len({e.records for e in shared}) == 1  # one context, every gold asked of it
    assert [e.gold_index for e in shared] == [0, 2, 5]


def test_a_registered_task_is_accepted_by_retrieve_and_trained_on(letters: IndexTask) -> None:
    assert "letters" in registry.task_names()
    RetrieveConfig(model="tiny-gpt2", task="letters", pairs=4, examples=1)  # no UserError
    task = RetrievalTask(task="letters", pairs=5, queries=2)
    batches = RetrievalBatches(task, batch_size=3, seed=1, length=sequence_length(task))
    tokens, mask, weight = batches.weighted_sample(0)
    for row in range(3):
        text = bytes(tokens[row].tolist()).decode()
        pairs = {p[0]: p[1] for p in text.split(" ")[:5]}
        loss = np.flatnonzero(mask[row].numpy()) + 1  # the tokens predicted under the mask
        answers = [chr(int(tokens[row, t])) for t in loss]
        keys = [text[t - 1] for t in loss]  # each answer follows its key
        assert answers == [pairs[k] for k in keys] and len(answers) == 2
        assert np.all(weight[row].numpy()[loss - 1] == 1.0)
    with pytest.raises(UserError, match="--task"):
        RetrievalTask(task="nope")


def test_the_built_in_tasks_are_their_generators() -> None:
    kv = RetrievalTask(task="kv", pairs=5, key_chars=2, style="compact")
    assert kv.example(3, 7, 4) == kv_example(
        seed=3, index=7, pairs=5, gold_index=4, key_chars=2, style="compact"
    )
    mq = RetrievalTask(task="mqar", pairs=5, vocab=32, offset=100)
    assert mq.example(3, 7, 4) == mqar_example(
        seed=3, index=7, pairs=5, gold_index=4, vocab=32, offset=100
    )
    assert mq.vocab_size() == 256 and RetrievalTask(task="mqar", vocab=400).vocab_size() == 528
    assert sequence_length(RetrievalTask(task="mqar", pairs=6, queries=3)) == 2 * 6 + 2 * 3
    assert registry.index_task("mqar").chance(mq) == pytest.approx(2 / 32)
