"""Verdicts on the paper's claims, from our numbers by a stated rule.

A claim gets one of four verdicts, declared once here (:data:`VERDICTS`):
``reproduced``, ``partly``, ``not reproduced`` and ``below resolution`` (the noise
floor of the measurement cannot support the paper's number, see
:func:`verdict_at_least`). Each helper returns the verdict together with the text of
the rule that produced it, so the report can show why.

Uncertainty. Our number is ``value +- spread``, where ``spread`` is the caller's
uncertainty (we use the sample standard deviation across seeds; 0 for one seed). The
rules are conservative: a claim is ``reproduced`` only if the whole interval
[value - spread, value + spread] satisfies it within ``tolerance``; ``partly`` if some
of the interval satisfies it within the wider ``partial`` margin (default twice the
tolerance); otherwise ``not reproduced``. Comparisons are inclusive, with a slack of
1e-9 so a number exactly on a boundary is not lost to rounding.

Resolution. Two independent measurements of one model (two seeds) agree only up to
the noise of the measurement: their agreement ``resolution +- resolution_spread`` (the
noise floor, :func:`lostmid.compare.scoring.noise_floor`) is about the best any
candidate can reach against one measurement. When even that cannot reach the paper's
number within the tolerance, and ours is as good as the floor, the claim cannot be
tested at this budget: ``below resolution``, not ``not reproduced``. The exact rules
are in :func:`verdict_at_least` and :func:`verdict_at_most`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from lostmid.checks import check_choice
from lostmid.compare.scoring import MeanSpread
from lostmid.errors import UserError

REPRODUCED = "reproduced"
PARTLY = "partly"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
BELOW_RESOLUTION = "below resolution"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE, BELOW_RESOLUTION)

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
        verdict: one of :data:`VERDICTS`.
        rule: the rule that turned the numbers into the verdict.
    """

    claim: str
    paper: str
    ours: str
    verdict: str
    rule: str

    def __post_init__(self) -> None:
        check_choice("verdict", self.verdict, VERDICTS)

    def record(self) -> dict[str, str]:
        """The JSON form: one key per attribute (claims.json, compare.json)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def judged(cls, claim: str, paper: str, ours: str, verdict: Verdict) -> Claim:
        """A claim from a :class:`Verdict` returned by one of the ``verdict_*`` helpers.

        >>> c = Claim.judged("Spearman", "0.99", "0.995", verdict_at_least(0.995, 0.99, 0.005))
        >>> c.verdict
        'reproduced'
        """
        return cls(claim=claim, paper=paper, ours=ours, verdict=verdict.verdict, rule=verdict.rule)


def verdict_at_least(
    value: float | None,
    paper_value: float,
    tolerance: float,
    spread: float = 0.0,
    partial: float | None = None,
    resolution: float | None = None,
    resolution_spread: float = 0.0,
) -> Verdict:
    """Verdict on a claim "the quantity is at least ``paper_value``" (e.g. Spearman 0.99).

    With threshold = paper_value - tolerance, partial = 2 * tolerance by default, and
    the noise floor r +- r_s (``resolution``, ``resolution_spread``; None: not known),
    the first rule that holds gives the verdict:

    1. reproduced if value - spread >= threshold;
    2. below resolution if r + r_s < threshold (two measurements of the same model do
       not agree at the paper's level) and value + spread >= r - r_s - tolerance (ours
       agrees with the measurement as well as the measurement agrees with itself);
    3. partly if value + spread >= paper_value - partial;
    4. otherwise not reproduced (also when ours is undefined).

    >>> verdict_at_least(0.985, 0.99, 0.005).verdict
    'reproduced'
    >>> verdict_at_least(0.975, 0.99, 0.005, spread=0.006).verdict
    'partly'
    >>> verdict_at_least(0.92, 0.99, 0.01, resolution=0.93).verdict
    'below resolution'
    """
    value, spread, tolerance, partial = _check(value, spread, tolerance, partial)
    threshold, partial_threshold = paper_value - tolerance, paper_value - partial
    rule = (
        f"reproduced if ours - spread >= {paper_value:g} - {tolerance:g} = {threshold:g}; "
        + _floor_clause(
            resolution,
            resolution_spread,
            "the noise floor {r:g} + {rs:g} < " + f"{threshold:g} and ours + spread >= "
            "{r:g} - {rs:g} - " + f"{tolerance:g} = " + "{reach:g}",
            -tolerance,
        )
        + f"partly if ours + spread >= {paper_value:g} - {partial:g} = {partial_threshold:g}; "
        "otherwise not reproduced"
    )
    if not np.isfinite(value):
        return Verdict(NOT_REPRODUCED, rule + _UNDEFINED)
    if value - spread >= threshold - _SLACK:
        return Verdict(REPRODUCED, rule)
    if (
        resolution is not None
        and resolution + resolution_spread < threshold - _SLACK
        and value + spread >= resolution - resolution_spread - tolerance - _SLACK
    ):
        return Verdict(BELOW_RESOLUTION, rule)
    if value + spread >= partial_threshold - _SLACK:
        return Verdict(PARTLY, rule)
    return Verdict(NOT_REPRODUCED, rule)


def verdict_at_most(
    value: float | None,
    paper_value: float,
    tolerance: float,
    spread: float = 0.0,
    partial: float | None = None,
    resolution: float | None = None,
    resolution_spread: float = 0.0,
) -> Verdict:
    """Verdict on a claim "the quantity is at most ``paper_value``" (e.g. W1 0.02).

    The mirror of :func:`verdict_at_least`. With threshold = paper_value + tolerance,
    partial = 2 * tolerance by default, and the noise floor r +- r_s:

    1. reproduced if value + spread <= threshold;
    2. below resolution if r - r_s > threshold (two measurements of the same model
       differ by more than the paper's number) and value - spread <= r + r_s +
       tolerance (ours is as close to the measurement as the measurement to itself);
    3. partly if value - spread <= paper_value + partial;
    4. otherwise not reproduced (also when ours is undefined).

    >>> verdict_at_most(0.025, 0.02, 0.005).verdict
    'reproduced'
    >>> verdict_at_most(0.05, 0.02, 0.005).verdict
    'not reproduced'
    >>> verdict_at_most(0.05, 0.02, 0.005, resolution=0.045).verdict
    'below resolution'
    """
    value, spread, tolerance, partial = _check(value, spread, tolerance, partial)
    threshold, partial_threshold = paper_value + tolerance, paper_value + partial
    rule = (
        f"reproduced if ours + spread <= {paper_value:g} + {tolerance:g} = {threshold:g}; "
        + _floor_clause(
            resolution,
            resolution_spread,
            "the noise floor {r:g} - {rs:g} > " + f"{threshold:g} and ours - spread <= "
            "{r:g} + {rs:g} + " + f"{tolerance:g} = " + "{reach:g}",
            tolerance,
        )
        + f"partly if ours - spread <= {paper_value:g} + {partial:g} = {partial_threshold:g}; "
        "otherwise not reproduced"
    )
    if not np.isfinite(value):
        return Verdict(NOT_REPRODUCED, rule + _UNDEFINED)
    if value + spread <= threshold + _SLACK:
        return Verdict(REPRODUCED, rule)
    if (
        resolution is not None
        and resolution - resolution_spread > threshold + _SLACK
        and value - spread <= resolution + resolution_spread + tolerance + _SLACK
    ):
        return Verdict(BELOW_RESOLUTION, rule)
    if value - spread <= partial_threshold + _SLACK:
        return Verdict(PARTLY, rule)
    return Verdict(NOT_REPRODUCED, rule)


def _floor_clause(resolution: float | None, spread: float, text: str, tolerance: float) -> str:
    """The below-resolution clause of a rule with its numbers ('' without a noise
    floor). ``tolerance`` carries the sign of the reach: ours must come within
    r -+ r_s -+ tolerance, on the side of the floor where ours may fail."""
    if resolution is None:
        return ""
    if not (np.isfinite(resolution) and np.isfinite(spread) and spread >= 0):
        raise UserError(
            f"the noise floor must be a finite number with a spread >= 0, got "
            f"{resolution} +- {spread}"
        )
    reach = resolution + np.copysign(spread, tolerance) + tolerance
    return "below resolution if " + text.format(r=resolution, rs=spread, reach=reach) + "; "


def verdict_order_of_magnitude(
    value: float | None,
    paper_value: float,
    log10_spread: float = 0.0,
    tolerance_decades: float = 0.5,
    partial_decades: float = 1.0,
) -> Verdict:
    """Verdict on a claim "the quantity is about ``paper_value``" in orders of magnitude
    (e.g. peak-to-valley about 10^2).

    With d = |log10 value - log10 paper_value| (decades) and the uncertainty
    ``log10_spread`` in decades: reproduced if d + log10_spread <= tolerance_decades
    (default 0.5: within a factor sqrt(10) = 3.16 even at the edge of the uncertainty);
    partly if d - log10_spread <= partial_decades (default 1: within a factor 10);
    otherwise not reproduced.

    >>> verdict_order_of_magnitude(300.0, 100.0).verdict  # log10(3) = 0.48 decades
    'reproduced'
    >>> verdict_order_of_magnitude(900.0, 100.0).verdict  # 0.95 decades
    'partly'
    >>> verdict_order_of_magnitude(2000.0, 100.0).verdict
    'not reproduced'
    """
    if not (np.isfinite(paper_value) and paper_value > 0):
        raise UserError(f"the paper's value must be a positive number, got {paper_value}")
    _check(0.0, log10_spread, tolerance_decades, partial_decades)
    rule = (
        f"d = |log10 ours - log10 {paper_value:g}| decades; reproduced if d + spread <= "
        f"{tolerance_decades:g}; partly if d - spread <= {partial_decades:g}; "
        "otherwise not reproduced"
    )
    if value is None or not (np.isfinite(value) and value > 0):
        return Verdict(NOT_REPRODUCED, rule + _UNDEFINED)
    d = abs(float(np.log10(value) - np.log10(paper_value)))
    if d + log10_spread <= tolerance_decades + _SLACK:
        return Verdict(REPRODUCED, rule)
    if d - log10_spread <= partial_decades + _SLACK:
        return Verdict(PARTLY, rule)
    return Verdict(NOT_REPRODUCED, rule)


def mean_and_spread(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean across seeds and the spread used by the verdicts
    (:class:`~lostmid.compare.scoring.MeanSpread`: the sample standard deviation,
    ddof = 1, 0 for a single value); every value must be finite.

    >>> mean_and_spread([1.0, 3.0])
    (2.0, 1.4142135623730951)
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise UserError("need at least one finite value to summarise across seeds")
    summary = MeanSpread.of(v.tolist())
    return summary.mean, summary.spread


def format_value(value: float, spread: float = 0.0, digits: int = 3) -> str:
    """Our number as text for the claims table: ``"0.987 +- 0.004"``.

    >>> format_value(0.98712, 0.0041)
    '0.987 +- 0.004'
    """
    if spread > 0:
        return f"{value:.{digits}f} +- {spread:.{digits}f}"
    return f"{value:.{digits}f}"


def _check(
    value: float | None, spread: float, tolerance: float, partial: float | None
) -> tuple[float, float, float, float]:
    """Validate the rule's knobs; an undefined ``value`` (None) becomes nan."""
    partial = 2.0 * tolerance if partial is None else partial
    value = float("nan") if value is None else value
    for name, v in (("spread", spread), ("tolerance", tolerance), ("partial", partial)):
        if not np.isfinite(v):
            raise UserError(f"{name} must be a finite number, got {v}")
    if spread < 0 or tolerance < 0 or partial < tolerance:
        raise UserError(
            f"need spread >= 0, tolerance >= 0 and partial >= tolerance; got spread={spread}, "
            f"tolerance={tolerance}, partial={partial}"
        )
    return float(value), float(spread), float(tolerance), float(partial)
