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

from lostmid.attention_choice import EAGER_MAX_LENGTH, attention_for
from lostmid.checks import check_choice, check_position, check_positive, check_seed
from lostmid.errors import UserError
from lostmid.influence.profile import OUTPUTS, STRATEGIES
from lostmid.models.spec import DTYPE_NAMES, LoadsModel
from lostmid.runs.budget import SIZE_CHECK_HELP

ATTENTION_CHOICES = ("auto", "eager", "sdpa")
STRENGTHS = ("jacobian", "forward")
COMPILE_CHOICES = ("auto", "on", "off")
"""How the residual strength a_l that predictions use is measured
(:mod:`lostmid.influence.residual`): s_l/(1+s_l) from the branch's Jacobian gain, or the
peer project's forward ratio."""
PER_POSITION_GAINS = ("auto", "on", "off")
PER_POSITION_MAX_CELLS = 1 << 17
"""``--per-position-gains auto`` keeps the per-position arrays when H x L is at most
this (131072: e.g. 24 layers at L = 4096). Measuring them costs nothing extra (the
branch gains are measured per position anyway); what grows is measure.json (three
H x L arrays) and the jacobian kernel of ``predicted:positional`` (O(L^2 H) time,
O(L^2) memory: seconds at L = 2048, H = 24)."""

TRUST_REMOTE_CODE_HELP = (
    "Run custom code that a model directory's config names (auto_map); off by default, "
    "and such a model is refused. Only for code you have read."
)

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
    "no_alibi": "ALiBi attention biases off (BLOOM).",
    "strength": "jacobian | forward: the residual strength a_l that predictions use "
    "(jacobian: s/(1+s) from the attention branch's Jacobian gain s; forward: the peer's "
    "ratio ||attn||/(||x||+||attn||)). Both are written.",
    "per_position_gains": "auto | on | off: write the per-position branch and MLP gains "
    f"(H x L each; auto: on when H x L <= {PER_POSITION_MAX_CELLS}).",
    "gain_directions": "Random directions per sample for the branch gains.",
    "trust_remote_code": TRUST_REMOTE_CODE_HELP,
    "no_size_check": SIZE_CHECK_HELP.replace(" (and time)", "")
    + " Checked on cpu only (a GPU's memory is not estimated).",
    "compile": "auto | on | off: torch.compile the blocks (inductor; needs a C compiler), "
    "1.3x faster on 2 quiet CPU cores (2x on a loaded one) after a compile of about 30 s; "
    "auto compiles on CPU when the run is long enough to repay it (influence.compile_choice), "
    "not with --checkpointing or --device-map.",
}


PANELS = {
    "Model": ("model", "init", "no_rope", "no_pos_emb", "no_alibi", "trust_remote_code"),
    "What is measured": (
        "length", "samples", "probes", "output", "target", "exact", "per_layer", "corpus",
        "strength", "per_position_gains", "gain_directions",
    ),
    "Compute": (
        "device", "dtype", "device_map", "batch_size", "strategy", "attention",
        "checkpointing", "compile", "no_size_check",
    ),
    "Run and output": ("seed",),
}  # fmt: skip
"""``lostmid measure --help``'s groups of options."""


@dataclass(frozen=True)
class MeasureConfig(LoadsModel):
    """What to measure; every field is described in :data:`HELP` (the CLI's help).

    Checked on construction with the messages of :mod:`lostmid.checks`.
    """

    model: str = "qwen2-0.5b"
    init: str = "auto"
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
    no_alibi: bool = False
    strength: str = "jacobian"
    per_position_gains: str = "auto"
    gain_directions: int = 4
    compile: str = "auto"
    trust_remote_code: bool = False
    no_size_check: bool = False

    def __post_init__(self) -> None:
        check_seed(self.seed)
        for name in ("length", "samples", "probes", "batch_size", "gain_directions"):
            check_positive(f"--{name.replace('_', '-')}", getattr(self, name))
        check_choice("--output", self.output, OUTPUTS)
        check_choice("--dtype", self.dtype, DTYPE_NAMES)
        check_choice("--attention", self.attention, ATTENTION_CHOICES)
        check_choice("--strategy", self.strategy, STRATEGIES)
        check_choice("--strength", self.strength, STRENGTHS)
        check_choice("--per-position-gains", self.per_position_gains, PER_POSITION_GAINS)
        check_position("--target", self.target, self.length)
        if self.device_map is not None:  # the map's form here; its modules at load time
            from lostmid.models.placement import parse_device_map

            parse_device_map(self.device_map)
        if self.corpus is not None and not Path(self.corpus).expanduser().exists():
            raise UserError(f"--corpus {self.corpus}: no such file or directory")
        if isinstance(self.compile, bool):  # the form before auto: True / False
            object.__setattr__(self, "compile", "on" if self.compile else "off")
        check_choice("--compile", self.compile, COMPILE_CHOICES)
        if self.compile == "on" and self.checkpointing:
            raise UserError("--compile on and --checkpointing cannot be combined; choose one")
        if self.compile == "on" and self.device_map is not None:
            raise UserError("--compile on is not supported with --device-map; drop one of them")

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

    def per_position_gains_for(self, layers: int) -> bool:
        """Whether the per-position gains are kept for a model of ``layers`` layers:
        ``on``/``off`` as said, ``auto`` when H x L <= :data:`PER_POSITION_MAX_CELLS`.

        >>> c = MeasureConfig(length=8192)
        >>> c.per_position_gains_for(12), c.per_position_gains_for(24)
        (True, False)
        """
        if self.per_position_gains != "auto":
            return self.per_position_gains == "on"
        return layers * self.length <= PER_POSITION_MAX_CELLS

    def record(self) -> dict[str, Any]:
        return asdict(self) | {"corpus": None if self.corpus is None else str(self.corpus)}
