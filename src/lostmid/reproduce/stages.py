"""The stages of a reproduce run and their results.

Every stage is saved by :class:`lostmid.runs.store.StageStore` as the ``record()`` of its
result and read back with ``from_record`` (a resumed run and a fresh one go through the
same JSON):

* ``measure-MODEL-seedS`` (:func:`measure_stage`, here): one untrained model, one seed,
  measured twice on the same weights, with its positional encoding and without it;
* ``train-seedS`` (:func:`lostmid.reproduce.training.training_stage`): one small
  training run of ``lostmid train`` and a summary of its dynamics;
* ``behaviour-seedS`` (:func:`lostmid.reproduce.behaviour.behaviour_stage`): one small
  retrieval model trained and evaluated by gold position;
* ``remedies`` (:func:`lostmid.reproduce.remedies.remedies_stage`, with ``--remedies``).

Only the transformer blocks matter for the hidden-state Jacobian, so the untrained
models are built with a small vocabulary (``Scale.vocab_size``) to save memory and time;
inputs are random token ids.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lostmid.attention_choice import attention_for
from lostmid.errors import UserError
from lostmid.files import write_bytes
from lostmid.influence import gains_and_forward_ratio, influence_profile, random_token_ids
from lostmid.influence.gains import BranchGains
from lostmid.influence.profile import InfluenceProfile
from lostmid.models import LoadedModel
from lostmid.models.devices import resolve_device
from lostmid.models.spec import ModelSpec
from lostmid.recordable import fields_record
from lostmid.reproduce.config import ReproduceConfig, Scale
from lostmid.runinfo import to_jsonable
from lostmid.typing import Float

SECOND_PART = 1_000_003  # offset of the probe seed of the second part of the inputs


def _array(values: Any) -> np.ndarray:
    """A JSON list as float64; None (a non-finite value in JSON) becomes nan."""
    return np.asarray(values, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class ProfileRun:
    """One measured influence profile of one model and seed (positions 1..L at 0..L-1).

    Attributes:
        influence: (L,) ||d h_L / d x_j||_F; ``stderr`` its standard error.
        mean_sq: (L,) the estimate of E||J_j||_F^2 that ``influence`` is the root of.
        per_layer: (H, L) the profile of the residual after each layer, NaN rows where
            the layer was not measured; None when no layer was.
        halves: (2, L) ``mean_sq`` of the first and of the second part of the inputs
            (two independent measurements of one model: the sampling noise); None when
            measured in one go.
        samples: the inputs measured; ``second`` of them in the second part.
    """

    influence: Float[np.ndarray, " L"]
    stderr: Float[np.ndarray, " L"]
    mean_sq: Float[np.ndarray, " L"]
    per_layer: Float[np.ndarray, "H L"] | None = None
    halves: Float[np.ndarray, "2 L"] | None = None
    samples: int = 1
    second: int = 0

    def first_part(self) -> Float[np.ndarray, " L"]:
        """The profile of the first part of the inputs (all of them without parts)."""
        return self.influence if self.halves is None else np.sqrt(self.halves[0])

    @property
    def parts(self) -> tuple[int, int]:
        """The inputs of the first and of the second part (all and 0 without parts)."""
        return (self.samples - self.second, self.second)

    def layer(self, layer: int) -> Float[np.ndarray, " L"] | None:
        """The per-layer profile of 1-indexed ``layer``, or None when it was not measured."""
        if self.per_layer is None or not np.all(np.isfinite(self.per_layer[layer - 1])):
            return None
        return self.per_layer[layer - 1]

    def record(self) -> dict[str, Any]:
        return fields_record(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ProfileRun:
        per_layer, halves = record.get("per_layer"), record.get("halves")
        return cls(
            influence=_array(record["influence"]),
            stderr=_array(record["stderr"]),
            mean_sq=_array(record["mean_sq"]),
            per_layer=None if per_layer is None else _array(per_layer),
            halves=None if halves is None else _array(halves),
            samples=int(record["samples"]),
            second=int(record["second"]),
        )

    @classmethod
    def of(cls, profile: InfluenceProfile) -> ProfileRun:
        """One measured profile as it is (no halves)."""
        return cls(
            profile.influence,
            profile.stderr,
            profile.mean_sq,
            profile.per_layer,
            samples=profile.samples,
        )

    @classmethod
    def joined(cls, first: InfluenceProfile, second: InfluenceProfile) -> ProfileRun:
        """Two profiles of one model on disjoint inputs as one measurement on all of them
        (``halves`` keeps the two parts, whatever their sizes).

        With n_k inputs and m_k the estimates of E||J_j||^2 of part k:
        m = (n_1 m_1 + n_2 m_2) / n, se(m) = sqrt(n_1^2 se_1^2 + n_2^2 se_2^2) / n
        (or |m_1 - m_2| sqrt(n_1 n_2) / n where a part's se is undefined),
        influence = sqrt(m), se = se(m) / (2 sqrt(m)) (delta method); per-layer rows
        likewise from their squares.

        >>> import types
        >>> part = lambda m, n: types.SimpleNamespace(
        ...     mean_sq=np.array([m]), stderr_sq=np.array([0.1]), samples=n, per_layer=None)
        >>> run = ProfileRun.joined(part(4.0, 1), part(16.0, 3))
        >>> run.influence.tolist(), run.halves.tolist()
        ([3.605551275463989], [[4.0], [16.0]])
        """
        n1, n2 = first.samples, second.samples
        n = n1 + n2
        mean_sq = (n1 * first.mean_sq + n2 * second.mean_sq) / n
        stderr_sq = np.sqrt((n1 * first.stderr_sq) ** 2 + (n2 * second.stderr_sq) ** 2) / n
        # one input and one probe per half leave the halves' errors undefined; then the
        # halves themselves estimate it: var(m1 - m2) n1 n2 / n^2 = var(m)
        between = np.abs(first.mean_sq - second.mean_sq) * np.sqrt(n1 * n2) / n
        stderr_sq = np.where(np.isfinite(stderr_sq), stderr_sq, between)
        influence = np.sqrt(mean_sq)
        with np.errstate(divide="ignore", invalid="ignore"):
            stderr = np.where(influence > 0, stderr_sq / (2 * influence), 0.0)
        per_layer = None
        if first.per_layer is not None and second.per_layer is not None:
            per_layer = np.sqrt((n1 * first.per_layer**2 + n2 * second.per_layer**2) / n)
        return cls(
            influence=influence,
            stderr=stderr,
            mean_sq=mean_sq,
            per_layer=per_layer,
            halves=np.stack([first.mean_sq, second.mean_sq]),
            samples=n,
            second=n2,
        )


@dataclass(frozen=True, eq=False)
class SeedMeasurement:
    """The result of one measure stage.

    Attributes:
        model: the model's resolved facts (``LoadedModel.describe()``).
        attention: the attention implementation used (eager or sdpa).
        switch: which positional encoding was switched off for ``off``.
        on, off: the profile with the positional encoding (all inputs, in two parts)
            and without it (the first part's inputs).
        gains: the Jacobian branch gains (per layer, per position, MLP) of the model
            with its positional encoding, on the first ``Scale.gain_inputs`` inputs.
        residual_strength_forward: (H,) the peer's forward ratio
            mean ||attn|| / (||x|| + ||attn||) on the same inputs as ``gains``.
        seconds: wall time of the stage; ``gain_seconds`` the part spent on the gains
            and the forward ratio.
    """

    model: Mapping[str, Any]
    attention: str
    switch: str
    on: ProfileRun
    off: ProfileRun
    gains: BranchGains
    residual_strength_forward: Float[np.ndarray, " H"]
    seconds: float
    gain_seconds: float

    @property
    def seed(self) -> int:
        return int(self.model["seed"])

    @property
    def residual_strength(self) -> Float[np.ndarray, " H"]:
        """a_l = s_l / (1 + s_l) from the branch gains (the theory's residual strength)."""
        return self.gains.residual_strength

    def record(self) -> dict[str, Any]:
        return fields_record(self, model=dict(self.model))

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SeedMeasurement:
        return cls(
            model=dict(record["model"]),
            attention=str(record["attention"]),
            switch=str(record["switch"]),
            on=ProfileRun.from_record(record["on"]),
            off=ProfileRun.from_record(record["off"]),
            gains=BranchGains.from_record(record["gains"]),
            residual_strength_forward=_array(record["residual_strength_forward"]),
            seconds=float(record["seconds"]),
            gain_seconds=float(record["gain_seconds"]),
        )


AT_INIT = "at-init.npz"
"""A measure stage's whole result, kept in the run folder as ``MODEL/seed-S/at-init.npz``
(:func:`write_at_init`): each seed's profiles with and without the positional encoding,
the two parts of its inputs, the per-layer profiles and the gains, so that the core's
per-seed numbers and claims can be judged again without a model (:func:`read_at_init`)."""
ARRAY_KEY = "__array__"  # in the npz's JSON layout: "this list is the array named so"


def write_at_init(run: SeedMeasurement, path: Path) -> Path:
    """``run``'s stage record (what the stage store saves as JSON) as a compressed npz:
    every list of numbers an array (float64 or int64, an undefined value NaN), the rest of
    the record as JSON beside them. :func:`read_at_init` gives the same measurement back.
    """
    arrays: dict[str, np.ndarray] = {}

    def pack(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: pack(v) for k, v in value.items()}
        numbers = _numbers(value)
        if numbers is None:
            return [pack(v) for v in value] if isinstance(value, list) else value
        name = f"a{len(arrays)}"
        arrays[name] = numbers
        return {ARRAY_KEY: name}

    layout = pack(to_jsonable(run.record()))
    buffer = io.BytesIO()
    arrays["record"] = np.asarray(json.dumps(layout))
    np.savez_compressed(buffer, allow_pickle=False, **arrays)
    return write_bytes(path, buffer.getvalue())


def read_at_init(path: Path) -> SeedMeasurement:
    """The measurement :func:`write_at_init` saved in ``path``."""
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files if k != "record"}
        layout = json.loads(str(data["record"]))

    def unpack(value: Any) -> Any:
        if isinstance(value, Mapping):
            if set(value) == {ARRAY_KEY}:
                return arrays[value[ARRAY_KEY]].tolist()
            return {k: unpack(v) for k, v in value.items()}
        return [unpack(v) for v in value] if isinstance(value, list) else value

    return SeedMeasurement.from_record(unpack(layout))


def read_at_init_folder(folder: Path) -> list[SeedMeasurement]:
    """Every seed a run kept for one model (``folder/seed-S/at-init.npz``), by seed."""
    runs = [read_at_init(p) for p in Path(folder).glob(f"seed-*/{AT_INIT}")]
    return sorted(runs, key=lambda r: r.seed)


def _numbers(value: Any) -> np.ndarray | None:
    """A JSON list of numbers (None for an undefined one) as an array, else None."""
    if not isinstance(value, list) or not value:
        return None
    try:
        array = np.asarray(value)
        if array.dtype == object:  # None among the numbers: NaN
            array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):  # ragged, or not numbers
        return None
    return array if array.dtype.kind in "iuf" else None


def depth_layers(layers: int, points: int | None) -> list[int]:
    """Roughly log-spaced layers 1..H, always including 1 and H (all when ``points`` is
    None or >= H). Layer l costs a backward through l blocks, so few deep ones are cheap.

    >>> depth_layers(24, 6)
    [1, 2, 4, 7, 13, 24]
    """
    if points is None or points >= layers:
        return list(range(1, layers + 1))
    grid = np.unique(np.round(np.geomspace(1, layers, points)).astype(int))
    return [int(x) for x in grid]


def model_overrides(scale: Scale) -> dict[str, Any] | None:
    """Config overrides of the untrained models: the scale's vocabulary, if any."""
    if scale.vocab_size is None:
        return None
    # special token ids must stay inside the smaller vocabulary (unused here)
    return {"vocab_size": scale.vocab_size, "bos_token_id": None, "eos_token_id": None}


def switch_off_positions(loaded: LoadedModel) -> str:
    """Remove this family's positional encoding in place; return which one it was."""
    if loaded.adapter.has_rope:
        loaded.adapter.remove_rope(loaded.model)
        return "rotary -> identity"
    if loaded.adapter.has_position_embedding:
        loaded.adapter.remove_position_embedding(loaded.model)
        return "position embeddings removed"
    raise UserError(f"{loaded.spec}: its family has no positional encoding lostmid can switch off")


def run_device(config: ReproduceConfig) -> str:
    """The device of the measurement stages: ``auto`` resolved to cuda or cpu."""
    return str(resolve_device(config.device)) if config.device == "auto" else config.device


def check_models(config: ReproduceConfig, device: str) -> None:
    """Fail in seconds, before any stage, on what would fail a stage later: a model spec
    that does not resolve, a device that is not there, a family that cannot be built or
    switched off, a length beyond a model's maximum.

    Each model is built with one layer and a small vocabulary (a fraction of a second):
    the public loader checks the spec and the device the way the stage will.
    """
    one_layer = {
        "num_hidden_layers": 1,
        "vocab_size": 512,
        "bos_token_id": None,
        "eos_token_id": None,
    }
    for model in config.models:
        loaded = ModelSpec(model, device=device).load(init="random", config_overrides=one_layer)
        loaded.check_length(config.scale.length)
        if not (loaded.adapter.has_rope or loaded.adapter.has_position_embedding):
            switch_off_positions(loaded)  # raises its one-line message


def measure_layers(layers: int, depth_points: int | None, first_seed: bool) -> list[int]:
    """The 1-indexed layers whose per-layer profile a measure stage takes: layer 1 on
    every seed (the depth-1 check, with a noise floor), :func:`depth_layers` on the
    first seed (growth with depth).

    >>> measure_layers(24, 6, first_seed=True), measure_layers(24, 6, first_seed=False)
    ([1, 2, 4, 7, 13, 24], [1])
    """
    return depth_layers(layers, depth_points) if first_seed else [1]


def measure_stage(
    model: str, seed: int, scale: Scale, first_seed: bool, device: str
) -> SeedMeasurement:
    """One untrained model, one seed: the profile with its positional encoding (and the
    per-layer profiles of :func:`measure_layers`) measured in two parts of the inputs
    (:meth:`ProfileRun.joined`; the first ``scale.first_part`` inputs, then the rest),
    its Jacobian branch gains and the peer's forward ratio on the first
    ``scale.gain_inputs`` of the same inputs, then the profile with the encoding
    switched off (rotary -> identity, or learned position embeddings removed) on the
    same weights and the first part's inputs and probes: compared with that part of the
    profile with the encoding, so the two share their sampling noise."""
    start = time.perf_counter()
    attention = attention_for(scale.length)
    loaded = ModelSpec(model, device=device).load(
        init="random", seed=seed, config_overrides=model_overrides(scale), attention=attention
    )
    ids = random_token_ids(loaded.vocab_size, scale.samples, scale.length, seed)
    first = scale.first_part  # inputs of the first part, measured without positions too

    def measure(
        rows: torch.Tensor, per_layer: Sequence[int] | bool, probe_seed: int
    ) -> InfluenceProfile:
        return influence_profile(
            loaded,
            rows,
            probes=scale.probes,
            seed=probe_seed,
            per_layer=per_layer,
            batch_size=scale.batch_size,
        )

    layers = measure_layers(loaded.num_layers, scale.depth_points, first_seed)
    if first < scale.samples:  # two parts: the sampling noise of this model, for free
        on = ProfileRun.joined(
            measure(ids[:first], layers, seed), measure(ids[first:], layers, seed + SECOND_PART)
        )
    else:
        on = ProfileRun.of(measure(ids, layers, seed))
    gain_start = time.perf_counter()
    gain_ids = ids[: scale.gain_inputs]
    gains, forward = gains_and_forward_ratio(
        loaded, gain_ids, directions=scale.gain_directions, seed=seed
    )
    gain_seconds = time.perf_counter() - gain_start
    switch = switch_off_positions(loaded)
    off = ProfileRun.of(measure(ids[:first], False, seed))  # the first part's inputs, probes
    return SeedMeasurement(
        model=loaded.describe(),
        attention=attention,
        switch=switch,
        on=on,
        off=off,
        gains=gains,
        residual_strength_forward=np.asarray(forward, dtype=np.float64),
        seconds=time.perf_counter() - start,
        gain_seconds=gain_seconds,
    )
