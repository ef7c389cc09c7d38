"""The rungs of the ablation ladder (:mod:`lostmid.ablate.run`): what each one
switches (:data:`RUNG_SPECS`), the switched model of a rung at a seed (:func:`build_rung`)
and its measurement (:func:`measure_rung`: profile, branch gains, layer masks).

>>> config = AblationConfig(model="tiny-gpt2", length=16, seeds=1, samples=1, probes=1,
...                         rungs="uniform,real")
>>> loaded, ids, switches = build_rung(config, "uniform", seed=0)
>>> switches[1]
'uniform attention: W_Q = W_K = 0 in 2 layers (q.k = 0)'
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lostmid.ablate.config import RUNGS, AblationConfig
from lostmid.attention_choice import attention_for
from lostmid.compare.inputs import MeasuredProfile
from lostmid.errors import UserError
from lostmid.influence.estimator import influence_profile
from lostmid.influence.gains import branch_gains
from lostmid.influence.inputs import random_token_ids
from lostmid.models import (
    LoadedModel,
    freeze_norm_scale,
    load_model,
    remove_mlp,
    remove_positions,
    scale_embeddings,
    uniform_attention,
)
from lostmid.typing import Float


@dataclass(frozen=True)
class RungSpec:
    """One rung: which real ingredients it has.

    Attributes:
        name: the rung's name (:data:`~lostmid.influence.config.RUNGS`).
        label: its place on the ladder, ``(i)`` .. ``(iv)`` or ``cross``.
        ingredient: what it adds to (or changes in) the rung it builds on.
        positions, logits, mlp: the real positional encoding, attention logits, MLP.
        frozen_norm: every norm's 1/sigma frozen to its mean over positions.
        scaled_embeddings: the token embeddings scaled by ``embedding_scale``.
    """

    name: str
    label: str
    ingredient: str
    positions: bool
    logits: bool
    mlp: bool
    frozen_norm: bool = False
    scaled_embeddings: bool = False


RUNG_SPECS = {
    spec.name: spec
    for spec in (
        RungSpec("uniform", "(i)", "uniform attention, no MLP, no positions", False, False, False),
        RungSpec("mlp", "(ii)", "+ MLP", False, False, True),
        RungSpec("logits", "(iii)", "+ attention logits", False, True, True),
        RungSpec("real", "(iv)", "+ positions: the real model", True, True, True),
        RungSpec("frozen-norm", "cross", "(ii), norm 1/sigma frozen", False, False, True, True),
        RungSpec(
            "scaled-embeddings",
            "cross",
            "(iv), embeddings scaled",
            True,
            True,
            True,
            scaled_embeddings=True,
        ),
    )
}
assert tuple(RUNG_SPECS) == RUNGS


def build_rung(
    config: AblationConfig, rung: str, seed: int
) -> tuple[LoadedModel, torch.Tensor, list[str]]:
    """The model of ``rung`` at ``seed``, its inputs (samples, L) and the switches applied.

    The model is built afresh (same seed: same weights on every rung) and switched:
    positions off, then uniform attention, then no MLP, as the rung lacks them; the
    norm scales are frozen on the inputs last (measured on the switched model). With
    ``config.device_map`` the model is split as ``lostmid measure`` splits it
    (:func:`~lostmid.models.load_model`); the switches edit weights in place, so a rung
    with switches needs every weight on a device (none offloaded to cpu or disk).
    """
    spec = RUNG_SPECS[rung]
    overrides: dict[str, Any] = {}
    if config.layers is not None:
        overrides["num_hidden_layers"] = config.layers
    if config.vocab_size is not None:
        overrides["vocab_size"] = config.vocab_size
    loaded = load_model(
        config.model,
        seed=seed,
        dtype=config.dtype,
        device=config.device,
        config_overrides=overrides or None,
        attn_implementation=attention_for(config.length),
        device_map=config.device_map,
    )
    if config.length > loaded.max_length:
        raise UserError(
            f"--length {config.length} exceeds the maximum {loaded.max_length} of "
            f"{config.model}; use --length {loaded.max_length} or less"
        )
    switched = not (spec.positions and spec.logits and spec.mlp) or spec.scaled_embeddings
    if (switched or spec.frozen_norm) and _offloaded(loaded):
        raise UserError(
            f"--device-map offloads weights that rung {rung} must edit (offloaded weights "
            "load from cpu/disk at each forward); give a map that keeps every module on a "
            "device, or --rungs real"
        )
    ids = random_token_ids(loaded.vocab_size, config.samples, config.length, seed)
    switches = []
    if not spec.positions:
        switches.append(remove_positions(loaded))
    if not spec.logits:
        switches.append(uniform_attention(loaded))
    if not spec.mlp:
        switches.append(remove_mlp(loaded))
    if spec.scaled_embeddings:
        switches.append(scale_embeddings(loaded, config.embedding_scale))
    if spec.frozen_norm:
        switches.append(freeze_norm_scale(loaded, ids))
    return loaded, ids, switches


def _offloaded(loaded: LoadedModel) -> bool:
    """Whether a device map left some weights off every device (``meta`` in the model:
    accelerate brings them in from cpu or disk for each forward)."""
    return any(p.device.type == "meta" for p in loaded.model.parameters())


@dataclass(frozen=True)
class RungMeasurement:
    """One rung at one seed: the profile, the gains and what was switched.

    Arrays are indexed by layer l-1 and position j-1.

    Attributes:
        rung, seed: which.
        influence, stderr: (L,) the measured profile and its standard error.
        target: the 1-indexed target t.
        layers: the depth H.
        residual_strength: (H,) a_l = s_l/(1+s_l) from the branch gain.
        branch_gain: (H,) s_l.
        gain_per_position: (H, L) s_l(j).
        mlp_gain, mlp_coherence: (H,) the MLP's gain and coherence (NaN: no MLP).
        mlp_gain_per_position, mlp_coherence_per_position: (H, L).
        layer_masks: each layer's mask spec.
        switches: the one-line descriptions of the switches applied.
        model: the model's resolved facts (:meth:`LoadedModel.describe`).
        seconds: the time the measurement took.
    """

    rung: str
    seed: int
    influence: Float[np.ndarray, " L"]
    stderr: Float[np.ndarray, " L"]
    target: int
    layers: int
    residual_strength: Float[np.ndarray, " H"]
    branch_gain: Float[np.ndarray, " H"]
    gain_per_position: Float[np.ndarray, "H L"]
    mlp_gain: Float[np.ndarray, " H"]
    mlp_coherence: Float[np.ndarray, " H"]
    mlp_gain_per_position: Float[np.ndarray, "H L"]
    mlp_coherence_per_position: Float[np.ndarray, "H L"]
    layer_masks: tuple[str, ...]
    switches: tuple[str, ...]
    model: Mapping[str, Any]
    seconds: float

    def record(self) -> dict[str, Any]:
        return {
            "rung": self.rung,
            "seed": self.seed,
            "influence": self.influence,
            "stderr": self.stderr,
            "target": self.target,
            "layers": self.layers,
            "residual_strength": self.residual_strength,
            "branch_gain": self.branch_gain,
            "gain_per_position": self.gain_per_position,
            "mlp_gain": self.mlp_gain,
            "mlp_coherence": self.mlp_coherence,
            "mlp_gain_per_position": self.mlp_gain_per_position,
            "mlp_coherence_per_position": self.mlp_coherence_per_position,
            "layer_masks": list(self.layer_masks),
            "switches": list(self.switches),
            "model": dict(self.model),
            "seconds": self.seconds,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RungMeasurement:
        """Read back a :meth:`record` (null -> NaN in the arrays)."""

        def array(key: str) -> np.ndarray:
            return np.array(record[key], dtype=np.float64)  # None -> nan

        arrays = (
            "influence",
            "stderr",
            "residual_strength",
            "branch_gain",
            "gain_per_position",
            "mlp_gain",
            "mlp_coherence",
            "mlp_gain_per_position",
            "mlp_coherence_per_position",
        )
        return cls(
            rung=str(record["rung"]),
            seed=int(record["seed"]),
            target=int(record["target"]),
            layers=int(record["layers"]),
            layer_masks=tuple(record["layer_masks"]),
            switches=tuple(record["switches"]),
            model=dict(record["model"]),
            seconds=float(record["seconds"]),
            **{key: array(key) for key in arrays},
        )

    def measured_profile(self) -> MeasuredProfile:
        """The measurement as :mod:`lostmid.compare` reads a measure.json."""
        masks = self.layer_masks
        return MeasuredProfile(
            influence=self.influence,
            stderr=self.stderr,
            residual_strength=self.residual_strength,
            layers=self.layers,
            target=self.target,
            mask=masks[0] if len(set(masks)) == 1 else "causal",
            source=f"{self.rung} seed {self.seed}",
            residual_strength_method="jacobian",
            branch_gain=self.branch_gain,
            gain_per_position=self.gain_per_position,
            mlp_gain_per_position=self.mlp_gain_per_position,
            mlp_coherence_per_position=self.mlp_coherence_per_position,
            layer_masks=masks,
        )


def measure_rung(config: AblationConfig, rung: str, seed: int) -> RungMeasurement:
    """Build ``rung`` at ``seed`` (:func:`build_rung`), measure its profile and gains."""
    start = time.perf_counter()
    loaded, ids, switches = build_rung(config, rung, seed)
    profile = influence_profile(
        loaded,
        ids,
        probes=config.probes,
        output=config.output,
        seed=seed,
        exact=config.exact,
        batch_size=config.batch_size,
    )
    gains = branch_gains(
        loaded,
        ids,
        directions=config.gain_directions,
        seed=seed,
        per_position=True,
        batch_size=config.batch_size,
        exact=config.exact,
    )
    assert gains.per_position is not None and gains.mlp_gain_per_position is not None
    assert gains.mlp_coherence_per_position is not None
    return RungMeasurement(
        rung=rung,
        seed=seed,
        influence=profile.influence,
        stderr=profile.stderr,
        target=profile.target,
        layers=loaded.num_layers,
        residual_strength=gains.residual_strength,
        branch_gain=gains.gain,
        gain_per_position=gains.per_position,
        mlp_gain=gains.mlp_gain,
        mlp_coherence=gains.mlp_coherence,
        mlp_gain_per_position=gains.mlp_gain_per_position,
        mlp_coherence_per_position=gains.mlp_coherence_per_position,
        layer_masks=tuple(loaded.adapter.layer_masks(loaded.model.config, config.length)),
        switches=tuple(switches),
        model=loaded.describe(),
        seconds=time.perf_counter() - start,
    )
