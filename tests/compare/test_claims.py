"""Claim verdict rules: each boundary approached from both sides, with the boundary
computed from the rule's inputs (paper value, tolerance, partial margin, spreads,
noise floor), and the invariants the rules promise."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lostmid.compare.claims import (
    BELOW_RESOLUTION,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    VERDICTS,
    Claim,
    format_value,
    mean_and_spread,
    verdict_at_least,
    verdict_at_most,
    verdict_order_of_magnitude,
)
from lostmid.errors import UserError

EPS = 1e-6  # well above the rules' 1e-9 slack, well below any margin used here
# (paper value, tolerance, partial margin or None for the default 2 * tolerance)
RULES = [(0.99, 0.005, None), (0.02, 0.01, 0.03), (0.5, 0.0, 0.1)]
ORDER = {REPRODUCED: 0, PARTLY: 1, NOT_REPRODUCED: 2}


def partial_of(tolerance: float, partial: float | None) -> float:
    return 2 * tolerance if partial is None else partial


@pytest.mark.parametrize(("paper", "tol", "partial"), RULES)
@pytest.mark.parametrize("spread", [0.0, 0.004])
def test_at_least_boundaries(paper: float, tol: float, partial: float | None, spread: float):
    def verdict(value: float) -> str:
        return verdict_at_least(value, paper, tol, spread=spread, partial=partial).verdict

    reproduced_edge = paper - tol + spread  # ours - spread = paper - tol
    partly_edge = paper - partial_of(tol, partial) - spread  # ours + spread = paper - partial
    assert verdict(reproduced_edge) == verdict(reproduced_edge + EPS) == REPRODUCED
    assert verdict(reproduced_edge - EPS) == PARTLY
    assert verdict(partly_edge) == PARTLY
    assert verdict(partly_edge - EPS) == NOT_REPRODUCED


@pytest.mark.parametrize(("paper", "tol", "partial"), RULES)
@pytest.mark.parametrize("spread", [0.0, 0.004])
def test_at_most_boundaries(paper: float, tol: float, partial: float | None, spread: float):
    def verdict(value: float) -> str:
        return verdict_at_most(value, paper, tol, spread=spread, partial=partial).verdict

    reproduced_edge = paper + tol - spread
    partly_edge = paper + partial_of(tol, partial) + spread
    assert verdict(reproduced_edge) == verdict(reproduced_edge - EPS) == REPRODUCED
    assert verdict(reproduced_edge + EPS) == PARTLY
    assert verdict(partly_edge) == PARTLY
    assert verdict(partly_edge + EPS) == NOT_REPRODUCED


@pytest.mark.parametrize("floor_spread", [0.0, 0.01])
def test_below_resolution_boundaries_for_at_least(floor_spread: float) -> None:
    """The issue's case: paper Spearman 0.99, seeds agree only at about 0.93."""
    paper, tol, spread = 0.99, 0.01, 0.005

    def verdict(value: float, floor: float) -> str:
        return verdict_at_least(
            value, paper, tol, spread=spread, resolution=floor, resolution_spread=floor_spread
        ).verdict

    # The floor cannot reach the threshold exactly when floor + its spread < paper - tol.
    floor_edge = paper - tol - floor_spread
    floor = 0.93
    reach = floor - floor_spread - tol - spread  # ours + spread >= floor - r_s - tol
    assert verdict(reach, floor) == verdict(reach + EPS, floor) == BELOW_RESOLUTION
    assert verdict(reach - EPS, floor) == NOT_REPRODUCED
    # A floor that supports the paper's number gives the plain verdict; just below
    # the edge, a value that reaches the floor is below resolution.
    value = floor_edge - floor_spread - tol - spread + 2 * EPS
    plain = verdict_at_least(value, paper, tol, spread=spread).verdict
    assert verdict(value, floor_edge) == plain != BELOW_RESOLUTION
    assert verdict(value, floor_edge - EPS) == BELOW_RESOLUTION
    # Passing the claim outright is reproduced, whatever the floor.
    assert verdict(paper - tol + spread, floor) == REPRODUCED


@pytest.mark.parametrize("floor_spread", [0.0, 0.002])
def test_below_resolution_boundaries_for_at_most(floor_spread: float) -> None:
    paper, tol, spread = 0.02, 0.005, 0.001

    def verdict(value: float, floor: float) -> str:
        return verdict_at_most(
            value, paper, tol, spread=spread, resolution=floor, resolution_spread=floor_spread
        ).verdict

    floor_edge = paper + tol + floor_spread  # floor - r_s > paper + tol beyond this
    floor = 0.05
    reach = floor + floor_spread + tol + spread
    assert verdict(reach, floor) == verdict(reach - EPS, floor) == BELOW_RESOLUTION
    assert verdict(reach + EPS, floor) == NOT_REPRODUCED
    value = floor_edge + floor_spread + tol + spread - 2 * EPS
    plain = verdict_at_most(value, paper, tol, spread=spread).verdict
    assert verdict(value, floor_edge) == plain != BELOW_RESOLUTION
    assert verdict(value, floor_edge + EPS) == BELOW_RESOLUTION


