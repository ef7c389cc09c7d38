"""Per-layer residual strengths and growth with depth in ``lostmid reproduce``.

:class:`LayerStrengths` pools each layer's measured strengths over seeds;
:func:`depth_growth` scores the per-layer profiles of the first seed against the theory
at H = l built from the first l layers' measured gains (:func:`depth_theory`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.compare.config import LOG_BINS
from lostmid.compare.metrics import ProfileComparison, compare_profiles
from lostmid.reproduce.stages import SeedMeasurement
from lostmid.theory import KERNELS, influence_row, positional_influence_row
from lostmid.typing import Float


@dataclass(frozen=True, eq=False)
class LayerStrengths:
    """The residual strength of each layer l = 1..H (index l-1), mean over seeds.

    Attributes:
        branch_gain: s_l, the attention branch's Jacobian gain.
        jacobian: a_l = s_l / (1 + s_l), what the predictions use.
        forward: the peer's forward ratio mean ||attn|| / (||x|| + ||attn||).
        mlp_gain: the MLP branch's Jacobian gain (incl. its norm).
        mlp_coherence: the mean Frobenius cosine of the MLP Jacobians across positions.
        samples, directions: what the gains were measured with, per seed.
    """

    branch_gain: Float[np.ndarray, " H"]
    jacobian: Float[np.ndarray, " H"]
    forward: Float[np.ndarray, " H"]
    mlp_gain: Float[np.ndarray, " H"]
    mlp_coherence: Float[np.ndarray, " H"]
    samples: int
    directions: int

    @classmethod
    def over(cls, runs: Sequence[SeedMeasurement]) -> LayerStrengths:
        def mean(values: Sequence[np.ndarray]) -> np.ndarray:
            return np.mean(np.stack(values), axis=0)

        return cls(
            branch_gain=mean([r.gains.gain for r in runs]),
            jacobian=mean([r.residual_strength for r in runs]),
            forward=mean([r.residual_strength_forward for r in runs]),
            mlp_gain=mean([r.gains.mlp_gain for r in runs]),
            mlp_coherence=mean([r.gains.mlp_coherence for r in runs]),
            samples=runs[0].gains.samples,
            directions=runs[0].gains.directions,
        )

    def rows(self) -> list[dict[str, Any]]:
        """One row per layer for the report's table."""
        return [
            {
                "layer": layer,
                "branch gain s_l": float(self.branch_gain[layer - 1]),
                "a_l = s/(1+s)": float(self.jacobian[layer - 1]),
                "a_l forward ratio": float(self.forward[layer - 1]),
                "MLP gain": float(self.mlp_gain[layer - 1]),
                "MLP coherence": float(self.mlp_coherence[layer - 1]),
            }
            for layer in range(1, self.branch_gain.size + 1)
        ]

    def record(self) -> dict[str, Any]:
        return {
            "branch_gain": self.branch_gain,
            "residual_strength": self.jacobian,
            "residual_strength_method": "jacobian",
            "residual_strength_forward": self.forward,
            "mlp_gain": self.mlp_gain,
            "mlp_coherence": self.mlp_coherence,
            "samples": self.samples,
            "directions": self.directions,
        }


DEPTH_KERNELS = ("positional", "jacobian", "rollout")
"""The theories of the growth-with-depth table: ``positional`` (jacobian kernel, the
first seed's per-position gains) and the uniform kernels with its a_l."""


@dataclass(frozen=True)
class DepthPoint:
    """The per-layer profile of layer l against the theory at H = l."""

    layer: int
    agreement: ProfileComparison

    def record(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "spearman": self.agreement.spearman,
            "wasserstein1": self.agreement.wasserstein1,
            "binned_wasserstein1": self.agreement.binned_wasserstein1,
            "log10_ptv_measured": self.agreement.log10_peak_to_valley_measured,
            "log10_ptv_theory": self.agreement.log10_peak_to_valley,
        }


def depth_theory(
    run: SeedMeasurement, kernel: str, layers: Sequence[int] | None = None
) -> Float[np.ndarray, "H L"]:
    """Row l-1: the theory at H = l from the first l layers of ``run``'s gains:
    ``positional`` (per-position gains, jacobian kernel) or a uniform kernel with a_l;
    for the 1-indexed ``layers`` only (NaN rows elsewhere), all when None."""
    length, depth = run.on.influence.size, run.gains.gain.size
    rows = np.full((depth, length), np.nan)
    for h in range(1, depth + 1) if layers is None else layers:
        if kernel == "positional":
            gains = run.gains.per_position
            assert gains is not None
            rows[h - 1] = positional_influence_row(gains[:h], kernel="jacobian")
        else:
            rows[h - 1] = influence_row(length, h, run.residual_strength[:h], kernel=kernel)
    return rows


@dataclass(frozen=True, eq=False)
class DepthGrowth:
    """The measured per-layer profiles of one seed against the theory at H = l.

    Attributes:
        points: per kernel, one :class:`DepthPoint` per measured layer.
        theory: per kernel, (H, L) the theory rows of the measured layers (NaN rows
            elsewhere), as :func:`depth_theory`.
    """

    points: Mapping[str, tuple[DepthPoint, ...]]
    theory: Mapping[str, Float[np.ndarray, "H L"]]


def depth_growth(run: SeedMeasurement) -> DepthGrowth | None:
    """Every measured layer of ``run`` against :func:`depth_theory`, per kernel; None
    when fewer than 2 layers were measured (growth needs several)."""
    per_layer = run.on.per_layer
    if per_layer is None:
        return None
    measured = [i + 1 for i in range(per_layer.shape[0]) if np.all(np.isfinite(per_layer[i]))]
    if len(measured) < 2:
        return None
    kernels = DEPTH_KERNELS if run.gains.per_position is not None else KERNELS
    theory = {kernel: depth_theory(run, kernel, measured) for kernel in kernels}
    points = {
        kernel: tuple(
            DepthPoint(
                layer,
                compare_profiles(rows[layer - 1], per_layer[layer - 1], bins=LOG_BINS),
            )
            for layer in measured
        )
        for kernel, rows in theory.items()
    }
    return DepthGrowth(points=points, theory=theory)
