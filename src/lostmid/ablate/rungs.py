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

import torch

from lostmid.ablate.config import RUNGS, AblationConfig
from lostmid.attention_choice import attention_for
from lostmid.errors import UserError
from lostmid.influence.estimator import influence_profile
from lostmid.influence.gains import branch_gains
from lostmid.influence.inputs import random_token_ids
from lostmid.influence.record import MeasureRecord
from lostmid.models import (
    LoadedModel,
    freeze_norm_scale,
    remove_mlp,
    remove_positions,
    scale_embeddings,
    uniform_attention,
)


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
    loaded = config.model_spec.load(
        init="random",
        seed=seed,
        config_overrides=overrides or None,
        attention=attention_for(config.length),
        size_check=False,  # run_ablate checked weights and time for every rung and seed
    )
    loaded.check_length(config.length)
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


@dataclass(frozen=True, eq=False)
class RungMeasurement:
    """One rung at one seed: the measurement (the one measure record, with every gain)
    and what was switched.

    Attributes:
        rung, seed: which.
        measurement: the profile, its error and the gains
            (:class:`~lostmid.influence.record.MeasureRecord`).
        switches: the one-line descriptions of the switches applied.
        seconds: the time the measurement took.
    """

    rung: str
    seed: int
    measurement: MeasureRecord
    switches: tuple[str, ...]
    seconds: float

    def record(self) -> dict[str, Any]:
        return {
            "rung": self.rung,
            "seed": self.seed,
            "measurement": self.measurement.record(),
            "switches": list(self.switches),
            "seconds": self.seconds,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RungMeasurement:
        """Read back a :meth:`record`."""
        rung, seed = str(record["rung"]), int(record["seed"])
        return cls(
            rung=rung,
            seed=seed,
            measurement=MeasureRecord.from_record(
                record["measurement"], source=f"{rung} seed {seed}"
            ),
            switches=tuple(record["switches"]),
            seconds=float(record["seconds"]),
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
    masks = tuple(loaded.adapter.layer_masks(loaded.model.config, config.length))
    measurement = MeasureRecord.from_gains(
        influence=profile.influence,
        stderr=profile.stderr,
        target=profile.target,
        layers=loaded.num_layers,
        gains=gains,
        forward=None,
        mask=masks[0] if len(set(masks)) == 1 else "causal",
        layer_masks=masks,
        facts=loaded.describe(),
        source=f"{rung} seed {seed}",
    )
    return RungMeasurement(rung, seed, measurement, tuple(switches), time.perf_counter() - start)
