"""Fair scoring over several measurements of one model (seeds): the noise floor of the
measurement, and every candidate scored out of sample.

* :func:`noise_floor`: how well two independent measurements agree (every pair of
  seeds), the resolution of the measurement. A candidate that agrees with one
  measurement better than another measurement does is fitting noise; a claim the floor
  cannot reach is ``below resolution`` (:mod:`lostmid.compare.claims`).
* :func:`score_out_of_sample`: leave one seed out. Every fitted family (theory fits and
  baselines alike) is fitted on the pooled profile of the other seeds and scored on the
  held-out seed; a zero-parameter prediction is scored on each seed as it is (under the
  ``pinned`` spike policy its spike share comes from the other seeds, like every
  candidate's). Mean and spread over the held-out folds.

Pooling. Seeds are pooled by :func:`pool_profiles`: the mean of the profiles each
normalised to sum 1 (so every seed weighs the same whatever its overall scale), put
back on the mean total influence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lostmid.compare.config import LOG_BINS
from lostmid.compare.fitting import Family, pin_spike
from lostmid.compare.metrics import (
    AGREEMENT_METRICS,
    METRIC_RANGES,
    ProfileComparison,
    compare_profiles,
)
from lostmid.errors import UserError
from lostmid.stats.intervals import MeanSpread
from lostmid.typing import Float


def summarise(comparisons: Sequence[ProfileComparison]) -> dict[str, MeanSpread]:
    """Each agreement metric (:data:`~lostmid.compare.metrics.AGREEMENT_METRICS`) of
    several comparisons as mean and spread, their intervals clipped to the metric's
    range (:data:`~lostmid.compare.metrics.METRIC_RANGES`)."""
    return {
        m: MeanSpread.of([getattr(c, m) for c in comparisons], METRIC_RANGES[m])
        for m in AGREEMENT_METRICS
    }


@dataclass(frozen=True)
class NoiseFloor:
    """Agreement between independent measurements of one model, every pair of seeds.

    Attributes:
        seeds: number of measurements S.
        pairs: one :class:`ProfileComparison` per pair (i < j), in order.
        metrics: each agreement metric over the pairs, as :class:`MeanSpread`.
    """

    seeds: int
    pairs: tuple[ProfileComparison, ...]
    metrics: dict[str, MeanSpread] = field(repr=False)

    @property
    def wasserstein1(self) -> MeanSpread:
        return self.metrics["wasserstein1"]

    @property
    def spearman(self) -> MeanSpread:
        return self.metrics["spearman"]

    def record(self) -> dict[str, Any]:
        """The JSON form (``"noise_floor"`` in compare.json)."""
        return {
            "seeds": self.seeds,
            "pairs": len(self.pairs),
            "metrics": {name: value.record() for name, value in self.metrics.items()},
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> NoiseFloor:
        """Read back :meth:`record`: its summaries; the pairs' own comparisons are not in
        the record (``pairs`` is empty)."""
        return cls(int(record["seeds"]), (), _summaries(record["metrics"]))


def noise_floor(
    profiles: Sequence[np.ndarray] | Float[np.ndarray, "S L"],
    target: int | None = None,
    bins: int = LOG_BINS,
) -> NoiseFloor:
    """W1, Spearman and the other agreement metrics between every pair of independent
    measurements: the resolution of the measurement at this budget.

    Args:
        profiles: (S, L) one measured profile per seed, S >= 2.
        target: 1-indexed target t (default L).
        bins: log bins for the binned metrics.

    >>> floor = noise_floor([[3.0, 1.0, 2.0], [6.0, 2.0, 4.0], [3.0, 1.0, 2.0]])
    >>> floor.wasserstein1.mean, floor.spearman.mean, len(floor.pairs)
    (0.0, 1.0, 3)
    """
    rows = _stack(profiles)
    pairs = tuple(
        compare_profiles(rows[i], rows[j], target=target, bins=bins)
        for i in range(len(rows))
        for j in range(i + 1, len(rows))
    )
    return NoiseFloor(seeds=len(rows), pairs=pairs, metrics=summarise(pairs))


def pool_profiles(
    profiles: Sequence[np.ndarray] | Float[np.ndarray, "S L"],
) -> Float[np.ndarray, " L"]:
    """Seeds pooled: mean of the profiles normalised to sum 1, times the mean total.

    >>> pool_profiles([[1.0, 3.0], [4.0, 4.0]]).tolist()  # shapes 1:3 and 1:1
    [2.25, 3.75]
    """
    rows = np.asarray(profiles, dtype=np.float64)
    totals = rows.sum(axis=1)
    return (rows / totals[:, None]).mean(axis=0) * totals.mean()


@dataclass(frozen=True)
class OutOfSample:
    """One candidate scored on held-out seeds.

    Attributes:
        name: the candidate.
        folds: one :class:`ProfileComparison` per held-out seed, in seed order.
        parameters: what was fitted in each fold (empty for a prediction).
        metrics: each agreement metric over the folds, as :class:`MeanSpread`.
    """

    name: str
    folds: tuple[ProfileComparison, ...]
    parameters: tuple[dict[str, float], ...]
    metrics: dict[str, MeanSpread] = field(repr=False)

    def record(self) -> dict[str, Any]:
        """The JSON form (``"out_of_sample"`` of a candidate in compare.json)."""
        return {
            "folds": len(self.folds),
            "metrics": {name: value.record() for name, value in self.metrics.items()},
            "per_fold": [
                {"metrics": c.record(), "parameters": p}
                for c, p in zip(self.folds, self.parameters, strict=True)
            ],
        }

    @classmethod
    def from_record(cls, name: str, record: Mapping[str, Any]) -> OutOfSample:
        """Read back :meth:`record` of candidate ``name``."""
        folds = record["per_fold"]
        return cls(
            name,
            tuple(ProfileComparison.from_record(f["metrics"]) for f in folds),
            tuple(dict(f["parameters"]) for f in folds),
            _summaries(record["metrics"]),
        )


def _summaries(metrics: Mapping[str, Any]) -> dict[str, MeanSpread]:
    """Recorded summaries of agreement metrics, each with its metric's range."""
    return {m: MeanSpread.from_record(v, METRIC_RANGES[m]) for m, v in metrics.items()}


