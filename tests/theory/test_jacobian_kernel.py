"""The jacobian kernel against a Monte Carlo of random linear networks.

Network: X_l = (1 - a_l) X_{l-1} + a_l A X_{l-1} W_l (rows are positions), W_l with
i.i.d. N(0, 1/d) entries, A uniform causal attention. The kernel claims
E ||dx^H_t / dx^0_j||_F^2 / d = influence_row(..., kernel="jacobian")[j]^2.
"""

from __future__ import annotations

import numpy as np

from lostmid.theory import influence_row


def sampled_squared_jacobian_norms(
    alphas: list[float], length: int, d: int, samples: int, rng: np.random.Generator
) -> np.ndarray:
    """(samples, length): ||dx^H_L / dx^0_j||_F^2 / d for independent networks."""
    a_mat = np.tril(np.ones((length, length))) / np.arange(1, length + 1)[:, None]
    # G[s, t, j] is the d x d block of dX_H[t] / dX_0[j] in row convention.
    g = np.broadcast_to(
        np.eye(length)[None, :, :, None, None] * np.eye(d), (samples, length, length, d, d)
    ).copy()
    for a in alphas:
        w = rng.standard_normal((samples, d, d)) / np.sqrt(d)
        mixed = np.einsum("ti,sijab->stjab", a_mat, g)
        g = (1 - a) * g + a * np.einsum("stjab,sbc->stjac", mixed, w)
    return (g[:, -1] ** 2).sum(axis=(-1, -2)) / d


def test_jacobian_kernel_matches_monte_carlo() -> None:
    rng = np.random.default_rng(0)
    alphas, length, d = [0.6, 0.3, 0.8], 6, 8
    draws = sampled_squared_jacobian_norms(alphas, length, d, 6000, rng)
    mean = draws.mean(axis=0)
    stderr = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    predicted = influence_row(length, 3, alphas, kernel="jacobian") ** 2
    z = np.abs(mean - predicted) / stderr
    assert z.max() < 4.5, (mean, predicted, z)
    # The rollout kernel has another shape: even with its best scale, the same data
    # reject it (compared as norms, stderr by the delta method).
    norm, norm_err = np.sqrt(mean), stderr / (2 * np.sqrt(mean))
    rollout = influence_row(length, 3, alphas, kernel="rollout")
    weights = 1 / norm_err**2
    scale = np.sum(weights * norm * rollout) / np.sum(weights * rollout**2)
    assert np.max(np.abs(norm - scale * rollout) / norm_err) > 10
