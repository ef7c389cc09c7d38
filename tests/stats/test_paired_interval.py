"""Newcombe's paired interval of p_a - p_b (lostmid.stats.paired_difference_interval):
a published worked example, a second high-precision computation of the same formula,
the boundary tables, constructed yes / no / undecided data, exact (enumerated) coverage,
and bad input."""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from scipy.special import gammaln

from lostmid.stats import (
    Z95,
    difference_interval,
    paired_counts,
    paired_difference_interval,
    paired_phi,
    wilson_interval,
)

mpmath.mp.dps = 50


def _mp_reference(both: int, only_a: int, only_b: int, neither: int) -> tuple[float, ...]:
    """The same rule written again from its definition, in 50-digit arithmetic."""
    n = mpmath.mpf(both + only_a + only_b + neither)
    z = mpmath.sqrt(2) * mpmath.erfinv(mpmath.mpf("0.95"))  # the 0.975 normal quantile

    def wilson(k: int) -> tuple[mpmath.mpf, mpmath.mpf, mpmath.mpf]:
        p = k / n
        centre = (2 * k + z**2) / (2 * (n + z**2))
        half = z * mpmath.sqrt(z**2 + 4 * k * (1 - p)) / (2 * (n + z**2))
        return p, max(centre - half, mpmath.mpf(0)), min(centre + half, mpmath.mpf(1))

    p_a, l_a, u_a = wilson(both + only_a)
    p_b, l_b, u_b = wilson(both + only_b)
    e, f = both + only_a, only_b + neither
    g, h = both + only_b, only_a + neither
    cross = mpmath.mpf(both * neither - only_a * only_b)
    if e * f * g * h == 0:
        phi = mpmath.mpf(0)
    elif cross > n / 2:
        phi = (cross - n / 2) / mpmath.sqrt(e * f * g * h)
    elif cross >= 0:
        phi = mpmath.mpf(0)
    else:
        phi = cross / mpmath.sqrt(e * f * g * h)
    d = p_a - p_b
    delta = mpmath.sqrt((p_a - l_a) ** 2 - 2 * phi * (p_a - l_a) * (u_b - p_b) + (u_b - p_b) ** 2)
    eps = mpmath.sqrt((u_a - p_a) ** 2 - 2 * phi * (u_a - p_a) * (p_b - l_b) + (p_b - l_b) ** 2)
    return float(d), float(d - delta), float(d + eps)


def test_the_published_worked_example() -> None:
    """Fagerland, Lydersen and Laake (2017), ch. 8: Cavo et al. (2012), complete response
    before / after consolidation, 59, 6, 16, 80: Newcombe square-and-add -0.0621 (95% CI
    -0.1186 to -0.0046)."""
    d, lo, hi = paired_difference_interval(59, 6, 16, 80)
    assert (round(d, 4), round(lo, 4), round(hi, 4)) == (-0.0621, -0.1186, -0.0046)


def test_a_second_computation_in_high_precision_agrees() -> None:
    rng = np.random.default_rng(0)
    tables = [tuple(int(x) for x in rng.multinomial(n, rng.dirichlet([1, 1, 1, 1])))
              for n in (1, 2, 5, 20, 40, 90, 500) for _ in range(12)]  # fmt: skip
    tables += [(59, 6, 16, 80), (1, 1, 7, 12), (14, 5, 0, 22), (10, 0, 0, 10), (0, 20, 0, 0)]
    tables += [(3, 0, 0, 0), (0, 0, 0, 3), (0, 0, 3, 0), (2, 1, 1, 2), (1, 0, 0, 1)]
    for t in tables:
        np.testing.assert_allclose(paired_difference_interval(*t), _mp_reference(*t), atol=1e-12)
    assert Z95 == pytest.approx(float(mpmath.sqrt(2) * mpmath.erfinv(mpmath.mpf("0.95"))))


def test_with_no_correlation_it_is_the_independent_interval() -> None:
    """phi = 0 (a constant outcome, or a small positive association truncated to 0):
    exactly Newcombe's hybrid score interval of k_a / n - k_b / n."""
    for both, only_a, only_b, neither in [(20, 0, 0, 0), (0, 7, 0, 13), (1, 0, 0, 1), (2, 3, 1, 4)]:
        assert paired_phi(both, only_a, only_b, neither) == 0.0
        n = both + only_a + only_b + neither
        np.testing.assert_allclose(
            paired_difference_interval(both, only_a, only_b, neither),
            difference_interval(both + only_a, n, both + only_b, n),
            atol=1e-15,
        )


def test_boundary_tables() -> None:
    # all concordant: estimate 0, an interval around 0, narrower than independent
    d, lo, hi = paired_difference_interval(10, 0, 0, 10)
    ind = difference_interval(10, 20, 10, 20)
    assert d == 0.0 and lo < 0 < hi and hi - lo < 0.4 * (ind[2] - ind[1])
    assert lo == pytest.approx(-hi)
    # every item right at both: no correlation to estimate, the independent interval
    assert paired_difference_interval(20, 0, 0, 0) == pytest.approx(
        difference_interval(20, 20, 20, 20)
    )
    # all discordant one way: estimate +1 (or -1), the limit at 1 is 1
    d, lo, hi = paired_difference_interval(0, 20, 0, 0)
    l1, _ = wilson_interval(20, 20)
    _, u0 = wilson_interval(0, 20)
    assert (d, hi) == (1.0, 1.0) and lo == pytest.approx(1 - math.hypot(1 - l1, u0))
    assert paired_difference_interval(0, 0, 20, 0) == pytest.approx((-1.0, -1.0, -lo))
    # one item: the Wilson intervals of 0 or 1 of 1, combined
    low1, _ = wilson_interval(1, 1)
    for t in [(1, 0, 0, 0), (0, 0, 0, 1)]:
        assert paired_difference_interval(*t) == pytest.approx((0.0, low1 - 1, 1 - low1))
    assert paired_difference_interval(0, 1, 0, 0) == pytest.approx(
        (1.0, 1 - math.sqrt(2) * (1 - low1), 1.0)
    )


