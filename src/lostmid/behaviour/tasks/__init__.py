"""Retrieval tasks: Liu et al.'s key-value retrieval, RULER's needle, and MQAR.

The generators live in one module each (:mod:`~lostmid.behaviour.tasks.kv`,
:mod:`~lostmid.behaviour.tasks.niah`, :mod:`~lostmid.behaviour.tasks.mqar`), the example record and
its positions in :mod:`~lostmid.behaviour.tasks.example`, the training gold laws in
:mod:`~lostmid.behaviour.tasks.gold`; this module makes batches of examples from them.

Every generator is pure Python/numpy, seeded and deterministic: example ``i`` of a
run is a function of ``(seed, i)`` only, and the gold position only moves the gold
item. So the examples at different gold positions are *paired* (the same records, key
and haystack, the gold pair moved), as in Liu et al.'s data, and a position's result
does not depend on which other positions were requested.

Conventions (positions):

* ``gold_index`` is 0-indexed over the records (Liu et al.'s convention: "gold at 0"
  is the first record, ``pairs - 1`` the last);
* ``depth`` is a percentage 0..100 of the haystack (RULER's convention);
* ``spans`` are half-open ``[start, end)`` character offsets into ``prompt`` (kv,
  niah) or token offsets into ``prompt_ids`` (mqar).

>>> from lostmid.behaviour.tasks.kv import kv_example
>>> ex = kv_example(seed=0, index=0, pairs=3, gold_index=2, key_chars=1, style="compact")
>>> ex.prompt, ex.target
('{18,c5,37}3', '7')
>>> ex.records[ex.gold_index][0] == ex.key
True
"""

from __future__ import annotations

from collections.abc import Sequence

from lostmid.behaviour.tasks.example import (
    RetrievalExample,
    check_depths,
    check_gold_indices,
)
from lostmid.behaviour.tasks.kv import UUID_CHARS
from lostmid.behaviour.tasks.niah import (
    TokenCounter,
    byte_count,
    niah_example,
)
from lostmid.behaviour.tasks.plugin import IndexOptions
from lostmid.behaviour.tasks.registry import INDEX_TASKS, index_task
from lostmid.checks import check_choice, check_positive


def make_examples(
    task: str,
    *,
    positions: Sequence[int],
    examples: int,
    seed: int = 0,
    pairs: int = 75,
    key_chars: int = UUID_CHARS,
    query_aware: bool = False,
    style: str = "liu",
    length: int = 1024,
    count_tokens: TokenCounter = byte_count,
    haystack: str = "repeat",
    vocab: int = 64,
    offset: int = 128,
) -> list[RetrievalExample]:
    """``examples`` examples at each gold position (gold indices for kv and mqar, depths
    for niah), grouped by position; example i is the same item at every position.

    >>> exs = make_examples("kv", positions=(0, 2), examples=2, pairs=3, key_chars=2)
    >>> [e.gold_index for e in exs], exs[0].key == exs[2].key
    ([0, 0, 2, 2], True)
    """
    check_choice("--task", task, ("niah", *INDEX_TASKS))
    check_positive("--examples", examples)
    if task == "niah":
        depths = check_depths(positions)
        return [
            niah_example(
                seed=seed,
                index=i,
                depth=d,
                length=length,
                count_tokens=count_tokens,
                haystack=haystack,
            )
            for d in depths
            for i in range(examples)
        ]
    golds = check_gold_indices(positions, pairs)
    indexed = index_task(task)
    assert indexed is not None, task
    fields = IndexOptions(pairs, key_chars, style, query_aware, vocab, offset)
    return [indexed.example(fields, seed, i, pairs, g) for g in golds for i in range(examples)]
