"""Claim verdict rules at their boundaries."""

from __future__ import annotations

import pytest

from lostmid.compare.claims import (
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    Claim,
    format_value,
    mean_and_spread,
    verdict_at_least,
    verdict_at_most,
    verdict_order_of_magnitude,
)
from lostmid.errors import UserError


@pytest.mark.parametrize(
    ("value", "spread", "expected"),
    [
        (0.999, 0.0, REPRODUCED),
        (0.985, 0.0, REPRODUCED),  # exactly paper - tolerance
        (0.9849, 0.0, PARTLY),
        (0.98, 0.0, PARTLY),  # exactly paper - 2 * tolerance
        (0.9799, 0.0, NOT_REPRODUCED),
        (0.99, 0.005, REPRODUCED),  # lower end exactly on the threshold
        (0.99, 0.006, PARTLY),  # lower end below it
        (0.97, 0.01, PARTLY),  # upper end reaches the partial band
        (0.97, 0.0099, NOT_REPRODUCED),
        (float("nan"), 0.0, NOT_REPRODUCED),
    ],
)
def test_at_least(value: float, spread: float, expected: str) -> None:
    assert verdict_at_least(value, 0.99, 0.005, spread=spread).verdict == expected


@pytest.mark.parametrize(
    ("value", "spread", "expected"),
    [
        (0.01, 0.0, REPRODUCED),
        (0.025, 0.0, REPRODUCED),  # exactly paper + tolerance
        (0.0251, 0.0, PARTLY),
        (0.03, 0.0, PARTLY),  # exactly paper + 2 * tolerance
        (0.0301, 0.0, NOT_REPRODUCED),
        (0.02, 0.005, REPRODUCED),
        (0.02, 0.0051, PARTLY),
        (0.04, 0.01, PARTLY),
        (0.04, 0.0099, NOT_REPRODUCED),
        (None, 0.0, NOT_REPRODUCED),
    ],
)
def test_at_most(value: float, spread: float, expected: str) -> None:
    assert verdict_at_most(value, 0.02, 0.005, spread=spread).verdict == expected


@pytest.mark.parametrize(
    ("value", "spread", "expected"),
    [
        (100.0, 0.0, REPRODUCED),
        (10**2.5, 0.0, REPRODUCED),  # exactly half a decade above
        (10**1.5, 0.0, REPRODUCED),  # and below
        (10**2.51, 0.0, PARTLY),
        (1000.0, 0.0, PARTLY),  # exactly one decade
        (10**3.01, 0.0, NOT_REPRODUCED),
        (10**2.3, 0.2, REPRODUCED),
        (10**2.3, 0.21, PARTLY),
        (10**3.2, 0.2, PARTLY),
        (10**3.2, 0.19, NOT_REPRODUCED),
        (0.0, 0.0, NOT_REPRODUCED),
        (None, 0.0, NOT_REPRODUCED),
    ],
)
def test_order_of_magnitude(value: float, spread: float, expected: str) -> None:
    assert verdict_order_of_magnitude(value, 100.0, log10_spread=spread).verdict == expected


def test_rule_text_states_the_numbers() -> None:
    verdict = verdict_at_least(0.95, 0.99, 0.005)
    assert "0.985" in verdict.rule and "0.98" in verdict.rule
    undefined = verdict_at_most(float("nan"), 0.02, 0.005)
    assert "undefined" in undefined.rule
    assert "decades" in verdict_order_of_magnitude(100.0, 100.0).rule


def test_claim_from_verdict_and_validation() -> None:
    c = Claim.judged("W1 0.02", "0.02", "0.031", verdict_at_most(0.031, 0.02, 0.005))
    assert (c.verdict, c.paper, c.ours) == (NOT_REPRODUCED, "0.02", "0.031")
    assert c.rule.startswith("reproduced if ours + spread <= 0.02 + 0.005 = 0.025")
    with pytest.raises(UserError, match="verdict 'maybe' unknown; choose one of reproduced"):
        Claim("c", "1", "1", "maybe", "rule")


def test_bad_rule_parameters() -> None:
    with pytest.raises(UserError, match="spread >= 0"):
        verdict_at_least(0.9, 0.99, 0.005, spread=-0.1)
    with pytest.raises(UserError, match="partial >= tolerance"):
        verdict_at_most(0.9, 0.99, 0.01, partial=0.005)
    with pytest.raises(UserError, match="paper's value must be a positive number"):
        verdict_order_of_magnitude(10.0, 0.0)


def test_mean_and_spread_and_format() -> None:
    assert mean_and_spread([0.98]) == (0.98, 0.0)
    mean, spread = mean_and_spread([1.0, 2.0, 3.0])
    assert mean == 2.0 and spread == pytest.approx(1.0)
    assert format_value(0.98712, 0.0041) == "0.987 +- 0.004"
    assert format_value(0.5) == "0.500"
    with pytest.raises(UserError, match="at least one finite value"):
        mean_and_spread([])
    with pytest.raises(UserError):
        mean_and_spread([1.0, float("nan")])
