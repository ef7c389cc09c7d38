"""What ``lostmid measure`` measures: :class:`MeasureConfig`, checked when it is made.

This module stays light (no torch): ``lostmid --help`` reads :data:`HELP` from it.

>>> MeasureConfig(model="tiny-gpt2", length=16).attention_implementation
'eager'
>>> MeasureConfig(length=16, target=17)
Traceback (most recent call last):
...
lostmid.errors.UserError: --target must be a position in 1..16 (1-indexed), got 17
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lostmid.checks import check_choice, check_position, check_positive
from lostmid.errors import UserError

# The eager/SDPA switch of ``--attention auto``: eager attention up to this length (the
# probe VJPs batch well: fastest), SDPA beyond (no L x L matrix kept per layer, so long
# contexts fit in memory); see docs/BENCHMARKS.md.
EAGER_MAX_LENGTH = 1024
ATTENTION_CHOICES = ("auto", "eager", "sdpa")

HELP = {  # the CLI's help for each option, and the meaning of each field below
    "model": "Preset name, local directory or cached hub id.",
    "init": "random | pretrained | auto (weights if any).",
    "length": "Sequence length L.",
    "samples": "Input samples (sequences).",
    "probes": "Random probe vectors per sample.",
    "seed": "Random seed (weights of a random init, inputs, probes).",
    "no_rope": "Rotary embeddings off.",
    "no_pos_emb": "Learned position embeddings off.",
    "per_layer": "Also profile the residual after each layer.",
    "output": "hidden | residual | logits | top1-prob",
    "target": "Target position t, 1-indexed (default L).",
    "exact": "Exact norms over all output dims (small models).",
    "checkpointing": "Gradient checkpointing (long contexts).",
    "device": "cpu | cuda[:N]",
    "dtype": "float32 | bfloat16 | float16 | float64",
    "corpus": "Text file or directory of .txt (default: random ids).",
    "batch_size": "Samples per forward/backward pass (more memory; same result).",
    "device_map": "auto | balanced | JSON {module: device}: split/offload (accelerate).",
    "attention": f"auto (eager up to L = {EAGER_MAX_LENGTH}, then sdpa) | eager | sdpa",
    "strategy": "loop (one backward per probe) | vmap (one batched backward)",
}


def attention_for(length: int, checkpointing: bool = False) -> str:
    """The attention implementation ``--attention auto`` picks for inputs of ``length``.

    >>> attention_for(512), attention_for(2048), attention_for(512, checkpointing=True)
    ('eager', 'sdpa', 'sdpa')
    """
    return "eager" if length <= EAGER_MAX_LENGTH and not checkpointing else "sdpa"


@dataclass(frozen=True)
class MeasureConfig:
    """What to measure; every field is described in :data:`HELP` (the CLI's help).

    Checked on construction with the messages of :mod:`lostmid.checks`.
    """

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
    device_map: str | None = None

    def __post_init__(self) -> None:
        # The estimator's options live with the estimator, which imports torch; imported
        # here, not at the top, so that lostmid --help (which reads HELP) stays fast.
        from lostmid.influence.estimator import OUTPUTS, STRATEGIES

        for name in ("length", "samples", "probes", "batch_size"):
            check_positive(f"--{name.replace('_', '-')}", getattr(self, name))
        check_choice("--output", self.output, OUTPUTS)
        check_choice("--attention", self.attention, ATTENTION_CHOICES)
        check_choice("--strategy", self.strategy, STRATEGIES)
        check_position("--target", self.target, self.length)
        if self.device_map is not None:  # the map's form here; its modules at load time
            from lostmid.models.load import parse_device_map

            parse_device_map(self.device_map)
        if self.corpus is not None and not Path(self.corpus).expanduser().exists():
            raise UserError(f"--corpus {self.corpus}: no such file or directory")

    @property
    def target_position(self) -> int:
        """The target t, 1-indexed: ``target``, or L when it is None."""
        return check_position("--target", self.target, self.length)

    @property
    def attention_implementation(self) -> str:
        """``attention``, with ``auto`` resolved by :func:`attention_for`."""
        if self.attention != "auto":
            return self.attention
        return attention_for(self.length, self.checkpointing)

    def record(self) -> dict[str, Any]:
        return asdict(self) | {"corpus": None if self.corpus is None else str(self.corpus)}
