"""Reading the two inputs of a comparison: a measured profile and a theory profile.

measure.json (written by ``lostmid measure``): ``influence`` (L floats, positions 1..L),
``stderr`` (L floats, optional), ``residual_strength`` (H floats, one per layer, first
layer first; needed only to predict the theory) and ``config`` with at least
``length``, ``layers`` and ``target`` (1-indexed, null meaning L), optionally ``mask``.
Optional, read when present (None when missing, so older files still load):
``residual_strength_method`` (``"jacobian"``: a_l = s_l/(1+s_l) from the branch gain;
``"forward"``: the peer's forward ratio), ``branch_gain`` (H floats, s_l),
``residual_strength_forward`` (H floats), ``gain_per_position`` (H x L floats, the
branch gain of each layer at each source position), ``mlp_gain_per_position`` and
``mlp_coherence_per_position`` (H x L: the MLP's gain and Jacobian coherence at each
position; a coherence may be null where the MLP is zero) and ``layer_masks`` (H mask
specs, layer 1 first, e.g. Gemma2's alternating ``sliding:W`` and ``causal``). The
single ``config.mask`` is the mask of every layer when they agree; files whose layers
differ carry ``layer_masks`` only, and the single-mask candidates then use ``causal``.

theory.json (written by ``lostmid theory``): ``influence`` (L floats) or
``log10_influence`` (L floats, null meaning -inf) and ``params`` with ``length``,
``layers``, ``alphas``, ``mask``, ``kernel`` and ``target``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.checks import check_position
from lostmid.compare.metrics import validate_profile
from lostmid.errors import UserError
from lostmid.files import read_result
from lostmid.theory.masks import layer_masks

SETTING_KEYS = (
    "model",
    "family",
    "hidden",
    "vocab",
    "init",
    "no_rope",
    "no_pos_emb",
    "no_alibi",
    "output",
)
"""The ``config`` entries of a measure.json that say which model and which quantity
were measured: seeds of one model agree on all of them."""


@dataclass(frozen=True)
class MeasuredProfile:
    """A measured influence profile and what the theory needs to predict it.

    Attributes:
        influence: (L,) mean measured influence of positions 1..L on the target.
        stderr: (L,) its standard error across inputs/seeds, or None.
        residual_strength: (H,) measured a_l per layer, or None.
        layers: depth H of the measured model.
        target: 1-indexed target position t.
        mask: attention mask spec of the model (``causal`` for decoders).
        source: where it was read from, for provenance.
        residual_strength_method: how ``residual_strength`` was measured (``jacobian``
            or ``forward``), or None when the file does not say.
        branch_gain: (H,) the attention branch's Jacobian gain s_l per layer, or None.
        residual_strength_forward: (H,) the peer's forward ratio per layer, or None.
        gain_per_position: (H, L) the branch gain of each layer at each source
            position (array index j-1: position j), or None.
        mlp_gain_per_position: (H, L) the MLP branch gain per layer and position, or None.
        mlp_coherence_per_position: (H, L) the MLP's Jacobian coherence per layer and
            position (NaN where undefined: a zero MLP), or None.
        layer_masks: H mask specs (layer 1 first), or None.
        setting: what the file says was measured (:data:`SETTING_KEYS` of its
            ``config``: model, family, width, init, positional switches, output), for
            :func:`check_one_setting`.
    """

    influence: np.ndarray
    stderr: np.ndarray | None
    residual_strength: np.ndarray | None
    layers: int
    target: int
    mask: str = "causal"
    source: str | None = None
    residual_strength_method: str | None = None
    branch_gain: np.ndarray | None = None
    residual_strength_forward: np.ndarray | None = None
    gain_per_position: np.ndarray | None = None
    mlp_gain_per_position: np.ndarray | None = None
    mlp_coherence_per_position: np.ndarray | None = None
    layer_masks: tuple[str, ...] | None = None
    setting: Mapping[str, Any] = field(default_factory=dict)

    @property
    def length(self) -> int:
        return int(self.influence.size)


@dataclass(frozen=True)
class TheoryProfile:
    """A theory row from a file, with the parameters it was computed with."""

    influence: np.ndarray
    target: int
    kernel: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    source: str | None = None

    @property
    def length(self) -> int:
        return int(self.influence.size)


def load_measured(path: Path, option: str = "--measured") -> MeasuredProfile:
    """Read and check a measure.json (see the module docstring); its kind by its schema
    tag (:func:`lostmid.files.read_result`)."""
    data = read_result(path, "measure", option=option)
    config = _object(data.get("config"), path, "config")
    influence = validate_profile(_floats(data, "influence", path), f"{path}: influence")
    length = influence.size
    if "length" in config and int(config["length"]) != length:
        raise UserError(
            f"{path}: config.length is {config['length']} but influence has {length} values"
        )
    stderr = None
    if data.get("stderr") is not None:
        stderr = _floats(data, "stderr", path)
        if stderr.size != length or np.any(~np.isfinite(stderr)) or np.any(stderr < 0):
            raise UserError(
                f"{path}: stderr must be {length} finite non-negative values, one per position"
            )
    residual = None
    if data.get("residual_strength") is not None:
        residual = _floats(data, "residual_strength", path)
    layers = config.get("layers", None if residual is None else residual.size)
    if layers is None:
        raise UserError(f"{path}: config.layers is missing; the theory needs the depth H")
    layers = int(layers)
    if residual is not None and residual.size != layers:
        raise UserError(
            f"{path}: residual_strength has {residual.size} values but config.layers is "
            f"{layers}; give one value per layer"
        )
    per_layer = {
        key: _optional_floats(data, key, path, (layers,))
        for key in ("branch_gain", "residual_strength_forward")
    }
    method = data.get("residual_strength_method")
    grid = (layers, length)
    return MeasuredProfile(
        influence=influence,
        stderr=stderr,
        residual_strength=residual,
        layers=layers,
        target=_target(config.get("target"), length, path),
        mask=str(config.get("mask", "causal")),
        source=str(path),
        residual_strength_method=None if method is None else str(method),
        gain_per_position=_optional_floats(data, "gain_per_position", path, grid),
        mlp_gain_per_position=_optional_floats(data, "mlp_gain_per_position", path, grid),
        mlp_coherence_per_position=_optional_floats(
            data, "mlp_coherence_per_position", path, grid, undefined=True
        ),
        layer_masks=_layer_masks(data.get("layer_masks"), layers, length, path),
        setting={k: config[k] for k in SETTING_KEYS if k in config},
        **per_layer,
    )


def load_theory(path: Path, option: str = "--theory") -> TheoryProfile:
    """Read and check a theory.json (see the module docstring); its kind by its schema
    tag (:func:`lostmid.files.read_result`)."""
    data = read_result(path, "theory", option=option)
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise UserError(f"{path}: params must be a JSON object")
    if data.get("influence") is not None:
        influence = _floats(data, "influence", path)
    elif data.get("log10_influence") is not None:
        log10 = np.array(
            [-np.inf if v is None else float(v) for v in data["log10_influence"]], dtype=float
        )
        influence = 10.0**log10
    else:
        raise UserError(f"{path}: no 'influence' or 'log10_influence'; is this a theory.json?")
    influence = validate_profile(influence, f"{path}: influence")
    kernel = params.get("kernel")
    return TheoryProfile(
        influence=influence,
        target=_target(params.get("target"), influence.size, path),
        kernel=None if kernel is None else str(kernel),
        params=params,
        source=str(path),
    )


def _object(data: Any, path: Path, key: str | None = None) -> dict[str, Any]:
    if not isinstance(data, dict):
        where = f"'{key}'" if key else "the file"
        raise UserError(f"{path}: {where} must be a JSON object")
    return data


def _floats(data: dict[str, Any], key: str, path: Path) -> np.ndarray:
    values = data.get(key)
    if not isinstance(values, list) or not values:
        raise UserError(f"{path}: '{key}' must be a non-empty list of numbers")
    try:
        return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError):
        raise UserError(f"{path}: '{key}' has an entry that is not a number") from None


def _optional_floats(
    data: dict[str, Any], key: str, path: Path, shape: tuple[int, ...], undefined: bool = False
) -> np.ndarray | None:
    """``data[key]`` as a finite float array of ``shape``, or None when absent;
    ``undefined``: null entries are allowed and read as NaN."""
    if data.get(key) is None:
        return None
    try:
        raw = data[key]
        if undefined:
            raw = [[np.nan if v is None else v for v in row] for row in raw]
        values = np.array(raw, dtype=np.float64)
    except (TypeError, ValueError):
        values = np.array([])
    finite = np.isfinite(values) | (undefined & np.isnan(values))
    if values.shape != shape or not np.all(finite):
        dims = " x ".join(map(str, shape))
        what = "finite numbers or null" if undefined else "finite numbers"
        raise UserError(f"{path}: '{key}' must be {dims} {what}, one per layer/position")
    return values


def _layer_masks(specs: Any, layers: int, length: int, path: Path) -> tuple[str, ...] | None:
    """``layer_masks``: H mask specs that :func:`lostmid.theory.layer_masks` accepts."""
    if specs is None:
        return None
    if not isinstance(specs, list) or not all(isinstance(m, str) for m in specs):
        raise UserError(f"{path}: 'layer_masks' must be a list of {layers} mask specs")
    try:
        masks = layer_masks(specs, layers, length)
    except UserError as err:
        raise UserError(f"{path}: layer_masks: {err}") from None
    return tuple(m.spec() for m in masks)


def _target(target: Any, length: int, path: Path) -> int:
    if target is not None and (
        isinstance(target, bool) or not isinstance(target, int | float) or int(target) != target
    ):
        raise UserError(f"{path}: target must be a whole number or null, got {target!r}")
    return check_position(f"{path}: target", None if target is None else int(target), length)


def check_same_model(measurements: Sequence[MeasuredProfile]) -> int:
    """The number of measurements, after checking they are seeds of one model and one
    measurement setting (same L, target, depth and masks)."""
    if not measurements:
        raise UserError("give at least one measurement")
    first = measurements[0]
    for m in measurements[1:]:
        for what, a, b in (
            ("length L", m.length, first.length),
            ("target", m.target, first.target),
            ("depth H", m.layers, first.layers),
            ("mask", m.mask, first.mask),
            ("layer masks", m.layer_masks, first.layer_masks),
        ):
            if a != b:
                raise UserError(
                    f"{m.source or 'a measurement'} has {what} {a} but "
                    f"{first.source or 'the first'} has {b}; give seeds of one model and "
                    "one measurement setting"
                )
    return len(measurements)


def check_theory_matches(theory: TheoryProfile, measured: MeasuredProfile) -> None:
    """A theory file must have the measurement's length and target."""
    if theory.length != measured.length:
        raise UserError(
            f"theory has L = {theory.length} positions but the measurement has "
            f"L = {measured.length}; compute the theory at --length {measured.length}"
        )
    if theory.target != measured.target:
        raise UserError(
            f"theory targets position {theory.target} but the measurement targets "
            f"{measured.target}; compute the theory with --target {measured.target}"
        )


def check_one_setting(measurements: Sequence[MeasuredProfile], pool: bool = False) -> list[str]:
    """Refuse measurements of different models or quantities (:data:`SETTING_KEYS`), in
    one line naming both files, unless ``pool``; with ``pool`` return one note per
    difference (empty when they agree). Lengths, targets and depths must agree either
    way (:func:`check_same_model`)."""
    check_same_model(measurements)
    first = measurements[0]
    notes = []
    for m in measurements[1:]:
        for key in SETTING_KEYS:
            if key in m.setting and key in first.setting and m.setting[key] != first.setting[key]:
                if not pool:
                    raise UserError(
                        f"{m.source} measured {key} {m.setting[key]!r} but {first.source} "
                        f"{first.setting[key]!r}; give seeds of one model and setting, or "
                        "pass --pool to pool them anyway"
                    )
                notes.append(
                    f"pooled across {key}: {m.setting[key]!r} ({m.source}) and "
                    f"{first.setting[key]!r} ({first.source})"
                )
    return notes
