"""Metric definitions against hand-computed cases, invariants and bad input."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from lostmid.compare.metrics import (
    ProfileComparison,
    anchor_error,
    compare_profiles,
    log10_rmse,
    log_bin,
    log_bin_index,
    log_correlation,
    peak_to_valley,
    wasserstein1,
)
from lostmid.errors import UserError
from lostmid.stats import spearman
from lostmid.theory import influence_row

RNG = np.random.default_rng(1234)


def point_mass(n: int, j: int) -> np.ndarray:
    """All mass at 1-indexed position j."""
    v = np.zeros(n)
    v[j - 1] = 1.0
    return v


# -- Wasserstein-1 ------------------------------------------------------------------------


@pytest.mark.parametrize(("i", "j"), [(1, 11), (1, 2), (3, 8), (11, 4)])
def test_w1_of_point_masses_is_their_distance(i: int, j: int) -> None:
    n = 11
    assert wasserstein1(point_mass(n, i), point_mass(n, j)) == pytest.approx(abs(i - j) / 10)


def test_w1_matches_scipy_and_is_scale_invariant_and_symmetric() -> None:
    n = 50
    a, b = RNG.random(n), RNG.random(n)
    x = np.arange(n) / (n - 1)
    expected = stats.wasserstein_distance(x, x, a, b)
    assert wasserstein1(a, b) == pytest.approx(expected, abs=1e-12)
    assert wasserstein1(3.0 * a, 0.01 * b) == pytest.approx(expected, abs=1e-12)
    assert wasserstein1(b, a) == pytest.approx(expected, abs=1e-12)
    assert wasserstein1(a, 5.0 * a) == pytest.approx(0.0, abs=1e-15)


def test_w1_half_mass_moved() -> None:
    # Half the mass moves from position 1 to position 3 of 3 (distance 1): W1 = 0.5.
    assert wasserstein1([1.0, 0.0, 1.0], [0.0, 0.0, 2.0]) == pytest.approx(0.5)


# -- log correlation ----------------------------------------------------------------------


def test_log_correlation_power_relation_and_reversal() -> None:
    a = np.array([1.0, 10.0, 100.0, 1000.0])
    assert log_correlation(a, 3.0 * a**2) == pytest.approx(1.0)
    assert log_correlation(a, 1.0 / a) == pytest.approx(-1.0)
    # A profile right at the top but off by decades elsewhere: log correlation sees it.
    b = np.array([1e-3, 1e-3, 1e-3, 1000.0])
    assert np.corrcoef(a, b)[0, 1] > 0.94
    assert log_correlation(a, b) < 0.8


def test_log_correlation_skips_zeros_and_needs_two_positions() -> None:
    a = np.array([1.0, 0.0, 10.0, 100.0])
    b = np.array([2.0, 5.0, 20.0, 200.0])
    assert log_correlation(a, b) == pytest.approx(1.0)
    assert math.isnan(log_correlation([1.0, 0.0, 0.0], [0.0, 1.0, 1.0]))


# -- peak to valley and anchors -----------------------------------------------------------


def test_peak_to_valley_side_by_side() -> None:
    # Target is the last position; the valley excludes it.
    ptv = peak_to_valley([100.0, 1.0, 50.0], [10.0, 2.0, 20.0])
    assert ptv.first == pytest.approx(100.0)
    assert ptv.second == pytest.approx(10.0)  # peak 20 (the target) over valley 2
    assert ptv.log10_first == pytest.approx(2.0)
    assert ptv.log10_difference == pytest.approx(1.0)


def test_peak_to_valley_of_theory_rows_against_the_rollout_definition() -> None:
    # Causal rollout: every term of rho_H decreases in x, so the valley sits at t - 1
    # (PAPER_NOTES); the peak is the target for a shallow net, position 1 for a deep one.
    shallow, deep = influence_row(64, 2, 0.3), influence_row(64, 8, 0.3)
    assert np.argmax(shallow) == 63 and np.argmax(deep) == 0
    ptv = peak_to_valley(shallow, deep)
    assert ptv.first == pytest.approx(shallow[-1] / shallow[-2])
    assert ptv.second == pytest.approx(deep[0] / deep[-2])
    expected = np.log10(shallow[-1] / shallow[-2]) - np.log10(deep[0] / deep[-2])
    assert ptv.log10_difference == pytest.approx(expected)


def test_anchor_error_hand_case_and_scale_invariance() -> None:
    e = anchor_error([2.0, 1.0, 1.0], [1.0, 1.0, 2.0])
    assert (e.primacy, e.recency) == (pytest.approx(1.0), pytest.approx(-0.5))
    e2 = anchor_error([20.0, 10.0, 10.0], [0.1, 0.1, 0.2])
    assert (e2.primacy, e2.recency) == (pytest.approx(1.0), pytest.approx(-0.5))
    # A target inside the sequence.
    e3 = anchor_error([1.0, 3.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], target=2)
    assert e3.recency_position == 2
    assert e3.recency == pytest.approx(1.0)  # 3/6 against 1/4: twice the weight


def test_anchor_error_nan_where_measured_is_zero() -> None:
    e = anchor_error([1.0, 1.0, 1.0], [0.0, 1.0, 1.0])
    assert math.isnan(e.primacy) and e.recency == pytest.approx(-1 / 3)


# -- log binning --------------------------------------------------------------------------


def test_log_bins_are_powers_of_the_target() -> None:
    # t = 2^10 and 10 bins: bin k holds 2^k <= j < 2^(k+1), the target its own bin.
    index = log_bin_index(1024, bins=10)
    for k in range(10):
        lo, hi = 2**k, 2 ** (k + 1)
        assert np.all(index[lo - 1 : hi - 1] == k), k
    assert index[-1] == 10
    # Three bins of 1024 = (2^(10/3))^3: edges at 10.08 and 101.6.
    assert log_bin_index(1024, bins=3)[[0, 9, 10, 100, 101, 1022, 1023]].tolist() == [
        0,
        0,
        1,
        1,
        2,
        2,
        3,
    ]


def test_log_bin_conserves_mass_and_drops_empty_bins() -> None:
    profile = RNG.random(300) + 0.01
    for bins in (1, 7, 32, 200):
        binned = log_bin(profile, bins=bins)
        assert binned.sum() == pytest.approx(profile.sum(), rel=1e-12)
        assert binned.size <= bins + 1 and np.all(binned > 0)  # no empty bin survives
        assert binned[-1] == profile[-1]  # the target alone
    # 200 bins of ln 300: narrower than one position at the start, so most are empty.
    assert log_bin(profile, bins=200).size < 200


def test_log_bin_with_an_inner_target() -> None:
    profile = np.arange(1.0, 11.0)  # target 6: positions 7..10 make one last bin
    index = log_bin_index(10, bins=4, target=6)
    assert index[5] == index[4] + 1 and np.all(index[6:] == index[5] + 1)
    binned = log_bin(profile, bins=4, target=6)
    assert binned[-2:].tolist() == [6.0, 7.0 + 8.0 + 9.0 + 10.0]
    assert binned.sum() == profile.sum()


def test_binned_metrics_see_the_shape_not_the_noise_in_the_middle() -> None:
    # A U-shaped profile with a long flat middle; two noisy copies of it.
    j = np.arange(1, 1025.0)
    u = 1.0 + 50.0 * j**-2.0
    u[-1] = 200.0
    a = u * (1 + 0.05 * RNG.standard_normal(u.size))
    b = u * (1 + 0.05 * RNG.standard_normal(u.size))
    c = compare_profiles(a, b)
    assert c.spearman < 0.9  # the flat middle is ranked by noise
    assert c.binned_spearman > 0.99  # in log bins the shape decides
    assert c.binned_spearman == spearman(log_bin(a), log_bin(b))
    assert c.binned_wasserstein1 == wasserstein1(log_bin(a), log_bin(b))


# -- bundle -------------------------------------------------------------------------------


def test_compare_profiles_perfect_shape() -> None:
    row = influence_row(100, 6, 0.4, kernel="jacobian")
    c = compare_profiles(row, 42.0 * row)
    assert isinstance(c, ProfileComparison)
    assert c.spearman == pytest.approx(1.0)
    assert c.wasserstein1 == pytest.approx(0.0, abs=1e-15)
    assert c.log_correlation == pytest.approx(1.0)
    assert c.log10_peak_to_valley == pytest.approx(c.log10_peak_to_valley_measured)
    assert c.recency_error == pytest.approx(0.0, abs=1e-12)
    assert c.primacy_error == pytest.approx(0.0, abs=1e-12)
    assert c.log10_rmse == pytest.approx(0.0, abs=1e-12)


def test_compare_profiles_ranks_a_wrong_shape_worse() -> None:
    true = influence_row(100, 6, 0.4)
    good = compare_profiles(influence_row(100, 6, 0.42), true)
    bad = compare_profiles(influence_row(100, 6, 0.9), true)
    assert good.wasserstein1 < bad.wasserstein1
    assert good.log10_rmse < bad.log10_rmse


def test_log10_rmse_removes_the_shared_scale() -> None:
    # log10 ratios 0 and 2: about their mean 1 the RMS is 1 decade, whatever the scale.
    assert log10_rmse([1.0, 100.0], [1.0, 1.0]) == pytest.approx(1.0)
    assert log10_rmse([7.0, 700.0], [0.1, 0.1]) == pytest.approx(1.0)
    # A zero on either side leaves that position out: here only a constant ratio is left.
    assert log10_rmse([0.0, 1.0, 10.0], [5.0, 2.0, 20.0]) == pytest.approx(0.0, abs=1e-15)


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ([1.0, 2.0, 3.0], [1.0, 2.0], "different lengths (3 and 2)"),
        ([1.0, -2.0, 3.0], [1.0, 2.0, 3.0], "negative value at position 2"),
        ([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], "all zeros"),
        ([1.0, np.nan, 3.0], [1.0, 2.0, 3.0], "non-finite"),
        ([1.0], [1.0], "at least 2 positions"),
        ([[1.0, 2.0]], [[1.0, 2.0]], "1-D array"),
    ],
)
@pytest.mark.parametrize(
    "metric",
    [wasserstein1, log_correlation, peak_to_valley, anchor_error, compare_profiles],
)
def test_bad_input_is_a_user_error(
    a: list, b: list, message: str, metric: Callable[..., object]
) -> None:
    with pytest.raises(UserError, match=f"^.*{re.escape(message)}"):
        metric(a, b)


def test_target_out_of_range() -> None:
    with pytest.raises(
        UserError, match=r"target must be a position in 1\.\.3 \(1-indexed\), got 4"
    ):
        compare_profiles([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], target=4)
