"""Intervals: a proportion's, a difference of two proportions', and over seeds.

Proportions. Accuracy k / n at one position: the Wilson score interval (95 %). A
difference of two accuracies p1 - p2: Newcombe's hybrid score interval (method 10 of
Newcombe 1998), built from the two Wilson intervals [l1, u1], [l2, u2]:

    lower = (p1 - p2) - sqrt((p1 - l1)^2 + (u2 - p2)^2),
    upper = (p1 - p2) + sqrt((u1 - p1)^2 + (p2 - l2)^2).

It treats the two samples as independent. For paired samples (the same n items read at
both positions) :func:`paired_difference_interval` is Newcombe's paired-data form of the
same construction (method 10 of Newcombe 1998, *Stat Med* 17:2635-2650): with the items'
2x2 table (``both`` right, right only at a, right only at b, ``neither``), the two
marginals p_a = (both + only_a) / n, p_b = (both + only_b) / n and their Wilson limits,

    lower = (p_a - p_b) - sqrt((p_a - l_a)^2 - 2 phi (p_a - l_a)(u_b - p_b) + (u_b - p_b)^2),
    upper = (p_a - p_b) + sqrt((u_a - p_a)^2 - 2 phi (u_a - p_a)(p_b - l_b) + (p_b - l_b)^2),

phi the items' correlation of the two outcomes (truncated toward 0 by n / 2, see the
function). With phi = 0 it is :func:`difference_interval` at n1 = n2 = n; positively
correlated outcomes (an easy item is easy at every depth) narrow it.

Over seeds. A metric measured once per seed (n seeds) is summarised by its mean and

    mean ± t_{0.975, n-1} * sd / sqrt(n),   sd the sample standard deviation (n - 1),

which is infinite for n = 1 (one seed says nothing about seed-to-seed variation).
Differences between two arms run on the same seeds are *paired*: the interval is the t
interval of the n per-seed differences d_s = a_s - b_s. This is the one uncertainty
convention of every verdict over seeds (remedies, training, behaviour, dose-response).

Over inputs, for a smooth function of means. A readout theta of the mean of n inputs (a
log ratio of two levels of a mean profile, say) is not a mean itself, so its interval
is the jackknife's: with theta_(i) the readout without input i,

    se^2 = (n - 1)/n * sum_i (theta_(i) - mean theta_(.))^2 (+ an independent variance),
    theta ± t_{0.975, n-1} * se.

The jackknife variance is consistent for smooth functions of means (Efron and Tibshirani
1993, ch. 11); the t quantile with n - 1 degrees of freedom keeps coverage near nominal
at the few inputs a real-model study affords (benchmarks/bench_readout.py measures it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lostmid.errors import UserError
from lostmid.stats.ranks import finite_or_none

Z95 = 1.959963984540054  # the 0.975 quantile of the standard normal


def wilson_interval(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``correct / n`` (equal to scipy's
    ``binomtest(...).proportion_ci(method="wilson")``, tests/behaviour/test_score.py; ours
    is closed-form, takes n = 0 and stays pure numpy for the many small calls):

        centre = (p + z^2/(2n)) / (1 + z^2/n),
        half   = z / (1 + z^2/n) * sqrt(p (1 - p) / n + z^2 / (4 n^2)).

    >>> [round(x, 4) for x in wilson_interval(8, 10)]
    [0.4902, 0.9433]
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    """
    if n == 0:
        return 0.0, 1.0
    if not 0 <= correct <= n:
        raise ValueError(f"correct must be in 0..{n}, got {correct}")
    p = correct / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # clipped to [0, 1] and to contain p exactly (rounding can put p a hair outside)
    return max(0.0, min(centre - half, p)), min(1.0, max(centre + half, p))


def difference_interval(
    k1: int, n1: int, k2: int, n2: int, z: float = Z95
) -> tuple[float, float, float]:
    """(p1 - p2, lower, upper): Newcombe's hybrid score interval of p1 - p2.

    >>> [round(x, 4) for x in difference_interval(56, 70, 48, 80)]  # Newcombe's example
    [0.2, 0.0524, 0.3339]
    """
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, z)
    l2, u2 = wilson_interval(k2, n2, z)
    d = p1 - p2
    return d, d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2)


