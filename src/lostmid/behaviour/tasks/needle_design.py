"""A counterbalanced needle design that separates the gold needle's depth from its rank
among the needles (``retrieve --task niah-multikey --needle-order factorial``).

With RULER's scattered distractors the gold needle is the first needle at depth 0 and
the last at 100, so "answer the first or the last needle when unsure" makes a U by
itself; with the distractors held around it (``fixed``) the gold is never the outermost
needle and answers pulled toward the nearer end of the context count against it. This
design varies the two apart, on the same items: each item's keys, values and filler are
drawn once (:func:`~lostmid.behaviour.tasks.needles.needle_draw`) and placed under every
cell.

Arrangements of one item at one depth ``p`` (``d`` distractors, ``d >= 2``):

* ``factorial``: the gold at ``p`` % of the filler, crossed with its rank: ``first`` (every
  distractor after it), ``middle`` (``d // 2`` before, the rest after) or ``last`` (every
  distractor before). The needles on each side are spread evenly from the gold to that
  end of the haystack (before it: at 0, 1/k, ..., (k-1)/k of the way to the gold; after
  it: at 1/k, ..., 1 of the way to the end). A rank that needs a distractor before the
  gold cannot exist at depth 0 (nor one after it at 100): those cells are left out, so
  depth 0 holds the ``first`` rank only and depth 100 the ``last`` only; every other
  depth holds all three. Moving the rank at one depth moves the distractors with the
  gold fixed (the first one-factor contrast).
* ``ends``: ``d // 2`` distractors at the start of the haystack and the rest at its end,
  fixed; the gold at ``p`` % of the filler between them, so it is the ``middle`` needle
  at every depth and only its depth moves (the second one-factor contrast).

No two needles are adjacent: between neighbouring needles lie at least ``gap`` filler
tokens (counted sentence by sentence, as depths are). A cell whose needles cannot be
that far apart at this length is refused with one line, not moved.

Which needle an answer names (:func:`named_needle`): ``gold`` (the answer is right),
``earlier`` or ``later`` (the first needle value the answer holds belongs to a
distractor before or after the gold, in context order) or ``none``.

>>> cells = design_examples(seed=0, index=0, depth=50, length=3000, distractors=4, gap=10)
>>> [(e.needles.arrangement[0], e.needles.rank, e.needles.gold) for e in cells]
[('f', 'first', 0), ('f', 'middle', 2), ('f', 'last', 4), ('e', 'middle', 2)]
>>> len({e.value for e in cells}), min(min(e.needles.gaps) for e in cells) >= 10
(1, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from lostmid.behaviour.tasks.example import (
    NeedlePlacement,
    RetrievalExample,
    check_depths,
    largest_fitting,
)
from lostmid.behaviour.tasks.needles import (
    NEEDLE,
    NEEDLE_TASKS,
    _assemble,
    needle_draw,
    needles_example,
    resolved_distractors,
)
from lostmid.behaviour.tasks.niah import (
    TokenCounter,
    byte_count,
    haystack_sentences,
    insertion_point,
)
from lostmid.errors import UserError

RANKS = ("first", "middle", "last")
ARRANGEMENTS = ("factorial", "ends")
DESIGN_TASK = "niah-multikey"
"""The one needle task with a single gold needle among distractors: the design's task."""
DEFAULT_GAP = 10
"""Filler tokens at least between two needles (about two of RULER's filler sentences)."""
NAMED = ("gold", "earlier", "later", "none")


def check_design(task: str, distractors: int, gap: int) -> None:
    """One line when the factorial design cannot be made: another task, fewer than two
    distractors (no middle rank), a gap below one token."""
    if task != DESIGN_TASK:
        raise UserError(
            f"--needle-order factorial is for {DESIGN_TASK} (one gold needle among "
            f"distractors); --task {task} asks for several needles"
        )
    if distractors < 2:
        raise UserError(
            f"--needle-order factorial needs --distractors >= 2 (a needle before and after "
            f"the gold for its middle rank), got {distractors}"
        )
    if gap < 1:
        raise UserError(f"--needle-gap must be >= 1 token (needles never adjacent), got {gap}")


def ranks_at(depth: int) -> tuple[str, ...]:
    """The ranks the gold can take at ``depth``: a distractor cannot precede it at 0 nor
    follow it at 100.

    >>> ranks_at(0), ranks_at(50), ranks_at(100)
    (('first',), ('first', 'middle', 'last'), ('last',))
    """
    if depth == 0:
        return ("first",)
    if depth == 100:
        return ("last",)
    return RANKS


