"""Shape indices of a curve over positions: one definition for accuracy by gold position
and for an influence profile.

A curve is a value per position, 0-indexed in arrays, positions in increasing order
(gold indices, depths in %, or 1-indexed token positions: the caller says which). Its
reference points: ``first`` and ``last``, and ``middle``, the position nearest the
midpoint of the first and last (the lower one on a tie). Indices, each a linear
contrast sum_i c_i v_i with a 95 % interval:

* ``mean``: the mean over positions (for proportions: pooled correct / n);
* ``gap``: max - min over positions (FILM's robustness gap; max and min are picked after
  seeing the data, so its interval is conditional on that choice);
* ``primacy`` = first - middle, ``recency`` = last - middle;
* ``bias`` = (first + last) / 2 - middle, the position bias index (> 0: a U).

Intervals, by what the values are (:class:`Curve`):

* proportions k_i / n_i: Wilson per position; a contrast by MOVER (Zou & Donner 2008),
  lower = est - sqrt(sum_i c_i^2 (v_i - b_i)^2) with b_i the Wilson lower limit where
  c_i > 0 and the upper limit where c_i < 0 (the upper limit mirrored). For c = (1, -1)
  it is Newcombe's hybrid score interval (:func:`~lostmid.stats.difference_interval`);
* estimates with standard errors (an influence profile): normal, est ± z sqrt(sum_i
  c_i^2 s_i^2), positions independent;
* seeds (S, P): the contrast per seed, then the 95 % t interval over seeds.

Shape class, decided by the primacy and recency intervals, never by point estimates.
Each contrast is ``+`` (interval above 0), ``-`` (below 0), ``=`` (inside
``[-margin, margin]``: equivalent to 0 at that margin) or ``?`` (none of these):

==========  =================================================  ===================
class       (primacy, recency)                                 reads
==========  =================================================  ===================
U           (+, +)                                             both ends above middle
inverted U  (-, -)                                             both ends below middle
primacy     (+, -), (+, =), (=, -)                             earlier is better
recency     (-, +), (=, +), (-, =)                             later is better
flat        (=, =)                                             ends equal the middle
undetermined  any ``?``                                        the intervals do not decide
==========  =================================================  ===================

>>> c = Curve.from_counts([0, 1, 2], correct=[95, 50, 90], n=[100, 100, 100])
>>> s = shape_indices(c, margin=0.05)
>>> s.shape, round(s.bias.estimate, 3), s.primacy.ci_low > 0
('U', 0.425, True)
>>> shape_indices(Curve.from_counts([0, 1, 2], [6, 5, 6], [10, 10, 10]), margin=0.05).shape
'undetermined'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lostmid.errors import UserError
from lostmid.recordable import fields_record
from lostmid.stats.intervals import Z95, Interval, seed_interval, wilson_interval

Numbers = Sequence[float] | np.ndarray  # values over positions, as a list or an array
MIDDLE_BAND = (0.25, 0.75)
"""The middle half of a context, as fractions of the way from its first position to its
last (ends included): the theory's dead zone, and where a valley must sit to be "in the
middle". Every rule that speaks of the middle half reads it here."""
SHAPES = ("flat", "primacy", "recency", "U", "inverted U", "undetermined")
KINDS = ("proportion", "estimate", "seeds")


