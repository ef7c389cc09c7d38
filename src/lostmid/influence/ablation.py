"""The ablation ladder: which real ingredient breaks the theory (``lostmid ablate``).

The same model (the same weights: one seed per model, the same seed on every rung) is
measured with one real ingredient switched on at a time, from the theory's world to
the real one (:data:`~lostmid.influence.config.RUNGS`; the switches are
:mod:`lostmid.models.ablations`):

    (i)   uniform     uniform attention (W_Q = W_K = 0), no MLP, no positional encoding
    (ii)  mlp         (i) + the MLP
    (iii) logits      (ii) + the real attention logits (positions still off)
    (iv)  real        (iii) + the positional encoding: the real model
    cross frozen-norm (ii) with every norm's 1/sigma frozen to its mean over positions
    cross scaled-embeddings (iv) with the token embeddings scaled (x30)

On each rung and seed: the measured profile (:func:`~lostmid.influence.influence_profile`
on random-token inputs), the branch gains on the same inputs
(:func:`~lostmid.influence.gains.branch_gains`: a_l = s_l/(1+s_l), per-position gains,
MLP gain and coherence) and the layer masks. Then, per rung, every candidate of
:func:`lostmid.compare.compare_measurements` is scored against the seeds: the
zero-parameter predictions ``predicted:rollout`` and ``predicted:jacobian`` (uniform
theory with the Jacobian a_l), ``predicted:positional`` (position-resolved jacobian
kernel with the per-position gains, the MLP and the layer masks) and
``predicted:positional-rollout``, the fitted theory and the naive baselines. With two
or more seeds a prediction's score is its W1 per seed (mean and spread), a fitted
candidate's is out of sample (fit on the other seeds), and the seed noise floor
(W1 between independent seeds) is the resolution; with one seed, scores are in sample
and there is no floor. Log-binned W1 is reported beside W1.

Where the gap opens: the first rung of the ladder (i)-(iv), in order, on which the best
prediction's W1 exceeds both :data:`GAP_FACTOR` times the noise floor and
:data:`GAP_MIN_W1` (needs 2+ seeds; the cross rungs are diagnoses, not steps).

Resumable: each (rung, seed) measurement is a stage of :class:`lostmid.stages.StageStore`
under ``OUT/stages``, reused when its configuration is unchanged (``overwrite``
recomputes). Writes ``OUT/ablation.json`` (:meth:`AblationResult.record`) and
``OUT/ablation.png``, and prints the table.

>>> config = AblationConfig(model="tiny-gpt2", length=16, seeds=1, samples=1, probes=1,
...                         rungs="uniform,real")
>>> loaded, ids, switches = build_rung(config, "uniform", seed=0)
>>> switches[1]
'uniform attention: W_Q = W_K = 0 in 2 layers (q.k = 0)'
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lostmid.attention_choice import attention_for
from lostmid.compare.candidates import Candidate, compare_measurements
from lostmid.compare.inputs import MeasuredProfile
from lostmid.compare.scoring import MeanSpread, NoiseFloor
from lostmid.errors import UserError
from lostmid.influence.config import RUNGS, AblationConfig
from lostmid.influence.estimator import NonFiniteError, influence_profile
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
from lostmid.report.plots import new_figure, save_figure
from lostmid.runinfo import run_metadata, write_json
from lostmid.stages import StageStore
from lostmid.theory import KERNELS, summarize_profile
from lostmid.typing import Float

__all__ = [
    "GAP_FACTOR",
    "RUNG_SPECS",
    "AblationConfig",
    "AblationResult",
    "RungMeasurement",
    "RungResult",
    "RungSpec",
    "build_rung",
    "measure_rung",
    "run_ablate",
]

FILES = ["ablation.json", "ablation.png"]
GAP_FACTOR = 2.0
"""A rung "opens the gap" when its best prediction's W1 exceeds this times the floor..."""
GAP_MIN_W1 = 0.005
"""... and this (W1 differences below it are under the issue's resolution target)."""
PREDICTIONS = (
    "predicted:rollout",
    "predicted:jacobian",
    "predicted:positional-rollout",
    "predicted:positional",
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
    norm scales are frozen on the inputs last (measured on the switched model).
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
    )
    if config.length > loaded.max_length:
        raise UserError(
            f"--length {config.length} exceeds the maximum {loaded.max_length} of "
            f"{config.model}; use --length {loaded.max_length} or less"
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


@dataclass(frozen=True)
class CandidateScore:
    """One candidate on one rung.

    Attributes:
        name, kind: the candidate (:class:`lostmid.compare.Candidate`).
        parameter_count: numbers taken from the measurement (0: a prediction).
        wasserstein1, binned_wasserstein1: its score (per seed for a prediction and out
            of sample for a fitted candidate with 2+ seeds; in sample with one seed).
        profile: (L,) the candidate on the pooled measurement's axis.
    """

    name: str
    kind: str
    parameter_count: int
    wasserstein1: MeanSpread
    binned_wasserstein1: MeanSpread
    profile: Float[np.ndarray, " L"]

    @classmethod
    def of(cls, candidate: Candidate) -> CandidateScore:
        return cls(
            name=candidate.name,
            kind=candidate.kind,
            parameter_count=candidate.parameter_count,
            wasserstein1=candidate.score("wasserstein1"),
            binned_wasserstein1=candidate.score("binned_wasserstein1"),
            profile=candidate.profile,
        )

    def record(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "parameter_count": self.parameter_count,
            "wasserstein1": self.wasserstein1.record(),
            "binned_wasserstein1": self.binned_wasserstein1.record(),
            "profile": self.profile,
        }


@dataclass(frozen=True)
class RungResult:
    """One rung over its seeds.

    Attributes:
        spec: what the rung is.
        seeds: the measurements, one per seed.
        measured: (L,) the seeds pooled (mean of the normalised profiles).
        log10_peak_to_valley: of ``measured``.
        candidates: every candidate's score, by name.
        noise_floor: W1 between seeds (None with one seed).
        notes: what the comparison could not do.
    """

    spec: RungSpec
    seeds: tuple[RungMeasurement, ...]
    measured: Float[np.ndarray, " L"]
    log10_peak_to_valley: float | None
    candidates: dict[str, CandidateScore]
    noise_floor: NoiseFloor | None
    notes: tuple[str, ...]

    @property
    def best_prediction(self) -> CandidateScore:
        """The zero-parameter candidate with the lowest mean W1."""
        return _best([c for c in self.candidates.values() if c.kind == "predicted"])

    @property
    def best_baseline(self) -> CandidateScore | None:
        """The naive baseline with the lowest mean W1 (out of sample with 2+ seeds)."""
        bases = [c for c in self.candidates.values() if c.kind == "baseline"]
        return _best(bases) if bases else None

    @property
    def opens_gap(self) -> bool | None:
        """Whether the best prediction's W1 exceeds :data:`GAP_FACTOR` x the noise
        floor's (None without a floor)."""
        if self.noise_floor is None:
            return None
        return (
            self.best_prediction.wasserstein1.mean > GAP_FACTOR * self.noise_floor.wasserstein1.mean
        )

    def record(self) -> dict[str, Any]:
        first = self.seeds[0]
        floor = self.noise_floor
        return {
            "rung": self.spec.name,
            "label": self.spec.label,
            "ingredient": self.spec.ingredient,
            "ingredients": {
                "positions": self.spec.positions,
                "attention_logits": self.spec.logits,
                "mlp": self.spec.mlp,
                "frozen_norm": self.spec.frozen_norm,
                "scaled_embeddings": self.spec.scaled_embeddings,
            },
            "switches": list(first.switches),
            "seeds": [m.seed for m in self.seeds],
            "measured": self.measured,
            "log10_peak_to_valley": self.log10_peak_to_valley,
            "residual_strength": np.mean([m.residual_strength for m in self.seeds], axis=0),
            "mlp_gain": np.mean([m.mlp_gain for m in self.seeds], axis=0),
            "mlp_coherence": _nanmean([m.mlp_coherence for m in self.seeds]),
            "layer_masks": list(first.layer_masks),
            "candidates": {name: c.record() for name, c in self.candidates.items()},
            "best_prediction": self.best_prediction.name,
            "best_baseline": None if self.best_baseline is None else self.best_baseline.name,
            "noise_floor": None
            if floor is None
            else {
                "seeds": floor.seeds,
                "wasserstein1": floor.wasserstein1.record(),
                "binned_wasserstein1": floor.metrics["binned_wasserstein1"].record(),
            },
            "opens_gap": self.opens_gap,
            "per_seed": [m.record() for m in self.seeds],
            "notes": list(self.notes),
        }


def score_rung(spec: RungSpec, measurements: Sequence[RungMeasurement]) -> RungResult:
    """Every candidate of :func:`lostmid.compare.compare_measurements` on one rung."""
    card = compare_measurements(
        [m.measured_profile() for m in measurements], predict=True, kernels=KERNELS
    )
    summary = summarize_profile(card.measured.influence, target=card.measured.target)
    return RungResult(
        spec=spec,
        seeds=tuple(measurements),
        measured=card.measured.influence,
        log10_peak_to_valley=summary.log10_peak_to_valley,
        candidates={name: CandidateScore.of(c) for name, c in card.candidates.items()},
        noise_floor=card.noise_floor,
        notes=card.notes,
    )


@dataclass(frozen=True)
class AblationResult:
    """The ladder; :meth:`record` is ablation.json.

    Attributes:
        config: what was asked.
        rungs: one :class:`RungResult` per rung, in ladder order.
        metadata: provenance (:func:`lostmid.runinfo.run_metadata`), stages reused and
            computed.
        skipped: rungs that could not be measured, with why (a switched model whose
            activations overflow: e.g. SwiGLU blocks with frozen norm scales, where
            nothing renormalises the stream and the MLP is quadratic in it).
    """

    config: AblationConfig
    rungs: tuple[RungResult, ...]
    metadata: Mapping[str, Any]
    skipped: Mapping[str, str] = field(default_factory=dict)

    @property
    def gap_rung(self) -> str | None:
        """The first rung of the ladder (i)-(iv), in order, whose best prediction leaves
        the noise floor (:attr:`RungResult.opens_gap`); None if none does or there is
        no floor."""
        ladder = [r for r in self.rungs if r.spec.label != "cross"]
        return next((r.spec.name for r in ladder if r.opens_gap), None)

    def record(self) -> dict[str, Any]:
        return {
            "config": self.config.record(),
            "definitions": {
                "rungs": {name: f"{s.label} {s.ingredient}" for name, s in RUNG_SPECS.items()},
                "score": "W1 between the profiles normalised to sum 1 (positions "
                "x = (j-1)/(L-1)); predictions per seed, fitted candidates out of sample "
                "(leave one seed out), mean and spread over seeds; in sample with one seed",
                "noise_floor": "W1 between every pair of seeds (mean and spread)",
                "opens_gap": f"best prediction's W1 > {GAP_FACTOR:g} x the noise floor's "
                f"and > {GAP_MIN_W1:g}; gap_rung: the first such rung of (i)-(iv)",
            },
            "rungs": [r.record() for r in self.rungs],
            "skipped": dict(self.skipped),
            "gap_rung": self.gap_rung,
            "files": {"plot": "ablation.png"},
            "metadata": dict(self.metadata),
        }


def run_ablate(
    config: AblationConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
) -> AblationResult:
    """Measure (or resume) every rung at every seed, score, write ablation.json and .png.

    A (rung, seed) measurement already saved under ``out/stages`` with the same
    configuration is reused unless ``overwrite``.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a directory")
    # Fail in seconds on a bad model or length, before any stage.
    build_rung(config, config.rungs[0], config.seed)
    out.mkdir(parents=True, exist_ok=True)
    store = StageStore(out, fresh=overwrite)
    start = time.perf_counter()
    rungs, skipped = [], {}
    for rung in config.rungs:
        measurements = []
        for seed in config.seed_list():
            name = f"{rung}-seed{seed}"
            if console is not None:
                console.print(f"ablate: {name}", highlight=False)
            try:
                record = store.run(
                    name,
                    _stage_config(config, rung, seed),
                    lambda r=rung, s=seed: measure_rung(config, r, s),
                )
            except NonFiniteError as err:  # the switched model itself overflows
                skipped[rung] = f"seed {seed}: {err}"
                if console is not None:
                    console.print(f"[yellow]rung {rung} skipped:[/] {escape(str(err))}")
                break
            measurements.append(RungMeasurement.from_record(record))
        if rung not in skipped:
            rungs.append(score_rung(RUNG_SPECS[rung], measurements))
    if not rungs:
        raise UserError(f"no rung could be measured; {next(iter(skipped.items()))[1]}")
    seconds = time.perf_counter() - start
    metadata = run_metadata(
        "ablate",
        config.record(),
        config.seed,
        {"total": seconds, **{f"stage:{k}": v for k, v in store.seconds.items()}},
    )
    metadata["stages_reused"] = store.reused
    metadata["stages_computed"] = store.computed
    result = AblationResult(config=config, rungs=tuple(rungs), metadata=metadata, skipped=skipped)
    write_json(out / "ablation.json", result)
    save_figure(ablation_figure(result), out / "ablation.png")
    if console is not None:
        console.print(ablation_table(result))
        gap = result.gap_rung
        if gap is not None:
            console.print(
                f"the gap opens at rung {RUNG_SPECS[gap].label} {gap}: its best prediction's "
                f"W1 is more than {GAP_FACTOR:g} x the seed noise floor and {GAP_MIN_W1:g}"
            )
        elif config.seeds > 1:
            console.print(
                "no ladder rung's best prediction leaves the seed noise floor "
                f"(W1 > {GAP_FACTOR:g} x floor and > {GAP_MIN_W1:g})"
            )
        console.print(
            f"{len(store.computed)} measurements computed, {len(store.reused)} reused, "
            f"{seconds:.0f} s; wrote {escape(str(out / 'ablation.json'))} and ablation.png"
        )
    return result


def _stage_config(config: AblationConfig, rung: str, seed: int) -> dict[str, Any]:
    """What identifies one (rung, seed) measurement."""
    record = config.record()
    for key in ("rungs", "seeds", "seed"):
        record.pop(key)
    if not RUNG_SPECS[rung].scaled_embeddings:
        record.pop("embedding_scale")
    return {**record, "rung": rung, "seed": seed}


TABLE_COLUMNS = {  # candidate -> column of the printed table (all are in ablation.json)
    "predicted:rollout": "rollout",
    "predicted:jacobian": "jacobian",
    "predicted:positional": "positional",
}


def ablation_table(result: AblationResult) -> Table:
    """Rows: rungs; columns: W1 of the predictions, the best baseline and the floor."""
    seeds = result.config.seeds
    where = "per seed" if seeds > 1 else "in sample (one seed)"
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"Ablation ladder of {result.config.model} (L = {result.config.length}, "
        f"{seeds} seed{'s' if seeds > 1 else ''}): W1 to the measurement",
        caption=f"W1 mean and sd over seeds ({where}), log-binned W1 in brackets. "
        "baseline: the best naive baseline (out of sample with 2+ seeds); floor: W1 "
        "between seeds; p/v: log10 peak/valley of the measurement",
    )
    table.add_column("rung", overflow="fold", max_width=18)
    table.add_column("p/v", justify="right", no_wrap=True)
    for column in (*TABLE_COLUMNS.values(), "baseline", "floor"):
        table.add_column(column, justify="right", no_wrap=True)
    for r in result.rungs:
        base = r.best_baseline
        floor = r.noise_floor
        table.add_row(
            f"{r.spec.label} {r.spec.name}",
            _fmt(r.log10_peak_to_valley, 2),
            *[_cell(r.candidates.get(name)) for name in TABLE_COLUMNS],
            _cell(base) + ("" if base is None else f"\n{base.name.removeprefix('baseline:')}"),
            "-"
            if floor is None
            else _cell_of(floor.wasserstein1, floor.metrics["binned_wasserstein1"]),
        )
    return table


def ablation_figure(result: AblationResult) -> Any:
    """Top: measured vs predicted per rung (normalised, log y). Bottom: W1 per rung per
    candidate, with the seed noise floor."""
    rungs = result.rungs
    fig = new_figure((max(8.0, 2.6 * len(rungs)), 6.5))
    grid = fig.add_gridspec(2, len(rungs), height_ratios=(1.2, 1.0))
    shown = ("predicted:jacobian", "predicted:positional")
    for index, r in enumerate(rungs):
        ax = fig.add_subplot(grid[0, index])
        pos = np.arange(1, r.measured.size + 1)
        m = r.measured / r.measured.sum()
        ok = m > 0
        ax.plot(pos[ok], m[ok], color="k", lw=1.2, label="measured")
        for color, name in zip(("C0", "C3"), shown, strict=True):
            c = r.candidates.get(name)
            if c is None:
                continue
            p = c.profile / c.profile.sum()
            keep = p > 0
            ax.plot(pos[keep], p[keep], color=color, lw=0.9, ls="--", label=name)
        ax.set_yscale("log")
        ax.set_title(f"{r.spec.label} {r.spec.name}", fontsize=9)
        ax.set_xlabel("position j", fontsize=8)
        ax.tick_params(labelsize=7)
        if index == 0:
            ax.set_ylabel("share of influence", fontsize=8)
            ax.legend(fontsize=6, loc="best")
    ax = fig.add_subplot(grid[1, :])
    x = np.arange(len(rungs))
    names = [p for p in PREDICTIONS if any(p in r.candidates for r in rungs)] + ["best baseline"]
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        scores = [
            r.best_baseline if name == "best baseline" else r.candidates.get(name) for r in rungs
        ]
        mean = [np.nan if s is None else s.wasserstein1.mean for s in scores]
        spread = [0.0 if s is None else s.wasserstein1.spread for s in scores]
        ax.bar(x - 0.4 + (k + 0.5) * width, mean, width, yerr=spread, label=name, color=f"C{k}")
    floors = [np.nan if r.noise_floor is None else r.noise_floor.wasserstein1.mean for r in rungs]
    ax.hlines(floors, x - 0.42, x + 0.42, color="k", lw=2, zorder=3, label="seed noise floor")
    ax.set_xticks(x, [f"{r.spec.label}\n{r.spec.name}" for r in rungs], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("W1 to the measurement")
    ax.legend(fontsize=7, ncols=len(names) + 1, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    fig.suptitle(
        f"Ablation ladder: {result.config.model}, L = {result.config.length}, "
        f"{result.config.seeds} seed{'s' if result.config.seeds > 1 else ''}",
        fontsize=10,
    )
    return fig


# -- internals ---------------------------------------------------------------------------


def _best(scores: Sequence[CandidateScore]) -> CandidateScore:
    def key(c: CandidateScore) -> float:
        value = c.wasserstein1.mean
        return value if np.isfinite(value) else float("inf")

    return min(scores, key=key)


def _nanmean(rows: Sequence[np.ndarray]) -> np.ndarray:
    stacked = np.array(rows, dtype=np.float64)
    out = np.full(stacked.shape[1:], np.nan)
    seen = np.isfinite(stacked).any(axis=0)
    out[seen] = np.nanmean(stacked[:, seen], axis=0)
    return out


def _cell(score: CandidateScore | None) -> str:
    if score is None:
        return "-"
    return _cell_of(score.wasserstein1, score.binned_wasserstein1)


def _cell_of(w1: MeanSpread, binned: MeanSpread) -> str:
    """mean, then +-sd (with 2+ values), then [binned mean], one per line."""
    spread = f"\n+-{_fmt(w1.spread, 4)}" if w1.n > 1 else ""
    return f"{_fmt(w1.mean, 4)}{spread}\n[{_fmt(binned.mean, 4)}]"


def _fmt(value: float | None, digits: int) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.{digits}f}"
