"""The factorial model on constructed data: each factor is recovered when it alone drives
accuracy, both when both do, neither when none does; the adjusted contrasts cover the
truth; a fit that cannot be made is inconclusive."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.stats.factorial import RANKS, fit_factorial, valley_verdict
from lostmid.stats.intervals import Interval

CELLS = [(0, "first")] + [(d, r) for d in (25, 50, 75) for r in RANKS] + [(100, "last")]


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _logit(
    depth: np.ndarray, rank: np.ndarray, valley_depth: float, valley_rank: float
) -> np.ndarray:
    middle = 1 - 2 * np.abs(depth / 100 - 0.5)  # 0 at either end, 1 at depth 50
    return 1.2 - valley_depth * middle - valley_rank * (rank == "middle")


Data = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _simulate(
    valley_depth: float, valley_rank: float, items: int = 120, seed: int = 0, spread: float = 0.6
) -> Data:
    """Every item under every feasible cell, an item's own ease shared by its cells
    (so the outcomes of an item are correlated, as real items' are)."""
    rng = np.random.default_rng(seed)
    depth = np.tile([d for d, _ in CELLS], items).astype(float)
    rank = np.tile([r for _, r in CELLS], items)
    item = np.repeat(np.arange(items), len(CELLS))
    ease = np.repeat(rng.normal(0.0, spread, items), len(CELLS))
    eta = _logit(depth, rank, valley_depth, valley_rank) + ease
    return depth, rank, rng.random(depth.size) < _expit(eta), item


@pytest.mark.parametrize(
    ("valley_depth", "valley_rank", "depth_verdict", "rank_verdict"),
    [
        (3.0, 0.0, "supported", "not found"),
        (0.0, 3.0, "not found", "supported"),
        (3.0, 3.0, "supported", "supported"),
        (0.0, 0.0, "not found", "not found"),
    ],
)
def test_each_factor_is_found_only_where_it_acts(
    valley_depth: float, valley_rank: float, depth_verdict: str, rank_verdict: str
) -> None:
    # rank alone still makes a U in accuracy by depth pooled over ranks, since depth 0
    # holds only the first rank and 100 only the last: the model must not read it as depth
    for seed in (0, 1, 2):
        fit = fit_factorial(*_simulate(valley_depth, valley_rank, seed=seed), margin=0.05)
        assert fit.converged and fit.n == 120 * len(CELLS) and fit.clusters == 120
        for verdict, wanted in (
            (fit.depth_verdict, depth_verdict),
            (fit.rank_verdict, rank_verdict),
        ):
            if wanted == "supported":
                assert verdict == "supported"
            else:
                assert verdict in ("not supported", "inconclusive")


def test_the_pooled_depth_curve_shows_a_u_that_rank_alone_made() -> None:
    depth, rank, correct, item = _simulate(0.0, 3.0, seed=4)
    pooled = {d: correct[depth == d].mean() for d in (0, 50, 100)}
    assert pooled[0] - pooled[50] > 0.1 and pooled[100] - pooled[50] > 0.1
    fit = fit_factorial(depth, rank, correct, item, margin=0.05)
    assert fit.depth_verdict != "supported" and fit.rank_verdict == "supported"


def test_the_adjusted_contrasts_cover_the_truth() -> None:
    """No item effect: the model is then the truth, so each 95% interval covers the true
    average marginal effect in most of 40 simulations (binomial bound for 95%)."""
    valley_depth, valley_rank = 2.0, 1.0
    depth = np.tile([d for d, _ in CELLS], 1).astype(float)
    rank = np.array([r for _, r in CELLS])

    def p(d: float | None = None, r: str | None = None) -> float:
        dd = depth if d is None else np.full(depth.size, d)
        rr = rank if r is None else np.full(rank.size, r)
        return float(_expit(_logit(dd, rr, valley_depth, valley_rank)).mean())

    true_depth = (p(d=0.0) + p(d=100.0)) / 2 - p(d=50.0)
    true_rank = (p(r="first") + p(r="last")) / 2 - p(r="middle")
    covered = np.zeros(2)
    for seed in range(40):
        data = _simulate(valley_depth, valley_rank, items=80, seed=100 + seed, spread=0.0)
        fit = fit_factorial(*data, margin=0.05)
        covered += [
            fit.depth_effect.ci_low <= true_depth <= fit.depth_effect.ci_high,
            fit.rank_effect.ci_low <= true_rank <= fit.rank_effect.ci_high,
        ]
    assert covered.min() >= 34, covered  # P(X <= 33 | n 40, p 0.95) < 0.5%


def test_a_fit_that_cannot_be_made_is_inconclusive() -> None:
    depth, rank, _, item = _simulate(0.0, 0.0, items=10)
    for correct in (np.ones(depth.size, bool), np.zeros(depth.size, bool)):
        fit = fit_factorial(depth, rank, correct, item, margin=0.05)
        assert (fit.depth_verdict, fit.rank_verdict, fit.converged) == (
            "inconclusive", "inconclusive", False)  # fmt: skip
        assert fit.record()["depth_effect"]["ci_low"] is None
    # depths on one side of the middle: distance to the nearer end is depth itself
    one_side = np.where(depth > 50, 50.0, depth)
    fit = fit_factorial(one_side, rank, _simulate(2.0, 0.0, items=10)[2], item, margin=0.05)
    assert fit.depth_verdict == "inconclusive" and not fit.converged


@pytest.mark.parametrize(
    ("interval", "verdict"),
    [
        (Interval(0.2, 0.01, 0.4), "supported"),
        (Interval(-0.2, -0.4, -0.01), "not supported"),
        (Interval(0.0, -0.04, 0.04), "not supported"),
        (Interval(0.02, -0.04, 0.08), "inconclusive"),
        (Interval(float("nan"), -float("inf"), float("inf")), "inconclusive"),
    ],
)
def test_the_valley_rule(interval: Interval, verdict: str) -> None:
    assert valley_verdict(interval, 0.05) == verdict
