"""``lostmid measure``: load a model, measure its influence profile, write results.

Writes ``out/measure.json`` (profile, error, variance split, residual strength,
summary, resolved config, provenance) and ``out/measure.png``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.errors import UserError
from lostmid.influence.estimator import OUTPUTS, STRATEGIES, influence_profile
from lostmid.influence.inputs import corpus_token_ids, random_token_ids
from lostmid.influence.residual import residual_strength
from lostmid.runinfo import Timer, prepare_out, run_metadata, to_jsonable, write_json

FILES = ["measure.json", "measure.png"]


@dataclass(frozen=True)
class MeasureConfig:
    """What to measure; validated on construction (one-line :class:`UserError`)."""

    model: str = "qwen2-0.5b"
    init: str = "random"
    length: int = 1024
    samples: int = 8
    probes: int = 4
    seed: int = 0
    no_rope: bool = False
    no_pos_emb: bool = False
    per_layer: bool = False
    output: str = "hidden"
    target: int | None = None
    exact: bool = False
    checkpointing: bool = False
    device: str = "cpu"
    dtype: str = "float32"
    corpus: Path | None = None
    batch_size: int = 1
    strategy: str = "loop"
    attention: str = "auto"

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise UserError(f"--samples must be >= 1, got {self.samples}")
        if self.probes < 1:
            raise UserError(f"--probes must be >= 1, got {self.probes}")
        if self.length < 1:
            raise UserError(f"--length must be >= 1, got {self.length}")
        if self.batch_size < 1:
            raise UserError(f"--batch-size must be >= 1, got {self.batch_size}")
        if self.output not in OUTPUTS:
            raise UserError(f"--output {self.output!r} unknown; choose one of {', '.join(OUTPUTS)}")
        if self.target is not None and not 1 <= self.target <= self.length:
            raise UserError(
                f"--target must be a position in 1..{self.length} (1-indexed), got {self.target}"
            )
        if self.attention not in ("auto", "eager", "sdpa"):
            raise UserError(f"--attention {self.attention!r} unknown; choose auto, eager or sdpa")
        if self.strategy not in STRATEGIES:
            raise UserError(
                f"--strategy {self.strategy!r} unknown; choose one of {', '.join(STRATEGIES)}"
            )
        if self.corpus is not None and not Path(self.corpus).expanduser().exists():
            raise UserError(f"--corpus {self.corpus}: no such file or directory")


EAGER_MAX_LENGTH = 1024


def attention_for(length: int, checkpointing: bool = False) -> str:
    """The attention implementation ``auto`` picks: eager up to L = 1024 (the probe VJPs
    batch well: fastest), SDPA beyond or with checkpointing (no L x L matrix kept per
    layer, so long contexts fit in memory). See docs/BENCHMARKS.md.

    >>> attention_for(512), attention_for(2048)
    ('eager', 'sdpa')
    """
    return "eager" if length <= EAGER_MAX_LENGTH and not checkpointing else "sdpa"


def _attention(config: MeasureConfig) -> str:
    if config.attention != "auto":
        return config.attention
    return attention_for(config.length, config.checkpointing)


def _summary_table(result: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    s = result["summary"]
    cfg = result["config"]

    def fmt(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4g}"

    table = Table(title=f"influence on position {s['target']} of {cfg['model']} ({cfg['output']})")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("primacy (j = 1)", fmt(s["primacy"]))
    table.add_row("valley", f"{fmt(s['valley'])} at j = {s['valley_position']}")
    table.add_row("dead-zone level (middle half)", fmt(s["dead_zone_level"]))
    table.add_row(f"recency (j = {s['target']})", fmt(s["recency"]))
    table.add_row("peak-to-valley", fmt(s["peak_to_valley"]))
    table.add_row("mean residual strength", fmt(result["residual_strength_mean"]))
    table.add_row("max relative s.e.", fmt(result["max_relative_stderr"]))
    table.add_row("seconds", f"{result['metadata']['timings_s'].get('total', 0):.1f}")
    console.print(table)


def run_measure(
    config: MeasureConfig, out: Path, overwrite: bool = False, console: Any = None
) -> dict[str, Any]:
    """Measure, write ``measure.json`` and ``measure.png`` into ``out``, print a summary.

    Returns the dict written to ``measure.json``.
    """
    from lostmid.influence.plot import plot_influence
    from lostmid.models import load_model
    from lostmid.theory import summarize_profile

    out = prepare_out(Path(out), FILES, overwrite)
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
                attn_implementation=_attention(config),
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
                target=config.target,
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
        "attention": _attention(config),
        "probe_kind": profile.probe_kind,
    }
    relative = profile.relative_stderr
    result: dict[str, Any] = {
        "positions": "1..L (index 0 is position 1)",
        "influence": profile.influence,
        "stderr": profile.stderr,
        "mean_sq": profile.mean_sq,
        "stderr_sq": profile.stderr_sq,
        "var_probe": profile.var_probe,
        "var_sample": profile.var_sample,
        "stderr_basis": profile.stderr_basis,
        "best_probes_per_sample": profile.best_probes_per_sample(),
        "max_relative_stderr": float(np.nanmax(relative)) if np.isfinite(relative).any() else None,
        "per_layer": profile.per_layer,
        "residual_strength": strength,
        "residual_strength_mean": None if strength is None else float(strength.mean()),
        "summary": to_jsonable(summary),
        "config": resolved,
        "requested": asdict(config),
        "metadata": run_metadata("measure", resolved, config.seed, timer.seconds),
    }
    result = to_jsonable(result)
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
        _summary_table(result, console)
        console.print(f"wrote {out / 'measure.json'} and {out / 'measure.png'}")
    return result
