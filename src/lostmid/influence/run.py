"""``lostmid measure``: load a model, measure its influence profile, write results.

Writes ``out/measure.json`` (the :class:`MeasureResult`'s record: profile, error,
variance split, residual strength, summary, resolved config, provenance) and
``out/measure.png``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from lostmid.errors import UserError
from lostmid.influence.config import MeasureConfig
from lostmid.influence.estimator import InfluenceProfile, influence_profile
from lostmid.influence.inputs import corpus_token_ids, random_token_ids
from lostmid.influence.plot import plot_influence
from lostmid.influence.residual import residual_strength
from lostmid.models import load_model
from lostmid.runinfo import Timer, prepare_out, run_metadata, write_json
from lostmid.theory import ProfileSummary, summarize_profile
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
        residual_strength: (H,) a_l, or None for a family without an adapter.
        summary: primacy, valley, recency, peak-to-valley of the profile.
        metadata: provenance (:func:`lostmid.runinfo.run_metadata`).
    """

    config: MeasureConfig
    resolved: Mapping[str, Any]
    profile: InfluenceProfile
    residual_strength: Float[np.ndarray, " H"] | None
    summary: ProfileSummary
    metadata: Mapping[str, Any]

    @property
    def max_relative_stderr(self) -> float | None:
        relative = self.profile.relative_stderr
        return float(np.nanmax(relative)) if np.isfinite(relative).any() else None

    def record(self) -> dict[str, Any]:
        p, strength = self.profile, self.residual_strength
        return {
            "positions": "1..L (index 0 is position 1)",
            "influence": p.influence,
            "stderr": p.stderr,
            "mean_sq": p.mean_sq,
            "stderr_sq": p.stderr_sq,
            "var_probe": p.var_probe,
            "var_sample": p.var_sample,
            "stderr_basis": p.stderr_basis,
            "best_probes_per_sample": p.best_probes_per_sample(),
            "max_relative_stderr": self.max_relative_stderr,
            "per_layer": p.per_layer,
            "residual_strength": strength,
            "residual_strength_mean": None if strength is None else float(strength.mean()),
            "summary": self.summary,
            "config": dict(self.resolved),
            "requested": self.config.record(),
            "metadata": dict(self.metadata),
        }


def summary_table(result: MeasureResult) -> Table:
    """The profile's landmarks, the residual strength, the error and the time."""
    s, strength = result.summary, result.residual_strength

    def fmt(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4g}"

    table = Table(
        title=f"influence on position {s.target} of {result.config.model} ({result.config.output})"
    )
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("primacy (j = 1)", fmt(s.primacy))
    table.add_row("valley", f"{fmt(s.valley)} at j = {s.valley_position}")
    table.add_row("dead-zone level (middle half)", fmt(s.dead_zone_level))
    table.add_row(f"recency (j = {s.target})", fmt(s.recency))
    table.add_row("peak-to-valley", fmt(s.peak_to_valley))
    table.add_row("mean residual strength", fmt(None if strength is None else strength.mean()))
    table.add_row("max relative s.e.", fmt(result.max_relative_stderr))
    table.add_row("seconds", f"{result.metadata['timings_s'].get('total', 0):.1f}")
    return table


def run_measure(
    config: MeasureConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
) -> MeasureResult:
    """Measure, write ``measure.json`` and ``measure.png`` into ``out``, print a summary."""
    out = prepare_out(Path(out), FILES, overwrite)
    attention = config.attention_implementation
    timer = Timer()
    with timer("total"):
        with timer("load"):
            loaded = load_model(
                config.model,
                init=config.init,
                seed=config.seed,
                no_rope=config.no_rope,
                no_pos_emb=config.no_pos_emb,
                dtype=config.dtype,
                device=config.device,
                attn_implementation=attention,
                device_map=config.device_map,
            )
        if config.length > loaded.max_length:
            raise UserError(
                f"--length {config.length} exceeds the maximum {loaded.max_length} of "
                f"{config.model}; use --length {loaded.max_length} or less"
            )
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
                console=console,
            )
        with timer("residual_strength"):
            try:
                strength: np.ndarray | None = residual_strength(
                    loaded, ids, batch_size=config.batch_size
                )
            except UserError as err:  # generic families: the profile still stands
                strength = None
                if console is not None:
                    console.print(f"[yellow]residual strength skipped:[/] {err}")
        summary = summarize_profile(profile.influence, target=profile.target)
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
        "attention": attention,
        "probe_kind": profile.probe_kind,
    }
    result = MeasureResult(
        config=config,
        resolved=resolved,
        profile=profile,
        residual_strength=strength,
        summary=summary,
        metadata=run_metadata("measure", resolved, config.seed, timer.seconds),
    )
    write_json(out / "measure.json", result)
    plot_influence(
        profile,
        out / "measure.png",
        title=(
            f"{config.model} ({loaded.init}, seed {config.seed}): "
            f"{config.output} at t = {profile.target}"
        ),
    )
    if console is not None:
        console.print(summary_table(result))
        console.print(f"wrote {out / 'measure.json'} and {out / 'measure.png'}")
    return result
