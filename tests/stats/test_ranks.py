"""Spearman's rank correlation against hand-computed cases, scipy and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lostmid.stats import finite_or_none, spearman

RNG = np.random.default_rng(1234)


def test_spearman_known_orders() -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert spearman(a, a) == 1.0
    assert spearman(a, a[::-1]) == -1.0
    # Only ranks matter: any increasing transform scores 1.
    assert spearman(a, np.exp(a) + 7.0) == 1.0
    # One swapped pair among 4: 1 - 6 * sum d^2 / (n (n^2 - 1)) = 1 - 6*2/60 = 0.8.
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)


def test_spearman_ties_use_average_ranks() -> None:
    # Ranks of a with ties: [1.5, 1.5, 3, 4]; hand-computed Pearson with [1, 2, 3, 4].
    a, b = [1.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]
    ra, rb = np.array([1.5, 1.5, 3, 4]), np.array([1, 2, 3, 4.0])
    expected = np.corrcoef(ra, rb)[0, 1]
    assert spearman(a, b) == pytest.approx(expected, abs=1e-12)
    # And against scipy on random data with many ties.
    x = RNG.integers(0, 5, size=200).astype(float)
    y = x + RNG.integers(0, 3, size=200)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)


def test_spearman_constant_profile_is_nan() -> None:
    assert math.isnan(spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))


def test_spearman_undefined_cases_are_nan_and_none_in_records() -> None:
    assert math.isnan(spearman([1.0], [2.0]))
    assert finite_or_none(spearman([1.0, 1.0], [1.0, 2.0])) is None
    with pytest.raises(ValueError, match="one length"):
        spearman([1.0, 2.0], [1.0, 2.0, 3.0])
