"""Hand-made stage results whose right answer is known without re-coding any rule."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from lostmid.influence.gains import BranchGains
from lostmid.reproduce.stages import ProfileRun, SeedMeasurement


def branch_gains_of(per_position: np.ndarray, mlp_gain: float = 0.0) -> BranchGains:
    """BranchGains with the given (H, L) attention gains and a constant MLP gain."""
    layers, length = per_position.shape
    gain = per_position.mean(axis=1)
    mlp = np.full((layers, length), mlp_gain)
    return BranchGains(
        gain=gain,
        per_position=per_position,
        residual_strength=gain / (1 + gain),
        mlp_gain=mlp.mean(axis=1),
        mlp_gain_per_position=mlp,
        mlp_coherence=np.ones(layers),
        mlp_coherence_per_position=np.ones((layers, length)),
        samples=1,
        length=length,
        directions=1,
        exact=False,
        seed=0,
    )


def seed_measurement(
    seed: int,
    gains: np.ndarray,
    profile: np.ndarray,
    layer1: np.ndarray | None = None,
    off: np.ndarray | None = None,
    forward: np.ndarray | None = None,
    halves: tuple[np.ndarray, np.ndarray] | None = None,
) -> SeedMeasurement:
    """One seed's stage result: ``profile`` (L,) measured with the positional encoding
    (``off`` without it, default the same), ``layer1`` its layer-1 profile, and the
    per-position branch gains ``gains`` (H, L); ``halves``: the profiles of the two
    parts of the inputs (the first one is what ``off`` is compared with)."""
    layers, length = gains.shape
    per_layer = None
    if layer1 is not None:
        per_layer = np.full((layers, length), np.nan)
        per_layer[0] = layer1

    def run(influence: np.ndarray, rows: np.ndarray | None, parts: bool = False) -> ProfileRun:
        split = None if halves is None or not parts else np.stack([h**2 for h in halves])
        return ProfileRun(
            influence=influence,
            stderr=0.01 * influence,
            mean_sq=influence**2,
            per_layer=rows,
            halves=split,
            samples=2 if split is not None else 1,
            second=1 if split is not None else 0,
        )

    facts = {"seed": seed, "layers": layers, "hidden": 8, "family": "test"}
    return SeedMeasurement(
        model=facts,
        attention="eager",
        switch="rotary -> identity",
        on=run(profile, per_layer, parts=True),
        off=run(profile if off is None else off, None),
        gains=branch_gains_of(gains),
        residual_strength_forward=np.full(layers, 0.05) if forward is None else forward,
        seconds=0.0,
        gain_seconds=0.0,
    )


@pytest.fixture
def make_seed() -> Callable[..., SeedMeasurement]:
    return seed_measurement
