"""Verdicts on the paper's claims, from our numbers by a stated rule.

A claim gets one of five verdicts (:data:`lostmid.stats.verdicts.CLAIM_VERDICTS`):
``reproduced``, ``partly``, ``not reproduced``, ``inconclusive`` (the interval spans a
boundary of the rule) and ``below resolution`` (the noise floor of the measurement
cannot support the paper's number, see :func:`verdict_at_least`). Each helper returns
the verdict together with the text of the rule that produced it, with its numbers at 3
significant digits, so the report can show why.

Uncertainty (:data:`UNCERTAINTY`, the one convention of the table): our number is a 95%
interval (low, high), t over seeds (:meth:`MeanSpread.interval`). A claim is
``reproduced`` only if the whole interval satisfies it within ``tolerance``, ``partly``
if the whole interval lies in the wider ``partial`` margin, ``not reproduced`` if the
whole interval fails it, and ``inconclusive`` when it spans two of these zones.

Resolution. Two independent measurements of one model (two seeds) agree only up to
the noise of the measurement: their agreement (the noise floor,
:func:`lostmid.compare.scoring.noise_floor`, as a 95% interval over seed pairs) is about
the best any candidate can reach against one measurement. When the whole floor fails
the paper's number within the tolerance, and ours reaches the floor, the claim cannot
be tested at this budget: ``below resolution``, not ``not reproduced``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from lostmid.checks import check_choice
from lostmid.errors import UserError
from lostmid.stats.intervals import MeanSpread, welch_interval
from lostmid.stats.verdicts import (
    BELOW_RESOLUTION,
    CLAIM_VERDICTS,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    side_of,
)

UNCERTAINTY = (
    "Every number with an uncertainty is a mean with its 95% interval: Student-t over "
    "seeds (mean -+ t_0.975,n-1 sd / sqrt n) where independently initialised models or "
    "training runs are the unit, Wilson (a proportion) and Newcombe (a difference of two) "
    "for accuracies; one seed is judged on its point value. A verdict is reached only "
    "when the whole interval lies on one side of the rule's boundary; an interval that "
    "spans a boundary is inconclusive."
)
"""The one uncertainty convention of the claims table, stated once (the report's top)."""

# The paper's step-0 agreement between theory and measurement (nothing fitted), and the
# tolerance we grant each number (reproduce and compare judge them the same way).
PAPER_SPEARMAN = 0.99
PAPER_WASSERSTEIN1 = 0.02
CLAIM_TOLERANCE = {"spearman": 0.01, "wasserstein1": 0.01}

_SLACK = 1e-9
_UNDEFINED = " (ours is undefined, so: not reproduced)"


class Verdict(NamedTuple):
    """A verdict and the rule, in words and numbers, that gave it."""

    verdict: str
    rule: str


@dataclass(frozen=True)
class Claim:
    """One row of the claims table.

    Attributes:
        claim: the paper's statement, in words.
        paper: the paper's number, as text (e.g. ``"0.99"``).
        ours: our number with its uncertainty, as text (e.g. ``"0.987 +- 0.004"``).
        verdict: one of :data:`~lostmid.stats.verdicts.CLAIM_VERDICTS`.
        rule: the rule that turned the numbers into the verdict.
    """

    claim: str
    paper: str
    ours: str
    verdict: str
    rule: str

    def __post_init__(self) -> None:
        check_choice("verdict", self.verdict, CLAIM_VERDICTS)

    def record(self) -> dict[str, str]:
        """The JSON form: one key per attribute (claims.json, compare.json)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def judged(cls, claim: str, paper: str, ours: str, verdict: Verdict) -> Claim:
        """A claim from a :class:`Verdict` returned by one of the ``verdict_*`` helpers.

        >>> v = verdict_at_least((0.99, 0.995), 0.99, 0.005)
        >>> c = Claim.judged("Spearman", "0.99", "0.995", v)
        >>> c.verdict
        'reproduced'
        """
        return cls(claim=claim, paper=paper, ours=ours, verdict=verdict.verdict, rule=verdict.rule)


Span = tuple[float, float]
"""An interval (low, high); a point is (x, x)."""


def span(value: MeanSpread) -> Span:
    """The 95% interval of a number over seeds (:meth:`MeanSpread.interval`)."""
    return value.interval()


def _zone(x: float, edges: tuple[float, float], higher_is_better: bool) -> int:
    """0: passes the threshold, 1: within the partial margin, 2: fails (inclusive edges,
    with a 1e-9 slack so a number exactly on a boundary is not lost to rounding)."""
    threshold, partial = edges
    if higher_is_better:
        return 0 if x >= threshold - _SLACK else 1 if x >= partial - _SLACK else 2
    return 0 if x <= threshold + _SLACK else 1 if x <= partial + _SLACK else 2


def _by_zones(low_zone: int, high_zone: int) -> str | None:
    """The verdict when the whole interval lies in one zone, else None (inconclusive)."""
    if low_zone != high_zone:
        return None
    return (REPRODUCED, PARTLY, NOT_REPRODUCED)[low_zone]


def _interval_text(x: Span) -> str:
    return f"{x[0]:.3g}" if x[0] == x[1] else f"[{x[0]:.3g}, {x[1]:.3g}]"


def verdict_at_least(
    ours: Span,
    paper_value: float,
    tolerance: float,
    partial: float | None = None,
    floor: Span | None = None,
) -> Verdict:
    """Verdict on a claim "the quantity is at least ``paper_value``" (e.g. Spearman 0.99).

    ``ours`` and ``floor`` (the noise floor: the same quantity between independent
    measurements of one model; None: not known) are 95% intervals (low, high). With
    threshold = paper_value - tolerance and the partial margin paper_value - partial
    (default 2 * tolerance), each end of ``ours`` falls in a zone: passes (>= the
    threshold), near (>= the margin) or fails; the first rule that holds gives the
    verdict:

    1. reproduced if the whole interval passes (low >= threshold);
    2. below resolution if the whole floor fails the threshold (its high < threshold:
       two measurements of the same model do not agree at the paper's level) and ours
       reaches the floor (high >= floor low - tolerance);
    3. partly if the whole interval is near; not reproduced if it all fails (also when
       ours is undefined);
    4. otherwise inconclusive: the interval spans two zones.

    >>> verdict_at_least((0.985, 0.99), 0.99, 0.005).verdict
    'reproduced'
    >>> verdict_at_least((0.981, 0.984), 0.99, 0.005).verdict
    'partly'
    >>> verdict_at_least((0.97, 0.99), 0.99, 0.005).verdict
    'inconclusive'
    >>> verdict_at_least((0.91, 0.93), 0.99, 0.01, floor=(0.92, 0.94)).verdict
    'below resolution'
    """
    return _bounded(ours, paper_value, tolerance, partial, floor, higher_is_better=True)


def verdict_at_most(
    ours: Span,
    paper_value: float,
    tolerance: float,
    partial: float | None = None,
    floor: Span | None = None,
) -> Verdict:
    """Verdict on a claim "the quantity is at most ``paper_value``" (e.g. W1 0.02).

    The mirror of :func:`verdict_at_least`. With threshold = paper_value + tolerance and
    the margin paper_value + partial (default 2 * tolerance):

    1. reproduced if the whole interval passes (high <= threshold);
    2. below resolution if the whole floor fails the threshold (its low > threshold:
       two measurements of the same model differ by more than the paper's number) and
       ours reaches the floor (low <= floor high + tolerance);
    3. partly if the whole interval is near; not reproduced if it all fails (also when
       ours is undefined);
    4. otherwise inconclusive.

    >>> verdict_at_most((0.020, 0.025), 0.02, 0.005).verdict
    'reproduced'
    >>> verdict_at_most((0.05, 0.06), 0.02, 0.005).verdict
    'not reproduced'
    >>> verdict_at_most((0.02, 0.05), 0.02, 0.005).verdict
    'inconclusive'
    >>> verdict_at_most((0.04, 0.05), 0.02, 0.005, floor=(0.045, 0.05)).verdict
    'below resolution'
    """
    return _bounded(ours, paper_value, tolerance, partial, floor, higher_is_better=False)


def _bounded(
    ours: Span,
    paper_value: float,
    tolerance: float,
    partial: float | None,
    floor: Span | None,
    *,
    higher_is_better: bool,
) -> Verdict:
    """The rule of :func:`verdict_at_least` (``higher_is_better``) and of its mirror
    :func:`verdict_at_most`, written once."""
    low, high, tolerance, partial = _check(ours, tolerance, partial)
    sign = -1.0 if higher_is_better else 1.0  # the side of the paper's number we may be on
    threshold, margin = paper_value + sign * tolerance, paper_value + sign * partial
    word, near = (
        (">=", f"[{margin:.3g}, {threshold:.3g})")
        if higher_is_better
        else ("<=", f"({threshold:.3g}, {margin:.3g}]")
    )
    beyond = ("<" if higher_is_better else ">") + f" {margin:.3g}"
    fails, reach = (
        (f"< {threshold:.3g}", f"its low - {tolerance:g}")
        if higher_is_better
        else (f"> {threshold:.3g}", f"its high + {tolerance:g}")
    )
    rule = (
        f"95% intervals; reproduced if ours lies wholly {word} {threshold:.3g} "
        f"({paper_value:g} {'-' if higher_is_better else '+'} {tolerance:g}); "
        + _floor_clause(floor, fails, reach, -tolerance if higher_is_better else tolerance)
        + f"partly if wholly in {near}; not reproduced if wholly {beyond}; inconclusive if it "
        f"spans these zones; ours {_interval_text((low, high))}"
    )
    if np.isnan(low) or np.isnan(high):  # undefined; an unbounded end (one seed) is not
        return Verdict(NOT_REPRODUCED, rule + _UNDEFINED)
    edges = (threshold, margin)
    weak, strong = (low, high) if higher_is_better else (high, low)  # the weaker end decides
    if _zone(weak, edges, higher_is_better) == 0:  # even the weaker end passes
        return Verdict(REPRODUCED, rule)
    if floor is not None:
        floor_fails = (
            floor[1] < threshold - _SLACK if higher_is_better else floor[0] > threshold + _SLACK
        )
        reaches = (
            high >= floor[0] - tolerance - _SLACK
            if higher_is_better
            else low <= floor[1] + tolerance + _SLACK
        )
        if floor_fails and reaches:
            return Verdict(BELOW_RESOLUTION, rule)
    found = _by_zones(_zone(weak, edges, higher_is_better), _zone(strong, edges, higher_is_better))
    return Verdict(found or INCONCLUSIVE, rule)


def _floor_clause(floor: Span | None, fails: str, reach: str, tolerance: float) -> str:
    """The below-resolution clause of a rule with its numbers ('' without a noise floor)."""
    if floor is None:
        return ""
    if np.isnan(floor[0]) or np.isnan(floor[1]) or floor[0] > floor[1]:
        raise UserError(f"the noise floor must be an interval, got {floor}")
    edge = floor[1] + tolerance if tolerance > 0 else floor[0] + tolerance
    return (
        f"below resolution if the noise floor {_interval_text(floor)} lies wholly {fails} "
        f"and ours reaches {reach} = {edge:.3g}; "
    )


def verdict_no_worse(difference: Span, what: str = "ours - theirs") -> Verdict:
    """Verdict on "ours is no worse than theirs" from the 95% interval of the paired
    difference of a lower-is-better score (``what``, e.g. W1 per held-out seed):
    reproduced if it lies wholly <= 0, not reproduced if wholly > 0, else inconclusive.

    >>> verdict_no_worse((-0.003, -0.001)).verdict, verdict_no_worse((-0.001, 0.002)).verdict
    ('reproduced', 'inconclusive')
    >>> verdict_no_worse((0.001, 0.004)).verdict
    'not reproduced'
    """
    low, high = difference
    rule = (
        f"95% interval of {what}, paired by seed: reproduced if it lies wholly <= 0, not "
        f"reproduced if wholly > 0, else inconclusive; it is {_interval_text(difference)}"
    )
    if np.isnan(low) or np.isnan(high):  # undefined; an unbounded end (one seed) is not
        return Verdict(NOT_REPRODUCED, rule + _UNDEFINED)
    if high <= _SLACK:
        return Verdict(REPRODUCED, rule)
    if low > _SLACK:
        return Verdict(NOT_REPRODUCED, rule)
    return Verdict(INCONCLUSIVE, rule)


def verdict_within_floor(change: Span, floor: Span | None, what: str = "the change") -> Verdict:
    """Verdict on "a change moves the quantity no more than noise does" (e.g. the W1
    between a profile measured with and without the positional encoding), against the
    95% interval of a noise floor of the same metric (e.g. the W1 between independently
    initialised models): the boundary is the floor's upper end (the largest noise the
    design allows, so a change is called real only beyond it); reproduced if the change's
    95% interval lies wholly at or below it, not reproduced if wholly above it, else
    inconclusive (:func:`lostmid.stats.verdicts.side_of`; also without a floor).

    >>> verdict_within_floor((0.003, 0.011), (0.0, 0.02)).verdict
    'reproduced'
    >>> verdict_within_floor((0.0073, 0.026), (0.00093, 0.0039)).verdict
    'not reproduced'
    >>> verdict_within_floor((0.002, 0.01), (0.001, 0.004)).verdict
    'inconclusive'
    """
    low, high = (float("nan") if v is None else float(v) for v in change)
    if np.isfinite(low) and np.isfinite(high) and low > high + _SLACK:
        raise UserError(f"an interval needs low <= high, got ({low}, {high})")
    if floor is None:
        return Verdict(
            INCONCLUSIVE,
            f"95% interval of {what} against the noise floor's upper end; no floor (one "
            "seed), so: inconclusive",
        )
    if np.isnan(floor[0]) or np.isnan(floor[1]) or floor[0] > floor[1]:
        raise UserError(f"the noise floor must be an interval, got {floor}")
    boundary = floor[1]
    rule = (
        f"95% intervals; reproduced if {what} lies wholly <= the noise floor's upper end "
        f"{boundary:.3g} (floor {_interval_text(floor)}), not reproduced if wholly above "
        f"it, else inconclusive; it is {_interval_text((low, high))}"
    )
    if np.isnan(low) or np.isnan(high):  # undefined; an unbounded end (one seed) is not
        return Verdict(NOT_REPRODUCED, rule + _UNDEFINED)
    if high <= boundary + _SLACK:
        return Verdict(REPRODUCED, rule)
    side = side_of(low, high, boundary + _SLACK)
    return Verdict(NOT_REPRODUCED if side == "above" else INCONCLUSIVE, rule)


def verdict_order_of_magnitude(
    log10_ours: Span,
    paper_value: float,
    tolerance_decades: float = 0.5,
    partial_decades: float = 1.0,
) -> Verdict:
    """Verdict on a claim "the quantity is about ``paper_value``" in orders of magnitude
    (e.g. peak-to-valley about 10^2), from the 95% interval of log10 ours.

    d = |log10 ours - log10 paper_value| over the interval (its least and greatest
    value); reproduced if d <= ``tolerance_decades`` over the whole interval (default
    0.5: within a factor sqrt(10)); partly if tolerance < d <= ``partial_decades``
    throughout (default 1: within a factor 10); not reproduced if d > partial
    throughout; otherwise inconclusive.

    >>> verdict_order_of_magnitude((2.4, 2.48), 100.0).verdict  # within 0.48 decades
    'reproduced'
    >>> verdict_order_of_magnitude((2.9, 2.96), 100.0).verdict
    'partly'
    >>> verdict_order_of_magnitude((3.2, 3.4), 100.0).verdict
    'not reproduced'
    >>> verdict_order_of_magnitude((2.3, 2.7), 100.0).verdict
    'inconclusive'
    """
    if not (np.isfinite(paper_value) and paper_value > 0):
        raise UserError(f"the paper's value must be a positive number, got {paper_value}")
    low, high, _, _ = _check(log10_ours, tolerance_decades, partial_decades)
    target = float(np.log10(paper_value))
    rule = (
        f"d = |log10 ours - {target:g}| decades over the 95% interval of log10 ours "
        f"{_interval_text((low, high))}; reproduced if d <= {tolerance_decades:g} throughout, "
        f"partly if in ({tolerance_decades:g}, {partial_decades:g}] throughout, not "
        f"reproduced if > {partial_decades:g} throughout, else inconclusive"
    )
    if np.isnan(low) or np.isnan(high):  # undefined; an unbounded end (one seed) is not
        return Verdict(NOT_REPRODUCED, rule + _UNDEFINED)
    d_low = 0.0 if low <= target <= high else min(abs(low - target), abs(high - target))
    d_high = max(abs(low - target), abs(high - target))
    edges = (tolerance_decades, partial_decades)
    found = _by_zones(_zone(d_low, edges, False), _zone(d_high, edges, False))
    return Verdict(found or INCONCLUSIVE, rule)


def floor_relation(ours: MeanSpread, floor: MeanSpread) -> str:
    """Where a score sits against the noise floor of the same metric: by the 95% Welch
    interval of the difference of their means, ``above the noise floor`` (wholly > 0),
    ``below the noise floor`` (wholly < 0) or ``at the noise floor`` (it spans 0; also
    when either has a single value, whose spread is unknown).

    >>> floor_relation(MeanSpread(0.0039, 0.0003, 3), MeanSpread(0.0024, 0.0006, 3))
    'above the noise floor'
    >>> floor_relation(MeanSpread(0.0076, 0.0019, 3), MeanSpread(0.0105, 0.0046, 3))
    'at the noise floor'
    """
    low, high = welch_difference(ours, floor)
    if low > 0:
        return "above the noise floor"
    if high < 0:
        return "below the noise floor"
    return "at the noise floor"


def welch_difference(a: MeanSpread, b: MeanSpread) -> Span:
    """The 95% Welch interval of mean(a) - mean(b) for two independent samples; (-inf,
    inf) when either has fewer than 2 values (:func:`lostmid.stats.intervals.welch_interval`).

    >>> [round(x, 5) for x in welch_difference(MeanSpread(0.0039, 0.0003, 3),
    ...                                          MeanSpread(0.0024, 0.0006, 3))]
    [0.00025, 0.00275]
    """
    return welch_interval(a.mean, a.spread, a.n, b.mean, b.spread, b.n)


def format_interval(value: MeanSpread, digits: int = 3) -> str:
    """A number over seeds as the claims table writes it: the mean and its 95% interval
    at ``digits`` significant digits, and n (``n/a`` when nothing was defined).

    >>> format_interval(MeanSpread(0.012345, 0.002, 3))
    '0.0123 [0.00738, 0.0173] (n=3)'
    >>> format_interval(MeanSpread(0.5, 0.0, 1))
    '0.5 (n=1)'
    """
    if value.n == 0 or not np.isfinite(value.mean):
        return "n/a"
    if value.n == 1:
        return f"{value.mean:.{digits}g} (n=1)"
    low, high = value.interval()
    return f"{value.mean:.{digits}g} [{low:.{digits}g}, {high:.{digits}g}] (n={value.n})"


def _check(
    ours: Span, tolerance: float, partial: float | None
) -> tuple[float, float, float, float]:
    """Validate the rule's knobs; an undefined end (None, nan) stays nan."""
    partial = 2.0 * tolerance if partial is None else partial
    low, high = (float("nan") if v is None else float(v) for v in ours)
    for name, v in (("tolerance", tolerance), ("partial", partial)):
        if not np.isfinite(v):
            raise UserError(f"{name} must be a finite number, got {v}")
    if tolerance < 0 or partial < tolerance:
        raise UserError(
            f"need tolerance >= 0 and partial >= tolerance; got tolerance={tolerance}, "
            f"partial={partial}"
        )
    if np.isfinite(low) and np.isfinite(high) and low > high + _SLACK:
        raise UserError(f"an interval needs low <= high, got ({low}, {high})")
    return low, high, float(tolerance), float(partial)
