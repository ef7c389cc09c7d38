"""Multi-query associative recall (MQAR) at token level: ``k1 v1 ... kN vN k`` -> ``v``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lostmid.behaviour.tasks.example import RetrievalExample, check_gold_indices, example_seed
from lostmid.behaviour.tasks.plugin import IndexTask
from lostmid.checks import check_positive
from lostmid.errors import UserError


def mqar_pairs(seed: int, index: int, pairs: int, vocab: int, offset: int) -> list[tuple[int, int]]:
    """``pairs`` (key, value) token ids: distinct keys from the first half of the
    vocabulary (``offset .. offset + vocab/2 - 1``), values from the second half."""
    check_positive("--pairs", pairs)
    check_positive("--vocab", vocab)
    if vocab % 2 or vocab // 2 < pairs:
        raise UserError(
            f"--vocab must be even with at least 2 * pairs = {2 * pairs} ids, got {vocab}"
        )
    if offset < 0:
        raise UserError(f"mqar offset must be >= 0, got {offset}")
    rng = np.random.default_rng(example_seed(seed, "mqar", index))
    half = vocab // 2
    keys = rng.choice(half, size=pairs, replace=False) + offset
    values = rng.integers(0, half, size=pairs) + offset + half
    return [(int(k), int(v)) for k, v in zip(keys, values, strict=True)]


def mqar_example(
    *,
    seed: int,
    index: int,
    pairs: int,
    gold_index: int,
    vocab: int = 64,
    offset: int = 128,
) -> RetrievalExample:
    """Example ``index`` of MQAR with one query: ``k1 v1 ... kN vN k_gold`` -> ``v_gold``.

    Keys and values are token ids from disjoint halves of a ``vocab``-sized range
    starting at ``offset``; the gold pair is moved to ``gold_index``.

    >>> ex = mqar_example(seed=0, index=0, pairs=4, gold_index=1, vocab=16, offset=0)
    >>> ex.prompt_ids[-1] == ex.prompt_ids[2], ex.target_ids == (ex.prompt_ids[3],)
    (True, True)
    """
    check_gold_indices([gold_index], pairs)
    drawn = mqar_pairs(seed, index, pairs, vocab, offset)
    ordered = drawn[1:]
    ordered.insert(gold_index, drawn[0])
    return mqar_query(ordered, gold_index, item=index)


def mqar_query(
    pairs_list: list[tuple[int, int]], gold_index: int, *, item: int = 0
) -> RetrievalExample:
    """The query for pair ``gold_index`` (0-indexed) of ``pairs_list``, kept in order:
    ``k1 v1 ... kN vN k_gold`` -> ``v_gold``.

    >>> mqar_query([(1, 5), (2, 6)], 0).prompt_ids
    (1, 5, 2, 6, 1)
    """
    pairs = len(pairs_list)
    check_gold_indices([gold_index], pairs)
    key, value = pairs_list[gold_index]
    ids = tuple(t for pair in pairs_list for t in pair) + (key,)
    return RetrievalExample(
        task="mqar",
        prompt=" ".join(str(t) for t in ids),
        key=str(key),
        value=str(value),
        target=" " + str(value),
        gold_index=gold_index,
        spans=tuple((2 * i, 2 * i + 2) for i in range(pairs)),
        prompt_ids=ids,
        target_ids=(value,),
        query_start=2 * pairs,
        pairs=pairs,
        depth_pct=100.0 * gold_index / max(pairs - 1, 1),
        item=item,
    )


def _draw(options: Any, seed: int, item: int, pairs: int) -> list[tuple[int, int]]:
    return mqar_pairs(seed, item, pairs, options.vocab, options.offset)


def _ask(
    options: Any, records: Sequence[tuple[int, int]], gold: int, item: int
) -> RetrievalExample:
    return mqar_query(list(records), gold, item=item)


def _pairs_for_length(
    options: Any, length: int, count_tokens: Callable[[str], int], seed: int
) -> int:
    size = (length - 1) // 2  # k1 v1 ... kN vN k
    if size < 1 or options.vocab // 2 < size:
        raise UserError(
            f"--lengths {length} gives {size} mqar pairs; --vocab {options.vocab} holds at "
            f"most {options.vocab // 2} (and a length needs >= 3 tokens)"
        )
    return size


def _check(options: Any) -> None:
    mqar_pairs(0, 0, options.pairs, options.vocab, options.offset)  # vocab, pairs, offset


def mqar_training_row(
    options: Any, seed: int, index: int, golds: Sequence[int]
) -> tuple[list[int], list[tuple[int, int, int]]]:
    """An MQAR row ``k1 v1 .. kN vN q1 a1 .. qM aM``: query ``m`` asks for pair
    ``golds[m]`` (0-indexed); each answer id is a loss span of one."""
    drawn = mqar_pairs(seed, index, options.pairs, options.vocab, options.offset)
    ids = [t for pair in drawn for t in pair]
    answers = []
    for g in golds:
        ids.extend(drawn[int(g)])
        answers.append((len(ids) - 1, len(ids), int(g)))
    return ids, answers


MQAR_TASK = IndexTask(
    name="mqar",
    summary="Multi-query associative recall at token level: k1 v1 ... kN vN k -> v",
    draw=_draw,
    ask=_ask,
    pairs_for_length=_pairs_for_length,
    training_row=mqar_training_row,
    preset="mqar-tiny",
    check=_check,
    text=False,
    vocab_size=lambda options: max(256, options.offset + options.vocab),
    chance=lambda options: 2.0 / options.vocab,
)