@dataclass(frozen=True)
class Curve:
    """Values over positions and what their uncertainty is (``kind``, see module doc).

    Attributes:
        positions: (P,) increasing positions (the caller's convention).
        kind: ``proportion`` (``correct``/``n`` per position), ``estimate``
            (``values`` with ``stderr``) or ``seeds`` (``values`` of shape (S, P)).
    """

    positions: tuple[float, ...]
    kind: str
    values: np.ndarray  # (P,) or (S, P) for seeds
    stderr: np.ndarray | None = None  # (P,) for estimates
    correct: tuple[int, ...] | None = None  # proportions
    n: tuple[int, ...] | None = None  # proportions

    @classmethod
    def from_counts(cls, positions: Numbers, correct: Sequence[int], n: Sequence[int]) -> Curve:
        """Accuracy k_i / n_i at each position."""
        k, m = tuple(int(x) for x in correct), tuple(int(x) for x in n)
        if len(k) != len(positions) or len(m) != len(positions):
            raise UserError("a curve needs one count and one n per position")
        if any(x < 1 for x in m) or any(not 0 <= a <= b for a, b in zip(k, m, strict=True)):
            raise UserError("a curve of proportions needs 0 <= correct <= n and n >= 1")
        values = np.array([a / b for a, b in zip(k, m, strict=True)])
        return cls(_positions(positions), "proportion", values, correct=k, n=m)

    @classmethod
    def from_estimates(cls, positions: Numbers, values: Numbers, stderr: Numbers) -> Curve:
        """Estimates with standard errors (e.g. an influence profile and its s.e.)."""
        v, s = np.asarray(values, dtype=np.float64), np.asarray(stderr, dtype=np.float64)
        if v.shape != (len(positions),) or s.shape != v.shape:
            raise UserError("a curve needs one value and one standard error per position")
        if not (np.all(np.isfinite(v)) and np.all(s >= 0)):
            raise UserError("a curve needs finite values and standard errors >= 0")
        return cls(_positions(positions), "estimate", v, stderr=s)

    @classmethod
    def from_seeds(
        cls, positions: Numbers, values: Sequence[Sequence[float]] | np.ndarray
    ) -> Curve:
        """One curve per seed, shape (S, P); seeds are the unit of the t interval."""
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != len(positions) or not np.all(np.isfinite(v)):
            raise UserError("a curve over seeds needs finite values of shape (seeds, positions)")
        return cls(_positions(positions), "seeds", v)

    @property
    def point(self) -> np.ndarray:
        """(P,) the point estimate per position (the mean over seeds for ``seeds``)."""
        return self.values.mean(axis=0) if self.kind == "seeds" else self.values

    def contrast(self, coefficients: Numbers) -> Interval:
        """sum_i c_i v_i with its 95 % interval (module doc)."""
        c = np.asarray(coefficients, dtype=np.float64)
        if c.shape != (len(self.positions),):
            raise ValueError("one coefficient per position")
        if self.kind == "seeds":
            per_seed = self.values @ c  # (S,)
            i = seed_interval(per_seed.tolist())
            return Interval(i.estimate, i.ci_low, i.ci_high)
        est = float(c @ self.values)
        if self.kind == "estimate":
            assert self.stderr is not None
            half = Z95 * math.sqrt(float(np.sum(c**2 * self.stderr**2)))
            return Interval(est, est - half, est + half)
        assert self.correct is not None and self.n is not None
        low2 = high2 = 0.0
        for ci, k, m, v in zip(c, self.correct, self.n, self.values, strict=True):
            if ci == 0:
                continue
            lo, hi = wilson_interval(k, m)
            below, above = (v - lo, hi - v) if ci > 0 else (hi - v, v - lo)
            low2 += (ci * below) ** 2
            high2 += (ci * above) ** 2
        return Interval(est, est - math.sqrt(low2), est + math.sqrt(high2))

    def mean(self) -> Interval:
        """The mean over positions; for proportions the pooled Wilson interval."""
        if self.kind == "proportion":
            assert self.correct is not None and self.n is not None
            k, m = sum(self.correct), sum(self.n)
            lo, hi = wilson_interval(k, m)
            return Interval(k / m, lo, hi)
        return self.contrast(np.full(len(self.positions), 1.0 / len(self.positions)))


def _positions(positions: Numbers) -> tuple[float, ...]:
    p = tuple(float(x) for x in positions)
    if not p:
        raise UserError("a curve needs at least one position")
    if any(b <= a for a, b in zip(p, p[1:], strict=False)):
        raise UserError("a curve's positions must be strictly increasing")
    return p


