"""Retrieval tasks: Liu et al.'s key-value retrieval, RULER's needle, and MQAR.

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

>>> ex = kv_example(seed=0, index=0, pairs=3, gold_index=2, key_chars=1, style="compact")
>>> ex.prompt, ex.target
('{18,c5,37}3', '7')
>>> ex.records[ex.gold_index][0] == ex.key
True
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.checks import check_choice, check_positive
from lostmid.errors import UserError

TASKS = ("kv", "niah", "mqar")
KV_STYLES = ("liu", "compact")
HAYSTACKS = ("repeat", "varied")
HEX = "0123456789abcdef"
UUID_CHARS = 36

KV_PROMPT = (
    "Extract the value corresponding to the specified key in the JSON object below."
    '\n\nJSON data:\n{records}\n\nKey: "{key}"\nCorresponding value:'
)
KV_PROMPT_QUERY_AWARE = (
    "Extract the value corresponding to the specified key in the JSON object below."
    '\n\nKey: "{key}"\n\nJSON data:\n{records}\n\nKey: "{key}"\nCorresponding value:'
)
NIAH_NEEDLE = "One of the special magic numbers for {key} is: {value}."
NIAH_PROMPT = (
    "Some special magic numbers are hidden within the following text. Make sure to "
    "memorize it. I will quiz you about the numbers afterwards.\n{context}\n"
    "What are all the special magic numbers for {key} mentioned in the provided text?"
    " The special magic number for {key} mentioned in the provided text is"
)
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
_TASK_IDS = {"kv": 1, "niah": 2, "mqar": 3}


@dataclass(frozen=True)
class RetrievalExample:
    """One retrieval question with its answer and where the answer sits.

    Attributes:
        task: ``kv``, ``niah`` or ``mqar``.
        prompt: the text given to the model (for mqar a readable rendering of
            ``prompt_ids``; the ids are what a model reads).
        key: what is asked for; value: the answer.
        target: the continuation that is scored under teacher forcing (``" " + value``
            after Liu's and RULER's prompts, ``value`` after a compact kv prompt).
        gold_index: 0-indexed record holding the answer (kv, mqar), else None.
        depth: needle depth in percent of the haystack (niah), else None.
        records: kv: the ordered (key, value) pairs of the JSON object.
        spans: per record (kv, mqar) or for the needle (niah), ``[start, end)`` offsets:
            characters of ``prompt`` (kv, niah) or tokens of ``prompt_ids`` (mqar).
        prompt_ids, target_ids: token ids of a token-level task (mqar), else None.
    """

    task: str
    prompt: str
    key: str
    value: str
    target: str
    gold_index: int | None = None
    depth: int | None = None
    records: tuple[tuple[str, str], ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    prompt_ids: tuple[int, ...] | None = None
    target_ids: tuple[int, ...] | None = None

    @property
    def position(self) -> int:
        """The gold position: ``gold_index`` (kv, mqar) or ``depth`` (niah)."""
        return self.depth if self.gold_index is None else self.gold_index  # type: ignore[return-value]

    def record(self) -> dict[str, Any]:
        """The JSON-lines form (``--export``): prompt, key, value, gold_index or depth,
        records for kv, token ids for mqar."""
        out: dict[str, Any] = {
            "task": self.task,
            "prompt": self.prompt,
            "key": self.key,
            "value": self.value,
            "target": self.target,
        }
        if self.gold_index is not None:
            out["gold_index"] = self.gold_index
        if self.depth is not None:
            out["depth"] = self.depth
        if self.task == "kv":
            out["records"] = [list(pair) for pair in self.records]
        if self.prompt_ids is not None:
            out["prompt_ids"] = list(self.prompt_ids)
            out["target_ids"] = list(self.target_ids or ())
        return out


def example_seed(seed: int, task: str, index: int) -> int:
    """The integer seed of example ``index`` of ``task`` under run seed ``seed``."""
    state = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, _TASK_IDS[task], int(index)])
    return int(state.generate_state(2, np.uint64)[0])


# -- positions ---------------------------------------------------------------------------


def default_gold_indices(pairs: int, count: int | None = None) -> tuple[int, ...]:
    """Gold indices (0-indexed): 0, 1/4, 1/2, 3/4 and the last, floored as Liu et al.
    (140 pairs: 0, 34, 69, 104, 139); ``count`` K: K evenly spaced, first and last
    included (duplicates dropped when K > pairs).

    >>> default_gold_indices(140)
    (0, 34, 69, 104, 139)
    >>> default_gold_indices(10, count=4)
    (0, 3, 6, 9)
    """
    check_positive("--pairs", pairs)
    if count is None:
        grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    else:
        check_positive("--positions", count)
        grid = np.linspace(0.0, 1.0, int(count))
    return tuple(sorted({int(np.floor(q * (pairs - 1) + 1e-9)) for q in grid}))


def default_depths(count: int | None = None) -> tuple[int, ...]:
    """Needle depths in percent: 0, 25, 50, 75, 100, or ``count`` evenly spaced.

    >>> default_depths(3)
    (0, 50, 100)
    """
    if count is None:
        return (0, 25, 50, 75, 100)
    check_positive("--positions", count)
    return tuple(sorted({int(round(d)) for d in np.linspace(0, 100, int(count))}))


def check_gold_indices(indices: Iterable[int], pairs: int) -> tuple[int, ...]:
    """Sorted unique gold indices, each in 0..pairs-1 (0-indexed, Liu et al.'s convention)."""
    found = tuple(sorted({int(i) for i in indices}))
    if not found:
        raise UserError("--gold-index needs at least one index")
    for i in found:
        if not 0 <= i < pairs:
            raise UserError(
                f"--gold-index must be in 0..{pairs - 1} (0-indexed, as Liu et al.), got {i}"
            )
    return found


def check_depths(depths: Iterable[int]) -> tuple[int, ...]:
    """Sorted unique depths, each a whole percentage in 0..100."""
    found = tuple(sorted({int(d) for d in depths}))
    if not found:
        raise UserError("--depth needs at least one depth")
    for d in found:
        if not 0 <= d <= 100:
            raise UserError(f"--depth must be a percentage in 0..100, got {d}")
    return found


def gold_distribution(spec: str, pairs: int) -> np.ndarray:
    """Probabilities (pairs,) of each gold index 0..pairs-1 under ``spec``.

    ``uniform``: 1/pairs each. ``power:A`` (the associative-recall literature's knob):
    the gap g = pairs - i between the queried pair i and the query has
    p(g) proportional to g^(A-1), so A = 1 is uniform, A < 1 favours recent pairs and
    A > 1 early ones.

    >>> gold_distribution("power:1", 4).tolist()
    [0.25, 0.25, 0.25, 0.25]
    >>> np.round(gold_distribution("power:0", 2), 3).tolist()
    [0.333, 0.667]
    """
    check_positive("--pairs", pairs)
    if spec == "uniform":
        return np.full(pairs, 1.0 / pairs)
    if spec.startswith("power:"):
        try:
            a = float(spec.removeprefix("power:"))
        except ValueError:
            a = float("nan")
        if not np.isfinite(a):
            raise UserError(f"gold distribution {spec!r}: give power:A with a number A")
        gaps = pairs - np.arange(pairs, dtype=np.float64)  # (pairs,) g = pairs .. 1
        weights = gaps ** (a - 1.0)
        return weights / weights.sum()
    raise UserError(f"gold distribution {spec!r} unknown; choose uniform or power:A")


# -- kv: Liu et al.'s key-value retrieval --------------------------------------------------


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
    ``" " + value``. ``compact`` prompt: ``{records}{key}``, target ``value``.

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
    text, spans = format_kv_records(ordered, style)
    key, value = gold
    if style == "liu":
        template = KV_PROMPT_QUERY_AWARE if query_aware else KV_PROMPT
        head = template.split("{records}")[0].format(key=key)
        prompt = template.format(records=text, key=key)
        target = " " + value
    else:
        head, prompt, target = "", f"{text}{key}", value
    shifted = tuple((a + len(head), b + len(head)) for a, b in spans)
    return RetrievalExample(
        task="kv",
        prompt=prompt,
        key=key,
        value=value,
        target=target,
        gold_index=gold_index,
        records=tuple(ordered),
        spans=shifted,
    )


# -- niah: RULER's needle in a haystack ----------------------------------------------------

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
    lo, hi = 0, 1
    while tokens(hi) <= length:
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # tokens(lo) <= length < tokens(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if tokens(mid) <= length else (lo, mid)
    return lo


# -- mqar: multi-query associative recall ----------------------------------------------------


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
    key, value = drawn[0]
    ids = tuple(t for pair in ordered for t in pair) + (key,)
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
    )


# -- batches of examples -----------------------------------------------------------------------


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
    check_choice("--task", task, TASKS)
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
    if task == "kv":
        return [
            kv_example(
                seed=seed,
                index=i,
                pairs=pairs,
                gold_index=g,
                key_chars=key_chars,
                query_aware=query_aware,
                style=style,
            )
            for g in golds
            for i in range(examples)
        ]
    return [
        mqar_example(seed=seed, index=i, pairs=pairs, gold_index=g, vocab=vocab, offset=offset)
        for g in golds
        for i in range(examples)
    ]


def export_jsonl(examples: Iterable[RetrievalExample], path: Path) -> Path:
    """Write one JSON object a line (:meth:`RetrievalExample.record`) to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for example in examples:
            f.write(json.dumps(example.record(), ensure_ascii=False) + "\n")
    return path
