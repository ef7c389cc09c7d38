"""Zero-parameter candidates built from what was measured besides the profile, one row
per seed, and the seeds pooled into one measurement.

* ``predicted:<kernel>``: the uniform theory with each seed's measured residual
  strengths a_l (``residual_strength`` of measure.json: s/(1+s) from the branch's
  Jacobian gain, or the peer's forward ratio; ``residual_strength_method`` says which).
* ``predicted:jacobian-forward``: the same (jacobian kernel) with the peer's forward
  ratio (``residual_strength_forward``) as a_l, when the files carry it: what that
  quantity predicts.
* ``predicted:positional`` (jacobian kernel) and ``predicted:positional-rollout``: the
  position-resolved theory with each seed's per-position gains (``gain_per_position``),
  through :func:`lostmid.theory.positional_influence_row`, with everything else the
  measurement has: the MLP's per-position gain and coherence
  (``mlp_gain_per_position``, ``mlp_coherence_per_position``) and each layer's mask
  (``layer_masks``) when the file carries them.

Coherence as measured is a mean cosine, so Monte Carlo noise can put it slightly below
0 or above 1; the kernel's model needs c in [0, 1], so it is clipped there, and where
it is undefined (a zero MLP: the gain is 0 and c plays no part) it is set to 1.

With layers of different masks (Gemma2), ``predicted:<kernel>`` is computed with the
position-resolved kernel and each layer's mask, with gains s_l = a_l / (1 - a_l) equal
at every position: the uniform theory with those masks (I + s A = (1 + s)((1 - a) I +
a A), the factor drops out of the normalised row).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lostmid.compare.fit import predict_theory
from lostmid.compare.scoring import pool_profiles
from lostmid.errors import UserError
from lostmid.influence.record import MeasureRecord
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
    measurements: Sequence[MeasureRecord], kernels: Sequence[str]
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
        rows = [_uniform_theory_row(m, kernel) for m in measurements]
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
            rows=np.stack(rows),
        )
    return out


def forward_ratio_prediction(measurements: Sequence[MeasureRecord]) -> dict[str, Prediction]:
    """``predicted:jacobian-forward``: the uniform theory (jacobian kernel) with the peer's
    forward ratio as a_l, to show what that quantity predicts (empty when a measurement
    lacks it)."""
    if any(m.residual_strength_forward is None for m in measurements):
        return {}
    rows = [
        _uniform_theory_row(replace(m, residual_strength=m.residual_strength_forward), "jacobian")
        for m in measurements
    ]
    alphas = np.mean([m.residual_strength_forward for m in measurements], axis=0)
    return {
        "predicted:jacobian-forward": Prediction(
            kind="predicted",
            kernel="jacobian",
            description="theory, the peer's forward ratio as a_l, jacobian kernel (nothing fitted)",
            parameters={
                "kernel": "jacobian",
                "layers": measurements[0].layers,
                "alphas": alphas.tolist(),
                "alpha": float(alphas.mean()),
                "residual_strength_method": "forward",
            },
            rows=np.stack(rows),
        )
    }


def _uniform_theory_row(m: MeasureRecord, kernel: str) -> np.ndarray:
    """The theory row with the measured a_l under the measured masks (see the module
    docstring for layers whose masks differ)."""
    assert m.residual_strength is not None
    masks = m.layer_masks
    if masks is None or len(set(masks)) == 1:
        mask = m.mask if masks is None else masks[0]
        return predict_theory(
            m.length, m.residual_strength, kernel, target=m.target, mask=mask
        ).influence
    a = np.asarray(m.residual_strength, dtype=np.float64)
    if np.any(a >= 1):
        raise UserError(
            "predicting layers with different masks needs every residual strength below 1, "
            f"got {a.max():g}; measure with --strength jacobian"
        )
    gains = np.repeat((a / (1 - a))[:, None], m.length, axis=1)  # (H, L)
    return positional_influence_row(gains, kernel=kernel, mask=list(masks), target=m.target)


def positional_predictions(
    measurements: Sequence[MeasureRecord], kernels: Sequence[str]
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
    first = measurements[0]
    with_mlp = all(m.mlp_gain_per_position is not None for m in measurements)
    for mlp in (False, True) if with_mlp else (False,):
        for kernel in kernels:
            name = "predicted:positional" + ("-mlp" if mlp else "")
            name += "" if kernel == "jacobian" else f"-{kernel}"
            rows = [positional_row(m, kernel, mlp=mlp) for m in measurements]
            uses = ["gains per position"]
            if mlp:
                uses.append(
                    "MLP gain"
                    + (" and coherence" if first.mlp_coherence_per_position is not None else "")
                )
            if first.layer_masks is not None:
                uses.append("layer masks")
            out[name] = Prediction(
                kind="predicted",
                kernel=kernel,
                description=f"position-resolved theory, measured {', '.join(uses)}, {kernel} "
                "kernel (nothing fitted)",
                parameters={
                    "kernel": kernel,
                    "layers": first.layers,
                    "uses": uses,
                    "layer_masks": None if first.layer_masks is None else list(first.layer_masks),
                },
                rows=np.stack([np.asarray(r, dtype=np.float64) for r in rows]),
            )
    return out, []


def positional_row(m: MeasureRecord, kernel: str, *, mlp: bool = True) -> np.ndarray:
    """The position-resolved theory row of one measurement: its per-position gains and
    layer masks, and (``mlp``) its MLP gain and coherence when it has them (float64,
    sums to 1)."""
    if m.gain_per_position is None:
        raise UserError(f"{m.source or 'the measurement'} has no 'gain_per_position'")
    coherence = m.mlp_coherence_per_position
    mlp_gain = m.mlp_gain_per_position if mlp else None
    if mlp_gain is None:
        coherence = None  # the kernel takes a coherence only with an MLP gain
    elif coherence is not None:
        coherence = np.clip(np.nan_to_num(coherence, nan=1.0), 0.0, 1.0)
    row = positional_influence_row(
        m.gain_per_position,
        kernel=kernel,
        mask=m.mask if m.layer_masks is None else list(m.layer_masks),
        target=m.target,
        mlp_gain=mlp_gain,
        mlp_coherence=coherence,
    )
    return np.asarray(row, dtype=np.float64)


def pooled_measurement(measurements: Sequence[MeasureRecord]) -> MeasureRecord:
    """The seeds pooled (:func:`~lostmid.compare.scoring.pool_profiles`), with the
    standard error of that mean across seeds and every per-layer and per-position
    quantity averaged (:meth:`MeasureRecord.pooled_with`); one seed is returned as it is."""
    if len(measurements) == 1:
        return measurements[0]
    rows = np.stack([m.influence for m in measurements])
    shares = rows / rows.sum(axis=1, keepdims=True)
    stderr = shares.std(axis=0, ddof=1) / np.sqrt(len(rows)) * rows.sum(axis=1).mean()
    return measurements[0].pooled_with(
        measurements[1:], pool_profiles(rows), stderr, f"{len(measurements)} seeds pooled"
    )
