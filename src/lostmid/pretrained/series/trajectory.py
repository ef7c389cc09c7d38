"""The trajectory of a checkpoint series and the verdict "deepens along the series":
pure functions of saved profiles, fed constructed data in the tests.

Every checkpoint k of one training run and S random-init twins are measured on the same
N inputs (``profiles[k]``: (N, L); ``twins``: (S, N, L)). Each checkpoint is read
against the twins with :func:`lostmid.compare.pretraining.compare_pretraining`, the
study's readout, interval and twins: its *change* at each peak of
:data:`~lostmid.compare.pretraining.PEAKS` (log10 of the peak over the valley, the
checkpoint minus the twins, with its 95% jackknife interval over inputs) and where its
valley is (a fraction of the context, with its percentile interval).

The verdict "deepens along the series", stated before any run: the last checkpoint
against the first, paired over the same inputs (``compare_pretraining(last,
first[None])``: the first checkpoint stands where the twins stood, so the change is
last minus first with its jackknife interval over inputs), read at every peak with
:func:`~lostmid.compare.pretraining.deepening_verdict` (reproduced when the interval lies
above +0.5 decades, not reproduced when below, else inconclusive) and combined with
:func:`lostmid.stats.verdicts.across` (one word when every peak gives it; *not robust*
when one peak reproduces it and another does not; else inconclusive).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.compare.claims import Verdict
from lostmid.compare.pretraining import (
    DEEPENING,
    PEAKS,
    Estimate,
    PretrainingComparison,
    compare_pretraining,
)
from lostmid.errors import UserError
from lostmid.stats.verdicts import across
from lostmid.typing import Float

SERIES_RULE = (
    "the last checkpoint against the first on the same inputs, at each peak (largest, "
    "first position, first bin, last position): the change in log10 peak-to-valley (last "
    "minus first) with its 95% jackknife interval over inputs; each peak reproduced if the "
    f"interval lies above +{DEEPENING} (deeper by more than 10^{DEEPENING}), not reproduced "
    "if below, else inconclusive; the series' verdict is the peaks' common word, not robust "
    "when one peak reproduces it and another does not, else inconclusive"
)
"""The rule of "deepens along the series", in words (recorded with every verdict)."""


@dataclass(frozen=True)
class SeriesPoint:
    """One checkpoint of a series against the twins."""

    step: int
    model: str
    change: dict[str, Estimate]
    """Peak (:data:`PEAKS`) -> the change against the twins (log10, checkpoint - twins)."""
    valley: Estimate
    """Where the checkpoint's valley is: (position - 1) / (L - 1), a bin's centre."""
    comparison: PretrainingComparison

    def record(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "model": self.model,
            "change": {peak: e.record() for peak, e in self.change.items()},
            "valley_fraction": self.valley.record(),
            "comparison": self.comparison.record(),
        }


@dataclass(frozen=True)
class SeriesVerdict:
    """ "Deepens along the series": the last checkpoint against the first at each peak."""

    verdict: str
    rule: str
    change: dict[str, Estimate]
    """Peak -> the change in log10 peak-to-valley, last minus first."""
    peaks: dict[str, Verdict]
    """Peak -> :func:`~lostmid.compare.pretraining.deepening_verdict` of that change."""
    valley: tuple[Estimate, Estimate]
    """Where the valley is at the first and at the last checkpoint."""

    def record(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "rule": self.rule,
            "peaks": {
                peak: {"change": self.change[peak].record(), "verdict": v.verdict}
                for peak, v in self.peaks.items()
            },
            "valley_fraction": {"first": self.valley[0].record(), "last": self.valley[1].record()},
        }


def series_trajectory(
    profiles: Sequence[Float[np.ndarray, "N L"]],
    twins: Float[np.ndarray, "S N L"],
    steps: Sequence[int],
    models: Sequence[str] | None = None,
    *,
    seed: int = 0,
) -> list[SeriesPoint]:
    """Each checkpoint against the same twins on the same inputs (module doc).

    >>> from lostmid.compare.nulls import deepened, noisy_inputs, u_profile
    >>> rng = np.random.default_rng(0)
    >>> base = u_profile(64)
    >>> twins = np.stack([noisy_inputs(base, 6, 0.2, rng) for _ in range(2)])
    >>> series = [noisy_inputs(deepened(base, d), 6, 0.2, rng) for d in (0.0, 1.0)]
    >>> [round(p.change["largest"].value) for p in series_trajectory(series, twins, [0, 9])]
    [0, 1]
    """
    if len(profiles) != len(steps):
        raise UserError(f"{len(profiles)} checkpoints' profiles for {len(steps)} steps")
    names = list(models) if models is not None else [f"step {s}" for s in steps]
    points = []
    for step, name, rows in zip(steps, names, profiles, strict=True):
        c = compare_pretraining(rows, twins, seed=seed)
        change = {peak: c.difference[key] for peak, key in PEAKS.items()}
        points.append(SeriesPoint(int(step), name, change, c.pretrained["valley_fraction"], c))
    return points


def deepens_along(
    first: Float[np.ndarray, "N L"], last: Float[np.ndarray, "N L"], *, seed: int = 0
) -> SeriesVerdict:
    """ "Deepens along the series" from the first and the last checkpoint's profiles on
    the same inputs (module doc: :data:`SERIES_RULE`).

    >>> from lostmid.compare.nulls import deepened, noisy_inputs, u_profile
    >>> rng = np.random.default_rng(1)
    >>> base = u_profile(256)
    >>> early = noisy_inputs(base, 8, 0.1, rng)
    >>> deepens_along(early, noisy_inputs(deepened(base, 1.5), 8, 0.1, rng)).verdict
    'reproduced'
    >>> deepens_along(early, noisy_inputs(base, 8, 0.1, rng)).verdict
    'not reproduced'
    """
    c = compare_pretraining(last, np.asarray(first, dtype=np.float64)[None], seed=seed)
    peaks = c.peaks["deepens"]
    return SeriesVerdict(
        verdict=across(v.verdict for v in peaks.values()),
        rule=SERIES_RULE,
        change={peak: c.difference[key] for peak, key in PEAKS.items()},
        peaks=dict(peaks),
        valley=(c.twins["valley_fraction"], c.pretrained["valley_fraction"]),
    )
