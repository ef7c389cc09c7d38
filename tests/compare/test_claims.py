"""Claim verdict rules on 95% intervals: every verdict reached by constructed intervals
where the answer is known (yes, near, no, spanning, below the floor), each boundary
approached from both sides, and the invariants the rules promise."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from lostmid.compare.claims import (
    Claim,
    floor_relation,
    format_interval,
    verdict_at_least,
    verdict_at_most,
    verdict_no_worse,
    verdict_order_of_magnitude,
    verdict_within_floor,
)
from lostmid.errors import UserError
from lostmid.stats import seed_interval as stats_seed_interval
from lostmid.stats.intervals import MeanSpread
from lostmid.stats.verdicts import (
    BELOW_RESOLUTION,
    CLAIM_VERDICTS,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
)

EPS = 1e-6  # well above the rules' 1e-9 slack, well below any margin used here
# (paper value, tolerance, partial margin or None for the default 2 * tolerance)
RULES = [(0.99, 0.005, None), (0.02, 0.01, 0.03), (0.5, 0.0, 0.1)]


def partial_of(tolerance: float, partial: float | None) -> float:
    return 2 * tolerance if partial is None else partial


@pytest.mark.parametrize(("paper", "tol", "partial"), RULES)
@pytest.mark.parametrize("width", [0.0, 0.004])
def test_at_least_every_verdict_and_its_boundaries(
    paper: float, tol: float, partial: float | None, width: float
) -> None:
    threshold, margin = paper - tol, paper - partial_of(tol, partial)

    def verdict(low: float) -> str:
        return verdict_at_least((low, low + width), paper, tol, partial=partial).verdict

    assert verdict(threshold) == verdict(threshold + EPS) == REPRODUCED  # wholly passes
    assert verdict(threshold - EPS) == (PARTLY if width == 0 else INCONCLUSIVE)
    if threshold - margin > width + 2 * EPS:  # an interval fits in the near zone
        assert verdict(margin) == PARTLY
    assert verdict(margin - EPS - width) == NOT_REPRODUCED  # wholly fails
    if width:
        assert verdict(margin - width / 2) == INCONCLUSIVE  # spans near and fails


@pytest.mark.parametrize(("paper", "tol", "partial"), RULES)
@pytest.mark.parametrize("width", [0.0, 0.004])
def test_at_most_every_verdict_and_its_boundaries(
    paper: float, tol: float, partial: float | None, width: float
) -> None:
    threshold, margin = paper + tol, paper + partial_of(tol, partial)

    def verdict(high: float) -> str:
        return verdict_at_most((high - width, high), paper, tol, partial=partial).verdict

    assert verdict(threshold) == verdict(threshold - EPS) == REPRODUCED
    assert verdict(threshold + EPS) == (PARTLY if width == 0 else INCONCLUSIVE)
    if margin - threshold > width + 2 * EPS:
        assert verdict(margin) == PARTLY
    assert verdict(margin + width + EPS) == NOT_REPRODUCED
    if width:
        assert verdict(margin + width / 2) == INCONCLUSIVE


def test_below_resolution_needs_the_whole_floor_beyond_and_ours_reaching_it() -> None:
    """The issue's case: paper Spearman 0.99, seeds agree only at about 0.93."""
    paper, tol = 0.99, 0.01
    floor = (0.92, 0.94)  # wholly below 0.98: the paper's number cannot be resolved
    reach = floor[0] - tol  # ours' high must reach the floor's low - tol

    def verdict(high: float, floor: tuple[float, float] | None = floor) -> str:
        return verdict_at_least((high - 0.01, high), paper, tol, floor=floor).verdict

    assert verdict(reach) == verdict(reach + EPS) == BELOW_RESOLUTION
    assert verdict(reach - EPS) == NOT_REPRODUCED
    # a floor whose interval reaches the threshold supports the paper's number: plain rule
    assert verdict(0.93, floor=(0.97, 0.99)) == verdict(0.93, floor=None) == NOT_REPRODUCED
    assert verdict(0.99 + 0.01) == REPRODUCED  # passing outright, whatever the floor
    # the same for at most: W1 floor wholly above paper + tol
    w1 = verdict_at_most((0.04, 0.05), 0.02, 0.005, floor=(0.045, 0.05)).verdict
    assert w1 == BELOW_RESOLUTION
    far = verdict_at_most((0.07, 0.08), 0.02, 0.005, floor=(0.045, 0.05)).verdict
    assert far == NOT_REPRODUCED  # does not reach the floor: low > floor high + tol


