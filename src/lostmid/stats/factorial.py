"""Depth against rank: correctness in a factorial needle design, modelled with items as
clusters, and the verdicts its rules give.

The model (a GEE: binomial, logit link, exchangeable correlation within an item, robust
sandwich covariance; Liang and Zeger 1986, via statsmodels)::

    logit P(correct) = b0 + b_middle [rank = middle] + b_last [rank = last]
                       + b_depth d + b_end e

with ``d`` the gold's depth as a fraction (0 = start of the haystack, 1 = end) and
``e = min(d, 1 - d)`` its distance to the nearer end. Rank and depth enter together, so
each effect below is the other one held: the contrasts are averages, over the design's
examples, of the model's probabilities with one factor set and the other left at each
example's own value (average marginal effects, accuracy units), with 95% intervals by
the delta method on the robust covariance:

* ``depth_effect``: the ends against the middle by depth, rank held,
  ``(P(d = 0) + P(d = 1)) / 2 - P(d = 1/2)``: positive is a valley made by depth;
* ``rank_effect``: the outer ranks against the middle one, depth held,
  ``(P(first) + P(last)) / 2 - P(middle)``: positive is a valley made by rank;
* ``depth_tilt`` ``P(d = 1) - P(d = 0)`` and ``rank_tilt`` ``P(last) - P(first)``:
  recency by depth and by rank, reported without a verdict.

The rules, stated before any data was seen (:func:`valley_verdict`; the words are
:mod:`lostmid.stats.verdicts`'s):

* "depth makes a valley beyond rank": *supported* when ``depth_effect``'s interval lies
  above 0; *not supported* when it lies below 0 or inside [-margin, +margin] (the
  run's ``--margin``, accuracy units: too small to count); else *inconclusive*.
* "rank makes a valley beyond depth": the same rule on ``rank_effect``.
* A fit that does not converge, or data with one outcome only, gives infinite
  intervals: both verdicts *inconclusive*.

>>> rng = np.random.default_rng(0)
>>> items = np.repeat(np.arange(80), 11)
>>> cells = [(0, "first")] + [(d, r) for d in (25, 50, 75) for r in RANKS] + [(100, "last")]
>>> depth = np.tile([d for d, _ in cells], 80); rank = np.tile([r for _, r in cells], 80)
>>> middle = 1 - 2 * np.abs(depth / 100 - 0.5)  # 0 at the ends, 1 in the middle
>>> correct = rng.random(depth.size) < 1 / (1 + np.exp(-(1.5 - 3 * middle)))
>>> fit = fit_factorial(depth, rank, correct, items, margin=0.05)
>>> fit.depth_verdict, fit.rank_verdict != "supported"
('supported', True)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.stats.intervals import Interval
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED

RANKS = ("first", "middle", "last")
TERMS = ("intercept", "rank_middle", "rank_last", "depth", "end_distance")
FORMULA = (
    "logit P(correct) = b0 + b_middle [rank = middle] + b_last [rank = last] + b_depth d "
    "+ b_end min(d, 1 - d), d = depth / 100"
)
METHOD = (
    "GEE (statsmodels): binomial, logit link, exchangeable correlation within an item, "
    "robust sandwich covariance; contrasts are average marginal effects in accuracy units "
    "with delta-method 95% intervals"
)
RULES = {
    "depth_effect": "(P(depth 0) + P(depth 100)) / 2 - P(depth 50), each example's rank "
    "held: 'depth makes a valley beyond rank' is supported when its 95% interval lies above "
    "0, not supported when it lies below 0 or inside [-margin, +margin], else inconclusive",
    "rank_effect": "(P(first) + P(last)) / 2 - P(middle), each example's depth held: 'rank "
    "makes a valley beyond depth', the same rule",
    "tilts": "depth_tilt P(depth 100) - P(depth 0) and rank_tilt P(last) - P(first): "
    "reported, no verdict",
    "fit": "a fit that does not converge, or one outcome only, gives infinite intervals "
    "(inconclusive)",
}
Z95 = 1.959963984540054


def valley_verdict(effect: Interval, margin: float) -> str:
    """The rule of a valley contrast (module doc): *supported* above 0, *not supported*
    below 0 or inside [-margin, +margin], else *inconclusive*.

    >>> valley_verdict(Interval(0.2, 0.1, 0.3), 0.05)
    'supported'
    >>> valley_verdict(Interval(0.0, -0.03, 0.04), 0.05)
    'not supported'
    >>> valley_verdict(Interval(0.05, -0.1, 0.2), 0.05)
    'inconclusive'
    """
    sign = effect.sign(margin)
    return {"+": SUPPORTED, "-": NOT_SUPPORTED, "=": NOT_SUPPORTED}.get(sign, INCONCLUSIVE)


@dataclass(frozen=True)
class FactorialFit:
    """The fitted model's contrasts (accuracy units), its coefficients (log-odds) and
    the verdicts of the module's rules."""

    depth_effect: Interval
    rank_effect: Interval
    depth_tilt: Interval
    rank_tilt: Interval
    coefficients: dict[str, Interval]
    depth_verdict: str
    rank_verdict: str
    n: int
    clusters: int
    converged: bool
    correlation: float | None

    def record(self) -> dict[str, Any]:
        def effect(i: Interval, verdict: str | None = None) -> dict[str, Any]:
            out = {**i.record(), "verdict": verdict} if verdict else i.record()
            return out

        return {
            "formula": FORMULA,
            "method": METHOD,
            "n": self.n,
            "clusters": self.clusters,
            "converged": self.converged,
            "within_item_correlation": self.correlation,
            "coefficients": {k: v.record() for k, v in self.coefficients.items()},
            "depth_effect": effect(self.depth_effect, self.depth_verdict),
            "rank_effect": effect(self.rank_effect, self.rank_verdict),
            "depth_tilt": effect(self.depth_tilt),
            "rank_tilt": effect(self.rank_tilt),
            "rules": dict(RULES),
        }


