"""Training configuration: model shape, optimisation, measurement; presets and JSON files.

Every config is a frozen dataclass. ``from_dict`` rejects unknown keys and bad values
with one :class:`~lostmid.errors.UserError` line, so a typo in a JSON config never
silently falls back to a default.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from lostmid.errors import UserError, require

FAMILIES = ("qwen2", "gpt2")
BYTE_VOCAB = 256

T = TypeVar("T")


@dataclass(frozen=True)
class ModelSpec:
    """Shape of a small causal LM built from Hugging Face config classes.

    ``qwen2``: RMSNorm, RoPE (theta ``rope_theta``), SwiGLU MLP, grouped-query attention.
    ``gpt2``: LayerNorm, learned absolute positions, GELU MLP; dropout is 0 so runs are
    deterministic and resumable bit for bit.
    """

    family: str = "qwen2"
    layers: int = 8
    hidden: int = 96
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 384
    context: int = 128
    rope_theta: float = 10000.0
    vocab_size: int = BYTE_VOCAB
    tie_embeddings: bool = True

    def validate(self) -> None:
        require(self.family in FAMILIES, f"unknown model family '{self.family}'; use qwen2 or gpt2")
        for name in ("layers", "hidden", "heads", "kv_heads", "intermediate", "context"):
            value = getattr(self, name)
            require(
                isinstance(value, int) and value >= 1, f"model.{name} must be >= 1, got {value}"
            )
        require(
            self.hidden % self.heads == 0,
            f"model.hidden ({self.hidden}) must be divisible by model.heads ({self.heads})",
        )
        require(
            self.heads % self.kv_heads == 0,
            f"model.heads ({self.heads}) must be divisible by model.kv_heads ({self.kv_heads})",
        )
        require(
            self.family != "qwen2" or (self.hidden // self.heads) % 2 == 0,
            "qwen2 (RoPE) needs an even head dimension hidden/heads",
        )
        require(
            self.vocab_size >= BYTE_VOCAB,
            f"model.vocab_size must be >= {BYTE_VOCAB} for the byte tokenizer",
        )


@dataclass(frozen=True)
class MeasureConfig:
    """What is measured at each checkpoint, and how much it may cost.

    influence_samples: held-out windows fed to the influence engine.
    influence_probes: random output projections per window (the engine's ``probes``).
    signal_batches: training batches (those of steps s .. s+signal_batches-1) over which
        the learning signal and the checkpoint's training loss are averaged.
    heldout_windows: held-out windows for the held-out loss per position.
    enabled: False trains the bare loop (checkpoints are still written).
    """

    influence_samples: int = 8
    influence_probes: int = 8
    signal_batches: int = 4
    heldout_windows: int = 64
    enabled: bool = True

    def validate(self) -> None:
        for name in ("influence_samples", "influence_probes", "signal_batches", "heldout_windows"):
            value = getattr(self, name)
            require(isinstance(value, int) and value >= 1, f"measure.{name} must be >= 1")


@dataclass(frozen=True)
class TrainConfig:
    """A whole training run, resolved: the run writes this next to its results.

    Learning rate: linear warmup over ``warmup_steps`` to ``lr``, then cosine decay to
    ``lr * min_lr_ratio`` at ``steps``:
        lr(s) = lr (s+1)/warmup                              for s < warmup,
        lr(s) = lr [r + (1-r) (1 + cos(pi p))/2],  p = (s-warmup)/(steps-warmup), else.
    Each step is one AdamW update on ``batch_size`` windows of ``model.context`` tokens
    (``model.context + 1`` bytes, shifted by one for the targets).
    """

    preset: str = "tiny"
    model: ModelSpec = field(default_factory=ModelSpec)
    steps: int = 2000
    batch_size: int = 16
    lr: float = 3e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    seed: int = 0
    corpus: str | None = None
    heldout_fraction: float = 0.05
    resume_every: int = 250
    dtype: str = "float32"
    device: str = "cpu"
    measure: MeasureConfig = field(default_factory=MeasureConfig)

    def validate(self) -> None:
        self.model.validate()
        self.measure.validate()
        require(
            isinstance(self.steps, int) and self.steps >= 1, f"steps must be >= 1, got {self.steps}"
        )
        require(self.batch_size >= 1, f"batch_size must be >= 1, got {self.batch_size}")
        require(self.lr > 0, f"lr must be > 0, got {self.lr}")
        require(0 <= self.min_lr_ratio <= 1, "min_lr_ratio must be in [0, 1]")
        require(self.warmup_steps >= 0, "warmup_steps must be >= 0")
        require(self.grad_clip > 0, "grad_clip must be > 0")
        require(0 < self.heldout_fraction < 1, "heldout_fraction must be in (0, 1)")
        require(self.resume_every >= 1, "resume_every must be >= 1")
        require(self.dtype in ("float32", "bfloat16"), "dtype must be float32 or bfloat16")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _micro_model() -> ModelSpec:
    return ModelSpec(layers=2, hidden=32, heads=2, kv_heads=1, intermediate=64, context=32)


PRESETS: dict[str, TrainConfig] = {
    # 8 layers x 96 wide, ~1.1M parameters; 2000 steps x 16 x 128 = 4.1M tokens,
    # about 6 minutes on 2 CPU cores with the measurements.
    "tiny": TrainConfig(preset="tiny"),
    # 12 layers x 256 wide, ~11.9M parameters, context 512, 164M tokens; meant for a GPU.
    "small": TrainConfig(
        preset="small",
        model=ModelSpec(layers=12, hidden=256, heads=8, kv_heads=4, intermediate=1024, context=512),
        steps=10000,
        batch_size=32,
        lr=1.5e-3,
        warmup_steps=300,
        resume_every=1000,
        device="auto",
        measure=MeasureConfig(influence_samples=16, influence_probes=8, heldout_windows=128),
    ),
    # 2 layers x 32: for tests and smoke runs, seconds on a CPU.
    "micro": TrainConfig(
        preset="micro",
        model=_micro_model(),
        steps=30,
        batch_size=8,
        warmup_steps=5,
        resume_every=10,
        measure=MeasureConfig(
            influence_samples=2, influence_probes=2, signal_batches=1, heldout_windows=4
        ),
    ),
}


def preset(name: str) -> TrainConfig:
    """The preset ``name`` (``tiny``, ``small``, ``micro``)."""
    if name not in PRESETS:
        raise UserError(f"unknown preset '{name}'; use one of: {', '.join(PRESETS)}")
    return PRESETS[name]


def from_dict(data: dict[str, Any], base: TrainConfig | None = None) -> TrainConfig:
    """A :class:`TrainConfig` from a (JSON) mapping, on top of ``base`` or its preset.

    Keys are TrainConfig fields; ``model`` and ``measure`` are nested mappings of their
    own fields. Unknown keys are an error. ``preset`` (if given) picks the base.

    >>> from_dict({"preset": "micro", "steps": 5, "model": {"layers": 3}}).model.layers
    3
    """
    require(isinstance(data, dict), "a training config is a JSON object")
    if base is None or "preset" in data:
        base = preset(str(data.get("preset", base.preset if base else "tiny")))
    model = _update(base.model, data.get("model", {}), "model")
    measure = _update(base.measure, data.get("measure", {}), "measure")
    top = {k: v for k, v in data.items() if k not in ("model", "measure")}
    config = _update(base, top, "config")
    config = replace(config, model=model, measure=measure)
    config.validate()
    return config


def load_config_file(path: Path, base: TrainConfig | None = None) -> TrainConfig:
    """Read a JSON training config (see :func:`from_dict`), with one-line errors."""
    if not path.is_file():
        raise UserError(f"--config {path}: no such file")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise UserError(
            f"--config {path}: not valid JSON ({err.msg} at line {err.lineno})"
        ) from None
    return from_dict(data, base)


def _update(obj: T, changes: Any, where: str) -> T:
    require(isinstance(changes, dict), f"{where} must be a JSON object")
    names = {f.name: f for f in fields(obj)}  # type: ignore[arg-type]
    unknown = sorted(set(changes) - set(names))
    require(not unknown, f"unknown {where} key(s): {', '.join(unknown)}; known: {', '.join(names)}")
    clean: dict[str, Any] = {}
    for key, value in changes.items():
        current = getattr(obj, key)
        if isinstance(current, bool):
            require(isinstance(value, bool), f"{where}.{key} must be true or false")
        elif isinstance(current, int) and not isinstance(current, bool):
            require(
                isinstance(value, int) and not isinstance(value, bool),
                f"{where}.{key} must be an integer, got {value!r}",
            )
        elif isinstance(current, float):
            require(
                isinstance(value, int | float) and not isinstance(value, bool),
                f"{where}.{key} must be a number, got {value!r}",
            )
            value = float(value)
        clean[key] = value
    return replace(obj, **clean)  # type: ignore[type-var]


def resolve_cli_config(
    preset_name: str,
    config_file: Path | None,
    *,
    steps: int | None = None,
    seed: int | None = None,
    corpus: Path | None = None,
) -> TrainConfig:
    """The config of a ``lostmid train`` command line: preset, then file, then flags."""
    config = preset(preset_name)
    if config_file is not None:
        config = load_config_file(config_file, base=config)
    changes: dict[str, Any] = {}
    if steps is not None:
        require(steps >= 1, f"--steps must be >= 1, got {steps}")
        changes["steps"] = steps
    if seed is not None:
        changes["seed"] = seed
    if corpus is not None:
        changes["corpus"] = str(corpus)
    config = replace(config, **changes)
    config.validate()
    return config
