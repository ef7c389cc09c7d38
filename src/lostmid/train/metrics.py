"""Spearman and W1 between position profiles: :mod:`lostmid.compare.metrics` when present.

Local fallbacks with the same definitions, so training works without the compare
package: both profiles normalised to sum 1, positions x_j = (j-1)/(L-1) in [0, 1],

    W1 = sum_{j<L} |P_j - Q_j| / (L - 1)   (P, Q the cumulative sums),
    Spearman = Pearson correlation of the (average-tied) ranks; nan if one is constant.
"""

from __future__ import annotations

import numpy as np

try:
    from lostmid.compare.metrics import spearman, wasserstein1
except ImportError:  # pragma: no cover - exercised only without lostmid.compare
    from scipy.stats import rankdata

    def spearman(a: np.ndarray, b: np.ndarray) -> float:
        """Spearman rank correlation over positions (nan when a profile is constant)."""
        ra, rb = rankdata(a), rankdata(b)
        ra, rb = ra - ra.mean(), rb - rb.mean()
        denom = float(np.sqrt((ra @ ra) * (rb @ rb)))
        return float(ra @ rb / denom) if denom > 0 else float("nan")

    def wasserstein1(a: np.ndarray, b: np.ndarray) -> float:
        """W1 between the normalised profiles on [0, 1] (the area between the CDFs)."""
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        gap = np.cumsum(a / a.sum())[:-1] - np.cumsum(b / b.sum())[:-1]
        return float(np.abs(gap).sum() / (a.size - 1))


__all__ = ["spearman", "wasserstein1"]
