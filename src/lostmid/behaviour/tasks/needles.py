"""RULER's needle variants at a depth: multi-key (distractor needles), multi-value and
multi-query; the tasks ``niah-multikey``, ``niah-multivalue``, ``niah-multiquery``.

Every needle reads ``One of the special magic {kind} for {key} is: {value}.`` (RULER's;
``kind`` ``numbers``: 7-digit values, ``uuids``: UUID4 values). What is asked:

* ``niah-multikey``: one gold needle and ``distractors`` needles with other keys (RULER's
  niah_multikey: 4 keys, 3 of them distractors); the answer is the gold key's value;
* ``niah-multivalue``: ``values_per_key`` needles with the same key (RULER's 4); every
  value must be found;
* ``niah-multiquery``: ``queries`` needles with different keys, all asked at once
  (RULER's 4); every value must be found.

Placement, made for a depth sweep (RULER draws every needle's depth at random): the
asked needles sit together, in a block, at ``depth`` percent of the haystack (snapped
back to a sentence end, :func:`~lostmid.behaviour.tasks.niah.insertion_point`); distractor
needles sit at sentence ends drawn once per item, the same at every depth, so the
examples of an item at different depths are paired (only the asked block moves). At a
sentence end shared with distractors the block goes first, so depth 0 puts it first and
depth 100 last. The haystack has the most filler sentences such that the prompt with
every needle fits ``length`` tokens.

Order (``--needle-order``). With scattered distractors (``scattered``, RULER's) the gold
needle's depth and its order among the needles move together: at depth 0 it is the
first needle, at 100 the last, so a model that answers the first or the last needle
when unsure makes a U by itself. ``fixed`` separates the two: the distractors sit
around the asked block, half of them (rounded down) just before it and the rest just
after, and the group moves as one, so the gold needle holds the same place among the
needles at every depth and only its depth changes (but it is never the outermost needle,
and the needles are adjacent). ``factorial`` (multi-key only) crosses the gold's depth
with its rank among the needles on the same items, the needles kept apart
(:mod:`~lostmid.behaviour.tasks.needle_design`, which registers the task with its
design).

Prompt (RULER's template, the answer prefix after the question):

    Some special magic {kind} are hidden within the following text. Make sure to
    memorize it. I will quiz you about the {kind} afterwards.
    {context}
    What are all the special magic {kind} for {query} mentioned in the provided text?
    The special magic {kind} for {query} mentioned in the provided text {is|are}

>>> ex = needles_example(seed=0, index=0, depth=50, length=600, variant="niah-multikey",
...                      distractors=2)
>>> ex.prompt.count("One of the special magic numbers for"), ex.match, len(ex.answers)
(3, 'all', 1)
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from typing import Any

from lostmid.behaviour.tasks.example import (
    RetrievalExample,
    check_depths,
    example_seed,
    largest_fitting,
)
from lostmid.behaviour.tasks.niah import (
    _ADJECTIVES,
    _NOUNS,
    TokenCounter,
    byte_count,
    haystack_sentences,
    insertion_point,
)
from lostmid.behaviour.tasks.plugin import DepthTask
from lostmid.checks import check_choice, check_positive
from lostmid.errors import UserError

VARIANTS = ("niah-multikey", "niah-multivalue", "niah-multiquery")
NEEDLE_TOKENS = 8
"""The fewest tokens a needle sentence takes in any tokenizer (it is about 50 characters):
more needles than ``length / NEEDLE_TOKENS`` cannot fit, refused before any is drawn."""


def check_needles_fit(needles: int, length: int) -> None:
    """One line when ``needles`` needle sentences cannot fit ``length`` tokens.

    >>> check_needles_fit(128, 1024)
    >>> check_needles_fit(129, 1024)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: 129 needles do not fit --length 1,024: each takes at least 8 ...
    """
    if needles * NEEDLE_TOKENS > length:
        raise UserError(
            f"{needles:,} needles do not fit --length {length:,}: each takes at least "
            f"{NEEDLE_TOKENS} tokens; use fewer needles or a longer context"
        )


NEEDLE_TYPES = ("numbers", "uuids")
NEEDLE_ORDERS = ("scattered", "fixed", "factorial")
NEEDLE = "One of the special magic {kind} for {key} is: {value}."
HEAD = (
    "Some special magic {kind} are hidden within the following text. Make sure to "
    "memorize it. I will quiz you about the {kind} afterwards.\n"
)
QUESTION = "\nWhat are all the special magic {kind} for {query} mentioned in the provided text?"
ANSWER_PREFIX = " The special magic {kind} for {query} mentioned in the provided text {verb}"
_SALT = {"niah-multikey": 0x4B, "niah-multivalue": 0x56, "niah-multiquery": 0x51}
MAX_KEYS = len(_ADJECTIVES) * len(_NOUNS)


def _value(rng: random.Random, kind: str) -> str:
    if kind == "uuids":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return str(rng.randint(10**6, 10**7 - 1))


def _distinct(rng: random.Random, count: int, draw: object) -> list[str]:
    seen: list[str] = []
    while len(seen) < count:
        item = draw()  # type: ignore[operator]
        if item not in seen:
            seen.append(item)
    return seen


def needle_draw(
    seed: int, index: int, variant: str, asked: int, distractors: int, kind: str
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[float]]:
    """(asked needles, distractor needles, distractor places in [0, 1)) of item ``index``
    as (key, value) pairs: every key of a distractor differs from the asked keys, every
    value from every other value. Depends on (seed, index, variant) only."""
    rng = random.Random(example_seed(seed, "niah", index) ^ (_SALT[variant] << 40))
    keys_needed = (1 if variant == "niah-multivalue" else asked) + distractors
    if keys_needed > MAX_KEYS:
        raise UserError(f"{variant}: at most {MAX_KEYS} distinct keys, asked for {keys_needed}")
    keys = _distinct(rng, keys_needed, lambda: f"{rng.choice(_ADJECTIVES)}-{rng.choice(_NOUNS)}")
    values = _distinct(rng, asked + distractors, lambda: _value(rng, kind))
    if variant == "niah-multivalue":
        gold = [(keys[0], v) for v in values[:asked]]
        others = list(zip(keys[1:], values[asked:], strict=True))
    else:
        gold = list(zip(keys[:asked], values[:asked], strict=True))
        others = list(zip(keys[asked:], values[asked:], strict=True))
    places = [rng.random() for _ in others]
    return gold, others, places


def _query(keys: Sequence[str]) -> str:
    """RULER's join of several keys: ``a``, ``a and b``, ``a, b, and c``."""
    if len(keys) == 1:
        return keys[0]
    if len(keys) == 2:
        return f"{keys[0]} and {keys[1]}"
    return ", ".join(keys[:-1]) + ", and " + keys[-1]