def test_invariants_over_a_sweep() -> None:
    """Better numbers never get worse verdicts; a noise floor never changes a verdict
    when it supports the paper's number, and only ever turns one into below resolution."""
    values = np.linspace(0.90, 1.0, 201)
    for spread, floor in itertools.product((0.0, 0.003), (None, 0.95, 0.999)):
        verdicts = [
            verdict_at_least(v, 0.99, 0.005, spread=spread, resolution=floor).verdict
            for v in values
        ]
        plain = [verdict_at_least(v, 0.99, 0.005, spread=spread).verdict for v in values]
        for v, p in zip(verdicts, plain, strict=True):
            assert v == p or v == BELOW_RESOLUTION
            if floor is None or floor >= 0.985:
                assert v == p
        ranks = [ORDER[v] for v in plain]
        assert ranks == sorted(ranks, reverse=True)  # value up: verdict never worse
        assert set(verdicts) <= set(VERDICTS)


def test_undefined_values_are_not_reproduced() -> None:
    for judge in (verdict_at_least, verdict_at_most):
        for value in (None, float("nan")):
            v = judge(value, 0.5, 0.1, resolution=10.0)
            assert v.verdict == NOT_REPRODUCED and "undefined" in v.rule
    assert verdict_order_of_magnitude(None, 100.0).verdict == NOT_REPRODUCED
    assert verdict_order_of_magnitude(0.0, 100.0).verdict == NOT_REPRODUCED


@pytest.mark.parametrize(("paper", "tol", "partial"), [(100.0, 0.5, 1.0), (1e3, 0.2, 0.7)])
@pytest.mark.parametrize("log_spread", [0.0, 0.1])
def test_order_of_magnitude_boundaries(
    paper: float, tol: float, partial: float, log_spread: float
) -> None:
    def verdict(decades: float) -> str:
        return verdict_order_of_magnitude(
            paper * 10**decades, paper, log_spread, tolerance_decades=tol, partial_decades=partial
        ).verdict

    for sign in (1, -1):  # above and below the paper's number alike
        edge, partly_edge = sign * (tol - log_spread), sign * (partial + log_spread)
        assert verdict(edge) == REPRODUCED
        assert verdict(edge + sign * EPS) == PARTLY
        assert verdict(partly_edge) == PARTLY
        assert verdict(partly_edge + sign * EPS) == NOT_REPRODUCED


def test_rule_text_states_the_numbers() -> None:
    rule = verdict_at_least(0.95, 0.99, 0.005).rule
    assert "0.99 - 0.005 = 0.985" in rule and "0.99 - 0.01 = 0.98" in rule
    assert "below resolution" not in rule
    rule = verdict_at_least(0.92, 0.99, 0.01, resolution=0.93, resolution_spread=0.01).rule
    assert "noise floor 0.93 + 0.01 < 0.98" in rule and "0.93 - 0.01 - 0.01 = 0.91" in rule
    assert "decades" in verdict_order_of_magnitude(100.0, 100.0).rule


def test_claim_from_verdict_and_validation() -> None:
    c = Claim.judged("W1 0.02", "0.02", "0.031", verdict_at_most(0.031, 0.02, 0.005))
    assert (c.verdict, c.paper, c.ours) == (NOT_REPRODUCED, "0.02", "0.031")
    assert c.record() == {
        "claim": "W1 0.02",
        "paper": "0.02",
        "ours": "0.031",
        "verdict": NOT_REPRODUCED,
        "rule": c.rule,
    }
    assert Claim("c", "1", "1", BELOW_RESOLUTION, "rule").verdict == "below resolution"
    with pytest.raises(UserError, match="verdict 'maybe' unknown; choose one of reproduced"):
        Claim("c", "1", "1", "maybe", "rule")


def test_bad_rule_parameters() -> None:
    with pytest.raises(UserError, match="spread >= 0"):
        verdict_at_least(0.9, 0.99, 0.005, spread=-0.1)
    with pytest.raises(UserError, match="partial >= tolerance"):
        verdict_at_most(0.9, 0.99, 0.01, partial=0.005)
    with pytest.raises(UserError, match="noise floor must be a finite number"):
        verdict_at_least(0.9, 0.99, 0.01, resolution=float("nan"))
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