def paired_counts(a: Any, b: Any) -> tuple[int, int, int, int]:
    """(both, only_a, only_b, neither) of two aligned (N,) outcome arrays (bool or 0/1):
    item i's outcome at a is ``a[i]``, at b ``b[i]``.

    >>> paired_counts([1, 1, 0, 0, 1], [1, 0, 1, 0, 1])
    (2, 1, 1, 1)
    """
    x, y = np.asarray(a), np.asarray(b)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(
            f"paired outcomes need two aligned (N,) arrays, got shapes {x.shape} and {y.shape}"
        )
    if not (np.isin(x, (0, 1)).all() and np.isin(y, (0, 1)).all()):
        raise ValueError("paired outcomes must be bool or 0/1")
    x, y = x.astype(bool), y.astype(bool)
    return (
        int((x & y).sum()),
        int((x & ~y).sum()),
        int((~x & y).sum()),
        int((~x & ~y).sum()),
    )


def paired_phi(both: int, only_a: int, only_b: int, neither: int) -> float:
    """The correlation of the two outcomes in Newcombe's paired interval: with
    A = both * neither - only_a * only_b and the four marginal totals' product P,

        phi = (A - n/2) / sqrt(P)  if A > n/2,   0  if 0 <= A <= n/2,   A / sqrt(P)  if A < 0,

    and 0 when a marginal total is 0 (P = 0: an outcome constant at a or at b, no
    correlation to estimate). The positive side is truncated by n/2 (Newcombe 1998's
    rule, in the form Fagerland, Lydersen and Laake 2017, ch. 8, compute their
    square-and-add interval with): an observed positive association is shrunk before
    it narrows the interval, which keeps coverage near nominal at small n; a negative
    one is used as it is (it only widens).

    >>> round(paired_phi(59, 6, 16, 80), 4)  # A = 4624 > n/2 = 80.5; P = 65 * 96 * 75 * 86
    0.7162
    >>> paired_phi(3, 0, 0, 0), paired_phi(1, 1, 0, 0), paired_phi(1, 0, 0, 1)  # A <= n/2
    (0.0, 0.0, 0.0)
    """
    n = both + only_a + only_b + neither
    product = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    if product == 0:
        return 0.0
    cross = both * neither - only_a * only_b
    if cross > n / 2:
        return (cross - n / 2) / math.sqrt(product)
    return 0.0 if cross >= 0 else cross / math.sqrt(product)