def test_invariants_over_a_sweep() -> None:
    """A better interval never gets a worse resolved verdict; a floor only ever turns a
    verdict into below resolution, and never one that passes outright."""
    order = {REPRODUCED: 0, PARTLY: 1, NOT_REPRODUCED: 2}
    lows = np.linspace(0.90, 1.0, 201)
    for width, floor in itertools.product((0.0, 0.003), (None, (0.94, 0.96), (0.985, 0.999))):
        judged = [verdict_at_least((v, v + width), 0.99, 0.005, floor=floor).verdict for v in lows]
        plain = [verdict_at_least((v, v + width), 0.99, 0.005).verdict for v in lows]
        for v, p in zip(judged, plain, strict=True):
            assert v == p or (v == BELOW_RESOLUTION and p != REPRODUCED)
        resolved = [order[p] for p in plain if p in order]
        assert resolved == sorted(resolved, reverse=True)  # interval up: never worse
        assert set(judged) <= set(CLAIM_VERDICTS)


def test_no_worse_comes_out_each_way() -> None:
    assert verdict_no_worse((-0.003, -0.001)).verdict == REPRODUCED
    assert verdict_no_worse((0.001, 0.004)).verdict == NOT_REPRODUCED
    assert verdict_no_worse((-0.001, 0.002)).verdict == INCONCLUSIVE
    assert verdict_no_worse((0.0, 0.0)).verdict == REPRODUCED  # equal: no worse
    assert verdict_no_worse((float("nan"), 0.1)).verdict == NOT_REPRODUCED


def test_within_floor_comes_out_each_way() -> None:
    """Constructed changes against a floor [0.001, 0.004]: wholly at or below its upper
    end (yes), wholly above it (no: GPT-2's encoding at the saved run's numbers), across
    it (undecided); the boundary approached from both sides."""
    floor = (0.001, 0.004)
    assert verdict_within_floor((0.0, 0.0035), floor).verdict == REPRODUCED
    assert verdict_within_floor((0.0, 0.004), floor).verdict == REPRODUCED  # on the edge
    assert verdict_within_floor((0.00732, 0.026), floor).verdict == NOT_REPRODUCED
    assert verdict_within_floor((0.0041, 0.01), floor).verdict == NOT_REPRODUCED
    assert verdict_within_floor((0.0039, 0.01), floor).verdict == INCONCLUSIVE
    assert verdict_within_floor((0.002, 0.0041), floor).verdict == INCONCLUSIVE
    unbounded = (-float("inf"), float("inf"))  # one seed
    assert verdict_within_floor(unbounded, floor).verdict == INCONCLUSIVE
    assert verdict_within_floor((0.0, 0.001), None).verdict == INCONCLUSIVE  # no floor
    assert verdict_within_floor((float("nan"), 0.1), floor).verdict == NOT_REPRODUCED
    rule = verdict_within_floor((0.00732, 0.026), (0.000927, 0.00394), "W1 on vs off").rule
    assert "W1 on vs off lies wholly <= the noise floor's upper end 0.00394" in rule
    assert rule.endswith("it is [0.00732, 0.026]")
    with pytest.raises(UserError, match="noise floor must be an interval"):
        verdict_within_floor((0.0, 0.1), (0.2, 0.1))
    with pytest.raises(UserError, match="low <= high"):
        verdict_within_floor((0.2, 0.1), floor)


@pytest.mark.parametrize(("paper", "tol", "partial"), [(100.0, 0.5, 1.0), (1e3, 0.2, 0.7)])
@pytest.mark.parametrize("width", [0.0, 0.1])
def test_order_of_magnitude_every_verdict(
    paper: float, tol: float, partial: float, width: float
) -> None:
    target = np.log10(paper)

    def verdict(low: float) -> str:
        return verdict_order_of_magnitude(
            (target + low, target + low + width), paper, tol, partial
        ).verdict

    for sign in (1, -1):  # above and below the paper's number alike
        lo = (lambda d: d) if sign > 0 else (lambda d: -d - width)  # noqa: E731
        assert verdict(lo(tol - width)) == REPRODUCED
        assert verdict(lo(tol - width + EPS)) == (PARTLY if width == 0 else INCONCLUSIVE)
        assert verdict(lo(partial + EPS)) == NOT_REPRODUCED
    assert verdict(-width / 2) == REPRODUCED  # the interval holds the paper's number


def test_undefined_values_are_not_reproduced() -> None:
    for judge in (verdict_at_least, verdict_at_most):
        for value in (None, float("nan")):
            v = judge((value, value), 0.5, 0.1, floor=(9.0, 10.0))  # type: ignore[arg-type]
            assert v.verdict == NOT_REPRODUCED and "undefined" in v.rule
    assert verdict_order_of_magnitude((float("nan"),) * 2, 100.0).verdict == NOT_REPRODUCED


