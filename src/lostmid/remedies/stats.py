"""Intervals over seeds and the verdict rule of ``lostmid remedies``.

Over seeds. A metric measured once per seed (n seeds) is summarised by its mean and the
95% Student-t interval

    mean ± t_{0.975, n-1} * sd / sqrt(n),   sd the sample standard deviation (n - 1),

which is infinite for n = 1 (one seed says nothing about seed-to-seed variation).
Differences to the baseline are *paired* by seed: seed s of a remedy starts from the
same initial weights and is evaluated on the same held-out examples as seed s of the
baseline, so the interval is the t interval of the n per-seed differences
d_s = remedy_s - baseline_s.

Verdict (the issue's rule, written once here). A remedy **works** when

    upper(gap difference) < 0   and   upper(mean-accuracy difference) >= 0,

i.e. its gap (max - min accuracy over gold positions) is lower than the baseline's with
the 95% interval of the difference below zero, and its mean accuracy is not lower (the
interval of the difference includes or exceeds zero). It is **worse** when the gap
difference interval lies above zero or the accuracy difference interval lies below zero;
otherwise it **does not work** (no resolved change).
"""

from __future__ import annotations

from lostmid.stats import Interval

__all__ = ["RULE", "VERDICTS", "halves_gap", "verdict"]

VERDICTS = ("works", "does not work", "worse")
RULE = (
    "works: the 95% interval of the gap difference (remedy - baseline, paired by seed) "
    "lies below 0 and that of the mean-accuracy difference has its upper end >= 0; worse: "
    "the gap interval lies above 0 or the accuracy interval below 0; else does not work"
)


def verdict(gap_difference: Interval, accuracy_difference: Interval) -> str:
    """``works``, ``does not work`` or ``worse`` (the rule in the module docstring).

    >>> verdict(Interval(-0.3, -0.5, -0.1, 3), Interval(0.0, -0.1, 0.1, 3))
    'works'
    >>> verdict(Interval(-0.3, -0.5, 0.1, 3), Interval(0.0, -0.1, 0.1, 3))
    'does not work'
    """
    if gap_difference.ci_low > 0 or accuracy_difference.ci_high < 0:
        return "worse"
    if gap_difference.ci_high < 0 and accuracy_difference.ci_high >= 0:
        return "works"
    return "does not work"


def halves_gap(remedy_gap: Interval, baseline_gap: Interval) -> bool:
    """The issue's aim: the remedy's mean gap is at most half the baseline's (and the
    baseline has a gap to halve).

    >>> halves_gap(Interval(0.1, 0, 0.2, 3), Interval(0.3, 0.2, 0.4, 3))
    True
    """
    return baseline_gap.estimate > 0 and remedy_gap.estimate <= baseline_gap.estimate / 2
