"""The shared fitting machinery: the exact spike share against brute force, pinning,
and the one-parameter search."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.compare.fitting import best_spike_share, fit_shape, pin_spike
from lostmid.compare.metrics import wasserstein1

RNG = np.random.default_rng(7)


def brute_force_share(shape: np.ndarray, measured: np.ndarray, target: int) -> float:
    """argmin over a fine grid of s of W1((1-s) g/sum g + s e_t, m), by the metric."""
    g = shape.copy()
    g[target - 1] = 0.0
    g = g / g.sum()
    grid = np.linspace(0.0, 1.0, 2001)
    losses = [
        wasserstein1(np.where(np.arange(g.size) == target - 1, s, (1 - s) * g), measured)
        for s in grid
    ]
    return float(grid[int(np.argmin(losses))])


@pytest.mark.parametrize("target", [12, 30, 2])
def test_best_spike_share_matches_brute_force(target: int) -> None:
    for _ in range(3):
        shape, measured = RNG.random(30) + 0.05, RNG.random(30) + 0.05
        measured[target:] = 0.0 if target < 30 else measured[target:]
        shape[target:] = 0.0 if target < 30 else shape[target:]
        s = best_spike_share(shape, measured, target)
        brute = brute_force_share(shape, measured, target)
        p = pin_spike(shape, s, target)
        q = pin_spike(shape, brute, target)
        # Same minimum W1 (the argmin may be a flat interval), never worse than the grid.
        assert wasserstein1(p, measured) <= wasserstein1(q, measured) + 1e-12
        assert wasserstein1(p, measured) == pytest.approx(wasserstein1(q, measured), abs=1e-3)


def test_pin_spike_keeps_the_shape_off_the_target() -> None:
    shape = RNG.random(20) + 0.1
    p = pin_spike(shape, 0.3, 7)
    assert p.sum() == pytest.approx(1.0) and p[6] == 0.3
    off = np.arange(20) != 6
    np.testing.assert_allclose(p[off] / p[off].sum(), shape[off] / shape[off].sum())


def test_fit_shape_without_parameter_and_with_one() -> None:
    j = np.arange(1, 101.0)
    measured = j**-0.9
    measured[-1] = 2.0
    flat = fit_shape(lambda _: np.zeros(100), measured, 100, "w1", "free")
    assert flat.theta is None and flat.loss > 0.05
    power = fit_shape(lambda p: -p * np.log(j), measured, 100, "w1", "free", bounds=(-1, 3))
    assert power.theta == pytest.approx(0.9, abs=1e-6) and power.loss < 1e-9
    # The search widens its interval to a guess outside the bounds.
    far = j**-4.5
    far[-1] = 1.0
    fit = fit_shape(lambda p: -p * np.log(j), far, 100, "log-lsq", "free", (0, 1), (4.5,))
    assert fit.theta == pytest.approx(4.5, abs=1e-9)
