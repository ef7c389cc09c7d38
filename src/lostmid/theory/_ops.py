"""Arithmetic on non-negative vectors in two representations: plain float64 and log.

The mask operators are written once against this interface, so the same code computes
an influence row in float64 (fast) or in the log domain (entries far below 1e-300 stay
exact in relative terms). All sums here are of non-negative terms, so nothing cancels.
"""

from __future__ import annotations

import numpy as np

Array = np.ndarray


class LinearOps:
    """Values are stored as they are."""

    log = False
    zero = 0.0
    one = 1.0

    @staticmethod
    def encode(x: Array | float) -> Array:
        return np.asarray(x, dtype=np.float64)

    @staticmethod
    def scale(x: Array, c: Array | float) -> Array:
        """x * c, with c already encoded."""
        return x * c

    @staticmethod
    def add(x: Array, y: Array | float) -> Array:
        return x + y

    @staticmethod
    def total(x: Array, axis: int | None = None) -> Array:
        return np.sum(x, axis=axis)

    @staticmethod
    def suffix_sum(x: Array, axis: int = -1) -> Array:
        """out[j] = sum_{i >= j} x[i] along ``axis``."""
        flipped = np.flip(x, axis=axis)
        return np.flip(np.cumsum(flipped, axis=axis), axis=axis)

    @staticmethod
    def prefix_sum(x: Array, axis: int = -1) -> Array:
        return np.cumsum(x, axis=axis)

    @staticmethod
    def square(x: Array) -> Array:
        return x * x

    @staticmethod
    def sqrt(x: Array) -> Array:
        return np.sqrt(x)


class LogOps:
    """Values are stored as natural logs; zero is -inf."""

    log = True
    zero = -np.inf
    one = 0.0

    @staticmethod
    def encode(x: Array | float) -> Array:
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(x, dtype=np.float64))

    @staticmethod
    def scale(x: Array, c: Array | float) -> Array:
        return x + c

    @staticmethod
    def add(x: Array, y: Array | float) -> Array:
        return np.logaddexp(x, y)

    @staticmethod
    def total(x: Array, axis: int | None = None) -> Array:
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore"):
            out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
        return out.squeeze(axis) if axis is not None else out.reshape(())

    @staticmethod
    def suffix_sum(x: Array, axis: int = -1) -> Array:
        flipped = np.flip(x, axis=axis)
        return np.flip(np.logaddexp.accumulate(flipped, axis=axis), axis=axis)

    @staticmethod
    def prefix_sum(x: Array, axis: int = -1) -> Array:
        return np.logaddexp.accumulate(x, axis=axis)

    @staticmethod
    def square(x: Array) -> Array:
        return 2.0 * x

    @staticmethod
    def sqrt(x: Array) -> Array:
        return 0.5 * x


Ops = type[LinearOps] | type[LogOps]
