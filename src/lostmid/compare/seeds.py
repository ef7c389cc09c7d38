"""Per-seed values summarised over seeds: mean and 95% Student-t interval.

A metric measured once per seed (n seeds) is summarised by its mean and

    mean ± t_{0.975, n-1} * sd / sqrt(n),   sd the sample standard deviation (n - 1),

which is infinite for n = 1 (one seed says nothing about seed-to-seed variation).
Differences between two arms run on the same seeds are *paired*: the interval is the t
interval of the n per-seed differences d_s = a_s - b_s. Used by ``lostmid remedies``
and by the training and behaviour claims of ``lostmid reproduce``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.errors import UserError


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
