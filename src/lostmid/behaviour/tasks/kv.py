"""Liu et al.'s key-value retrieval task (and a compact byte-level variant).

>>> ex = kv_example(seed=0, index=0, pairs=3, gold_index=2, key_chars=1, style="compact")
>>> ex.prompt, ex.target
('{18,c5,37}3', '7')
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from lostmid.behaviour.tasks.example import (
    RetrievalExample,
    check_gold_indices,
    example_seed,
    largest_fitting,
)
from lostmid.behaviour.tasks.plugin import IndexTask
from lostmid.checks import check_choice, check_positive
from lostmid.errors import UserError

KV_STYLES = ("liu", "compact")
HEX = "0123456789abcdef"
UUID_CHARS = 36

KV_PROMPT = (
    "Extract the value corresponding to the specified key in the JSON object below."
    '\n\nJSON data:\n{records}\n\nKey: "{key}"\nCorresponding value:'
)
# Liu's prompt ends with its answer prefix: after a chat template's generation prompt when
# one is applied (lostmid.behaviour.decoding.prompts), so an instruct model writes the value at once
KV_ANSWER_PREFIX = "\nCorresponding value:"
KV_PROMPT_QUERY_AWARE = (
    "Extract the value corresponding to the specified key in the JSON object below."
    '\n\nKey: "{key}"\n\nJSON data:\n{records}\n\nKey: "{key}"\nCorresponding value:'
)


def _random_string(rng: random.Random, chars: int) -> str:
    """A UUID4 string (36 characters) or ``chars`` lowercase hex digits."""
    if chars == UUID_CHARS:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return "".join(rng.choice(HEX) for _ in range(chars))


def kv_records(seed: int, index: int, pairs: int, key_chars: int) -> list[tuple[str, str]]:
    """The ``pairs`` distinct-key (key, value) pairs of example ``index``; the gold pair
    is the first one (the caller moves it)."""
    check_positive("--pairs", pairs)
    check_positive("--key-chars", key_chars)
    if pairs < 2:
        raise UserError(f"--pairs must be >= 2 for key-value retrieval, got {pairs}")
    if key_chars > UUID_CHARS:
        raise UserError(f"--key-chars must be <= {UUID_CHARS} (a full UUID), got {key_chars}")
    if key_chars < UUID_CHARS and 16**key_chars < pairs:
        raise UserError(
            f"--key-chars {key_chars} gives only {16**key_chars} distinct hex keys for "
            f"{pairs} pairs; use longer keys or fewer pairs"
        )
    rng = random.Random(example_seed(seed, "kv", index))
    keys: list[str] = []
    seen: set[str] = set()
    while len(keys) < pairs:
        key = _random_string(rng, key_chars)
        if key not in seen:
            seen.add(key)
            keys.append(key)
    values = [_random_string(rng, key_chars) for _ in range(pairs)]
    return list(zip(keys, values, strict=True))


def format_kv_records(records: Sequence[tuple[str, str]], style: str = "liu") -> tuple[str, list]:
    """The records as text and each record's ``[start, end)`` character span in it.

    ``liu``: the first record starts with ``{``, the others with a space, each line
    ``"key": "value"`` ends with ``,\\n`` except the last, which ends with ``}``.
    ``compact``: ``{kv,kv}``, each key immediately followed by its value (for small
    byte-level models: with the prompt ending on the queried key, a 2-layer induction
    circuit can retrieve, as in MQAR; a separator between key and value, or a prompt
    ending on ``:``, puts the value two hops from the key, which 2-layer models did not
    learn in 4000 steps).

    >>> format_kv_records([("a", "b"), ("c", "d")])[0]
    '{"a": "b",\\n "c": "d"}'
    >>> format_kv_records([("a", "b"), ("c", "d")], "compact")
    ('{ab,cd}', [(1, 3), (4, 6)])
    """
    check_choice("--style", style, KV_STYLES)
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    at = 0
    last = len(records) - 1
    for i, (key, value) in enumerate(records):
        if style == "liu":
            start, body, end = (
                "{" if i == 0 else " ",
                f'"{key}": "{value}"',
                "}" if i == last else ",\n",
            )
        else:
            start, body, end = "{" if i == 0 else "", f"{key}{value}", "}" if i == last else ","
        spans.append((at + len(start), at + len(start) + len(body)))
        parts.append(start + body + end)
        at += len(start) + len(body) + len(end)
    return "".join(parts), spans


def kv_example(
    *,
    seed: int,
    index: int,
    pairs: int,
    gold_index: int,
    key_chars: int = UUID_CHARS,
    query_aware: bool = False,
    style: str = "liu",
) -> RetrievalExample:
    """Example ``index`` of Liu et al.'s key-value task with the gold pair at ``gold_index``.

    ``liu`` prompt: ``Extract the value corresponding to the specified key in the JSON
    object below.\\n\\nJSON data:\\n{records}\\n\\nKey: "{key}"\\nCorresponding value:``;
    ``query_aware`` also puts ``Key: "{key}"\\n\\n`` before the JSON data. Target
    ``" " + value``; answer prefix ``\\nCorresponding value:`` (the assistant's turn
    starts with it under a chat template). ``compact`` prompt: ``{records}{key}``, target ``value``.

    >>> ex = kv_example(seed=1, index=0, pairs=75, gold_index=0)
    >>> len(ex.key), ex.key.count("-"), ex.key[14], len(ex.records)
    (36, 4, '4', 75)
    """
    check_choice("--style", style, KV_STYLES)
    check_gold_indices([gold_index], pairs)
    if query_aware and style != "liu":
        raise UserError("--query-aware needs --style liu (the compact style has no instruction)")
    pairs_list = kv_records(seed, index, pairs, key_chars)
    gold = pairs_list[0]
    ordered = pairs_list[1:]
    ordered.insert(gold_index, gold)
    return kv_query(ordered, gold_index, query_aware=query_aware, style=style, item=index)


def kv_query(
    records: Sequence[tuple[str, str]],
    gold_index: int,
    *,
    query_aware: bool = False,
    style: str = "liu",
    item: int = 0,
    depth_pct: float | None = None,
    length: int | None = None,
) -> RetrievalExample:
    """The question about record ``gold_index`` (0-indexed) of ``records``, kept in their
    order (the prompts of :func:`kv_example`). ``depth_pct`` defaults to
    100 * gold_index / (pairs - 1).

    >>> ex = kv_query([("ab", "cd"), ("ef", "01")], 1, style="compact")
    >>> ex.prompt, ex.target, ex.prompt[: ex.query_start], ex.depth_pct
    ('{abcd,ef01}ef', '01', '{abcd,ef01}', 100.0)
    """
    check_choice("--style", style, KV_STYLES)
    check_gold_indices([gold_index], len(records))
    text, spans = format_kv_records(records, style)
    key, value = records[gold_index]
    if style == "liu":
        template = KV_PROMPT_QUERY_AWARE if query_aware else KV_PROMPT
        head = template.split("{records}")[0].format(key=key)
        prompt = template.format(records=text, key=key)
        target = " " + value
        prefix = KV_ANSWER_PREFIX
    else:
        head, prompt, target, prefix = "", f"{text}{key}", value, ""
    shifted = tuple((a + len(head), b + len(head)) for a, b in spans)
    pairs = len(records)
    return RetrievalExample(
        task="kv",
        prompt=prompt,
        key=key,
        value=value,
        target=target,
        gold_index=gold_index,
        records=tuple((str(k), str(v)) for k, v in records),
        spans=shifted,
        # the question follows the records unless it is also before them (query-aware)
        query_start=None if query_aware else len(head) + len(text),
        answer_prefix=prefix,
        pairs=pairs,
        length=length,
        depth_pct=depth_pct if depth_pct is not None else 100.0 * gold_index / max(pairs - 1, 1),
        item=item,
    )


def kv_pairs_for_length(
    length: int,
    count_tokens: Callable[[str], int],
    *,
    seed: int,
    key_chars: int,
    style: str,
    query_aware: bool,
) -> int:
    """The most pairs (>= 2) whose kv prompt (example 0, gold last) is at most ``length``
    tokens under ``count_tokens``.

    >>> kv_pairs_for_length(40, len, seed=0, key_chars=2, style="compact", query_aware=False)
    7
    """

    def tokens(pairs: int) -> int:
        ex = kv_example(
            seed=seed,
            index=0,
            pairs=pairs,
            gold_index=pairs - 1,
            key_chars=key_chars,
            query_aware=query_aware,
            style=style,
        )
        return count_tokens(ex.prompt)

    if tokens(2) > length:
        raise UserError(
            f"--lengths {length} is too short for a kv prompt of 2 pairs ({tokens(2)} "
            "tokens); use longer lengths or shorter --key-chars"
        )
    return largest_fitting(tokens, length, 2)


def _draw(options: Any, seed: int, item: int, pairs: int) -> list[tuple[str, str]]:
    return kv_records(seed, item, pairs, options.key_chars)


def _ask(
    options: Any, records: Sequence[tuple[str, str]], gold: int, item: int
) -> RetrievalExample:
    query_aware = bool(getattr(options, "query_aware", False))
    if query_aware and options.style != "liu":
        raise UserError("--query-aware needs --style liu (the compact style has no instruction)")
    return kv_query(records, gold, query_aware=query_aware, style=options.style, item=item)


def _pairs_for_length(
    options: Any, length: int, count_tokens: Callable[[str], int], seed: int
) -> int:
    return kv_pairs_for_length(
        length,
        count_tokens,
        seed=seed,
        key_chars=options.key_chars,
        style=options.style,
        query_aware=bool(getattr(options, "query_aware", False)),
    )


def _check(options: Any) -> None:
    check_choice("--style", options.style, KV_STYLES)


def kv_training_row(
    options: Any, seed: int, index: int, golds: Sequence[int]
) -> tuple[list[int], list[tuple[int, int, int]]]:
    """A byte-level training row: example ``index`` asking for ``golds[0]``, then for
    each further gold its key and value (compact style); the answers are the loss spans."""
    if len(golds) > 1 and options.style != "compact":
        raise UserError("--queries > 1 needs --style compact for kv")
    example = KV_TASK.example(options, seed, index, options.pairs, int(golds[0]))
    ids = list(example.prompt.encode())
    answers = []
    target = list(example.target.encode())
    answers.append((len(ids), len(ids) + len(target), int(golds[0])))
    ids += target
    for g in golds[1:]:  # more queries: key then value, the value's bytes are loss tokens
        key, value = example.records[int(g)]
        ids += list(key.encode())
        answers.append((len(ids), len(ids) + len(value.encode()), int(g)))
        ids += list(value.encode())
    return ids, answers


KV_TASK = IndexTask(
    name="kv",
    summary="Liu et al.'s key-value retrieval: a JSON object of UUID (or short hex) pairs, "
    "the value of one key asked",
    draw=_draw,
    ask=_ask,
    pairs_for_length=_pairs_for_length,
    training_row=kv_training_row,
    preset="retrieval-tiny",
    check=_check,
    context_end=1,  # the closing '}' belongs to the records
    query_aware=lambda options: options.style == "liu",  # Liu's query-aware prompt
    inference_remedies=True,
)
