"""Constructed studies for checking a pretrained-vs-twins readout before it decides.

A readout of an extreme (a valley, a peak) must be run on a null where one side is only
noisier, and on a true effect of known size, before it is trusted. This module makes
both, with the same expected profile for every model unless asked otherwise:

* :func:`u_profile`: an expected influence profile with a primacy tail, a valley in the
  middle and a recency anchor at the last position;
* :func:`deepened`: the same profile with its valley exactly ``decades`` deeper (the
  middle 70% of the context scaled down, the ends untouched), so that the true change of
  log10 peak-to-valley is ``decades`` under either readout of
  :mod:`lostmid.compare.pretraining`;
* :func:`noisy_inputs`: per-input profiles whose expectation is the given one, with
  multiplicative lognormal noise of ``sigma`` nats a position and rare ``spike``-fold
  spikes (the heavy tail of real pretrained profiles).

Used by the tests of :mod:`lostmid.compare.pretraining` and by
``benchmarks/bench_readout.py`` (the rates over many repeats).

>>> p = u_profile(64)
>>> int(np.argmin(p)), round(float(p.min()), 3)  # the valley at the middle, 0-indexed
(31, 2.829)
>>> from lostmid.compare.pretraining import readouts
>>> round(readouts(deepened(p, 1.0))["log10_ptv"] - readouts(p)["log10_ptv"], 6)
1.0
"""

from __future__ import annotations

import numpy as np

from lostmid.typing import Float

PLATEAU = (0.15, 0.85)
"""Where :func:`deepened` scales the profile in full (fractions of the context)."""


def u_profile(length: int, sink: float = 30.0, last: float = 20.0) -> Float[np.ndarray, " L"]:
    """A U-shaped expected profile: ``sink`` at position 1, ``last`` at position L, and
    between them 1/sqrt(x) + 1/sqrt(1 - x) (x = (j - 1/2) / L), lowest at the middle."""
    x = (np.arange(1, length + 1) - 0.5) / length
    profile = 1.0 / np.sqrt(x) + 1.0 / np.sqrt(1.0 - x)
    profile[0], profile[-1] = sink, last
    return profile


def deepened(profile: Float[np.ndarray, " L"], decades: float) -> Float[np.ndarray, " L"]:
    """``profile`` with the middle of the context (:data:`PLATEAU`) scaled by 10^-decades
    and the scale easing back to 1 at both ends (cosine ramps); the first and last
    positions are untouched. On :func:`u_profile` the valley sits inside the plateau, so
    the valley is exactly 10^decades lower and the peak unchanged."""
    length = profile.size
    x = (np.arange(1, length + 1) - 0.5) / length
    lo, hi = PLATEAU
    weight = np.ones(length)
    left, right = x < lo, x > hi
    weight[left] = 0.5 - 0.5 * np.cos(np.pi * x[left] / lo)
    weight[right] = 0.5 - 0.5 * np.cos(np.pi * (1.0 - x[right]) / (1.0 - hi))
    weight[0] = weight[-1] = 0.0
    return np.asarray(profile, dtype=np.float64) * 10.0 ** (-decades * weight)


def noisy_inputs(
    expected: Float[np.ndarray, " L"],
    inputs: int,
    sigma: float,
    rng: np.random.Generator,
    spike_rate: float = 0.0,
    spike: float = 30.0,
) -> Float[np.ndarray, "N L"]:
    """``inputs`` profiles whose expectation is ``expected``: each position times a mean-1
    lognormal factor exp(sigma z - sigma^2 / 2), and with probability ``spike_rate`` a
    further ``spike``-fold spike (the factor divided by its mean, 1 + (spike - 1) rate)."""
    base = np.asarray(expected, dtype=np.float64)
    z = rng.standard_normal((inputs, base.size))
    factor = np.exp(sigma * z - sigma * sigma / 2.0)
    if spike_rate > 0:
        hit = rng.random((inputs, base.size)) < spike_rate
        factor = factor * np.where(hit, spike, 1.0) / (1.0 + (spike - 1.0) * spike_rate)
    return base * factor
