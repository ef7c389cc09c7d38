"""The dose-response verdict rule on constructed data whose answer is known."""

from __future__ import annotations

import pytest

from lostmid.behaviour.dose.verdict import MIN_SLOPE, dose_verdict
from lostmid.errors import UserError
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED

# the dose: S grows with depth on every seed (0.2 apart between seeds)
S = {2: [1.0, 1.2, 1.1], 4: [1.8, 2.0, 1.9], 8: [2.6, 2.8, 2.7]}


def _b(slope_per_seed: list[float], noise: list[list[float]] | None = None) -> dict:
    """B = slope_s * S + offset, plus optional per-depth noise: the known answer."""
    out: dict[int, list[float]] = {}
    for k, h in enumerate(sorted(S)):
        out[h] = [
            slope_per_seed[s] * S[h][s] + 0.3 + (noise[k][s] if noise else 0.0) for s in range(3)
        ]
    return out


def test_known_yes_the_slope_is_recovered_and_supported() -> None:
    v = dose_verdict(S, _b([0.9, 1.0, 1.1]))
    assert v.verdict == SUPPORTED
    assert v.seed_slopes == pytest.approx((0.9, 1.0, 1.1))
    assert v.slope is not None and v.slope.estimate == pytest.approx(1.0)
    assert v.dose.ci_low > 0


def test_known_no_a_flat_or_reversed_response_is_not_supported() -> None:
    assert dose_verdict(S, _b([0.0, 0.01, -0.01])).verdict == NOT_SUPPORTED
    v = dose_verdict(S, _b([-1.0, -0.9, -1.1]))
    assert v.verdict == NOT_SUPPORTED and v.slope is not None and v.slope.ci_high < 0


def test_an_interval_spanning_0_and_the_smallest_slope_is_inconclusive() -> None:
    v = dose_verdict(S, _b([-0.5, 0.2, 0.9]))
    assert v.verdict == INCONCLUSIVE
    assert v.slope is not None and v.slope.ci_low < 0 < MIN_SLOPE < v.slope.ci_high


def test_a_small_positive_slope_resolved_above_0_is_supported() -> None:
    # the rule checks "above 0" before "below MIN_SLOPE": growth resolved is growth
    assert dose_verdict(S, _b([0.05, 0.05, 0.05])).verdict == SUPPORTED


def test_no_dose_is_inconclusive_whatever_the_response() -> None:
    flat = {2: [2.0, 2.1, 1.9], 8: [1.9, 2.2, 2.0]}  # S does not grow with depth
    b = {2: [0.0, 0.0, 0.0], 8: [1.0, 1.0, 1.0]}
    v = dose_verdict(flat, b)
    assert v.verdict == INCONCLUSIVE and "no dose" in v.reason


def test_too_few_seeds_that_learnt_is_inconclusive() -> None:
    b = _b([1.0, 1.0, 1.0])
    b[8] = [b[8][0], None, None]
    v = dose_verdict(S, b)
    assert v.verdict == INCONCLUSIVE and v.slope is None and "1 seed" in v.reason


@pytest.mark.parametrize(
    ("structural", "behavioural", "message"),
    [
        ({2: [1.0]}, {2: [1.0]}, "at least 2 depths"),
        ({2: [1.0, 2.0], 8: [1.0]}, {2: [1.0, 2.0], 8: [1.0]}, "one value per seed"),
        ({2: [1.0], 8: [2.0]}, {2: [1.0], 4: [2.0]}, "same depths and seeds"),
        ({2: [None], 8: [2.0]}, {2: [1.0], 8: [2.0]}, "defined for every run"),
    ],
)
def test_bad_tables_are_one_line(structural, behavioural, message: str) -> None:
    with pytest.raises(UserError, match=message):
        dose_verdict(structural, behavioural)
