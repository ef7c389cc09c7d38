"""Scoring retrieval: correct answers, and accuracy by position with intervals.

Generation. Greedy decoding (:func:`~lostmid.behaviour.decoding.greedy_decode`) of the
longest target's tokens + ``extra`` new tokens; a text answer is correct by the run's
rule (:mod:`lostmid.behaviour.answers`: Liu's substring rule by default). Token-level
tasks (mqar) compare ids: correct when the value's ids appear contiguously in the
generated ids. Teacher forcing
(:func:`~lostmid.behaviour.decoding.teacher_forced`) scores without generating.

Intervals (:mod:`lostmid.stats.intervals`). Accuracy at a position: the Wilson score
interval (95 %); a difference of two accuracies (primacy = first - middle, recency =
last - middle, gap = max - min): Newcombe's hybrid score interval, conservative for our
paired examples. For the gap, max and min are picked after seeing the data; its
interval is conditional on that choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.behaviour.example import RetrievalExample
from lostmid.behaviour.prompts import encode, prompt_format
from lostmid.behaviour.tokenizers import Tokenizer
from lostmid.checks import check_choice
from lostmid.recordable import fields_record
from lostmid.stats import (
    difference_interval,
    finite_or_none,
    reference_points,
    seed_interval,
    wilson_interval,
)

AXES = ("index", "depth")


@dataclass(frozen=True)
class Difference:
    """``a - b`` of two accuracies with Newcombe's hybrid score interval (module doc)."""

    estimate: float
    ci_low: float
    ci_high: float
    a: int
    b: int

    def record(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "between": [self.a, self.b],
        }


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
) -> tuple[PositionScore, ...]:
    """One :class:`PositionScore` per distinct position, in increasing order; every
    example is counted once, at its own position. The mean teacher-forced log-probability
    has the 95 % t interval over the position's examples (:func:`lostmid.stats.
    seed_interval`'s rule, examples as the unit; None for a single example).

    Args:
        positions: (N,) gold position of each example; correct: (N,) bool;
        logprob: (N,) teacher-forced log-probabilities or None.

    >>> s = score_positions(np.array([0, 0, 2]), np.array([True, False, True]))
    >>> [(p.position, p.n, p.accuracy) for p in s]
    [(0, 2, 0.5), (2, 1, 1.0)]
    """
    check_choice("axis", axis, AXES)
    positions = np.asarray(positions)
    correct = np.asarray(correct, dtype=bool)
    if positions.shape != correct.shape or (logprob is not None and logprob.shape != correct.shape):
        raise ValueError("positions, correct and logprob must have the same shape (N,)")
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
        scores.append(PositionScore(int(pos), axis, n, k, k / n, lo, hi, mean_lp, lp_lo, lp_hi))
    return tuple(scores)


@dataclass(frozen=True)
class RetrievalSummary:
    """Mean accuracy and the shape of accuracy by position.

    mean_accuracy: pooled correct / n over all positions, Wilson interval.
    gap: max - min over positions; primacy: first - middle; recency: last - middle
    (:class:`Difference`, Newcombe intervals). ``middle`` is the position nearest the
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
    """The :class:`RetrievalSummary` of position scores (sorted by position).

    >>> s = score_positions(np.array([0, 1, 2] * 4), np.array([1, 0, 1] * 4, dtype=bool))
    >>> summary = summarise_positions(s, "teacher")
    >>> summary.primacy.estimate, summary.recency.estimate, summary.gap.estimate
    (1.0, 1.0, 1.0)
    """
    if not scores:
        raise ValueError("no positions to summarise")
    scores = sorted(scores, key=lambda s: s.position)
    first, last = scores[0], scores[-1]
    middle = scores[reference_points([s.position for s in scores])[1]]
    best = max(scores, key=lambda s: (s.accuracy, -s.position))
    worst = min(scores, key=lambda s: (s.accuracy, s.position))

    def diff(a: PositionScore, b: PositionScore) -> Difference:
        d, lo, hi = difference_interval(a.correct, a.n, b.correct, b.n)
        return Difference(d, lo, hi, a.position, b.position)

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
        gap=diff(best, worst),
        primacy=diff(first, middle),
        recency=diff(last, middle),
        first=first.position,
        middle=middle.position,
        last=last.position,
        mean_logprob=mean_lp,
    )


# -- answers ------------------------------------------------------------------------------------
# The rules for a generated text answer live in :mod:`lostmid.behaviour.answers`.


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
    tokens (:func:`lostmid.behaviour.prompts.encode` with ``--chat-template off``); the
    task's own ids for mqar."""
    encoded = encode(list(examples), tokenizer, prompt_format("off", tokenizer))
    return encoded.prompts, encoded.targets
