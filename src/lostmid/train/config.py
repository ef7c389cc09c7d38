"""Training configuration: model shape, optimisation, measurement; presets and JSON files.

Every config is a frozen dataclass checked when it is made (one
:class:`~lostmid.errors.UserError` line, the messages of :mod:`lostmid.checks`), so the
loop can trust it. ``from_dict`` also rejects unknown keys, so a typo in a JSON config
never silently falls back to a default. This module stays light (no torch):
``lostmid --help`` reads :data:`HELP` from it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lostmid.checks import check_choice, check_positive, check_seed, check_unit_interval
from lostmid.errors import require
from lostmid.files import read_json
from lostmid.runs.budget import SIZE_CHECK_HELP

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

FAMILIES = ("qwen2", "gpt2")
BYTE_VOCAB = 256

T = TypeVar("T", bound="DataclassInstance")


def checkpoint_steps(steps: int) -> list[int]:
    """Log-spaced checkpoints 0, 10, 30, 100, 300, 1000, 3000, ... below ``steps``, and ``steps``.

    >>> checkpoint_steps(2000)
    [0, 10, 30, 100, 300, 1000, 2000]
    >>> checkpoint_steps(1)
    [0, 1]
    """
    found = {0, steps}
    scale = 10
    while scale < steps:
        found.add(scale)
        if 3 * scale < steps:
            found.add(3 * scale)
        scale *= 10
    return sorted(found)


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

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """The checks made on construction."""
        check_choice("model.family", self.family, FAMILIES)
        for name in ("layers", "hidden", "heads", "kv_heads", "intermediate", "context"):
            check_positive(f"model.{name}", getattr(self, name))
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
class DynamicsProbeConfig:
    """What is measured at each checkpoint (:mod:`lostmid.train.dynamics`), and how much
    it may cost.

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

    def __post_init__(self) -> None:
        for name in ("influence_samples", "influence_probes", "signal_batches", "heldout_windows"):
            check_positive(f"probe.{name}", getattr(self, name))


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
    probe: DynamicsProbeConfig = field(default_factory=DynamicsProbeConfig)

    def __post_init__(self) -> None:
        check_seed(self.seed)
        for name in ("steps", "batch_size", "resume_every"):
            check_positive(name, getattr(self, name))
        check_positive("lr", self.lr, integer=False)
        check_positive("grad_clip", self.grad_clip, integer=False)
        check_unit_interval("min_lr_ratio", self.min_lr_ratio)
        for name in ("beta1", "beta2"):  # AdamW's moment decays
            value = getattr(self, name)
            require(0 <= value < 1, f"{name} must be in [0, 1), got {value}")
        require(self.weight_decay >= 0, f"weight_decay must be >= 0, got {self.weight_decay}")
        require(self.warmup_steps >= 0, f"warmup_steps must be >= 0, got {self.warmup_steps}")
        require(
            0 < self.heldout_fraction < 1,
            f"heldout_fraction must be in (0, 1), got {self.heldout_fraction}",
        )
        check_choice("dtype", self.dtype, ("float32", "bfloat16"))

    def record(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _micro_model() -> ModelSpec:
    return ModelSpec(layers=2, hidden=32, heads=2, kv_heads=1, intermediate=64, context=32)


TRAIN_PRESETS: dict[str, TrainConfig] = {
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
        probe=DynamicsProbeConfig(influence_samples=16, influence_probes=8, heldout_windows=128),
    ),
    # 2 layers x 32: for tests and smoke runs, seconds on a CPU.
    "micro": TrainConfig(
        preset="micro",
        model=_micro_model(),
        steps=30,
        batch_size=8,
        warmup_steps=5,
        resume_every=10,
        probe=DynamicsProbeConfig(
            influence_samples=2, influence_probes=2, signal_batches=1, heldout_windows=4
        ),
    ),
}


HELP = {  # the help of each ``lostmid train`` option, and what it sets here
    "preset": "Model and training preset: " + " | ".join(TRAIN_PRESETS) + ".",
    "steps": "Optimizer steps (default: the preset's).",
    "corpus": "Text file or directory (default: Python's stdlib).",
    "config": "JSON training config (on top of --preset; keys: the TrainConfig fields).",
    "resume": "Continue from --out/resume.pt.",
    "seed": "Random seed: weights, batches, held-out split (default: the preset's).",
    "no_size_check": SIZE_CHECK_HELP.replace(" (and time)", ""),
}


def preset(name: str) -> TrainConfig:
    """The preset ``name`` (``tiny``, ``small``, ``micro``)."""
    return TRAIN_PRESETS[check_choice("--preset", name, TRAIN_PRESETS)]


def from_dict(data: dict[str, Any], base: TrainConfig | None = None) -> TrainConfig:
    """A :class:`TrainConfig` from a (JSON) mapping, on top of ``base`` or its preset.

    Keys are TrainConfig fields; ``model`` and ``probe`` are nested mappings of their
    own fields. Unknown keys are an error. ``preset`` (if given) picks the base.

    >>> from_dict({"preset": "micro", "steps": 5, "model": {"layers": 3}}).model.layers
    3
    """
    require(isinstance(data, dict), "a training config is a JSON object")
    if base is None or "preset" in data:
        base = preset(str(data.get("preset", base.preset if base else "tiny")))
    model = _update(base.model, data.get("model", {}), "model")
    probe = _update(base.probe, data.get("probe", {}), "probe")
    top = {k: v for k, v in data.items() if k not in ("model", "probe")}
    return replace(_update(base, top, "config"), model=model, probe=probe)


def load_config_file(path: Path, base: TrainConfig | None = None) -> TrainConfig:
    """Read a JSON training config (see :func:`from_dict`), with one-line errors."""
    data = read_json(path, option="--config", what="a JSON training config")
    return from_dict(data, base)


def _update(obj: T, changes: Any, where: str) -> T:
    require(isinstance(changes, dict), f"{where} must be a JSON object")
    names = {f.name: f for f in fields(obj)}
    unknown = sorted(set(changes) - set(names))
    shown = ", ".join(repr(k) for k in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
    require(not unknown, f"unknown {where} key(s): {shown}; known: {', '.join(names)}")
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
            require(math.isfinite(value), f"{where}.{key} must be a finite number, got {value}")
        clean[key] = value
    return replace(obj, **clean)


def resolve_cli_config(
    preset_name: str,
    config_file: Path | None,
    *,
    steps: int | None = None,
    seed: int | None = None,
    corpus: Path | None = None,
) -> TrainConfig:
    """The config of a ``lostmid train`` command line: preset, then file, then flags
    (each described in :data:`HELP`)."""
    config = preset(preset_name)
    if config_file is not None:
        config = load_config_file(config_file, base=config)
    changes: dict[str, Any] = {  # by field name
        "steps": steps,
        "seed": seed,
        "corpus": None if corpus is None else str(corpus),
    }
    return replace(config, **{k: v for k, v in changes.items() if v is not None})