def test_rule_text_states_the_numbers_at_three_digits() -> None:
    rule = verdict_at_least((0.95, 0.96), 0.99, 0.005).rule
    assert "wholly >= 0.985 (0.99 - 0.005)" in rule and "[0.98, 0.985)" in rule
    assert "ours [0.95, 0.96]" in rule and "below resolution" not in rule
    rule = verdict_at_least((0.91, 0.93), 0.99, 0.01, floor=(0.92, 0.94)).rule
    assert "noise floor [0.92, 0.94] lies wholly < 0.98" in rule and "= 0.91" in rule
    assert "decades" in verdict_order_of_magnitude((2.0, 2.0), 100.0).rule


def test_mean_spread_interval_is_scipys_t_interval() -> None:
    values = [0.010, 0.004, 0.007, 0.0055]
    ms = MeanSpread.of(values)
    ref = stats.ttest_1samp(values, 0.0).confidence_interval(0.95)
    assert ms.interval() == pytest.approx((ref.low, ref.high))
    # one value says nothing of the spread: unbounded, as stats.seed_interval says
    assert MeanSpread.of([0.5]).interval() == (-np.inf, np.inf)
    assert MeanSpread.of([0.5]).interval() == (
        stats_seed_interval([0.5]).ci_low,
        stats_seed_interval([0.5]).ci_high,
    )
    assert all(np.isnan(MeanSpread.of([]).interval()))
    # a verdict on it: undecided, where the point interval decided from one value
    assert verdict_at_most(MeanSpread.of([0.01]).interval(), 0.02, 0.005).verdict == (
        "inconclusive"
    )
    assert verdict_at_most((0.01, 0.012), 0.02, 0.005, floor=(0.0, np.inf)).verdict == (
        "reproduced"
    )  # an unbounded floor (one pair) never makes a verdict "below resolution"
    # one pair's W1 floor, unbounded and clipped at 0, cannot say the design is below
    # resolution (as the point floor (0.045, 0.045) of that pair did)
    one_pair = MeanSpread.of([0.045], (0.0, np.inf)).interval()
    assert one_pair == (0.0, np.inf)
    assert verdict_at_most((0.04, 0.05), 0.02, 0.005, floor=one_pair).verdict == "not reproduced"
    assert verdict_at_most((0.04, 0.05), 0.02, 0.005, floor=(0.045, 0.045)).verdict == (
        "below resolution"
    )


def test_floor_relation_and_format() -> None:
    above = floor_relation(MeanSpread(0.0039, 0.0003, 3), MeanSpread(0.0024, 0.0006, 3))
    assert above == "above the noise floor"  # the GPT-2 case: not "at"
    assert floor_relation(MeanSpread(0.01, 0.001, 3), MeanSpread(0.02, 0.001, 3)) == (
        "below the noise floor"
    )
    at = floor_relation(MeanSpread(0.01, 0.0, 1), MeanSpread(0.02, 0.001, 3))
    assert at == "at the noise floor"  # one value: its spread is unknown
    assert format_interval(MeanSpread(0.98712, 0.0041, 3)) == "0.987 [0.977, 0.997] (n=3)"
    assert format_interval(MeanSpread(float("nan"), float("nan"), 0)) == "n/a"


def test_claim_from_verdict_and_validation() -> None:
    c = Claim.judged("W1 0.02", "0.02", "0.031", verdict_at_most((0.031, 0.031), 0.02, 0.005))
    assert (c.verdict, c.paper, c.ours) == (NOT_REPRODUCED, "0.02", "0.031")
    assert c.record() == {
        "claim": "W1 0.02",
        "paper": "0.02",
        "ours": "0.031",
        "verdict": NOT_REPRODUCED,
        "rule": c.rule,
    }
    assert Claim("c", "1", "1", INCONCLUSIVE, "rule").verdict == "inconclusive"
    with pytest.raises(UserError, match="verdict 'maybe' unknown; choose one of reproduced"):
        Claim("c", "1", "1", "maybe", "rule")


def test_bad_rule_parameters() -> None:
    with pytest.raises(UserError, match="low <= high"):
        verdict_at_least((0.95, 0.9), 0.99, 0.005)
    with pytest.raises(UserError, match="partial >= tolerance"):
        verdict_at_most((0.9, 0.9), 0.99, 0.01, partial=0.005)
    with pytest.raises(UserError, match="noise floor must be an interval"):
        verdict_at_least((0.9, 0.9), 0.99, 0.01, floor=(float("nan"), 0.9))
    with pytest.raises(UserError, match="paper's value must be a positive number"):
        verdict_order_of_magnitude((1.0, 1.0), 0.0)
