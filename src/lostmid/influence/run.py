"""``lostmid measure``: load a model, measure its influence profile, write results.

Writes ``out/measure.json`` (:class:`~lostmid.influence.record.MeasureRecord`, the one
record of a measurement, through its one writer: profile, error, variance split,
residual strengths, branch and MLP gains, layer masks, summary, resolved config,
provenance; its module lists the keys) and ``out/measure.png``. A family without an
adapter has no gains (null) and a note says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lostmid.errors import UserError
from lostmid.influence.config import MeasureConfig
from lostmid.influence.estimator import influence_profile
from lostmid.influence.flops import compile_choice, measurement_flops
from lostmid.influence.gains import BranchGains
from lostmid.influence.inputs import corpus_token_ids, random_token_ids
from lostmid.influence.plot import plot_influence
from lostmid.influence.profile import InfluenceProfile
from lostmid.influence.record import MeasureRecord, write_measure
from lostmid.influence.residual import forward_ratio, gains_and_forward_ratio
from lostmid.models import LoadedModel
from lostmid.models.budget import activation_bytes, dtype_bytes, parameter_count
from lostmid.models.load import resolve_config
from lostmid.report.layout import fit_table
from lostmid.runinfo import Timer
from lostmid.runs.budget import OVERRIDE, check_budget
from lostmid.runs.folder import RunFolder
from lostmid.theory import ProfileSummary, summarise_profile
from lostmid.typing import Float

FILES = ["measure.json", "measure.png"]


@dataclass(frozen=True, eq=False)
class MeasureResult:
    """One measurement; its record is ``measure.json``.

    Attributes:
        config: what was asked.
        resolved: the resolved facts of the run (model, inputs, target, attention, ...),
            written as ``config``.
        profile: the measured profile (positions 1..L at indices 0..L-1).
        gains: the branch gains (s_l, per position when kept, MLP gain and coherence),
            or None for a family without an adapter.
        residual_strength_forward: (H,) the peer's forward ratio, or None.
        layer_masks: each layer's attention mask spec, or None.
        summary: primacy, valley, recency, peak-to-valley of the profile.
        metadata: provenance (:func:`lostmid.runinfo.run_metadata`).
        notes: what was skipped and why.
    """

    config: MeasureConfig
    resolved: Mapping[str, Any]
    profile: InfluenceProfile
    gains: BranchGains | None
    residual_strength_forward: Float[np.ndarray, " H"] | None
    layer_masks: tuple[str, ...] | None
    summary: ProfileSummary
    metadata: Mapping[str, Any]
    notes: tuple[str, ...] = ()

    @property
    def residual_strength(self) -> Float[np.ndarray, " H"] | None:
        """The a_l predictions use: jacobian (s/(1+s)) or forward, per the config."""
        if self.config.strength == "forward":
            return self.residual_strength_forward
        return None if self.gains is None else self.gains.residual_strength

    @property
    def max_relative_stderr(self) -> float | None:
        relative = self.profile.relative_stderr
        return float(np.nanmax(relative)) if np.isfinite(relative).any() else None

    def measure_record(self) -> MeasureRecord:
        """The one record of measure.json (:class:`~lostmid.influence.record.MeasureRecord`)."""
        p = self.profile
        masks = self.layer_masks
        return MeasureRecord.from_gains(
            influence=p.influence,
            stderr=p.stderr,
            target=p.target,
            layers=int(self.resolved["layers"]),
            gains=self.gains,
            forward=self.residual_strength_forward,
            strength=self.config.strength,
            mask=masks[0] if masks is not None and len(set(masks)) == 1 else "causal",
            layer_masks=masks,
            per_layer=p.per_layer,
            variance={
                "mean_sq": p.mean_sq,
                "stderr_sq": p.stderr_sq,
                "var_probe": p.var_probe,
                "var_sample": p.var_sample,
                "stderr_basis": p.stderr_basis,
                "best_probes_per_sample": p.best_probes_per_sample(),
            },
            facts=self.resolved,
            requested=self.config.record(),
            metadata=self.metadata,
            notes=self.notes,
        )

    def record(self) -> dict[str, Any]:
        return self.measure_record().record()


def summary_table(result: MeasureResult) -> Table:
    """The profile's landmarks, the residual strengths and gains, the error and the time.

    Per-layer quantities show layer 1, the mean over layers and layer H.
    """
    s, g = result.summary, result.gains

    def fmt(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4g}"

    def layers(values: np.ndarray | None) -> str:
        if values is None:
            return "n/a"
        v = np.asarray(values, dtype=float)
        if v.size <= 3:
            return " / ".join(f"{x:.3g}" for x in v)
        return f"{v[0]:.3g} / {np.nanmean(v):.3g} / {v[-1]:.3g}"

    table = Table(
        title=f"influence on position {s.target} of {result.config.model} ({result.config.output})",
        caption="per-layer rows: layer 1 / mean over layers / layer H",
    )
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("primacy (j = 1)", fmt(s.primacy))
    table.add_row("valley", f"{fmt(s.valley)} at j = {s.valley_position}")
    table.add_row("dead-zone level (middle half)", fmt(s.dead_zone_level))
    table.add_row(f"recency (j = {s.target})", fmt(s.recency))
    table.add_row("peak-to-valley", fmt(s.peak_to_valley))
    shape = result.measure_record().shape
    if shape is not None:
        table.add_row(
            "shape (95% intervals)",
            f"{shape.shape}; bias index {shape.bias.estimate:+.3g} "
            f"[{shape.bias.ci_low:+.3g}, {shape.bias.ci_high:+.3g}] of the mean",
        )
    table.add_row(f"a_l used ({result.config.strength})", layers(result.residual_strength))
    table.add_row("branch gain s_l", layers(None if g is None else g.gain))
    table.add_row("a_l = s/(1+s) (jacobian)", layers(None if g is None else g.residual_strength))
    table.add_row("a_l forward ratio (peer)", layers(result.residual_strength_forward))
    table.add_row("MLP gain", layers(None if g is None else g.mlp_gain))
    table.add_row("MLP coherence", layers(None if g is None else g.mlp_coherence))
    kept = g is not None and g.per_position is not None
    table.add_row("per-position gains (H x L)", "written" if kept else "not written")
    if result.layer_masks is not None:
        kinds = dict.fromkeys(result.layer_masks)  # in layer order
        counts = [f"{m} x {result.layer_masks.count(m)}" for m in kinds]
        table.add_row(
            "layer masks", counts[0].split(" x ")[0] if len(kinds) == 1 else ", ".join(counts)
        )
    table.add_row("max relative s.e.", fmt(result.max_relative_stderr))
    table.add_row("seconds", f"{result.metadata['timings_s'].get('total', 0):.1f}")
    return table


def input_bytes(samples: int, probes: int, directions: int, length: int, hidden: int) -> float:
    """The least memory a profile's inputs hold: the token ids and profiles of every
    sample, the probe directions and the branch gains' random directions of one sample
    (float64, ``length x hidden`` each).

    >>> input_bytes(1, 1, 10**12, 8, 32) > 2e15
    True
    """
    return 16.0 * samples * length + 8.0 * (probes + directions) * length * hidden


def check_measure_size(
    config: MeasureConfig, attention: str, override: str | None = OVERRIDE
) -> None:
    """Refuse a measurement whose model and activations cannot fit this machine's free
    memory (:func:`lostmid.runs.budget.check_budget`), before the model is built: its
    weights (:func:`lostmid.models.budget.parameter_count`) and the activations of one
    batch of ``batch_size`` sequences kept for the backward passes."""
    hf = resolve_config(config.model, trust_remote_code=config.trust_remote_code)
    weights = parameter_count(hf) * dtype_bytes(config.dtype)
    tokens = config.batch_size * config.length
    acts = activation_bytes(
        hf, tokens=tokens, length=config.length, dtype=config.dtype, eager=attention == "eager"
    )
    hidden = getattr(hf, "hidden_size", None) or getattr(hf, "n_embd", None) or 1024
    ids = input_bytes(config.samples, config.probes, config.gain_directions, config.length, hidden)
    passes = config.samples * config.probes  # one backward pass per sample and probe
    seconds = passes * 6.0 * parameter_count(hf) * config.length / PASS_FLOPS_PER_S
    what = (
        f"measure --model {config.model} --length {config.length} --samples "
        f"{config.samples} --probes {config.probes} --gain-directions {config.gain_directions:,}"
    )
    # + what a measuring process holds besides (interpreter, torch, buffers): about 1 GiB
    check_budget(what, need_bytes=weights + acts + ids + 2**30, seconds=seconds, override=override)


PASS_FLOPS_PER_S = 1e11
"""A generous rate for the time estimate (a fast machine's forward and backward passes):
only a run that would take over a day even at this rate is refused."""


CPU_HALF_NOTE = (
    "--dtype float16 on the cpu: torch's cpu half-precision kernels, slower than float32 "
    "and about 3 significant digits per value; use float32 on a cpu unless half precision "
    "is what is measured"
)
"""Said in measure.json's notes (and printed) when float16 runs on the cpu: it runs, but
rarely as meant."""


FOLDER = RunFolder("measure", writes=tuple(FILES))
"""What ``run_measure`` writes into ``--out``."""


@FOLDER.holds
def run_measure(
    config: MeasureConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
) -> MeasureResult:
    """Measure, write ``measure.json`` and ``measure.png`` into ``out``, print a summary."""
    folder = FOLDER.open(out, overwrite=overwrite)
    out = folder.path
    attention = config.attention_implementation
    if not config.no_size_check and config.device == "cpu" and config.device_map is None:
        check_measure_size(config, attention)
    timer = Timer()
    with timer("total"):
        with timer("load"):
            loaded = config.model_spec.load(
                init=config.init,
                seed=config.seed,
                no_rope=config.no_rope,
                no_pos_emb=config.no_pos_emb,
                no_alibi=config.no_alibi,
                attention=attention,
                size_check=not config.no_size_check,
            )
        loaded.check_length(config.length)  # before the inputs are drawn
        with timer("inputs"):
            if config.corpus is None:
                ids = random_token_ids(
                    loaded.vocab_size, config.samples, config.length, config.seed
                )
            else:
                ids = corpus_token_ids(
                    Path(config.corpus),
                    loaded.vocab_size,
                    config.samples,
                    config.length,
                    config.seed,
                )
        compile_used, compile_why = resolve_compile(loaded, config)
        with timer("influence"):
            profile = influence_profile(
                loaded,
                ids,
                probes=config.probes,
                output=config.output,
                target=config.target_position,
                seed=config.seed,
                per_layer=config.per_layer,
                exact=config.exact,
                checkpointing=config.checkpointing,
                progress=console is not None,
                batch_size=config.batch_size,
                strategy=config.strategy,
                compile=compile_used,
                console=console,
            )
        with timer("residual_strength"):
            gains, forward, masks, notes = measure_strengths(loaded, ids, config, console)
        if config.dtype == "float16" and config.device == "cpu" and config.device_map is None:
            notes.insert(0, CPU_HALF_NOTE)
        if console is not None:
            for note in notes:
                console.print(Text.assemble(("note:", "yellow"), " ", note))
        summary = summarise_profile(profile.influence, target=profile.target)
    resolved = {
        **loaded.describe(),
        "length": config.length,
        "samples": config.samples,
        "probes": config.probes,
        "output": config.output,
        "target": profile.target,
        "per_layer": config.per_layer,
        "exact": config.exact,
        "checkpointing": config.checkpointing,
        "corpus": None if config.corpus is None else str(config.corpus),
        "inputs": "random token ids" if config.corpus is None else "byte-level corpus windows",
        "batch_size": config.batch_size,
        "strategy": config.strategy,
        "compile": {"requested": config.compile, "used": compile_used, "why": compile_why},
        "attention": attention,
        "probe_kind": profile.probe_kind,
        "strength": config.strength,
        "per_position_gains": None if gains is None else gains.per_position is not None,
        "gain_directions": config.gain_directions,
    }
    if masks is not None and len(set(masks)) == 1:
        resolved["mask"] = masks[0]  # one mask for every layer; else see layer_masks
    result = MeasureResult(
        config=config,
        resolved=resolved,
        profile=profile,
        gains=gains,
        residual_strength_forward=forward,
        layer_masks=masks,
        summary=summary,
        metadata=folder.metadata(resolved, config.seed, timer.seconds),
        notes=tuple(notes),
    )
    write_measure(out / "measure.json", result.measure_record())
    plot_influence(
        profile,
        out / "measure.png",
        title=(
            f"{config.model} ({loaded.init}, seed {config.seed}): "
            f"{config.output} at t = {profile.target}"
        ),
    )
    if console is not None:
        console.print(fit_table(summary_table(result)))
        console.print(f"wrote {out / 'measure.json'} and {out / 'measure.png'}")
    return result


def resolve_compile(loaded: LoadedModel, config: MeasureConfig) -> tuple[bool, str]:
    """``--compile``: on, off, or auto by :func:`~lostmid.influence.flops.compile_choice`
    on this measurement's FLOPs; (used, why), recorded in the resolved config."""
    if config.compile != "auto":
        return config.compile == "on", f"--compile {config.compile}"
    flops = measurement_flops(
        loaded, config.length, samples=config.samples, probes=config.probes, output=config.output
    )
    return compile_choice(
        flops,
        device=config.device,
        checkpointing=config.checkpointing,
        device_map=config.device_map is not None,
    )


def measure_strengths(
    loaded: LoadedModel, ids: Any, config: MeasureConfig, console: Any = None
) -> tuple[BranchGains | None, np.ndarray | None, tuple[str, ...] | None, list[str]]:
    """Branch gains, the forward ratio and the layer masks of ``loaded`` on ``ids``.

    Returns (gains, forward ratio (H,), layer masks, notes); a family without the
    places (no adapter) gets None for each and a note saying why. The per-position
    arrays are kept as :meth:`MeasureConfig.per_position_gains_for` says. ``console``:
    where the branch gains' progress goes (their samples take as long as the profile's).
    """
    from lostmid.runs.progress import count_bar

    notes: list[str] = []
    gains = forward = masks = None
    bar = count_bar("branch gains", console)
    try:
        with bar:
            task = bar.add_task("branch gains", total=int(ids.shape[0]))
            gains, forward = gains_and_forward_ratio(  # one forward a sample for both
                loaded,
                ids,
                directions=config.gain_directions,
                seed=config.seed,
                per_position=config.per_position_gains_for(loaded.num_layers),
                batch_size=config.batch_size,
                done=lambda k: bar.advance(task, k),
            )
    except UserError as err:  # generic families: the profile still stands
        notes.append(f"branch gains skipped: {err}")
    if forward is None:  # the gains stopped: the ratio on its own
        try:
            forward = forward_ratio(loaded, ids, batch_size=config.batch_size)
        except UserError as err:
            notes.append(f"forward residual strength skipped: {err}")
    try:
        masks = tuple(loaded.adapter.layer_masks(loaded.model.config, ids.shape[1]))
    except UserError as err:
        notes.append(f"layer masks skipped: {err}")
    return gains, forward, masks, notes
