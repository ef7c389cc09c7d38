"""Shape indices: each class on constructed curves whose answer is known, intervals that
reduce to Newcombe's for a difference, and curves the intervals cannot decide."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lostmid.errors import UserError
from lostmid.stats import difference_interval, wilson_interval
from lostmid.stats.shape import Curve, classify, reference_points, shape_indices

POSITIONS = [0, 25, 50, 75, 100]


def counts(rates: list[float], n: int) -> Curve:
    return Curve.from_counts(POSITIONS, [round(r * n) for r in rates], [n] * len(rates))


@pytest.mark.parametrize(
    ("rates", "shape"),
    [
        ([0.95, 0.7, 0.5, 0.7, 0.9], "U"),
        ([0.2, 0.6, 0.9, 0.6, 0.25], "inverted U"),
        ([0.95, 0.7, 0.5, 0.3, 0.1], "primacy"),  # (+, -)
        ([0.9, 0.5, 0.5, 0.5, 0.5], "primacy"),  # (+, =)
        ([0.5, 0.5, 0.5, 0.4, 0.1], "primacy"),  # (=, -)
        ([0.1, 0.3, 0.5, 0.7, 0.9], "recency"),  # (-, +)
        ([0.5, 0.5, 0.5, 0.6, 0.9], "recency"),  # (=, +)
        ([0.1, 0.5, 0.5, 0.5, 0.5], "recency"),  # (-, =)
        ([0.5, 0.2, 0.5, 0.8, 0.5], "flat"),  # the ends equal the middle; the rest is free
        ([0.5, 0.5, 0.5, 0.5, 0.5], "flat"),
    ],
)
def test_each_class_on_curves_with_known_answers(rates: list[float], shape: str) -> None:
    """4000 examples a position: intervals of about +-0.02, well inside a 0.05 margin and
    far from the 0.3+ effects built in."""
    assert shape_indices(counts(rates, 4000), margin=0.05).shape == shape


@pytest.mark.parametrize(
    ("rates", "n"),
    [
        ([0.95, 0.7, 0.5, 0.7, 0.9], 5),  # a U at 5 examples: intervals span 0
        ([0.5, 0.5, 0.5, 0.5, 0.5], 40),  # flat in truth, but +-0.2 is not within 0.05
        ([0.9, 0.5, 0.5, 0.5, 0.56], 400),  # primacy decided, recency neither + nor =
    ],
)
def test_undetermined_where_the_intervals_do_not_decide(rates: list[float], n: int) -> None:
    s = shape_indices(counts(rates, n), margin=0.05)
    assert s.shape == "undetermined"


def test_the_point_estimates_alone_would_have_said_u() -> None:
    s = shape_indices(counts([0.8, 0.6, 0.4, 0.6, 0.8], 10), margin=0.05)
    assert s.primacy.estimate > 0 and s.recency.estimate > 0 and s.shape == "undetermined"


def test_a_difference_is_newcombes_interval_and_the_mean_is_pooled_wilson() -> None:
    c = Curve.from_counts([0, 1, 2], [56, 30, 48], [70, 60, 80])
    s = shape_indices(c, margin=0.05)
    d, lo, hi = difference_interval(56, 70, 30, 60)
    assert (s.primacy.estimate, s.primacy.ci_low, s.primacy.ci_high) == pytest.approx((d, lo, hi))
    d, lo, hi = difference_interval(48, 80, 30, 60)
    assert (s.recency.estimate, s.recency.ci_low, s.recency.ci_high) == pytest.approx((d, lo, hi))
    assert (s.mean.ci_low, s.mean.ci_high) == pytest.approx(wilson_interval(134, 210))
    assert s.gap_between == (0.0, 1.0) and s.gap.estimate == pytest.approx(0.8 - 0.5)


def test_bias_index_mover_interval_by_hand() -> None:
    """(first + last)/2 - middle: MOVER with half weights on the ends."""
    c = Curve.from_counts([0, 1, 2], [9, 5, 8], [10, 10, 10])
    s = shape_indices(c, margin=0.0)
    (l1, u1), (l2, u2), (l3, u3) = (wilson_interval(k, 10) for k in (9, 5, 8))
    est = (0.9 + 0.8) / 2 - 0.5
    low = est - np.sqrt((0.5 * (0.9 - l1)) ** 2 + (0.5 * (0.8 - l3)) ** 2 + (u2 - 0.5) ** 2)
    high = est + np.sqrt((0.5 * (u1 - 0.9)) ** 2 + (0.5 * (u3 - 0.8)) ** 2 + (0.5 - l2) ** 2)
    assert (s.bias.estimate, s.bias.ci_low, s.bias.ci_high) == pytest.approx((est, low, high))


def test_estimates_with_standard_errors() -> None:
    """An influence-like profile: primacy tail, flat middle, last-token spike."""
    values = np.r_[3.0, 1.0, np.ones(5), 1.0, 10.0]
    positions = np.arange(1, 10)
    sharp = shape_indices(Curve.from_estimates(positions, values, 0.01 * values), margin=0.05)
    assert sharp.shape == "U" and sharp.middle == 5.0
    assert sharp.primacy.ci_low == pytest.approx(2.0 - 1.96 * np.hypot(0.03, 0.01), rel=1e-3)
    noisy = shape_indices(Curve.from_estimates(positions, values, 3 * values), margin=0.05)
    assert noisy.shape == "undetermined"
    flat = Curve.from_estimates(positions, np.ones(9), np.full(9, 0.001))
    assert shape_indices(flat, margin=0.05).shape == "flat"


def test_seeds_are_the_unit_of_a_t_interval() -> None:
    rng = np.random.default_rng(0)
    base = np.array([0.9, 0.5, 0.3])  # primacy: first > middle > last
    seeds = base + 0.01 * rng.standard_normal((4, 3))
    s = shape_indices(Curve.from_seeds([0, 1, 2], seeds), margin=0.05)
    per_seed = seeds[:, 0] - seeds[:, 1]
    assert s.primacy.estimate == pytest.approx(per_seed.mean()) and s.shape == "primacy"
    one = shape_indices(Curve.from_seeds([0, 1, 2], seeds[:1]), margin=0.05)
    assert one.shape == "undetermined" and one.record()["primacy"]["ci_low"] is None


def test_reference_points_and_classify_table() -> None:
    assert reference_points([0, 1]) == (0, 0, 1)  # two positions: middle = first
    s = shape_indices(Curve.from_counts([0, 1], [10, 90], [100, 100]), margin=0.05)
    assert s.primacy.estimate == 0 and s.shape == "recency"
    from lostmid.stats.intervals import Interval

    plus, minus, zero = Interval(1, 0.5, 1.5), Interval(-1, -1.5, -0.5), Interval(0, -0.01, 0.01)
    assert classify(plus, plus, 0.05) == "U" and classify(minus, minus, 0.05) == "inverted U"
    assert classify(zero, zero, 0.05) == "flat" and classify(zero, zero, 0.001) == "undetermined"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Curve.from_counts([0, 1], [1], [2, 2]), "one count and one n per position"),
        (lambda: Curve.from_counts([0, 1], [3, 1], [2, 2]), "0 <= correct <= n"),
        (lambda: Curve.from_counts([1, 0], [1, 1], [2, 2]), "strictly increasing"),
        (lambda: Curve.from_estimates([0], [1.0], [-1.0]), "standard errors >= 0"),
        (lambda: Curve.from_seeds([0, 1], [1.0, 2.0]), "shape (seeds, positions)"),
        (lambda: shape_indices(Curve.from_counts([0], [1], [2]), margin=-1), "margin must be"),
    ],
)
def test_bad_curves_are_one_line(make: object, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        make()  # type: ignore[operator]