def _assemble(
    sentences: Sequence[str],
    block: Sequence[tuple[str, bool]],
    at: int,
    others: Sequence[str],
    places: Sequence[int],
    head: str,
    tail: str,
) -> tuple[str, list[tuple[int, int]]]:
    """The prompt and the character spans of the gold needles: ``block`` (needles, each
    with whether it is asked) at sentence end ``at``, ``others`` at their ``places``."""
    parts: list[tuple[str, bool]] = []
    for k in range(len(sentences) + 1):
        if k == at:
            parts.extend(block)
        parts.extend((o, False) for o, p in zip(others, places, strict=True) if p == k)
        if k < len(sentences):
            parts.append((sentences[k], False))
    spans = []
    cursor = len(head)
    texts = []
    for text, is_gold in parts:
        if is_gold:
            spans.append((cursor, cursor + len(text)))
        texts.append(text)
        cursor += len(text) + 1
    return head + " ".join(texts) + tail, spans


def needles_example(
    *,
    seed: int,
    index: int,
    depth: int,
    length: int,
    variant: str,
    distractors: int = 0,
    values_per_key: int = 4,
    queries: int = 4,
    needle_type: str = "numbers",
    count_tokens: TokenCounter = byte_count,
    haystack: str = "repeat",
    query_aware: bool = False,
    order: str = "scattered",
) -> RetrievalExample:
    """Example ``index`` of a RULER needle ``variant`` with its asked needles at ``depth``
    % of about ``length`` tokens (module doc). ``distractors``: needles with other keys
    (any variant); ``values_per_key``: multi-value's needles; ``queries``: multi-query's.
    ``query_aware``: the question also before the haystack (Liu et al.'s query-aware
    contextualisation, as ``--query-aware`` does for kv). ``order``: ``scattered``
    distractors (RULER's) or ``fixed`` around the asked block (module doc).

    >>> ex = needles_example(seed=0, index=1, depth=0, length=700, variant="niah-multiquery",
    ...                      queries=2)
    >>> len(ex.answers), all(a in ex.prompt for a in ex.answers), ex.answer_prefix[-3:]
    (2, True, 'are')
    """
    check_choice("--task", variant, VARIANTS)
    check_choice("--needle-type", needle_type, NEEDLE_TYPES)
    check_choice("--needle-order", order, NEEDLE_ORDERS[:2])  # factorial: needle_design
    check_positive("--length", length)
    check_depths([depth])
    if distractors < 0:
        raise UserError(f"--distractors must be >= 0, got {distractors}")
    asked = {"niah-multikey": 1, "niah-multivalue": values_per_key, "niah-multiquery": queries}
    option = "--values-per-key" if variant == "niah-multivalue" else "--queries"
    count = int(check_positive(option, asked[variant]))
    check_needles_fit(count + distractors, length)  # before drawing them
    gold, others, fractions = needle_draw(seed, index, variant, count, distractors, needle_type)
    singular = needle_type[:-1]
    gold_keys = list(dict.fromkeys(k for k, _ in gold))
    query = _query(gold_keys)
    head = HEAD.format(kind=needle_type)
    if query_aware:
        head += QUESTION.format(kind=needle_type, query=query).lstrip("\n") + "\n"
    prefix = ANSWER_PREFIX.format(
        kind=needle_type if len(gold) > 1 else singular,
        query=query,
        verb="are" if len(gold) > 1 else "is",
    )
    tail = QUESTION.format(kind=needle_type, query=query) + prefix
    gold_text = [NEEDLE.format(kind=needle_type, key=k, value=v) for k, v in gold]
    other_text = [NEEDLE.format(kind=needle_type, key=k, value=v) for k, v in others]

    block = [(g, True) for g in gold_text]
    if order == "fixed":  # the distractors around the asked block, moving with it
        half = len(other_text) // 2
        block = [(o, False) for o in other_text[:half]] + block
        block += [(o, False) for o in other_text[half:]]
        other_text, fractions = [], []

    def build(n: int, at: int | None = None) -> tuple[str, list[tuple[int, int]]]:
        sentences = haystack_sentences(seed, index, n, haystack)
        places = [int(f * n) for f in fractions]
        return _assemble(sentences, block, n if at is None else at, other_text, places,
                         head, tail)  # fmt: skip

    if count_tokens(build(0)[0]) > length:
        raise UserError(
            f"--length {length} is too short for {variant} with {len(gold)} asked and "
            f"{len(others)} distractor needles ({count_tokens(build(0)[0])} tokens without "
            "haystack); use a longer --length or fewer needles"
        )
    n = largest_fitting(lambda m: count_tokens(build(m)[0]), length, 0)
    sentences = haystack_sentences(seed, index, n, haystack)
    at = insertion_point([count_tokens(s + " ") for s in sentences], depth)
    prompt, spans = build(n, at)
    answers = tuple(v for _, v in gold)
    return RetrievalExample(
        task=variant,
        prompt=prompt,
        key=query,
        value=answers[0],
        target=" " + ", ".join(answers),
        depth=depth,
        spans=tuple(spans),
        answers=answers,
        match="all",
        answer_prefix=prefix,
        depth_pct=float(depth),
        item=index,
        context=(len(head), len(prompt) - len(tail)),
    )