def design_matrix(depth_pct: np.ndarray, rank: Sequence[str]) -> np.ndarray:
    """(N, 5) columns :data:`TERMS` for depths in % and ranks.

    >>> design_matrix(np.array([25.0]), ["last"]).tolist()
    [[1.0, 0.0, 1.0, 0.25, 0.25]]
    """
    d = np.asarray(depth_pct, dtype=float) / 100.0
    r = np.asarray(rank)
    return np.column_stack(
        [np.ones_like(d), r == "middle", r == "last", d, np.minimum(d, 1 - d)]
    ).astype(float)


def _contrast(
    beta: np.ndarray, cov: np.ndarray, parts: Sequence[tuple[float, np.ndarray]]
) -> Interval:
    """mean over rows of sum_k w_k P(X_k beta), with the delta method's 95% interval."""
    value, grad = 0.0, np.zeros_like(beta)
    for weight, x in parts:
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        value += weight * float(p.mean())
        grad += weight * (x * (p * (1 - p))[:, None]).mean(axis=0)
    se = math.sqrt(max(float(grad @ cov @ grad), 0.0))
    low, high = max(value - Z95 * se, -1.0), min(value + Z95 * se, 1.0)
    return Interval(value, low, high)


def _unknown() -> Interval:
    return Interval(math.nan, -math.inf, math.inf)


def fit_factorial(
    depth_pct: np.ndarray | Sequence[float],
    rank: Sequence[str],
    correct: np.ndarray | Sequence[bool],
    items: Sequence[Any] | np.ndarray,
    *,
    margin: float,
) -> FactorialFit:
    """Fit the module's model to one metric's outcomes of the factorial cells and judge
    its rules.

    Args:
        depth_pct: (N,) the gold's depth of each example, in %.
        rank: (N,) its rank among the needles: first, middle or last.
        correct: (N,) bool outcomes.
        items: (N,) the item of each example (any hashable): the clusters.
        margin: the accuracy difference that counts as none.
    """
    depth = np.asarray(depth_pct, dtype=float)
    y = np.asarray(correct, dtype=float)
    x = design_matrix(depth, rank)
    groups = np.unique(np.asarray([str(i) for i in items]), return_inverse=True)[1]
    clusters = int(groups.max()) + 1 if groups.size else 0
    fitted = _gee(y, x, groups)
    if fitted is None:
        unknown = _unknown()
        return FactorialFit(
            unknown, unknown, unknown, unknown, {t: _unknown() for t in TERMS},
            INCONCLUSIVE, INCONCLUSIVE, int(y.size), clusters, False, None,
        )  # fmt: skip
    beta, cov, converged, rho = fitted

    def at(*, rank_of: str | None = None, depth_of: float | None = None) -> np.ndarray:
        r = np.asarray(rank) if rank_of is None else np.full(y.size, rank_of)
        d = depth if depth_of is None else np.full(y.size, depth_of)
        return design_matrix(d, list(r))

    depth_effect = _contrast(
        beta, cov, [(0.5, at(depth_of=0.0)), (0.5, at(depth_of=100.0)), (-1.0, at(depth_of=50.0))]
    )
    rank_effect = _contrast(
        beta, cov, [(0.5, at(rank_of="first")), (0.5, at(rank_of="last")),
                    (-1.0, at(rank_of="middle"))]
    )  # fmt: skip
    depth_tilt = _contrast(beta, cov, [(1.0, at(depth_of=100.0)), (-1.0, at(depth_of=0.0))])
    rank_tilt = _contrast(beta, cov, [(1.0, at(rank_of="last")), (-1.0, at(rank_of="first"))])
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    coefficients = {
        t: Interval(float(b), float(b - Z95 * s), float(b + Z95 * s))
        for t, b, s in zip(TERMS, beta, se, strict=True)
    }
    return FactorialFit(
        depth_effect=depth_effect,
        rank_effect=rank_effect,
        depth_tilt=depth_tilt,
        rank_tilt=rank_tilt,
        coefficients=coefficients,
        depth_verdict=valley_verdict(depth_effect, margin),
        rank_verdict=valley_verdict(rank_effect, margin),
        n=int(y.size),
        clusters=clusters,
        converged=converged,
        correlation=rho,
    )


def _gee(
    y: np.ndarray, x: np.ndarray, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool, float | None] | None:
    """(coefficients, robust covariance, converged, within-item correlation), or None
    when the data cannot be fitted (one outcome only, too few clusters, a singular
    design, a fit that does not converge or gives a non-finite covariance)."""
    if y.size == 0 or y.min() == y.max() or len(np.unique(groups)) < 2:
        return None
    if np.linalg.matrix_rank(x) < x.shape[1]:
        return None
    import statsmodels.api as sm
    from statsmodels.genmod.cov_struct import Exchangeable

    model = sm.GEE(y, x, groups=groups, family=sm.families.Binomial(), cov_struct=Exchangeable())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = model.fit(maxiter=100)
        except (ValueError, np.linalg.LinAlgError, FloatingPointError):
            return None
    beta = np.asarray(result.params, dtype=float)
    cov = np.asarray(result.cov_params(), dtype=float)
    converged = not any("converge" in str(w.message).lower() for w in caught)
    if not (converged and np.all(np.isfinite(beta)) and np.all(np.isfinite(cov))):
        return None
    rho = float(model.cov_struct.dep_params)
    return beta, cov, converged, rho if math.isfinite(rho) else None
