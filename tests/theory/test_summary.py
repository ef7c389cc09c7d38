"""Profile summary definitions on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.errors import UserError
from lostmid.theory import influence_row, summarise_profile


def test_hand_computed_profile() -> None:
    s = summarise_profile(np.array([0.4, 0.2, 0.01, 0.04, 0.05, 0.3]))
    assert (s.primacy, s.recency) == (0.4, 0.3)
    assert s.valley == pytest.approx(0.01) and s.valley_position == 3
    assert s.peak_position == 1
    assert s.peak_to_valley == pytest.approx(40.0)
    assert s.log10_peak_to_valley == pytest.approx(np.log10(40))
    # middle half of positions 1..6: (j-1)/5 in [1/4, 3/4] -> j = 3, 4 (5 excluded: 0.8)
    assert s.dead_zone_level == pytest.approx(np.sqrt(0.01 * 0.04))


def test_causal_rollout_valley_sits_just_before_target() -> None:
    """PAPER_NOTES caveat: the minimum is at t-1, not in the middle."""
    s = summarise_profile(influence_row(512, 12, 0.3))
    assert s.valley_position == 511
    assert s.peak_position in (1, 512)


def test_support_excludes_unreachable_positions() -> None:
    row = influence_row(50, 3, 0.5, mask="sliding:4", target=40)
    s = summarise_profile(row, target=40)
    assert s.support == (31, 40)
    assert s.valley is not None and s.valley > 0


def test_log_input_equals_linear_input() -> None:
    row = influence_row(100, 5, 0.4)
    a, b = summarise_profile(row), summarise_profile(log10_influence=np.log10(row))
    assert a.log10_peak_to_valley == pytest.approx(b.log10_peak_to_valley)


def test_bad_profiles() -> None:
    with pytest.raises(UserError, match="non-negative"):
        summarise_profile(np.array([0.5, -0.1]))
    with pytest.raises(UserError, match="exactly one"):
        summarise_profile()
    with pytest.raises(UserError, match=r"target must be a position in 1..2 \(1-indexed\), got 3"):
        summarise_profile(np.array([0.5, 0.5]), target=3)
