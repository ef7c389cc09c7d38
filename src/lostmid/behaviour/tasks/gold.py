"""Gold laws: how often each gold index is drawn for a training row.

With the gold index drawn uniformly every record is trained equally often; a law that
draws some indices more often than others (as natural text asks about its first and last
parts more often than its middle) is what gives a trained model a behavioural valley.

Laws (``spec``, over the 0-indexed gold index i = 0..N-1 of N pairs):

* ``uniform``: p_i = 1/N;
* ``power:A``: p_i ∝ g^(A-1) with g = N - i the gap to the query (the associative-recall
  literature's knob; A < 1 favours recent pairs, A > 1 early ones);
* ``beta:A``: the mass of Beta(A, A) on the i-th of N equal bins of the normalised index,
  p_i = I_{(i+1)/N}(A, A) - I_{i/N}(A, A), I the regularised incomplete beta function
  (A = 1 uniform; A < 1 U-shaped: the first and last pairs asked most, as in natural
  text; A > 1 a hump in the middle);
* ``LAW+LAW+...``: the equal mixture of the laws (e.g. ``power:0.5+power:2``, the
  primacy + recency mixture of the recall literature).
"""

from __future__ import annotations

import numpy as np

from lostmid.checks import check_positive
from lostmid.errors import UserError

GOLD_HELP = "uniform | power:A | beta:A (A < 1: ends more often) | LAW+LAW (equal mixture)"


def _number(spec: str, prefix: str) -> float:
    try:
        value = float(spec.removeprefix(prefix))
    except ValueError:
        value = float("nan")
    if not np.isfinite(value):
        raise UserError(f"gold distribution {spec!r}: give {prefix}A with a number A")
    return value


def beta_bins(a: float, pairs: int) -> np.ndarray:
    """p_i = I_{(i+1)/N}(a, a) - I_{i/N}(a, a), i = 0..N-1 (N = ``pairs``): Beta(a, a)
    binned over the normalised index; shape (pairs,), sums to 1.

    >>> beta_bins(1.0, 4).tolist()
    [0.25, 0.25, 0.25, 0.25]
    >>> np.round(beta_bins(0.5, 2), 3).tolist(), np.round(beta_bins(0.5, 3), 3).tolist()
    ([0.5, 0.5], [0.392, 0.216, 0.392])
    """
    from scipy.special import betainc

    if not a > 0:
        raise UserError(f"gold distribution beta:A needs A > 0, got {a}")
    check_positive("--pairs", pairs)
    cdf = betainc(a, a, np.linspace(0.0, 1.0, pairs + 1))  # (pairs + 1,)
    probs = np.diff(cdf)
    return probs / probs.sum()


def gold_distribution(spec: str, pairs: int) -> np.ndarray:
    """Probabilities (pairs,) of each gold index 0..pairs-1 under ``spec`` (the laws of
    the module docstring).

    >>> gold_distribution("power:1", 4).tolist()
    [0.25, 0.25, 0.25, 0.25]
    >>> np.round(gold_distribution("power:0", 2), 3).tolist()
    [0.333, 0.667]
    >>> np.round(gold_distribution("power:0+power:2", 2), 3).tolist()
    [0.5, 0.5]
    >>> gold_distribution("power:1e12", 3).tolist()  # the limit, not 0/0
    [1.0, 0.0, 0.0]
    """
    check_positive("--pairs", pairs)
    if "+" in spec:
        parts = [gold_distribution(part.strip(), pairs) for part in spec.split("+")]
        return np.mean(parts, axis=0)
    if spec == "uniform":
        return np.full(pairs, 1.0 / pairs)
    if spec.startswith("power:"):
        a = _number(spec, "power:")
        gaps = pairs - np.arange(pairs, dtype=np.float64)  # (pairs,) g = pairs .. 1
        with np.errstate(over="ignore", under="ignore"):
            weights = gaps ** (a - 1.0)
        if not (np.all(np.isfinite(weights)) and weights.sum() > 0):  # past float64's range
            logs = (a - 1.0) * np.log(gaps)
            weights = np.exp(logs - logs.max())
        return weights / weights.sum()
    if spec.startswith("beta:"):
        return beta_bins(_number(spec, "beta:"), pairs)
    raise UserError(f"gold distribution {spec!r} unknown; choose {GOLD_HELP}")
