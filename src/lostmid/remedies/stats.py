"""Intervals over seeds and the verdict rule of ``lostmid remedies``.

Over seeds. A metric measured once per seed (n seeds) is summarised by its mean and the
95% Student-t interval

    mean ± t_{0.975, n-1} * sd / sqrt(n),   sd the sample standard deviation (n - 1),

which is infinite for n = 1 (one seed says nothing about seed-to-seed variation).
Differences to the baseline are *paired* by seed: seed s of a remedy starts from the
same initial weights and is evaluated on the same held-out examples as seed s of the
baseline, so the interval is the t interval of the n per-seed differences
d_s = remedy_s - baseline_s.

Verdict (the rule, written once here: :data:`RULE`). With the 95% intervals of the gap
difference Δgap and of the mean-accuracy difference Δacc (remedy - baseline, paired by
seed) and the margin m = half the baseline's mean gap (the smallest reduction that
counts: closing half the valley, the aim of :func:`halves_gap`), the first that holds:

1. **worse**: Δgap lies above 0 (low > 0) or Δacc lies below 0 (high < 0): a resolved
   harm;
2. **inconclusive** when m = 0: the baseline has no valley to flatten (a flat curve, or
   a task at its floor or ceiling, where every arm reads the same and every interval
   is [0, 0]); the question cannot be asked of this data;
3. **works**: Δgap lies below 0 (high < 0), and (by 1) Δacc is not resolved below 0;
4. **does not work**: Δgap rules out a reduction by m (low >= -m): at most a reduction
   too small to count, or none;
5. **inconclusive**: otherwise: Δgap spans 0 and reaches below -m, so it allows both a
   reduction that counts and none (one seed, an infinite interval, is always here).

Each verdict can be reached before the data are seen: works and worse by intervals on
one side of 0, does not work by an interval that stops short of -m, inconclusive by a
wide one.
"""

from __future__ import annotations

from lostmid.stats import Interval
from lostmid.stats.verdicts import DOES_NOT_WORK, INCONCLUSIVE, REMEDY_VERDICTS, WORKS, WORSE

__all__ = ["RULE", "VERDICTS", "gap_margin", "halves_gap", "verdict"]

VERDICTS = REMEDY_VERDICTS  # the words a remedy's verdict takes (stats.verdicts)
RULE = (
    "with the 95% intervals (paired by seed; inference remedies: paired by example, a "
    "bootstrap over the items both arms scored) of the gap difference and the mean-accuracy "
    "difference to the baseline, and the margin m = half the baseline's mean gap: worse "
    "if the gap interval lies above 0 or the accuracy interval below 0; inconclusive if "
    "m = 0 (no valley to flatten: flat, or the task at its floor or ceiling); works if the gap "
    "interval lies below 0; does not work if the gap interval stops short of -m (no "
    "reduction that counts); otherwise inconclusive (it spans 0 and reaches below -m)"
)


def gap_margin(baseline_gap: Interval) -> float:
    """m = half the baseline's mean gap (0 when it has none): the smallest reduction of
    the gap that counts.

    >>> gap_margin(Interval(0.3, 0.2, 0.4, 3))
    0.15
    """
    return max(baseline_gap.estimate, 0.0) / 2


def verdict(gap_difference: Interval, accuracy_difference: Interval, margin: float) -> str:
    """``works``, ``does not work``, ``worse`` or ``inconclusive`` (the rule in the
    module docstring; ``margin`` is m >= 0, :func:`gap_margin`).

    >>> acc = Interval(0.0, -0.1, 0.1, 3)
    >>> verdict(Interval(-0.3, -0.5, -0.1, 3), acc, 0.15)
    'works'
    >>> verdict(Interval(0.0, -0.1, 0.1, 3), acc, 0.15)
    'does not work'
    >>> verdict(Interval(0.45, -0.20, 1.11, 3), acc, 0.155)  # spans -m and 0
    'inconclusive'
    >>> nothing = Interval(0.0, 0.0, 0.0, 20)  # a baseline at its floor: no valley
    >>> verdict(nothing, nothing, 0.0)
    'inconclusive'
    """
    if margin < 0:
        raise ValueError(f"the margin must be >= 0, got {margin}")
    if gap_difference.ci_low > 0 or accuracy_difference.ci_high < 0:
        return WORSE
    if margin == 0:
        return INCONCLUSIVE
    if gap_difference.ci_high < 0:
        return WORKS
    if gap_difference.ci_low >= -margin:
        return DOES_NOT_WORK
    return INCONCLUSIVE


def halves_gap(remedy_gap: Interval, baseline_gap: Interval) -> bool:
    """The aim: the remedy's mean gap is at most half the baseline's (and the
    baseline has a gap to halve).

    >>> halves_gap(Interval(0.1, 0, 0.2, 3), Interval(0.3, 0.2, 0.4, 3))
    True
    """
    return baseline_gap.estimate > 0 and remedy_gap.estimate <= baseline_gap.estimate / 2
