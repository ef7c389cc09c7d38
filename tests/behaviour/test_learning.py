"""Half-accuracy times, the order of learning and the midpoint on hand-made curves."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from lostmid.behaviour.training.learning import (
    half_time,
    half_times,
    learning_order,
    midpoint_index,
    structural_primacy,
    structural_span,
    time_slope,
)
from lostmid.errors import UserError

TOKENS = np.array([0.0, 1000.0, 2000.0, 3000.0, 4000.0])


def test_half_time_interpolates_the_first_crossing_by_hand() -> None:
    # final 0.8 -> half 0.4, first reached at 2000 (0.5) from 0.2 at 1000: 1000 + 0.2/0.3 * 1000
    curve = [0.0, 0.2, 0.5, 0.9, 0.8]
    assert half_time(TOKENS, curve) == pytest.approx(1000 + 1000 * 0.2 / 0.3)


def test_half_time_takes_the_first_crossing_not_a_later_one() -> None:
    # crosses 0.5 at 1000 exactly, dips below, crosses again: the first one counts
    assert half_time(TOKENS, [0.0, 0.5, 0.1, 0.9, 1.0]) == pytest.approx(1000.0)


def test_half_time_at_the_first_checkpoint_and_undefined() -> None:
    assert half_time(TOKENS, [0.5, 0.6, 0.7, 0.8, 0.9]) == 0.0
    assert half_time(TOKENS, [0.3, 0.2, 0.1, 0.0, 0.0]) is None


def test_half_times_per_record_and_the_order_of_learning() -> None:
    # record r reaches 1.0 at checkpoint r + 1, steps: half-times 500, 1500, 2500
    acc = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1], [1, 1, 1]], dtype=float)  # (K, P)
    times = half_times(TOKENS, acc)
    assert times.tolist() == pytest.approx([500.0, 1500.0, 2500.0])
    # ln T on x = 0, 0.5, 1: exact least squares by hand
    x, y = np.array([0.0, 0.5, 1.0]), np.log(times)
    by_hand = ((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()
    assert learning_order(times) == pytest.approx(by_hand)
    assert learning_order(times) > 0  # first learnt first: primacy
    assert learning_order(times[::-1]) == pytest.approx(-by_hand)  # recency
    assert learning_order([700.0, 700.0, 700.0]) == pytest.approx(0.0)
    assert time_slope(times) == pytest.approx(1000.0)


def test_order_undefined_without_half_times_or_at_step_zero() -> None:
    assert learning_order([math.nan, 10.0]) is None
    assert learning_order([0.0, 10.0]) is None
    assert time_slope([math.nan, 10.0]) is None


def test_midpoint_is_the_first_checkpoint_past_half_the_final_mean() -> None:
    assert midpoint_index([0.0, 0.1, 0.39, 0.4, 0.8]) == 3
    assert midpoint_index([0.0, 0.0, 0.0]) is None


def test_structural_primacy_and_span() -> None:
    assert structural_primacy([3.0, 1.0, 1.5]) == pytest.approx(math.log(2.0))
    assert structural_span([3.0, 1.0, 1.5]) == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: half_time([0.0], [0.0]), "at least 2 checkpoints"),
        (lambda: half_time([0.0, 0.0], [0.0, 1.0]), "increase strictly"),
        (lambda: half_time([0.0, 1.0], [0.0, 1.5]), "in [0, 1]"),
        (lambda: half_times([0.0, 1.0], [0.0, 1.0]), "(checkpoints, records) table"),
        (lambda: learning_order([1.0]), "at least 2 records"),
        (lambda: structural_primacy([1.0, 0.0]), "at least 2 positive numbers"),
        (lambda: midpoint_index([]), "at least one checkpoint"),
    ],
)
def test_bad_curves_are_one_line(call, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        call()
