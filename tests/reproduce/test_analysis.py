"""Seed averages, agreement spreads and the per-model analysis, on hand-made stage results."""

from __future__ import annotations

import numpy as np

from lostmid.reproduce.analysis import seed_average
from lostmid.reproduce.stages import ProfileRun


def run(mean_sq: list[float], strength: list[float]) -> ProfileRun:
    mean_sq_ = np.asarray(mean_sq)
    return ProfileRun(
        influence=np.sqrt(mean_sq_),
        stderr=np.full(mean_sq_.size, 0.1),
        mean_sq=mean_sq_,
        residual_strength=np.asarray(strength),
    )


def test_seed_average_is_root_mean_square() -> None:
    avg = seed_average([run([4.0, 1.0], [0.2]), run([16.0, 9.0], [0.4])])
    np.testing.assert_allclose(avg.influence, np.sqrt([10.0, 5.0]))
    np.testing.assert_allclose(avg.residual_strength, [0.3])
    # s.e. of the mean of squares: sd/sqrt(2) = |a-b|/2; delta method: / (2 sqrt(mean))
    np.testing.assert_allclose(avg.stderr, np.array([6.0, 4.0]) / (2 * np.sqrt([10.0, 5.0])))
