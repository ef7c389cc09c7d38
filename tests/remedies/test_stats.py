"""Intervals over seeds against scipy's t test, and the verdict rule on both sides of
each of its boundaries."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from lostmid.errors import UserError
from lostmid.remedies.stats import halves_gap, verdict
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


def test_one_seed_has_an_infinite_interval_and_can_never_work() -> None:
    one = seed_interval([0.4])
    assert one.ci_low == -math.inf and one.ci_high == math.inf
    assert one.record()["ci_low"] is None and one.record()["ci_high"] is None
    assert verdict(paired_difference([0.1], [0.5]), paired_difference([0.9], [0.5])) == (
        "does not work"
    )
    with pytest.raises(UserError, match="at least one finite value"):
        seed_interval([])


def _i(low: float, high: float) -> Interval:
    return Interval((low + high) / 2, low, high, 3)


ACCURACY_SAME = _i(-0.1, 0.1)


@pytest.mark.parametrize(
    ("gap", "accuracy", "expected"),
    [
        # the gap boundary: the upper end of the gap difference must be below 0
        (_i(-0.4, -1e-9), ACCURACY_SAME, "works"),
        (_i(-0.4, 0.0), ACCURACY_SAME, "does not work"),
        (_i(-0.4, 1e-9), ACCURACY_SAME, "does not work"),
        # the accuracy boundary: the upper end of its difference must be >= 0
        (_i(-0.4, -0.1), _i(-0.2, 0.0), "works"),
        (_i(-0.4, -0.1), _i(-0.2, -1e-9), "worse"),
        (_i(-0.4, -0.1), _i(0.05, 0.2), "works"),  # exceeds zero: also fine
        # worse: the gap difference lies above zero
        (_i(1e-9, 0.3), ACCURACY_SAME, "worse"),
        (_i(0.0, 0.3), ACCURACY_SAME, "does not work"),
    ],
)
def test_verdict_on_both_sides_of_each_boundary(
    gap: Interval, accuracy: Interval, expected: str
) -> None:
    assert verdict(gap, accuracy) == expected


def test_halving_needs_a_baseline_gap_and_half_of_it() -> None:
    base = _i(0.2, 0.4)  # estimate 0.3
    assert halves_gap(Interval(0.15, 0.0, 0.3, 3), base)
    assert not halves_gap(Interval(0.1500001, 0.0, 0.3, 3), base)
    assert not halves_gap(Interval(0.0, 0.0, 0.0, 3), Interval(0.0, 0.0, 0.0, 3))