def paired_difference_interval(
    both: int, only_a: int, only_b: int, neither: int, z: float = Z95
) -> tuple[float, float, float]:
    """(p_a - p_b, lower, upper): Newcombe's interval for the difference of two
    proportions on paired binary data (method 10 of Newcombe 1998, "Improved confidence
    intervals for the difference between binomial proportions based on paired data"),
    from the items' 2x2 table: ``both`` right at a and b, ``only_a``, ``only_b``,
    ``neither`` (:func:`paired_counts` counts two aligned outcome arrays).

    The Wilson limits [l_a, u_a], [l_b, u_b] of the two marginals combined as in
    :func:`difference_interval`, less the covariance of the paired outcomes through
    :func:`paired_phi` (module docstring for the formula).

    Why this rule and not Tango's score interval (Tango 1998): both keep coverage near
    95% down to small n and are the two that Fagerland, Lydersen and Laake (2014, *Stat
    Med* 33:2850-2875) recommend for the paired difference. This one is closed form (no
    root finding per limit), is built from the same Wilson intervals as every
    accuracy interval here and reduces exactly to :func:`difference_interval` when phi is
    0, so a paired contrast differs from the independent one only by the correlation it
    uses; benchmarks/bench_paired_interval.py measures its coverage at our sizes.

    Cases. All items concordant (only_a = only_b = 0): estimate 0, an interval around 0
    narrowed by phi (none when every item is right at both: phi is 0 then).
    All discordant one way (only_a = n): estimate 1, upper limit 1. One item: the
    Wilson intervals of 0 or 1 of 1, combined.

    Checked against Fagerland, Lydersen and Laake's (2017, *Statistical Analysis of
    Contingency Tables*, ch. 8) worked example (Cavo et al. 2012: 59, 6, 16, 80;
    -0.0621, 95% CI -0.1186 to -0.0046), and against a high-precision recomputation
    (tests/stats/test_paired_interval.py):

    >>> [round(x, 4) for x in paired_difference_interval(59, 6, 16, 80)]
    [-0.0621, -0.1186, -0.0046]
    >>> [round(x, 4) for x in paired_difference_interval(0, 20, 0, 0)]  # all a-only
    [1.0, 0.7721, 1.0]
    """
    counts = (both, only_a, only_b, neither)
    if any(int(c) != c or c < 0 for c in counts):
        raise ValueError(
            "paired counts (both, only_a, only_b, neither) must be whole numbers >= 0, "
            f"got {counts}"
        )
    n = int(sum(counts))
    if n == 0:
        raise ValueError("a paired interval needs at least one item; the four counts sum to 0")
    k_a, k_b = int(both + only_a), int(both + only_b)
    p_a, p_b = k_a / n, k_b / n
    l_a, u_a = wilson_interval(k_a, n, z)
    l_b, u_b = wilson_interval(k_b, n, z)
    phi = paired_phi(int(both), int(only_a), int(only_b), int(neither))
    d = p_a - p_b  # as difference_interval writes it, to the last bit
    down_a, up_b = p_a - l_a, u_b - p_b
    up_a, down_b = u_a - p_a, p_b - l_b
    lower = d - math.sqrt(max(0.0, down_a**2 - 2 * phi * down_a * up_b + up_b**2))
    upper = d + math.sqrt(max(0.0, up_a**2 - 2 * phi * up_a * down_b + down_b**2))
    return d, lower, upper


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% interval: the one interval type of lostmid.

    ``ci_low``/``ci_high`` are ±inf where nothing is known of the spread (one seed, one
    item), nan where the estimate itself is undefined. ``n`` is how many seeds, folds or
    items it is made of; None for a contrast of a curve (its size is the curve's).

    >>> Interval(0.3, 0.1, 0.5).sign(0.05), Interval(0.0, -0.02, 0.03).sign(0.05)
    ('+', '=')
    """

    estimate: float
    ci_low: float
    ci_high: float
    n: int | None = None

    def sign(self, margin: float) -> str:
        """``+`` (wholly above 0), ``-`` (wholly below), ``=`` (inside [-margin,
        margin]) or ``?`` (none of these)."""
        if self.ci_low > 0:
            return "+"
        if self.ci_high < 0:
            return "-"
        if -margin <= self.ci_low and self.ci_high <= margin:
            return "="
        return "?"

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Interval:
        """Read :meth:`record` back: a missing end (null, where it was infinite) is an
        infinity, the side it stands on.

        >>> Interval.from_record({"estimate": 0.2, "ci_low": None, "ci_high": 0.5})
        Interval(estimate=0.2, ci_low=-inf, ci_high=0.5, n=None)
        """
        low, high, n = record.get("ci_low"), record.get("ci_high"), record.get("n")
        return cls(
            float(record["estimate"]),
            -math.inf if low is None else float(low),
            math.inf if high is None else float(high),
            None if n is None else int(n),
        )

    def text(self, digits: int = 2, *, signed: bool = True) -> str:
        """How a report writes it: ``+0.40 [+0.09, +0.62]``; the estimate alone, saying
        why, where the interval is undefined: an infinite end (one seed, one item) or no
        width at all (every item or seed the same, so no spread to estimate it from);
        ``n/a`` for an undefined estimate.

        >>> Interval(0.4, 0.09, 0.62).text(), Interval(0.71, 0.71, 0.71).text()
        ('+0.40 [+0.09, +0.62]', '+0.71 (no interval: no spread between items or seeds)')
        >>> Interval(0.5, -math.inf, math.inf).text(signed=False)
        '0.50 (no interval: one item or seed)'
        """
        form = f"{'+' if signed else ''}.{digits}f"
        if not math.isfinite(self.estimate):
            return "n/a"
        value = format(self.estimate, form)
        if not (math.isfinite(self.ci_low) and math.isfinite(self.ci_high)):
            return f"{value} (no interval: one item or seed)"
        if self.ci_low == self.ci_high:
            return f"{value} (no interval: no spread between items or seeds)"
        return f"{value} [{format(self.ci_low, form)}, {format(self.ci_high, form)}]"

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "estimate": self.estimate,
            "ci_low": finite_or_none(self.ci_low),
            "ci_high": finite_or_none(self.ci_high),
        }
        if self.n is not None:
            out["n"] = self.n
        return out


def t_interval(mean: float, sd: float, n: int) -> tuple[float, float]:
    """mean ∓ t_{0.975, n-1} · sd / sqrt(n) (module docstring): the one rule over seeds
    or folds. One value: (-inf, inf), nothing is known of the spread; none: (nan, nan).

    >>> [round(x, 4) for x in t_interval(2.0, 1.0, 3)]
    [-0.4841, 4.4841]
    >>> t_interval(2.0, 0.0, 1), t_interval(float("nan"), float("nan"), 0)
    ((-inf, inf), (nan, nan))
    """
    if n == 0:
        return math.nan, math.nan
    if n == 1:
        return -math.inf, math.inf
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.975, n - 1) * sd / math.sqrt(n))
    return mean - half, mean + half


def seed_interval(values: Sequence[float]) -> Interval:
    """Mean and 95% t interval of per-seed values (module docstring, :func:`t_interval`).

    >>> i = seed_interval([1.0, 2.0, 3.0])  # sd 1, t_{0.975,2} = 4.3027
    >>> round(i.estimate, 4), round(i.ci_low, 4), round(i.ci_high, 4)
    (2.0, -0.4841, 4.4841)
    >>> seed_interval([0.5]).ci_high
    inf
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
        raise UserError("a seed interval needs at least one finite value per seed")
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if x.size > 1 else 0.0
    return Interval(mean, *t_interval(mean, sd, int(x.size)), int(x.size))


UNBOUNDED = (-math.inf, math.inf)


@dataclass(frozen=True)
class MeanSpread:
    """A number over seeds or folds, summarised: mean, spread (sample standard deviation,
    ddof = 1; 0 for one value) and n, the count of finite values it is made of. Its 95%
    interval is :func:`t_interval`'s (:meth:`t_interval`), clipped to ``bounds``, the
    values the number can take (:meth:`interval`, what verdicts use; an agreement
    metric's :data:`~lostmid.compare.metrics.METRIC_RANGES`); :meth:`as_interval` gives
    it as the one :class:`Interval`.
    """

    mean: float
    spread: float
    n: int
    bounds: tuple[float, float] = field(default=UNBOUNDED, repr=False)

    @classmethod
    def of(
        cls, values: Sequence[float | None], bounds: tuple[float, float] = UNBOUNDED
    ) -> MeanSpread:
        """Summarise ``values``, ignoring undefined ones (nan, None).

        >>> MeanSpread.of([1.0, 3.0, float("nan")])
        MeanSpread(mean=2.0, spread=1.4142135623730951, n=2)
        """
        v = np.array([x for x in values if x is not None and np.isfinite(x)], dtype=float)
        if v.size == 0:
            return cls(math.nan, math.nan, 0, bounds)
        spread = float(v.std(ddof=1)) if v.size > 1 else 0.0
        return cls(float(v.mean()), spread, int(v.size), bounds)

    @classmethod
    def from_record(
        cls, record: Mapping[str, Any], bounds: tuple[float, float] = UNBOUNDED
    ) -> MeanSpread:
        """Read back :meth:`record` (its interval is recomputed from mean, spread and n;
        ``bounds`` are not in the record: give the metric's).

        >>> m = MeanSpread.of([0.2, 0.4, 0.9], (0.0, 1.0))
        >>> MeanSpread.from_record(m.record(), (0.0, 1.0)).interval() == m.interval()
        True
        """

        def number(x: Any) -> float:
            return math.nan if x is None else float(x)

        return cls(number(record["mean"]), number(record["spread"]), int(record["n"]), bounds)

    def t_interval(self) -> tuple[float, float]:
        """:func:`t_interval` of this summary, unclipped (one value: unbounded, so a
        verdict on one value is inconclusive; none: (nan, nan)).

        >>> [round(x, 4) for x in MeanSpread(2.0, 1.0, 3).t_interval()]
        [-0.4841, 4.4841]
        >>> MeanSpread(2.0, 0.0, 1).t_interval()
        (-inf, inf)
        """
        return t_interval(self.mean, self.spread, self.n)

    def interval(self) -> tuple[float, float]:
        """The 95% interval of the mean, the one uncertainty convention of every verdict:
        :meth:`t_interval` clipped to ``bounds`` (with few seeds the t interval of a
        Spearman near 1 reaches past 1, that of a small W1 below 0; no value there is
        possible).

        >>> [round(x, 4) for x in MeanSpread(2.0, 1.0, 3, bounds=(0.0, 4.0)).interval()]
        [0.0, 4.0]
        """
        low, high = self.t_interval()
        if self.n == 0:
            return low, high
        return max(low, self.bounds[0]), min(high, self.bounds[1])

    def as_interval(self) -> Interval:
        """The mean with :meth:`interval`, as an :class:`Interval` of n values."""
        return Interval(self.mean, *self.interval(), self.n)

    @property
    def clipped(self) -> bool:
        """Whether :meth:`interval` cut the t interval at ``bounds``."""
        return self.n > 1 and self.interval() != self.t_interval()

    def record(self) -> dict[str, float | int | bool | None]:
        low, high = self.interval()
        return {
            "mean": self.mean,
            "spread": self.spread,
            "n": self.n,
            "ci_low": low if self.n > 1 else None,
            "ci_high": high if self.n > 1 else None,
            "clipped": self.clipped,
        }


def paired_difference(remedy: Sequence[float], baseline: Sequence[float]) -> Interval:
    """The t interval of d_s = remedy_s - baseline_s over paired seeds.

    >>> round(paired_difference([0.2, 0.3, 0.1], [0.4, 0.4, 0.4]).estimate, 12)
    -0.2
    """
    a, b = np.asarray(remedy, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape:
        raise UserError("paired differences need the same seeds for remedy and baseline")
    return seed_interval((a - b).tolist())


def jackknife_interval(
    full: float, leave_one_out: Sequence[float], extra_variance: float = 0.0
) -> Interval:
    """``full`` with its 95% jackknife-t interval from the ``n`` leave-one-out values
    (module docstring); ``extra_variance`` adds an independent part (e.g. twins' spread
    over seeds / S). Fewer than 2 values, or non-finite ones: an infinite interval.

    >>> i = jackknife_interval(2.0, [1.5, 2.0, 2.5])  # the mean of [3, 2, 1]
    >>> round(i.ci_low, 4), round(i.ci_high, 4), i.n  # seed_interval([1, 2, 3])'s
    (-0.4841, 4.4841, 3)
    """
    from scipy.stats import t as student_t

    x = np.asarray(leave_one_out, dtype=np.float64)
    n = int(x.size)
    if n < 2 or not (np.all(np.isfinite(x)) and math.isfinite(full)):
        return Interval(full, -math.inf, math.inf, n)
    variance = (n - 1) / n * float(((x - x.mean()) ** 2).sum()) + max(extra_variance, 0.0)
    half = float(student_t.ppf(0.975, n - 1)) * math.sqrt(variance)
    return Interval(full, full - half, full + half, n)


BOOTSTRAP_DRAWS = 4000


def item_bootstrap(
    remedy: np.ndarray,
    baseline: np.ndarray,
    statistic: Any,
    *,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = 0,
) -> Interval:
    """Paired over items: the 95% percentile bootstrap interval of
    ``statistic(remedy) - statistic(baseline)``, resampling whole items (rows).

    ``remedy`` and ``baseline`` are (items, positions) arrays of outcomes on the *same*
    items (row i is one item asked at every position, under each arm), so an item's
    outcomes under both arms and at every position move together: the pairing by
    example that a pretrained model's inference remedies call for, where seeds would
    only draw other examples. ``statistic`` maps an (items, positions) array to a number
    (mean accuracy, best - worst position, first - middle, ...). The estimate is the
    statistic on all items; ``n`` is the number of items. One item gives ±inf (nothing
    to resample).

    >>> base = np.array([[1, 0, 1]] * 20, dtype=float)
    >>> fixed = np.array([[1, 1, 1]] * 20, dtype=float)
    >>> i = item_bootstrap(fixed, base, lambda a: a.mean())
    >>> round(i.estimate, 4), round(i.ci_low, 4), round(i.ci_high, 4)  # no spread at all
    (0.3333, 0.3333, 0.3333)
    """
    a, b = np.asarray(remedy, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2 or a.shape[0] == 0:
        raise UserError(
            "paired item differences need the same items and positions for remedy and baseline"
        )
    estimate = float(statistic(a) - statistic(b))
    items = a.shape[0]
    if items == 1:
        return Interval(estimate, -math.inf, math.inf, 1)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, items, size=(draws, items))
    values = np.array([statistic(a[p]) - statistic(b[p]) for p in picks])
    low, high = np.quantile(values, [0.025, 0.975])
    return Interval(estimate, min(float(low), estimate), max(float(high), estimate), items)


def welch_interval(
    mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int
) -> tuple[float, float]:
    """The 95% Welch interval of mean_a - mean_b for two independent samples given by
    their means, sample standard deviations (ddof = 1) and sizes; (-inf, inf) when
    either has fewer than 2 values, the point when both spreads are 0.

    >>> [round(x, 5) for x in welch_interval(0.0039, 0.0003, 3, 0.0024, 0.0006, 3)]
    [0.00025, 0.00275]
    """
    if n_a < 2 or n_b < 2:
        return -math.inf, math.inf
    from scipy.stats import t as student_t

    va, vb = sd_a**2 / n_a, sd_b**2 / n_b
    diff = mean_a - mean_b
    if va + vb == 0:
        return diff, diff
    dof = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    half = float(student_t.ppf(0.975, dof) * math.sqrt(va + vb))
    return diff - half, diff + half
