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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.errors import UserError

VERDICTS = ("works", "does not work", "worse")
RULE = (
    "works: the 95% interval of the gap difference (remedy - baseline, paired by seed) "
    "lies below 0 and that of the mean-accuracy difference has its upper end >= 0; worse: "
    "the gap interval lies above 0 or the accuracy interval below 0; else does not work"
)


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% interval over ``n`` seeds (±inf when n = 1)."""

    estimate: float
    ci_low: float
    ci_high: float
    n: int

    def record(self) -> dict[str, Any]:
        def finite(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "estimate": self.estimate,
            "ci_low": finite(self.ci_low),
            "ci_high": finite(self.ci_high),
            "n": self.n,
        }


def seed_interval(values: Sequence[float]) -> Interval:
    """Mean and 95% t interval of per-seed values (module docstring).

    >>> i = seed_interval([1.0, 2.0, 3.0])  # sd 1, t_{0.975,2} = 4.3027
    >>> round(i.estimate, 4), round(i.ci_low, 4), round(i.ci_high, 4)
    (2.0, -0.4841, 4.4841)
    >>> seed_interval([0.5]).ci_high
    inf
    """
    from scipy.stats import t as student_t

    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
        raise UserError("a seed interval needs at least one finite value per seed")
    mean = float(x.mean())
    if x.size == 1:
        return Interval(mean, -math.inf, math.inf, 1)
    half = float(student_t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return Interval(mean, mean - half, mean + half, int(x.size))


def paired_difference(remedy: Sequence[float], baseline: Sequence[float]) -> Interval:
    """The t interval of d_s = remedy_s - baseline_s over paired seeds.

    >>> round(paired_difference([0.2, 0.3, 0.1], [0.4, 0.4, 0.4]).estimate, 12)
    -0.2
    """
    a, b = np.asarray(remedy, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape:
        raise UserError("paired differences need the same seeds for remedy and baseline")
    return seed_interval((a - b).tolist())


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
