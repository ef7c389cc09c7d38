"""Summary quantities of an influence profile, theoretical or measured.

Definitions (positions 1-indexed, t the target, [lo, hi] the positions that can reach t):
* primacy: influence of position 1 (of ``lo`` when position 1 cannot reach t).
* recency: influence of the target t itself (the recency anchor).
* valley: the smallest influence over the support, excluding t; valley_position is
  where it sits. For the causal rollout this is t-1, not the middle (PAPER_NOTES).
* peak: the largest influence over the support (t included); peak_position likewise.
* peak_to_valley: peak / valley, and log10_peak_to_valley.
* dead_zone_level: median influence over the middle half of the support, the
  positions with (j - lo)/(hi - lo) in [1/4, 3/4], excluding t; the "dead zone" as a
  magnitude, not as the location of the minimum.
* uniform_level: 1/(hi - lo + 1), the influence of a flat profile with the same mass
  as a rollout row; the dead zone below it is "less than a fair share".

All are computed from log10 values, so profiles far below float range work too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from lostmid.checks import check_position
from lostmid.errors import UserError
from lostmid.runinfo import to_jsonable
from lostmid.stats.shape import in_middle_band
from lostmid.typing import Float


@dataclass(frozen=True)
class ProfileSummary:
    target: int
    support: tuple[int, int]
    primacy: float
    recency: float
    valley: float | None
    valley_position: int | None
    peak: float
    peak_position: int
    peak_to_valley: float | None
    log10_peak_to_valley: float | None
    dead_zone_level: float | None
    uniform_level: float
    log10_primacy: float
    log10_recency: float
    log10_valley: float | None
    log10_dead_zone_level: float | None

    def record(self) -> dict[str, Any]:
        """The JSON form: every field, infinities as None."""
        return to_jsonable(asdict(self))


def summarise_profile(
    influence: Float[np.ndarray, " L"] | None = None,
    *,
    log10_influence: Float[np.ndarray, " L"] | None = None,
    target: int | None = None,
    support: tuple[int, int] | None = None,
) -> ProfileSummary:
    """Primacy, recency, valley, peak-to-valley and dead-zone level of one profile.

    Give ``influence`` (non-negative) or ``log10_influence``. ``target`` defaults to
    the last position; ``support`` (1-indexed, inclusive) defaults to the positions
    with non-zero influence up to the target's end of the sequence.

    >>> s = summarise_profile(np.array([0.5, 0.1, 0.05, 0.35]))
    >>> (s.valley_position, round(s.peak_to_valley, 3))
    (3, 10.0)
    """
    if (influence is None) == (log10_influence is None):
        raise UserError("give exactly one of influence or log10_influence")
    if log10_influence is None:
        values = np.asarray(influence, dtype=np.float64)
        if np.any(values < 0) or not np.all(np.isfinite(values)):
            raise UserError("influence values must be finite and non-negative")
        with np.errstate(divide="ignore"):
            log10 = np.log10(values)
    else:
        values = None
        log10 = np.asarray(log10_influence, dtype=np.float64)
    if log10.ndim != 1 or log10.size == 0:
        raise UserError("an influence profile is a non-empty 1-D array")
    t = check_position("target", target, log10.size)
    return _summarise(log10, values, t, support)


def _summarise(
    log10: Float[np.ndarray, " L"],
    values: Float[np.ndarray, " L"] | None,
    t: int,
    support: tuple[int, int] | None,
) -> ProfileSummary:
    """:func:`summarise_profile` on checked input (``values`` may be None: use 10**log10)."""
    if support is None:
        nonzero = np.flatnonzero(np.isfinite(log10))
        lo, hi = (int(nonzero[0]) + 1, int(nonzero[-1]) + 1) if nonzero.size else (t, t)
        lo, hi = min(lo, t), max(hi, t)
    else:
        lo, hi = support
    idx = np.arange(lo - 1, hi)
    others = idx[idx != t - 1]
    peak_i = int(idx[np.argmax(log10[idx])])

    def lin(x: float) -> float:
        """10**x, saturating to inf beyond float range (the log10 fields stay exact)."""
        return float(np.power(10.0, x)) if x < 308 else float("inf")

    def at(i: int) -> float:
        return float(values[i]) if values is not None else lin(log10[i])

    valley_i = log10_valley = ptv = dead = None
    if others.size:
        valley_i = int(others[np.argmin(log10[others])])
        log10_valley = float(log10[valley_i])
        if np.isfinite(log10_valley):
            ptv = float(log10[peak_i] - log10_valley)
        frac = (others - (lo - 1)) / max(hi - lo, 1)
        middle = others[in_middle_band(frac)]
        if middle.size:
            dead = float(np.median(log10[middle]))
    primacy_i = lo - 1
    return ProfileSummary(
        target=t,
        support=(lo, hi),
        primacy=at(primacy_i),
        recency=at(t - 1),
        valley=None if valley_i is None else at(valley_i),
        valley_position=None if valley_i is None else valley_i + 1,
        peak=at(peak_i),
        peak_position=peak_i + 1,
        peak_to_valley=None if ptv is None else lin(ptv),
        log10_peak_to_valley=ptv,
        dead_zone_level=None if dead is None else lin(dead),
        uniform_level=1.0 / (hi - lo + 1),
        log10_primacy=float(log10[primacy_i]),
        log10_recency=float(log10[t - 1]),
        log10_valley=log10_valley,
        log10_dead_zone_level=dead,
    )
