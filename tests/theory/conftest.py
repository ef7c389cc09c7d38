"""Brute-force references shared by the theory tests, written from the definitions."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest


def _dense_attention(mask: str, n: int) -> np.ndarray:
    """A[i, j] = 1/|allowed(i)| over the allowed positions (1-indexed i, j), cell by cell."""
    allowed = np.zeros((n, n), dtype=bool)
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            if mask == "causal":
                ok = j <= i
            elif mask == "bidirectional":
                ok = True
            elif mask.startswith("sliding:"):
                w = int(mask.split(":")[1])
                ok = i - w < j <= i
            else:
                p = int(mask.split(":")[1])
                ok = (i <= p and j <= p) or (i > p and j <= i)
            allowed[i - 1, j - 1] = ok
    return allowed / allowed.sum(axis=1, keepdims=True)


@pytest.fixture
def dense_attention() -> Callable[[str, int], np.ndarray]:
    """``dense_attention(mask_spec, n)``: the n x n uniform-attention matrix of a mask."""
    return _dense_attention
