"""Spearman's rank correlation, the one definition the package uses.

rho = Pearson(rank(a), rank(b)), tied values given the average of the ranks they span.
It is nan when either side is constant (its ranks have no variance) or has fewer than
two values: undefined, not zero. Records that must hold JSON-ready numbers write
:func:`finite_or_none` of it (nan -> None).

Ours rather than ``scipy.stats.spearmanr`` (which it equals to 1e-12, tests/stats/
test_ranks.py): scipy warns on a constant side, a case the package meets in ordinary runs
(a flat accuracy curve) and treats as undefined without a warning.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """1-based ranks, ties given the average of the ranks they span.

    >>> ranks([10.0, 30.0, 20.0, 20.0]).tolist()
    [1.0, 4.0, 2.5, 2.5]
    """
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    ordered = x[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], ordered.size]
    group_rank = (starts + ends + 1) / 2.0  # mean of (start+1 .. end)
    out = np.empty(x.size)
    out[order] = np.repeat(group_rank, ends - starts)
    return out


def pearson(u: np.ndarray, v: np.ndarray) -> float:
    """Pearson correlation; nan when either side has no variance."""
    du, dv = u - u.mean(), v - v.mean()
    denom = np.sqrt(np.dot(du, du) * np.dot(dv, dv))
    if denom == 0.0:
        return float("nan")
    return float(np.clip(np.dot(du, dv) / denom, -1.0, 1.0))


def spearman(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Spearman rank correlation of two equally long sequences (nan where undefined).

    >>> spearman([1.0, 2.0, 3.0], [10.0, 20.0, 35.0])
    1.0
    >>> spearman([1.0, 2.0, 3.0], [10.0, 30.0, 20.0])
    0.5
    >>> spearman([1.0, 1.0], [1.0, 2.0])
    nan
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"spearman needs two 1-D arrays of one length, got {x.shape}, {y.shape}")
    if x.size < 2:
        return float("nan")
    return pearson(ranks(x), ranks(y))


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float, or None when it is None, nan or infinite (JSON-ready).

    >>> finite_or_none(float("nan")) is None, finite_or_none(0.5)
    (True, 0.5)
    """
    if value is None or not math.isfinite(value):
        return None
    return float(value)