def reference_points(positions: Numbers) -> tuple[int, int, int]:
    """(first, middle, last) array indices: middle is the position nearest the midpoint
    of the first and last positions, the lower one on a tie.

    >>> reference_points([0, 34, 69, 104, 139]), reference_points([0, 1, 2, 3])
    ((0, 2, 4), (0, 1, 3))
    """
    p = np.asarray(positions, dtype=np.float64)
    mid_point = (p[0] + p[-1]) / 2
    middle = min(range(len(p)), key=lambda i: (abs(p[i] - mid_point), p[i]))
    return 0, middle, len(p) - 1


def classify(primacy: Interval, recency: Interval, margin: float) -> str:
    """The shape class from the primacy and recency intervals (the module's table)."""
    pair = primacy.sign(margin) + recency.sign(margin)
    if "?" in pair:
        return "undetermined"
    return {
        "++": "U",
        "--": "inverted U",
        "+-": "primacy",
        "+=": "primacy",
        "=-": "primacy",
        "-+": "recency",
        "=+": "recency",
        "-=": "recency",
        "==": "flat",
    }[pair]


def is_u(primacy: Any, recency: Any) -> bool:
    """A resolved U (a valley between both ends): the class ``U`` of :func:`classify`,
    both contrasts' intervals above 0. Takes anything with ``estimate``, ``ci_low`` and
    ``ci_high`` (a :class:`Interval`, a seed interval, a Newcombe difference).

    >>> is_u(Interval(0.3, 0.1, 0.5), Interval(0.2, 0.01, 0.4))
    True
    >>> is_u(Interval(0.3, 0.1, 0.5), Interval(0.2, -0.01, 0.4))
    False
    """

    def contrast(x: Any) -> Interval:
        return Interval(float(x.estimate), float(x.ci_low), float(x.ci_high))

    return classify(contrast(primacy), contrast(recency), 0.0) == "U"


def in_middle_band(fraction: Any) -> Any:
    """Whether each fraction of the way through a context lies in :data:`MIDDLE_BAND`.

    >>> in_middle_band(np.array([0.0, 0.25, 0.5, 0.76])).tolist()
    [False, True, True, False]
    """
    low, high = MIDDLE_BAND
    f = np.asarray(fraction, dtype=float)
    return (f >= low) & (f <= high)


def u_ruled_out(primacy: Any, recency: Any, margin: float) -> bool:
    """No U, whatever the other end: primacy or recency resolved not above the middle,
    its interval below 0 (``-``) or inside ``[-margin, margin]`` (``=``). A shape class
    can still be ``undetermined`` then (the other end's interval straddles), but a U
    needs both ends above the middle. Takes what :func:`is_u` takes.

    >>> u_ruled_out(Interval(-0.07, -0.25, 0.12), Interval(-0.33, -0.5, -0.14), 0.05)
    True
    >>> u_ruled_out(Interval(0.2, -0.1, 0.5), Interval(0.3, 0.1, 0.5), 0.05)
    False
    """
    ends = (
        Interval(float(x.estimate), float(x.ci_low), float(x.ci_high)) for x in (primacy, recency)
    )
    return any(end.sign(margin) in ("-", "=") for end in ends)


@dataclass(frozen=True)
class ShapeIndices:
    """The shape indices of a curve (module doc); positions in the caller's convention."""

    kind: str
    margin: float
    first: float
    middle: float
    last: float
    mean: Interval
    gap: Interval
    gap_between: tuple[float, float]
    primacy: Interval
    recency: Interval
    bias: Interval
    shape: str
    ends: str = "independent"
    """How primacy and recency were judged: ``independent`` (the module's intervals) or
    ``paired`` (the same items at the three reference points, :func:`with_paired_ends`)."""

    def record(self) -> dict[str, Any]:
        return fields_record(
            self,
            skip=("gap_between", "bias"),
            gap={**self.gap.record(), "between": list(self.gap_between)},
            bias_index=self.bias.record(),
        )