def score_out_of_sample(
    profiles: Sequence[np.ndarray] | Float[np.ndarray, "S L"],
    families: Sequence[Family] = (),
    *,
    predicted: Mapping[str, np.ndarray] | None = None,
    target: int | None = None,
    fit_metric: str = "w1",
    spike: str = "free",
    bins: int = LOG_BINS,
) -> dict[str, OutOfSample]:
    """Leave-one-seed-out scores of every candidate.

    For each held-out seed k: every family is fitted (``fit_metric``, ``spike``) on the
    pooled profile of the other seeds (:func:`pool_profiles`) and compared with seed k;
    every predicted profile is compared with seed k as it is (``spike="pinned"``: with
    its spike share set to that of the other seeds' pool, as the fitted ones get).

    Args:
        profiles: (S, L) one measured profile per seed, S >= 2.
        families: the fitted candidates (:class:`~lostmid.compare.fitting.Family`).
        predicted: zero-parameter candidates by name: (L,) one profile for every seed,
            or (S, L) one per seed (e.g. from that seed's measured a_l).
        target: 1-indexed t (default L).
        fit_metric, spike: see :mod:`lostmid.compare.fitting`.
        bins: log bins for the binned metrics.

    Returns:
        One :class:`OutOfSample` per candidate: the predicted ones first, then the
        families, in the order given.
    """
    rows = _stack(profiles)
    seeds, length = rows.shape
    t = length if target is None else target
    fixed = {name: per_seed(name, p, seeds, length) for name, p in (predicted or {}).items()}
    folds: dict[str, list[tuple[ProfileComparison, dict[str, float]]]] = {
        name: [] for name in (*fixed, *(f.name for f in families))
    }
    for k in range(seeds):
        train = pool_profiles(np.delete(rows, k, axis=0))
        held = rows[k]
        for name, seed_rows in fixed.items():
            profile = seed_rows[k]
            if spike == "pinned":
                profile = pin_spike(profile, float(train[t - 1] / train.sum()), t)
            folds[name].append((compare_profiles(profile, held, target=t, bins=bins), {}))
        for family in families:
            fit = family.fit(train, t, fit_metric=fit_metric, spike=spike)
            comparison = compare_profiles(fit.profile, held, target=t, bins=bins)
            folds[family.name].append((comparison, fit.parameters))
    return {
        name: OutOfSample(
            name=name,
            folds=tuple(c for c, _ in entries),
            parameters=tuple(p for _, p in entries),
            metrics=summarise([c for c, _ in entries]),
        )
        for name, entries in folds.items()
    }


def _stack(profiles: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
    """(S, L) float array of S >= 2 profiles of one length."""
    try:
        rows = np.asarray(profiles, dtype=np.float64)
    except ValueError:
        raise UserError("the measured profiles have different lengths; give one L") from None
    if rows.ndim != 2 or rows.shape[0] < 2:
        raise UserError(
            "the noise floor and out-of-sample scores need at least 2 independent "
            f"measurements (seeds) of one length, got shape {rows.shape}"
        )
    return rows


def per_seed(name: str, profile: np.ndarray, seeds: int, length: int) -> np.ndarray:
    """A zero-parameter candidate as (S, L) rows, one per seed, checked: (L,) is the same
    profile for every seed."""
    p = np.asarray(profile, dtype=np.float64)
    if p.shape not in ((length,), (seeds, length)) or not np.all(np.isfinite(p)) or np.any(p < 0):
        raise UserError(
            f"predicted candidate {name!r} must be ({length},) or ({seeds}, {length}) "
            f"finite non-negative values (one profile, or one per seed), got shape {p.shape}"
        )
    return np.broadcast_to(p, (seeds, length))
