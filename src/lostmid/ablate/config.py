"""What ``lostmid ablate`` measures: the rungs of the ladder and the command's config."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from lostmid.checks import check_choice, check_positive, check_seed, seed_set
from lostmid.errors import UserError
from lostmid.influence.config import HELP
from lostmid.influence.profile import OUTPUTS
from lostmid.models.spec import DTYPE_NAMES, LoadsModel

RUNGS = ("uniform", "mlp", "logits", "real", "frozen-norm", "scaled-embeddings")
"""The ablation ladder of ``lostmid ablate``, from the theory's world to the real model
(built in :mod:`lostmid.ablate.rungs`):

* ``uniform`` (i): uniform attention (W_Q = W_K = 0), no MLP, no positional encoding;
* ``mlp`` (ii): (i) + the MLP;
* ``logits`` (iii): (ii) + the real attention logits (positions still off);
* ``real`` (iv): (iii) + the positional encoding: the real model;
* ``frozen-norm`` (cross rung of ii): every norm's 1/sigma frozen to its mean over
  positions, so no norm gain depends on position;
* ``scaled-embeddings`` (cross rung of iv): the token embeddings scaled (x30 by
  default), so the stream norm no longer depends on position.
"""

ABLATE_HELP = {  # the help of each ``lostmid ablate`` option, and each AblationConfig field
    "model": "Preset name, local directory or cached hub id.",
    "length": "Sequence length L.",
    "seeds": "Independently initialised models per rung (2+ gives a noise floor): a count "
    "N (the seeds --seed .. --seed + N - 1), a range 0-4 or a list 0,2,5-7.",
    "samples": "Random-token inputs per seed.",
    "probes": "Random probe vectors per input.",
    "rungs": "Comma-separated rungs, in ladder order: " + ", ".join(RUNGS) + ".",
    "seed": "First seed: seed i of every rung is seed + i (the same weights on every rung).",
    "layers": "Override the depth H (the config's number of layers; default: the model's).",
    "vocab_size": "Vocabulary of the untrained models (0: the family's own); only the "
    "blocks shape the hidden-state Jacobian of random-token inputs.",
    "embedding_scale": "Factor of the scaled-embeddings rung.",
    "output": "hidden | residual | logits | top1-prob",
    "exact": "Exact norms and exact gains (small models).",
    "gain_directions": "Random directions per input for the branch gains.",
    "dtype": "float32 | bfloat16 | float16 | float64",
    "device": "cpu | cuda[:N]",
    "batch_size": "Samples per forward pass.",
    "device_map": HELP["device_map"] + " Every rung but real edits weights: they must "
    "stay on a device (no cpu/disk offload).",
    "trust_remote_code": HELP["trust_remote_code"],
}


def parse_rungs(text: str) -> tuple[str, ...]:
    """Comma-separated rung names, blanks dropped (checked by :class:`AblationConfig`).

    >>> parse_rungs("uniform, mlp,")
    ('uniform', 'mlp')
    """
    return tuple(r.strip() for r in text.split(",") if r.strip())


@dataclass(frozen=True)
class AblationConfig(LoadsModel):
    """What ``lostmid ablate`` measures; every field is described in :data:`ABLATE_HELP`.

    ``rungs`` may be given as a comma-separated string; they are kept in ladder order
    (:data:`RUNGS`). ``vocab_size`` 0 or None keeps the family's vocabulary.

    >>> AblationConfig(model="tiny-gpt2", rungs="real,uniform").rungs
    ('uniform', 'real')
    >>> AblationConfig(model="tiny-gpt2", rungs="mlp,mlp")
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: --rungs names a rung twice; give each once
    """

    model: str
    length: int = 128
    seeds: int | tuple[int, ...] = 2
    samples: int = 2
    probes: int = 2
    rungs: tuple[str, ...] = RUNGS
    seed: int = 0
    layers: int | None = None
    vocab_size: int | None = 512
    embedding_scale: float = 30.0
    output: str = "hidden"
    exact: bool = False
    gain_directions: int = 4
    dtype: str = "float32"
    device: str = "cpu"
    batch_size: int = 1
    device_map: str | None = None
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        check_seed(self.seed)
        for name in ("length", "samples", "probes", "gain_directions", "batch_size"):
            check_positive(f"--{name.replace('_', '-')}", getattr(self, name))
        if not isinstance(self.seeds, int):
            object.__setattr__(self, "seeds", tuple(self.seeds))
        seed_set(self.seeds, self.seed)
        check_choice("--dtype", self.dtype, DTYPE_NAMES)
        if self.layers is not None:
            check_positive("--layers", self.layers)
        if self.vocab_size == 0:
            object.__setattr__(self, "vocab_size", None)
        if self.vocab_size is not None:
            check_positive("--vocab-size", self.vocab_size)
        check_positive("--embedding-scale", self.embedding_scale, integer=False)
        check_choice("--output", self.output, OUTPUTS)
        rungs = parse_rungs(self.rungs) if isinstance(self.rungs, str) else tuple(self.rungs)
        if not rungs:
            raise UserError(f"--rungs is empty; give some of {', '.join(RUNGS)}")
        for rung in rungs:
            check_choice("--rungs", rung, RUNGS)
        if len(set(rungs)) != len(rungs):
            raise UserError("--rungs names a rung twice; give each once")
        object.__setattr__(self, "rungs", tuple(r for r in RUNGS if r in rungs))
        if self.device_map is not None:  # the map's form here; its modules at load time
            from lostmid.models.placement import parse_device_map

            parse_device_map(self.device_map)

    def seed_list(self) -> list[int]:
        """The seeds of every rung (:func:`lostmid.checks.seed_set`)."""
        return list(seed_set(self.seeds, self.seed))

    def record(self) -> dict[str, Any]:
        return asdict(self) | {"rungs": list(self.rungs)}
