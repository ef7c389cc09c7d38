"""Does a structural quantity predict behaviour, example by example? The link rule.

Data: for each example i, its depth (the gold position's bin), whether it was answered
right, and a structural score s_i (the gold span's influence on the answer). Two
questions, each answered by a 95% interval and a boundary stated before any run:

* **across depths**: does the mean score by depth order the accuracy by depth?
  Spearman's rho between the per-depth means of s and the per-depth accuracies, its
  interval from a stratified bootstrap (examples resampled within each depth).
  Supported when the interval lies above ``ACROSS = 0.5``, not supported when it lies
  below, else inconclusive.
* **within depths**: beyond what depth explains, do right answers have higher scores
  than wrong ones at the same depth? The stratified AUC: within each depth, the
  probability that a right example's score exceeds a wrong one's (ties count half),
  averaged over depths with weights n_right x n_wrong (depths with no right or no wrong
  answer carry no weight), with the same stratified bootstrap. Supported when the
  interval lies above ``WITHIN = 0.55``, not supported when it lies below, else
  inconclusive; no depth with both outcomes: inconclusive (nothing to compare).

Both are inconclusive when any depth has fewer than ``MIN_PER_DEPTH`` (5) examples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.errors import UserError
from lostmid.stats.ranks import spearman
from lostmid.stats.verdicts import INCONCLUSIVE
from lostmid.stats.verdicts import supported_if_above as _verdict

ACROSS = 0.5
WITHIN = 0.55
MIN_PER_DEPTH = 5
"""Fewer examples than this at any depth: both answers inconclusive (a bootstrap within a
stratum of 2-4 examples understates the spread)."""


def stratified_auc(depth: np.ndarray, right: np.ndarray, score: np.ndarray) -> float:
    """The depth-stratified AUC of ``score`` for right against wrong answers (nan if no
    depth has both).

    >>> stratified_auc(np.array([0, 0, 1, 1]), np.array([1, 0, 1, 0]), np.array([2., 1, 4, 3]))
    1.0
    """
    total = weight = 0.0
    for d in np.unique(depth):
        at = depth == d
        good, bad = score[at & (right == 1)], score[at & (right == 0)]
        if good.size == 0 or bad.size == 0:
            continue
        wins = (good[:, None] > bad[None, :]).sum() + 0.5 * (good[:, None] == bad[None, :]).sum()
        total += float(wins)
        weight += good.size * bad.size
    return total / weight if weight else float("nan")


def _across(depth: np.ndarray, right: np.ndarray, score: np.ndarray) -> float:
    levels = np.unique(depth)
    means = [score[depth == d].mean() for d in levels]
    accuracy = [right[depth == d].mean() for d in levels]
    return float(spearman(means, accuracy))


@dataclass(frozen=True)
class LinkVerdict:
    """The two answers with their statistics and 95% bootstrap intervals."""

    across: tuple[float, float, float]
    across_verdict: str
    within: tuple[float, float, float]
    within_verdict: str
    examples: int
    depths: int

    def record(self) -> dict[str, Any]:
        def clean(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {
            "examples": self.examples,
            "depths": self.depths,
            "across_depths": {
                "statistic": "Spearman(mean score by depth, accuracy by depth)",
                "value": clean(self.across[0]),
                "low": clean(self.across[1]),
                "high": clean(self.across[2]),
                "boundary": ACROSS,
                "verdict": self.across_verdict,
            },
            "within_depths": {
                "statistic": "depth-stratified AUC of the score, right vs wrong",
                "value": clean(self.within[0]),
                "low": clean(self.within[1]),
                "high": clean(self.within[2]),
                "boundary": WITHIN,
                "verdict": self.within_verdict,
            },
        }


def link_verdict(
    depth: Sequence[int],
    right: Sequence[bool | int],
    score: Sequence[float],
    *,
    draws: int = 2000,
    seed: int = 0,
) -> LinkVerdict:
    """The link rule on per-example data (module docstring)."""
    d = np.asarray(depth)
    r = np.asarray(right, dtype=int)
    s = np.asarray(score, dtype=np.float64)
    if not (d.shape == r.shape == s.shape) or d.ndim != 1 or d.size < 4:
        raise UserError("the link rule needs >= 4 examples, each a depth, an outcome and a score")
    if not np.all(np.isfinite(s)):
        raise UserError("every structural score must be finite")
    levels = np.unique(d)
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(d == level) for level in levels]
    across_draws = np.empty(draws)
    within_draws = np.empty(draws)
    for b in range(draws):
        idx = np.concatenate([g[rng.integers(0, g.size, size=g.size)] for g in groups])
        across_draws[b] = _across(d[idx], r[idx], s[idx]) if levels.size >= 3 else np.nan
        within_draws[b] = stratified_auc(d[idx], r[idx], s[idx])

    def interval(value: float, sample: np.ndarray) -> tuple[float, float, float]:
        finite = sample[np.isfinite(sample)]
        if finite.size < 0.9 * sample.size:
            return (value, float("nan"), float("nan"))
        low, high = np.percentile(finite, [2.5, 97.5])
        return (value, float(low), float(high))

    across = interval(_across(d, r, s) if levels.size >= 3 else float("nan"), across_draws)
    within = interval(stratified_auc(d, r, s), within_draws)
    enough = min(g.size for g in groups) >= MIN_PER_DEPTH
    return LinkVerdict(
        across=across,
        across_verdict=_verdict(across[1], across[2], ACROSS) if enough else INCONCLUSIVE,
        within=within,
        within_verdict=_verdict(within[1], within[2], WITHIN) if enough else INCONCLUSIVE,
        examples=int(d.size),
        depths=int(levels.size),
    )
