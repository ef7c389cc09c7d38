"""Intervals over seeds against scipy's t test, and the verdict rule on both sides of
each of its boundaries."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from lostmid.errors import UserError
from lostmid.remedies.stats import RULE, VERDICTS, gap_margin, halves_gap, verdict
from lostmid.stats import Interval, paired_difference, seed_interval


@pytest.mark.parametrize("values", [[0.1, 0.5, 0.3], [1.0, 1.0, 0.0, 0.5, 0.25], [2.0, 4.0]])
def test_seed_interval_is_scipys_one_sample_t_interval(values: list[float]) -> None:
    ours = seed_interval(values)
    reference = scipy_stats.ttest_1samp(values, 0.0).confidence_interval(0.95)
    assert ours.estimate == pytest.approx(np.mean(values))
    assert (ours.ci_low, ours.ci_high) == pytest.approx((reference.low, reference.high))
    assert ours.n == len(values)


def test_paired_difference_is_the_t_interval_of_the_related_samples_test() -> None:
    remedy, baseline = [0.2, 0.35, 0.1, 0.3], [0.4, 0.45, 0.5, 0.3]
    ours = paired_difference(remedy, baseline)
    reference = scipy_stats.ttest_rel(remedy, baseline).confidence_interval(0.95)
    assert (ours.ci_low, ours.ci_high) == pytest.approx((reference.low, reference.high))
    with pytest.raises(UserError, match="same seeds"):
        paired_difference([0.1, 0.2], [0.1])


def test_one_seed_has_an_infinite_interval_and_is_inconclusive() -> None:
    one = seed_interval([0.4])
    assert one.ci_low == -math.inf and one.ci_high == math.inf
    assert one.record()["ci_low"] is None and one.record()["ci_high"] is None
    gap, accuracy = paired_difference([0.1], [0.5]), paired_difference([0.9], [0.5])
    assert verdict(gap, accuracy, 0.15) == "inconclusive"
    with pytest.raises(UserError, match="at least one finite value"):
        seed_interval([])


def _i(low: float, high: float) -> Interval:
    return Interval((low + high) / 2, low, high, 3)


ACCURACY_SAME = _i(-0.1, 0.1)
M = 0.15  # the margin: half of a baseline gap of 0.3


@pytest.mark.parametrize(
    ("gap", "accuracy", "expected"),
    [
        # works: the upper end of the gap difference below 0
        (_i(-0.4, -1e-9), ACCURACY_SAME, "works"),
        (_i(-0.4, 0.0), ACCURACY_SAME, "inconclusive"),  # reaches 0 and below -m
        # the accuracy guard: the upper end of its difference must be >= 0
        (_i(-0.4, -0.1), _i(-0.2, 0.0), "works"),
        (_i(-0.4, -0.1), _i(-0.2, -1e-9), "worse"),
        (_i(-0.4, -0.1), _i(0.05, 0.2), "works"),  # exceeds zero: also fine
        # worse: the gap difference lies above zero, whatever the accuracy
        (_i(1e-9, 0.3), ACCURACY_SAME, "worse"),
        (_i(1e-9, 0.3), _i(0.1, 0.3), "worse"),
        # does not work: the gap interval stops short of -m (no reduction that counts)
        (_i(0.0, 0.3), ACCURACY_SAME, "does not work"),
        (_i(-M, 0.3), ACCURACY_SAME, "does not work"),
        (_i(-0.05, 0.02), ACCURACY_SAME, "does not work"),
        # inconclusive: spans 0 and reaches below -m
        (_i(-M - 1e-9, 0.3), ACCURACY_SAME, "inconclusive"),
        (_i(-0.20, 1.11), ACCURACY_SAME, "inconclusive"),  # the curriculum
    ],
)
def test_verdict_on_both_sides_of_each_boundary(
    gap: Interval, accuracy: Interval, expected: str
) -> None:
    assert verdict(gap, accuracy, M) == expected


def test_each_verdict_is_reached_from_seeds_built_for_it() -> None:
    """Per-seed gaps constructed so the answer is known: a clear reduction works, a
    clear increase is worse, a tight null does not work, a noisy null is inconclusive."""
    baseline = [0.30, 0.32, 0.28]
    margin = gap_margin(seed_interval(baseline))
    assert margin == pytest.approx(0.15)
    accuracy = paired_difference([0.5, 0.52, 0.48], [0.5, 0.5, 0.5])
    cases = {
        "works": [0.10, 0.11, 0.09],
        "worse": [0.50, 0.52, 0.49],
        "does not work": [0.31, 0.32, 0.29],
        "inconclusive": [0.05, 0.60, 0.20],
    }
    for expected, remedy in cases.items():
        assert verdict(paired_difference(remedy, baseline), accuracy, margin) == expected
    assert set(cases) == set(VERDICTS)
    with pytest.raises(ValueError, match="margin must be >= 0"):
        verdict(_i(-0.1, 0.1), ACCURACY_SAME, -0.1)


def test_a_baseline_without_a_valley_decides_nothing_but_harm() -> None:
    """A task at its floor (every arm 0 at every depth) or a flat baseline: m = 0, and
    nothing short of a resolved harm is decided."""
    zero = Interval(0.0, 0.0, 0.0, 20)
    assert verdict(zero, zero, gap_margin(zero)) == "inconclusive"
    assert verdict(_i(-0.1, 0.1), ACCURACY_SAME, 0.0) == "inconclusive"
    assert verdict(_i(0.05, 0.3), ACCURACY_SAME, 0.0) == "worse"
    assert verdict(_i(-0.3, -0.1), ACCURACY_SAME, 1e-9) == "works"


def test_the_rule_text_names_every_verdict() -> None:
    assert all(v in RULE for v in VERDICTS)


def test_halving_needs_a_baseline_gap_and_half_of_it() -> None:
    base = _i(0.2, 0.4)  # estimate 0.3
    assert halves_gap(Interval(0.15, 0.0, 0.3, 3), base)
    assert not halves_gap(Interval(0.1500001, 0.0, 0.3, 3), base)
    assert not halves_gap(Interval(0.0, 0.0, 0.0, 3), Interval(0.0, 0.0, 0.0, 3))
