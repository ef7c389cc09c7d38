"""RULER's needle in a haystack: one needle at a depth in percent of a filler context."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lostmid.behaviour.tasks.example import (
    RetrievalExample,
    check_depths,
    example_seed,
    largest_fitting,
)
from lostmid.behaviour.tasks.plugin import DepthTask
from lostmid.checks import check_choice, check_positive
from lostmid.errors import UserError

HAYSTACKS = ("repeat", "varied")
NIAH_NEEDLE = "One of the special magic numbers for {key} is: {value}."
NIAH_PROMPT = (
    "Some special magic numbers are hidden within the following text. Make sure to "
    "memorize it. I will quiz you about the numbers afterwards.\n{context}\n"
    "What are all the special magic numbers for {key} mentioned in the provided text?"
    " The special magic number for {key} mentioned in the provided text is"
)
# RULER's answer prefix: the end of the prompt that starts the answer (after a chat
# template's generation prompt, where one is applied)
NIAH_ANSWER_PREFIX = " The special magic number for {key} mentioned in the provided text is"
# RULER's "noise" haystack: neutral sentences repeated.
REPEAT_SENTENCES = (
    "The grass is green.",
    "The sky is blue.",
    "The sun is yellow.",
    "Here we go.",
    "There and back again.",
)
_ADJECTIVES = (
    "quiet", "bright", "ancient", "gentle", "hollow", "amber", "brisk", "calm", "dusty",
    "eager", "faint", "golden", "humble", "icy", "jolly", "lucky", "mellow", "narrow",
    "olive", "proud", "rapid", "silver", "tidy", "vivid", "wooden", "young",
)  # fmt: skip
_NOUNS = (
    "river", "garden", "lantern", "harbor", "meadow", "pebble", "window", "kettle",
    "forest", "bridge", "candle", "valley", "island", "ladder", "mirror", "orchard",
    "planet", "rocket", "saddle", "tunnel", "violin", "wagon", "anchor", "basket",
)  # fmt: skip
_VERBS = (
    "watches", "follows", "crosses", "carries", "passes", "finds", "holds", "greets",
    "paints", "builds", "reaches", "circles",
)  # fmt: skip

TokenCounter = Callable[[str], int]


def byte_count(text: str) -> int:
    """Tokens of ``text`` under the byte tokenizer: its UTF-8 length."""
    return len(text.encode("utf-8"))


def haystack_sentences(seed: int, index: int, count: int, kind: str = "repeat") -> list[str]:
    """``count`` filler sentences: RULER's repeated neutral sentences (``repeat``) or
    seeded sentences from small local word lists (``varied``)."""
    check_choice("--haystack", kind, HAYSTACKS)
    if kind == "repeat":
        return [REPEAT_SENTENCES[i % len(REPEAT_SENTENCES)] for i in range(count)]
    rng = random.Random(example_seed(seed, "niah", index) ^ 0x5EED)
    return [
        f"The {rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} {rng.choice(_VERBS)} "
        f"the {rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)}."
        for _ in range(count)
    ]


def insertion_point(sentence_tokens: Sequence[int], depth: int) -> int:
    """Sentence boundary for a needle at ``depth`` percent: the last boundary k (0..n)
    whose token offset sum(tokens[:k]) is <= depth/100 * total, i.e. the depth
    snapped back to the previous sentence end; 100 % is after the last sentence.

    >>> insertion_point([5, 5, 5, 5], 50), insertion_point([5, 5, 5, 5], 49)
    (2, 1)
    >>> insertion_point([5, 5, 5, 5], 0), insertion_point([5, 5, 5, 5], 100)
    (0, 4)
    """
    check_depths([depth])
    offsets = np.concatenate([[0], np.cumsum(np.asarray(sentence_tokens, dtype=np.int64))])
    if depth == 100:
        return len(sentence_tokens)
    limit = depth / 100.0 * offsets[-1]
    return int(np.searchsorted(offsets, limit, side="right") - 1)


def _niah_prompt(sentences: Sequence[str], needle: str, at: int, key: str) -> tuple[str, int]:
    parts = list(sentences[:at]) + [needle] + list(sentences[at:])
    context = " ".join(parts)
    prompt = NIAH_PROMPT.format(context=context, key=key)
    head = NIAH_PROMPT.split("{context}")[0]
    start = len(head) + sum(len(s) + 1 for s in sentences[:at])
    return prompt, start


def niah_example(
    *,
    seed: int,
    index: int,
    depth: int,
    length: int,
    count_tokens: TokenCounter = byte_count,
    haystack: str = "repeat",
) -> RetrievalExample:
    """Example ``index`` of a single needle at ``depth`` % in about ``length`` tokens.

    Needle ``One of the special magic numbers for {key} is: {value}.``, a 7-digit value
    and an adjective-noun key; the haystack has the most filler sentences such that the
    prompt with the needle at the end is at most ``length`` tokens under
    ``count_tokens`` (the same haystack at every depth, so examples are paired).

    >>> ex = niah_example(seed=0, index=0, depth=50, length=400)
    >>> len(ex.value), byte_count(ex.prompt) <= 400, ex.prompt[slice(*ex.spans[0])][:20]
    (7, True, 'One of the special m')
    """
    check_positive("--length", length)
    check_depths([depth])
    rng = random.Random(example_seed(seed, "niah", index))
    key = f"{rng.choice(_ADJECTIVES)}-{rng.choice(_NOUNS)}"
    value = str(rng.randint(10**6, 10**7 - 1))
    needle = NIAH_NEEDLE.format(key=key, value=value)
    count = _haystack_size(seed, index, needle, key, length, count_tokens, haystack)
    sentences = haystack_sentences(seed, index, count, haystack)
    at = insertion_point([count_tokens(s + " ") for s in sentences], depth)
    prompt, start = _niah_prompt(sentences, needle, at, key)
    return RetrievalExample(
        task="niah",
        prompt=prompt,
        key=key,
        value=value,
        target=" " + value,
        depth=depth,
        spans=((start, start + len(needle)),),
        answer_prefix=NIAH_ANSWER_PREFIX.format(key=key),
        depth_pct=float(depth),
        item=index,
    )


def _haystack_size(
    seed: int,
    index: int,
    needle: str,
    key: str,
    length: int,
    count_tokens: TokenCounter,
    kind: str,
) -> int:
    """The largest sentence count whose prompt (needle at the end) fits ``length`` tokens."""

    def tokens(n: int) -> int:
        sentences = haystack_sentences(seed, index, n, kind)
        return count_tokens(_niah_prompt(sentences, needle, n, key)[0])

    if tokens(0) > length:
        raise UserError(
            f"--length {length} is too short for the niah prompt itself "
            f"({tokens(0)} tokens without haystack); use a longer --length"
        )
    return largest_fitting(tokens, length, 0)


def _generate(
    options: Any, index: int, depth: int, length: int, count: TokenCounter
) -> RetrievalExample:
    return niah_example(
        seed=options.seed,
        index=index,
        depth=depth,
        length=length,
        count_tokens=count,
        haystack=options.haystack,
    )


NIAH_TASK = DepthTask(
    name="niah",
    summary="RULER's single needle (a 7-digit number) at a depth of a filler context",
    generate=_generate,
    knob="length",
    ladder=(256, 512, 1024, 2048, 4096, 8192, 16384, 32768),
    query_aware=False,  # one needle, asked after the haystack only
    inference_remedies=False,
)