def before_count(rank: str, distractors: int) -> int:
    """Distractors before the gold at ``rank``."""
    return {"first": 0, "middle": distractors // 2, "last": distractors}[rank]


def _nearest_end(offsets: np.ndarray, target: float, lo: int, hi: int) -> int:
    """The sentence end in ``lo..hi`` whose token offset is nearest ``target`` (the lower
    on a tie)."""
    ends = np.arange(lo, hi + 1)
    return int(ends[np.argmin(np.abs(offsets[lo : hi + 1] - target))])


def _spread(offsets: np.ndarray, gold: int, before: int, after: int) -> list[int]:
    """Sentence ends of ``before`` distractors spread evenly from the start to the gold's
    end ``gold`` and ``after`` from it to the last end (module doc)."""
    last = len(offsets) - 1
    start, stop = offsets[gold], offsets[last]
    places = [
        _nearest_end(offsets, start * j / before, 0, gold) for j in range(before)
    ] + [_nearest_end(offsets, start + (stop - start) * j / after, gold, last)
         for j in range(1, after + 1)]  # fmt: skip
    return places


def _at_ends(offsets: np.ndarray, before: int, after: int, gap: int) -> tuple[list[int], int, int]:
    """Sentence ends of ``before`` distractors packed from the start and ``after`` packed
    back from the end, each ``gap`` tokens from the next; and the first and last end the
    gold may take between them."""
    last = len(offsets) - 1

    def forward(k: int) -> int:  # the first end at least gap tokens after end k
        return int(np.searchsorted(offsets, offsets[k] + gap, side="left"))

    def backward(k: int) -> int:  # the last end at least gap tokens before end k
        return int(np.searchsorted(offsets, offsets[k] - gap, side="right") - 1)

    lead = [0]
    for _ in range(before - 1):
        lead.append(forward(lead[-1]))
    trail = [last]
    for _ in range(after - 1):
        trail.insert(0, backward(trail[0]))
    return lead + trail, forward(lead[-1]), backward(trail[0])


def _gaps(offsets: np.ndarray, ends: Sequence[int]) -> tuple[int, ...]:
    """Filler tokens between neighbouring needles at sentence ends ``ends`` (in order)."""
    return tuple(int(offsets[b] - offsets[a]) for a, b in zip(ends, ends[1:], strict=False))


def design_examples(
    *,
    seed: int,
    index: int,
    depth: int,
    length: int,
    distractors: int = 4,
    gap: int = DEFAULT_GAP,
    needle_type: str = "numbers",
    count_tokens: TokenCounter = byte_count,
    haystack: str = "repeat",
    query_aware: bool = False,
) -> list[RetrievalExample]:
    """Item ``index`` at ``depth`` under every arrangement of the design (module doc):
    the ``factorial`` ranks that fit the depth, then ``ends``. Every example holds the
    same needles and filler; only where they sit changes.

    Raises:
        UserError: the design cannot be made (:func:`check_design`), or a cell's needles
            cannot be ``gap`` tokens apart at this length (one line naming the cell).
    """
    check_design(DESIGN_TASK, distractors, gap)
    check_depths([depth])
    # the item as the scattered design makes it: the prompt's head, question, tail and the
    # filler's size (every needle fits), from which the cells differ only in placement
    base = needles_example(
        seed=seed, index=index, depth=depth, length=length, variant=DESIGN_TASK,
        distractors=distractors, needle_type=needle_type, count_tokens=count_tokens,
        haystack=haystack, query_aware=query_aware,
    )  # fmt: skip
    gold, others, _ = needle_draw(seed, index, DESIGN_TASK, 1, distractors, needle_type)
    gold_text = NEEDLE.format(kind=needle_type, key=gold[0][0], value=gold[0][1])
    other_text = [NEEDLE.format(kind=needle_type, key=k, value=v) for k, v in others]
    head = base.prompt[: base.context[0]] if base.context else ""
    tail = base.prompt[base.context[1] :] if base.context else ""
    n = _filler_size(seed, index, haystack, head, tail, gold_text, other_text, length,
                     count_tokens)  # fmt: skip
    sentences = haystack_sentences(seed, index, n, haystack)
    tokens = [count_tokens(s + " ") for s in sentences]
    offsets = np.concatenate([[0], np.cumsum(np.asarray(tokens, dtype=np.int64))])
    total = max(int(offsets[-1]), 1)
    out = []
    cells = [("factorial", r) for r in ranks_at(depth)] + [("ends", "middle")]
    for arrangement, rank in cells:
        before = before_count(rank, distractors)
        if arrangement == "factorial":
            at = insertion_point(tokens, depth)
            places = _spread(offsets, at, before, distractors - before)
        else:
            places, lo, hi = _at_ends(offsets, before, distractors - before, gap)
            at = lo + insertion_point(tokens[lo:hi], depth) if lo <= hi else -1
        ends = sorted([*places, at])
        spaced = _gaps(offsets, ends)
        if at < 0 or ends.index(at) != before or min(spaced) < gap:
            raise UserError(
                f"--needle-gap {gap}: at depth {depth}% the {rank} rank ({arrangement}) cannot "
                f"keep {distractors + 1} needles {gap} tokens apart in --length {length}; use "
                "a longer --length, a smaller --needle-gap or fewer --distractors"
            )
        values = tuple(v for _, v in others[:before]) + (gold[0][1],)
        values += tuple(v for _, v in others[before:])
        gold_depth = round(100.0 * float(offsets[at]) / total, 2)
        placement = NeedlePlacement(arrangement, rank, values, before, spaced, gold_depth)
        example = _placed(base, sentences, head, tail, gold_text, other_text, at, places, depth)
        out.append(replace(example, needles=placement))
    return out


def _filler_size(
    seed: int,
    index: int,
    haystack: str,
    head: str,
    tail: str,
    gold: str,
    others: Sequence[str],
    length: int,
    count_tokens: TokenCounter,
) -> int:
    """The most filler sentences with which the prompt, every needle at the end, fits
    ``length`` tokens (as the scattered design sizes it)."""
    needles = " ".join([gold, *others])

    def size(m: int) -> int:
        sentences = haystack_sentences(seed, index, m, haystack)
        return count_tokens(head + " ".join([*sentences, needles]) + tail)

    return largest_fitting(size, length, 0)


def _placed(
    base: RetrievalExample,
    sentences: Sequence[str],
    head: str,
    tail: str,
    gold: str,
    others: Sequence[str],
    at: int,
    places: Sequence[int],
    depth: int,
) -> RetrievalExample:
    """The item's prompt with the gold at sentence end ``at`` and the distractors, in
    order, at ``places``."""
    prompt, spans = _assemble(sentences, [(gold, True)], at, others, places, head, tail)
    return replace(
        base, prompt=prompt, spans=tuple(spans), depth=depth, depth_pct=float(depth),
        context=(len(head), len(prompt) - len(tail)),
    )  # fmt: skip


def named_needle(answer: str, correct: bool, placement: NeedlePlacement) -> str:
    """Which needle an answer names: ``gold`` when it is right; else the first needle
    value it holds, ``earlier`` or ``later`` than the gold in the context; else ``none``.

    >>> p = NeedlePlacement("factorial", "middle", ("111", "222", "333"), 1, (10, 10), 50.0)
    >>> named_needle(" 222", True, p), named_needle("333 or 111", False, p)
    ('gold', 'later')
    >>> named_needle(" 1111", False, p), named_needle(" 42", False, p)
    ('earlier', 'none')
    """
    if correct:
        return "gold"
    found = [
        (answer.find(v), i) for i, v in enumerate(placement.values) if i != placement.gold
        and v in answer
    ]  # fmt: skip
    if not found:
        return "none"
    _, first = min(found)
    return "earlier" if first < placement.gold else "later"


def factorial_cells(
    options: Any, index: int, depth: int, length: int, count: TokenCounter
) -> list[RetrievalExample] | None:
    """Every cell of the factorial design at ``depth`` for ``--needle-order factorial``
    (:mod:`~lostmid.behaviour.tasks.needle_design`), else None."""
    if getattr(options, "needle_order", "scattered") != "factorial":
        return None
    return design_examples(
        seed=options.seed,
        index=index,
        depth=depth,
        length=length,
        distractors=resolved_distractors("niah-multikey", options.distractors),
        gap=getattr(options, "needle_gap", DEFAULT_GAP),
        needle_type=options.needle_type,
        count_tokens=count,
        haystack=options.haystack,
        query_aware=getattr(options, "query_aware", False),
    )


DESIGNED_NEEDLE_TASKS = tuple(
    replace(t, design=factorial_cells) if t.name == DESIGN_TASK else t for t in NEEDLE_TASKS
)
"""RULER's needle tasks as the registry lists them: multi-key with its factorial design."""
