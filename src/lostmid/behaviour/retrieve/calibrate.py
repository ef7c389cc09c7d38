"""``retrieve --calibrate``: place a task on a model before measuring it.

A curve by position means something only when the task is neither at the ceiling nor at
the floor for the model. The pilot chooses the task's difficulty knob (distractor
needles, pairs, length: :attr:`RetrieveConfig.knob <lostmid.behaviour.retrieve.config.
RetrieveConfig.knob>`) so that greedy accuracy at the middle position lands in a band
(default 0.3-0.8).

Search. The knob's values (a ladder, easiest first) are assumed to make the task harder
as they grow (accuracy non-increasing). Bisection over the ladder: try the middle value;
above the band go harder (right), below it go easier (left), inside it stop. At most
ceil(log2(K + 1)) values of a K-step ladder are tried. A value whose prompt does not fit
the model counts as below the band. When no value tried lands in the band, the closest
one (the smallest distance from its accuracy to the band; the easier on a tie) is
chosen, and the outcome says so in one line.

Disjointness. The pilot's examples are items ``PILOT_FIRST_ITEM + i`` (2^30 + i); the
measured ones are items 0, 1, ...: an example is a function of (seed, item) only, so no
pilot example is measured (a test checks keys, values and haystacks).

>>> accuracy = {0: 1.0, 1: 0.9, 2: 0.6, 4: 0.2, 8: 0.0}
>>> c = calibrate_knob("distractors", (0, 1, 2, 4, 8), lambda v: (round(10 * accuracy[v]), 10),
...                    band=(0.3, 0.8))
>>> c.chosen, [t.value for t in c.tried], c.in_band
(2, [2], True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lostmid.stats import wilson_interval

PILOT_FIRST_ITEM = 1 << 30


@dataclass(frozen=True)
class PilotPoint:
    """Greedy accuracy at the middle position for one knob value (``fits`` False: the
    prompt does not fit the model; counted as below the band)."""

    value: int
    n: int
    correct: int
    fits: bool = True

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    def record(self, band: tuple[float, float]) -> dict[str, Any]:
        low, high = wilson_interval(self.correct, self.n)
        return {
            "value": self.value,
            "n": self.n,
            "correct": self.correct,
            "accuracy": self.accuracy,
            "ci_low": low,
            "ci_high": high,
            "fits": self.fits,
            "in_band": self.fits and band[0] <= self.accuracy <= band[1],
        }


@dataclass(frozen=True)
class Calibration:
    """What the pilot tried and chose (module doc)."""

    knob: str
    ladder: tuple[int, ...]
    band: tuple[float, float]
    tried: tuple[PilotPoint, ...]
    chosen: int
    in_band: bool
    position: int | None = None
    length: int | None = None
    examples: int = 0

    @property
    def outcome(self) -> str:
        """One line: the choice, and whether it is in the band."""
        best = next(t for t in self.tried if t.value == self.chosen)
        low, high = wilson_interval(best.correct, best.n)
        where = f"{self.knob} = {self.chosen}: middle accuracy {best.accuracy:.2f} "
        where += f"[{low:.2f}, {high:.2f}] ({best.correct}/{best.n})"
        band = f"[{self.band[0]:g}, {self.band[1]:g}]"
        if self.in_band:
            return f"calibrated {where}, in the band {band}"
        values = ", ".join(str(t.value) for t in self.tried)
        return (
            f"calibration: no {self.knob} tried ({values}) put middle accuracy in {band}; "
            f"closest {where}, measured there"
        )

    def record(self) -> dict[str, Any]:
        return {
            "knob": self.knob,
            "ladder": list(self.ladder),
            "band": list(self.band),
            "position": self.position,
            "length": self.length,
            "pilot_examples": self.examples,
            "pilot_items": [PILOT_FIRST_ITEM, PILOT_FIRST_ITEM + self.examples - 1],
            "tried": [t.record(self.band) for t in self.tried],
            "chosen": self.chosen,
            "in_band": self.in_band,
            "outcome": self.outcome,
        }


def _distance(point: PilotPoint, band: tuple[float, float]) -> float:
    if not point.fits:
        return float("inf")
    return max(band[0] - point.accuracy, point.accuracy - band[1], 0.0)


def calibrate_knob(
    knob: str,
    ladder: Sequence[int],
    accuracy_at: Callable[[int], tuple[int, int] | None],
    *,
    band: tuple[float, float] = (0.3, 0.8),
) -> Calibration:
    """Bisection over ``ladder`` (module doc). ``accuracy_at(value)`` gives (correct, n)
    of greedy answers at the middle position, or None when the prompt does not fit.

    >>> c = calibrate_knob("pairs", (5, 10, 20), lambda v: (10, 10), band=(0.3, 0.8))
    >>> c.chosen, c.in_band, c.outcome.split(";")[0]
    (10, False, 'calibration: no pairs tried (10, 20) put middle accuracy in [0.3, 0.8]')
    """
    values = tuple(int(v) for v in ladder)
    if not values:
        raise ValueError("calibration needs at least one knob value")
    low, high = band
    tried: dict[int, PilotPoint] = {}
    lo, hi = 0, len(values) - 1
    chosen: int | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        got = accuracy_at(values[mid])
        point = (
            PilotPoint(values[mid], 0, 0, fits=False)
            if got is None
            else PilotPoint(values[mid], got[1], got[0])
        )
        tried[values[mid]] = point
        if point.fits and point.accuracy > high:
            lo = mid + 1  # too easy: harder
        elif not point.fits or point.accuracy < low:
            hi = mid - 1  # too hard (or does not fit): easier
        else:
            chosen = values[mid]
            break
    points = tuple(tried[v] for v in tried)
    in_band = chosen is not None
    if chosen is None:
        fitting = [t for t in points if t.fits]
        if not fitting:
            raise_unfit(knob, values)
        chosen = min(fitting, key=lambda t: (_distance(t, band), t.value)).value
    return Calibration(knob, values, (low, high), points, chosen, in_band)


def raise_unfit(knob: str, values: Sequence[int]) -> None:
    """One line when no knob value fits the model's context; ``--length`` is advised
    only where it is a separate option that can shrink the prompt (a needle task whose
    knob is not the length: kv and mqar take no --length).

    >>> raise_unfit("pairs", [3, 5])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: ...(3, 5); give smaller --knob-values or a model with a longer context
    """
    from lostmid.errors import UserError

    shorter = " or a shorter --length" if knob not in ("pairs", "length") else ""
    raise UserError(
        f"--calibrate: no {knob} tried fits the model's context ({', '.join(map(str, values))}); "
        f"give smaller --knob-values{shorter} or a model with a longer context"
    )
