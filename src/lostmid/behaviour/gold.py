"""Gold laws: how often each gold index is drawn for a training row.

With the gold index drawn uniformly every record is trained equally often; a law that
draws some indices more often than others (as natural text asks about its first and last
parts more often than its middle) is what gives a trained model a behavioural valley.
"""

from __future__ import annotations

import numpy as np

from lostmid.checks import check_positive
from lostmid.errors import UserError


def gold_distribution(spec: str, pairs: int) -> np.ndarray:
    """Probabilities (pairs,) of each gold index 0..pairs-1 under ``spec``.

    ``uniform``: 1/pairs each. ``power:A`` (the associative-recall literature's knob):
    the gap g = pairs - i between the queried pair i and the query has
    p(g) proportional to g^(A-1), so A = 1 is uniform, A < 1 favours recent pairs and
    A > 1 early ones.

    >>> gold_distribution("power:1", 4).tolist()
    [0.25, 0.25, 0.25, 0.25]
    >>> np.round(gold_distribution("power:0", 2), 3).tolist()
    [0.333, 0.667]
    """
    check_positive("--pairs", pairs)
    if spec == "uniform":
        return np.full(pairs, 1.0 / pairs)
    if spec.startswith("power:"):
        try:
            a = float(spec.removeprefix("power:"))
        except ValueError:
            a = float("nan")
        if not np.isfinite(a):
            raise UserError(f"gold distribution {spec!r}: give power:A with a number A")
        gaps = pairs - np.arange(pairs, dtype=np.float64)  # (pairs,) g = pairs .. 1
        weights = gaps ** (a - 1.0)
        return weights / weights.sum()
    raise UserError(f"gold distribution {spec!r} unknown; choose uniform or power:A")
