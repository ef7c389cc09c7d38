"""The one record of a measured influence profile: ``measure.json``.

:class:`MeasureRecord` holds a measured profile with everything a prediction of it
needs (residual strengths, per-position gains, MLP gain and coherence, layer masks) and
what the run was (resolved facts, provenance). It is written by one function,
:func:`write_measure` (``lostmid measure``, the per-seed and pooled files of ``lostmid
reproduce``), and read by one, :func:`read_measure` (``lostmid compare``, the report),
so the files a run saves give the same numbers to every command that reads them.
Every producer builds it with :meth:`MeasureRecord.from_gains` from the measured
:class:`~lostmid.influence.gains.BranchGains`, so no writer can leave a gain out.

Layout (one value per layer, layer 1 first; H x L arrays are row l-1, column j-1 for
position j; positions 1..L at indices 0..L-1):

* ``schema``: ``lostmid.measure/1``;
* ``influence``, ``stderr`` (L; ``stderr`` null when undefined: one input, one probe);
* ``residual_strength``: the a_l predictions use, and ``residual_strength_method``:
  ``jacobian`` (s_l/(1+s_l) from the branch gain: the theory's a_l, the default) or
  ``forward`` (the peer's ratio, for comparison); ``residual_strength_jacobian`` and
  ``residual_strength_forward``: both, whenever measured;
* ``branch_gain`` (s_l), ``gain_per_position`` (H x L), ``mlp_gain``, ``mlp_coherence``
  (H), ``mlp_gain_per_position``, ``mlp_coherence_per_position`` (H x L; a coherence is
  null where the MLP is zero), ``gain_directions``;
* ``layer_masks`` (H theory mask specs); ``per_layer`` (the profile after each measured
  layer, or null); the variance split (``mean_sq``, ``stderr_sq``, ``var_probe``,
  ``var_sample``, ``stderr_basis``, ``best_probes_per_sample``, ``max_relative_stderr``);
* ``summary`` (primacy, valley, recency, peak-to-valley; derived, not read back);
* ``shape``: shape indices of positions 1..target with their intervals from ``stderr``
  (:func:`lostmid.stats.shape.profile_shape`; derived, not read back; null without
  standard errors);
* ``config``: the resolved facts, with at least ``length``, ``layers`` and ``target``
  (1-indexed; null means L), and ``mask`` when every layer has the same; ``requested``:
  the options as given; ``metadata``: provenance; ``notes``.

Files without a ``schema`` (written before it, or by hand with the keys above, at least
``influence`` and ``config.layers``) are read too; a file of another kind is refused in
one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.errors import UserError
from lostmid.files import read_result, schema_of
from lostmid.influence.gains import BranchGains
from lostmid.records import (
    is_number,
    json_array,
    json_floats,
    json_object,
    json_profile,
    json_strings,
    json_target,
    json_text,
    json_whole,
)
from lostmid.runinfo import to_jsonable, write_json
from lostmid.stats.shape import ShapeIndices, profile_shape
from lostmid.theory import summarise_profile
from lostmid.theory.masks import layer_masks as parse_layer_masks
from lostmid.typing import Float

SCHEMA = schema_of("measure")  # lostmid.measure/1 (lostmid.files.RESULT_KINDS)
FILE = "measure.json"
PER_LAYER = ("residual_strength", "branch_gain", "residual_strength_forward", "mlp_gain")
PER_LAYER_SIGNED = ("mlp_coherence",)  # NaN where the MLP is zero
PER_POSITION = ("gain_per_position", "mlp_gain_per_position")
PER_POSITION_SIGNED = ("mlp_coherence_per_position",)
VARIANCE = ("mean_sq", "stderr_sq", "var_probe", "var_sample")
"""The array fields by shape: (H,) and (H, L), and the (L,) variance split."""


@dataclass(frozen=True, eq=False)
class MeasureRecord:
    """A measured influence profile and what predicting it needs (module docstring).

    Attributes:
        influence: (L,) influence of positions 1..L on the target.
        stderr: (L,) its standard error, or None (undefined).
        layers: the depth H; target: the 1-indexed target t.
        residual_strength: (H,) the a_l predictions use, or None (not measured).
        residual_strength_method: ``jacobian`` or ``forward`` (which a_l that is).
        branch_gain, residual_strength_forward, mlp_gain, mlp_coherence: (H,) or None.
        gain_per_position, mlp_gain_per_position, mlp_coherence_per_position: (H, L) or
            None (not kept).
        gain_directions: random directions of the gains (0: exact), or None.
        mask: the mask spec of every layer (``causal`` unless all layers share another).
        layer_masks: H mask specs, layer 1 first, or None.
        per_layer: (K, L) the profile after each measured layer, or None.
        variance: the variance split of the estimate (module docstring), may be empty.
        facts: the resolved facts of the run (``config`` in the file).
        requested: the options as given, or None.
        metadata: provenance; notes: what was skipped and why.
        source: where it was read from (not written).
    """

    influence: Float[np.ndarray, " L"]
    stderr: Float[np.ndarray, " L"] | None
    layers: int
    target: int
    residual_strength: Float[np.ndarray, " H"] | None = None
    residual_strength_method: str | None = None
    branch_gain: Float[np.ndarray, " H"] | None = None
    residual_strength_forward: Float[np.ndarray, " H"] | None = None
    mlp_gain: Float[np.ndarray, " H"] | None = None
    mlp_coherence: Float[np.ndarray, " H"] | None = None
    gain_per_position: Float[np.ndarray, "H L"] | None = None
    mlp_gain_per_position: Float[np.ndarray, "H L"] | None = None
    mlp_coherence_per_position: Float[np.ndarray, "H L"] | None = None
    gain_directions: int | None = None
    mask: str = "causal"
    layer_masks: tuple[str, ...] | None = None
    per_layer: Float[np.ndarray, "K L"] | None = None
    variance: Mapping[str, Any] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)
    requested: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    source: str | None = None

    @classmethod
    def from_gains(
        cls,
        *,
        influence: Float[np.ndarray, " L"],
        stderr: Float[np.ndarray, " L"] | None,
        target: int,
        layers: int,
        gains: BranchGains | None,
        forward: Float[np.ndarray, " H"] | None,
        strength: str = "jacobian",
        depth: int | None = None,
        **rest: Any,
    ) -> MeasureRecord:
        """The record of a measurement from its :class:`BranchGains` (None for a family
        without an adapter) and the peer's forward ratio; ``strength`` says which a_l
        predictions use. ``depth`` keeps the first ``depth`` layers' gains only (a
        per-layer profile scored as a depth-l model). ``rest``: the other fields."""
        h = layers if depth is None else depth

        def first(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else np.asarray(a, dtype=np.float64)[:h]

        g = gains
        jacobian = None if g is None else g.residual_strength
        used = forward if strength == "forward" else jacobian
        return cls(
            influence=np.asarray(influence, dtype=np.float64),
            stderr=_finite_or_none(stderr),
            layers=h,
            target=int(target),
            residual_strength=first(used),
            residual_strength_method=None if used is None else strength,
            branch_gain=None if g is None else first(g.gain),
            residual_strength_forward=first(forward),
            mlp_gain=None if g is None else first(g.mlp_gain),
            mlp_coherence=None if g is None else first(g.mlp_coherence),
            gain_per_position=None if g is None else first(g.per_position),
            mlp_gain_per_position=None if g is None else first(g.mlp_gain_per_position),
            mlp_coherence_per_position=None if g is None else first(g.mlp_coherence_per_position),
            gain_directions=None if g is None else g.directions,
            **rest,
        )

    @property
    def length(self) -> int:
        return int(self.influence.size)

    @property
    def max_relative_stderr(self) -> float | None:
        if self.stderr is None:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.where(self.influence > 0, self.stderr / self.influence, np.nan)
        return float(np.nanmax(relative)) if np.isfinite(relative).any() else None

    def pooled_with(self, others: Sequence[MeasureRecord], influence: np.ndarray,
                    stderr: np.ndarray | None, source: str) -> MeasureRecord:  # fmt: skip
        """This record's setting with ``influence`` and ``stderr`` (the seeds pooled, by
        the caller's rule) and every per-layer and per-position array the mean over this
        record and ``others`` (NaN kept where every seed has NaN: a zero MLP); an array
        one of them lacks is None."""
        records = [self, *others]

        def mean(name: str) -> np.ndarray | None:
            values = [getattr(r, name) for r in records]
            if any(v is None for v in values):
                return None
            stack = np.stack(values)
            with np.errstate(invalid="ignore"):
                counts = np.sum(~np.isnan(stack), axis=0)
                total = np.nansum(stack, axis=0)
            return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)

        methods = {r.residual_strength_method for r in records}
        # By field name (Any: mypy checks each **kwargs value against every field).
        names = (*PER_LAYER, *PER_LAYER_SIGNED, *PER_POSITION, *PER_POSITION_SIGNED)
        arrays: dict[str, Any] = {n: mean(n) for n in names}
        return replace(
            self,
            influence=influence,
            stderr=stderr,
            residual_strength_method=methods.pop() if len(methods) == 1 else None,
            per_layer=None,
            variance={},
            source=source,
            **arrays,
        )

    @property
    def shape(self) -> ShapeIndices | None:
        """Shape indices of positions 1..target (:func:`lostmid.stats.shape.profile_shape`),
        None without finite standard errors."""
        t = self.target
        if self.stderr is None or not np.all(np.isfinite(self.stderr[:t])):
            return None
        if not self.influence[:t].mean() > 0:
            return None
        return profile_shape(self.influence[:t], self.stderr[:t])

    def record(self) -> dict[str, Any]:
        """The JSON form (the module docstring's layout)."""
        jacobian = None if self.branch_gain is None else self.branch_gain / (1.0 + self.branch_gain)
        arrays = {n: getattr(self, n) for n in (*PER_LAYER, *PER_LAYER_SIGNED, *PER_POSITION,
                                                 *PER_POSITION_SIGNED)}  # fmt: skip
        facts = {**self.facts, "layers": self.layers, "target": self.target}
        facts.setdefault("length", self.length)
        if self.layer_masks is None or len(set(self.layer_masks)) == 1:
            facts["mask"] = self.mask
        return to_jsonable(
            {
                "schema": SCHEMA,
                "positions": "1..L (index 0 is position 1)",
                "influence": self.influence,
                "stderr": self.stderr,
                **{
                    k: self.variance.get(k)
                    for k in (*VARIANCE, "stderr_basis", "best_probes_per_sample")
                },  # fmt: skip
                "max_relative_stderr": self.max_relative_stderr,
                "per_layer": self.per_layer,
                "residual_strength_method": self.residual_strength_method,
                "residual_strength_mean": None
                if self.residual_strength is None
                else float(np.mean(self.residual_strength)),
                "residual_strength_jacobian": jacobian,
                **arrays,
                "gain_directions": self.gain_directions,
                "layer_masks": None if self.layer_masks is None else list(self.layer_masks),
                "notes": list(self.notes),
                "summary": summarise_profile(self.influence, target=self.target),
                "shape": self.shape,
                "config": facts,
                "requested": None if self.requested is None else dict(self.requested),
                "metadata": dict(self.metadata),
            }
        )

    @classmethod
    def from_record(cls, data: Any, source: str = "measure.json") -> MeasureRecord:
        """Read and check a record (the module docstring); one-line errors naming
        ``source``."""
        where = source
        data = json_object(data, where)
        schema = data.get("schema")
        if schema is not None and schema != SCHEMA:
            raise UserError(
                f"{where}: a {schema} file, not a measurement ({SCHEMA}); pass the "
                "measure.json that lostmid measure or reproduce wrote"
            )
        config = json_object(data.get("config"), where, "config")
        influence = json_profile(data, "influence", where)
        length = influence.size
        stated = config.get("length")
        if stated is not None and json_whole(stated, where, "config.length", 2) != length:
            raise UserError(
                f"{where}: config.length is {config['length']} but influence has {length} values"
            )
        stderr = None
        if data.get("stderr") is not None:
            stderr = json_floats(data, "stderr", where)
            if stderr.size != length or np.any(~np.isfinite(stderr)) or np.any(stderr < 0):
                raise UserError(
                    f"{where}: stderr must be {length} finite non-negative values, one per position"
                )
        residual = None
        if data.get("residual_strength") is not None:
            residual = json_floats(data, "residual_strength", where)
        layers = config.get("layers", None if residual is None else residual.size)
        if layers is None:
            raise UserError(f"{where}: config.layers is missing; the theory needs the depth H")
        layers = json_whole(layers, where, "config.layers", 1)
        if residual is not None and residual.size != layers:
            raise UserError(
                f"{where}: residual_strength has {residual.size} values but config.layers is "
                f"{layers}; give one value per layer"
            )
        per_layer = {k: json_array(data, k, where, (layers,)) for k in PER_LAYER[1:]}
        per_layer |= {k: json_array(data, k, where, (layers,), True) for k in PER_LAYER_SIGNED}
        grid = (layers, length)
        per_position = {k: json_array(data, k, where, grid) for k in PER_POSITION}
        per_position |= {k: json_array(data, k, where, grid, True) for k in PER_POSITION_SIGNED}
        method = json_text(data.get("residual_strength_method"), where, "residual_strength_method")
        profiles = _per_layer(data.get("per_layer"), length, where)
        directions = data.get("gain_directions")
        if directions is not None:
            directions = json_whole(directions, where, "gain_directions", 0)
        mask = json_text(config.get("mask"), where, "config.mask")
        metadata = data.get("metadata") or {}
        json_object(metadata, where, "metadata")
        return cls(
            influence=influence,
            stderr=stderr,
            layers=layers,
            target=json_target(config.get("target"), length, where),
            residual_strength=residual,
            residual_strength_method=method,
            gain_directions=directions,
            mask=mask or "causal",
            layer_masks=_layer_masks(data.get("layer_masks"), layers, length, where),
            per_layer=profiles,
            variance={
                k: data[k]
                for k in (*VARIANCE, "stderr_basis", "best_probes_per_sample")
                if data.get(k) is not None
            },
            facts={k: v for k, v in config.items() if k not in ("layers", "target")},
            requested=data.get("requested"),
            metadata=metadata,
            notes=json_strings(data.get("notes"), where, "notes"),
            source=source,
            **per_layer,
            **per_position,
        )


def write_measure(path: Path, record: MeasureRecord) -> Path:
    """Write ``record`` to ``path`` (a measure.json): the one writer of the file."""
    return write_json(Path(path), record.record())


def read_measure(path: Path, option: str | None = None) -> MeasureRecord:
    """Read and check the measure.json at ``path``: the one reader of the file, through
    :func:`lostmid.files.read_result` (a file of another kind, by its schema tag, is
    one line; ``option`` names the flag that gave it)."""
    data = read_result(Path(path), "measure", option=option)
    return MeasureRecord.from_record(data, source=str(path))


def _finite_or_none(values: np.ndarray | None) -> np.ndarray | None:
    """An error profile as float64, or None when absent or undefined somewhere."""
    if values is None:
        return None
    array = np.asarray(values, dtype=np.float64)
    return array if np.all(np.isfinite(array)) else None


def _per_layer(rows: Any, length: int, where: str) -> np.ndarray | None:
    """``per_layer``: K >= 1 rows of ``length`` finite numbers (the profile after each
    measured layer), or None; ragged rows or text are one line naming ``where``."""
    if rows is None:
        return None
    values = None
    if (
        isinstance(rows, list)
        and rows
        and all(isinstance(r, list) and all(map(is_number, r)) for r in rows)
    ):
        try:
            values = np.array(rows, dtype=np.float64)
        except (ValueError, OverflowError):  # ragged rows, an int past 1e308
            values = None
    if values is None or values.ndim != 2 or values.shape[1] != length:
        raise UserError(
            f"{where}: 'per_layer' must be rows of {length} numbers, one row per measured layer"
        )
    if not np.all(np.isfinite(values)):
        raise UserError(f"{where}: 'per_layer' has non-finite values (nan or inf)")
    return values


def _layer_masks(specs: Any, layers: int, length: int, where: str) -> tuple[str, ...] | None:
    """``layer_masks``: H mask specs that :func:`lostmid.theory.layer_masks` accepts."""
    if specs is None:
        return None
    if not isinstance(specs, list) or not all(isinstance(m, str) for m in specs):
        raise UserError(f"{where}: 'layer_masks' must be a list of {layers} mask specs")
    try:
        masks = parse_layer_masks(specs, layers, length)
    except UserError as err:
        raise UserError(f"{where}: layer_masks: {err}") from None
    return tuple(m.spec() for m in masks)
