"""The inputs of a comparison besides the measurements (read by
:func:`lostmid.influence.record.read_measure`, the one reader of measure.json): a theory
profile, and the checks that the inputs belong together.

theory.json (written by ``lostmid theory``): ``influence`` (L floats) or
``log10_influence`` (L floats, null meaning -inf) and ``params`` with ``length``,
``layers``, ``alphas``, ``mask``, ``kernel`` and ``target``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.compare.metrics import validate_profile
from lostmid.errors import UserError
from lostmid.files import read_result
from lostmid.influence.record import MeasureRecord
from lostmid.records import json_floats, json_object, json_target


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


def load_theory(path: Path, option: str | None = "--theory") -> TheoryProfile:
    """Read and check a theory.json (see the module docstring); its kind by its schema
    tag (:func:`lostmid.files.read_result`: a measure.json here is one line)."""
    where = str(path)
    data = json_object(read_result(path, "theory", option=option), where)
    if "params" not in data and "config" in data:
        raise UserError(
            f"{path}: a measurement (it has config, not params), not a theory; pass it as "
            "--measured, and a theory.json written by lostmid theory as --theory"
        )
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise UserError(f"{path}: params must be a JSON object")
    if data.get("influence") is not None:
        influence = json_floats(data, "influence", where)
    elif data.get("log10_influence") is not None:
        log10 = json_floats(data, "log10_influence", where)
        with np.errstate(over="ignore"):  # past 1e308: inf, refused as non-finite below
            influence = 10.0 ** np.where(np.isnan(log10), -np.inf, log10)
    else:
        raise UserError(f"{path}: no 'influence' or 'log10_influence'; is this a theory.json?")
    influence = validate_profile(influence, f"{path}: influence")
    kernel = params.get("kernel")
    return TheoryProfile(
        influence=influence,
        target=json_target(params.get("target"), influence.size, where),
        kernel=None if kernel is None else str(kernel),
        params=params,
        source=str(path),
    )


def check_same_model(measurements: Sequence[MeasureRecord]) -> int:
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


def check_theory_matches(theory: TheoryProfile, measured: MeasureRecord) -> None:
    """A theory file must have the measurement's length, target and depth (when both
    say theirs)."""
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
    depth = theory.params.get("layers")
    if (
        isinstance(depth, int)
        and not isinstance(depth, bool)
        and isinstance(measured.layers, int)
        and depth != measured.layers
    ):
        raise UserError(
            f"{theory.source or 'the theory'} has depth H = {depth} layers but the "
            f"measurement has H = {measured.layers}; compute the theory with --layers "
            f"{measured.layers}"
        )


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
"""The ``config`` entries of a measure.json (:attr:`MeasureRecord.facts`) that say which
model and which quantity were measured: seeds of one model agree on all of them."""


def check_one_setting(measurements: Sequence[MeasureRecord], pool: bool = False) -> list[str]:
    """Refuse measurements of different models or quantities (:data:`SETTING_KEYS`), in
    one line naming both files, unless ``pool``; with ``pool`` return one note per
    difference (empty when they agree). Lengths, targets and depths must agree either
    way (:func:`check_same_model`)."""
    check_same_model(measurements)
    first = measurements[0]
    notes = []
    for m in measurements[1:]:
        for key in SETTING_KEYS:
            if key in m.facts and key in first.facts and m.facts[key] != first.facts[key]:
                if not pool:
                    raise UserError(
                        f"{m.source} measured {key} {m.facts[key]!r} but {first.source} "
                        f"{first.facts[key]!r}; give seeds of one model and setting, or "
                        "pass --pool to pool them anyway"
                    )
                notes.append(
                    f"pooled across {key}: {m.facts[key]!r} ({m.source}) and "
                    f"{first.facts[key]!r} ({first.source})"
                )
    return notes
