"""Scoring retrieval: correct answers, and accuracy by position with intervals.

Generation. Greedy decoding (:func:`~lostmid.behaviour.decoding.generate.greedy_decode`) of the
longest target's tokens + ``extra`` new tokens; a text answer is correct by the run's
rule (:mod:`lostmid.behaviour.decoding.answers`: Liu's substring rule by default). Token-level
tasks (mqar) compare ids: correct when the value's ids appear contiguously in the
generated ids. Teacher forcing
(:func:`~lostmid.behaviour.decoding.generate.teacher_forced`) scores without generating.

Intervals (:mod:`lostmid.stats.intervals`). Accuracy at a position: the Wilson score
interval (95 %). A difference of two accuracies (primacy = first - middle, recency =
last - middle, gap = max - min): when the examples carry their item ids (``items`` of
:func:`score_positions`) and the two positions hold the same items, once each (a sweep
reads the same haystack, needle and question at every depth), Newcombe's interval for
paired proportions (:func:`~lostmid.stats.paired_difference_interval`: the two Wilson
intervals combined with the items' correlation of outcomes); otherwise Newcombe's
hybrid score interval for independent samples
(:func:`~lostmid.stats.difference_interval`), which is conservative (too wide) for
positively correlated paired examples. :class:`Difference` records which
(``"interval"``: ``"paired"`` or ``"independent"``; a record without the key, written
before the paired rule, is independent). For the gap, max and min are picked after
seeing the data; its interval is conditional on that choice.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lostmid.behaviour.decoding.prompts import encode, prompt_format
from lostmid.behaviour.decoding.tokenizers import Tokenizer
from lostmid.behaviour.tasks.example import RetrievalExample
from lostmid.checks import check_choice
from lostmid.recordable import fields_record
from lostmid.stats import (
    difference_interval,
    finite_or_none,
    paired_counts,
    paired_difference_interval,
    reference_points,
    seed_interval,
    wilson_interval,
)

AXES = ("index", "depth")
INTERVALS = ("paired", "independent")


@dataclass(frozen=True)
class Difference:
    """``a - b`` of two accuracies with Newcombe's interval (module doc): ``interval``
    says which, ``paired`` (the same items at both positions) or ``independent``."""

    estimate: float
    ci_low: float
    ci_high: float
    a: int
    b: int
    interval: str = "independent"

    def record(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "between": [self.a, self.b],
            "interval": self.interval,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Difference:
        """The difference :meth:`record` wrote; a record without ``interval`` (written
        before the paired rule) is ``independent``.

        >>> old = {"estimate": 0.2, "ci_low": 0.05, "ci_high": 0.33, "between": [0, 2]}
        >>> Difference.from_record(old).interval
        'independent'
        """
        a, b = record["between"]
        interval = record.get("interval", "independent")
        check_choice("interval", interval, INTERVALS)
        return cls(record["estimate"], record["ci_low"], record["ci_high"], a, b, interval)


@dataclass(frozen=True)
class PositionScore:
    """Accuracy at one gold position (``axis``: ``index`` 0-indexed, or ``depth`` %)."""

    position: int
    axis: str
    n: int
    correct: int
    accuracy: float
    ci_low: float
    ci_high: float
    mean_logprob: float | None
    logprob_ci_low: float | None = None
    logprob_ci_high: float | None = None
    outcomes: tuple[tuple[Hashable, bool], ...] | None = field(
        default=None, compare=False, repr=False
    )
    """(item id, correct) of each example here, when the caller gave item ids (for the
    paired contrasts of :func:`summarise_positions`); not part of the record."""

    def record(self) -> dict[str, Any]:
        return {
            self.axis: self.position,
            "n": self.n,
            "correct": self.correct,
            "accuracy": self.accuracy,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "mean_logprob": self.mean_logprob,
            "logprob_ci_low": self.logprob_ci_low,
            "logprob_ci_high": self.logprob_ci_high,
        }


def score_positions(
    positions: np.ndarray,
    correct: np.ndarray,
    logprob: np.ndarray | None = None,
    axis: str = "index",
    items: np.ndarray | Sequence[Hashable] | None = None,
) -> tuple[PositionScore, ...]:
    """One :class:`PositionScore` per distinct position, in increasing order; every
    example is counted once, at its own position. The mean teacher-forced log-probability
    has the 95 % t interval over the position's examples (:func:`lostmid.stats.
    seed_interval`'s rule, examples as the unit; None for a single example).

    Args:
        positions: (N,) gold position of each example; correct: (N,) bool;
        logprob: (N,) teacher-forced log-probabilities or None;
        items: (N,) item id of each example (any hashable: an int, a (length, item)
            pair), the same id for the same haystack, needle and question at another
            position; or None. Each score then keeps its examples' (item, correct)
            (:attr:`PositionScore.outcomes`), so :func:`summarise_positions` pairs the
            contrasts by item.

    >>> s = score_positions(np.array([0, 0, 2]), np.array([True, False, True]))
    >>> [(p.position, p.n, p.accuracy) for p in s]
    [(0, 2, 0.5), (2, 1, 1.0)]
    """
    check_choice("axis", axis, AXES)
    positions = np.asarray(positions)
    correct = np.asarray(correct, dtype=bool)
    if positions.shape != correct.shape or (logprob is not None and logprob.shape != correct.shape):
        raise ValueError("positions, correct and logprob must have the same shape (N,)")
    keys = None if items is None else _item_keys(items)
    if keys is not None and len(keys) != correct.size:
        raise ValueError(f"items must have one id per example ({correct.size}), got {len(keys)}")
    scores = []
    for pos in np.unique(positions):
        at = positions == pos
        n, k = int(at.sum()), int(correct[at].sum())
        lo, hi = wilson_interval(k, n)
        mean_lp = lp_lo = lp_hi = None
        if logprob is not None:
            mean_lp = float(np.mean(logprob[at]))
            if np.all(np.isfinite(logprob[at])):
                t = seed_interval(logprob[at].tolist())
                lp_lo, lp_hi = finite_or_none(t.ci_low), finite_or_none(t.ci_high)
        outcomes = None
        if keys is not None:
            outcomes = tuple((keys[i], bool(correct[i])) for i in np.flatnonzero(at))
        scores.append(
            PositionScore(int(pos), axis, n, k, k / n, lo, hi, mean_lp, lp_lo, lp_hi, outcomes)
        )
    return tuple(scores)


def _item_keys(items: np.ndarray | Sequence[Hashable]) -> list[Hashable]:
    """Item ids as hashable Python values (numpy scalars as numbers, rows as tuples)."""
    values = items.tolist() if isinstance(items, np.ndarray) else list(items)
    return [tuple(v) if isinstance(v, list) else v for v in values]


def paired_outcomes(a: PositionScore, b: PositionScore) -> tuple[int, int, int, int] | None:
    """(both, only_a, only_b, neither) over the items of positions ``a`` and ``b`` when
    both hold the same items, each once; None otherwise (no item ids, an item missing
    at one position or repeated at one).

    >>> s = score_positions(np.array([0, 0, 1, 1]), np.array([1, 1, 0, 1], dtype=bool),
    ...                     items=[7, 8, 8, 7])
    >>> paired_outcomes(s[0], s[1])  # item 7 right at both, item 8 only at 0
    (1, 1, 0, 0)
    """
    if a.outcomes is None or b.outcomes is None:
        return None
    at_a, at_b = dict(a.outcomes), dict(b.outcomes)
    if len(at_a) != len(a.outcomes) or len(at_b) != len(b.outcomes) or at_a.keys() != at_b.keys():
        return None
    order = list(at_a)
    return paired_counts([at_a[i] for i in order], [at_b[i] for i in order])


def difference(a: PositionScore, b: PositionScore) -> Difference:
    """``a - b`` in accuracy with its 95 % interval: Newcombe's paired interval when the
    two positions hold the same items (:func:`paired_outcomes`), else his independent
    one (module docstring)."""
    table = paired_outcomes(a, b)
    if table is None:
        d, lo, hi = difference_interval(a.correct, a.n, b.correct, b.n)
        return Difference(d, lo, hi, a.position, b.position, "independent")
    d, lo, hi = paired_difference_interval(*table)
    return Difference(d, lo, hi, a.position, b.position, "paired")


@dataclass(frozen=True)
class RetrievalSummary:
    """Mean accuracy and the shape of accuracy by position.

    mean_accuracy: pooled correct / n over all positions, Wilson interval.
    gap: max - min over positions; primacy: first - middle; recency: last - middle
    (:class:`Difference`, Newcombe intervals: paired by item where the scores carry
    item ids that pair up, else independent). ``middle`` is the position nearest the
    midpoint of the first and last positions (the lower one on a tie).
    """

    metric: str
    n: int
    mean_accuracy: float
    mean_ci_low: float
    mean_ci_high: float
    gap: Difference
    primacy: Difference
    recency: Difference
    first: int
    middle: int
    last: int
    mean_logprob: float | None

    def record(self) -> dict[str, Any]:
        return fields_record(self)


def summarise_positions(scores: Sequence[PositionScore], metric: str) -> RetrievalSummary:
    """The :class:`RetrievalSummary` of position scores (sorted by position). Each
    contrast is paired by item when both of its positions' scores carry item ids
    (:func:`score_positions` with ``items``) for the same items, else independent
    (:func:`difference`).

    >>> s = score_positions(np.array([0, 1, 2] * 4), np.array([1, 0, 1] * 4, dtype=bool))
    >>> summary = summarise_positions(s, "teacher")
    >>> summary.primacy.estimate, summary.recency.estimate, summary.gap.estimate
    (1.0, 1.0, 1.0)
    >>> summary.primacy.interval
    'independent'
    >>> items = np.repeat(np.arange(4), 3)  # item i read at positions 0, 1 and 2
    >>> s = score_positions(np.array([0, 1, 2] * 4), np.array([1, 0, 1] * 4, dtype=bool),
    ...                     items=items)
    >>> summarise_positions(s, "teacher").primacy.interval
    'paired'
    """
    if not scores:
        raise ValueError("no positions to summarise")
    scores = sorted(scores, key=lambda s: s.position)
    first, last = scores[0], scores[-1]
    middle = scores[reference_points([s.position for s in scores])[1]]
    best = max(scores, key=lambda s: (s.accuracy, -s.position))
    worst = min(scores, key=lambda s: (s.accuracy, s.position))
    n = sum(s.n for s in scores)
    k = sum(s.correct for s in scores)
    lo, hi = wilson_interval(k, n)
    logprobs = [s.mean_logprob * s.n for s in scores if s.mean_logprob is not None]
    mean_lp = sum(logprobs) / n if len(logprobs) == len(scores) else None
    return RetrievalSummary(
        metric=metric,
        n=n,
        mean_accuracy=k / n,
        mean_ci_low=lo,
        mean_ci_high=hi,
        gap=difference(best, worst),
        primacy=difference(first, middle),
        recency=difference(last, middle),
        first=first.position,
        middle=middle.position,
        last=last.position,
        mean_logprob=mean_lp,
    )


def shape_of(scores: Sequence[PositionScore], summary: RetrievalSummary, margin: float) -> Any:
    """The shape indices and class of accuracy by position
    (:func:`lostmid.stats.shape.shape_indices` on the counts); primacy and recency by the
    summary's paired intervals where they are paired (the same items at the first,
    middle and last positions: :func:`lostmid.stats.shape.with_paired_ends`)."""
    from lostmid.stats.shape import Curve, shape_indices, with_paired_ends

    scores = sorted(scores, key=lambda s: s.position)
    curve = Curve.from_counts(
        [s.position for s in scores], [s.correct for s in scores], [s.n for s in scores]
    )
    shape = shape_indices(curve, margin=margin)
    if summary.primacy.interval == summary.recency.interval == "paired":
        shape = with_paired_ends(shape, summary.primacy, summary.recency)
    return shape


# -- answers ------------------------------------------------------------------------------------
# The rules for a generated text answer live in :mod:`lostmid.behaviour.decoding.answers`.


def contains_ids(needle: Sequence[int], haystack: Sequence[int]) -> bool:
    """True when ``needle`` occurs contiguously in ``haystack`` (token-level tasks).

    >>> contains_ids([3, 4], [1, 3, 4, 5]), contains_ids([3, 4], [3, 5, 4])
    (True, False)
    """
    m = len(needle)
    return any(list(haystack[i : i + m]) == list(needle) for i in range(len(haystack) - m + 1))


def encode_examples(
    examples: Sequence[RetrievalExample], tokenizer: Tokenizer | None
) -> tuple[list[list[int]], list[list[int]]]:
    """(prompt ids, target ids) per example, raw prompts with the tokenizer's special
    tokens (:func:`lostmid.behaviour.decoding.prompts.encode` with ``--chat-template off``); the
    task's own ids for mqar."""
    encoded = encode(list(examples), tokenizer, prompt_format("off", tokenizer))
    return encoded.prompts, encoded.targets
