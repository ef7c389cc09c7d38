"""Agreement between a theory profile and a measured profile over positions 1..L.

Every metric takes two non-negative profiles of the same length L >= 2 (entry j-1 is
the influence of 1-indexed position j) and is invariant to a positive rescaling of
either profile, so a rollout row (sums to 1), a Jacobian RMS norm and a measured
gradient norm can be compared directly. Conventions:

* p, q: the two profiles normalised to sum 1, p_j = a_j / sum_i a_i.
* x_j = (j - 1) / (L - 1): positions scaled to [0, 1].
* t: the target position (the recency anchor), default L.

:func:`compare_profiles` bundles all metrics in one :class:`ProfileComparison`, the one
agreement record of the package (compare, reproduce and train write its
:meth:`~ProfileComparison.record`). It includes Spearman and W1 on log-binned profiles
(:func:`log_bin`), where the flat middle, hundreds of positions of nearly equal
influence, no longer dominates the ranks with its noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.checks import check_position, check_positive
from lostmid.compare.config import LOG_BINS
from lostmid.errors import UserError
from lostmid.records import check_profile
from lostmid.stats.ranks import pearson, spearman
from lostmid.theory import summarise_profile
from lostmid.typing import Float, Int

AGREEMENT_METRICS = (
    "wasserstein1",
    "spearman",
    "binned_wasserstein1",
    "binned_spearman",
    "log_correlation",
    "log10_rmse",
)
"""The fields of :class:`ProfileComparison` that measure agreement between two profiles
(the others describe one side), summarised over seeds and folds."""

METRIC_RANGES: dict[str, tuple[float, float]] = {
    "wasserstein1": (0.0, math.inf),
    "spearman": (-1.0, 1.0),
    "binned_wasserstein1": (0.0, math.inf),
    "binned_spearman": (-1.0, 1.0),
    "log_correlation": (-1.0, 1.0),
    "log10_rmse": (0.0, math.inf),
}
"""The values each agreement metric can take: correlations lie in [-1, 1], distances
and RMSEs are >= 0. A 95% interval over seeds is clipped to them
(:meth:`lostmid.stats.intervals.MeanSpread.interval`)."""


def validate_profile(profile: np.ndarray, name: str = "profile") -> np.ndarray:
    """A profile as a 1-D float64 array, checked: finite, non-negative, not all zero
    (:func:`lostmid.records.check_profile`, the one check of a profile).

    >>> validate_profile([1, 2, 3]).tolist()
    [1.0, 2.0, 3.0]
    """
    return check_profile(profile, name)


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = validate_profile(a, "first profile")
    b = validate_profile(b, "second profile")
    if a.size != b.size:
        raise UserError(
            f"profiles have different lengths ({a.size} and {b.size}); "
            "compare profiles over the same positions 1..L"
        )
    return a, b


def wasserstein1(a: np.ndarray, b: np.ndarray) -> float:
    """Wasserstein-1 distance between the normalised profiles on positions in [0, 1].

    With p, q normalised to sum 1 and placed at x_j = (j-1)/(L-1),

        W1 = sum_{j=1}^{L-1} |P_j - Q_j| / (L - 1),   P_j = p_1 + ... + p_j,

    the area between the two CDFs. 0 for equal shapes; 1 for point masses at the two
    ends; in general the distance between two point masses is |x_i - x_j|.

    >>> wasserstein1([1.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    1.0
    >>> wasserstein1([1.0, 0.0, 0.0], [0.0, 5.0, 0.0])
    0.5
    """
    return _wasserstein1(*_pair(a, b))


def _wasserstein1(a: np.ndarray, b: np.ndarray) -> float:
    cdf_gap = np.cumsum(a / a.sum())[:-1] - np.cumsum(b / b.sum())[:-1]
    return float(np.abs(cdf_gap).sum() / (a.size - 1))


def log_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of log10 profiles over the positions where both are > 0.

    r = Pearson(log10 a_j, log10 b_j) for j in {j : a_j > 0 and b_j > 0}. Sensitive to
    the shape over orders of magnitude (the primacy tail, the valley depth), unlike
    Spearman. nan when fewer than 2 such positions exist or one side is constant there.

    >>> round(log_correlation([1.0, 10.0, 100.0], [2.0, 20.0, 200.0]), 12)
    1.0
    """
    return _log_correlation(*_pair(a, b))


def _log_correlation(a: np.ndarray, b: np.ndarray) -> float:
    both = (a > 0) & (b > 0)
    if both.sum() < 2:
        return float("nan")
    return pearson(np.log10(a[both]), np.log10(b[both]))


@dataclass(frozen=True)
class PeakToValley:
    """Peak-to-valley ratios of two profiles side by side (see
    :func:`lostmid.theory.summarise_profile`: peak = largest value over the support,
    valley = smallest value excluding the target). None where a ratio is undefined
    (a zero valley or a one-position support).

    Attributes:
        log10_first, log10_second: log10(peak / valley) of each profile.
        log10_difference: log10_first - log10_second (decades; > 0: first is deeper).
    """

    first: float | None
    second: float | None
    log10_first: float | None
    log10_second: float | None
    log10_difference: float | None


def peak_to_valley(a: np.ndarray, b: np.ndarray, target: int | None = None) -> PeakToValley:
    """Peak-to-valley ratio (peak / valley) of each profile, and their log10 difference.

    >>> ptv = peak_to_valley([100.0, 1.0, 50.0], [10.0, 1.0, 5.0])
    >>> (ptv.first, ptv.second, ptv.log10_difference)
    (100.0, 10.0, 1.0)
    """
    a, b = _pair(a, b)
    sa = summarise_profile(a, target=target)
    sb = summarise_profile(b, target=target)
    diff = None
    if sa.log10_peak_to_valley is not None and sb.log10_peak_to_valley is not None:
        diff = sa.log10_peak_to_valley - sb.log10_peak_to_valley
    return PeakToValley(
        first=sa.peak_to_valley,
        second=sb.peak_to_valley,
        log10_first=sa.log10_peak_to_valley,
        log10_second=sb.log10_peak_to_valley,
        log10_difference=diff,
    )


@dataclass(frozen=True)
class AnchorError:
    """Relative errors of a theory at the two anchors of the U-shape, after normalising
    theory and measurement to sum 1: (p_j - q_j) / q_j with p the theory, q the
    measurement. Signed: > 0 where the theory puts too much weight. nan where the
    measured value is 0.

    Attributes:
        recency: error at the target t (the recency anchor).
        primacy: error at the primacy peak, position 1.
        recency_position, primacy_position: the 1-indexed positions used.
    """

    recency: float
    primacy: float
    recency_position: int
    primacy_position: int


def anchor_error(
    theory: np.ndarray, measured: np.ndarray, target: int | None = None
) -> AnchorError:
    """Relative error of ``theory`` against ``measured`` at the recency anchor and at
    position 1, both profiles normalised to sum 1.

        err_j = p_j / q_j - 1,  p = theory / sum(theory), q = measured / sum(measured)

    >>> e = anchor_error([2.0, 1.0, 1.0], [1.0, 1.0, 2.0])
    >>> (e.primacy, e.recency)
    (1.0, -0.5)
    """
    p, q = _pair(theory, measured)
    t = _target(target, p.size)
    p, q = p / p.sum(), q / q.sum()

    def rel(j: int) -> float:
        return float(p[j - 1] / q[j - 1] - 1.0) if q[j - 1] > 0 else float("nan")

    return AnchorError(recency=rel(t), primacy=rel(1), recency_position=t, primacy_position=1)


@dataclass(frozen=True)
class ProfileComparison:
    """All agreement metrics of one candidate profile against the measurement.

    Attributes:
        spearman: :func:`lostmid.stats.spearman` (1 is perfect; weak evidence alone).
        wasserstein1: :func:`wasserstein1` (0 is perfect, 1 is the worst).
        binned_spearman, binned_wasserstein1: the same on the log-binned profiles
            (:func:`log_bin`; W1 then moves mass in units of bins, not positions).
        log_correlation: :func:`log_correlation` (1 is perfect).
        log10_peak_to_valley: log10 peak/valley of the candidate.
        log10_peak_to_valley_measured: log10 peak/valley of the measurement.
        recency_error, primacy_error: :func:`anchor_error` at t and at position 1.
        log10_rmse: root mean square of log10(p_j / q_j) over positions where both
            are > 0, with the shared scale removed (the residual of a log fit):
            sqrt(mean_j (d_j - mean(d))^2), d_j = log10 p_j - log10 q_j.
    """

    spearman: float
    wasserstein1: float
    binned_spearman: float
    binned_wasserstein1: float
    log_correlation: float
    log10_peak_to_valley: float | None
    log10_peak_to_valley_measured: float | None
    recency_error: float
    primacy_error: float
    log10_rmse: float

    def record(self) -> dict[str, float | None]:
        """The JSON form: one key per attribute, the same names everywhere."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ProfileComparison:
        """Read back :meth:`record` (an undefined number, null in JSON, is nan; the peak-to-
        valley ratios stay None when they were)."""
        optional = ("log10_peak_to_valley", "log10_peak_to_valley_measured")
        return cls(
            **{
                name: (record[name] if name in optional else _number(record[name]))
                for name in cls.__dataclass_fields__
            }
        )


def _number(x: Any) -> float:
    return float("nan") if x is None else float(x)


def log10_rmse(a: np.ndarray, b: np.ndarray) -> float:
    """RMS of log10(a_j/b_j) about its mean over positions where both are > 0.

    >>> round(log10_rmse([1.0, 10.0], [2.0, 20.0]), 12)  # a constant ratio: no shape error
    0.0
    >>> log10_rmse([1.0, 10.0], [10.0, 10.0])  # log10 ratios -1 and 0, about their mean
    0.5
    """
    return _log10_rmse(*_pair(a, b))


def _log10_rmse(a: np.ndarray, b: np.ndarray) -> float:
    both = (a > 0) & (b > 0)
    if not both.any():
        return float("nan")
    d = np.log10(a[both]) - np.log10(b[both])
    return float(np.sqrt(np.mean((d - d.mean()) ** 2)))


def compare_profiles(
    theory: np.ndarray,
    measured: np.ndarray,
    target: int | None = None,
    bins: int = LOG_BINS,
) -> ProfileComparison:
    """Every metric of this module for one candidate profile against the measurement.

    Args:
        theory, measured: (L,) profiles over positions 1..L.
        target: 1-indexed target t (default L).
        bins: log-position bins for the binned metrics (see :func:`log_bin`).

    >>> c = compare_profiles([0.5, 0.2, 0.3], [5.0, 2.0, 3.0])
    >>> (c.spearman, c.wasserstein1, c.recency_error)
    (1.0, 0.0, 0.0)
    """
    theory, measured = _pair(theory, measured)
    t = _target(target, theory.size)
    ptv = peak_to_valley(theory, measured, target=t)
    anchors = anchor_error(theory, measured, target=t)
    index = log_bin_index(theory.size, bins, t)
    binned_theory, binned_measured = _bin_sums(theory, index), _bin_sums(measured, index)
    return ProfileComparison(
        spearman=spearman(theory, measured),
        wasserstein1=_wasserstein1(theory, measured),
        binned_spearman=spearman(binned_theory, binned_measured),
        binned_wasserstein1=_wasserstein1(binned_theory, binned_measured),
        log_correlation=_log_correlation(theory, measured),
        log10_peak_to_valley=ptv.log10_first,
        log10_peak_to_valley_measured=ptv.log10_second,
        recency_error=anchors.recency,
        primacy_error=anchors.primacy,
        log10_rmse=_log10_rmse(theory, measured),
    )


def log_bin_index(
    length: int, bins: int = LOG_BINS, target: int | None = None
) -> Int[np.ndarray, " L"]:
    """The log-position bin of each position, as used by :func:`log_bin`.

    Positions j = 1..t-1 (1-indexed) fall in bin

        k(j) = floor(bins * ln j / ln t),   k in 0..bins-1,

    so bin k covers t^(k/bins) <= j < t^((k+1)/bins): equal widths in ln j. The target
    t gets a bin of its own after them, and the positions after the target (t < L)
    one more bin at the end. Bins that no position falls in (the narrow ones at small
    j) are dropped and the rest numbered 0, 1, ... in order, so every bin holds at least
    one position and the result has at most bins + 2 distinct values.

    Returns:
        (L,) bin numbers (array index j-1 holds position j's bin).

    >>> log_bin_index(16, bins=4).tolist()  # bins [1,2), [2,4), [4,8), [8,16), {16}
    [0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 4]
    """
    check_positive("bins", bins)
    t = _target(target, length)
    j = np.arange(1, length + 1, dtype=np.float64)
    raw = np.empty(length, dtype=np.int64)
    if t > 1:
        # The 1e-9 keeps exact edges (j = t^(k/bins)) in the bin they open.
        raw[: t - 1] = np.floor(bins * np.log(j[: t - 1]) / np.log(t) + 1e-9)
        raw[: t - 1] = np.minimum(raw[: t - 1], bins - 1)
    raw[t - 1] = bins
    raw[t:] = bins + 1
    _, dense = np.unique(raw, return_inverse=True)
    return dense.astype(np.int64)


def log_bin(
    profile: Float[np.ndarray, " L"], bins: int = LOG_BINS, target: int | None = None
) -> Float[np.ndarray, " B"]:
    """Sum of a profile over log-position bins (see :func:`log_bin_index`).

    b_k = sum over positions j in bin k of a_j. Total mass is conserved. The target is
    a bin of its own (the recency spike is not averaged with its neighbours), and bins
    that hold no position are dropped, so b has B <= bins + 2 entries, all from at least
    one position. Metrics on b weigh the primacy tail and the middle by log position:
    hundreds of middle positions of nearly equal influence become a few bins, so their
    noise no longer decides the ranks.

    Args:
        profile: (L,) non-negative influence of positions 1..L.
        bins: number of equal-width bins in ln j over positions 1..t-1.
        target: 1-indexed target t (default L).

    >>> log_bin([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], bins=3).tolist()
    [1.0, 5.0, 22.0, 8.0]
    """
    values = validate_profile(profile)
    return _bin_sums(values, log_bin_index(values.size, bins, target))


def _bin_sums(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    return np.bincount(index, weights=values)


def _target(target: int | None, length: int) -> int:
    return check_position("target", target, length)
