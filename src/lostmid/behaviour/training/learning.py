"""When each record is learnt: half-accuracy times and the order of learning (numpy only).

One retrieval training run gives, at checkpoints k = 0..K-1 (tokens seen t_k, increasing),
the accuracy a_k(r) of each record r = 1..P as the gold record. From those curves:

* the **half-accuracy time** of record r: the first time its accuracy reaches half its
  final value, a_k(r) >= a_{K-1}(r) / 2, interpolated linearly in tokens between the
  checkpoint before and the one where it first does,

      T(r) = t_{k-1} + (h - a_{k-1}) / (a_k - a_{k-1}) (t_k - t_{k-1}),   h = a_{K-1}(r) / 2,

  T(r) = t_0 when already a_0(r) >= h, undefined when the final accuracy is 0;
* the **order of learning**: the least-squares slope of ln T(r) on the record's place
  x_r = (r - 1) / (P - 1) in [0, 1],

      B = slope of ln T on x = the log ratio of the fitted last to first half-time,

  so B > 0 means the first records are learnt first (behavioural primacy during
  learning), B = 0 no order, B < 0 recency; the slope of T itself on the record index
  (tokens per record) is reported beside it;
* the **midpoint checkpoint**: the first checkpoint whose mean accuracy over records
  reaches half the final mean; the accuracy by record there shows who leads mid-way.

A caveat measured in the depth dose-response (docs/BENCHMARKS.md): T(r) times learning
only when the record's final accuracy is well above the plateau models pass through
first (a value of the context picked by its form, about 0.2-0.3 with 12 records). When
a record ends partly learnt (final 0.5, say) half of it lies below that plateau and T(r)
times the plateau instead, so B can come out negative while the records are in fact
learnt first to last: read B with the final and midpoint accuracy by record.

The structural counterpart at initialisation is S = ln(I(1) / I(P)) with I the record
influence at step 0 (the dose of :mod:`lostmid.behaviour.dose.verdict`).

>>> tokens = np.array([0.0, 100.0, 200.0])
>>> half_time(tokens, np.array([0.0, 0.5, 1.0])), half_time(tokens, np.array([0.0, 1.0, 0.8]))
(100.0, 40.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.errors import UserError


def _curve(
    tokens: Sequence[float] | np.ndarray,
    accuracy: Sequence[float] | Sequence[Sequence[float]] | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(tokens, dtype=np.float64)
    a = np.asarray(accuracy, dtype=np.float64)
    if t.ndim != 1 or t.size < 2 or a.shape[0] != t.size:
        raise UserError(
            f"a learning curve needs at least 2 checkpoints and one accuracy per checkpoint "
            f"(got {t.size} times and {a.shape[0] if a.ndim else 0} accuracies)"
        )
    if not np.all(np.diff(t) > 0):
        raise UserError("checkpoint times must increase strictly")
    if not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
        raise UserError("accuracies must be finite numbers in [0, 1]")
    return t, a


def half_time(
    tokens: Sequence[float] | np.ndarray, accuracy: Sequence[float] | np.ndarray
) -> float | None:
    """T: the first time ``accuracy`` (K,) reaches half its final value (module
    docstring), interpolated in ``tokens`` (K,); None when the final accuracy is 0.

    >>> half_time([0, 10, 20, 30], [0.0, 0.1, 0.3, 0.4])  # h = 0.2: halfway from 10 to 20
    15.0
    >>> half_time([0, 10], [0.6, 1.0]), half_time([0, 10], [0.0, 0.0])
    (0.0, None)
    """
    t, a = _curve(tokens, accuracy)
    final = a[-1]
    if final <= 0:
        return None
    half = final / 2
    k = int(np.argmax(a >= half))  # the last checkpoint qualifies, so k is defined
    if k == 0:
        return float(t[0])
    rise = a[k] - a[k - 1]
    return float(t[k - 1] + (half - a[k - 1]) / rise * (t[k] - t[k - 1]))


def half_times(
    tokens: Sequence[float] | np.ndarray, accuracy: Sequence[Sequence[float]] | np.ndarray
) -> np.ndarray:
    """T(r) for every record: ``accuracy`` (K, P) -> (P,), NaN where undefined.

    >>> half_times([0, 10, 20], [[0.0, 0.0], [1.0, 0.2], [1.0, 1.0]]).tolist()
    [5.0, 13.75]
    """
    t, a = _curve(tokens, accuracy)
    if a.ndim != 2:
        raise UserError("accuracy by record must be a (checkpoints, records) table")
    out = [half_time(t, a[:, r]) for r in range(a.shape[1])]
    return np.array([math.nan if v is None else v for v in out])


def record_places(records: int) -> np.ndarray:
    """x_r = (r - 1) / (P - 1), r = 1..P: each record's place in [0, 1].

    >>> record_places(3).tolist()
    [0.0, 0.5, 1.0]
    """
    if records < 2:
        raise UserError(f"the order of learning needs at least 2 records, got {records}")
    return np.linspace(0.0, 1.0, records)


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    xc = x - x.mean()
    return float(np.dot(xc, y - y.mean()) / np.dot(xc, xc))


def learning_order(times: Sequence[float] | np.ndarray) -> float | None:
    """B: the least-squares slope of ln T(r) on x_r (module docstring); None when some
    T(r) is undefined (NaN) or not > 0 (learnt at step 0: nothing to order).

    >>> round(learning_order([100.0, 200.0, 400.0]), 6)  # T doubles per half: ln 4
    1.386294
    >>> learning_order([100.0, float("nan")]) is None
    True
    """
    t = np.asarray(times, dtype=np.float64)
    x = record_places(t.size)
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        return None
    return _slope(x, np.log(t))


def time_slope(times: Sequence[float] | np.ndarray) -> float | None:
    """The least-squares slope of T(r) on the record index r (tokens per record); None
    when some T(r) is undefined.

    >>> time_slope([100.0, 200.0, 300.0])
    100.0
    """
    t = np.asarray(times, dtype=np.float64)
    if t.size < 2:
        raise UserError(f"the order of learning needs at least 2 records, got {t.size}")
    if not np.all(np.isfinite(t)):
        return None
    return _slope(np.arange(1.0, t.size + 1), t)


def midpoint_index(mean_accuracy: Sequence[float] | np.ndarray) -> int | None:
    """The first checkpoint whose mean accuracy reaches half the final mean; None when
    the final mean is 0.

    >>> midpoint_index([0.0, 0.2, 0.6, 0.8]), midpoint_index([0.0, 0.0])
    (2, None)
    """
    a = np.asarray(mean_accuracy, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise UserError("the midpoint needs at least one checkpoint")
    if a[-1] <= 0:
        return None
    return int(np.argmax(a >= a[-1] / 2))


def structural_primacy(record_influence: Sequence[float] | np.ndarray) -> float:
    """S = ln(I(1) / I(P)): the log ratio of the first to the last record's influence.

    >>> round(structural_primacy([2.0, 1.0, 0.5]), 6)
    1.386294
    """
    i = np.asarray(record_influence, dtype=np.float64)
    if i.ndim != 1 or i.size < 2 or not np.all(np.isfinite(i)) or np.any(i <= 0):
        raise UserError("record influences must be at least 2 positive numbers")
    return float(math.log(i[0] / i[-1]))


def structural_span(record_influence: Sequence[float] | np.ndarray) -> float:
    """I(1) / min_r I(r): how far the record influence spans from the first record.

    >>> structural_span([4.0, 1.0, 2.0])
    4.0
    """
    i = np.asarray(record_influence, dtype=np.float64)
    structural_primacy(i)  # the same checks
    return float(i[0] / i.min())


def _finite_list(values: np.ndarray) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in np.asarray(values, dtype=np.float64)]


@dataclass(frozen=True)
class LearningReadouts:
    """What one run's learning curves say (module docstring), with the structure at init.

    Attributes:
        half_time: (P,) T(r) in tokens from argmax accuracy (NaN: undefined).
        half_time_probability: (P,) the same from the teacher-forced probability of the
            answer (a smooth accuracy), or None when it was not recorded.
        order, order_probability: B from each (None where undefined).
        time_slope: the slope of T(r) on r, tokens per record (argmax).
        midpoint: index of the midpoint checkpoint (None: nothing learnt).
        midpoint_accuracy: (P,) argmax accuracy by record there (None: nothing learnt).
        structural_primacy, structural_span: S and I(1) / min I at step 0.
    """

    half_time: np.ndarray
    half_time_probability: np.ndarray | None
    order: float | None
    order_probability: float | None
    time_slope: float | None
    midpoint: int | None
    midpoint_accuracy: np.ndarray | None
    structural_primacy: float
    structural_span: float

    @classmethod
    def of(
        cls,
        tokens: Sequence[float] | np.ndarray,
        accuracy: np.ndarray,
        initial_influence: Sequence[float] | np.ndarray,
        probability: np.ndarray | None = None,
    ) -> LearningReadouts:
        """From the tokens seen (K,), accuracy by record (K, P) at each checkpoint (the
        first at step 0), the record influence at step 0 (P,) and, optionally, the
        teacher-forced probability by record (K, P)."""
        acc = np.asarray(accuracy, dtype=np.float64)
        times = half_times(tokens, acc)
        soft = None if probability is None else half_times(tokens, probability)
        mid = midpoint_index(acc.mean(axis=1))
        return cls(
            half_time=times,
            half_time_probability=soft,
            order=learning_order(times),
            order_probability=None if soft is None else learning_order(soft),
            time_slope=time_slope(times),
            midpoint=mid,
            midpoint_accuracy=None if mid is None else acc[mid].copy(),
            structural_primacy=structural_primacy(initial_influence),
            structural_span=structural_span(initial_influence),
        )

    def record(self) -> dict[str, Any]:
        return {
            "half_time_tokens": _finite_list(self.half_time),
            "half_time_tokens_probability": None
            if self.half_time_probability is None
            else _finite_list(self.half_time_probability),
            "order": self.order,
            "order_probability": self.order_probability,
            "time_slope_tokens_per_record": self.time_slope,
            "midpoint_checkpoint": self.midpoint,
            "midpoint_accuracy": None
            if self.midpoint_accuracy is None
            else self.midpoint_accuracy.tolist(),
            "structural_primacy": self.structural_primacy,
            "structural_span": self.structural_span,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> LearningReadouts:
        def array(values: Sequence[float | None] | None) -> np.ndarray | None:
            if values is None:
                return None
            return np.array([math.nan if v is None else v for v in values], dtype=np.float64)

        half = array(record["half_time_tokens"])
        assert half is not None
        return cls(
            half_time=half,
            half_time_probability=array(record["half_time_tokens_probability"]),
            order=record["order"],
            order_probability=record["order_probability"],
            time_slope=record["time_slope_tokens_per_record"],
            midpoint=record["midpoint_checkpoint"],
            midpoint_accuracy=array(record["midpoint_accuracy"]),
            structural_primacy=record["structural_primacy"],
            structural_span=record["structural_span"],
        )