def _variant(name: str) -> Any:
    def generate(
        options: Any, index: int, depth: int, length: int, count: TokenCounter
    ) -> RetrievalExample:
        return needles_example(
            seed=options.seed,
            index=index,
            depth=depth,
            length=length,
            variant=name,
            distractors=resolved_distractors(name, options.distractors),
            values_per_key=options.values_per_key,
            queries=options.queries,
            needle_type=options.needle_type,
            count_tokens=count,
            haystack=options.haystack,
            query_aware=getattr(options, "query_aware", False),
            order=getattr(options, "needle_order", "scattered"),
        )

    return generate


def resolved_distractors(variant: str, given: int | None) -> int:
    """``--distractors``, else RULER's: 3 for multi-key, 0 for the others."""
    if given is not None:
        return given
    return 3 if variant == "niah-multikey" else 0


def needle_count(variant: str, options: Any) -> int:
    """How many needles a ``variant`` item holds under ``options``: the asked ones
    (``--values-per-key`` values, ``--queries`` keys, else one) and the distractors.

    >>> from types import SimpleNamespace as O
    >>> needle_count("niah-multiquery", O(queries=4, values_per_key=1, distractors=None))
    4
    >>> needle_count("niah-multikey", O(queries=1, values_per_key=1, distractors=3))
    4
    """
    asked = {"niah-multivalue": options.values_per_key, "niah-multiquery": options.queries}
    return int(asked.get(variant, 1)) + int(options.distractors or 0)


def _check(options: Any) -> None:
    if options.distractors is not None and options.distractors < 0:
        raise UserError(f"--distractors must be >= 0, got {options.distractors}")
    check_positive("--values-per-key", options.values_per_key)
    check_positive("--queries", options.queries)
    check_choice("--needle-type", options.needle_type, NEEDLE_TYPES)
    check_choice("--needle-order", getattr(options, "needle_order", "scattered"), NEEDLE_ORDERS)


NEEDLE_TASKS = (
    DepthTask(
        name="niah-multikey",
        summary="RULER's multi-key needle: the gold needle among --distractors needles "
        "with other keys",
        generate=_variant("niah-multikey"),
        knob="distractors",
        ladder=(0, 1, 2, 4, 8, 16, 32, 64),
        check=_check,
    ),
    DepthTask(
        name="niah-multivalue",
        summary="RULER's multi-value needle: --values-per-key needles of one key, every "
        "value asked",
        generate=_variant("niah-multivalue"),
        knob="values_per_key",
        ladder=(1, 2, 4, 8, 16),
        check=_check,
    ),
    DepthTask(
        name="niah-multiquery",
        summary="RULER's multi-query needle: --queries keys asked at once",
        generate=_variant("niah-multiquery"),
        knob="queries",
        ladder=(1, 2, 4, 8, 16),
        check=_check,
    ),
)
