"""Intervals: the paired item bootstrap against a normal reference and constructed arms."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.errors import UserError


def test_item_bootstrap_agrees_with_the_paired_normal_interval_of_a_mean() -> None:
    """For the mean over items, the bootstrap of paired differences matches the normal
    interval of the per-item differences, mean ± 1.96 sd/sqrt(n), within bootstrap noise."""
    from lostmid.stats import item_bootstrap

    rng = np.random.default_rng(3)
    base = (rng.random((400, 5)) < 0.5).astype(float)
    remedy = np.where(rng.random((400, 5)) < 0.2, 1.0, base)  # fixes ~10% of items
    got = item_bootstrap(remedy, base, lambda a: a.mean())
    d = (remedy - base).mean(axis=1)
    half = 1.959963984540054 * d.std(ddof=1) / np.sqrt(d.size)
    assert got.estimate == pytest.approx(d.mean())
    assert got.ci_low == pytest.approx(d.mean() - half, abs=0.15 * half)
    assert got.ci_high == pytest.approx(d.mean() + half, abs=0.15 * half)
    assert got.n == 400


def test_item_bootstrap_says_yes_no_and_undecided() -> None:
    """Constructed arms: a remedy that fixes the middle of every item (the gap interval
    lies below 0), one identical to the baseline (a zero interval), and a coin flip on
    an equal number of items fixed and broken (the interval spans 0)."""
    from lostmid.stats import item_bootstrap

    gap = lambda a: a.mean(axis=0).max() - a.mean(axis=0).min()  # noqa: E731
    base = np.tile([1.0, 0.0, 0.0, 0.0, 1.0], (30, 1))
    base[::3, 2] = 1.0
    fixed = np.ones_like(base)
    yes = item_bootstrap(fixed, base, gap)
    assert yes.ci_high < 0 and yes.estimate == pytest.approx(-1.0)
    same = item_bootstrap(base, base, gap)
    assert same.ci_low == same.ci_high == same.estimate == 0.0
    a, b = base[:8].copy(), base[:8].copy()
    a[:4, 1], b[4:, 1] = 1.0, 1.0  # as many items fixed as broken: nothing decided
    unsure = item_bootstrap(a, b, lambda x: x.mean())
    assert unsure.estimate == 0.0 and unsure.ci_low < 0 < unsure.ci_high
    with pytest.raises(UserError, match="the same items and positions"):
        item_bootstrap(a[:4], b, gap)
    assert item_bootstrap(a[:1], b[:1], gap).ci_high == float("inf")


@pytest.mark.parametrize(
    "values", [[0.3], [0.1, 0.4], [1.0, 2.0, 3.0], [0.52, 0.49, 0.55, 0.61, 0.47]]
)
def test_a_summary_over_seeds_and_a_seed_interval_are_one_rule(values: list[float]) -> None:
    """MeanSpread (seeds or folds, summarised) and seed_interval give the same interval,
    one value included (unbounded); as_interval is that Interval."""
    from lostmid.stats.intervals import MeanSpread, seed_interval

    summary, direct = MeanSpread.of(values), seed_interval(values)
    assert summary.t_interval() == (direct.ci_low, direct.ci_high)
    assert summary.as_interval() == direct


def test_an_interval_record_reads_back_to_the_same_interval() -> None:
    """Infinite ends are written as null and read back as the infinity of their side;
    the count travels only where there is one."""
    import math

    from lostmid.stats.intervals import Interval

    for interval in (
        Interval(0.2, 0.1, 0.3, 4),
        Interval(0.2, -math.inf, math.inf, 1),
        Interval(-0.5, -math.inf, 0.1),
    ):
        record = interval.record()
        assert ("n" in record) == (interval.n is not None)
        assert Interval.from_record(record) == interval
    assert Interval(0.0, -math.inf, math.inf).sign(0.05) == "?"
    assert Interval(-0.3, -0.4, -0.2).sign(0.05) == "-"