def shape_indices(curve: Curve, *, margin: float) -> ShapeIndices:
    """Mean, gap, primacy, recency, bias index and shape class of ``curve``.

    ``margin``: within it a contrast counts as zero (``=``) when its whole interval is
    inside [-margin, margin]; in the curve's units (accuracy: 0.05 is 5 points; an
    influence profile divided by its mean: 0.05 of the mean level).

    A single position has no shape: every contrast is 0 and the class is ``flat`` only
    if ``margin`` allows, which it does for any margin >= 0 (0 = 0).

    >>> c = Curve.from_estimates([1, 2, 3], [1.0, 1.0, 1.0], [0.01, 0.01, 0.01])
    >>> shape_indices(c, margin=0.1).shape
    'flat'
    """
    if not margin >= 0:
        raise UserError(f"the flat margin must be >= 0, got {margin}")
    p = len(curve.positions)
    i_first, i_mid, i_last = reference_points(curve.positions)

    def unit(*weights: tuple[int, float]) -> np.ndarray:
        c = np.zeros(p)
        for index, w in weights:
            c[index] += w
        return c

    point = curve.point
    best = max(range(p), key=lambda i: (point[i], -i))
    worst = min(range(p), key=lambda i: (point[i], i))
    primacy = curve.contrast(unit((i_first, 1.0), (i_mid, -1.0)))
    recency = curve.contrast(unit((i_last, 1.0), (i_mid, -1.0)))
    return ShapeIndices(
        kind=curve.kind,
        margin=float(margin),
        first=curve.positions[i_first],
        middle=curve.positions[i_mid],
        last=curve.positions[i_last],
        mean=curve.mean(),
        gap=curve.contrast(unit((best, 1.0), (worst, -1.0))),
        gap_between=(curve.positions[best], curve.positions[worst]),
        primacy=primacy,
        recency=recency,
        bias=curve.contrast(unit((i_first, 0.5), (i_last, 0.5), (i_mid, -1.0))),
        shape=classify(primacy, recency, margin),
    )


def with_paired_ends(shape: ShapeIndices, primacy: Any, recency: Any) -> ShapeIndices:
    """``shape`` with its primacy and recency intervals replaced by ones made for paired
    outcomes (the same items at the first, middle and last positions: Newcombe's paired
    interval, :func:`~lostmid.stats.paired_difference_interval`), and its class decided
    by them (:func:`classify`, the one rule). ``primacy``, ``recency``: anything with
    ``estimate``, ``ci_low`` and ``ci_high``, the same estimates as ``shape``'s.

    >>> s = shape_indices(Curve.from_counts([0, 1, 2], [12, 8, 12], [16, 16, 16]), margin=0.05)
    >>> s.shape, with_paired_ends(s, Interval(0.25, 0.08, 0.42), Interval(0.25, 0.06, 0.42)).shape
    ('undetermined', 'U')
    """
    ends = []
    for new, old in ((primacy, shape.primacy), (recency, shape.recency)):
        if not math.isclose(float(new.estimate), old.estimate, abs_tol=1e-12):
            raise ValueError(f"paired estimate {new.estimate} is not the shape's {old.estimate}")
        ends.append(Interval(float(new.estimate), float(new.ci_low), float(new.ci_high)))
    p, r = ends
    return replace(shape, primacy=p, recency=r, shape=classify(p, r, shape.margin), ends="paired")


def profile_shape(influence: Numbers, stderr: Numbers, *, margin: float = 0.05) -> ShapeIndices:
    """Shape indices of an influence profile over positions 1..L (1-indexed), values and
    standard errors divided by the profile's mean, so ``margin`` is a fraction of the
    mean level (0.05: 5 %).

    >>> s = profile_shape([4.0, 1.0, 1.0, 1.0, 3.0], [0.01] * 5)
    >>> s.shape, s.first, s.last, round(s.primacy.estimate, 3)
    ('U', 1.0, 5.0, 1.5)
    """
    v = np.asarray(influence, dtype=np.float64)
    s = np.asarray(stderr, dtype=np.float64)
    level = float(v.mean()) if v.size else 0.0
    if not level > 0:
        raise UserError("an influence profile needs a positive mean for its shape indices")
    curve = Curve.from_estimates(np.arange(1, v.size + 1), v / level, s / level)
    return shape_indices(curve, margin=margin)