def test_it_holds_its_estimate_and_stays_in_range_on_every_small_table() -> None:
    for n in range(1, 13):
        for a, b, c in itertools.product(range(n + 1), repeat=3):
            if a + b + c > n:
                continue
            d, lo, hi = paired_difference_interval(a, b, c, n - a - b - c)
            assert -1 - 1e-12 <= lo <= d <= hi <= 1 + 1e-12
            # mirrored: a and b swapped
            assert paired_difference_interval(a, c, b, n - a - b - c) == pytest.approx(
                (-d, -hi, -lo), abs=1e-12
            )


def test_yes_no_and_undecided() -> None:
    # yes: 15 of 30 items right only at a, none only at b
    d, lo, hi = paired_difference_interval(10, 15, 0, 5)
    assert d == 0.5 and lo > 0
    # no, by the opposite sign: b better on most discordant items
    d, lo, hi = paired_difference_interval(10, 1, 14, 5)
    assert d < 0 and hi < 0
    # no, by a clear absence: 400 items all concordant, the interval inside +-0.05
    d, lo, hi = paired_difference_interval(200, 0, 0, 200)
    assert d == 0.0 and -0.05 < lo < 0 < hi < 0.05
    # undecided: 6 items, two right only at a
    d, lo, hi = paired_difference_interval(2, 2, 0, 2)
    assert d > 0 and lo < 0 < hi


def _tables(n: int) -> np.ndarray:
    return np.array(
        [(a, b, c, n - a - b - c) for a in range(n + 1) for b in range(n + 1 - a)
         for c in range(n + 1 - a - b)]
    )  # fmt: skip


def _exact(n: int, p_a: float, p_b: float, rho: float) -> dict[str, float]:
    """Coverage of p_a - p_b and mean width, by enumerating every table of n items."""
    both = p_a * p_b + rho * math.sqrt(p_a * (1 - p_a) * p_b * (1 - p_b))
    probs = np.array([both, p_a - both, p_b - both, 1 - p_a - p_b + both])
    assert probs.min() > 0
    t = _tables(n)
    weight = np.exp(gammaln(n + 1) - gammaln(t + 1).sum(axis=1) + t @ np.log(probs))
    paired = np.array([paired_difference_interval(*row)[1:] for row in t.tolist()])
    independent = np.array(
        [difference_interval(a + b, n, a + c, n)[1:] for a, b, c, _ in t.tolist()]
    )
    truth = p_a - p_b
    out = {"mass": float(weight.sum())}
    for name, ci in (("paired", paired), ("independent", independent)):
        hit = (ci[:, 0] <= truth + 1e-12) & (truth - 1e-12 <= ci[:, 1])
        out[name] = float(weight @ hit)
        out[f"{name}_width"] = float(weight @ (ci[:, 1] - ci[:, 0]))
    return out


@pytest.mark.parametrize(
    ("n", "p_a", "p_b", "rho"),
    [(20, 0.5, 0.5, 0.0), (20, 0.7, 0.3, 0.3), (40, 0.9, 0.5, 0.3), (40, 0.5, 0.3, 0.6)],
)
def test_exact_coverage_is_near_nominal(n: int, p_a: float, p_b: float, rho: float) -> None:
    """Brute force: every table enumerated (no Monte Carlo error)."""
    got = _exact(n, p_a, p_b, rho)
    assert got["mass"] == pytest.approx(1.0)
    assert 0.94 <= got["paired"] <= 0.99


def test_on_correlated_items_it_is_narrower_than_independent_and_still_covers() -> None:
    # one table: the easy items are easy at both positions
    d, lo, hi = paired_difference_interval(40, 3, 7, 40)
    d2, lo2, hi2 = difference_interval(43, 90, 47, 90)
    assert d == d2 and lo2 < lo <= d <= hi < hi2 and (hi - lo) < 0.6 * (hi2 - lo2)
    # over every table: strong positive correlation, exact coverage and mean width
    got = _exact(40, 0.5, 0.45, 0.8)
    assert got["paired"] >= 0.945 and got["independent"] > 0.99
    assert got["paired_width"] < 0.6 * got["independent_width"]


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ((-1, 2, 3, 4), "whole numbers >= 0"),
        ((1, 2, -3, 4), "whole numbers >= 0"),
        ((1.5, 2, 3, 4), "whole numbers >= 0"),
        ((0, 0, 0, 0), "at least one item"),
    ],
)
def test_bad_counts_are_refused(counts: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        paired_difference_interval(*counts)


def test_paired_counts() -> None:
    a = np.array([True, True, False, False, True])
    b = np.array([1, 0, 1, 0, 1])
    assert paired_counts(a, b) == (2, 1, 1, 1)
    with pytest.raises(ValueError, match="aligned"):
        paired_counts(a, b[:4])
    with pytest.raises(ValueError, match="bool or 0/1"):
        paired_counts([0, 2], [0, 1])
