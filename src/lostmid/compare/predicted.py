"""Zero-parameter candidates built from what was measured besides the profile, one row
per seed, and the seeds pooled into one measurement.

* ``predicted:<kernel>``: the uniform theory with each seed's measured residual
  strengths a_l (``residual_strength`` of measure.json: s/(1+s) from the branch's
  Jacobian gain, or the peer's forward ratio; ``residual_strength_method`` says which).
* ``predicted:positional`` (jacobian kernel) and ``predicted:positional-rollout``: the
  position-resolved theory with each seed's per-position gains (``gain_per_position``),
  through :func:`lostmid.theory.positional_influence_row`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.compare.fit import predict_theory
from lostmid.compare.inputs import MeasuredProfile
from lostmid.compare.scoring import pool_profiles
from lostmid.errors import UserError
from lostmid.theory import positional_influence_row


@dataclass(frozen=True)
class Prediction:
    """A zero-parameter candidate, one profile per seed.

    Attributes:
        kind: ``theory`` (a theory file) or ``predicted``.
        kernel: the theory kernel, or None.
        description: one line for tables and legends.
        parameters: what it was computed from.
        rows: (S, L) its profile for each seed (the same row repeated when it does not
            depend on the seed).
    """

    kind: str
    kernel: str | None
    description: str
    parameters: dict[str, Any]
    rows: np.ndarray


def predicted_theory(
    measurements: Sequence[MeasuredProfile], kernels: Sequence[str]
) -> dict[str, Prediction]:
    """``predicted:<kernel>`` from each seed's measured a_l, for each kernel."""
    if any(m.residual_strength is None for m in measurements):
        raise UserError(
            "--predict needs the measured residual strengths ('residual_strength' in "
            "measure.json); measure them or pass --theory instead"
        )
    first = measurements[0]
    method = first.residual_strength_method
    alphas = np.mean([m.residual_strength for m in measurements], axis=0)
    out = {}
    for kernel in kernels:
        rows = [
            predict_theory(m.length, m.residual_strength, kernel, target=m.target, mask=m.mask)
            for m in measurements
        ]
        out[f"predicted:{kernel}"] = Prediction(
            kind="predicted",
            kernel=kernel,
            description=f"theory, measured a_l ({method or 'method not recorded'}), "
            f"{kernel} kernel (nothing fitted)",
            parameters={
                "kernel": kernel,
                "layers": first.layers,
                "alphas": alphas.tolist(),
                "alpha": float(alphas.mean()),
                "residual_strength_method": method,
            },
            rows=np.stack([r.influence for r in rows]),
        )
    return out


def positional_predictions(
    measurements: Sequence[MeasuredProfile], kernels: Sequence[str]
) -> tuple[dict[str, Prediction], list[str]]:
    """``predicted:positional`` (jacobian) and ``predicted:positional-rollout`` from
    each seed's per-position gains, with a note instead when the gains are missing.
    Returns (predictions, notes)."""
    if any(m.gain_per_position is None for m in measurements):
        return {}, [
            "predicted:positional skipped: the measure.json files carry no "
            "'gain_per_position' (measure with per-position gains)"
        ]
    out = {}
    for kernel in kernels:
        name = "predicted:positional" + ("" if kernel == "jacobian" else f"-{kernel}")
        rows = [
            positional_influence_row(
                m.gain_per_position, kernel=kernel, mask=m.mask, target=m.target
            )
            for m in measurements
        ]
        out[name] = Prediction(
            kind="predicted",
            kernel=kernel,
            description=f"position-resolved theory, measured gains per position, {kernel} "
            "kernel (nothing fitted)",
            parameters={"kernel": kernel, "layers": measurements[0].layers},
            rows=np.stack([np.asarray(r, dtype=np.float64) for r in rows]),
        )
    return out, []


def pooled_measurement(measurements: Sequence[MeasuredProfile]) -> MeasuredProfile:
    """The seeds pooled (:func:`~lostmid.compare.scoring.pool_profiles`), with the
    standard error of that mean across seeds and the per-layer quantities averaged;
    one seed is returned as it is."""
    if len(measurements) == 1:
        return measurements[0]
    first = measurements[0]
    rows = np.stack([m.influence for m in measurements])
    shares = rows / rows.sum(axis=1, keepdims=True)
    stderr = shares.std(axis=0, ddof=1) / np.sqrt(len(rows)) * rows.sum(axis=1).mean()

    def mean(key: str) -> np.ndarray | None:
        values = [getattr(m, key) for m in measurements]
        return None if any(v is None for v in values) else np.mean(values, axis=0)

    methods = {m.residual_strength_method for m in measurements}
    return MeasuredProfile(
        influence=pool_profiles(rows),
        stderr=stderr,
        residual_strength=mean("residual_strength"),
        layers=first.layers,
        target=first.target,
        mask=first.mask,
        source=f"{len(measurements)} seeds pooled",
        residual_strength_method=methods.pop() if len(methods) == 1 else None,
        branch_gain=mean("branch_gain"),
        residual_strength_forward=mean("residual_strength_forward"),
        gain_per_position=mean("gain_per_position"),
    )
