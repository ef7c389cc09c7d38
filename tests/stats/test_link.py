"""The link rule on constructed data where the answer is yes, no and undecided."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.errors import UserError
from lostmid.stats.link import link_verdict, stratified_auc


def _examples(n_per_depth: int, accuracy, score_of, seed: int = 0):
    rng = np.random.default_rng(seed)
    depth, right, score = [], [], []
    for d, acc in enumerate(accuracy):
        outcome = rng.random(n_per_depth) < acc
        for r in outcome:
            depth.append(d)
            right.append(int(r))
            score.append(score_of(d, r, rng))
    return depth, right, score


U = [0.9, 0.6, 0.3, 0.5, 0.85]  # a U over five depths


def test_a_score_that_follows_accuracy_and_the_outcome_is_supported() -> None:
    depth, right, score = _examples(
        60, U, lambda d, r, g: U[d] + (1.0 if r else 0.0) + g.normal(0, 0.3)
    )
    v = link_verdict(depth, right, score, draws=400)
    assert v.across_verdict == "supported" and v.within_verdict == "supported"
    assert v.within[1] > 0.7


def test_a_score_blind_to_both_is_not_supported() -> None:
    depth, right, score = _examples(200, U, lambda d, r, g: -U[d] + g.normal(0, 0.01), seed=1)
    v = link_verdict(depth, right, score, draws=400)
    assert v.across_verdict == "not supported"
    assert v.within[2] < 0.55 and v.within_verdict == "not supported"


def test_too_few_examples_are_inconclusive() -> None:
    depth, right, score = _examples(4, U, lambda d, r, g: g.normal(), seed=2)
    v = link_verdict(depth, right, score, draws=300)
    assert v.across_verdict == "inconclusive"
    assert v.within_verdict == "inconclusive"


def test_two_examples_a_depth_decide_nothing() -> None:
    """A clear pattern, but 2 examples a depth: a stratum's bootstrap cannot spread."""
    depth, right, score = _examples(2, U, lambda d, r, g: -U[d], seed=3)
    v = link_verdict(depth, right, score, draws=200)
    assert (v.across_verdict, v.within_verdict) == ("inconclusive", "inconclusive")


def test_stratification_removes_what_depth_explains() -> None:
    """Scores that differ only between depths say nothing within a depth: AUC 0.5."""
    depth = [0] * 4 + [1] * 4
    right = [1, 0, 1, 0, 1, 0, 1, 0]
    score = [1.0] * 4 + [5.0] * 4
    assert stratified_auc(np.array(depth), np.array(right), np.array(score)) == 0.5


def test_bad_input() -> None:
    with pytest.raises(UserError, match=">= 4 examples"):
        link_verdict([0, 1], [1, 0], [0.1, 0.2])
    with pytest.raises(UserError, match="finite"):
        link_verdict([0, 0, 1, 1], [1, 0, 1, 0], [0.1, np.nan, 0.2, 0.3])
