"""The verdict vocabulary and the three-way rule every verdict of lostmid rests on.

A verdict is a function of 95% intervals that states its boundary before the data and
can come out three ways: the interval lies on the claim's side of the boundary, on the
other side, or spans it (inconclusive; an infinite interval, one seed, always spans).
The words differ by what is judged, and live here together so that no module spells
its own:

* a claim of the paper against our numbers (``compare``, ``reproduce``): *reproduced*,
  *partly*, *not reproduced*, *inconclusive*, *below resolution* (the effect is smaller
  than the noise floor), *not robust* (the defensible readings of an open definition
  disagree: reproduced under one, not reproduced under another, :func:`across`), *not
  applicable* (the claim is about something the model is not: a claim about
  pretraining, on a model at initialisation);
* a hypothesis about our own data (dose-response, the structure-behaviour link):
  *supported*, *not supported*, *inconclusive*;
* a remedy against its baseline: *works*, *does not work*, *worse*, *inconclusive*;
* a control that a verdict must clear (a second quantisation of the weights): *robust*,
  *not robust*, *inconclusive*;
* what one measurement says of one prediction, before the claim pools them: *agrees*,
  *contradicts*, *unresolved* (a behavioural contrast against the structure's sign,
  :func:`agreement`); a rule's state at one checkpoint: *holds*, *fails*, *unresolved*.

>>> side_of(0.6, 0.9, 0.5), side_of(0.1, 0.4, 0.5), side_of(0.4, 0.6, 0.5)
('above', 'below', 'spans')
>>> supported_if_above(0.6, 0.9, 0.5), supported_if_above(-float("inf"), 1.0, 0.5)
('supported', 'inconclusive')
"""

from __future__ import annotations

import math
from collections.abc import Iterable

INCONCLUSIVE = "inconclusive"
REPRODUCED, PARTLY, NOT_REPRODUCED = "reproduced", "partly", "not reproduced"
BELOW_RESOLUTION = "below resolution"
SUPPORTED, NOT_SUPPORTED = "supported", "not supported"
WORKS, DOES_NOT_WORK, WORSE = "works", "does not work", "worse"
ROBUST, NOT_ROBUST = "robust", "not robust"
AGREES, CONTRADICTS, UNRESOLVED = "agrees", "contradicts", "unresolved"
HOLDS, FAILS = "holds", "fails"
NOT_APPLICABLE = "not applicable"
CLAIM_VERDICTS = (
    REPRODUCED,
    PARTLY,
    NOT_REPRODUCED,
    INCONCLUSIVE,
    BELOW_RESOLUTION,
    NOT_ROBUST,
    NOT_APPLICABLE,
)
"""Every verdict a claim of the paper can get, in the order tables count them."""
REMEDY_VERDICTS = (WORKS, DOES_NOT_WORK, WORSE, INCONCLUSIVE)
"""Every verdict a remedy against its baseline can get."""


def side_of(low: float, high: float, boundary: float) -> str:
    """Where a 95% interval lies against a stated boundary: ``above``, ``below`` or
    ``spans`` (also for an interval that is not finite)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "spans"
    if low > boundary:
        return "above"
    if high < boundary:
        return "below"
    return "spans"


def band_side(low: float, high: float, lo: float, hi: float, *, closed: bool = True) -> str:
    """Where a 95% interval lies against a band [lo, hi] (``closed``) or (lo, hi):
    ``inside`` (wholly in it), ``outside`` (wholly out of it, on either side) or ``spans``
    (also for an interval that is not finite).

    >>> band_side(0.3, 0.6, 0.25, 0.75), band_side(0.8, 0.9, 0.25, 0.75)
    ('inside', 'outside')
    >>> band_side(-0.5, 0.2, -0.5, 0.5, closed=False), band_side(0.2, 0.9, 0.25, 0.75)
    ('spans', 'spans')
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return "spans"
    if (lo <= low and high <= hi) if closed else (lo < low and high < hi):
        return "inside"
    if (high < lo or low > hi) if closed else (high <= lo or low >= hi):
        return "outside"
    return "spans"


def supported_if_above(low: float, high: float, boundary: float) -> str:
    """``supported`` when the interval lies above ``boundary``, ``not supported`` below,
    else ``inconclusive``."""
    return {"above": SUPPORTED, "below": NOT_SUPPORTED, "spans": INCONCLUSIVE}[
        side_of(low, high, boundary)
    ]


def agreement(prediction: str, low: float, high: float) -> str:
    """What a 95% interval says of a predicted sign (``+``, ``-``, or ``none``: no
    effect above 0 is predicted): ``agrees`` when it lies on the predicted side of 0
    (``none``: below it), ``contradicts`` on the other, ``unresolved`` when it spans 0.

    >>> agreement("+", 0.1, 0.5), agreement("-", 0.1, 0.5), agreement("none", 0.1, 0.5)
    ('agrees', 'contradicts', 'contradicts')
    >>> agreement("none", -0.4, -0.1), agreement("+", -0.1, 0.5)
    ('agrees', 'unresolved')
    """
    side = side_of(low, high, 0.0)
    wanted = {"+": "above", "-": "below", "none": "below"}[prediction]
    return UNRESOLVED if side == "spans" else AGREES if side == wanted else CONTRADICTS


def across(verdicts: Iterable[str]) -> str:
    """One verdict from the same claim judged under every defensible reading of an open
    definition (which peak, which initialisation of the twins, which precision): the
    common word when every reading gives it; *not robust* when one reading reproduces
    the claim and another does not; else *inconclusive* (some reading undecided). A
    verdict is robust only when the readings agree.

    >>> across(["reproduced", "reproduced"]), across(["reproduced", "not reproduced"])
    ('reproduced', 'not robust')
    >>> across(["not reproduced", "inconclusive"]), across([])
    ('inconclusive', 'inconclusive')
    """
    words = set(verdicts)
    if len(words) == 1:
        return words.pop()
    if {REPRODUCED, NOT_REPRODUCED} <= words:
        return NOT_ROBUST
    return INCONCLUSIVE
