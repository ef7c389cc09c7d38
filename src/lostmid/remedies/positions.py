"""Where the gold records sit, and the gold-position laws and loss weights built on it.

Pure numpy. Positions: ``g`` is the 0-indexed gold record (Liu et al.'s convention);
``x_g`` in (0, 1] is the 1-indexed centre of record g divided by the query position t
(the last prompt token, 1-indexed), the continuum coordinate of
:mod:`lostmid.theory.continuum`. With the records' token spans ``[a, b)`` (0-indexed,
half open) the centre is ``(a + b + 1) / 2`` (1-indexed), so

    x_g = (a_g + b_g + 1) / (2 t).

Laws of the gold index (probabilities over g = 0..pairs-1, summing to 1):

* ``valley_bump``: the fixed schedule, p_g ∝ 1 + boost * exp(-(x_g - 1/2)^2 / (2 width^2));
* ``inverse_density``: p_g ∝ 1 / rho_H(x_g), rho_H the continuous part of the theory's
  density (:func:`lostmid.theory.continuum.density`, the learning signal eta ∝ rho_H);
* ``adaptive``: p = (1 - mix) / pairs + mix * e / sum(e), e_g = 1 - accuracy_g (uniform
  while every position is right);
* ``middle_cover`` (a tilt of a law d, the data's): the least change of d that gives every
  middle record at least uniform coverage 1/G: middle records below 1/G are raised to it,
  the records above 1/G give the mass back in proportion to their excess over 1/G (none
  falls below it), the others keep d; the tilt is q/d;
* ``deficit`` (a tilt of d): the tilt under which the trained-on law is
  q = adaptive(accuracy, mix), mostly the deficit's shape (mix 0.95 by default): q/d;
* ``curriculum``: the middle half of the records (``pairs // 4 <= g < pairs - pairs // 4``)
  uniformly for the first ``fraction`` of the steps, then uniform over all; ``reverse``
  draws the other records first (``with_support`` when a row asks more queries than
  the phase has records).

Loss weights (``capped_mean_one``): w ∝ 1 / rho_H(x_g), scaled to mean 1 over the gold
law, then capped at ``cap`` with the excess spread over the uncapped records (the mean
stays 1, the order is kept).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lostmid.checks import check_positive, check_unit_interval
from lostmid.errors import UserError
from lostmid.typing import Float


def record_centres(spans: Sequence[tuple[int, int]], query: int) -> Float[np.ndarray, " G"]:
    """x_g = (a_g + b_g + 1) / (2 t): centre of each record (1-indexed) over the query
    position t (1-indexed); ``spans`` are 0-indexed half-open ``[a, b)`` token spans.

    >>> record_centres([(1, 3), (4, 6)], query=8).tolist()  # '{ab,cd}k': centres 2.5, 5.5
    [0.3125, 0.6875]
    """
    check_positive("query position", query)
    spans_a = np.asarray(spans, dtype=np.float64).reshape(-1, 2)
    if spans_a.size == 0 or np.any(spans_a[:, 1] <= spans_a[:, 0]) or spans_a.max() > query:
        raise UserError(f"record spans must be non-empty and end by the query position {query}")
    return (spans_a[:, 0] + spans_a[:, 1] + 1.0) / (2.0 * query)


def _probabilities(weights: np.ndarray) -> np.ndarray:
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 1 or weights.size == 0 or np.any(weights < 0) or weights.sum() <= 0:
        raise UserError("gold-position weights must be non-negative with a positive sum")
    return weights / weights.sum()


def valley_bump(
    x: Float[np.ndarray, " G"], boost: float = 2.0, width: float = 0.2
) -> Float[np.ndarray, " G"]:
    """The fixed schedule: p_g ∝ 1 + boost * exp(-(x_g - 1/2)^2 / (2 width^2)).

    >>> np.round(valley_bump(np.array([0.0, 0.5, 1.0]), boost=2.0, width=1e-3), 3).tolist()
    [0.2, 0.6, 0.2]
    """
    if boost < 0:
        raise UserError(f"boost must be >= 0, got {boost}")
    check_positive("width", width, integer=False)
    x = np.asarray(x, dtype=np.float64)
    return _probabilities(1.0 + boost * np.exp(-((x - 0.5) ** 2) / (2.0 * width**2)))


def inverse_density(
    x: Float[np.ndarray, " G"], layers: int, alpha: float
) -> Float[np.ndarray, " G"]:
    """1 / rho_H(x_g), unnormalised: rho_H(x) = sum_{k=1..H} b_k (ln 1/x)^(k-1)/(k-1)!,
    b_k = C(H, k) a^k (1 - a)^(H-k) (the recency delta at x = 1 excluded).

    >>> inverse_density(np.array([1.0]), layers=2, alpha=0.5).tolist()  # 1/b_1 = 1/(2 a (1-a))
    [2.0]
    """
    from lostmid.theory.continuum import density

    check_positive("layers", layers)
    if not 0.0 < alpha <= 1.0:
        raise UserError(f"--alpha must be in (0, 1], got {alpha}")
    return 1.0 / density(np.asarray(x, dtype=np.float64), layers, alpha)


def adaptive(accuracy: Float[np.ndarray, " G"], mix: float = 0.5) -> Float[np.ndarray, " G"]:
    """p = (1 - mix)/G + mix * e/sum(e), e_g = 1 - accuracy_g; uniform when sum(e) = 0.

    >>> adaptive(np.array([1.0, 0.5, 1.0, 0.5]), mix=0.5).tolist()
    [0.125, 0.375, 0.125, 0.375]
    """
    check_unit_interval("mix", mix)
    acc = np.asarray(accuracy, dtype=np.float64)
    if acc.ndim != 1 or acc.size == 0 or np.any((acc < 0) | (acc > 1)):
        raise UserError("accuracy by position must be numbers in [0, 1]")
    uniform = np.full(acc.size, 1.0 / acc.size)
    errors = 1.0 - acc
    if errors.sum() == 0:
        return uniform
    return (1.0 - mix) * uniform + mix * errors / errors.sum()


def _check_law(data: np.ndarray) -> np.ndarray:
    d = np.asarray(data, dtype=np.float64)
    if d.ndim != 1 or d.size == 0 or np.any(d < 0) or abs(d.sum() - 1.0) > 1e-9:
        raise UserError("the data's gold law must be probabilities (pairs,) summing to 1")
    return d


def tilt_towards(target: Float[np.ndarray, " G"], data: Float[np.ndarray, " G"]) -> np.ndarray:
    """The tilt r ∝ q/d under which the data's law d becomes ``target`` q (p ∝ d r = q),
    normalised to sum 1; records that d never draws must have q = 0 there (r = 0).

    >>> tilt_towards(np.array([0.5, 0.5]), np.array([0.8, 0.2])).tolist()
    [0.2, 0.8]
    """
    q, d = _probabilities(target), _check_law(data)
    unreachable = (d == 0) & (q > 0)
    if unreachable.any():
        g = int(np.flatnonzero(unreachable)[0])
        raise UserError(
            f"the data's gold law never draws record {g}, so no tilt of it can train that "
            "record; use --law replace"
        )
    r = np.divide(q, d, out=np.zeros_like(q), where=d > 0)
    return r / r.sum()


def middle_cover(data: Float[np.ndarray, " G"]) -> Float[np.ndarray, " G"]:
    """The tilt r (sums to 1) of the data's law d under which every middle record
    (:func:`middle_records`) gets at least uniform coverage u = 1/G, by the least change:

        q_g = u for middle records with d_g < u (raised);
        q_g = d_g - (d_g - u) * need / excess for records with d_g > u (they give back in
              proportion to their excess over u, so none falls below u);
        q_g = d_g otherwise;   need = sum_middle max(u - d_g, 0), excess = sum max(d_g - u, 0),

    and r = q/d (:func:`tilt_towards`). The per-record factor r_g / r_outer is derived from
    d, so it holds for any law (need <= excess always: sum_g (d_g - u) = 0). On uniform
    data r is uniform.

    >>> np.round(middle_cover(np.array([0.4, 0.1, 0.1, 0.4])), 4).tolist()  # tilted: 1/4 each
    [0.1, 0.4, 0.4, 0.1]
    """
    d = _check_law(data)
    u = 1.0 / d.size
    middle = middle_records(d.size) > 0
    low = middle & (d < u)
    need = float(np.sum(u - d[low]))
    excess = np.maximum(d - u, 0.0)
    q = d.copy()
    if need > 0:
        q[low] = u
        q = np.where(excess > 0, d - excess * (need / excess.sum()), q)
    return tilt_towards(q, d)


def deficit(
    accuracy: Float[np.ndarray, " G"], data: Float[np.ndarray, " G"], mix: float = 0.95
) -> Float[np.ndarray, " G"]:
    """The tilt r (sums to 1) of the data's law d under which the model trains on
    q = :func:`adaptive` (accuracy, mix): each record in proportion to its deficit
    e_g = 1 - accuracy_g, with (1 - mix) of uniform so every record keeps some draws.

    >>> np.round(deficit(np.array([1.0, 0.0]), np.array([0.5, 0.5]), mix=0.9), 3).tolist()
    [0.05, 0.95]
    """
    return tilt_towards(adaptive(accuracy, mix), data)


def middle_records(pairs: int) -> Float[np.ndarray, " G"]:
    """Indicator (pairs,) of the middle half: ``pairs // 4 <= g < pairs - pairs // 4``.

    >>> middle_records(8).tolist()
    [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    """
    check_positive("--pairs", pairs)
    g = np.arange(pairs)
    q = pairs // 4
    return ((g >= q) & (g < pairs - q)).astype(np.float64)


def curriculum(
    step: int, steps: int, pairs: int, fraction: float = 0.3, reverse: bool = False
) -> Float[np.ndarray, " G"]:
    """The gold law at ``step``: uniform over the middle half (``reverse``: over the
    other records) while ``step < fraction * steps``, then uniform over all records.

    >>> curriculum(0, 100, 4).tolist(), curriculum(30, 100, 4).tolist()
    ([0.0, 0.5, 0.5, 0.0], [0.25, 0.25, 0.25, 0.25])
    >>> curriculum(0, 100, 4, reverse=True).tolist()
    [0.5, 0.0, 0.0, 0.5]
    """
    check_unit_interval("fraction", fraction)
    middle = middle_records(pairs)
    if step >= fraction * steps:
        return np.full(pairs, 1.0 / pairs)
    chosen = 1.0 - middle if reverse else middle
    if chosen.sum() == 0:  # fewer than 4 pairs: no outer records
        return np.full(pairs, 1.0 / pairs)
    return _probabilities(chosen)


def with_support(probs: Float[np.ndarray, " G"], count: int, floor: float = 0.05) -> np.ndarray:
    """``probs`` unchanged when at least ``count`` entries are non-zero, else mixed with
    ``floor`` of the uniform law, so that ``count`` indices can be drawn without
    replacement (the later draws of a row then fall outside the law's support).

    >>> with_support(np.array([0.5, 0.5, 0.0, 0.0]), 3).tolist()
    [0.4875, 0.4875, 0.0125, 0.0125]
    """
    p = _probabilities(probs)
    if int((p > 0).sum()) >= count:
        return p
    return (1.0 - floor) * p + floor / p.size


def capped_mean_one(
    weights: Float[np.ndarray, " G"],
    cap: float = 4.0,
    probs: Float[np.ndarray, " G"] | None = None,
) -> Float[np.ndarray, " G"]:
    """Scale ``weights`` to mean 1 under ``probs`` (uniform by default), then cap at
    ``cap``: capped entries are set to ``cap`` and the others rescaled by one common
    factor so the mean stays 1 (repeated until nothing exceeds the cap).

    >>> np.round(capped_mean_one(np.array([1.0, 1.0, 10.0]), cap=2.0), 12).tolist()
    [0.5, 0.5, 2.0]
    >>> capped_mean_one(np.array([1.0, 3.0])).tolist()
    [0.5, 1.5]
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0 or np.any(w <= 0) or not np.all(np.isfinite(w)):
        raise UserError("loss weights must be finite and positive")
    if cap < 1.0:
        raise UserError(f"--cap must be >= 1 (the weights average 1), got {cap}")
    p = np.full(w.size, 1.0 / w.size) if probs is None else _probabilities(probs)
    w = w / float(p @ w)
    capped = np.zeros(w.size, dtype=bool)
    while np.any(w[~capped] > cap):
        capped |= w > cap
        free = ~capped
        if not free.any():
            return np.full(w.size, 1.0)
        # fix the capped ones at cap; scale the free ones so sum p w = 1
        scale = (1.0 - cap * p[capped].sum()) / float(p[free] @ w[free])
        w = np.where(capped, cap, w * scale)
    return w
